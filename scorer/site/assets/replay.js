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
  // scorer/site/assets/replay/{format,link,prepare,timeline}.js.
  var F = window.SemifReplayFormat, Link = window.SemifReplayLink, P = window.SemifReplayPrepare, T = window.SemifReplayTimeline;
  var fmtS = F.fmtS, fmtClock = F.fmtClock, plural = F.plural, tokenInfo = F.tokenInfo;
  var repeatsOf = P.repeatsOf, eventT = P.eventT;
  var countUpTo = T.countUpTo, SPEEDS = T.SPEEDS;
  // The page's parts, loaded before this file too: scorer/site/assets/replay-{dom,view,chart}.js.
  var D = window.SemifReplayDom, V = window.SemifReplayView, Chart = window.SemifReplayChart;
  var el = D.el, clear = D.clear, scrollable = D.scrollable, setText = D.setText;

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
  function loadChecker() {  // only when needed: the schema validator, canonical JSON and SHA-256, with both schemas,
    // and the verdict's code (a trace from disk gets its headline, verdict and numbers computed here)
    if (!checker) checker = Promise.all([loadScript("../assets/check.js"), loadScript("../assets/verdict.js")]).then(function () { return window.SemifCheck; });
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
      if (x[2]) row.dec.appendChild(V.decisionNodes(d, row.c));
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

  // ---- the timeline chart (scorer/site/assets/replay-chart.js; drawn for the selected run, only the playhead moves) --
  var tl = null;
  function drawTimeline() { tl = Chart.draw($("timeline"), cur); updatePlayhead(); }
  function updatePlayhead() { if (tl) Chart.playhead(tl, clock); }
  function timelineSeek(ev) {
    if (!tl) return;
    pause();
    seek(Chart.timeAt(tl, ev));
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
    V.buildPicker(entries, cur); V.buildRepeatPicker(cur); V.buildLanes(cur);
    var adopted = V.buildCriteria(cur);
    // the server rendered the first trace's verdict, numbers and notes: keep them until the trace changes
    var rendered = $("verdict").getAttribute("data-trace");
    if (traceChanged && rendered !== (entry.local ? "" : entry.slug)) { V.buildVerdict(cur); V.buildNumbers(cur); V.buildNotes(cur); }
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
        var view;
        try { view = window.SemifReplayVerdict.view(obj); }
        catch (err) { showFileMessage("error", file.name + " passed its checks, but its verdict could not be computed: " + err.message); return; }
        localCount++;
        var entry = { slug: "local-" + localCount, label: obj.model.key + " · " + obj.model.backend + " · " + obj.model.dtype + " (" + file.name + ")",
          file: null, fileName: file.name, sha256: check.sha256Bytes(buf), bytes: buf.length, local: true, trace: obj, text: text, view: view,
          checks: checks, blobUrl: URL.createObjectURL(new Blob([buf], { type: "application/json" })) };
        entries.push(entry);
        pause();
        select(entries.length - 1, undefined, false);
        showFileMessage("info", "Opened " + file.name + " from your disk: schema and checksums OK; its verdict and numbers were computed here. It stays in this tab; to share it, share the file (a link cannot carry it).");
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
    D.afterFirstPaint().then(applyHash).then(function (restored) {
      writeHash();
      window.semifReplay = api;
      if (!restored && !reduceMotion) play();
    }, function () { window.semifReplay = api; });
  }
})();
