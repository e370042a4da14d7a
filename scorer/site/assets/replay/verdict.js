/* A trace's headline, verdict, numbers and token account, computed in the page from the trace itself: for a trace
   build.py never saw (opened from disk, or made by a live run in a browser), so a shared trace keeps its headline.
   The view it returns is the one build.py writes into traces/<slug>.js for a built-in trace.

   Why a second implementation beside build.py's (scorer/site/lanes.py, verdict.py, trace_view.py) rather than
   one run by both: the build stays pure Python (``python build.py`` needs no Node wherever the site is built, CI
   and Pages included), and the page cannot run Python. So the wording exists twice, and tests hold the two to
   the same output: tests/site/test_site_js.py runs this file in Node on every committed trace and on each fixture
   variant (capped, cut, invalid, calibrated, control, hostile) against build.py's view, and
   tests/site/test_site_verdict_browser.py runs the copy the built page loads on every committed trace. Numbers are
   written with SemifReplayFormat (fmtS, fixed), which rounds as Python does.

   Not part of the replay's script before the first paint: the page loads it (assets/verdict.js) with the
   checker, only when a trace is opened. In the page: window.SemifReplayVerdict; in Node: require("…/verdict.js"). */
(function (root, factory) {
  "use strict";
  var node = typeof module === "object" && module.exports;
  // The format and prepare modules, looked up when first needed (in the page they are in assets/replay.js).
  var api = factory(function () { return node ? require("./format.js") : root.SemifReplayFormat; },
                    function () { return node ? require("./prepare.js") : root.SemifReplayPrepare; });
  if (node) module.exports = api;
  else root.SemifReplayVerdict = api;
})(this, function (F, P) {
  "use strict";

  var CONTROL_LEAD = "Timing control (random weights; only the times mean anything) — ";
  var BASIS = "Times are medians over the measured runs of each lane (warm-ups excluded); answers, matches and " +
    "agreement are those of the first measured run.";

  // Python's view of a field: finite() of scorer/site/formatting.py, dict.get (a missing field is None), str().
  function finite(v) { return typeof v === "number" && isFinite(v) ? v : null; }
  function opt(v) { return v === undefined ? null : v; }
  function str(v) { return v === null || v === undefined ? "None" : String(v); }
  // fmt_value(fmt_count(v)) of scorer/site/formatting.py, for a token count (a median: possibly x.5) or None.
  function fmtCount(v) {
    if (v === null || v === undefined) return "—";
    if (Number.isInteger(v)) return String(v);
    var a = Math.abs(v);
    if (a >= 1e6 || a < 1e-4) return v.toExponential(3).replace(/e([+-])(\d)$/, "e$10$2");
    return a >= 100 ? F().fixed(v, 1) : String(Number(v.toPrecision(4)));
  }
  function ratio(v) { return F().fixed(v, 2) + "×"; }

  // scorer.site.labels.is_control: a random-weights run (timing only) says so in its model key or experiment id.
  function isControl(obj) {
    return [(obj.model || {}).key, (obj.experiment || {}).id].map(str).join(" ").toLowerCase().indexOf("random") >= 0;
  }
  // scorer.trace.derive.verdict: a generated run's outcome in words, for a v1 run that does not carry its own.
  function runVerdict(run, limit) {
    var capped = run.stop_reason === "max_new_tokens";
    if (run.complete) return "valid: " + (run.parsed || []).length + " values" + (capped ? " (then stopped at the " + limit + "-token limit)" : "");
    if (capped) return "capped: stopped at the " + limit + "-token limit before a complete array";
    return "invalid: " + (run.error === null || run.error === undefined ? "None" : F().readableError(run.error));
  }

  // scorer.site.lanes.trace_lanes: each lane with the numbers the verdict shows, from the trace's own summary
  // (times: medians over the measured runs; answers and counts: the first measured repeat).
  function lanesOf(obj) {
    var s = obj.summary, labels = s.labels || {}, v1 = obj.format === "semif-trace-v1";
    var measured = obj.runs.filter(function (r) { return !r.warmup; });
    var rep0 = Math.min.apply(null, measured.map(function (r) { return r.repeat; }));
    var run0 = {};
    measured.forEach(function (r) { if (r.repeat === rep0) run0[r.path] = r; });
    var labelled = obj.inputs.criteria.filter(function (c) { return c.label !== undefined && c.label !== null; }).length;
    return P().laneDefs(obj).map(function (def) {
      var key = def[0], run = run0[def[1]], ls = s[key];
      if (v1) {
        ls = key === "typed" ? { median_s: s.typed_median_s, first_decision_median_s: s.typed_first_decision_median_s } : {
          median_s: s.generated_median_s, wall_ratio: s.wall_ratio, ttft_median_s: s.ttft_median_s,
          valid_runs: s.generated_valid_runs, capped_runs: s.generated_limit_runs, agreement: s.agreement,
          correct: labels.generated_correct, tokens: { output_median: s.generated_tokens.output_median } };
      }
      var lane = { key: key, path: def[1], name: def[2], run: run, runs: s.runs, median_s: finite(ls.median_s),
        first_s: finite(key === "typed" ? ls.first_decision_median_s : ls.ttft_median_s), ratio: null,
        valid_runs: null, capped_runs: null, limit: null, verdict: "", correct: null, calibrated_correct: null,
        labelled: labelled, agree: null, output_tokens: 0, masked_tokens: null, usable: true };
      if (key === "typed") {
        lane.correct = labelled ? opt(labels.typed_correct) : null;
        lane.calibrated_correct = labelled ? opt(labels.typed_calibrated_correct) : null;
        return lane;
      }
      lane.ratio = finite(ls.wall_ratio);
      lane.valid_runs = opt(ls.valid_runs);
      lane.capped_runs = opt(ls.capped_runs);
      lane.limit = obj.prompts[key === "constrained" ? "constrained" : "generated"].max_new_tokens;
      lane.verdict = run.verdict || runVerdict(run, lane.limit);
      lane.usable = !!(run.complete && run.valid);
      lane.correct = lane.usable && labelled ? opt(ls.correct) : null;
      lane.agree = lane.usable ? ls.agreement.agree : null;
      lane.output_tokens = finite(ls.tokens.output_median);
      lane.masked_tokens = finite(ls.masked_tokens_median);
      return lane;
    });
  }

  // scorer.site.verdict.answers: "yes to all 21" / "no to 12 and yes to 9" / "… and a tie on 2" (a tie: null).
  function answers(values) {
    var counts = new Map(), ties = 0;
    values.forEach(function (v) {
      if (v === null || v === undefined) ties++;
      else counts.set(v, (counts.get(v) || 0) + 1);
    });
    var items = Array.from(counts.entries());
    if (items.length === 1 && !ties) return items[0][0] + (items[0][1] > 1 ? " to all " + items[0][1] : " to the one criterion");
    items.sort(function (a, b) { return b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0); });
    var parts = items.map(function (kv) { return kv[0] + " to " + kv[1]; });
    if (ties) parts.push("a tie on " + ties);
    return parts.length > 1 ? parts.slice(0, -1).join(", ") + " and " + parts[parts.length - 1] : parts[0];
  }
  function runsPhrase(n, of) { return n === of && of > 1 ? "all " + of + " runs" : n + " of " + of + " run" + (of === 1 ? "" : "s"); }

  // scorer.site.verdict.headline: the verdict in one sentence, above the lanes.
  function headline(obj, lanes, control) {
    var typed = lanes[0], n = obj.inputs.criteria.length, fmtS = F().fmtS, what;
    if (typed.correct !== null) {
      var cal = typed.calibrated_correct !== null;
      what = (cal ? typed.calibrated_correct : typed.correct) + " of " + typed.labelled + " right" + (cal ? " (calibrated)" : "");
    } else {
      what = n > 1 ? "all " + n + " criteria" : "1 criterion";
    }
    var parts = ["Typed: " + what + " in " + fmtS(typed.median_s) + ", no output tokens"];
    lanes.slice(1).forEach(function (g) {
      var took = fmtS(g.median_s) + (g.ratio === null ? "" : " (" + ratio(g.ratio) + " as long)"), name = g.key + ": ";
      if (g.usable) parts.push(name + (g.correct === null ? "a valid array" : g.correct + " of " + g.labelled + " right") + " in " + took);
      else if (g.capped_runs) parts.push(name + "no answer, hit its " + g.limit + "-token limit at " + took);
      else parts.push(name + "no usable array after " + took);
    });
    return (control ? CONTROL_LEAD : "") + parts.join("; ") + ".";
  }

  // scorer.site.verdict.verdict_sentences: one sentence per lane ({lane, name, text}), with its caveats.
  function verdictSentences(obj, lanes, control, workload) {
    var out = [], n = obj.inputs.criteria.length, fmtS = F().fmtS;
    if (control) out.push({ lane: "note", name: "Timing control:", text: "this model has random weights, so its answers mean nothing; only its times do." });
    lanes.forEach(function (lane) {
      var text, runs = lane.runs;
      if (lane.key === "typed") {
        var decisions = lane.run.decisions, raw = answers(decisions.map(function (d) { return d.choice; }));
        var cal = decisions.map(function (d) { return d.calibrated; });
        var allCal = cal.every(function (c) { return !!c; });
        text = "answered " + (allCal ? answers(cal.map(function (c) { return c.choice; })) + " after calibration (raw: " + raw + ")" : raw);
        text += " in " + fmtS(lane.median_s) + ", with no output tokens";
        if (lane.correct !== null) {
          var calibrated = lane.calibrated_correct !== null;
          text += "; " + (calibrated ? lane.calibrated_correct : lane.correct) + " of " + lane.labelled + " match the labels";
          if (calibrated) text += " (" + lane.correct + " before calibration)";
        }
        out.push({ lane: lane.key, name: lane.name, text: text + "." });
        if (workload && allCal) out.push({ lane: "note", name: "On the whole workload:", text: workload });
        return;
      }
      if (lane.usable) {
        text = "wrote a valid array (" + answers(lane.run.parsed) + ") in " + fmtS(lane.median_s);
        if (lane.ratio !== null) text += ", " + ratio(lane.ratio) + " the typed time";
        if (lane.correct !== null) text += "; " + lane.correct + " of " + lane.labelled + " match the labels";
        if (lane.agree !== null) text += ", and it agrees with the typed decisions on " + lane.agree + " of " + n;
        if (lane.masked_tokens) text += "; the grammar overruled the model on " + lane.masked_tokens + " token" + (lane.masked_tokens === 1 ? "" : "s");
        if (lane.valid_runs !== null && lane.valid_runs < runs) text += " (valid in " + runsPhrase(lane.valid_runs, runs) + ")";
        text += ".";
      } else if (lane.capped_runs) {
        text = "never finished its array: the model did not end its turn and was stopped at the " + lane.limit +
          "-token limit in " + runsPhrase(lane.capped_runs, runs) + ", so none of its values count, and its " + fmtS(lane.median_s) +
          (lane.ratio !== null ? " (" + ratio(lane.ratio) + " the typed time)" : "") + " is the time of a failed, capped run.";
      } else {
        var why = lane.verdict.indexOf("invalid: ") === 0 ? lane.verdict.slice("invalid: ".length) : lane.verdict;
        text = "wrote no usable array (" + why + ") in " + runsPhrase(runs - (lane.valid_runs || 0), runs) +
          ", so none of its values count; it took " + fmtS(lane.median_s) + ".";
      }
      out.push({ lane: lane.key, name: lane.name, text: text });
    });
    var runs0 = lanes[0].runs;
    out.push({ lane: "basis", name: "", text: runs0 > 1 ? "(Times are medians of " + runs0 +
      " runs per lane; answers and matches are the first run's.)" : "(One measured run per lane.)" });
    return out;
  }

  // scorer.site.trace_view.numbers_table: one column per lane, one row per measure; a number a failed or capped
  // run distorts carries the reason beside it (note, with warn).
  function numbersTable(obj, lanes) {
    var runs = lanes[0].runs, n = obj.inputs.criteria.length, fmtS = F().fmtS, rows = [];
    var cell = function (text, note, warn) { return { text: text, note: note || "", warn: !!warn }; };
    var caveat = function (x) {
      if (x.key === "typed" || x.usable) return "";
      return x.capped_runs ? "capped at " + x.limit + " tokens, no answer" : "no usable array";
    };
    var row = function (label, fn) { rows.push({ label: label, cells: lanes.map(fn) }); };
    row("wall time (median of " + runs + ")", function (x) { return cell(fmtS(x.median_s), caveat(x), caveat(x)); });
    row("÷ typed time", function (x) {
      if (x.key === "typed") return cell("—");
      return cell(x.ratio === null ? "—" : ratio(x.ratio), caveat(x) ? "vs a " + (x.capped_runs ? "capped" : "failed") + " run" : "", caveat(x));
    });
    row("first decision / first token", function (x) { return cell(fmtS(x.first_s)); });
    row("output tokens (median)", function (x) {
      var limit = x.capped_runs && !x.usable;
      return cell(fmtCount(x.output_tokens), limit ? "the limit" : "", limit);
    });
    row("valid arrays", function (x) {
      return x.key === "typed" ? cell("—") : cell(str(x.valid_runs) + " of " + runs, x.capped_runs ? x.capped_runs + " capped" : "", !x.valid_runs);
    });
    if (lanes[0].labelled) {
      row("match the labels (first run)", function (x) {
        if (x.key === "typed") {
          return x.calibrated_correct !== null ? cell(x.calibrated_correct + " of " + x.labelled, "calibrated; " + str(x.correct) + " raw")
            : cell(str(x.correct) + " of " + x.labelled);
        }
        return x.usable ? cell(str(x.correct) + " of " + x.labelled) : cell("—", "no usable array", true);
      });
    }
    row("agree with typed (first run)", function (x) {
      if (x.key === "typed") return cell("—");
      return x.usable ? cell(x.agree + " of " + n) : cell("—", "no usable array", true);
    });
    if (lanes.some(function (x) { return x.masked_tokens !== null; })) {
      row("tokens the grammar overruled", function (x) { return cell(fmtCount(x.masked_tokens)); });
    }
    return { columns: lanes.map(function (x) { return x.name; }), keys: lanes.map(function (x) { return x.key; }), rows: rows,
             account: (obj.summary.token_account || {}).line || "", basis: BASIS };
  }

  // The view build.py writes for a trace (scorer.site.trace_view.trace_view) but its slug and picker label, which
  // name a file of the build. `workload`: the whole-workload sentence the build takes from a committed report
  // (the trace does not carry it), or nothing.
  function view(obj, workload) {
    var lanes = lanesOf(obj), control = isControl(obj);
    return { control: control, headline: headline(obj, lanes, control),
             verdict: verdictSentences(obj, lanes, control, workload || ""), numbers: numbersTable(obj, lanes),
             lanes: lanes.map(function (x) { return { key: x.key, path: x.path, name: x.name }; }) };
  }

  return { view: view, answers: answers, fmtCount: fmtCount, isControl: isControl };
});
