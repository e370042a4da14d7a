/* A live run as a semif-trace-v2 document: what the page measured (scorer/formats/schemas/trace-v2.json, field guide
   trace-v2.md), assembled and derived as scorer.studies.versus writes a trace, so that `semif trace verify` accepts
   it and the replay plays it. Every number comes from the run: the engine's log-probabilities, the page's clock,
   the page's tokenizer. What a browser cannot measure is null and says so (prompts.constrained.compile_s and
   the constrained runs' grammar_s: the engine reports no grammar time), in a trace whose machine.browser block
   names the browser, its threads and the WebAssembly engine; verify allows those nulls only there.

   Checksums are sha256 over canonical JSON as Python writes it (orjson, keys sorted): the same key order and
   string escapes as JSON.stringify, and numbers as orjson writes them (1e-6, 1e+16, a whole float as 12.0).
   The document is written in that form too, so Python reads back exactly the values hashed here.
   Pure: tests/site/test_live_trace.py builds traces from recorded runs in Node and verifies them in Python.
   In the page: window.SemifLiveTrace. */
(function (root, factory) {
  "use strict";
  var node = typeof module === "object" && module.exports;
  var get = function (name, global) { return function () { return node ? require(name) : root[global]; }; };
  var api = factory(get("./sha256.js", "SemifLiveSha256"), get("./lanes.js", "SemifLiveLanes"),
                    get("./trace-summary.js", "SemifLiveTraceSummary"));
  if (node) module.exports = api;
  else root.SemifLiveTrace = api;
})(this, function (Sha, LN, SM) {
  "use strict";

  var TOP_K = 5;
  var GREEDY_P_RTOL = 1e-4;  // scorer.trace.evidence: a token tied with the top-1 is still the greedy choice

  function TraceError(message) { var e = new Error(message); e.name = "TraceError"; return e; }

  // --- canonical JSON ------------------------------------------------------------------------------------
  // orjson's layout of a float: decimal from 1e-5 up to 1e16, else d.ddde±x; a whole float keeps ".0".
  function floatText(x) {
    if (!isFinite(x)) throw TraceError("a trace holds finite numbers only (got " + x + ")");
    if (x === 0) return "0.0";
    var a = Math.abs(x);
    if (a < 1e-5 || a >= 1e16) {
      var m = x.toExponential().split("e");
      return m[0] + "e" + (m[1][0] === "-" ? m[1] : "+" + m[1].replace("+", ""));
    }
    var s = String(x);
    return /[.e]/.test(s) ? s : s + ".0";
  }
  function numberText(x) { return Number.isInteger(x) && Math.abs(x) < 1e16 ? String(x) : floatText(x); }
  function canonical(v) {
    if (v === null) return "null";
    if (v instanceof SM().PyFloat) return floatText(v.x);
    if (typeof v === "number") return numberText(v);
    if (typeof v === "boolean") return v ? "true" : "false";
    if (typeof v === "string") return JSON.stringify(v);
    if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
    return "{" + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ":" + canonical(v[k]); }).join(",") + "}";
  }
  function sha(text) { return Sha().hex(new TextEncoder().encode(text)); }
  function shaJson(v) { return sha(canonical(v)); }
  function tokensSha(ids) {  // int32 little-endian, as scorer.prompting.prompt.sha256_tokens
    var b = new Uint8Array(ids.length * 4), dv = new DataView(b.buffer);
    ids.forEach(function (x, i) { dv.setInt32(4 * i, x, true); });
    return Sha().hex(b);
  }
  function inputsDigest(inputs) { return shaJson({ id: inputs.id, state: inputs.state, criteria: inputs.criteria }); }
  function checksums(doc) {
    var body = {};
    Object.keys(doc).forEach(function (k) { if (k !== "checksums") body[k] = doc[k]; });
    return { inputs_sha256: inputsDigest(doc.inputs), runs_sha256: shaJson(doc.runs), content_sha256: shaJson(body) };
  }

  // scorer.trace.format._safe and experiment_id: the trace's name from its input, model, backend and device.
  function safe(name) {
    var base = name.replace(/\/+$/, "").split("/").pop();
    var short = base.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "model";
    return short === name ? name : short + "-" + sha(name).slice(0, 8);
  }
  function experimentId(inputId, key, backend, device, created) {
    return "versus-" + [inputId, key, backend, device].map(safe).join("-") + "-" + created.replace(/[-:]/g, "");
  }

  // --- runs ------------------------------------------------------------------------------------------------
  function r6(x) { return SM().round(x, 6); }
  function p(logprob) { return Math.min(Math.exp(logprob), 1); }
  function topK(entries) {
    if (entries.length < TOP_K) throw TraceError("the engine gave " + entries.length + " alternatives where the trace records " + TOP_K);
    return entries.slice(0, TOP_K).map(function (e) { return { id: e.id, text: e.text, p: p(e.logprob) }; });
  }
  function events(names, times) { return names.map(function (n, i) { return { name: n, t: r6(times[i]) }; }); }

  // One typed decision from the slots' log-probabilities (the engine's log-softmax: the logits up to a constant,
  // which the softmax cancels) and the engine's top alternatives at the answer position.
  function decision(c, d, slotIds, letters, options, pass) {
    var lp = d.slot_logprobs, top = Math.max.apply(null, lp);
    var ex = lp.map(function (x) { return Math.exp(x - top); }), tot = ex.reduce(function (a, b) { return a + b; }, 0);
    var probs = ex.map(function (x) { return x / tot; });
    var order = probs.map(function (_, i) { return i; }).sort(function (a, b) { return lp[b] - lp[a] || a - b; });
    var tie = probs[order[0]] === probs[order[1]];
    var tied = tie ? options.filter(function (_, i) { return probs[i] === probs[order[0]]; }) : [];
    var first = d.top[0];
    return {
      criterion_id: c.id, t_available: r6(d.t_available), pass: pass, escalated: false, option_ids: options.slice(),
      letters: letters.slice(), option_logits: lp.slice(), probabilities: probs, choice: tie ? null : options[order[0]],
      margin: probs[order[0]] - probs[order[1]], tie: tie, tied_option_ids: tied,
      allowed_token_mass: Math.min(lp.reduce(function (a, x) { return a + Math.exp(x); }, 0), 1),
      full_vocab_argmax: { token_id: first.id, text: first.text, is_slot: slotIds.indexOf(first.id) >= 0 },
      top_k: topK(d.top), label: null, correct: null, calibrated: null,
    };
  }

  // scorer.scoring.generation.string_value_starts and _locate_answers: which token starts value k (code points, as Python).
  function answerIndex(texts) {
    var text = Array.from(texts.join("")), starts = [], depth = 0, inStr = false, esc = false;
    text.forEach(function (ch, pos) {
      if (inStr) {
        if (esc) esc = false; else if (ch === "\\") esc = true; else if (ch === '"') inStr = false;
        return;
      }
      if (ch === '"') { inStr = true; if (depth === 1 && pos + 1 < text.length) starts.push(pos + 1); }
      else if (ch === "[" || ch === "{") depth++;
      else if (ch === "]" || ch === "}") depth--;
    });
    var at = {}, off = 0, spans = texts.map(function (t) { var s = [off, Array.from(t).length]; off += s[1]; return s; });
    starts.forEach(function (v, k) {
      for (var i = 0; i < spans.length; i++) {
        if (spans[i][1] && spans[i][0] <= v && v < spans[i][0] + spans[i][1]) { at[i] = k; break; }
      }
    });
    return at;
  }
  // scorer.scoring.generation.token_texts: decode(ids[:i+1]) minus decode(ids[:i]), "" while a character is incomplete.
  function tokenTexts(decode, ids) {
    var out = [], acc = "";
    ids.forEach(function (_, i) {
      var cur = decode(ids.slice(0, i + 1));
      if (i < ids.length - 1 && cur.slice(-1) === "\ufffd") { out.push(""); return; }
      var keep = acc.length;
      if (cur.slice(0, acc.length) !== acc) { keep = 0; while (keep < acc.length && acc[keep] === cur[keep]) keep++; }
      out.push(cur.slice(keep));
      acc = cur;
    });
    return out;
  }

  function generatedRun(path, lane, rec, typedChoices) {
    var n = rec.criteria.length, stops = rec.stop_token_ids, toks = lane.tokens;
    if (!toks.length) throw TraceError("the " + path + " lane generated no token");
    var ids = toks.map(function (t) { return t.id; });
    var stopLast = stops.indexOf(ids[ids.length - 1]) >= 0;
    var capped = !stopLast;
    if (capped && toks.length !== lane.max_new_tokens) {
      throw TraceError("the " + path + " lane stopped after " + toks.length + " tokens without an end-of-turn token or its " +
                       lane.max_new_tokens + "-token limit");
    }
    var body = stopLast ? ids.slice(0, -1) : ids;
    var texts = tokenTexts(rec.decode, body);
    if (stopLast) texts.push(rec.decode([ids[ids.length - 1]]));
    var at = answerIndex(stopLast ? texts.slice(0, -1) : texts);
    var masked = 0, constrained = path === "constrained";
    var tokens = toks.map(function (t, i) {
      var top = topK(t.top), mine = p(t.logprob);
      var over = constrained && top[0].id !== t.id && Math.abs(mine - top[0].p) > GREEDY_P_RTOL * top[0].p;
      if (over) masked++;
      return { i: i, t: r6(t.t), id: t.id, text: texts[i], p: mine, top_k: top, stop: stops.indexOf(t.id) >= 0,
               answer_index: i in at ? at[i] : null, yes_no: null, masked: constrained ? over : null,
               free_argmax: over ? { id: top[0].id, text: top[0].text, p: top[0].p } : null };
    });
    var text = (stopLast ? texts.slice(0, -1) : texts).join("");
    var j = LN().judge(text, n);
    var total = r6(lane.total_s);
    return {
      path: path, repeat: 0, warmup: false, start_s: r6(lane.start_s),
      events: events(["encoded", "first_token", "done"], [lane.encoded_s, toks[0].t, lane.total_s]),
      ttft_s: r6(toks[0].t), total_s: total, tokens: tokens, output_tokens: tokens.length, decode_steps: tokens.length - 1,
      stop_reason: capped ? "max_new_tokens" : "end_of_turn", text: text, valid: j.valid, complete: j.complete,
      error: j.error, parsed: j.parsed, capped: capped, verdict: LN().verdict(j, capped, lane.max_new_tokens),
      correct: rec.criteria.map(function () { return null; }), masked_tokens: constrained ? masked : null, grammar_s: null,
      agreement: typedChoices.map(function (c, i) { return j.complete && c !== null ? j.parsed[i] === c : null; }),
    };
  }

  function typedRun(rec) {
    var ty = rec.typed, prefix = ty.prefix_ids.length;
    var decisions = rec.criteria.map(function (c, k) {
      return decision(c, ty.decisions[k], ty.slot_token_ids, ty.letters, rec.options, k);
    });
    var suffix = ty.prompts.reduce(function (a, q) { return a + q.ids.length - prefix; }, 0);
    return {
      path: "typed", repeat: 0, warmup: false, start_s: 0,
      events: events(["encoded", "prefill_done", "suffix_done", "decisions_available"],
                     [ty.encoded_s, ty.prefill_done_s, ty.suffix_done_s, ty.suffix_done_s]),
      total_s: r6(ty.suffix_done_s), tokens: { prefix: prefix, suffix: suffix, escalated: 0, processed: prefix + suffix,
                                                output: 0, passes: rec.criteria.length },
      escalated: 0, decisions: decisions,
    };
  }

  // --- the document ----------------------------------------------------------------------------------------
  function promptsBlock(rec) {
    var ty = rec.typed, pre = ty.prefix_ids, preText = rec.decode(pre), values = rec.criteria.map(function () { return rec.options.slice(); });
    var typed = { version: ty.version, template: rec.template, letters: ty.letters.slice(), slot_token_ids: ty.slot_token_ids.slice(),
                  prefix_tokens: pre.length, prefix_sha256: tokensSha(pre), prefix_text: preText, suffix_tokens: [], suffix_texts: [],
                  input_tokens: [], prompt_sha256: [], tokens_sha256: [] };
    ty.prompts.forEach(function (q, k) {
      var rest = q.ids.slice(pre.length), restText = rec.decode(rest);
      if (pre.some(function (x, i) { return q.ids[i] !== x; }) || preText + restText !== q.text) {
        throw TraceError("criterion " + rec.criteria[k].id + "'s prompt does not split into the shared prefix and its own suffix");
      }
      typed.suffix_tokens.push(rest.length);
      typed.suffix_texts.push(restText);
      typed.input_tokens.push(q.ids.length);
      typed.prompt_sha256.push(sha(q.text));
      typed.tokens_sha256.push(tokensSha(q.ids));
    });
    var g = rec.generated, grammar = LN().gbnf(values);
    return {
      typed: typed,
      generated: { version: g.version, template: rec.template, text: g.text, prompt_sha256: sha(g.text), tokens_sha256: tokensSha(g.ids),
                   input_tokens: g.ids.length, max_new_tokens: rec.lanes.free.max_new_tokens,
                   stop_token_ids: rec.stop_token_ids.slice().sort(function (a, b) { return a - b; }) },
      constrained: { engine: rec.grammar_engine, grammar_format: "gbnf", grammar: grammar, grammar_sha256: sha(grammar), values: values,
                     max_new_tokens: LN().constrainedMaxTokens(values), compile_s: null, rule: LN().rule(values) },
    };
  }

  // build(rec) → { doc, text }: the trace and its file's text. rec is what the page recorded (see live-page.js).
  function build(rec) {
    if (rec.options.join(",") !== "yes,no") throw TraceError("a semif-trace-v2 records yes/no criteria only (the options were " + rec.options.join(", ") + ")");
    var state = rec.state.replace(/^\s+|\s+$/g, "");
    var inputs = { id: rec.input_id, state: state, criteria: rec.criteria.map(function (c) { return { id: c.id, question: c.question }; }) };
    inputs.sha256 = inputsDigest(inputs);
    var typed = typedRun(rec), choices = typed.decisions.map(function (d) { return d.choice; });
    var runs = [typed, generatedRun("free", rec.lanes.free, rec, choices), generatedRun("constrained", rec.lanes.constrained, rec, choices)];
    var prompts = promptsBlock(rec), m = rec.model, last = runs[runs.length - 1];
    var doc = {
      format: "semif-trace-v2",
      experiment: { id: experimentId(inputs.id, m.key, m.backend, m.device, rec.created_utc), kind: "versus", created_utc: rec.created_utc,
                    title: "Typed vs free vs constrained generation in a browser: " + inputs.criteria.length + " yes/no criteria on " + m.key,
                    command: null, wall_s: r6(last.start_s + last.total_s) },
      machine: rec.machine, versions: rec.versions, model: m, inputs: inputs, prompts: prompts, calibration: null,
      differences: rec.differences, notes: rec.notes,
      protocol: { warmup: 0, repeats: 1, order: "typed, then free, then constrained, once each (no warm-up): one run in the visitor's browser",
                  lanes: ["typed", "free", "constrained"], typed_mode: "shared", exact: { enabled: false },
                  decoding: "greedy (temperature 0), KV cache, stop at the model's end-of-generation tokens",
                  grammar_masking: "constrained: every step samples greedily among the tokens the grammar allows (llama.cpp's grammar sampler); " +
                                   "a token's p and top_k are the model's own distribution before the grammar",
                  max_new_tokens: prompts.generated.max_new_tokens, constrained_max_new_tokens: prompts.constrained.max_new_tokens,
                  top_k: TOP_K, max_batch_tokens: 1 },
      checks: {}, runs: runs,
    };
    doc.summary = SM().summary(doc);
    doc.checksums = checksums(doc);
    if (doc.inputs.sha256 !== doc.checksums.inputs_sha256) throw TraceError("inputs hash twice to different values");
    return { doc: doc, text: canonical(doc) + "\n" };
  }

  return { build: build, canonical: canonical, checksums: checksums, experimentId: experimentId, safe: safe, tokensSha: tokensSha,
           tokenTexts: tokenTexts, answerIndex: answerIndex, floatText: floatText, TOP_K: TOP_K, TraceError: TraceError };
});
