// Unit tests of scorer/site/assets/replay/timeline.js (marks, speed, ticks, step paths). Run: node --test tests/js/
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const T = require("../../scorer/site/assets/replay/timeline.js");

test("countUpTo counts the values at or below t in an ascending array", () => {
  assert.equal(T.countUpTo([], 1), 0);
  const a = [0, 1, 2, 2, 3];
  assert.deepEqual([-1, 0, 0.5, 2, 2.5, 3, 9].map((t) => T.countUpTo(a, t)), [0, 1, 1, 4, 4, 5, 5]);
});

test("crossedMark: a mark strictly after `from` and at or before `to`; going back or nothing drawn always counts", () => {
  const marks = [0, 1, 2];
  assert.equal(T.crossedMark(marks, 0.5, 0.9), false);
  assert.equal(T.crossedMark(marks, 0.5, 1), true);
  assert.equal(T.crossedMark(marks, 1, 1.5), false);  // the mark at `from` was drawn already
  assert.equal(T.crossedMark(marks, 2.5, 3), false);
  assert.equal(T.crossedMark(marks, -1, 0), true);
  assert.equal(T.crossedMark(marks, 1.5, 1.2), true);
});

test("stepMark moves to the next or previous mark, else to the end or the start", () => {
  const marks = [0, 0.5, 1];
  assert.equal(T.stepMark(marks, 0.5, 1, 2), 1);
  assert.equal(T.stepMark(marks, 0.2, 1, 2), 0.5);
  assert.equal(T.stepMark(marks, 1, 1, 2), 2);
  assert.equal(T.stepMark(marks, 0.5, -1, 2), 0);
  assert.equal(T.stepMark(marks, 1.5, -1, 2), 1);
  assert.equal(T.stepMark(marks, 0, -1, 2), 0);
});

test("defaultSpeed: real time unless too short to follow, then the gentlest slow-down that lasts 4 s", () => {
  assert.equal(T.defaultSpeed(10), 1);
  assert.equal(T.defaultSpeed(2), 1);       // not shorter than half the followable time
  assert.equal(T.defaultSpeed(1.9), 0.25);  // 1.9 / 0.5 < 4, 1.9 / 0.25 ≥ 4
  assert.equal(T.defaultSpeed(1), 0.25);
  assert.equal(T.defaultSpeed(0.05), 0.01);
  assert.equal(T.defaultSpeed(0.001), 0.01);  // none is enough: the slowest
  for (const t of [0.001, 0.05, 0.3, 1, 1.9, 3]) assert.ok(T.SPEEDS.includes(T.defaultSpeed(t)));
});

test("niceStep rounds up to 1, 2 or 5 times a power of ten", () => {
  assert.deepEqual([0.3, 1, 1.5, 2.2, 7, 0.012, 0].map(T.niceStep), [0.5, 1, 2, 5, 10, 0.02, 1]);
});

test("stepPath climbs one step per time, in time order, from 0 to the end", () => {
  const id = (v) => v;
  assert.equal(T.stepPath([2, 1], id, id, 5), "M0 0 H1 V1 H2 V2 H5");
  assert.equal(T.stepPath([], id, id, 5), "M0 0 H5");
  const times = [3, 1];
  T.stepPath(times, id, id, 5);
  assert.deepEqual(times, [3, 1]);  // the caller's array is left as it was
});

test("timeAtX maps a point of the chart to a time, clamped to the run", () => {
  // axis from x = 100 to x = 500 (W 520, R 20) for 8 s
  assert.equal(T.timeAtX(100, 100, 520, 20, 8), 0);
  assert.equal(T.timeAtX(300, 100, 520, 20, 8), 4);
  assert.equal(T.timeAtX(500, 100, 520, 20, 8), 8);
  assert.equal(T.timeAtX(50, 100, 520, 20, 8), 0);
  assert.equal(T.timeAtX(900, 100, 520, 20, 8), 8);
});
