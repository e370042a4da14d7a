/* The replay's "Run details": everything needed to audit the shown run (model and revision, machine,
   versions, every prompt and its hashes, the inputs, the runs of this repeat, the trace's own summary and
   checksums), built from the trace when the reader opens the section. Trace strings reach the page only as
   text (textContent), never as markup. Used by replay.js as window.SemifDetails.build(host, cur, helpers). */
(function () {
  "use strict";
  var el, scrollable;

  function kvTable(obj, skip) {
    var table = el("table", "kv"), tb = el("tbody");
    Object.keys(obj || {}).forEach(function (k) {
      if (skip && skip.indexOf(k) >= 0) return;
      var tr = el("tr"), thk = el("th", null, k);
      thk.setAttribute("scope", "row");
      tr.appendChild(thk);
      var td = el("td");
      fillValue(td, obj[k]);
      tr.appendChild(td); tb.appendChild(tr);
    });
    table.appendChild(tb);
    return table;
  }
  function fillValue(td, v) {
    if (v === null || v === undefined) { td.textContent = "—"; return; }
    if (typeof v === "string") {
      if (/^[0-9a-f]{64}$/.test(v)) { td.className = "hash"; td.textContent = v; }
      else if (v.indexOf("\n") >= 0 || v.length > 160) { td.appendChild(folded(v.length + " characters", scrollable(el("pre", "state-text", v), v.length + " characters"))); }
      else td.textContent = v;
      return;
    }
    if (typeof v !== "object") { td.textContent = String(v); return; }
    if (Array.isArray(v) && !v.length) { td.textContent = "none"; return; }
    if (Array.isArray(v) && v.every(function (x) { return x === null || typeof x !== "object"; })) {
      var txt = v.map(function (x) { return x === null ? "null" : String(x); }).join(", ");
      if (v.length > 8) td.appendChild(folded(v.length + " values", el("pre", "hash", txt)));
      else td.textContent = txt;
      return;
    }
    var keys = Array.isArray(v) ? null : Object.keys(v);
    if (keys && keys.length <= 12 && keys.every(function (k) { return v[k] === null || typeof v[k] !== "object"; })) {
      td.appendChild(kvTable(v));
      return;
    }
    var count = keys ? keys.length : v.length;
    var what = count + (keys ? (count === 1 ? " field" : " fields") : (count === 1 ? " item" : " items"));
    td.appendChild(folded(what, scrollable(el("pre", "state-text", JSON.stringify(v, null, 1)), what + " as JSON")));
  }
  function folded(summary, body) {
    var d = el("details");
    d.appendChild(el("summary", null, summary));
    d.appendChild(body);
    return d;
  }
  function card(title, nodes) {
    var c = el("div", "card");
    c.appendChild(el("h3", null, title));
    nodes.forEach(function (n) { if (n) c.appendChild(n); });
    return c;
  }
  function list(items) { var ul = el("ul"); items.forEach(function (s) { ul.appendChild(el("li", null, s)); }); return ul; }
  function table(label, columns, rows, hashFrom) {
    var t = el("table"), th = el("thead"), hr = el("tr");
    columns.forEach(function (h) { var c = el("th", null, h); c.setAttribute("scope", "col"); hr.appendChild(c); });
    th.appendChild(hr); t.appendChild(th);
    var tb = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (v, j) { row.appendChild(el("td", hashFrom !== undefined && j >= hashFrom ? "hash" : null, v === undefined || v === null ? "—" : v)); });
      tb.appendChild(row);
    });
    t.appendChild(tb);
    var wrap = scrollable(el("div", "table-scroll"), label);
    wrap.appendChild(t);
    return wrap;
  }
  function events(run) { return run.events.map(function (x) { return x.name + " " + x.t.toFixed(4); }); }

  function fileCard(cur, h) {
    var e = cur.entry, tr = cur.trace;
    var file = { file: e.local ? e.fileName : e.file, format: tr.format, bytes: e.bytes, sha256: e.sha256 || "…" };
    if (!e.local) file.source = e.source;
    var verified = el("p", "small");
    var said = function (c) {
      verified.textContent = c.ok ? "Schema and checksums checked in this browser: OK." : "Checked in this browser: " + c.problems.join("; ");
    };
    var nodes = [kvTable(file), kvTable(tr.checksums), verified];
    if (e.checks) said(e.checks);
    else {
      verified.textContent = "The site build checked this trace against its schema and checksums. ";
      var again = el("button", null, "Check it again in this browser");
      again.type = "button";
      again.addEventListener("click", function () {
        again.disabled = true; again.textContent = "checking…";
        h.check().then(function (c) { said(c); }, function (err) { verified.textContent = "The checker could not be loaded: " + err.message; });
      });
      nodes.push(again);
    }
    return card("File and checksums", nodes);
  }
  function runCard(cur) {
    var rt = cur.typed;
    var nodes = [el("h3", null, "typed run"), kvTable({ start_s: rt.start_s, total_s: rt.total_s, events: events(rt), tokens: rt.tokens })];
    cur.gens.forEach(function (g) {
      var r = g.run;
      var shown = { start_s: r.start_s, ttft_s: r.ttft_s, total_s: r.total_s, events: events(r), output_tokens: r.output_tokens,
        decode_steps: r.decode_steps, stop_reason: r.stop_reason, valid: r.valid, complete: r.complete, error: r.error };
      ["verdict", "capped", "masked_tokens", "grammar_s"].forEach(function (k) { if (r[k] !== undefined) shown[k] = r[k]; });
      shown.text = r.text;
      nodes.push(el("h3", null, g.name.toLowerCase() + " run"), kvTable(shown));
    });
    return card("This repeat (run " + (cur.repeat + 1) + ")", nodes);
  }

  function build(host, cur, helpers) {
    el = helpers.el; scrollable = helpers.scrollable;
    while (host.firstChild) host.removeChild(host.firstChild);
    var tr = cur.trace;
    host.appendChild(fileCard(cur, helpers));
    host.appendChild(card("Model", [kvTable(tr.model)]));
    host.appendChild(card("Machine and versions", [kvTable(tr.machine), el("h3", null, "versions"), kvTable(tr.versions)]));
    host.appendChild(card("Experiment and protocol", [kvTable(tr.experiment), el("h3", null, "protocol"), kvTable(tr.protocol),
      tr.checks && tr.checks.typed_vs_direct ? el("h3", null, "typed vs direct (untimed check)") : null,
      tr.checks && tr.checks.typed_vs_direct ? kvTable(tr.checks.typed_vs_direct) : null]));
    if (tr.calibration) host.appendChild(card("Calibration of the typed decisions", [kvTable(tr.calibration)]));
    var pt = tr.prompts.typed;
    var perCrit = folded("per-criterion prompts and hashes", table("per-criterion prompts and hashes",
      ["criterion", "suffix tokens", "input tokens", "prompt sha256", "tokens sha256"],
      tr.inputs.criteria.map(function (c, i) { return [c.id, pt.suffix_tokens[i], pt.input_tokens[i], pt.prompt_sha256[i], pt.tokens_sha256[i]]; }), 3));
    var suffixes = folded("suffix texts", scrollable(el("pre", "state-text", (pt.suffix_texts || []).map(function (s, i) {
      return "[" + (tr.inputs.criteria[i] || {}).id + "] " + s;
    }).join("\n")), "suffix texts"));
    host.appendChild(card("Typed prompt", [kvTable(pt, ["suffix_tokens", "suffix_texts", "input_tokens", "prompt_sha256", "tokens_sha256"]), perCrit, suffixes]));
    host.appendChild(card(tr.prompts.constrained ? "Generated prompt (both generated lanes)" : "Generated prompt", [kvTable(tr.prompts.generated)]));
    if (tr.prompts.constrained) host.appendChild(card("Constrained decoding (grammar)", [kvTable(tr.prompts.constrained)]));
    host.appendChild(card("What differs between the paths", [list(tr.differences || [])]));
    var inp = tr.inputs;
    var st = scrollable(el("pre", "state-text", typeof inp.state === "string" ? inp.state : JSON.stringify(inp.state, null, 2)), "state");
    host.appendChild(card("Inputs", [kvTable(inp.title === undefined ? { id: inp.id, sha256: inp.sha256 } : { id: inp.id, title: inp.title, sha256: inp.sha256 }),
      el("h3", null, "state"), st, el("h3", null, "criteria"),
      table("the inputs' criteria", ["id", "question", "label"], inp.criteria.map(function (c) { return [c.id, c.question, c.label || "—"]; }))]));
    host.appendChild(runCard(cur));
    host.appendChild(card("Summary (all repeats)", [kvTable(tr.summary)]));
  }

  window.SemifDetails = { build: build };
})();
