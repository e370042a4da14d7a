// Unit tests of scorer/site/assets/replay/format.js (the replay's words and numbers). Run: node --test tests/js/
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const F = require("../../scorer/site/assets/replay/format.js");

test("fmtS writes milliseconds below one second and seconds above, a dash when unknown", () => {
  for (const unknown of [null, undefined, NaN, Infinity, -Infinity]) assert.equal(F.fmtS(unknown), "—");
  assert.equal(F.fmtS(0), "0.00 ms");
  assert.equal(F.fmtS(0.00512), "5.12 ms");  // below 10 ms: two decimals
  assert.equal(F.fmtS(0.01), "10 ms");
  assert.equal(F.fmtS(0.4996), "500 ms");
  assert.equal(F.fmtS(1), "1.00 s");
  assert.equal(F.fmtS(2.5), "2.50 s");
});

test("fixed rounds an exact tie to the even digit, as Python's format() does, and anything else as toFixed", () => {
  assert.equal(F.fixed(12.5, 0), "12");   // toFixed: "13"
  assert.equal(F.fixed(13.5, 0), "14");
  assert.equal(F.fixed(0.125, 2), "0.12");  // toFixed: "0.13"
  assert.equal(F.fixed(0.375, 2), "0.38");
  assert.equal(F.fixed(2.625, 2), "2.62");
  assert.equal(F.fixed(1.005, 2), "1.00");  // 1.005 is a little below the tie in binary
  assert.equal(F.fixed(0.0125 * 1000, 0), "12");
  assert.equal(F.fixed(12.500001, 0), "13");
  assert.equal(F.fixed(0, 2), "0.00");
  assert.equal(F.fixed(3.14159, 3), "3.142");
  assert.equal(F.fmtS(0.0125), "12 ms");
  assert.equal(F.fmtS(2.125), "2.12 s");
});

test("fmtClock, fmtP and plural", () => {
  assert.equal(F.fmtClock(1.23456), "1.235 s");
  assert.equal(F.fmtClock(0), "0.000 s");
  assert.equal(F.fmtP(0.666), "0.67");
  assert.equal(F.fmtP(undefined), "—");
  assert.equal(F.fmtP("0.5"), "—");  // only a number is a probability
  assert.equal(F.plural(1, "token"), "1 token");
  assert.equal(F.plural(0, "token"), "0 tokens");
  assert.equal(F.plural(21, "decision"), "21 decisions");
});

test("fmtTick gives a tick as many decimals as its step needs", () => {
  assert.equal(F.fmtTick(2, 1), "2");
  assert.equal(F.fmtTick(20, 10), "20");
  assert.equal(F.fmtTick(0.5, 0.1), "0.5");
  assert.equal(F.fmtTick(0.25, 0.05), "0.25");
  assert.equal(F.fmtTick(0.3000000004, 0.1), "0.3");  // float noise from summing steps is not shown
});

test("readableError says 'starting at character' once where v1 traces doubled it", () => {
  assert.equal(F.readableError("Unterminated string starting at at char 41"), "Unterminated string starting at character 41");
  assert.equal(F.readableError("Expecting value"), "Expecting value");
  assert.equal(F.readableError(null), "null");
});

test("runVerdict: the run's own verdict, else valid, capped or invalid in words", () => {
  assert.equal(F.runVerdict({ verdict: "invalid: Unterminated string starting at at char 3" }, false, 12),
    "invalid: Unterminated string starting at character 3");
  assert.equal(F.runVerdict({ valid: true, complete: true, parsed: ["yes", "no", "yes"] }, false, 12), "valid: 3 values");
  assert.equal(F.runVerdict({ valid: false, complete: false, error: "x" }, true, 12),
    "capped: stopped at the 12-token limit before a complete array");
  assert.equal(F.runVerdict({ valid: false, complete: true, error: "Expecting ',' delimiter" }, false, 12),
    "invalid: Expecting ',' delimiter");
  assert.equal(F.runVerdict({ valid: false, complete: false, error: null }, false, 12), "invalid: no array");
  // a valid but incomplete run is not "valid"
  assert.equal(F.runVerdict({ valid: true, complete: false, error: null, parsed: [] }, false, 12), "invalid: no array");
});

test("tokenInfo names the token, its time and probability, and only what the token has", () => {
  const tok = { i: 3, t: 0.5, p: 0.4321, text: "yes", stop: false };
  assert.equal(F.tokenInfo(tok), 'token "yes" · #3 at 0.500 s · p 0.432');
  const stop = { i: 9, t: 1.25, p: 0.9, text: "<|im_end|>", stop: true };
  assert.equal(F.tokenInfo(stop), 'stop token "<|im_end|>" (not part of the answer) · #9 at 1.250 s · p 0.900');
  const rich = { i: 1, t: 0.1, p: 0.6, text: "no", stop: false, masked: true, free_argmax: { text: "maybe", p: 0.7 },
                 yes_no: { yes: 0.25, no: 0.75 },
                 top_k: [1, 2, 3, 4, 5].map((k) => ({ text: "t" + k, p: k / 10 })) };
  assert.equal(F.tokenInfo(rich), 'token "no" · #1 at 0.100 s · p 0.600 · the grammar refused the model\'s own choice ' +
    '"maybe" (p 0.70) · yes 0.250 / no 0.750 · the model\'s top choices: "t1" 0.10, "t2" 0.20, "t3" 0.30, "t4" 0.40');
  // a masked token without the model's own choice says nothing about it
  assert.equal(F.tokenInfo({ i: 0, t: 0, p: 1, text: "[", stop: false, masked: true }), 'token "[" · #0 at 0.000 s · p 1.000');
});
