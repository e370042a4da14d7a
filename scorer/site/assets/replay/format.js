/* The replay's words and numbers: how a time, a probability, a token and a lane's outcome are written.
   Pure functions of their arguments (no page, no trace state), so they are unit-tested in Node
   (tests/js/format.test.js). build.py writes the same wording in Python (scorer/site/formatting.py and
   scorer/site/verdict.py). In the page: window.SemifReplayFormat; in Node: require("…/format.js"). */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifReplayFormat = api;
})(this, function () {
  "use strict";

  // x.toFixed(d) as Python's format() writes it, so the page and build.py write the same digits: an exact tie
  // (a binary value exactly halfway, 12.5 or 0.125) goes to the even digit, where toFixed rounds it up.
  // (x.toFixed(d + 30) is x's exact expansion far enough to tell a tie from a value near one.)
  function fixed(x, d) {
    var long = x.toFixed(d + 30), head = long.slice(0, -30).replace(/\.$/, "");
    return x > 0 && /^50*$/.test(long.slice(-30)) && /[02468]$/.test(head) ? head : x.toFixed(d);
  }
  // Seconds as the site writes them: "—" when unknown, milliseconds below one second (two decimals below 10 ms).
  function fmtS(s) {
    if (s === null || s === undefined || !isFinite(s)) return "—";
    return s < 1 ? fixed(s * 1000, s < 0.01 ? 2 : 0) + " ms" : fixed(s, 2) + " s";
  }
  function fmtClock(s) { return s.toFixed(3) + " s"; }
  function fmtP(p) { return typeof p === "number" ? p.toFixed(2) : "—"; }
  // A timeline tick: as many decimals as the step between ticks needs.
  function fmtTick(s, step) { var dec = Math.max(0, -Math.floor(Math.log10(step) + 1e-9)); return s.toFixed(dec); }
  // Python's JSON error for an unclosed string ends in "starting at", and v1 traces appended " at char N":
  // say it once (build.py words it the same way).
  function readableError(msg) { return String(msg).replace(/\bstarting at at char\b/g, "starting at character"); }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // A generated lane's outcome in words: the run's own verdict (v2), else derived as v1 traces need it.
  // `capped`: the run was stopped by the token limit `limit`.
  function runVerdict(run, capped, limit) {
    if (run.verdict) return readableError(run.verdict);
    if (run.valid && run.complete) return "valid: " + run.parsed.length + " values";
    if (capped) return "capped: stopped at the " + limit + "-token limit before a complete array";
    return "invalid: " + (run.error ? readableError(run.error) : "no array");
  }

  // A generated token's details: text, position, time, probability, what the grammar refused, the top choices.
  function tokenInfo(tok) {
    var alt = (tok.top_k || []).slice(0, 4).map(function (a) { return JSON.stringify(a.text) + " " + a.p.toFixed(2); }).join(", ");
    return (tok.stop ? "stop token " + JSON.stringify(tok.text) + " (not part of the answer) · " : "token " + JSON.stringify(tok.text) + " · ") +
      "#" + tok.i + " at " + tok.t.toFixed(3) + " s · p " + tok.p.toFixed(3) +
      (tok.masked && tok.free_argmax ? " · the grammar refused the model's own choice " + JSON.stringify(tok.free_argmax.text) + " (p " + tok.free_argmax.p.toFixed(2) + ")" : "") +
      (tok.yes_no ? " · yes " + tok.yes_no.yes.toFixed(3) + " / no " + tok.yes_no.no.toFixed(3) : "") +
      (alt ? " · the model's top choices: " + alt : "");
  }

  return { fixed: fixed, fmtS: fmtS, fmtClock: fmtClock, fmtP: fmtP, fmtTick: fmtTick, readableError: readableError, plural: plural,
           runVerdict: runVerdict, tokenInfo: tokenInfo };
});
