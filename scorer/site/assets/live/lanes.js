/* The generated lanes' rules, as `semif versus` has them: the constrained lane's GBNF grammar
   (scorer/prompting/grammar.py's ArrayGrammar: exactly one JSON array with one option id per criterion, compact with an
   optional space after each comma), the free lane's token limit (scorer.scoring.generation.default_max_new_tokens), and
   the strict judgement of an output (scorer.trace.derive.parse_array: nothing repaired). Pure: tests/js_live/
   compares the grammar text with the Python one byte for byte. In the page: window.SemifLiveLanes. */
(function (root, factory) {
  "use strict";
  var node = typeof module === "object" && module.exports;
  // Python's json (pyjson.js), looked up when first needed (in the page it is in assets/live-modules.js).
  var api = factory(function () { return node ? require("./pyjson.js") : root.SemifLivePyJson; });
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifLiveLanes = api;
})(this, function (pyJson) {
  "use strict";

  // Python's json.dumps of a string (ensure_ascii on, as scorer/prompting/grammar.py calls it).
  function pyJsonString(s) {
    return '"' + String(s).replace(/[\\"\u0000-\u001f\u007f-\uffff]/g, function (c) {
      var map = { "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };
      return map[c] || "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4);
    }) + '"';
  }
  function gbnfLiteral(s) { return '"' + s.replace(/\\/g, "\\\\").replace(/"/g, '\\"') + '"'; }

  // ArrayGrammar(values).gbnf(): one rule per distinct option set, in order of first use.
  function gbnf(values) {
    if (!values.length || values.some(function (v) { return !v.length; })) throw new Error("an array grammar needs at least one criterion and one option per criterion");
    var names = [], keys = [];
    values.forEach(function (v) {
      var k = JSON.stringify(v);
      if (keys.indexOf(k) < 0) { keys.push(k); names.push("v" + names.length); }
    });
    var body = values.map(function (v) { return names[keys.indexOf(JSON.stringify(v))]; }).join(" sep ");
    var lines = ['root ::= "[" ' + body + ' "]"', 'sep ::= "," " "?'];
    keys.forEach(function (k, i) {
      lines.push(names[i] + " ::= " + JSON.parse(k).map(function (o) { return gbnfLiteral(pyJsonString(o)); }).join(" | "));
    });
    return lines.join("\n") + "\n";
  }
  function longestChars(values) {
    var n = values.length;
    return 2 + values.reduce(function (a, v) { return a + Math.max.apply(null, v.map(function (o) { return pyJsonString(o).length; })); }, 0) + 2 * (n - 1);
  }
  // ArrayGrammar(values).rule(): the grammar in words.
  function rule(values) {
    var opts = values.map(function (v) { return v.join("/"); }).filter(function (o, i, all) { return all.indexOf(o) === i; }).sort();
    return "exactly one JSON array of " + values.length + " strings, value k one of criterion k's option ids (" + opts.join(", ") +
      "), compact with an optional space after each comma, then end of turn";
  }
  function constrainedMaxTokens(values) { return longestChars(values) + 1; }
  function freeMaxTokens(n) { return 4 * n + 16; }

  // parse_array: (valid, complete, parsed, error), nothing repaired (a fence, "Yes", a missing bracket fail), in
  // parse_array's words: Python's json decides what parses and words the errors (SemifLivePyJson).
  function judge(text, n, answers) {
    var J = pyJson(), ok = answers || ["yes", "no"];
    var body = J.pyStrip(String(text));
    if (!body) return { valid: false, complete: false, parsed: null, error: "empty output" };
    var value;
    try { value = J.loads(body); } catch (e) {
      if (e.name !== "JSONDecodeError") throw e;
      var at = / at$/.test(e.msg) ? "" : " at";
      return { valid: false, complete: false, parsed: null, error: "not a JSON value (" + e.msg + at + " char " + e.pos + ")" };
    }
    if (!Array.isArray(value)) {
      return { valid: false, complete: false, parsed: null, error: "a JSON " + J.typeName(value) + ", not an array" };
    }
    for (var i = 0; i < value.length; i++) {
      if (typeof value[i] !== "string" || ok.indexOf(value[i]) < 0) {
        return { valid: false, complete: false, parsed: null,
                 error: "value " + (i + 1) + " is " + J.dumps(value[i]) + " (expected " + ok.map(function (a) { return '"' + a + '"'; }).join(" or ") + ")" };
      }
    }
    if (value.length !== n) return { valid: true, complete: false, parsed: value, error: value.length + " values for " + n + " criteria" };
    return { valid: true, complete: true, parsed: value, error: null };
  }
  // derive.verdict's words.
  function verdict(j, capped, limit) {
    if (j.complete) return "valid: " + j.parsed.length + " values" + (capped ? " (then stopped at the " + limit + "-token limit)" : "");
    if (capped) return "capped: stopped at the " + limit + "-token limit before a complete array";
    return "invalid: " + j.error;
  }

  return { gbnf: gbnf, rule: rule, constrainedMaxTokens: constrainedMaxTokens, freeMaxTokens: freeMaxTokens, judge: judge, verdict: verdict };
});
