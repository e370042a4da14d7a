// Unit tests of scorer/site/assets/replay/prepare.js (a trace prepared for replay), on the committed fake traces
// (tests/fixtures). Run: node --test tests/js/
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const P = require("../../scorer/site/assets/replay/prepare.js");

const FIXTURES = path.join(__dirname, "..", "fixtures");
const load = (name) => JSON.parse(fs.readFileSync(path.join(FIXTURES, name), "utf8"));
const V1 = load("trace-fake.json");
const V2 = load("trace-v2-fake.json");
const clone = (x) => JSON.parse(JSON.stringify(x));
const measured = (trace, p, repeat) => trace.runs.filter((r) => !r.warmup && r.path === p && r.repeat === repeat)[0];

test("laneDefs: typed first; v1 has one generated lane, v2 a free and a constrained one", () => {
  assert.deepEqual(P.laneDefs(V1).map((d) => d[1]), ["typed", "generated"]);
  assert.deepEqual(P.laneDefs(V2).map((d) => d[0]), ["typed", "free", "constrained"]);
});

test("repeatsOf lists, in order, the repeats with a measured run of every lane", () => {
  assert.deepEqual(P.repeatsOf(V1), [0, 1, 2]);
  const t = clone(V2);
  t.runs = t.runs.filter((r) => !(r.path === "constrained" && r.repeat === 1 && !r.warmup));
  assert.deepEqual(P.repeatsOf(t), [0, 2]);
});

test("consistency finds what the replay cannot replay", () => {
  assert.deepEqual(P.consistency(V1), []);
  assert.deepEqual(P.consistency(V2), []);
  const dup = clone(V1);
  dup.inputs.criteria[1].id = dup.inputs.criteria[0].id;
  assert.ok(P.consistency(dup).includes("duplicate criterion ids in inputs.criteria"));
  const unknown = clone(V1);
  const i = unknown.runs.findIndex((r) => r.path === "typed" && !r.warmup);
  unknown.runs[i].decisions[0].criterion_id = "nope";
  assert.deepEqual(P.consistency(unknown).filter((p) => p.includes("nope")),
    ["runs[" + i + "].decisions: unknown criterion_id \"nope\""]);
  const none = clone(V1);
  none.runs = none.runs.filter((r) => r.path !== "generated" || r.warmup);
  assert.deepEqual(P.consistency(none), ["no repeat has a measured run of every path"]);
});

test("eventT finds a run's named event", () => {
  const typed = measured(V1, "typed", 0);
  assert.equal(P.eventT(typed, "encoded"), typed.events.find((e) => e.name === "encoded").t);
  assert.equal(P.eventT(typed, "no-such-event"), null);
  assert.equal(P.eventT({}, "encoded"), null);
});

for (const [name, trace] of [["v1", V1], ["v2", V2]]) {
  test("prepare lays one repeat of a " + name + " trace on one clock", () => {
    const rep = P.repeatsOf(trace)[1];
    const cur = P.prepare({ trace: trace }, rep);
    const typed = measured(trace, "typed", rep);
    assert.equal(cur.typed, typed);
    assert.equal(cur.gens.length, P.laneDefs(trace).length - 1);
    // the end: the last timestamp of any lane of this repeat
    const times = [typed.total_s].concat(typed.events.map((e) => e.t), typed.decisions.map((d) => d.t_available));
    cur.gens.forEach((g) => {
      const run = measured(trace, g.path, rep);
      assert.equal(g.run, run);
      times.push(run.total_s, ...run.events.map((e) => e.t), ...run.tokens.map((t) => t.t));
    });
    assert.equal(cur.tEnd, Math.max(...times));
    // marks: every distinct time at which something changes, ascending, from 0 to the end
    assert.equal(cur.marks[0], 0);
    assert.equal(cur.marks[cur.marks.length - 1], cur.tEnd);
    assert.equal(new Set(cur.marks).size, cur.marks.length);
    assert.deepEqual(cur.marks, cur.marks.slice().sort((a, b) => a - b));
    const dec = typed.decisions.map((d) => d.t_available);
    assert.equal(cur.firstDecision, Math.min(...dec));
    assert.equal(cur.lastDecision, Math.max(...dec));
    assert.equal(cur.passes, new Set(typed.decisions.map((d) => d.pass)).size);
    cur.gens.forEach((g) => {
      // tokens in time order; each answer's time is its first token's
      assert.deepEqual(g.tokenT, g.tokens.map((t) => t.t));
      assert.deepEqual(g.tokenT, g.tokenT.slice().sort((a, b) => a - b));
      const first = {};
      g.tokens.forEach((t) => { if (t.answer_index !== null && t.answer_index !== undefined && !(t.answer_index in first)) first[t.answer_index] = t.t; });
      assert.deepEqual(g.answerT, first);
      assert.equal(g.usable, !!(g.run.valid && g.run.complete));
      assert.equal(g.capped, g.run.stop_reason === "max_new_tokens");
    });
  });
}

test("prepare keeps the generation order of tokens with equal timestamps", () => {
  const t = clone(V1);
  const run = measured(t, "generated", 0);
  run.tokens[2].t = run.tokens[1].t;  // two tokens at one instant
  run.tokens[0].t = run.tokens[3].t;  // and one out of order
  const g = P.prepare({ trace: t }, 0).gens[0];
  assert.deepEqual(g.tokens.slice(0, 4).map((x) => x.i), [1, 2, 0, 3]);
});

test("streamedValue is the value a token starts, stripped of JSON punctuation", () => {
  assert.equal(P.streamedValue({ text: "\"yes\"," }), "yes");
  assert.equal(P.streamedValue({ text: " no" }), "no");
  assert.equal(P.streamedValue({ text: "[\"" }), "[\"");  // only punctuation: shown as it is
  assert.equal(P.streamedValue({ text: "  " }), "?");
});

test("typedCorrect: calibrated if calibrated, else the record's own, else the raw choice against the label", () => {
  assert.equal(P.typedCorrect({ choice: "no", correct: true, calibrated: { correct: false } }, { label: "no" }), false);
  assert.equal(P.typedCorrect({ choice: "no", correct: false }, { label: "no" }), false);
  assert.equal(P.typedCorrect({ choice: "no" }, { label: "no" }), true);
  assert.equal(P.typedCorrect({ choice: null }, { label: "no" }), false);  // a tie is not right
  assert.equal(P.typedCorrect({ choice: "no" }, { label: null }), null);
  assert.equal(P.typedCorrect({ choice: "no" }, {}), null);
});

test("genCell: pending, streaming, then the judged value; unparsed when the array is not usable", () => {
  const cur = P.prepare({ trace: V1 }, 0);
  const g = cur.gens[0];
  const k = 0, c = cur.criteria[k], at = g.answerT[k];
  assert.deepEqual(P.genCell(g, c, k, at - 1e-6), { state: "pending", text: "…", title: "", arrived: false });
  const streaming = P.genCell(g, c, k, at);
  assert.equal(streaming.state, "streaming");
  assert.equal(streaming.text, P.streamedValue(g.answerTok[k]));
  assert.equal(streaming.arrived, true);
  const done = P.genCell(g, c, k, g.done);
  const v = g.run.parsed[k];
  assert.equal(done.state, v === c.label ? "right" : "wrong");
  assert.equal(done.text, v + (v === c.label ? " ✓" : " ✗"));
  assert.match(done.title, g.run.agreement[k] ? /; same as the typed choice$/ : /; differs from the typed choice$/);
  // without a label: the value, and whether it differs from the typed choice
  const wrongAgree = g.run.agreement.indexOf(false);
  const plain = P.genCell(g, { id: "x", label: null }, wrongAgree, g.done);
  assert.deepEqual([plain.state, plain.text], ["differs", g.run.parsed[wrongAgree] + " ≠ typed"]);
  // an unusable array: no value is matched to a criterion
  const bad = Object.assign({}, g, { usable: false, capped: true });
  const cell = P.genCell(bad, c, k, g.done);
  assert.deepEqual([cell.state, cell.text], ["unparsed", "unparsed"]);
  assert.match(cell.title, /capped before it closed/);
});
