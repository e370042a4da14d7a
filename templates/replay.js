/* The SemIf replay: every lane of one traced experiment (typed decisions, free generation and, in v2 traces,
   grammar-constrained generation) on one clock, from the measured timestamps.

   The page arrives rendered by build.py for its first trace at t = 0 (verdict, numbers, lanes, criteria);
   this script loads that trace's data file (traces/<slug>.js, a <script> like this one, so file:// works),
   takes the rendered rows over and plays. Other traces load the same way when picked. Every string that
   comes from a trace is untrusted: it only reaches the page through textContent, setAttribute on inert
   attributes, or SVG text nodes; never as markup. Work per frame is batched: all DOM writes of a frame
   happen together and nothing in a frame reads layout back. */
(function () {
  "use strict";
  // The pure parts, loaded before this file (build.py concatenates them into assets/replay.js):
  // templates/replay/{format,link,prepare,timeline}.js.
  var F = window.SemifReplayFormat, Link = window.SemifReplayLink, P = window.SemifReplayPrepare, T = window.SemifReplayTimeline;
  var fmtS = F.fmtS, fmtClock = F.fmtClock, fmtP = F.fmtP, fmtTick = F.fmtTick, plural = F.plural, tokenInfo = F.tokenInfo;
  var repeatsOf = P.repeatsOf, eventT = P.eventT, typedCorrect = P.typedCorrect;
  var countUpTo = T.countUpTo, niceStep = T.niceStep, stepPath = T.stepPath, SPEEDS = T.SPEEDS;
  var SHORT = { typed: "typed", free: "free", constrained: "constrained" };

  var $ = function (id) { return document.getElementById(id); };
  var root = $("replay");
  var INDEX = JSON.parse($("semif-index").textContent);
  var reduceMotion = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

  // ---- state -------------------------------------------------------------------------------------------
  var entries = INDEX.map(function (m) {
    return { slug: m.slug, label: m.label, file: m.file, js: m.js, sha256: m.sha256, bytes: m.bytes, source: m.source,
             local: false, trace: null, text: null, view: null, checks: null };
  });
  var cur = null;         // the selected trace and repeat, prepared for replay (see prepare)
  var clock = 0, playing = false, lastNow = null, speed = 1, ended = false;
  var userSpeed = null;   // the speed a reader chose (kept when the trace changes); null: pick per trace
  var dirtyAll = true;    // redraw every clock-dependent part (streams, statuses) on the next render
  var dirtyRows = true;   // rewrite every row's cells too (not when the rows are the server-rendered t = 0 ones)
  var lastFull = -1;      // the clock of the last full render: between two marks only the clocks move
  var lastHash = "";
  var localCount = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  // a region that may scroll: reachable by keyboard (so it can be scrolled) and named for screen readers
  function scrollable(node, label) {
    node.tabIndex = 0; node.setAttribute("role", "region"); node.setAttribute("aria-label", label);
    return node;
  }
  function setText(node, text) { if (node.textContent !== text) node.textContent = text; }  // no write when unchanged
  function announce(msg) { $("live").textContent = msg; }
  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = function () { resolve(); };
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  // ---- loading and checking traces -----------------------------------------------------------------------
  var checker = null;
  function loadChecker() {  // the schema validator, canonical JSON and SHA-256, with both schemas: only when needed
    if (!checker) checker = loadScript("../assets/check.js").then(function () { return window.SemifCheck; });
    return checker;
  }
  function checkTrace(check, obj, text) {
    var schema = obj && window.SemifSchemas[obj.format];
    if (!schema) return { ok: false, problems: ["format " + JSON.stringify(obj && obj.format) + " is not one this replay knows (" + Object.keys(window.SemifSchemas).join(", ") + ")"], stage: "is not a trace this replay can read" };
    var errs = check.validate(schema, obj, 8);
    if (errs.length) return { ok: false, problems: errs, stage: "does not match the trace schema (" + obj.format + ")" };
    var cons = P.consistency(obj);
    if (cons.length) return { ok: false, problems: cons, stage: "cannot be replayed" };
    var sums = check.verifyChecksums(text);
    if (sums.length) return { ok: false, problems: sums, stage: "fails its checksums (edited or damaged)" };
    return { ok: true, problems: [] };
  }
  function ensureLoaded(entry) {  // a promise of the entry with its trace parsed
    if (entry.trace) return Promise.resolve(entry);
    var have = function () { return window.SemifTraces && window.SemifTraces[entry.slug]; };
    return (have() ? Promise.resolve() : loadScript("../traces/" + entry.js)).then(function () {
      var data = have();
      if (!data) throw new Error("traces/" + entry.js + " did not define trace " + entry.slug);
      entry.text = data.text; entry.view = data.view;
      entry.trace = JSON.parse(entry.text);
      return entry;
    });
  }

  // ---- the static parts of the view for the selected trace ------------------------------------------------
  function buildPicker() {
    var sel = $("trace-select");
    clear(sel);
    entries.forEach(function (e, i) {
      var o = el("option", null, (e.local ? "opened: " : "") + e.label);
      o.value = String(i);
      sel.appendChild(o);
    });
    sel.disabled = entries.length < 2;
    if (cur) sel.value = String(entries.indexOf(cur.entry));
  }
  function buildRepeatPicker() {
    var sel = $("repeat-select");
    clear(sel);
    var reps = repeatsOf(cur.trace);
    reps.forEach(function (r, i) {
      var o = el("option", null, "run " + (i + 1) + " of " + reps.length);
      o.value = String(r);
      sel.appendChild(o);
    });
    sel.value = String(cur.repeat);
    sel.disabled = reps.length < 2;
  }
  function buildVerdict() {  // written by build.py for built-in traces; a file from disk has none
    var p = $("verdict"), v = cur.entry.view;
    clear(p);
    if (!v) {
      p.appendChild(el("strong", null, "Opened from your disk: "));
      p.appendChild(document.createTextNode("the verdict in words and the numbers are written when the site is built " +
        "(python build.py with the file under data/traces/). The file was checked here and replays below; its own summary is under Run details."));
      return;
    }
    v.verdict.forEach(function (s, i) {
      var span = el("span", "vs vs-" + s.lane);
      if (s.name) { span.appendChild(el("strong", null, s.name)); span.appendChild(document.createTextNode(" ")); }
      span.appendChild(document.createTextNode(s.text));
      p.appendChild(span);
      if (i < v.verdict.length - 1) p.appendChild(document.createTextNode(" "));
    });
  }
  function buildNumbers() {
    var host = $("numbers"), v = cur.entry.view;
    clear(host);
    $("account").textContent = v ? v.numbers.account : "";
    $("basis").textContent = v ? v.numbers.basis : "";
    if (!v) { host.appendChild(el("caption", null, "Numbers are written by the site build; see Run details for this file's summary.")); return; }
    var thead = el("thead"), hr = el("tr");
    hr.appendChild(el("td"));
    v.numbers.columns.forEach(function (c, i) { var th = el("th", "col-" + v.numbers.keys[i], c); th.scope = "col"; hr.appendChild(th); });
    thead.appendChild(hr); host.appendChild(thead);
    var tb = el("tbody");
    v.numbers.rows.forEach(function (r) {
      var tr = el("tr"), th = el("th", null, r.label);
      th.scope = "row"; tr.appendChild(th);
      r.cells.forEach(function (c) {
        var td = el("td", c.warn ? "warn" : null, c.text);
        if (c.note) { td.appendChild(document.createTextNode(" ")); td.appendChild(el("span", "note", c.note)); }
        tr.appendChild(td);
      });
      tb.appendChild(tr);
    });
    host.appendChild(tb);
  }
  function buildNotes() {
    var notes = $("notes");
    clear(notes);
    (cur.trace.notes || []).forEach(function (n) { notes.appendChild(el("li", null, n)); });
    var m = cur.entry, meta = $("trace-meta");
    clear(meta);
    meta.appendChild(document.createTextNode((cur.trace.experiment.title ? cur.trace.experiment.title + " · " : "") +
      cur.trace.experiment.id + " · " + (m.local ? "opened from your disk: " + m.fileName : "file " + m.file) + " · sha256 "));
    meta.appendChild(el("span", "hash", m.sha256 || "…"));
  }
  // The lanes and the rows: build.py renders the same markup for the first trace, which is taken over as is.
  function buildLanes() {
    var host = $("lanes");
    var same = host.getAttribute("data-trace") === cur.entry.slug && !cur.entry.local &&
      host.querySelectorAll(".lane").length === 1 + cur.gens.length;
    if (!same) {
      clear(host);
      host.appendChild(laneSection("typed", "Typed decisions"));
      cur.gens.forEach(function (g) { host.appendChild(laneSection(g.key, g.name)); });
      host.setAttribute("data-trace", cur.entry.local ? "" : cur.entry.slug);
    }
    host.className = "lanes lanes-" + (1 + cur.gens.length);
    var q = function (key, sel) { return host.querySelector(".lane[data-lane=" + key + "] " + sel); };
    cur.typedDom = { watch: q("typed", ".watch"), status: q("typed", ".status") };
    cur.gens.forEach(function (g) {
      g.dom = { watch: q(g.key, ".watch"), status: q(g.key, ".status"), ttft: q(g.key, ".ttft"), stream: q(g.key, ".stream"),
                toks: q(g.key, ".toks"), info: q(g.key, ".tokinfo"), verdict: q(g.key, ".verdict") };
      clear(g.dom.toks);
      g.shown = 0; g.sel = -1; g.cursor = null;
      g.dom.info.textContent = "Tap a token, or focus this box and use ←/→, for its time and probability.";
    });
  }
  function laneSection(key, name) {
    var s = el("section", "lane lane-" + key);
    s.setAttribute("data-lane", key);
    s.setAttribute("aria-labelledby", "lane-" + key + "-h");
    var h = el("header"), h2 = el("h2", null, name);
    h2.id = "lane-" + key + "-h";
    h.appendChild(h2); h.appendChild(el("span", "watch", fmtClock(0)));
    s.appendChild(h);
    if (key !== "typed") { var badge = el("span", "ttft"); badge.hidden = true; s.appendChild(badge); }
    s.appendChild(el("p", "status", key === "typed" ? "rendering and encoding the prompts…" : "rendering and encoding the prompt…"));
    if (key !== "typed") {
      var box = scrollable(el("div", "stream"), name + ": tokens so far");
      box.appendChild(el("div", "toks"));
      s.appendChild(box);
      var info = el("p", "tokinfo"); info.setAttribute("aria-live", "polite"); s.appendChild(info);
      s.appendChild(el("p", "verdict wait", "array not finished yet"));
    }
    return s;
  }
  function buildCriteria() {
    var ol = $("criteria");
    var keys = cur.gens.map(function (g) { return g.key; });
    // the rows build.py rendered (at t = 0) are taken over once, for their trace; any later change rebuilds
    var same = ol.hasAttribute("data-server") && ol.getAttribute("data-trace") === cur.entry.slug && !cur.entry.local;
    ol.removeAttribute("data-server");
    ol.className = "crits lanes-" + (1 + keys.length);
    if (!same) {
      clear(ol);
      var head = el("li", "crit head-row");
      head.setAttribute("aria-hidden", "true");
      head.appendChild(el("span", "cid", "id"));
      head.appendChild(el("span", "q", "criterion and label"));
      head.appendChild(el("span", "dec", "typed decision"));
      keys.forEach(function (k) { head.appendChild(el("span", "gv", SHORT[k])); });
      ol.appendChild(head);
      cur.criteria.forEach(function (c) { ol.appendChild(criterionRow(c, keys)); });
      ol.setAttribute("data-trace", cur.entry.local ? "" : cur.entry.slug);
    }
    var lis = ol.querySelectorAll("li.crit[data-id]");
    cur.rows = cur.criteria.map(function (c, k) {
      var li = lis[k];
      var gv = {};
      keys.forEach(function (key) { gv[key] = li.querySelector(".gv[data-lane=" + key + "] .v"); });
      // taken over at t = 0 as rendered: the first render need not rewrite them
      var gshown = {};
      keys.forEach(function (key) { gshown[key] = same ? "pending|…" : null; });
      return { li: li, dec: li.querySelector(".dec"), gv: gv, c: c, k: k, shown: same ? false : null, gshown: gshown };
    });
    return same;
  }
  function criterionRow(c, keys) {  // the same markup as templates/demo.html.j2 renders for the first trace
    var li = el("li", "crit");
    li.setAttribute("data-id", c.id);
    li.appendChild(el("span", "cid", c.id));
    var labelled = c.label !== undefined && c.label !== null;
    var q = el("span", "q", c.question + (labelled ? " " : ""));
    if (labelled) q.appendChild(el("span", "lbl", "label: " + c.label));
    li.appendChild(q);
    var dec = el("span", "dec");
    dec.appendChild(el("span", "wait", "waiting…"));
    li.appendChild(dec);
    keys.forEach(function (k) {
      var gv = el("span", "gv");
      gv.setAttribute("data-lane", k);
      gv.appendChild(el("span", "k", SHORT[k] + ":"));
      gv.appendChild(document.createTextNode(" "));
      gv.appendChild(el("span", "v", "…"));
      li.appendChild(gv);
    });
    return li;
  }

  // ---- one row's typed decision ---------------------------------------------------------------------------
  function rightWrong(correct) {
    if (correct === null || correct === undefined) return null;
    return el("span", "mark " + (correct ? "right" : "wrong"), correct ? "✓ right" : "✗ wrong");
  }
  function decisionNodes(d, c) {
    var frag = document.createDocumentFragment();
    var bar = el("span", "bar"), title = [];
    d.option_ids.forEach(function (id, i) {
      var tied = d.tie && d.tied_option_ids.indexOf(id) >= 0;
      var seg = el("span", "seg" + (tied ? " tie" : !d.tie && id === d.choice ? " on" : ""));
      seg.style.width = (100 * d.probabilities[i]).toFixed(2) + "%";
      bar.appendChild(seg);
      title.push(id + " " + d.probabilities[i].toFixed(3));
    });
    bar.title = "raw " + title.join(" · ") + " · margin " + d.margin.toFixed(3) + " · allowed mass " + d.allowed_token_mass.toFixed(3);
    bar.setAttribute("role", "img");
    bar.setAttribute("aria-label", "raw probabilities: " + title.join(", "));
    frag.appendChild(bar);
    var pmax = Math.max.apply(null, d.probabilities);
    var ch = el("span", "choice" + (d.tie ? " tie" : ""), (d.tie || d.choice === null ? "tie " : d.choice + " ") + fmtP(pmax));
    ch.title = "raw choice " + (d.choice === null ? "none (tie)" : d.choice) + " · p " + pmax.toFixed(3) + " · margin " + d.margin.toFixed(3);
    frag.appendChild(ch);
    if (d.calibrated) {
      var cp = Math.max.apply(null, d.calibrated.probabilities);
      var cal = el("span", "cal", "cal. " + (d.calibrated.tie || d.calibrated.choice === null ? "tie " : d.calibrated.choice + " ") + fmtP(cp));
      cal.title = "calibrated: " + d.option_ids.map(function (id, i) { return id + " " + d.calibrated.probabilities[i].toFixed(3); }).join(" · ");
      frag.appendChild(cal);
    }
    var mark = rightWrong(typedCorrect(d, c));
    if (mark) frag.appendChild(mark);
    return frag;
  }

  // ---- the frame: everything that depends on the clock ----------------------------------------------------
  // Nothing in a frame reads layout back; a row is rewritten only when its state changed, and while the clock
  // moves between two marks (times at which something visible changes) only the clocks and the playhead move.
  function crossedMark(from, to) { return T.crossedMark(cur.marks, from, to); }
  function renderClocks() {
    var t = clock;
    setText($("clock-now"), fmtClock(t));
    var scr = $("scrubber");
    scr.value = String(t);
    scr.setAttribute("aria-valuetext", fmtClock(t) + " of " + fmtClock(cur.tEnd));
    setText(cur.typedDom.watch, fmtClock(Math.min(t, cur.typedDone)));
    cur.gens.forEach(function (g) { setText(g.dom.watch, fmtClock(Math.min(t, g.done))); });
    updatePlayhead();
  }
  function render() {
    if (!cur) return;
    var t = clock, N = cur.criteria.length;
    setText($("clock-now"), fmtClock(t));
    setText($("clock-end"), "/ " + fmtClock(cur.tEnd));
    var scr = $("scrubber");
    if (document.activeElement !== scr || playing) scr.value = String(t);
    scr.setAttribute("aria-valuetext", fmtClock(t) + " of " + fmtClock(cur.tEnd));
    setText($("play"), playing ? "Pause" : (ended ? "Replay" : "Play"));
    $("play").setAttribute("aria-pressed", playing ? "true" : "false");

    // typed lane and the typed cell of each row
    var landed = [], shownDec = 0;
    cur.rows.forEach(function (row) {
      var d = cur.byId[row.c.id];
      var on = !!d && d.t_available <= t;
      if (on) shownDec++;
      if (dirtyRows || row.shown !== on) { landed.push([row, d, on]); row.shown = on; }
    });
    landed.forEach(function (x) {
      var row = x[0], d = x[1];
      clear(row.dec);
      row.dec.appendChild(el("span", "k", "typed:"));
      if (x[2]) row.dec.appendChild(decisionNodes(d, row.c));
      else row.dec.appendChild(el("span", "wait", d ? "waiting…" : "no decision in this run"));
    });
    if (playing && !reduceMotion && !dirtyRows) {  // the rows that just got their decision flash (no layout read)
      landed.forEach(function (x) { if (x[2] && x[0].li.animate) x[0].li.animate([{ backgroundColor: "var(--typed-soft)" }, { backgroundColor: "transparent" }], { duration: 600, easing: "ease-out" }); });
    }
    var typed = cur.typed, tk = typed.tokens, ts;
    setText(cur.typedDom.watch, fmtClock(Math.min(t, cur.typedDone)));
    if (shownDec === N || (shownDec > 0 && t >= cur.lastDecision)) {
      ts = shownDec + " of " + N + " decisions, available at " + fmtS(cur.firstDecision) +
        (cur.passes > 1 ? " to " + fmtS(cur.lastDecision) + " (" + cur.passes + " passes)" : " (one pass)") + " · no output tokens";
    } else if (shownDec > 0) {
      ts = shownDec + " of " + N + " decisions so far (pass by pass)…";
    } else if (eventT(typed, "prefill_done") !== null && t >= eventT(typed, "prefill_done")) {
      ts = "scoring " + N + " criteria: " + tk.suffix + " suffix tokens in " + tk.passes + (tk.passes === 1 ? " pass" : " passes") + "… no decision yet";
    } else if (eventT(typed, "encoded") !== null && t >= eventT(typed, "encoded")) {
      ts = "prefilling the shared state (" + tk.prefix + " tokens)… no decision yet";
    } else {
      ts = "rendering and encoding the prompts…";
    }
    setText(cur.typedDom.status, ts);
    cur.typedDom.status.className = "status" + (shownDec === N ? " done" : "");

    // generated lanes and their value in each row
    var tokensShown = 0, answered = 0;
    cur.gens.forEach(function (g) {
      var n = renderStream(g, t);
      tokensShown += n;
      answered += renderGenValues(g, t);
    });

    // milestones for screen readers, only when crossed while playing
    if (playing) {
      var prev = root.getAttribute("data-milestones") || "";
      var ms = (shownDec > 0 ? "d" : "") + cur.gens.map(function (g) { return (g.shown > 0 ? "f" : "-") + (t >= g.done ? "g" : "-"); }).join("");
      if (ms !== prev) {
        if (shownDec > 0 && prev.indexOf("d") !== 0) announce(shownDec + " typed decisions available at " + fmtS(cur.firstDecision));
        else cur.gens.forEach(function (g) {
          if (t >= g.done && g.announced !== "g") { g.announced = "g"; announce(g.name + " finished at " + fmtS(g.done) + ": " + verdictText(g)); }
        });
        root.setAttribute("data-milestones", ms);
      }
    }
    cur.gens.forEach(function (g) { if (g.pendingScroll) { g.pendingScroll = false; g.dom.stream.scrollTop = 1e9; } });
    updatePlayhead();
    dirtyAll = dirtyRows = false;
    lastFull = t;
    root.setAttribute("data-state", playing ? "playing" : (ended ? "ended" : "paused"));
    root.setAttribute("data-t", String(t));
    root.setAttribute("data-tokens-shown", String(tokensShown));
    root.setAttribute("data-decisions-shown", String(shownDec));
    root.setAttribute("data-answers-shown", String(answered));
    root.setAttribute("data-trace", cur.entry.local ? "" : cur.entry.slug);
    root.setAttribute("data-repeat", String(cur.repeat));
  }
  function verdictText(g) { return F.runVerdict(g.run, g.capped, cur.trace.prompts.generated.max_new_tokens); }
  function tokenSpan(g, i) {
    var tok = g.tokens[i];
    var span = el("span", "tok" + (tok.answer_index !== null && tok.answer_index !== undefined ? " ans" : "") + (tok.stop ? " stop" : "") + (tok.masked ? " masked" : ""),
      tok.stop ? "end of turn" : tok.text);
    span.setAttribute("data-i", String(i));
    span.title = tokenInfo(tok);
    return span;
  }
  function renderStream(g, t) {
    var n = countUpTo(g.tokenT, t), d = g.dom;
    if (dirtyAll || n < g.shown) { clear(d.toks); g.shown = 0; g.cursor = null; if (g.sel >= n) selectToken(g, -1); }
    if (n > g.shown) {
      var frag = document.createDocumentFragment();
      for (var i = g.shown; i < n; i++) frag.appendChild(tokenSpan(g, i));
      if (g.cursor) g.cursor.remove();
      d.toks.appendChild(frag);
      g.cursor = null;
    }
    var grew = n > g.shown;
    g.shown = n;
    var done = t >= g.done;
    if (!done && n > 0 && !g.cursor) { g.cursor = el("span", "cursor"); g.cursor.setAttribute("aria-hidden", "true"); d.toks.appendChild(g.cursor); }
    if (g.cursor && (done || n === 0)) { g.cursor.remove(); g.cursor = null; }
    // follow the newest token: a scroll (not a layout shift), and the frame's only layout, after all its writes
    if (grew && g.sel < 0) g.pendingScroll = true;
    setText(d.watch, fmtClock(Math.min(t, g.done)));
    d.ttft.hidden = t < g.ttft;  // hidden, it keeps its place (see site.css): showing it moves nothing
    setText(d.ttft, "first token at " + fmtS(g.ttft));
    var run = g.run, st;
    if (done) st = "done at " + fmtS(g.done) + ": " + plural(run.output_tokens, "output token") + ", stopped by " + run.stop_reason.replace(/_/g, " ") +
      (run.masked_tokens ? " · the grammar overruled " + plural(run.masked_tokens, "token") : "");
    else if (n > 0) st = "writing: " + plural(n, "token") + " so far…";
    else if (eventT(run, "encoded") !== null && t >= eventT(run, "encoded")) st = "prefilling the prompt (" + cur.trace.prompts.generated.input_tokens + " tokens)… waiting for the first token";
    else st = "rendering and encoding the prompt…";
    setText(d.status, st);
    var vcls, vtext;
    if (!done) { vcls = "verdict wait"; vtext = "array not finished yet"; }
    else if (g.usable) { vcls = "verdict ok"; vtext = verdictText(g); }
    else { vcls = "verdict bad"; vtext = verdictText(g); }
    if (d.verdict.className !== vcls) d.verdict.className = vcls;
    setText(d.verdict, vtext);
    return n;
  }
  function renderGenValues(g, t) {  // a lane's value in each row: as it streams, then judged when the array ends
    var answered = 0;
    cur.rows.forEach(function (row) {
      var cell = P.genCell(g, row.c, row.k, t);
      if (cell.arrived) answered++;
      var state = cell.state, text = cell.text, title = cell.title;
      var key = state + "|" + text;
      if (!dirtyRows && row.gshown[g.key] === key) return;
      row.gshown[g.key] = key;
      var node = row.gv[g.key];
      node.className = "v " + state;
      node.textContent = text;
      if (state === "right" || state === "wrong") node.appendChild(el("span", "sr-only", state === "right" ? " right" : " wrong"));
      if (title) node.parentNode.title = title; else node.parentNode.removeAttribute("title");
    });
    return answered;
  }

  // ---- token details: tap a token, or focus a lane's token box and use the arrow keys --------------------
  function selectToken(g, i) {
    var box = g.dom.toks;
    var old = box.querySelector(".tok.sel");
    if (old) old.classList.remove("sel");
    g.sel = i;
    if (i < 0) { g.dom.info.textContent = "Tap a token, or focus this box and use ←/→, for its time and probability."; return; }
    var span = box.querySelector('.tok[data-i="' + i + '"]');
    if (span) { span.classList.add("sel"); if (span.scrollIntoView) span.scrollIntoView({ block: "nearest" }); }
    g.dom.info.textContent = tokenInfo(g.tokens[i]);
  }
  function setupTokenDetails() {
    $("lanes").addEventListener("click", function (ev) {
      var span = ev.target.closest && ev.target.closest(".tok[data-i]");
      if (!span || !cur) return;
      var g = cur.gens.filter(function (x) { return x.dom.toks.contains(span); })[0];
      if (g) selectToken(g, Number(span.getAttribute("data-i")));
    });
    $("lanes").addEventListener("keydown", function (ev) {
      var box = ev.target.closest && ev.target.closest(".stream");
      if (!box || !cur) return;
      var g = cur.gens.filter(function (x) { return x.dom.stream === box; })[0];
      if (!g || !g.shown) return;
      var i = g.sel;
      if (ev.key === "ArrowRight" || ev.key === "ArrowDown") i = Math.min(g.shown - 1, i + 1);
      else if (ev.key === "ArrowLeft" || ev.key === "ArrowUp") i = Math.max(0, i < 0 ? g.shown - 1 : i - 1);
      else if (ev.key === "Home") i = 0;
      else if (ev.key === "End") i = g.shown - 1;
      else if (ev.key === "Escape") i = -1;
      else return;
      ev.preventDefault(); ev.stopPropagation();  // these keys move in the token box, not in the replay
      selectToken(g, i);
    });
  }

  // ---- the timeline chart (drawn for the selected run; only the playhead moves) ---------------------------
  var tl = null;
  function drawTimeline() {
    var host = $("timeline");
    clear(host);
    var W = Math.max(300, Math.round(host.clientWidth || 800));
    var narrow = W < 560;
    var L = narrow ? 76 : 96, R = 14, top = 8, laneH = 20, gap = 12;
    var yT = top + 6, nG = cur.gens.length;
    var yGs = cur.gens.map(function (_, i) { return yT + (laneH + gap) * (i + 1); });
    var yC = yT + (laneH + gap) * (nG + 1) + 12, cH = narrow ? 90 : 110, yAxis = yC + cH + 4;
    var H = yAxis + 26;
    var tEnd = cur.tEnd || 1;
    var x = function (t) { return L + (W - L - R) * (t / tEnd); };
    var typed = cur.typed, N = cur.criteria.length;
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img" });
    svg.setAttribute("aria-label", "Timeline: typed decisions at " + fmtS(cur.firstDecision) + "; " +
      cur.gens.map(function (g) { return g.name.toLowerCase() + ": first token at " + fmtS(g.ttft) + ", finished at " + fmtS(g.done); }).join("; "));
    var step = niceStep(tEnd / (narrow ? 4 : 8));
    var axis = svgEl("g", { "class": "axis" });
    for (var s = 0; s <= tEnd + 1e-12; s += step) {
      axis.appendChild(svgEl("line", { x1: x(s), x2: x(s), y1: yT - 4, y2: yAxis, "class": "grid" }));
      axis.appendChild(svgEl("text", { x: x(s), y: yAxis + 14, "text-anchor": "middle" }, fmtTick(s, step)));
    }
    axis.appendChild(svgEl("text", { x: W - R, y: yAxis + 14, "text-anchor": "end" }, "s"));
    svg.appendChild(axis);
    svg.appendChild(svgEl("text", { x: 0, y: yT + 14 }, "typed"));
    var labels = [];  // phase labels, drawn last so the ticks do not cover them
    var tEnc = eventT(typed, "encoded") || 0, tPre = eventT(typed, "prefill_done") || tEnc, tSuf = eventT(typed, "suffix_done") || cur.typedDone;
    lane(svg, x, yT, laneH, [[0, tEnc, "ph-typed", "encode"], [tEnc, tPre, "ph-typed", "prefill state"], [tPre, tSuf, "ph-typed-main", "score criteria"]], labels);
    var seenT = {};
    typed.decisions.forEach(function (d) {
      if (seenT[d.t_available]) return;
      seenT[d.t_available] = true;
      var cx = x(d.t_available), cy = yT + laneH / 2;
      var n = typed.decisions.filter(function (o) { return o.t_available === d.t_available; }).length;
      var dm = svgEl("path", { d: "M" + cx + " " + (cy - 7) + " l7 7 l-7 7 l-7 -7 z", "class": "tick-typed" });
      dm.appendChild(svgEl("title", {}, plural(n, "decision") + " available at " + fmtS(d.t_available)));
      svg.appendChild(dm);
    });
    cur.gens.forEach(function (g, i) {
      var y = yGs[i], cls = g.key === "constrained" ? "con" : "gen";
      svg.appendChild(svgEl("text", { x: 0, y: y + 14 }, SHORT[g.key]));
      var gEnc = eventT(g.run, "encoded") || 0;
      lane(svg, x, y, laneH, [[0, gEnc, "ph-" + cls, "encode"], [gEnc, g.ttft, "ph-" + cls, "prefill"], [g.ttft, g.done, "ph-" + cls + "-main", "decode"]], labels);
      g.tokens.forEach(function (tok) {
        svg.appendChild(svgEl("line", { x1: x(tok.t), x2: x(tok.t), y1: y + 3, y2: y + laneH - 3, "class": "tick-" + cls }));
      });
    });
    labels.forEach(function (l) { svg.appendChild(l); });
    // cumulative answers: typed decisions, and each generated lane's values (only a usable array's count)
    var yv = function (k) { return yC + cH - cH * (k / Math.max(N, 1)); };
    svg.appendChild(svgEl("text", { x: 0, y: yC + 12, "class": "lane-note" }, "answers"));
    svg.appendChild(svgEl("text", { x: 0, y: yC + 26, "class": "lane-note" }, "of " + N));
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: yv(N), y2: yv(N), "class": "grid" }));
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: yv(0), y2: yv(0), "class": "grid" }));
    var typedTimes = typed.decisions.map(function (d) { return d.t_available; });
    svg.appendChild(svgEl("path", { d: stepPath(typedTimes, x, yv, tEnd), "class": "step-typed" }));
    var notes = [];
    if (typedTimes.length) notes.push("typed: " + typedTimes.length + " by " + fmtS(Math.max.apply(null, typedTimes)));
    cur.gens.forEach(function (g) {
      var times = g.usable ? Object.keys(g.answerT).map(function (k) { return g.answerT[k]; }) : [];
      svg.appendChild(svgEl("path", { d: stepPath(times, x, yv, tEnd), "class": "step-" + (g.key === "constrained" ? "con" : "gen") }));
      notes.push(SHORT[g.key] + ": " + (g.usable ? times.length + " by " + fmtS(Math.max.apply(null, times.concat([0]))) : "none usable"));
    });
    notes.forEach(function (n, i) {
      svg.appendChild(svgEl("text", { x: W - R - 2, y: yC + cH - 6 - 14 * (notes.length - 1 - i), "text-anchor": "end", "class": "lane-note" }, n));
    });
    var veil = svgEl("rect", { x: L, y: yT - 6, width: 0, height: yAxis - yT + 6, "class": "future" });
    svg.appendChild(veil);
    var ph = svgEl("line", { x1: L, x2: L, y1: yT - 6, y2: yAxis, "class": "playhead" });
    svg.appendChild(ph);
    host.appendChild(svg);
    tl = { svg: svg, x: x, L: L, R: R, W: W, ph: ph, veil: veil, tEnd: tEnd };
    updatePlayhead();
  }
  function lane(svg, x, y, h, phases, labels) {
    phases.forEach(function (p) {
      if (!(p[1] > p[0])) return;
      var w = Math.max(0.5, x(p[1]) - x(p[0]));
      var r = svgEl("rect", { x: x(p[0]), y: y, width: w, height: h, rx: 3, "class": p[2] });
      r.appendChild(svgEl("title", {}, p[3] + ": " + fmtS(p[0]) + " to " + fmtS(p[1])));
      svg.appendChild(r);
      if (w > p[3].length * 7 + 10) labels.push(svgEl("text", { x: x(p[0]) + 5, y: y + h / 2 + 4, "class": "phase-label" + (p[2] === "ph-typed-main" ? " on-dark" : "") }, p[3]));
    });
  }
  function updatePlayhead() {
    if (!tl) return;
    var px = tl.x(Math.min(clock, tl.tEnd));
    tl.ph.setAttribute("x1", px); tl.ph.setAttribute("x2", px);
    tl.veil.setAttribute("x", px);
    tl.veil.setAttribute("width", Math.max(0, tl.W - tl.R - px));
  }
  function timelineSeek(ev) {
    if (!tl) return;
    var rect = tl.svg.getBoundingClientRect();
    var px = (ev.clientX - rect.left) * (tl.W / rect.width);
    pause();
    seek(T.timeAtX(px, tl.L, tl.W, tl.R, tl.tEnd));
  }

  // ---- run details (for auditing), built when opened ------------------------------------------------------
  function detailsOpen() { return $("run-details").open; }
  function buildDetails() {
    if (!cur || !detailsOpen()) return;
    window.SemifDetails.build($("details"), cur, { el: el, scrollable: scrollable, fmtS: fmtS, check: checkBuiltIn });
  }
  function checkBuiltIn() {  // "check again in this browser": the same checks a file from disk gets
    var entry = cur.entry;
    return loadChecker().then(function (check) {
      entry.checks = checkTrace(check, entry.trace, entry.text);
      return entry.checks;
    });
  }

  // ---- selecting, playing, seeking ----------------------------------------------------------------------
  function select(index, repeat, keepTime) {  // the entry must be loaded (see pick)
    var entry = entries[index];
    var reps = repeatsOf(entry.trace);
    var rep = reps.indexOf(repeat) >= 0 ? repeat : reps[0];
    var t = keepTime ? clock : 0;
    var traceChanged = !cur || cur.entry !== entry;
    cur = P.prepare(entry, rep);
    ["play", "restart", "scrubber", "speed", "share"].forEach(function (id) { $(id).disabled = false; });
    buildPicker(); buildRepeatPicker(); buildLanes();
    var adopted = buildCriteria();
    // the server rendered the first trace's verdict, numbers and notes: keep them until the trace changes
    var rendered = $("verdict").getAttribute("data-trace");
    if (traceChanged && rendered !== (entry.local ? "" : entry.slug)) { buildVerdict(); buildNumbers(); buildNotes(); }
    $("verdict").setAttribute("data-trace", entry.local ? "-" : entry.slug);
    var dl = $("download");
    if (entry.local) { dl.href = entry.blobUrl; dl.setAttribute("download", entry.fileName); }
    else { dl.href = "../traces/" + entry.file; dl.setAttribute("download", entry.file); }
    $("scrubber").max = String(cur.tEnd);
    chooseSpeed();
    dirtyAll = true; dirtyRows = !adopted;
    clock = Math.max(0, Math.min(t, cur.tEnd));
    ended = clock >= cur.tEnd;
    render();
    tl = null;
    var drawn = cur;
    setTimeout(function () { if (cur === drawn) drawTimeline(); }, 0);  // below the fold: its own task
    buildDetails();
  }
  function pick(index, repeat) {  // load the entry's data file if needed, then select it
    var entry = entries[index];
    if (!entry.trace) setText($("trace-status"), "loading…");
    return ensureLoaded(entry).then(function () {
      return new Promise(function (resolve) { setTimeout(resolve, 0); });  // parsing and building: two tasks
    }).then(function () {
      setText($("trace-status"), "");
      select(index, repeat, false);
      return new Promise(function (resolve) { setTimeout(resolve, 0); });  // after the timeline is drawn
    }, function (err) {
      showFileMessage("error", "The trace " + entry.label + " could not be loaded: " + err.message);
      if (cur) $("trace-select").value = String(entries.indexOf(cur.entry));
      throw err;
    });
  }
  function chooseSpeed() {
    // the reader's choice if they made one; else real time, unless the run is too short to follow: then the
    // gentlest slow-down that makes it followable
    speed = userSpeed !== null ? userSpeed : T.defaultSpeed(cur.tEnd);
    $("speed").value = String(speed);
  }
  function setSpeed(s) {  // a reader's choice: kept until they choose again
    speed = userSpeed = s; $("speed").value = String(s); lastNow = null;
  }
  function frame(now) {
    if (!playing) return;
    if (lastNow !== null) clock += (now - lastNow) / 1000 * speed;
    lastNow = now;
    if (clock >= cur.tEnd) { clock = cur.tEnd; playing = false; ended = true; lastNow = null; writeHash(); }
    if (!playing || dirtyAll || dirtyRows || crossedMark(lastFull, clock)) render(); else renderClocks();
    if (playing) requestAnimationFrame(frame);
  }
  function play() {
    if (!cur || playing) return;
    if (clock >= cur.tEnd) { clock = 0; dirtyAll = true; }
    playing = true; ended = false; lastNow = null;
    render();
    requestAnimationFrame(frame);
  }
  function pause() {
    if (!playing) return;
    playing = false; lastNow = null;
    render(); writeHash();
  }
  function seek(t) {
    if (!cur) return;
    clock = Math.max(0, Math.min(Number(t), cur.tEnd));
    ended = clock >= cur.tEnd && !playing;
    lastNow = null;
    render();
    if (!playing) writeHash();
  }
  function step(dir) {
    pause();
    seek(T.stepMark(cur.marks, clock, dir, cur.tEnd));
  }

  // ---- share link (URL hash: trace, repeat, time, speed) --------------------------------------------------
  function hashFor() {
    if (!cur || cur.entry.local) return "";
    return Link.formatHash(cur.entry.slug, cur.repeat, clock, speed);
  }
  function shareUrl() {
    var base = location.href.split("#")[0];
    return cur && cur.entry.local ? base : base + "#" + hashFor();
  }
  function writeHash() {
    $("share-url").value = shareUrl();
    if (!cur) return;
    var h = hashFor();
    if (h === lastHash) return;
    lastHash = h;
    // a trace opened from disk cannot be named in a link: the address then names none
    try { history.replaceState(null, "", h ? "#" + h : location.pathname + location.search); }
    catch (err) { /* some file:// setups refuse; the box above still has the link */ }
  }
  function readHash() { return Link.parseHash(location.hash); }
  function applyHash() {  // a promise: true when the link set a time (the replay then waits there, paused)
    var h = readHash();
    var idx = 0;
    if (h.trace !== undefined) {
      var found = entries.findIndex(function (e) { return !e.local && e.slug === h.trace; });
      if (found >= 0) idx = found;
      else showFileMessage("error", "This link names a trace that is not in this build: " + h.trace);
    }
    var rep = h.r !== undefined ? parseInt(h.r, 10) : undefined;
    if (!entries.length) return Promise.resolve(false);
    return pick(idx, rep).then(function () {
      if (h.speed !== undefined && SPEEDS.indexOf(Number(h.speed)) >= 0) setSpeed(Number(h.speed));
      if (h.t !== undefined && h.t !== "" && isFinite(Number(h.t))) { playing = false; seek(Number(h.t)); return true; }
      return false;
    });
  }

  // ---- opening a trace file (input or drag-and-drop); nothing leaves the browser --------------------------
  function showFileMessage(kind, text, problems) {
    var msg = $("file-msg");
    clear(msg);
    msg.hidden = false;
    msg.className = "msg " + kind;
    msg.appendChild(document.createTextNode(text));
    if (problems && problems.length) {
      var ul = el("ul");
      problems.slice(0, 8).forEach(function (p) { ul.appendChild(el("li", null, p)); });
      msg.appendChild(ul);
    }
  }
  function openFile(file) {
    if (!file) return;
    var reader = new FileReader();
    reader.onerror = function () { showFileMessage("error", file.name + ": could not be read."); };
    reader.onload = function () {
      var buf = new Uint8Array(reader.result);
      var text;
      try { text = new TextDecoder("utf-8", { fatal: true }).decode(buf); }
      catch (err) { showFileMessage("error", file.name + " is not UTF-8 text, so it is not a trace."); return; }
      var obj;
      try { obj = JSON.parse(text); }
      catch (err) { showFileMessage("error", file.name + " is not valid JSON: " + err.message); return; }
      loadChecker().then(function (check) {
        var checks;
        try { checks = checkTrace(check, obj, text); }
        catch (err) { showFileMessage("error", file.name + " could not be checked: " + err.message); return; }
        if (!checks.ok) { showFileMessage("error", file.name + " was not opened: it " + checks.stage + ".", checks.problems); return; }
        localCount++;
        var entry = { slug: "local-" + localCount, label: obj.model.key + " · " + obj.model.backend + " · " + obj.model.dtype + " (" + file.name + ")",
          file: null, fileName: file.name, sha256: check.sha256Bytes(buf), bytes: buf.length, local: true, trace: obj, text: text, view: null,
          checks: checks, blobUrl: URL.createObjectURL(new Blob([buf], { type: "application/json" })) };
        entries.push(entry);
        pause();
        select(entries.length - 1, undefined, false);
        showFileMessage("info", "Opened " + file.name + " from your disk: schema and checksums OK. It stays in this tab; to share it, share the file (a link cannot carry it).");
        writeHash();
        if (!reduceMotion) play();
      }, function (err) { showFileMessage("error", "The checker could not be loaded: " + err.message); });
    };
    reader.readAsArrayBuffer(file);
  }
  function setupFileInputs() {
    $("file-input").addEventListener("change", function (ev) { openFile(ev.target.files[0]); ev.target.value = ""; });
    var overlay = $("drop-overlay"), depth = 0;
    var hasFiles = function (ev) { return ev.dataTransfer && Array.prototype.indexOf.call(ev.dataTransfer.types || [], "Files") >= 0; };
    document.addEventListener("dragenter", function (ev) { if (!hasFiles(ev)) return; ev.preventDefault(); depth++; overlay.hidden = false; });
    document.addEventListener("dragover", function (ev) { if (!hasFiles(ev)) return; ev.preventDefault(); ev.dataTransfer.dropEffect = "copy"; });
    document.addEventListener("dragleave", function (ev) { if (!hasFiles(ev)) return; depth = Math.max(0, depth - 1); if (!depth) overlay.hidden = true; });
    document.addEventListener("drop", function (ev) {
      if (!hasFiles(ev)) return;
      ev.preventDefault(); depth = 0; overlay.hidden = true;
      openFile(ev.dataTransfer.files[0]);
    });
  }

  // ---- controls and keyboard ------------------------------------------------------------------------------
  function setupControls() {
    $("play").addEventListener("click", function () { if (playing) pause(); else play(); });
    $("restart").addEventListener("click", function () { var was = playing; playing = false; dirtyAll = true; seek(0); if (was || !reduceMotion) play(); });
    $("scrubber").addEventListener("input", function (ev) { if (playing) { playing = false; lastNow = null; } seek(Number(ev.target.value)); });
    $("speed").addEventListener("change", function (ev) { setSpeed(Number(ev.target.value)); writeHash(); });
    $("trace-select").addEventListener("change", function (ev) {
      pause(); $("file-msg").hidden = true;
      pick(Number(ev.target.value), undefined).then(function () { writeHash(); if (!reduceMotion) play(); }, function () { /* shown */ });
    });
    $("repeat-select").addEventListener("change", function (ev) { pause(); select(entries.indexOf(cur.entry), Number(ev.target.value), false); writeHash(); });
    $("share").addEventListener("click", function () {
      pause(); writeHash();
      var box = $("share-url"); box.value = shareUrl(); box.focus(); box.select();
      var done = function (ok) { $("share").textContent = ok ? "Link copied" : "Copy the selected link"; setTimeout(function () { $("share").textContent = "Copy link to this moment"; }, 2500); };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(box.value).then(function () { done(true); }, function () { done(false); });
      else done(false);
    });
    $("run-details").addEventListener("toggle", buildDetails);
    var dragging = false;
    var host = $("timeline");
    host.addEventListener("pointerdown", function (ev) { dragging = true; if (host.setPointerCapture) { try { host.setPointerCapture(ev.pointerId); } catch (err) { /* not capturable */ } } timelineSeek(ev); });
    host.addEventListener("pointermove", function (ev) { if (dragging) timelineSeek(ev); });
    host.addEventListener("pointerup", function () { dragging = false; });
    host.addEventListener("pointercancel", function () { dragging = false; });
    window.addEventListener("hashchange", function () {
      if (location.hash.replace(/^#/, "") === lastHash) return;
      // Stop without pause(): pausing writes the current moment into the address, over the link just opened.
      playing = false; lastNow = null;
      applyHash().then(function () { writeHash(); }, function () { /* shown */ });
    });
    var lastW = 0;
    window.addEventListener("resize", function () {
      var w = $("timeline").clientWidth;
      if (cur && w !== lastW) { lastW = w; drawTimeline(); }
    });
    document.addEventListener("keydown", function (ev) {
      if (!cur || ev.ctrlKey || ev.metaKey || ev.altKey) return;
      var tag = (ev.target && ev.target.tagName) || "";
      var type = (ev.target && ev.target.type) || "";
      var speedKey = ev.key === "+" || ev.key === "=" || ev.key === "-" || ev.key === "_";
      // a select keeps its own keys (type-ahead, arrows) except the speed keys, which no option starts with;
      // the read-only link box takes no typing, so every shortcut works from it
      var readOnly = tag === "INPUT" && ev.target.readOnly;
      var inField = (tag === "SELECT" && !speedKey) || tag === "TEXTAREA" || (tag === "INPUT" && type !== "range" && !readOnly);
      if (inField) return;
      var onButton = tag === "BUTTON" || tag === "A" || tag === "SUMMARY";
      var onRange = tag === "INPUT" && type === "range";
      var big = cur.tEnd / 10, small = cur.tEnd / 100;
      switch (ev.key) {
        case " ": case "k": case "K":
          if (onButton && ev.key === " ") return;  // the focused control's own action
          ev.preventDefault(); if (playing) pause(); else play(); break;
        case "r": case "R": ev.preventDefault(); $("restart").click(); break;
        case "ArrowRight": if (onRange) return; ev.preventDefault(); pause(); seek(clock + (ev.shiftKey ? big : small)); break;
        case "ArrowLeft": if (onRange) return; ev.preventDefault(); pause(); seek(clock - (ev.shiftKey ? big : small)); break;
        case "Home": if (onRange) return; ev.preventDefault(); pause(); seek(0); break;
        case "End": if (onRange) return; ev.preventDefault(); pause(); seek(cur.tEnd); break;
        case ".": ev.preventDefault(); step(1); break;
        case ",": ev.preventDefault(); step(-1); break;
        case "+": case "=": case "-": case "_": {
          ev.preventDefault();
          var i = SPEEDS.indexOf(speed);
          var j = ev.key === "+" || ev.key === "=" ? Math.max(0, i - 1) : Math.min(SPEEDS.length - 1, i + 1);
          setSpeed(SPEEDS[j]); writeHash(); break;
        }
        default: return;
      }
    });
  }

  // ---- start ----------------------------------------------------------------------------------------------
  function afterFirstPaint() {
    // Once the browser reports the first contentful paint (the page as build.py rendered it). A tab in the
    // background paints nothing, so there the data loads after the load event. A visible tab waits for the
    // paint report itself: a timer would fire before a late paint on a busy machine and put the trace's data
    // (hundreds of kB) ahead of it; the long safety timer only covers a browser that never reports paints.
    return new Promise(function (resolve) {
      var done = false;
      var go = function () { if (!done) { done = true; setTimeout(resolve, 0); } };
      var observed = false;
      try {
        new PerformanceObserver(function (list) {
          if (list.getEntries().some(function (e) { return e.name === "first-contentful-paint"; })) go();
        }).observe({ type: "paint", buffered: true });
        observed = (PerformanceObserver.supportedEntryTypes || []).indexOf("paint") >= 0;
      } catch (err) { /* no paint timing here: the load event below */ }
      var later = function () {
        if (!observed || document.visibilityState === "hidden") go(); else setTimeout(go, 15000);
      };
      if (document.readyState === "complete") later(); else window.addEventListener("load", later, { once: true });
    });
  }
  // A small, stable hook for tests and for anyone scripting the page (defined once the first trace is shown).
  var api = {
    seek: function (t) { pause(); seek(t); return this.state(); },
    play: play,
    pause: pause,
    setSpeed: function (s) { setSpeed(s); },
    select: function (slug, repeat) {  // a promise (the trace's data file may have to load first)
      var i = entries.findIndex(function (e) { return e.slug === slug; });
      if (i < 0) throw new Error("no trace " + slug);
      pause();
      return pick(i, repeat).then(function () { writeHash(); return api.state(); });
    },
    openDetails: function () { $("run-details").open = true; buildDetails(); },
    loadChecker: function () { return loadChecker().then(function () { return true; }); },
    traces: function () { return entries.map(function (e) { return e.slug; }); },
    tokenTimes: function (lane) {
      var g = cur && cur.gens.filter(function (x) { return x.key === (lane || "free"); })[0];
      return g ? g.tokenT.slice() : [];
    },
    decisionTimes: function () { return cur ? cur.typed.decisions.map(function (d) { return d.t_available; }) : []; },
    shareUrl: function () { return shareUrl(); },
    state: function () {
      if (!cur) return null;
      var lanes = {};
      cur.gens.forEach(function (g) { lanes[g.key] = { tokensShown: g.shown, tokensTotal: g.tokens.length }; });
      return { trace: cur.entry.slug, local: cur.entry.local, repeat: cur.repeat, t: clock, tEnd: cur.tEnd, speed: speed, playing: playing, ended: ended,
        tokensShown: Number(root.getAttribute("data-tokens-shown")), tokensTotal: cur.gens.reduce(function (a, g) { return a + g.tokens.length; }, 0),
        decisionsShown: Number(root.getAttribute("data-decisions-shown")), decisionsTotal: cur.typed.decisions.length,
        answersShown: Number(root.getAttribute("data-answers-shown")), checks: cur.entry.checks, lanes: lanes };
    }
  };
  setupControls();
  setupFileInputs();
  setupTokenDetails();
  if (!entries.length) {
    root.setAttribute("data-state", "empty");
    showFileMessage("info", "No traces are built into this page. Open a trace file (or drop one here) to replay it.");
    ["play", "restart", "scrubber", "speed", "share", "trace-select", "repeat-select"].forEach(function (id) { $(id).disabled = true; });
    window.semifReplay = api;
  } else {
    // The page is readable as rendered; the trace's data (hundreds of kB) is fetched only once that is painted.
    afterFirstPaint().then(applyHash).then(function (restored) {
      writeHash();
      window.semifReplay = api;
      if (!restored && !reduceMotion) play();
    }, function () { window.semifReplay = api; });
  }
})();
