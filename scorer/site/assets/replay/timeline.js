/* The replay's timeline maths: where the clock stands among the marks (the times at which something visible
   changes), the next mark in either direction, the default speed for a run, the chart's ticks and step
   paths, and the time under a point of the chart. Pure functions (tests/js/timeline.test.js).
   In the page: window.SemifReplayTimeline; in Node: require("…/timeline.js"). */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifReplayTimeline = api;
})(this, function () {
  "use strict";
  // The speed choices, fastest first (build.py offers the same list in the page's speed menu).
  var SPEEDS = [4, 2, 1, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01];
  var MIN_FOLLOWABLE_S = 4;  // a replay shorter than this (in wall time) is slowed down by default

  function countUpTo(sorted, t) {  // number of values ≤ t in an ascending array
    var lo = 0, hi = sorted.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (sorted[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  // Whether the clock moving from `from` to `to` passes a mark (so more than the clocks must be redrawn);
  // a negative `from` (nothing drawn yet) or a clock going back always counts.
  function crossedMark(marks, from, to) {
    if (from < 0 || to < from) return true;
    var i = countUpTo(marks, from);
    return i < marks.length && marks[i] <= to;
  }
  // The first mark after t (dir > 0; tEnd when none) or the last mark before t (dir < 0; 0 when none).
  function stepMark(marks, t, dir, tEnd) {
    var i;
    if (dir > 0) { for (i = 0; i < marks.length; i++) if (marks[i] > t) return marks[i]; return tEnd; }
    for (i = marks.length - 1; i >= 0; i--) if (marks[i] < t) return marks[i];
    return 0;
  }
  // Real time, unless the run is too short to follow: then the gentlest slow-down of SPEEDS that makes it last
  // MIN_FOLLOWABLE_S seconds (the slowest one when none does).
  function defaultSpeed(tEnd) {
    var speed = 1;
    if (tEnd < MIN_FOLLOWABLE_S / 2) {
      for (var i = 0; i < SPEEDS.length; i++) { if (SPEEDS[i] <= 1 && tEnd / SPEEDS[i] >= MIN_FOLLOWABLE_S) { speed = SPEEDS[i]; break; } }
      if (tEnd / speed < MIN_FOLLOWABLE_S) speed = SPEEDS[SPEEDS.length - 1];
    }
    return speed;
  }
  function niceStep(raw) {  // a tick step of 1, 2 or 5 times a power of ten, at least `raw`
    var p = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  // An SVG path of a cumulative count: one step up at each time, from 0 to tEnd (x, yv: time and count → px).
  function stepPath(times, x, yv, tEnd) {
    var ts = times.slice().sort(function (a, b) { return a - b; });
    var d = "M" + x(0) + " " + yv(0), k = 0;
    ts.forEach(function (t) { d += " H" + x(t); k++; d += " V" + yv(k); });
    return d + " H" + x(tEnd);
  }
  // The time under x pixels of a chart whose time axis runs from L to W - R, clamped to [0, tEnd].
  function timeAtX(px, L, W, R, tEnd) {
    var t = (px - L) / (W - L - R) * tEnd;
    return Math.max(0, Math.min(tEnd, t));
  }

  return { SPEEDS: SPEEDS, MIN_FOLLOWABLE_S: MIN_FOLLOWABLE_S, countUpTo: countUpTo, crossedMark: crossedMark,
           stepMark: stepMark, defaultSpeed: defaultSpeed, niceStep: niceStep, stepPath: stepPath, timeAtX: timeAtX };
});
