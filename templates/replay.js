/* The SemIf replay: both paths of one traced experiment on one clock, from the measured timestamps.
   Every string that comes from a trace is untrusted: it only ever reaches the page through textContent,
   setAttribute on inert attributes, or SVG text nodes; never as markup. */
(function () {
  "use strict";
  var SPEEDS = [4, 2, 1, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01];
  var MIN_FOLLOWABLE_S = 4;  // a replay shorter than this (in wall time) is slowed down by default

  var $ = function (id) { return document.getElementById(id); };
  var root = $("replay");
  var INDEX = JSON.parse($("semif-index").textContent);
  var SCHEMA = JSON.parse($("semif-schema").textContent);
  var reduceMotion = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

  // ---- state -------------------------------------------------------------------------------------------
  var entries = INDEX.map(function (m) {
    return { slug: m.slug, label: m.label, file: m.file, sha256: m.sha256, bytes: m.bytes, source: m.source, local: false,
             trace: null, text: null, checks: null };
  });
  var cur = null;         // {entry, trace, repeat, typed, gen, criteria, ...} for the selected trace and repeat
  var clock = 0, playing = false, lastNow = null, speed = 1, ended = false;
  var userSpeed = null;   // the speed a reader chose (kept when the trace changes); null: pick per trace
  var shownTokens = -1, dirtyAll = true;
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
  // a region that may scroll: reachable by keyboard (so it can be scrolled) and named for screen readers
  function scrollable(node, label) {
    node.tabIndex = 0; node.setAttribute("role", "region"); node.setAttribute("aria-label", label);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function fmtS(s) {
    if (s === null || s === undefined || !isFinite(s)) return "—";
    return s < 1 ? (s * 1000).toFixed(s < 0.01 ? 2 : 0) + " ms" : s.toFixed(2) + " s";
  }
  function fmtClock(s) { return s.toFixed(3) + " s"; }
  function fmtP(p) { return typeof p === "number" ? p.toFixed(2) : "—"; }
  // Python's JSON error for an unclosed string ends in "starting at", and the trace module appends
  // " at char N": say it once.
  function readableError(msg) { return String(msg).replace(/\bstarting at at char\b/g, "starting at character"); }
  function announce(msg) { $("live").textContent = msg; }
  function has(o, k) { return o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k); }

  // ---- loading and checking traces -----------------------------------------------------------------------
  function consistency(trace) {
    var problems = [];
    var runs = trace.runs.filter(function (r) { return !r.warmup; });
    var reps = function (p) { return runs.filter(function (r) { return r.path === p; }).map(function (r) { return r.repeat; }); };
    var g = reps("generated");
    if (!reps("typed").some(function (r) { return g.indexOf(r) >= 0; })) problems.push("no repeat has both a typed and a generated measured run");
    var ids = trace.inputs.criteria.map(function (c) { return c.id; });
    if (new Set(ids).size !== ids.length) problems.push("duplicate criterion ids in inputs.criteria");
    trace.runs.forEach(function (r, i) {
      (r.decisions || []).forEach(function (d) {
        if (ids.indexOf(d.criterion_id) < 0) problems.push("runs[" + i + "].decisions: unknown criterion_id " + JSON.stringify(d.criterion_id));
      });
    });
    return problems;
  }
  function checkTrace(obj, text) {
    var errs = window.SemifCheck.validate(SCHEMA, obj, 8);
    if (errs.length) return { ok: false, problems: errs, stage: "does not match the trace schema (semif-trace-v1)" };
    var cons = consistency(obj);
    if (cons.length) return { ok: false, problems: cons, stage: "cannot be replayed" };
    var sums = window.SemifCheck.verifyChecksums(text);
    if (sums.length) return { ok: false, problems: sums, stage: "fails its checksums (edited or damaged)" };
    return { ok: true, problems: [] };
  }
  function ensureLoaded(entry) {
    if (!entry.trace) {
      entry.text = $("trace-" + entry.slug).textContent;
      entry.trace = JSON.parse(entry.text);
    }
    if (!entry.checks) entry.checks = checkTrace(entry.trace, entry.text);
    return entry;
  }

  // ---- preparing one repeat for replay ------------------------------------------------------------------
  function repeatsOf(trace) {
    var runs = trace.runs.filter(function (r) { return !r.warmup; });
    var out = [];
    runs.forEach(function (r) {
      if (r.path !== "typed" || out.indexOf(r.repeat) >= 0) return;
      if (runs.some(function (g) { return g.path === "generated" && g.repeat === r.repeat; })) out.push(r.repeat);
    });
    return out.sort(function (a, b) { return a - b; });
  }
  function eventT(run, name) {
    var e = (run.events || []).filter(function (x) { return x.name === name; })[0];
    return e ? e.t : null;
  }
  function prepare(entry, repeat) {
    var trace = entry.trace;
    var runs = trace.runs.filter(function (r) { return !r.warmup && r.repeat === repeat; });
    var typed = runs.filter(function (r) { return r.path === "typed"; })[0];
    var gen = runs.filter(function (r) { return r.path === "generated"; })[0];
    var criteria = trace.inputs.criteria;
    var byId = {};
    typed.decisions.forEach(function (d) { byId[d.criterion_id] = d; });
    // Tokens in time order (a stable sort keeps the generation order for equal timestamps).
    var tokens = gen.tokens.map(function (t, k) { return { tok: t, k: k }; })
      .sort(function (a, b) { return a.tok.t - b.tok.t || a.k - b.k; }).map(function (x) { return x.tok; });
    var answerT = {};  // criterion index -> time its generated value started
    tokens.forEach(function (t) {
      if (t.answer_index !== null && t.answer_index !== undefined && !(t.answer_index in answerT)) answerT[t.answer_index] = t.t;
    });
    var tEnd = Math.max(typed.total_s, gen.total_s);
    typed.events.concat(gen.events).forEach(function (e) { tEnd = Math.max(tEnd, e.t); });
    tokens.forEach(function (t) { tEnd = Math.max(tEnd, t.t); });
    typed.decisions.forEach(function (d) { tEnd = Math.max(tEnd, d.t_available); });
    var decTimes = typed.decisions.map(function (d) { return d.t_available; });
    var passes = {};
    typed.decisions.forEach(function (d) { passes[d.pass] = true; });
    // Every time at which something visible changes, for "previous/next event" stepping.
    var marks = [0, tEnd].concat(decTimes, tokens.map(function (t) { return t.t; }),
      typed.events.map(function (e) { return e.t; }), gen.events.map(function (e) { return e.t; }));
    marks = Array.from(new Set(marks)).sort(function (a, b) { return a - b; });
    return {
      entry: entry, trace: trace, repeat: repeat, typed: typed, gen: gen, criteria: criteria, byId: byId,
      tokens: tokens, tokenT: tokens.map(function (t) { return t.t; }), answerT: answerT, tEnd: tEnd, marks: marks,
      firstDecision: Math.min.apply(null, decTimes), lastDecision: Math.max.apply(null, decTimes),
      passes: Object.keys(passes).length,
      ttft: gen.ttft_s, genDone: gen.total_s, typedDone: typed.total_s
    };
  }
  function countUpTo(sorted, t) {  // number of values ≤ t in an ascending array
    var lo = 0, hi = sorted.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (sorted[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  // ---- building the static parts of the view for the selected trace ------------------------------------
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
    reps.forEach(function (r) {
      var o = el("option", null, "#" + (r + 1) + " of " + reps.length + " (typed " + fmtS(runOf("typed", r).total_s) + ", generated " + fmtS(runOf("generated", r).total_s) + ")");
      o.value = String(r);
      sel.appendChild(o);
    });
    sel.value = String(cur.repeat);
    sel.disabled = reps.length < 2;
  }
  function runOf(path, rep) {
    return cur.trace.runs.filter(function (r) { return !r.warmup && r.path === path && r.repeat === rep; })[0];
  }
  function stat(dl, name, value, cls) {
    var d = el("div"); d.appendChild(el("dt", null, name)); d.appendChild(el("dd", cls || null, value)); dl.appendChild(d);
  }
  function buildSummary() {
    var s = cur.trace.summary, dl = $("summary");
    clear(dl);
    stat(dl, "typed (median)", fmtS(s.typed_median_s), "typed");
    stat(dl, "generated (median)", fmtS(s.generated_median_s), "gen");
    stat(dl, "ratio", s.wall_ratio === null ? "—" : s.wall_ratio.toFixed(2) + "×");
    stat(dl, "output tokens avoided", String(s.output_tokens_avoided));
    stat(dl, "first token (median)", fmtS(s.ttft_median_s));
    stat(dl, "agree / differ / missing", s.agreement.agree + " / " + s.agreement.disagree + " / " + s.agreement.missing);
    stat(dl, "valid arrays", s.generated_valid_runs + " / " + s.runs);
    if (s.labels) stat(dl, "match labels typed / gen.", s.labels.typed_correct + " / " + s.labels.generated_correct + " of " + s.labels.labelled);
    var notes = $("notes");
    clear(notes);
    (cur.trace.notes || []).forEach(function (n) { notes.appendChild(el("li", null, n)); });
    if (s.agreement.basis) notes.appendChild(el("li", null, "Agreement: " + s.agreement.basis));
    var m = cur.entry;
    var meta = $("trace-meta");
    clear(meta);
    meta.appendChild(document.createTextNode((cur.trace.experiment.title ? cur.trace.experiment.title + " · " : "") +
      cur.trace.experiment.id + " · " + (m.local ? "opened from your disk: " + m.fileName : "file " + m.file) + " · sha256 "));
    meta.appendChild(el("span", "hash", m.sha256 || "…"));
  }
  function buildCriteria() {
    var ol = $("criteria");
    clear(ol);
    var head = el("li", "crit head-row");
    head.setAttribute("aria-hidden", "true");
    head.appendChild(el("span", "cid", "id"));
    head.appendChild(el("span", "q", "criterion"));
    head.appendChild(el("span", "dec", "typed decision"));
    head.appendChild(el("span", "gv", "generated"));
    ol.appendChild(head);
    cur.rows = cur.criteria.map(function (c, k) {
      var li = el("li", "crit");
      li.setAttribute("data-id", c.id);
      li.appendChild(el("span", "cid", c.id));
      var q = el("span", "q", c.question);
      q.title = c.question + (c.label ? " (label: " + c.label + ")" : "");
      li.appendChild(q);
      var dec = el("span", "dec");
      li.appendChild(dec);
      var gv = el("span", "gv");
      li.appendChild(gv);
      ol.appendChild(li);
      return { li: li, dec: dec, gv: gv, c: c, k: k, shown: null, gshown: null };
    });
  }
  function renderDecision(row, d) {
    clear(row.dec);
    var bar = el("span", "bar");
    var title = [];
    var pmax = Math.max.apply(null, d.probabilities);
    d.option_ids.forEach(function (id, i) {
      // the chosen option's share is drawn strong, in option order, so "yes" sits left and "no" right
      var tied = d.tie && d.tied_option_ids.indexOf(id) >= 0;
      var seg = el("span", "seg" + (tied ? " tie" : !d.tie && id === d.choice ? " on" : ""));
      seg.style.width = reduceMotion || !playing ? (100 * d.probabilities[i]).toFixed(2) + "%" : "0%";
      bar.appendChild(seg);
      title.push(id + " " + d.probabilities[i].toFixed(3));
    });
    bar.title = title.join(" · ") + " · margin " + d.margin.toFixed(3) + " · allowed mass " + d.allowed_token_mass.toFixed(3);
    bar.setAttribute("role", "img");
    bar.setAttribute("aria-label", title.join(", "));
    row.dec.appendChild(bar);
    var ch = el("span", "choice" + (d.tie ? " tie" : ""), d.tie || d.choice === null ? "tie " + fmtP(pmax) : d.choice + " " + fmtP(pmax));
    ch.title = "choice " + (d.choice === null ? "none (tie)" : d.choice) + " · p " + pmax.toFixed(3) + " · margin " + d.margin.toFixed(3);
    row.dec.appendChild(ch);
    if (!reduceMotion && playing) {
      var segs = bar.childNodes;
      requestAnimationFrame(function () {
        d.option_ids.forEach(function (_, i) { segs[i].style.width = (100 * d.probabilities[i]).toFixed(2) + "%"; });
      });
      row.li.classList.remove("fresh"); void row.li.offsetWidth; row.li.classList.add("fresh");
    }
  }
  function renderWaiting(row) {
    clear(row.dec);
    row.dec.appendChild(el("span", "wait", "waiting…"));
    row.li.classList.remove("fresh");
  }
  function generatedValue(k) {
    var gen = cur.gen;
    var v = gen.parsed ? gen.parsed[k] : undefined;
    var agree = gen.agreement ? gen.agreement[k] : null;
    return { value: v === undefined ? null : v, agree: agree === undefined ? null : agree };
  }

  // ---- the frame: everything that depends on the clock ----------------------------------------------------
  function render() {
    if (!cur) return;
    var t = clock;
    $("clock").textContent = "";
    $("clock").appendChild(document.createTextNode(fmtClock(t) + " "));
    $("clock").appendChild(el("span", "of", "/ " + fmtClock(cur.tEnd)));
    var scr = $("scrubber");
    if (document.activeElement !== scr || playing) scr.value = String(t);
    scr.setAttribute("aria-valuetext", fmtClock(t) + " of " + fmtClock(cur.tEnd));
    $("play").textContent = playing ? "Pause" : (ended ? "Replay" : "Play");
    $("play").setAttribute("aria-pressed", playing ? "true" : "false");

    // typed path
    var typed = cur.typed, shownDec = 0;
    cur.rows.forEach(function (row) {
      var d = cur.byId[row.c.id];
      var on = !!d && d.t_available <= t;
      if (on) shownDec++;
      if (dirtyAll || row.shown !== on) {
        if (on) renderDecision(row, d); else if (d) renderWaiting(row); else { clear(row.dec); row.dec.appendChild(el("span", "wait", "no decision in this run")); }
        row.shown = on;
      }
    });
    $("typed-watch").textContent = fmtClock(Math.min(t, cur.typedDone));
    var ts = $("typed-status");
    var N = cur.criteria.length;
    var tk = typed.tokens;
    if (shownDec === N || (shownDec > 0 && t >= cur.lastDecision)) {
      ts.textContent = shownDec + " of " + N + " decisions, available at " + fmtS(cur.firstDecision) +
        (cur.passes > 1 ? " to " + fmtS(cur.lastDecision) + " (" + cur.passes + " passes)" : " (one pass)") +
        " · no output tokens";
      ts.className = "status done";
    } else if (shownDec > 0) {
      ts.textContent = shownDec + " of " + N + " decisions so far (pass by pass)…"; ts.className = "status";
    } else if (eventT(typed, "prefill_done") !== null && t >= eventT(typed, "prefill_done")) {
      ts.textContent = "scoring " + N + " criteria: " + tk.suffix + " suffix tokens in " + tk.passes + " pass" + (tk.passes === 1 ? "" : "es") + "… no decision yet"; ts.className = "status";
    } else if (eventT(typed, "encoded") !== null && t >= eventT(typed, "encoded")) {
      ts.textContent = "prefilling the shared state (" + tk.prefix + " tokens)… no decision yet"; ts.className = "status";
    } else {
      ts.textContent = "rendering and encoding the prompts…"; ts.className = "status";
    }

    // generated path
    var n = countUpTo(cur.tokenT, t);
    var box = $("gen-text");
    if (dirtyAll || n < shownTokens) { clear(box); shownTokens = 0; }
    for (var i = shownTokens; i < n; i++) {
      var tok = cur.tokens[i];
      var span = el("span", "tok" + (tok.answer_index !== null ? " ans" : "") + (tok.stop ? " stop" : ""), tok.stop ? "end of turn" : tok.text);
      span.title = (tok.stop ? "stop token " + JSON.stringify(tok.text) + " (not part of the answer) · " : "") +
        "token " + tok.i + " · id " + tok.id + " · at " + tok.t.toFixed(4) + " s · p " + tok.p.toFixed(3) +
        (tok.yes_no ? " · yes " + tok.yes_no.yes.toFixed(3) + " / no " + tok.yes_no.no.toFixed(3) : "");
      box.appendChild(span);
    }
    shownTokens = n;
    var cursorNode = box.querySelector(".cursor");
    var genDone = t >= cur.genDone;
    if (!genDone && n > 0 && !cursorNode) box.appendChild(el("span", "cursor"));
    if (cursorNode && (genDone || n === 0)) cursorNode.remove();
    else if (cursorNode && cursorNode !== box.lastChild) box.appendChild(cursorNode);
    $("gen-watch").textContent = fmtClock(Math.min(t, cur.genDone));
    var ttftMark = $("ttft-mark");
    ttftMark.hidden = t < cur.ttft;
    ttftMark.textContent = "first token at " + fmtS(cur.ttft);
    var gs = $("gen-status"), gen = cur.gen;
    if (genDone) {
      gs.textContent = "done at " + fmtS(cur.genDone) + ": " + gen.output_tokens + " output tokens (" + gen.decode_steps + " decode steps), stopped by " + gen.stop_reason.replace(/_/g, " ");
      gs.className = "status done";
    } else if (n > 0) {
      gs.textContent = "writing: " + n + " token" + (n === 1 ? "" : "s") + " so far…"; gs.className = "status";
    } else if (eventT(gen, "encoded") !== null && t >= eventT(gen, "encoded")) {
      gs.textContent = "prefilling the prompt (" + cur.trace.prompts.generated.input_tokens + " tokens)… waiting for the first token"; gs.className = "status";
    } else {
      gs.textContent = "rendering and encoding the prompt…"; gs.className = "status";
    }
    var verdict = $("gen-verdict");
    if (!genDone) {
      verdict.className = "verdict wait"; verdict.textContent = "array not finished yet";
    } else if (gen.valid && gen.complete) {
      verdict.className = "verdict ok"; verdict.textContent = "valid, complete array: " + gen.parsed.length + " values for " + N + " criteria";
    } else {
      verdict.className = "verdict bad";
      verdict.textContent = (gen.valid ? "incomplete array" : "invalid array") + (gen.error ? ": " + readableError(gen.error) : "") +
        (gen.parsed ? " (" + gen.parsed.length + " values for " + N + " criteria)" : " (no values can be read from it)");
    }

    // the generated value per criterion, when its token arrived (or "missing" once the array is finished)
    var answered = 0;
    cur.rows.forEach(function (row) {
      var k = row.k, g = generatedValue(k);
      var at = cur.answerT[k];
      var arrived = g.value !== null && (at !== undefined ? at <= t : genDone);
      var state;
      // An invalid or incomplete array cannot be matched to the criteria: once it is finished, no value counts.
      if (genDone && !gen.complete) state = "unusable";
      else if (arrived) state = g.agree === false ? "disagree" : (g.agree === true ? "agree" : "value");
      else if (genDone) state = "missing";
      else state = "pending";
      if (arrived) answered++;
      var key = state + (arrived ? "+" : "");
      if (!dirtyAll && row.gshown === key) return;
      row.gshown = key;
      row.li.classList.toggle("disagree", state === "disagree");
      row.li.classList.toggle("missing", state === "missing" || state === "unusable");
      row.gv.className = "gv " + (state === "unusable" ? "missing" : state === "value" ? "" : state);
      if (state === "pending") row.gv.textContent = "…";
      else if (state === "missing") row.gv.textContent = "missing";
      else if (state === "unusable") row.gv.textContent = arrived ? g.value + " ?" : "missing";
      else row.gv.textContent = g.value + (state === "agree" ? " ✓" : state === "disagree" ? " ✗" : "");
      row.gv.title = state === "disagree" ? "the generated array says " + g.value + ", the typed choice differs" :
        state === "agree" ? "the generated array agrees with the typed choice" :
        state === "unusable" ? "the generated array is " + (gen.valid ? "incomplete" : "invalid") + ", so its values cannot be matched to the criteria" :
        state === "missing" ? "the generated array has no value for this criterion" : "";
    });

    // milestones for screen readers, only when crossed while playing
    if (playing) {
      var prev = root.getAttribute("data-milestones") || "";
      var ms = (shownDec > 0 ? "d" : "") + (n > 0 ? "f" : "") + (genDone ? "g" : "");
      if (ms !== prev) {
        if (ms.indexOf("d") >= 0 && prev.indexOf("d") < 0) announce(shownDec + " typed decisions available at " + fmtS(cur.firstDecision));
        else if (ms.indexOf("f") >= 0 && prev.indexOf("f") < 0) announce("first generated token at " + fmtS(cur.ttft));
        else if (ms.indexOf("g") >= 0 && prev.indexOf("g") < 0) announce("generated answer finished at " + fmtS(cur.genDone));
        root.setAttribute("data-milestones", ms);
      }
    }
    updatePlayhead();
    dirtyAll = false;
    root.setAttribute("data-state", playing ? "playing" : (ended ? "ended" : "paused"));
    root.setAttribute("data-t", String(t));
    root.setAttribute("data-tokens-shown", String(n));
    root.setAttribute("data-decisions-shown", String(shownDec));
    root.setAttribute("data-answers-shown", String(answered));
    root.setAttribute("data-trace", cur.entry.local ? "" : cur.entry.slug);
    root.setAttribute("data-repeat", String(cur.repeat));
  }

  // ---- the timeline chart (drawn for the selected run; only the playhead moves) ---------------------------
  var tl = null;
  function drawTimeline() {
    var host = $("timeline");
    clear(host);
    var W = Math.max(300, Math.round(host.clientWidth || 800));
    var narrow = W < 560;
    var L = narrow ? 62 : 88, R = 14, top = 8, laneH = 22;
    var yT = top + 6, yG = yT + laneH + 16, yC = yG + laneH + 26, cH = narrow ? 90 : 110, yAxis = yC + cH + 4;
    var H = yAxis + 26;
    var tEnd = cur.tEnd || 1;
    var x = function (t) { return L + (W - L - R) * (t / tEnd); };
    var typed = cur.typed, gen = cur.gen, N = cur.criteria.length;
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img" });
    svg.setAttribute("aria-label", "Timeline: typed decisions at " + fmtS(cur.firstDecision) + "; generated first token at " +
      fmtS(cur.ttft) + ", finished at " + fmtS(cur.genDone));
    // x grid and axis
    var step = niceStep(tEnd / (narrow ? 4 : 8));
    var axis = svgEl("g", { "class": "axis" });
    for (var s = 0; s <= tEnd + 1e-12; s += step) {
      axis.appendChild(svgEl("line", { x1: x(s), x2: x(s), y1: yT - 4, y2: yAxis, "class": "grid" }));
      axis.appendChild(svgEl("text", { x: x(s), y: yAxis + 14, "text-anchor": "middle" }, fmtTick(s, step)));
    }
    axis.appendChild(svgEl("text", { x: W - R, y: yAxis + 14, "text-anchor": "end" }, "s"));
    svg.appendChild(axis);
    // lanes
    svg.appendChild(svgEl("text", { x: 0, y: yT + 15 }, "typed"));
    svg.appendChild(svgEl("text", { x: 0, y: yG + 15 }, "generated"));
    var tEnc = eventT(typed, "encoded") || 0, tPre = eventT(typed, "prefill_done") || tEnc, tSuf = eventT(typed, "suffix_done") || cur.typedDone;
    var labels = [];  // phase labels, drawn last so the ticks do not cover them
    lane(svg, x, yT, laneH, [[0, tEnc, "ph-typed", "encode"], [tEnc, tPre, "ph-typed", "prefill state"], [tPre, tSuf, "ph-typed-main", "score criteria"]], labels);
    var seenT = {};
    typed.decisions.forEach(function (d) {
      if (seenT[d.t_available]) return;
      seenT[d.t_available] = true;
      var cx = x(d.t_available), cy = yT + laneH / 2;
      var n = typed.decisions.filter(function (o) { return o.t_available === d.t_available; }).length;
      var dm = svgEl("path", { d: "M" + cx + " " + (cy - 7) + " l7 7 l-7 7 l-7 -7 z", "class": "tick-typed" });
      dm.appendChild(svgEl("title", {}, n + " decision" + (n === 1 ? "" : "s") + " available at " + fmtS(d.t_available)));
      svg.appendChild(dm);
    });
    var gEnc = eventT(gen, "encoded") || 0;
    lane(svg, x, yG, laneH, [[0, gEnc, "ph-gen", "encode"], [gEnc, cur.ttft, "ph-gen", "prefill"], [cur.ttft, cur.genDone, "ph-gen-main", "decode"]], labels);
    cur.tokens.forEach(function (tok) {
      svg.appendChild(svgEl("line", { x1: x(tok.t), x2: x(tok.t), y1: yG + 3, y2: yG + laneH - 3, "class": "tick-gen" }));
    });
    labels.forEach(function (l) { svg.appendChild(l); });
    // cumulative answers
    var yv = function (k) { return yC + cH - cH * (k / Math.max(N, 1)); };
    svg.appendChild(svgEl("text", { x: 0, y: yC + 12, "class": "lane-note" }, "answers"));
    svg.appendChild(svgEl("text", { x: 0, y: yC + 26, "class": "lane-note" }, "of " + N));
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: yv(N), y2: yv(N), "class": "grid" }));
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: yv(0), y2: yv(0), "class": "grid" }));
    var typedTimes = typed.decisions.map(function (d) { return d.t_available; });
    var genTimes = [];
    cur.rows.forEach(function (row) {
      var g = generatedValue(row.k);
      if (g.value === null) return;
      genTimes.push(cur.answerT[row.k] !== undefined ? cur.answerT[row.k] : cur.genDone);
    });
    svg.appendChild(svgEl("path", { d: stepPath(typedTimes, x, yv, tEnd), "class": "step-typed" }));
    svg.appendChild(svgEl("path", { d: stepPath(genTimes, x, yv, tEnd), "class": "step-gen" }));
    if (typedTimes.length) {
      var lastTyped = Math.max.apply(null, typedTimes);
      var right = x(lastTyped) > W - R - 150;
      svg.appendChild(svgEl("text", { x: right ? x(lastTyped) - 4 : x(lastTyped) + 4, y: yv(typedTimes.length) - 5,
        "text-anchor": right ? "end" : "start", "class": "lane-note" }, "typed: " + typedTimes.length + " by " + fmtS(lastTyped)));
    }
    svg.appendChild(svgEl("text", { x: W - R - 2, y: Math.min(yv(genTimes.length) + 14, yv(0) - 3), "text-anchor": "end", "class": "lane-note" },
      "generated: " + genTimes.length + (genTimes.length ? " by " + fmtS(Math.max.apply(null, genTimes)) : "")));
    // the not-yet-replayed part is veiled; the playhead marks now
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
      if (w > p[3].length * 7 + 10) labels.push(svgEl("text", { x: x(p[0]) + 5, y: y + h / 2 + 4, "class": "phase-label" + (/-main$/.test(p[2]) && p[2].indexOf("typed") >= 0 ? " on-dark" : "") }, p[3]));
    });
  }
  function stepPath(times, x, yv, tEnd) {
    var ts = times.slice().sort(function (a, b) { return a - b; });
    var d = "M" + x(0) + " " + yv(0), k = 0;
    ts.forEach(function (t) { d += " H" + x(t); k++; d += " V" + yv(k); });
    return d + " H" + x(tEnd);
  }
  function niceStep(raw) {
    var p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  function fmtTick(s, step) { var dec = Math.max(0, -Math.floor(Math.log10(step) + 1e-9)); return s.toFixed(dec); }
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
    var t = (px - tl.L) / (tl.W - tl.L - tl.R) * tl.tEnd;
    pause();
    seek(Math.max(0, Math.min(tl.tEnd, t)));
  }

  // ---- run details (for auditing) ------------------------------------------------------------------------
  function kvTable(obj, skip) {
    var table = el("table", "kv"), tb = el("tbody");
    Object.keys(obj || {}).forEach(function (k) {
      if (skip && skip.indexOf(k) >= 0) return;
      var v = obj[k], tr = el("tr");
      var thk = el("th", null, k);
      thk.setAttribute("scope", "row");
      tr.appendChild(thk);
      var td = el("td");
      fillValue(td, v);
      tr.appendChild(td); tb.appendChild(tr);
    });
    table.appendChild(tb);
    return table;
  }
  function fillValue(td, v) {
    if (v === null || v === undefined) { td.textContent = "—"; return; }
    if (typeof v === "string") {
      if (/^[0-9a-f]{64}$/.test(v)) { td.className = "hash"; td.textContent = v; }
      else if (v.indexOf("\n") >= 0 || v.length > 160) { var d = el("details"); d.appendChild(el("summary", null, v.length + " characters")); d.appendChild(scrollable(el("pre", "state-text", v), v.length + " characters")); td.appendChild(d); }
      else td.textContent = v;
      return;
    }
    if (typeof v !== "object") { td.textContent = String(v); return; }
    if (Array.isArray(v) && !v.length) { td.textContent = "none"; return; }
    if (Array.isArray(v) && v.every(function (x) { return x === null || typeof x !== "object"; })) {
      var txt = v.map(function (x) { return x === null ? "null" : String(x); }).join(", ");
      if (v.length > 8) { var dd = el("details"); dd.appendChild(el("summary", null, v.length + " values")); dd.appendChild(el("pre", "hash", txt)); td.appendChild(dd); }
      else td.textContent = txt;
      return;
    }
    var keys = Array.isArray(v) ? null : Object.keys(v);
    if (keys && keys.length <= 12 && keys.every(function (k) { return v[k] === null || typeof v[k] !== "object"; })) {
      td.appendChild(kvTable(v));
      return;
    }
    var det = el("details");
    var count = keys ? keys.length : v.length;
    det.appendChild(el("summary", null, count + (keys ? (count === 1 ? " field" : " fields") : (count === 1 ? " item" : " items"))));
    det.appendChild(scrollable(el("pre", "state-text", JSON.stringify(v, null, 1)), "value as JSON"));
    td.appendChild(det);
  }
  function card(title, nodes) {
    var c = el("div", "card");
    c.appendChild(el("h3", null, title));
    nodes.forEach(function (n) { if (n) c.appendChild(n); });
    return c;
  }
  function list(items) { var ul = el("ul"); items.forEach(function (s) { ul.appendChild(el("li", null, s)); }); return ul; }
  function buildDetails() {
    var host = $("details"), tr = cur.trace, e = cur.entry;
    clear(host);
    var file = { file: e.local ? e.fileName : e.file, bytes: e.bytes, sha256: e.sha256 || "…" };
    if (!e.local) file.source = e.source;
    var verified = el("p", "small");
    verified.textContent = e.checks && e.checks.ok ? "Schema and checksums checked in this browser: OK." :
      "Checked in this browser: " + (e.checks ? e.checks.problems.join("; ") : "not yet");
    host.appendChild(card("File and checksums", [kvTable(file), kvTable(tr.checksums), verified]));
    host.appendChild(card("Model", [kvTable(tr.model)]));
    host.appendChild(card("Machine and versions", [kvTable(tr.machine), el("h3", null, "versions"), kvTable(tr.versions)]));
    host.appendChild(card("Experiment and protocol", [kvTable(tr.experiment), el("h3", null, "protocol"), kvTable(tr.protocol),
      tr.checks && tr.checks.typed_vs_direct ? el("h3", null, "typed vs direct (untimed check)") : null,
      tr.checks && tr.checks.typed_vs_direct ? kvTable(tr.checks.typed_vs_direct) : null]));
    var pt = tr.prompts.typed, pg = tr.prompts.generated;
    var perCrit = el("table"), th = el("thead"), hr = el("tr");
    ["criterion", "suffix tokens", "input tokens", "prompt sha256", "tokens sha256"].forEach(function (h) { var c = el("th", null, h); c.setAttribute("scope", "col"); hr.appendChild(c); });
    th.appendChild(hr); perCrit.appendChild(th);
    var tb = el("tbody");
    tr.inputs.criteria.forEach(function (c, i) {
      var row = el("tr");
      [c.id, pt.suffix_tokens[i], pt.input_tokens[i], pt.prompt_sha256[i], pt.tokens_sha256[i]].forEach(function (v, j) {
        var td = el("td", j >= 3 ? "hash" : null, v === undefined ? "—" : v); row.appendChild(td);
      });
      tb.appendChild(row);
    });
    perCrit.appendChild(tb);
    var pcWrap = el("details"); pcWrap.appendChild(el("summary", null, "per-criterion prompts and hashes"));
    var sc = scrollable(el("div", "table-scroll"), "per-criterion prompts and hashes"); sc.appendChild(perCrit); pcWrap.appendChild(sc);
    var suffixes = el("details"); suffixes.appendChild(el("summary", null, "suffix texts"));
    suffixes.appendChild(scrollable(el("pre", "state-text", (pt.suffix_texts || []).map(function (s, i) { return "[" + (tr.inputs.criteria[i] || {}).id + "] " + s; }).join("\n")), "suffix texts"));
    host.appendChild(card("Typed prompt", [kvTable(pt, ["suffix_tokens", "suffix_texts", "input_tokens", "prompt_sha256", "tokens_sha256"]), pcWrap, suffixes]));
    host.appendChild(card("Generated prompt", [kvTable(pg)]));
    host.appendChild(card("What differs between the two paths", [list(tr.differences || [])]));
    var inp = tr.inputs;
    var crit = el("table"), ch = el("thead"), chr = el("tr");
    ["id", "question", "label"].forEach(function (h) { var c = el("th", null, h); c.setAttribute("scope", "col"); chr.appendChild(c); });
    ch.appendChild(chr); crit.appendChild(ch);
    var cb = el("tbody");
    inp.criteria.forEach(function (c) { var r = el("tr"); [c.id, c.question, c.label || "—"].forEach(function (v) { r.appendChild(el("td", null, v)); }); cb.appendChild(r); });
    crit.appendChild(cb);
    var st = scrollable(el("pre", "state-text", typeof inp.state === "string" ? inp.state : JSON.stringify(inp.state, null, 2)), "state");
    host.appendChild(card("Inputs", [kvTable(inp.title === undefined ? { id: inp.id, sha256: inp.sha256 } : { id: inp.id, title: inp.title, sha256: inp.sha256 }), el("h3", null, "state"), st,
      el("h3", null, "criteria"), (function () { var w = scrollable(el("div", "table-scroll"), "criteria"); w.appendChild(crit); return w; })()]));
    var rt = cur.typed, rg = cur.gen;
    host.appendChild(card("This repeat (#" + (cur.repeat + 1) + ")", [
      el("h3", null, "typed run"), kvTable({ start_s: rt.start_s, total_s: rt.total_s, events: rt.events.map(function (x) { return x.name + " " + x.t.toFixed(4); }), tokens: rt.tokens }),
      el("h3", null, "generated run"), kvTable({ start_s: rg.start_s, ttft_s: rg.ttft_s, total_s: rg.total_s,
        events: rg.events.map(function (x) { return x.name + " " + x.t.toFixed(4); }), output_tokens: rg.output_tokens, decode_steps: rg.decode_steps,
        stop_reason: rg.stop_reason, valid: rg.valid, complete: rg.complete, error: rg.error, text: rg.text })]));
    host.appendChild(card("Summary (all repeats)", [kvTable(tr.summary)]));
  }

  // ---- selecting, playing, seeking ----------------------------------------------------------------------
  function select(index, repeat, keepTime) {
    var entry = ensureLoaded(entries[index]);
    var reps = repeatsOf(entry.trace);
    var rep = reps.indexOf(repeat) >= 0 ? repeat : reps[0];
    var t = keepTime ? clock : 0;
    cur = prepare(entry, rep);
    ["play", "restart", "scrubber", "speed", "share"].forEach(function (id) { $(id).disabled = false; });
    buildPicker(); buildRepeatPicker(); buildSummary(); buildCriteria(); buildDetails();
    var dl = $("download");
    if (entry.local) { dl.href = entry.blobUrl; dl.setAttribute("download", entry.fileName); }
    else { dl.href = "../traces/" + entry.file; dl.setAttribute("download", entry.file); }
    var scr = $("scrubber");
    scr.max = String(cur.tEnd);
    chooseSpeed(false);
    dirtyAll = true; shownTokens = 0;
    clock = Math.max(0, Math.min(t, cur.tEnd));
    ended = clock >= cur.tEnd;
    drawTimeline();
    render();
  }
  function chooseSpeed(userChoice) {
    var sel = $("speed");
    if (userSpeed !== null) speed = userSpeed;
    else if (!userChoice) {
      // real time, unless the run is too short to follow: then the gentlest slow-down that makes it followable
      speed = 1;
      if (cur.tEnd < MIN_FOLLOWABLE_S / 2) {
        for (var i = 0; i < SPEEDS.length; i++) { if (SPEEDS[i] <= 1 && cur.tEnd / SPEEDS[i] >= MIN_FOLLOWABLE_S) { speed = SPEEDS[i]; break; } }
        if (cur.tEnd / speed < MIN_FOLLOWABLE_S) speed = SPEEDS[SPEEDS.length - 1];
      }
    }
    sel.value = String(speed);
  }
  function setSpeed(s) {  // a reader's choice: kept until they choose again
    speed = userSpeed = s; $("speed").value = String(s); lastNow = null;
  }
  function frame(now) {
    if (!playing) return;
    if (lastNow !== null) clock += (now - lastNow) / 1000 * speed;
    lastNow = now;
    if (clock >= cur.tEnd) { clock = cur.tEnd; playing = false; ended = true; lastNow = null; writeHash(); }
    render();
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
    var m = cur.marks, t = clock;
    if (dir > 0) { for (var i = 0; i < m.length; i++) if (m[i] > t) return seek(m[i]); return seek(cur.tEnd); }
    for (var j = m.length - 1; j >= 0; j--) if (m[j] < t) return seek(m[j]);
    return seek(0);
  }

  // ---- share link (URL hash: trace, repeat, time, speed) --------------------------------------------------
  function hashFor() {
    if (!cur || cur.entry.local) return "";
    return "trace=" + encodeURIComponent(cur.entry.slug) + "&r=" + cur.repeat + "&t=" + String(clock) + "&speed=" + String(speed);
  }
  function shareUrl() {
    var base = location.href.split("#")[0];
    return cur && cur.entry.local ? base : base + "#" + hashFor();
  }
  function writeHash() {
    var shareBox = $("share-url");
    shareBox.value = shareUrl();
    if (!cur) return;
    var h = hashFor();
    if (h === lastHash) return;
    lastHash = h;
    // a trace opened from disk cannot be named in a link: the address then names none
    try { history.replaceState(null, "", h ? "#" + h : location.pathname + location.search); } catch (err) { /* some file:// setups refuse; the box above still has the link */ }
  }
  function readHash() {
    var h = location.hash.replace(/^#/, "");
    var out = {};
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) { try { out[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1)); } catch (err) { /* ignore a malformed part */ } }
    });
    return out;
  }
  function applyHash() {  // true when the link set a time (the replay then waits there, paused)
    var h = readHash();
    var idx = 0;
    var msg = $("file-msg");
    if (h.trace !== undefined) {
      var found = entries.findIndex(function (e) { return !e.local && e.slug === h.trace; });
      if (found >= 0) idx = found;
      else { msg.hidden = false; msg.className = "msg error"; msg.textContent = "This link names a trace that is not in this build: " + h.trace; }
    }
    var rep = h.r !== undefined ? parseInt(h.r, 10) : undefined;
    if (!entries.length) return false;
    select(idx, rep, false);
    if (h.speed !== undefined && SPEEDS.indexOf(Number(h.speed)) >= 0) setSpeed(Number(h.speed));
    if (h.t !== undefined && h.t !== "" && isFinite(Number(h.t))) { playing = false; seek(Number(h.t)); return true; }
    return false;
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
      var checks;
      try { checks = checkTrace(obj, text); }
      catch (err) { showFileMessage("error", file.name + " could not be checked: " + err.message); return; }
      if (!checks.ok) { showFileMessage("error", file.name + " was not opened: it " + checks.stage + ".", checks.problems); return; }
      localCount++;
      var entry = { slug: "local-" + localCount, label: obj.model.key + " · " + obj.model.backend + " · " + obj.model.dtype + " · " +
        (obj.machine.gpu || obj.machine.cpu || "unknown machine") + " (" + file.name + ")", file: null, fileName: file.name,
        sha256: window.SemifCheck.sha256Bytes(buf), bytes: buf.length, local: true, trace: obj, text: text, checks: checks,
        blobUrl: URL.createObjectURL(new Blob([buf], { type: "application/json" })) };
      entries.push(entry);
      pause();
      select(entries.length - 1, undefined, false);
      showFileMessage("info", "Opened " + file.name + " from your disk: schema and checksums OK. It stays in this tab; to share it, share the file (a link cannot carry it).");
      writeHash();
      if (!reduceMotion) play();
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
    $("trace-select").addEventListener("change", function (ev) { pause(); $("file-msg").hidden = true; select(Number(ev.target.value), undefined, false); writeHash(); if (!reduceMotion) play(); });
    $("repeat-select").addEventListener("change", function (ev) { pause(); select(entries.indexOf(cur.entry), Number(ev.target.value), false); writeHash(); });
    $("share").addEventListener("click", function () {
      pause(); writeHash();
      var box = $("share-url"); box.value = shareUrl(); box.focus(); box.select();
      var done = function (ok) { $("share").textContent = ok ? "Link copied" : "Copy the selected link"; setTimeout(function () { $("share").textContent = "Copy link to this moment"; }, 2500); };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(box.value).then(function () { done(true); }, function () { done(false); });
      else done(false);
    });
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
      applyHash(); writeHash();
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
  setupControls();
  setupFileInputs();
  SPEEDS.forEach(function (s) {
    var o = el("option", null, s === 1 ? "real time" : s > 1 ? s + "× faster" : Math.round(1 / s) + "× slower");
    o.value = String(s);
    $("speed").appendChild(o);
  });
  if (!entries.length) {
    root.setAttribute("data-state", "empty");
    showFileMessage("info", "No traces are built into this page. Open a trace file (or drop one here) to replay it.");
    ["play", "restart", "scrubber", "speed", "share", "trace-select", "repeat-select"].forEach(function (id) { $(id).disabled = true; });
  } else {
    var restored = applyHash();
    writeHash();
    if (!restored && !reduceMotion) play();
  }

  // A small, stable hook for tests and for anyone scripting the page.
  window.semifReplay = {
    seek: function (t) { pause(); seek(t); return this.state(); },
    play: play,
    pause: pause,
    setSpeed: function (s) { setSpeed(s); },
    select: function (slug, repeat) {
      var i = entries.findIndex(function (e) { return e.slug === slug; });
      if (i < 0) throw new Error("no trace " + slug);
      pause(); select(i, repeat, false); writeHash();
    },
    traces: function () { return entries.map(function (e) { return e.slug; }); },
    tokenTimes: function () { return cur ? cur.tokenT.slice() : []; },
    decisionTimes: function () { return cur ? cur.typed.decisions.map(function (d) { return d.t_available; }) : []; },
    shareUrl: function () { return shareUrl(); },
    state: function () {
      return cur ? { trace: cur.entry.slug, local: cur.entry.local, repeat: cur.repeat, t: clock, tEnd: cur.tEnd, speed: speed, playing: playing, ended: ended,
        tokensShown: Number(root.getAttribute("data-tokens-shown")), tokensTotal: cur.tokens.length,
        decisionsShown: Number(root.getAttribute("data-decisions-shown")), decisionsTotal: cur.typed.decisions.length,
        answersShown: Number(root.getAttribute("data-answers-shown")), checks: cur.entry.checks } : null;
    }
  };
})();
