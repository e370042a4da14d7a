/* A semif-trace-v2 document's summary block, computed in the page as scorer/trace/summary.py's
   compute_summary_v2 computes it: verify recomputes the summary of every trace and compares it byte for byte
   (canonical JSON), so a live run's download carries exactly Python's numbers: medians rounded as Python's
   round() rounds, rates, counts, and the token account's sentence in Python's number formats.

   Python floats that happen to be whole (a median of 12 tokens is 12.0) are written 12.0 in Python's canonical
   JSON; JS has one number type, so such values are returned as PyFloat (SemifLiveTrace writes them with a
   decimal point). Pure: tests/site/test_live_trace.py compares it with Python on traces it builds.
   In the page: window.SemifLiveTraceSummary. */
(function (root, factory) {
  "use strict";
  var node = typeof module === "object" && module.exports;
  var api = factory(function () { return node ? require("../replay/format.js") : root.SemifReplayFormat; });
  if (node) module.exports = api;
  else root.SemifLiveTraceSummary = api;
})(this, function (F) {
  "use strict";

  // A value Python holds as a float (written with a decimal point even when whole).
  function PyFloat(x) { this.x = x; }
  function num(v) { return v instanceof PyFloat ? v.x : v; }
  function pf(x) { return x === null ? null : new PyFloat(x); }

  // round(x, d): correctly rounded, an exact tie to the even digit (SemifReplayFormat.fixed).
  function round(x, d) { return Number(F().fixed(x, d)); }
  function median(xs) {
    var s = xs.slice().sort(function (a, b) { return a - b; }), n = s.length, h = Math.floor(n / 2);
    if (!n) throw new Error("median of no values");
    return n % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
  }
  function med6(xs) { return round(median(xs), 6); }                   // summary._median
  function rate(tokens, seconds) { return seconds > 0 ? round(tokens / seconds, 3) : null; }  // summary._rate
  function eventT(run, name) {
    for (var i = 0; i < run.events.length; i++) if (run.events[i].name === name) return run.events[i].t;
    throw new Error("run has no event " + name);
  }
  function measured(doc, path) { return doc.runs.filter(function (r) { return r.path === path && !r.warmup; }); }
  function count(xs, f) { return xs.filter(f).length; }
  // Python's format(x, "g"): six significant digits, no trailing zeros (the token counts the sentence shows).
  function fmtG(x) {
    if (x === 0) return "0";
    var e = Math.floor(Math.log10(Math.abs(x)));
    if (e < -4 || e >= 6) {
      var m = Number(x.toExponential(5)).toExponential().split("e"), k = Number(m[1]);
      return m[0] + "e" + (k < 0 ? "-" : "+") + (Math.abs(k) < 10 ? "0" : "") + Math.abs(k);
    }
    return String(Number(x.toPrecision(6)));
  }

  function laneSummary(doc, lane, typedMedian) {
    var runs = measured(doc, lane), n = doc.inputs.criteria.length, first = runs[0];
    var nIn = doc.prompts.generated.input_tokens;
    var steps = runs.map(function (r) { return r.decode_steps; });
    var enc = runs.map(function (r) { return eventT(r, "encoded"); });
    var pre = runs.map(function (r) { return eventT(r, "first_token") - eventT(r, "encoded"); });
    var dec = runs.map(function (r) { return eventT(r, "done") - eventT(r, "first_token"); });
    var perStep = [];
    dec.forEach(function (d, i) { if (steps[i] > 0) perStep.push(d / steps[i]); });
    var last = [];
    runs.forEach(function (r) { r.tokens.forEach(function (t) { if (t.answer_index === n - 1) last.push(t.t); }); });
    var med = med6(runs.map(function (r) { return r.total_s; }));
    var agree = count(first.agreement, function (a) { return a === true; });
    var disagree = count(first.agreement, function (a) { return a === false; });
    var labelled = doc.inputs.criteria.some(function (c) { return c.label !== undefined && c.label !== null; });
    var step = perStep.length ? med6(perStep) : null;
    var constrained = lane === "constrained";
    var grammar = runs.map(function (r) { return r.grammar_s; });
    var stepsMed = median(steps);
    return {
      median_s: pf(med), wall_ratio: typedMedian > 0 ? pf(round(med / typedMedian, 6)) : null,
      ttft_median_s: pf(med6(runs.map(function (r) { return r.ttft_s; }))), runs: runs.length,
      complete_runs: count(runs, function (r) { return r.complete; }), valid_runs: count(runs, function (r) { return r.valid; }),
      capped_runs: count(runs, function (r) { return r.capped; }), invalid_runs: count(runs, function (r) { return !r.valid; }),
      verdict: first.verdict, outputs_identical: runs.every(function (r) { return r.text === first.text; }),
      all_answers_median_s: last.length && last.length === runs.length ? pf(med6(last)) : null,
      agreement: { agree: agree, disagree: disagree, missing: n - agree - disagree },
      correct: labelled ? count(first.correct, function (c) { return c === true; }) : null,
      masked_tokens_median: constrained ? pf(median(runs.map(function (r) { return r.masked_tokens; }))) : null,
      // a browser trace has no grammar time (the engine does not report it): null, as verify allows there
      grammar_s_median: constrained && grammar.every(function (g) { return g !== null; }) ? pf(med6(grammar)) : null,
      tokens: { input: nIn, output_median: pf(median(runs.map(function (r) { return r.output_tokens; }))),
                decode_steps_median: pf(stepsMed), processed_median: pf(nIn + stepsMed) },
      phases: { encode_s: pf(med6(enc)), prefill_s: pf(med6(pre)), decode_s: pf(med6(dec)), s_per_decode_step: pf(step),
                prefill_tokens_per_s: pf(rate(nIn, med6(pre))), decode_tokens_per_s: step ? pf(rate(1, step)) : null },
    };
  }

  function tokenAccount(typed, free, con) {
    var tt = typed.tokens, rate0 = num(typed.phases.prefill_tokens_per_s);
    var step = num(free.phases.s_per_decode_step) || num(con.phases.s_per_decode_step);
    var x = step && rate0 ? round(step * rate0, 3) : null;
    var escT = num(tt.escalated_tokens_median);
    var esc = escT ? " + " + fmtG(escT) + " re-scored" : "";
    var parts = ["typed prefilled " + tt.prefix + " state tokens once and scored " + tt.suffix + " criterion tokens" + esc +
                 " in " + tt.passes + " pass(es), generating none"];
    [["free", free], ["constrained", con]].forEach(function (p) {
      parts.push(p[0] + " prefilled " + p[1].tokens.input + " prompt tokens and generated " + fmtG(num(p[1].tokens.output_median)) +
                 " one at a time" + (p[1].capped_runs ? ", capped" : ""));
    });
    var line = parts.join("; ") + ".";
    if (x !== null) {
      var typedEq = tt.prefix + tt.suffix + escT;
      var est = [free, con].map(function (ls) { return (ls.tokens.input + x * num(ls.tokens.decode_steps_median)) / typedEq; });
      line += " Here one decode step costs about " + F().fixed(x, 1) + " prefill tokens (" + F().fixed(1000 * step, 0) +
        " ms per step vs " + F().fixed(rate0, 0) + " prefill tokens/s), so in prefill-token equivalents free costs " +
        F().fixed(est[0], 1) + "x and constrained " + F().fixed(est[1], 1) + "x what typed does (measured: " +
        F().fixed(num(free.wall_ratio) || 0, 2) + "x and " + F().fixed(num(con.wall_ratio) || 0, 2) + "x).";
    }
    return { line: line, decode_step_in_prefill_tokens: pf(x) };
  }

  // compute_summary_v2(doc): the summary block, whole floats as PyFloat.
  function summary(doc) {
    var typed = measured(doc, "typed");
    if (!typed.length || !measured(doc, "free").length || !measured(doc, "constrained").length) {
      throw new Error("a v2 trace needs at least one measured run of each lane (typed, free, constrained)");
    }
    var tt = typed[0].tokens;
    var ev = function (a, b) { return typed.map(function (r) { return eventT(r, b) - (a ? eventT(r, a) : 0); }); };
    var pre = med6(ev("encoded", "prefill_done")), suf = med6(ev("prefill_done", "suffix_done"));
    var tMed = med6(typed.map(function (r) { return r.total_s; }));
    var tBlock = {
      median_s: pf(tMed),
      first_decision_median_s: pf(med6(typed.map(function (r) {
        return Math.min.apply(null, r.decisions.map(function (d) { return d.t_available; }));
      }))),
      tokens: { prefix: tt.prefix, suffix: tt.suffix, processed: tt.processed, output: 0, passes: tt.passes,
                escalated_decisions_median: pf(median(typed.map(function (r) { return r.escalated; }))),
                escalated_tokens_median: pf(median(typed.map(function (r) { return r.tokens.escalated; }))) },
      phases: { encode_s: pf(med6(ev(null, "encoded"))), prefill_s: pf(pre), suffix_s: pf(suf),
                readout_s: pf(med6(ev("suffix_done", "decisions_available"))), prefill_tokens_per_s: pf(rate(tt.prefix, pre)),
                suffix_tokens_per_s: pf(rate(tt.suffix, suf)) },
    };
    var free = laneSummary(doc, "free", tMed), con = laneSummary(doc, "constrained", tMed);
    var decs = typed[0].decisions, labels = null;
    if (decs.some(function (d) { return d.label !== null; })) {
      labels = { labelled: count(decs, function (d) { return d.label !== null; }),
                 typed_correct: count(decs, function (d) { return d.correct === true; }),
                 typed_calibrated_correct: doc.calibration === null ? null :
                   count(decs, function (d) { return (d.calibrated || d).correct === true; }),
                 free_correct: free.correct || 0, constrained_correct: con.correct || 0 };
    }
    return { runs: typed.length, typed: tBlock, free: free, constrained: con, labels: labels,
             token_account: tokenAccount(tBlock, free, con),
             basis: "medians over the measured runs of each lane; agreement, verdicts and label counts on measured " +
                    "repeat 0 of each lane (an incomplete array scores 0 and its values count as missing)" };
  }

  return { summary: summary, PyFloat: PyFloat, round: round, median: median, fmtG: fmtG };
});
