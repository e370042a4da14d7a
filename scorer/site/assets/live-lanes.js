/* The live page's generated lanes: the free and the grammar-constrained lane, run in the engine one after the
   other from the same semif-array-v1 prompt, greedy, every token shown as it arrives and recorded with the
   page's clock, its id and the engine's log-probabilities (the model's own distribution: llama.cpp reports it
   before the grammar, so a token the grammar overruled shows what the model wanted). Loaded with the pure
   modules (assets/live-modules.js) when a model is opened; live-page.js calls window.SemifLiveLanesRun.run. */
(function () {
  "use strict";
  var TOP_K = 5;  // alternatives recorded per token (SemifLiveTrace.TOP_K)

  function part(key, sel) { return document.querySelector(".lane[data-lane=" + key + "] " + sel); }

  function addToken(toks, lane, tok) {
    lane.tokens.push(tok);
    var span = document.createElement("span");
    span.className = "tok";
    span.textContent = tok.text;
    span.title = "token " + lane.tokens.length + " (id " + tok.id + ") at " + tok.t.toFixed(3) + " s, p " + Math.exp(tok.logprob).toFixed(4);
    toks.appendChild(span);
  }

  // One lane: its prompt rendered and encoded on its own clock (the "encoded" event), then generated.
  // ctx: { engine, P, PR, LN, model, state, criteria, results, signal, t0 (the run's clock), grammar, key, limit }.
  function runLane(ctx, key, limit, grammar) {
    var toks = part(key, ".toks"), status = part(key, ".status"), verdictEl = part(key, ".verdict");
    var t0 = performance.now();
    var arr = ctx.PR.renderArray(ctx.P, ctx.model, ctx.state, ctx.criteria.map(function (c) { return c.question; }));
    var lane = { start_s: (t0 - ctx.t0) / 1000, encoded_s: (performance.now() - t0) / 1000, prompt_tokens: arr.ids.length,
                 max_new_tokens: limit, tokens: [], text: "", finish_reason: null };
    toks.textContent = "";
    verdictEl.textContent = "";
    status.textContent = "prefilling the prompt (" + arr.ids.length + " tokens)…";
    var params = {
      prompt: arr.text, max_tokens: limit, temperature: 0, n_probs: TOP_K, cache_prompt: false, stream: true, abortSignal: ctx.signal,
      onData: function (chunk) {
        var now = (performance.now() - t0) / 1000;
        var ch = chunk && chunk.choices && chunk.choices[0];
        if (!ch) return;
        var lp = ch.logprobs && Array.isArray(ch.logprobs.content) ? ch.logprobs.content : [];
        if (ch.text && !lp.length) throw new Error("the engine streamed text without its tokens' log-probabilities (an engine version this page does not know)");
        lp.forEach(function (e) {
          addToken(toks, lane, { t: now, id: e.id, text: e.token, logprob: e.logprob,
                                 top: (e.top_logprobs || []).map(function (x) { return { id: x.id, text: x.token, logprob: x.logprob }; }) });
        });
        if (ch.finish_reason) lane.finish_reason = ch.finish_reason;
        status.textContent = lane.tokens.length + " tokens, " + now.toFixed(2) + " s";
      },
    };
    if (grammar) params.grammar = grammar;
    return ctx.engine.createCompletion(params).then(function () {
      lane.total_s = (performance.now() - t0) / 1000;
      if (!lane.tokens.length) throw new Error("the " + key + " lane generated no token");
      lane.ttft_s = lane.tokens[0].t;
      var eog = ctx.stopIds;
      var stopLast = eog.indexOf(lane.tokens[lane.tokens.length - 1].id) >= 0;
      lane.text = (stopLast ? lane.tokens.slice(0, -1) : lane.tokens).map(function (t) { return t.text; }).join("");
      lane.stop_reason = stopLast ? "end_of_turn" : "max_new_tokens";
      var j = ctx.LN.judge(lane.text, ctx.criteria.length);
      lane.judged = j;
      lane.capped = !stopLast;
      lane.verdict = ctx.LN.verdict(j, lane.capped, limit);
      verdictEl.textContent = lane.verdict;
      status.textContent = lane.tokens.length + " tokens in " + lane.total_s.toFixed(2) + " s, first at " + lane.ttft_s.toFixed(3) + " s";
      var rows = document.getElementById("results").tBodies[0].rows;
      for (var i = 0; i < rows.length; i++) {
        var cell = rows[i].cells[key === "free" ? 6 : 7], mine = ctx.results[i].choice;
        cell.textContent = j.complete ? j.parsed[i] + (j.parsed[i] === mine ? " (= typed)" : " (≠ typed)") : "unparsed";
      }
      return { lane: lane, arr: arr };
    });
  }

  // Both lanes; resolves to { prompt: the array prompt {version, text, ids}, free, constrained, grammar }.
  function run(ctx) {
    var n = ctx.criteria.length, values = ctx.criteria.map(function () { return ["yes", "no"]; });
    var limits = { free: ctx.LN.freeMaxTokens(n), constrained: ctx.LN.constrainedMaxTokens(values) };
    var grammar = ctx.LN.gbnf(values), out = { grammar: grammar };
    var probe = ctx.PR.renderArray(ctx.P, ctx.model, ctx.state, ctx.criteria.map(function (c) { return c.question; }));
    if (probe.ids.length + Math.max(limits.free, limits.constrained) > ctx.nCtx) {
      return Promise.reject(new Error("the generated lanes' prompt (" + probe.ids.length + " tokens) and its " + limits.free +
                                      "-token limit do not fit the engine's context of " + ctx.nCtx + " tokens"));
    }
    return runLane(ctx, "free", limits.free, null).then(function (r) {
      out.prompt = { version: r.arr.version, text: r.arr.text, ids: r.arr.ids };
      out.free = r.lane;
      if (ctx.stopped()) throw new Error("stopped");
      return runLane(ctx, "constrained", limits.constrained, grammar);
    }).then(function (r) { out.constrained = r.lane; return out; });
  }

  window.SemifLiveLanesRun = { run: run, TOP_K: TOP_K };
})();
