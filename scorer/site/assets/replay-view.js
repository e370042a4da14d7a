/* The static parts of the replay's view for the selected trace (window.SemifReplayView): the pickers, the
   headline and the verdict, the numbers, the notes, the lanes and the criteria rows, and one row's typed decision.
   build.py renders the same markup for the first trace at t = 0 (scorer/site/assets/demo.html.j2); these take it over or
   rebuild it. Each function gets the selection (``cur``, from SemifReplayPrepare.prepare) it builds for. */
(function () {
  "use strict";
  var D = window.SemifReplayDom, F = window.SemifReplayFormat, P = window.SemifReplayPrepare;
  var el = D.el, clear = D.clear, scrollable = D.scrollable;
  var fmtClock = F.fmtClock, fmtP = F.fmtP, repeatsOf = P.repeatsOf, typedCorrect = P.typedCorrect;
  var SHORT = { typed: "typed", free: "free", constrained: "constrained" };
  var $ = function (id) { return document.getElementById(id); };

  function buildPicker(entries, cur) {
    var sel = $("trace-select");
    clear(sel);
    entries.forEach(function (e, i) {
      var o = el("option", null, (e.local ? "opened: " : "") + e.label);
      o.value = String(i);
      sel.appendChild(o);
    });
    sel.disabled = entries.length < 2;
    if (cur) sel.value = String(entries.indexOf(cur.entry));
  }
  function buildRepeatPicker(cur) {
    var sel = $("repeat-select");
    clear(sel);
    var reps = repeatsOf(cur.trace);
    reps.forEach(function (r, i) {
      var o = el("option", null, "run " + (i + 1) + " of " + reps.length);
      o.value = String(r);
      sel.appendChild(o);
    });
    sel.value = String(cur.repeat);
    sel.disabled = reps.length < 2;
  }
  // The view: written by build.py for a built-in trace, computed in the page for any other (replay/verdict.js).
  function buildVerdict(cur) {
    var p = $("verdict"), v = cur.entry.view;
    D.setText($("headline"), v.headline);
    clear(p);
    v.verdict.forEach(function (s, i) {
      var span = el("span", "vs vs-" + s.lane);
      if (s.name) { span.appendChild(el("strong", null, s.name)); span.appendChild(document.createTextNode(" ")); }
      span.appendChild(document.createTextNode(s.text));
      p.appendChild(span);
      if (i < v.verdict.length - 1) p.appendChild(document.createTextNode(" "));
    });
  }
  function buildNumbers(cur) {
    var host = $("numbers"), v = cur.entry.view;
    clear(host);
    $("account").textContent = v.numbers.account;
    $("basis").textContent = v.numbers.basis;
    var thead = el("thead"), hr = el("tr");
    hr.appendChild(el("td"));
    v.numbers.columns.forEach(function (c, i) { var th = el("th", "col-" + v.numbers.keys[i], c); th.scope = "col"; hr.appendChild(th); });
    thead.appendChild(hr); host.appendChild(thead);
    var tb = el("tbody");
    v.numbers.rows.forEach(function (r) {
      var tr = el("tr"), th = el("th", null, r.label);
      th.scope = "row"; tr.appendChild(th);
      r.cells.forEach(function (c) {
        var td = el("td", c.warn ? "warn" : null, c.text);
        if (c.note) { td.appendChild(document.createTextNode(" ")); td.appendChild(el("span", "note", c.note)); }
        tr.appendChild(td);
      });
      tb.appendChild(tr);
    });
    host.appendChild(tb);
  }
  function buildNotes(cur) {
    var notes = $("notes");
    clear(notes);
    (cur.trace.notes || []).forEach(function (n) { notes.appendChild(el("li", null, n)); });
    var m = cur.entry, meta = $("trace-meta");
    clear(meta);
    meta.appendChild(document.createTextNode((cur.trace.experiment.title ? cur.trace.experiment.title + " · " : "") +
      cur.trace.experiment.id + " · " + (m.local ? "opened from your disk: " + m.fileName : "file " + m.file) + " · sha256 "));
    meta.appendChild(el("span", "hash", m.sha256 || "…"));
  }
  // The lanes and the rows: build.py renders the same markup for the first trace, which is taken over as is.
  function buildLanes(cur) {
    var host = $("lanes");
    var same = host.getAttribute("data-trace") === cur.entry.slug && !cur.entry.local &&
      host.querySelectorAll(".lane").length === 1 + cur.gens.length;
    if (!same) {
      clear(host);
      host.appendChild(laneSection("typed", "Typed decisions"));
      cur.gens.forEach(function (g) { host.appendChild(laneSection(g.key, g.name)); });
      host.setAttribute("data-trace", cur.entry.local ? "" : cur.entry.slug);
    }
    host.className = "lanes lanes-" + (1 + cur.gens.length);
    var q = function (key, sel) { return host.querySelector(".lane[data-lane=" + key + "] " + sel); };
    cur.typedDom = { watch: q("typed", ".watch"), status: q("typed", ".status") };
    cur.gens.forEach(function (g) {
      g.dom = { watch: q(g.key, ".watch"), status: q(g.key, ".status"), ttft: q(g.key, ".ttft"), stream: q(g.key, ".stream"),
                toks: q(g.key, ".toks"), info: q(g.key, ".tokinfo"), verdict: q(g.key, ".verdict") };
      clear(g.dom.toks);
      g.shown = 0; g.sel = -1; g.cursor = null;
      g.dom.info.textContent = "Tap a token, or focus this box and use ←/→, for its time and probability.";
    });
  }
  function laneSection(key, name) {
    var s = el("section", "lane lane-" + key);
    s.setAttribute("data-lane", key);
    s.setAttribute("aria-labelledby", "lane-" + key + "-h");
    var h = el("header"), h2 = el("h2", null, name);
    h2.id = "lane-" + key + "-h";
    h.appendChild(h2); h.appendChild(el("span", "watch", fmtClock(0)));
    s.appendChild(h);
    if (key !== "typed") { var badge = el("span", "ttft"); badge.hidden = true; s.appendChild(badge); }
    s.appendChild(el("p", "status", key === "typed" ? "rendering and encoding the prompts…" : "rendering and encoding the prompt…"));
    if (key !== "typed") {
      var box = scrollable(el("div", "stream"), name + ": tokens so far");
      box.appendChild(el("div", "toks"));
      s.appendChild(box);
      var info = el("p", "tokinfo"); info.setAttribute("aria-live", "polite"); s.appendChild(info);
      s.appendChild(el("p", "verdict wait", "array not finished yet"));
    }
    return s;
  }
  function buildCriteria(cur) {
    var ol = $("criteria");
    var keys = cur.gens.map(function (g) { return g.key; });
    // the rows build.py rendered (at t = 0) are taken over once, for their trace; any later change rebuilds
    var same = ol.hasAttribute("data-server") && ol.getAttribute("data-trace") === cur.entry.slug && !cur.entry.local;
    ol.removeAttribute("data-server");
    ol.className = "crits lanes-" + (1 + keys.length);
    if (!same) {
      clear(ol);
      var head = el("li", "crit head-row");
      head.setAttribute("aria-hidden", "true");
      head.appendChild(el("span", "cid", "id"));
      head.appendChild(el("span", "q", "criterion and label"));
      head.appendChild(el("span", "dec", "typed decision"));
      keys.forEach(function (k) { head.appendChild(el("span", "gv", SHORT[k])); });
      ol.appendChild(head);
      cur.criteria.forEach(function (c) { ol.appendChild(criterionRow(c, keys)); });
      ol.setAttribute("data-trace", cur.entry.local ? "" : cur.entry.slug);
    }
    var lis = ol.querySelectorAll("li.crit[data-id]");
    cur.rows = cur.criteria.map(function (c, k) {
      var li = lis[k];
      var gv = {};
      keys.forEach(function (key) { gv[key] = li.querySelector(".gv[data-lane=" + key + "] .v"); });
      // taken over at t = 0 as rendered: the first render need not rewrite them
      var gshown = {};
      keys.forEach(function (key) { gshown[key] = same ? "pending|…" : null; });
      return { li: li, dec: li.querySelector(".dec"), gv: gv, c: c, k: k, shown: same ? false : null, gshown: gshown };
    });
    return same;
  }
  function criterionRow(c, keys) {  // the same markup as scorer/site/assets/demo.html.j2 renders for the first trace
    var li = el("li", "crit");
    li.setAttribute("data-id", c.id);
    li.appendChild(el("span", "cid", c.id));
    var labelled = c.label !== undefined && c.label !== null;
    var q = el("span", "q", c.question + (labelled ? " " : ""));
    if (labelled) q.appendChild(el("span", "lbl", "label: " + c.label));
    li.appendChild(q);
    var dec = el("span", "dec");
    dec.appendChild(el("span", "wait", "waiting…"));
    li.appendChild(dec);
    keys.forEach(function (k) {
      var gv = el("span", "gv");
      gv.setAttribute("data-lane", k);
      gv.appendChild(el("span", "k", SHORT[k] + ":"));
      gv.appendChild(document.createTextNode(" "));
      gv.appendChild(el("span", "v", "…"));
      li.appendChild(gv);
    });
    return li;
  }

  // one row's typed decision: the bar of raw probabilities, the choice, the calibrated one, right or wrong
  function rightWrong(correct, judged) {  // judged: "calibrated" or "raw", the choice the mark is about
    if (correct === null || correct === undefined) return null;
    var mark = el("span", "mark " + (correct ? "right" : "wrong"), (correct ? "✓ right" : "✗ wrong") + " (" + judged + ")");
    mark.title = "the " + judged + " choice against the label";
    return mark;
  }
  function decisionNodes(d, c) {
    var frag = document.createDocumentFragment();
    var bar = el("span", "bar"), title = [];
    d.option_ids.forEach(function (id, i) {
      var tied = d.tie && d.tied_option_ids.indexOf(id) >= 0;
      var seg = el("span", "seg" + (tied ? " tie" : !d.tie && id === d.choice ? " on" : ""));
      seg.style.width = (100 * d.probabilities[i]).toFixed(2) + "%";
      bar.appendChild(seg);
      title.push(id + " " + d.probabilities[i].toFixed(3));
    });
    bar.title = "raw " + title.join(" · ") + " · margin " + d.margin.toFixed(3) + " · allowed mass " + d.allowed_token_mass.toFixed(3);
    bar.setAttribute("role", "img");
    bar.setAttribute("aria-label", "raw probabilities: " + title.join(", "));
    frag.appendChild(bar);
    var pmax = Math.max.apply(null, d.probabilities);
    var ch = el("span", "choice" + (d.tie ? " tie" : ""), (d.tie || d.choice === null ? "tie " : d.choice + " ") + fmtP(pmax));
    ch.title = "raw choice " + (d.choice === null ? "none (tie)" : d.choice) + " · p " + pmax.toFixed(3) + " · margin " + d.margin.toFixed(3);
    frag.appendChild(ch);
    if (d.calibrated) {
      var cp = Math.max.apply(null, d.calibrated.probabilities);
      var cal = el("span", "cal", "cal. " + (d.calibrated.tie || d.calibrated.choice === null ? "tie " : d.calibrated.choice + " ") + fmtP(cp));
      cal.title = "calibrated: " + d.option_ids.map(function (id, i) { return id + " " + d.calibrated.probabilities[i].toFixed(3); }).join(" · ");
      frag.appendChild(cal);
    }
    var mark = rightWrong(typedCorrect(d, c), d.calibrated ? "calibrated" : "raw");
    if (mark) frag.appendChild(mark);
    return frag;
  }

  window.SemifReplayView = { SHORT: SHORT, buildPicker: buildPicker, buildRepeatPicker: buildRepeatPicker,
    buildVerdict: buildVerdict, buildNumbers: buildNumbers, buildNotes: buildNotes, buildLanes: buildLanes,
    buildCriteria: buildCriteria, decisionNodes: decisionNodes };
})();
