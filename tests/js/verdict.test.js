// Unit tests of scorer/site/assets/replay/verdict.js (a trace's headline, verdict and numbers computed in the page), on
// the committed fake traces (tests/fixtures). That it writes exactly what build.py writes, on every committed
// trace, is tests/site/test_site_js.py's test. Run: node --test tests/js/
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const V = require("../../scorer/site/assets/replay/verdict.js");

const FIXTURES = path.join(__dirname, "..", "fixtures");
const load = (name) => JSON.parse(fs.readFileSync(path.join(FIXTURES, name), "utf8"));
const V1 = load("trace-fake.json");
const V2 = load("trace-v2-fake.json");
const INVALID = load("trace-fake-invalid.json");
const clone = (x) => JSON.parse(JSON.stringify(x));

test("answers counts each value, most first, and names ties", () => {
  assert.equal(V.answers(["yes", "yes"]), "yes to all 2");
  assert.equal(V.answers(["no"]), "no to the one criterion");
  assert.equal(V.answers(["yes", "no", "no"]), "no to 2 and yes to 1");
  assert.equal(V.answers(["b", "a", null]), "a to 1, b to 1 and a tie on 1");  // equal counts: by value
  assert.equal(V.answers([null, null]), "a tie on 2");
});

test("fmtCount writes a median token count as build.py's fmt_value does", () => {
  assert.equal(V.fmtCount(null), "—");
  assert.equal(V.fmtCount(0), "0");
  assert.equal(V.fmtCount(12), "12");
  assert.equal(V.fmtCount(12.5), "12.5");
  assert.equal(V.fmtCount(104.5), "104.5");
  assert.equal(V.fmtCount(2.5e6), "2500000");  // whole: an int, as Python writes it
  assert.equal(V.fmtCount(2500000.5), "2.500e+06");
});

test("isControl: random weights, said in the model key or the experiment id", () => {
  assert.equal(V.isControl(V2), false);
  const t = clone(V2);
  t.model.key = "qwen2.5-0.5b-arch-Random";
  assert.equal(V.isControl(t), true);
});

test("view: the headline is one sentence, typed first, each generated lane with its time ratio", () => {
  const v = V.view(V2);
  assert.deepEqual(v.lanes.map((l) => l.key), ["typed", "free", "constrained"]);
  assert.match(v.headline, /^Typed: \d+ of \d+ right( \(calibrated\))? in [\d.]+ m?s, no output tokens; free: .*; constrained: .*\.$/);
  assert.equal((v.headline.match(/\. /g) || []).length, 0);
  const ratio = V2.summary.free.wall_ratio.toFixed(2);
  assert.ok(v.headline.includes("(" + ratio + "× as long)"), v.headline);
  assert.equal(v.numbers.account, V2.summary.token_account.line);
  assert.deepEqual(v.numbers.columns, ["Typed decisions", "Free generation", "Constrained generation"]);
});

test("view: a v1 trace, and one whose array never closed", () => {
  const ok = V.view(V1);
  assert.deepEqual(ok.lanes.map((l) => [l.key, l.path]), [["typed", "typed"], ["free", "generated"]]);
  assert.match(ok.verdict[1].text, /^wrote a valid array \(/);
  const bad = V.view(INVALID);
  assert.ok(bad.headline.includes("free: no usable array after "), bad.headline);
  assert.ok(bad.verdict[1].text.startsWith("wrote no usable array (20 values for 21 criteria) in all 3 runs"), bad.verdict[1].text);
  const agree = bad.numbers.rows.filter((r) => r.label === "agree with typed (first run)")[0];
  assert.deepEqual(agree.cells[1], { text: "—", note: "no usable array", warn: true });
});

test("view: the whole-workload sentence only when the trace is calibrated, and a control says so first", () => {
  const cal = V2.runs.filter((r) => r.path === "typed" && !r.warmup)[0].decisions.every((d) => d.calibrated);
  const notes = V.view(V2, "W.").verdict.filter((s) => s.name === "On the whole workload:");
  assert.equal(notes.length, cal ? 1 : 0);
  assert.equal(V.view(V1, "W.").verdict.filter((s) => s.name === "On the whole workload:").length, 0);
  const t = clone(V2);
  t.experiment.id = "random-weights-control";
  const v = V.view(t);
  assert.equal(v.control, true);
  assert.equal(v.verdict[0].name, "Timing control:");
  assert.ok(v.headline.startsWith("Timing control"));
});
