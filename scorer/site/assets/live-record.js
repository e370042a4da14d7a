/* What a finished live run becomes: a semif-trace-v2 document (window.SemifLiveTrace builds it) with the facts
   only the page knows — the model file, the engine, the browser, its threads — or, when it cannot be one, why
   not, in words the page shows beside the download. Loaded with the pure modules (assets/live-modules.js);
   live-page.js calls window.SemifLiveRecord.traceOf(run, pageState, config). */
(function () {
  "use strict";

  // The finished run as a semif-trace-v2 document (SemifLiveTrace), or why it cannot be one.
  function traceOf(run, S, CONFIG) {
    var P = CONFIG.prompt;
    var yn = P.yes_no.map(function (o) { return o.id + "=" + o.description; }).join(", ");
    if (run.options.map(function (o) { return o.id + "=" + o.description; }).join(", ") !== yn) {
      return { why: "a trace records yes/no decisions, and the options were not " + yn };
    }
    if (!run.lanes) return { why: "the generated lanes did not run (tick the box above Run)" };
    var pre = run.prefix_ids.length;
    if (run.prefill.tokens_evaluated !== pre) {
      return { why: "the engine evaluated " + run.prefill.tokens_evaluated + " tokens for the shared prefix, which is " + pre +
                    " tokens, so the trace's token counts would not be the engine's" };
    }
    // More than a criterion's own tokens would mean work the trace does not count; fewer is the engine's prompt
    // cache reusing the tokens that consecutive criteria share after the state (said in the trace's notes).
    var off = run.decisions.filter(function (d) { return d.tokens_evaluated === null || d.tokens_evaluated > d.input_tokens - pre; })[0];
    if (off) {
      return { why: "for criterion " + off.id + " the engine evaluated " + off.tokens_evaluated + " tokens after the prefix, where its own tokens are " +
                    (off.input_tokens - pre) };
    }
    try { return window.SemifLiveTrace.build(traceInputs(run, S, CONFIG)); } catch (e) { return { why: e.message }; }
  }
  function traceInputs(run, S, CONFIG) {
    var P = CONFIG.prompt;
    var W = CONFIG.wllama, info = S.info, d0 = run.decisions[0], ua = navigator.userAgentData, pre = run.prefix_ids.length;
    var own = run.decisions.reduce(function (a, d) { return a + d.input_tokens - pre; }, 0);
    var evaluated = run.decisions.reduce(function (a, d) { return a + d.tokens_evaluated; }, 0);
    var threads = S.threads + (S.threads === 1 ? " thread" : " threads");
    return {
      input_id: "live", created_utc: run.started.replace(/\.\d+Z$/, "Z"), state: run.state, criteria: run.criteria, options: ["yes", "no"],
      template: S.template, decode: function (ids) { return S.tok.decode(ids); }, stop_token_ids: info.list_tokens_eog,
      typed: { version: P.version, letters: d0.letters, slot_token_ids: d0.slot_token_ids, prefix_ids: run.prefix_ids,
               prompts: run.prompts.map(function (q) { return { text: q.text, ids: q.ids }; }),
               decisions: run.decisions.map(function (d) { return { slot_logprobs: d.slot_logprobs, top: d.top_k, t_available: d.t_available }; }),
               encoded_s: run.encode_s, prefill_done_s: run.prefill.done_s, suffix_done_s: run.suffix_done_s },
      generated: run.lanes.prompt, lanes: { free: run.lanes.free, constrained: run.lanes.constrained },
      grammar_engine: "llama.cpp grammar sampler (" + W.libllama + ", @wllama/wllama " + W.version + ", WebAssembly)",
      model: { key: S.file.name, source: S.source === "file" ? "a file opened in the browser" : S.source, revision: null,
               gguf_file: S.file.name, gguf_sha256: S.sha256, gguf: { file: S.file.name, bytes: S.file.size, sha256: S.sha256 },
               dtype: CONFIG.ftypes[String(S.facts.fileType)] || "GGUF general.file_type " + S.facts.fileType, device: "cpu",
               backend: "llamacpp-wasm", architecture: S.facts.architecture, vocab_size: info.n_vocab, n_ctx: info.n_ctx,
               threads: S.threads, logits_dtype: "float32" },
      machine: { cpu: null, cores: navigator.hardwareConcurrency || 1, usable_cores: null, memory_bytes: null, gpu: null,
                 platform: (ua && ua.platform) || navigator.platform || "unknown", load_average_before: null, load_average_after: null,
                 browser: { user_agent: navigator.userAgent, threads: S.threads, cross_origin_isolated: S.multiThread,
                            engine: "@wllama/wllama " + W.version, llama_cpp: W.libllama,
                            wasm: "wasm64 (memory64, JSPI), " + (S.multiThread ? "multi-threaded" : "single-threaded"),
                            page: location.protocol === "file:" ? "file://" : location.protocol.replace(":", "") } },
      versions: { semif: CONFIG.semif, python: null, wllama: W.version, llama_cpp: W.libllama },
      differences: [
        "Instructions: the typed prompts (" + P.version + ") ask for one option letter; the generated prompt (" + P.array_version +
          ") asks for a JSON array of \"yes\"/\"no\". Both use the model's " + S.template + " template, rendered in the page.",
        "Typed reads each answer from the letter slots' log-probabilities at one position (no token is emitted); the generated " +
          "lanes decode greedily, so their answer to criterion k is conditioned on their own earlier answers.",
        "Free: the model writes what it wants; its output counts only as a valid JSON array of exactly the right length (never " +
          "repaired). Constrained: the same prompt and decoding, but only tokens the grammar allows may be chosen.",
      ],
      notes: [
        "Made in a browser: " + navigator.userAgent + "; " + threads + (S.multiThread ? " (the page was cross-origin isolated)" :
          " (the page was not cross-origin isolated, so WebAssembly threads were off)") + "; llama.cpp " + W.libllama +
          " compiled to WebAssembly (@wllama/wllama " + W.version + "). Every time is the page's clock; nothing ran on a server.",
        "Typed lane: the " + pre + " tokens the prompts share were prefilled once into the engine's cache (the engine evaluated " +
          run.prefill.tokens_evaluated + "), then each criterion's own tokens were scored after them, one criterion per request (so " +
          "protocol.max_batch_tokens is 1: one pass each). The token counts are shared mode's (" + own + " criterion tokens); the " +
          "engine's prompt cache also kept the tokens consecutive criteria share after the state, so it evaluated " + evaluated +
          " of them (per criterion: " + run.decisions.map(function (d) { return d.tokens_evaluated; }).join(", ") + ").",
        "option_logits are the answer letters' log-probabilities as the engine reports them (a log-softmax over the whole vocabulary): " +
          "the logits minus one constant per decision, which the softmax over the letters cancels.",
        "Not measured in a browser, so null: the grammar's compile time and the time spent in the grammar (the engine reports " +
          "neither), the CPU model, memory and load average (a page cannot read them). Yes/no splits at answer tokens are not recorded.",
        "One run of each lane and no warm-up: a lane's time may include one-off costs of the engine.",
      ],
    };
  }

  window.SemifLiveRecord = { traceOf: traceOf };
})();
