/* The replay's timeline chart (window.SemifReplayChart): the phases and tokens of every lane and the
   cumulative answers, drawn once for the selected run; only the playhead and the veil over the future move. */
(function () {
  "use strict";
  var D = window.SemifReplayDom, F = window.SemifReplayFormat, P = window.SemifReplayPrepare, T = window.SemifReplayTimeline;
  var svgEl = D.svgEl, clear = D.clear, fmtS = F.fmtS, fmtTick = F.fmtTick, plural = F.plural, eventT = P.eventT;
  var niceStep = T.niceStep, stepPath = T.stepPath, SHORT = window.SemifReplayView.SHORT;

  function draw(host, cur) {  // the chart for the selected run; returns what playhead and timeAt need
    clear(host);
    var W = Math.max(300, Math.round(host.clientWidth || 800));
    var narrow = W < 560;
    var L = narrow ? 76 : 96, R = 14, top = 8, laneH = 20, gap = 12;
    var yT = top + 6, nG = cur.gens.length;
    var yGs = cur.gens.map(function (_, i) { return yT + (laneH + gap) * (i + 1); });
    var yC = yT + (laneH + gap) * (nG + 1) + 12, cH = narrow ? 90 : 110, yAxis = yC + cH + 4;
    var H = yAxis + 26;
    var tEnd = cur.tEnd || 1;
    var x = function (t) { return L + (W - L - R) * (t / tEnd); };
    var typed = cur.typed, N = cur.criteria.length;
    var svg = svgEl("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img" });
    svg.setAttribute("aria-label", "Timeline: typed decisions at " + fmtS(cur.firstDecision) + "; " +
      cur.gens.map(function (g) { return g.name.toLowerCase() + ": first token at " + fmtS(g.ttft) + ", finished at " + fmtS(g.done); }).join("; "));
    var step = niceStep(tEnd / (narrow ? 4 : 8));
    var axis = svgEl("g", { "class": "axis" });
    for (var s = 0; s <= tEnd + 1e-12; s += step) {
      axis.appendChild(svgEl("line", { x1: x(s), x2: x(s), y1: yT - 4, y2: yAxis, "class": "grid" }));
      axis.appendChild(svgEl("text", { x: x(s), y: yAxis + 14, "text-anchor": "middle" }, fmtTick(s, step)));
    }
    axis.appendChild(svgEl("text", { x: W - R, y: yAxis + 14, "text-anchor": "end" }, "s"));
    svg.appendChild(axis);
    svg.appendChild(svgEl("text", { x: 0, y: yT + 14 }, "typed"));
    var labels = [];  // phase labels, drawn last so the ticks do not cover them
    var tEnc = eventT(typed, "encoded") || 0, tPre = eventT(typed, "prefill_done") || tEnc, tSuf = eventT(typed, "suffix_done") || cur.typedDone;
    lane(svg, x, yT, laneH, [[0, tEnc, "ph-typed", "encode"], [tEnc, tPre, "ph-typed", "prefill state"], [tPre, tSuf, "ph-typed-main", "score criteria"]], labels);
    var seenT = {};
    typed.decisions.forEach(function (d) {
      if (seenT[d.t_available]) return;
      seenT[d.t_available] = true;
      var cx = x(d.t_available), cy = yT + laneH / 2;
      var n = typed.decisions.filter(function (o) { return o.t_available === d.t_available; }).length;
      var dm = svgEl("path", { d: "M" + cx + " " + (cy - 7) + " l7 7 l-7 7 l-7 -7 z", "class": "tick-typed" });
      dm.appendChild(svgEl("title", {}, plural(n, "decision") + " available at " + fmtS(d.t_available)));
      svg.appendChild(dm);
    });
    cur.gens.forEach(function (g, i) {
      var y = yGs[i], cls = g.key === "constrained" ? "con" : "gen";
      svg.appendChild(svgEl("text", { x: 0, y: y + 14 }, SHORT[g.key]));
      var gEnc = eventT(g.run, "encoded") || 0;
      lane(svg, x, y, laneH, [[0, gEnc, "ph-" + cls, "encode"], [gEnc, g.ttft, "ph-" + cls, "prefill"], [g.ttft, g.done, "ph-" + cls + "-main", "decode"]], labels);
      g.tokens.forEach(function (tok) {
        svg.appendChild(svgEl("line", { x1: x(tok.t), x2: x(tok.t), y1: y + 3, y2: y + laneH - 3, "class": "tick-" + cls }));
      });
    });
    labels.forEach(function (l) { svg.appendChild(l); });
    // cumulative answers: typed decisions, and each generated lane's values (only a usable array's count)
    var yv = function (k) { return yC + cH - cH * (k / Math.max(N, 1)); };
    svg.appendChild(svgEl("text", { x: 0, y: yC + 12, "class": "lane-note" }, "answers"));
    svg.appendChild(svgEl("text", { x: 0, y: yC + 26, "class": "lane-note" }, "of " + N));
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: yv(N), y2: yv(N), "class": "grid" }));
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: yv(0), y2: yv(0), "class": "grid" }));
    var typedTimes = typed.decisions.map(function (d) { return d.t_available; });
    svg.appendChild(svgEl("path", { d: stepPath(typedTimes, x, yv, tEnd), "class": "step-typed" }));
    var notes = [];
    if (typedTimes.length) notes.push("typed: " + typedTimes.length + " by " + fmtS(Math.max.apply(null, typedTimes)));
    cur.gens.forEach(function (g) {
      var times = g.usable ? Object.keys(g.answerT).map(function (k) { return g.answerT[k]; }) : [];
      svg.appendChild(svgEl("path", { d: stepPath(times, x, yv, tEnd), "class": "step-" + (g.key === "constrained" ? "con" : "gen") }));
      notes.push(SHORT[g.key] + ": " + (g.usable ? times.length + " by " + fmtS(Math.max.apply(null, times.concat([0]))) : "none usable"));
    });
    notes.forEach(function (n, i) {
      svg.appendChild(svgEl("text", { x: W - R - 2, y: yC + cH - 6 - 14 * (notes.length - 1 - i), "text-anchor": "end", "class": "lane-note" }, n));
    });
    var veil = svgEl("rect", { x: L, y: yT - 6, width: 0, height: yAxis - yT + 6, "class": "future" });
    svg.appendChild(veil);
    var ph = svgEl("line", { x1: L, x2: L, y1: yT - 6, y2: yAxis, "class": "playhead" });
    svg.appendChild(ph);
    host.appendChild(svg);
    return { svg: svg, x: x, L: L, R: R, W: W, ph: ph, veil: veil, tEnd: tEnd };
  }
  function lane(svg, x, y, h, phases, labels) {
    phases.forEach(function (p) {
      if (!(p[1] > p[0])) return;
      var w = Math.max(0.5, x(p[1]) - x(p[0]));
      var r = svgEl("rect", { x: x(p[0]), y: y, width: w, height: h, rx: 3, "class": p[2] });
      r.appendChild(svgEl("title", {}, p[3] + ": " + fmtS(p[0]) + " to " + fmtS(p[1])));
      svg.appendChild(r);
      if (w > p[3].length * 7 + 10) labels.push(svgEl("text", { x: x(p[0]) + 5, y: y + h / 2 + 4, "class": "phase-label" + (p[2] === "ph-typed-main" ? " on-dark" : "") }, p[3]));
    });
  }
  function playhead(tl, clock) {  // the only part that moves while playing
    var px = tl.x(Math.min(clock, tl.tEnd));
    tl.ph.setAttribute("x1", px); tl.ph.setAttribute("x2", px);
    tl.veil.setAttribute("x", px);
    tl.veil.setAttribute("width", Math.max(0, tl.W - tl.R - px));
  }
  function timeAt(tl, ev) {  // the time under a pointer event on the chart
    var rect = tl.svg.getBoundingClientRect();
    var px = (ev.clientX - rect.left) * (tl.W / rect.width);
    return T.timeAtX(px, tl.L, tl.W, tl.R, tl.tEnd);
  }

  window.SemifReplayChart = { draw: draw, playhead: playhead, timeAt: timeAt };
})();
