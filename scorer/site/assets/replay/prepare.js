/* A trace prepared for the replay: its lanes, the repeats it can replay, the checks beyond its schema, one
   repeat laid out on one clock (tokens in time order, when each answer starts, the marks at which something
   visible changes, when it ends), and what each lane shows for a criterion at time t.
   Pure functions of the trace (no page), unit-tested in Node (tests/js/prepare.test.js).
   In the page: window.SemifReplayPrepare; in Node: require("…/prepare.js"). */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifReplayPrepare = api;
})(this, function () {
  "use strict";

  function laneDefs(trace) {  // [key, runs[].path, name] of each lane, typed first
    if (trace.format === "semif-trace-v1") return [["typed", "typed", "Typed decisions"], ["free", "generated", "Free generation"]];
    return [["typed", "typed", "Typed decisions"], ["free", "free", "Free generation"], ["constrained", "constrained", "Constrained generation"]];
  }
  function repeatsOf(trace) {  // repeats with a measured run of every lane
    var runs = trace.runs.filter(function (r) { return !r.warmup; });
    var paths = laneDefs(trace).map(function (d) { return d[1]; });
    var out = [];
    runs.forEach(function (r) {
      if (out.indexOf(r.repeat) >= 0) return;
      if (paths.every(function (p) { return runs.some(function (x) { return x.path === p && x.repeat === r.repeat; }); })) out.push(r.repeat);
    });
    return out.sort(function (a, b) { return a - b; });
  }
  // What the replay relies on beyond the schema (build.py checks the same for built-in traces).
  function consistency(trace) {
    var problems = [];
    if (!repeatsOf(trace).length) problems.push("no repeat has a measured run of every path");
    var ids = trace.inputs.criteria.map(function (c) { return c.id; });
    if (new Set(ids).size !== ids.length) problems.push("duplicate criterion ids in inputs.criteria");
    trace.runs.forEach(function (r, i) {
      (r.decisions || []).forEach(function (d) {
        if (ids.indexOf(d.criterion_id) < 0) problems.push("runs[" + i + "].decisions: unknown criterion_id " + JSON.stringify(d.criterion_id));
      });
    });
    return problems;
  }
  function eventT(run, name) {  // the time of a run's named event, or null
    var e = (run.events || []).filter(function (x) { return x.name === name; })[0];
    return e ? e.t : null;
  }
  // One repeat of a loaded entry ({trace, …}), laid out for replay. The returned lanes carry view fields
  // (shown, sel, dom) that the page fills in.
  function prepare(entry, repeat) {
    var trace = entry.trace;
    var runs = trace.runs.filter(function (r) { return !r.warmup && r.repeat === repeat; });
    var runOf = function (path) { return runs.filter(function (r) { return r.path === path; })[0]; };
    var typed = runOf("typed");
    var criteria = trace.inputs.criteria;
    var byId = {};
    typed.decisions.forEach(function (d) { byId[d.criterion_id] = d; });
    var tEnd = typed.total_s;
    typed.events.forEach(function (e) { tEnd = Math.max(tEnd, e.t); });
    typed.decisions.forEach(function (d) { tEnd = Math.max(tEnd, d.t_available); });
    var decTimes = typed.decisions.map(function (d) { return d.t_available; });
    var marks = [0].concat(decTimes, typed.events.map(function (e) { return e.t; }));
    var gens = laneDefs(trace).slice(1).map(function (def) {
      var run = runOf(def[1]);
      // tokens in time order (a stable sort keeps the generation order for equal timestamps)
      var tokens = run.tokens.map(function (t, k) { return { tok: t, k: k }; })
        .sort(function (a, b) { return a.tok.t - b.tok.t || a.k - b.k; }).map(function (x) { return x.tok; });
      var answerT = {}, answerTok = {};  // criterion index -> time its value started, and that token
      tokens.forEach(function (t) {
        if (t.answer_index !== null && t.answer_index !== undefined && !(t.answer_index in answerT)) { answerT[t.answer_index] = t.t; answerTok[t.answer_index] = t; }
      });
      tEnd = Math.max(tEnd, run.total_s);
      run.events.forEach(function (e) { tEnd = Math.max(tEnd, e.t); marks.push(e.t); });
      tokens.forEach(function (t) { tEnd = Math.max(tEnd, t.t); marks.push(t.t); });
      return { key: def[0], path: def[1], name: def[2], run: run, tokens: tokens, tokenT: tokens.map(function (t) { return t.t; }),
               answerT: answerT, answerTok: answerTok, ttft: run.ttft_s, done: run.total_s, usable: !!(run.valid && run.complete),
               capped: run.stop_reason === "max_new_tokens", shown: -1, sel: -1, dom: null };
    });
    marks.push(tEnd);
    marks = Array.from(new Set(marks)).sort(function (a, b) { return a - b; });
    var passes = {};
    typed.decisions.forEach(function (d) { passes[d.pass] = true; });
    return {
      entry: entry, trace: trace, repeat: repeat, typed: typed, gens: gens, criteria: criteria, byId: byId, tEnd: tEnd, marks: marks,
      firstDecision: Math.min.apply(null, decTimes), lastDecision: Math.max.apply(null, decTimes),
      passes: Object.keys(passes).length, typedDone: typed.total_s, rows: null
    };
  }
  function streamedValue(tok) {  // the value a token that starts an answer spells, as far as it goes
    var v = String(tok.text).replace(/^[\s,\[\]"]+|[\s,\[\]"]+$/g, "");
    return v || String(tok.text).trim() || "?";
  }
  function typedCorrect(d, c) {  // v2 records it; for v1, compare the raw choice with the label
    if (d.calibrated) return d.calibrated.correct;
    if (d.correct !== undefined) return d.correct;
    return c.label === undefined || c.label === null ? null : d.choice === c.label;
  }
  // What a generated lane (from prepare) shows for criterion c (index k) at time t: {state, text, title, arrived}.
  // Pending until its value starts; streaming (not yet judged) until the array ends; then its parsed value,
  // right or wrong against the label, or "unparsed" when the array is not usable.
  function genCell(g, c, k, t) {
    var done = t >= g.done, run = g.run, at = g.answerT[k];
    var arrived = at !== undefined && at <= t;
    var state, text, title = "";
    if (!arrived && !done) { state = "pending"; text = "…"; }
    else if (done && !g.usable) {
      state = "unparsed"; text = "unparsed";
      title = "the array was " + (g.capped ? "capped before it closed" : run.valid ? "incomplete" : "invalid") + ", so no value can be matched to its criterion";
    } else if (!done) { state = "streaming"; text = streamedValue(g.answerTok[k]); title = "written, not yet parsed: the array is not finished"; }
    else {
      var v = run.parsed[k];
      var correct = run.correct ? run.correct[k] : (c.label === undefined || c.label === null ? null : v === c.label);
      var agree = run.agreement ? run.agreement[k] : null;
      if (correct === null || correct === undefined) { state = agree === false ? "differs" : "value"; text = v + (agree === false ? " ≠ typed" : ""); }
      else { state = correct ? "right" : "wrong"; text = v + (correct ? " ✓" : " ✗"); }
      title = (correct === true ? "matches the label" : correct === false ? "does not match the label " + c.label : "no label") +
        (agree === true ? "; same as the typed choice" : agree === false ? "; differs from the typed choice" : "");
    }
    return { state: state, text: text, title: title, arrived: arrived };
  }

  return { laneDefs: laneDefs, repeatsOf: repeatsOf, consistency: consistency, eventT: eventT, prepare: prepare,
           streamedValue: streamedValue, typedCorrect: typedCorrect, genCell: genCell };
});
