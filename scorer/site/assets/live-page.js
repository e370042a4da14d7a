/* The live page: a GGUF model the visitor opens (file picker, drop, or an address) is checked (a GGUF, whole,
   a chat template this page can render, a vocabulary it can rebuild), hashed and loaded into the vendored
   @wllama/wllama engine (llama.cpp in WebAssembly, in a worker); Run scores every criterion's typed prompt
   with it. The engine's code (assets/wllama/) is fetched only once a model is opened, so the page itself
   stays light. Everything a visitor types or opens stays in this tab: the only requests are for the site's
   own files and, when the visitor types one, the model's address.

   The pure parts (scorer/site/assets/live/*.js: SemifLiveSha256, SemifLiveGguf, SemifLiveBpe, SemifLiveJinja,
   SemifLivePrompt, SemifLiveLanes) are assets/live-modules.js, loaded with the first model, like the engine, so
   the page loads only assets/live.js before it paints; the engine's plumbing (script and engine loading, browser
   support, the memory plan) is scorer/site/assets/live-engine.js, concatenated before this file into assets/live.js.
   window.semifLive is the page's state for its tests. */
(function () {
  "use strict";
  // The pure parts (assets/live-modules.js), loaded when the first model is opened (modules()).
  var Sha, G, B, J, PR, LN, TR;
  var E = window.SemifLiveEngine;  // scorer/site/assets/live-engine.js, before this file in assets/live.js
  var $ = function (id) { return document.getElementById(id); };
  var CONFIG = JSON.parse($("semif-live-config").textContent);
  var P = CONFIG.prompt;
  var GIB = 1024 * 1024 * 1024;
  var ENGINE_LIMIT = 4 * GIB;   // wllama's wasm64 memory maximum (65536 pages of 64 KiB)
  var CHUNK = 8 * 1024 * 1024;

  var S = {
    state: "idle", file: null, blob: null, source: null, header: null, facts: null, sha256: null, tok: null, chat: null,
    template: null, engine: null, nCtx: null, threads: null, multiThread: false, results: [], run: null,
    error: null, warnings: [], abort: null, stopRequested: false,
  };

  function setState(s) { S.state = s; $("live").setAttribute("data-state", s); }
  function fmtBytes(n) {
    if (n >= GIB) return (n / GIB).toFixed(2) + " GiB";
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB";
    if (n >= 1024) return (n / 1024).toFixed(1) + " KiB";
    return n + " bytes";
  }
  function message(id, text, kind) {
    var m = $(id);
    m.textContent = text || "";
    m.className = "msg" + (kind ? " " + kind : "");
    m.hidden = !text;
  }
  function refuse(text) {
    S.error = text;
    message("model-msg", text, "error");
    setState("refused");
    $("run").disabled = true;
  }
  function bar(name, frac, text) {
    $("p-" + name).value = Math.max(0, Math.min(1, frac));
    $("p-" + name + "-text").textContent = text;
  }
  function setFact(id, text) { $(id).textContent = text; }

  // ---- opening a model --------------------------------------------------------------------------------
  function resetModel() {
    S.file = S.header = S.facts = S.sha256 = S.tok = S.chat = S.template = null;
    S.error = null;
    S.results = [];
    ["read", "hash", "load"].forEach(function (b) { bar(b, 0, "–"); });
    ["f-name", "f-file", "f-size", "f-sha", "f-tok", "f-ctx", "f-mem"].forEach(function (id) { setFact(id, "–"); });
    $("f-template").textContent = "–";
    message("model-msg", "");
    $("run").disabled = true;
  }

  // The header: the file's first bytes, more if the header runs past them (a 150k-token vocabulary is ~5 MB).
  function readHeader(blob) {
    var want = Math.min(blob.size, 4 * 1024 * 1024);
    function attempt() {
      return blob.slice(0, want).arrayBuffer().then(function (buf) {
        bar("read", want / blob.size, fmtBytes(want) + " of the header read");
        try { return G.parse(new Uint8Array(buf), blob.size); } catch (e) {
          if (e.kind === "need-more") { want = e.need; return attempt(); }
          throw e;
        }
      });
    }
    return attempt();
  }

  function hashBlob(blob) {
    var sha = new Sha.Sha256(), off = 0, t0 = performance.now();
    function step() {
      if (S.stopRequested) throw new Error("stopped while hashing");
      if (off >= blob.size) {
        var hex = sha.hex();
        bar("hash", 1, "done in " + ((performance.now() - t0) / 1000).toFixed(1) + " s");
        return hex;
      }
      return blob.slice(off, off + CHUNK).arrayBuffer().then(function (buf) {
        sha.update(new Uint8Array(buf));
        off += buf.byteLength;
        bar("hash", off / blob.size, fmtBytes(off) + " of " + fmtBytes(blob.size));
        return step();
      });
    }
    return Promise.resolve().then(step);
  }

  var modulesLoaded = null;
  function modules() {
    if (!modulesLoaded) {
      modulesLoaded = E.loadScript(CONFIG.wllama.modules).then(function () {
        Sha = window.SemifLiveSha256; G = window.SemifLiveGguf; B = window.SemifLiveBpe; J = window.SemifLiveJinja;
        PR = window.SemifLivePrompt; LN = window.SemifLiveLanes; TR = window.SemifLiveTrace;
      }, function (e) { modulesLoaded = null; throw e; });
    }
    return modulesLoaded;
  }

  function checkModel(blob, name) {
    return modules().then(function () { return readHeader(blob); }).then(function (h) {
      S.header = h;
      var f = S.facts = G.describe(h);
      setFact("f-name", f.name || "(no general.name)");
      setFact("f-file", name);
      setFact("f-size", fmtBytes(blob.size) + " (" + blob.size.toLocaleString("en") + " bytes)");
      setFact("f-tok", (f.tokenizerModel || "?") + " / " + (f.preTokenizer || "?") + ", " + (f.vocabSize || "?") + " tokens");
      $("f-template").textContent = f.chatTemplate || "(none: this GGUF carries no tokenizer.chat_template)";
      S.nCtx = Math.min(f.contextLength || 2048, 4096);
      setFact("f-ctx", S.nCtx + " tokens used here (trained for " + (f.contextLength || "?") + ")");
      var mem = E.memoryPlan(f, blob.size, S.nCtx);
      setFact("f-mem", "about " + fmtBytes(mem.total) + " of the engine's 4 GiB: file " + fmtBytes(mem.file) + ", context cache " +
              fmtBytes(mem.kv) + ", work buffers ~" + fmtBytes(mem.work) + " (an estimate)");
      if (mem.total > ENGINE_LIMIT) {
        throw new Error("this model needs about " + fmtBytes(mem.total) + " in the engine, more than the 4 GiB WebAssembly lets it address: pick a smaller or more quantized GGUF");
      }
      try { S.tok = new B.Tokenizer(h.kv); } catch (e) { throw new Error("cannot tokenize for this model: " + e.message); }
      return chooseTemplate();
    });
  }

  // The model's chat template, compiled and tried on a probe; or semif-plain when the visitor asks for it.
  function chooseTemplate() {
    var f = S.facts;
    if ($("use-plain").checked) {
      S.template = "semif-plain";
      S.chat = function (m) { return PR.plainRender(m, true); };
      return true;
    }
    if (!f.chatTemplate) {
      throw new Error("this model has no chat template (tokenizer.chat_template is missing from the GGUF): SemIf would render it with semif-plain, its documented fallback; tick \"use semif-plain\" above to do that here");
    }
    var render;
    try { render = J.compile(f.chatTemplate); } catch (e) {
      throw new Error("this model's chat template cannot be rendered here (" + e.message + "); tick \"use semif-plain\" to use SemIf's fallback instead");
    }
    var ctx = specialTokens();
    S.chat = function (messages) {
      return render(Object.assign({ messages: messages, add_generation_prompt: true, tools: null, documents: null,
                                    enable_thinking: false }, ctx));
    };
    try { S.chat([{ role: "system", content: "s" }, { role: "user", content: "u" }]); } catch (e) {
      throw new Error("this model's chat template fails on a system and a user message (" + e.message + "); tick \"use semif-plain\" to use SemIf's fallback instead");
    }
    S.template = "chat";
    return true;
  }
  // The special-token strings transformers passes to a chat template (bos_token, eos_token, …).
  function specialTokens() {
    var kv = S.header.kv, tokens = kv["tokenizer.ggml.tokens"], out = {};
    [["bos_token", "bos"], ["eos_token", "eos"], ["unk_token", "unknown"], ["pad_token", "padding"]].forEach(function (p) {
      var id = kv["tokenizer.ggml." + p[1] + "_token_id"];
      if (typeof id === "number" && tokens[id] !== undefined) out[p[0]] = tokens[id];
    });
    return out;
  }

  function loadEngine(blob) {
    var why = E.support();
    if (why) throw new Error(why);
    var t0 = performance.now();
    bar("load", 0.1, "fetching the engine (" + CONFIG.wllama.size_text + ")");
    return E.assets(CONFIG.wllama).then(function (wasmUrl) {
      var W = window.SemifWllama;
      S.multiThread = window.crossOriginIsolated === true;
      S.threads = S.multiThread ? Math.max(2, Math.min(8, Math.floor((navigator.hardwareConcurrency || 2) / 2))) : 1;
      setFact("f-threads", S.multiThread ? S.threads + " threads (the page is cross-origin isolated)" :
              "1 thread: the page is not cross-origin isolated (no COOP/COEP headers, as on GitHub Pages), so WebAssembly threads are off");
      var quiet = function () {};
      var note = function () { S.warnings.push([].slice.call(arguments).map(String).join(" ")); };
      // The model comes from the visitor (a Blob): wllama's download manager and its cache storage (OPFS / Cache
      // API, which a file:// page may not have) are never used, so placeholders stand in for them.
      var engine = new W.Wllama({ default: wasmUrl }, { logger: { debug: quiet, log: quiet, warn: note, error: note },
                                                        suppressNativeLog: false, cacheManager: {}, modelManager: {} });
      engine.setCompat(null);  // never the CDN build
      S.engine = engine;
      bar("load", 0.3, "starting the engine and reading the model…");
      return engine.loadModel([blob], { n_ctx: S.nCtx, n_threads: S.threads, n_gpu_layers: 0, n_parallel: 1 }).then(function () {
        S.info = engine.getLoadedContextInfo();
        bar("load", 1, "loaded in " + ((performance.now() - t0) / 1000).toFixed(1) + " s");
      });
    });
  }

  // knownSha: the file's sha256 when it was hashed already (while downloading).
  function openModel(blob, name, source, knownSha) {
    if (S.state === "running" || (S.state === "loading" && !knownSha)) return Promise.resolve(false);
    var old = S.engine;
    S.engine = null;
    resetModel();
    S.source = source;
    S.blob = blob;
    S.file = { name: name, size: blob.size };
    S.stopRequested = false;
    setState("loading");
    $("stop").disabled = false;
    var exit = old ? old.exit().catch(function () {}) : Promise.resolve();
    return exit.then(function () { return checkModel(blob, name); })
      .then(function () { if (knownSha) bar("hash", 1, "hashed while downloading"); return knownSha || hashBlob(blob); })
      .then(function (hex) { S.sha256 = hex; setFact("f-sha", hex); return loadEngine(blob); })
      .then(function () {
        setState("ready");
        $("stop").disabled = true;
        $("run").disabled = false;
        $("run-status").textContent = "Ready: " + (S.facts.name || name) + ".";
        return true;
      })
      .catch(function (e) {
        $("stop").disabled = true;
        if (S.engine) { S.engine.exit().catch(function () {}); S.engine = null; }
        refuse(name + ": " + (e && e.message ? e.message : String(e)));
        return false;
      });
  }

  function openUrl(url) {
    var u;
    try { u = new URL(url, document.baseURI); } catch (e) { refuse("not an address: " + url); return Promise.resolve(false); }
    if (!/^https?:$/.test(u.protocol)) { refuse(url + ": only http(s) addresses can be fetched"); return Promise.resolve(false); }
    resetModel();
    setState("loading");
    S.stopRequested = false;
    var ctl = new AbortController();
    S.abort = ctl;
    $("stop").disabled = false;
    var sha = null, got = 0, parts = [], t0 = performance.now();
    return modules().then(function () { sha = new Sha.Sha256(); return fetch(u.href, { signal: ctl.signal, credentials: "omit", referrerPolicy: "no-referrer" }).then(function (resp) {
      if (!resp.ok) throw new Error("the server answered " + resp.status + " " + resp.statusText);
      var total = Number(resp.headers.get("content-length")) || 0;
      var reader = resp.body.getReader();
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) return;
          parts.push(r.value);
          sha.update(r.value);
          got += r.value.length;
          var text = fmtBytes(got) + (total ? " of " + fmtBytes(total) : "") + " downloaded";
          bar("read", total ? got / total : 0.5, text);
          bar("hash", total ? got / total : 0.5, "hashed while downloading");
          return pump();
        });
      }
      return pump().then(function () {
        if (total && got !== total) throw new Error("the download stopped at " + got + " of " + total + " bytes");
        bar("read", 1, fmtBytes(got) + " in " + ((performance.now() - t0) / 1000).toFixed(1) + " s");
        bar("hash", 1, "done");
        S.sha256 = sha.hex();
      });
    }); }).then(function () {
      S.abort = null;
      var name = decodeURIComponent(u.pathname.split("/").pop() || u.host);
      var blob = new Blob(parts, { type: "application/octet-stream" });
      return openModel(blob, name, u.href, S.sha256);
    }).catch(function (e) {
      S.abort = null;
      $("stop").disabled = true;
      refuse(url + ": " + (e.name === "AbortError" ? "stopped" : e.message || String(e)) +
             (e instanceof TypeError ? " (the server must allow this page to read it: CORS)" : ""));
      return false;
    });
  }

  // ---- the typed lane ---------------------------------------------------------------------------------
  function parseCriteria() {
    var lines = $("criteria").value.split("\n"), out = [], seen = {};
    lines.forEach(function (line, i) {
      if (!line.trim()) return;
      var m = /^\s*([^:\s][^:]*?)\s*:\s*(.+)$/.exec(line);
      if (!m) throw new Error("criteria, line " + (i + 1) + ": " + JSON.stringify(line.slice(0, 60)) + " is not 'id: question'");
      if (seen[m[1]]) throw new Error("criteria, line " + (i + 1) + ": id " + JSON.stringify(m[1]) + " repeats line " + seen[m[1]] + " (ids must be unique)");
      seen[m[1]] = i + 1;
      out.push({ id: m[1], question: m[2].trim() });
    });
    if (!out.length) throw new Error("criteria: none given (one per line, 'id: question')");
    return out;
  }
  function parseOptions() {
    var parts = $("options").value.split(",").map(function (s) { return s.trim(); }).filter(Boolean), seen = {};
    var opts = parts.map(function (p, i) {
      var k = p.indexOf("=");
      if (k <= 0 || !p.slice(k + 1).trim()) throw new Error("options, item " + (i + 1) + ": " + JSON.stringify(p) + " is not 'id=description'");
      var id = p.slice(0, k).trim();
      if (seen[id]) throw new Error("options, item " + (i + 1) + ": id " + JSON.stringify(id) + " repeats (ids must be unique)");
      seen[id] = true;
      return { id: id, description: p.slice(k + 1).trim() };
    });
    if (opts.length < 2 || opts.length > P.letters.length) throw new Error("options: " + opts.length + " given (expected 2 to " + P.letters.length + ")");
    return opts;
  }
  function tokensSha(ids) {
    var b = new Uint8Array(ids.length * 4), dv = new DataView(b.buffer);
    ids.forEach(function (x, i) { dv.setInt32(4 * i, x, true); });
    return Sha.hex(b);
  }
  function textSha(s) { return Sha.hex(new TextEncoder().encode(s)); }

  // One request to the engine: the prompt's text, one greedy token, the top-k log-probabilities at the answer
  // position; the engine keeps the longest cached token prefix and evaluates only the rest (cache_prompt).
  function score(text, k, signal) {
    return S.engine.createCompletion({ prompt: text, max_tokens: 1, temperature: 0, n_probs: k, cache_prompt: true,
                                       abortSignal: signal });
  }
  // The state, prefilled once into the engine's cache (n_predict 0: the prompt is evaluated, nothing generated).
  function prefill(text, signal) {
    return S.engine.createCompletion({ prompt: text, max_tokens: 0, cache_prompt: true, abortSignal: signal });
  }
  function topEntries(resp) {
    var lp = resp && resp.choices && resp.choices[0] && resp.choices[0].logprobs;
    var content = lp && Array.isArray(lp.content) ? lp.content[0] : null;
    if (content && Array.isArray(content.top_logprobs)) return content.top_logprobs.map(function (e) { return { id: e.id, text: e.token, logp: e.logprob }; });
    if (lp && Array.isArray(lp.top_logprobs) && lp.top_logprobs[0]) {
      var obj = lp.top_logprobs[0];
      return Object.keys(obj).map(function (t) { return { id: S.tok.ids.has(t) ? S.tok.ids.get(t) : null, text: t, logp: obj[t] }; });
    }
    throw new Error("the engine's answer has no log-probabilities (an engine version this page does not know)");
  }
  function readSlots(entries, slotIds) {
    var byId = {};
    entries.forEach(function (e) { if (e.id !== null && !(e.id in byId)) byId[e.id] = e.logp; });
    var out = slotIds.map(function (id) { return id in byId ? byId[id] : null; });
    return out.indexOf(null) >= 0 ? null : out;
  }

  function scoreOne(prompt, signal) {
    var k = 32, vocab = S.facts.vocabSize;
    return score(prompt.text, k, signal).then(function (resp) {
      var entries = topEntries(resp), logps = readSlots(entries, prompt.slotIds);
      if (logps) return { resp: resp, entries: entries, logps: logps, k: k };
      // a letter outside the top k: ask again for the whole vocabulary (the prompt is cached: one position)
      return score(prompt.text, vocab, signal).then(function (r2) {
        var e2 = topEntries(r2), l2 = readSlots(e2, prompt.slotIds);
        if (!l2) throw new Error("the engine's full-vocabulary answer lacks an answer letter's token");
        return { resp: r2, entries: e2.slice(0, 32), logps: l2, k: vocab, retried: true };
      });
    });
  }

  function run() {
    if (S.state !== "ready" && S.state !== "done" && S.state !== "stopped") return Promise.resolve(false);
    message("run-msg", "");
    var criteria, options, state = $("state").value;
    try {
      criteria = parseCriteria();
      options = parseOptions();
      if (!PR.stateText(state)) throw new Error("state: empty (write the text the criteria are about)");
    } catch (e) { message("run-msg", e.message, "error"); return Promise.resolve(false); }
    var t0 = performance.now();
    var model = { tok: S.tok, chat: S.chat, template: S.template };
    var prompts;
    try {
      prompts = criteria.map(function (c) {
        try { return PR.render(P, model, state, c.question, options); } catch (e) { throw new Error("criterion " + c.id + ": " + e.message); }
      });
    } catch (e) { message("run-msg", e.message, "error"); return Promise.resolve(false); }
    // The engine takes text and reads every control-token string in it as that control token; SemIf keeps the
    // ones inside the state, questions and options as characters. Such text is refused here (semif score keeps it).
    var controls = Object.keys(S.tok.control);
    for (var q = 0; q < prompts.length; q++) {
      var pr = prompts[q];
      for (var sp = 0; sp < pr.spans.length; sp++) {
        var inner = pr.text.slice(pr.spans[sp][0], pr.spans[sp][1]);
        var hit = controls.filter(function (c) { return inner.indexOf(c) >= 0; })[0];
        if (hit) {
          message("run-msg", "criterion " + criteria[q].id + ": the state, question or options contain " + JSON.stringify(hit) +
                  ", this model's control token; the in-browser engine takes text and would read it as that token, where SemIf keeps it as characters. Remove it here (semif score handles it).", "error");
          return Promise.resolve(false);
        }
      }
    }
    var longest = prompts.reduce(function (m, p, i) { return p.ids.length > m.n ? { n: p.ids.length, i: i } : m; }, { n: 0, i: 0 });
    if (longest.n + 1 > S.nCtx) {
      message("run-msg", "the state is too long for the context: criterion " + criteria[longest.i].id + "'s prompt is " + longest.n +
              " tokens, and the engine's context holds " + S.nCtx + " (one more is needed for the answer; the model was trained for " +
              (S.facts.contextLength || "?") + "). Shorten the state.", "error");
      return Promise.resolve(false);
    }
    var encodeS = (performance.now() - t0) / 1000;
    var ctl = new AbortController();
    S.abort = ctl;
    S.stopRequested = false;
    S.results = [];
    var tbody = $("results").tBodies[0];
    tbody.textContent = "";
    setState("running");
    $("run").disabled = true;
    $("stop").disabled = false;
    $("run-status").textContent = "prefilling the state…";
    // The engine is given the shared prefix's tokens, decoded: it then caches exactly the prefix the trace records
    // (the head's text alone may end in a token the full prompts split differently).
    var prefixIds = prompts[0].prefixIds, prefix = S.tok.decode(prefixIds);
    var runInfo = S.run = { started: new Date().toISOString(), t0: t0, encode_s: encodeS, prefill: null, decisions: S.results,
                            state: state, criteria: criteria, options: options, prompts: prompts, prefix_ids: prefixIds,
                            threads: S.threads, multi_thread: S.multiThread, user_agent: navigator.userAgent,
                            template: S.template, prompt_version: P.version, n_ctx: S.nCtx };
    var tp = performance.now();
    return prefill(prefix, ctl.signal).then(function (resp) {
      runInfo.prefill = { s: (performance.now() - tp) / 1000, done_s: (performance.now() - t0) / 1000,
                          tokens_evaluated: evaluated(resp), text_sha256: textSha(prefix) };
      var i = 0;
      function next() {
        if (S.stopRequested) throw new Error("stopped");
        if (i >= prompts.length) return;
        var p = prompts[i], c = criteria[i], ts = performance.now();
        $("run-status").textContent = "criterion " + (i + 1) + " of " + prompts.length + " (" + c.id + ")…";
        return scoreOne(p, ctl.signal).then(function (r) {
          var probs = PR.slotSoftmax(r.logps);
          var best = probs.indexOf(Math.max.apply(null, probs));
          var tied = probs.filter(function (x) { return x === probs[best]; }).length > 1;
          var promptTokens = r.resp.usage ? r.resp.usage.prompt_tokens : null;
          var d = {
            id: c.id, question: c.question, option_ids: options.map(function (o) { return o.id; }),
            probabilities: probs, choice: tied ? null : options[best].id,
            margin: probs.length > 1 ? probs.slice().sort(function (a, b) { return b - a; })[0] - probs.slice().sort(function (a, b) { return b - a; })[1] : 1,
            slot_logprobs: r.logps, slot_token_ids: p.slotIds, letters: p.letters,
            top_k: r.entries.map(function (e) { return { id: e.id, text: e.text, logprob: e.logp }; }),
            full_vocab_argmax: r.entries[0] ? r.entries[0].id : null, k_requested: r.k,
            t_available: (performance.now() - t0) / 1000, s: (performance.now() - ts) / 1000,
            prompt: p.text, prompt_sha256: textSha(p.text), token_ids: p.ids, tokens_sha256: tokensSha(p.ids),
            input_tokens: p.ids.length, engine_prompt_tokens: promptTokens, tokens_evaluated: evaluated(r.resp),
            shared_head_tokens: p.prefixIds.length,
          };
          if (promptTokens !== null && promptTokens !== p.ids.length) {
            throw new Error("criterion " + c.id + ": the engine counted " + promptTokens + " prompt tokens where this page's tokenizer has " +
                            p.ids.length + ": the two tokenizations differ, so the recorded ids would not be the ones scored");
          }
          S.results.push(d);
          addRow(tbody, d, options);
          i++;
          return next();
        });
      }
      return next();
    }).then(function () {
      runInfo.suffix_done_s = runInfo.total_s = (performance.now() - t0) / 1000;
      runInfo.lanes = null;
      var typedText = "typed lane: " + S.results.length + " criteria in " + runInfo.total_s.toFixed(2) + " s (state prefilled in " +
                      runInfo.prefill.s.toFixed(2) + " s, " + runInfo.prefill.tokens_evaluated + " tokens)";
      if (!$("with-lanes").checked) { finish("done", "Done: " + typedText + "."); return true; }
      var yesNo = options.length === 2 && options[0].id === "yes" && options[1].id === "no";
      if (!yesNo) {
        finish("done", "Done: " + typedText + "; the generated lanes ask for yes/no arrays and ran only with the options yes=…, no=….");
        return true;
      }
      var lanesCtx = { engine: S.engine, P: P, PR: PR, LN: LN, model: model, state: state, criteria: criteria, results: S.results,
                       signal: ctl.signal, t0: t0, nCtx: S.nCtx, stopIds: S.info.list_tokens_eog,
                       stopped: function () { return S.stopRequested; } };
      return window.SemifLiveLanesRun.run(lanesCtx).then(function (out) {
        runInfo.lanes = out;
        finish("done", "Done: " + typedText + "; " + ["free", "constrained"].map(function (k) {
          var l = out[k];
          return k + " " + l.total_s.toFixed(2) + " s (" + l.verdict + ")";
        }).join(", ") + ".");
        return true;
      });
    }).catch(function (e) {
      runInfo.total_s = (performance.now() - t0) / 1000;
      var stopped = S.stopRequested || (e && e.name === "AbortError");
      finish(stopped ? "stopped" : "failed", stopped ? "Stopped after " + S.results.length + " of " + prompts.length + " criteria." : "Failed.");
      if (!stopped) message("run-msg", e && e.message ? e.message : String(e), "error");
      return false;
    });
  }
  function evaluated(resp) {
    var t = resp && resp.timings;
    return t && typeof t.prompt_n === "number" ? t.prompt_n : null;
  }
  function finish(state, text) {
    S.abort = null;
    setState(state);
    $("run").disabled = false;
    $("stop").disabled = true;
    $("run-status").textContent = text;
    $("run-summary").textContent = text;
    $("details-json").textContent = JSON.stringify(S.run, function (k, v) { return k === "spans" || k === "messages" ? undefined : v; }, 1);
    var a = $("download-run"), why = $("download-why");
    if (a.href.indexOf("blob:") === 0) URL.revokeObjectURL(a.href);
    a.hidden = true;
    S.trace = null;
    var made = state === "done" ? window.SemifLiveRecord.traceOf(S.run, S, CONFIG) : { why: state === "stopped" ? "the run was stopped" : "the run failed" };
    if (made.text) {
      S.trace = made;
      a.href = URL.createObjectURL(new Blob([made.text], { type: "application/json" }));
      a.download = made.doc.experiment.id + ".json";
      a.hidden = false;
      why.textContent = "";
    } else why.textContent = "No trace to download: " + made.why + ".";
  }

  function addRow(tbody, d, options) {
    var tr = document.createElement("tr");
    function td(text, cls) { var x = document.createElement("td"); x.textContent = text; if (cls) x.className = cls; tr.appendChild(x); }
    td(d.id, "mono");
    td(d.question);
    td(d.choice === null ? "tie" : d.choice, "choice");
    td(options.map(function (o, k) { return o.id + " " + d.probabilities[k].toFixed(4); }).join(" · "), "mono");
    td(d.t_available.toFixed(3) + " s", "mono");
    td(d.tokens_evaluated === null ? "?" : String(d.tokens_evaluated), "mono");
    td("–", "mono");
    td("–", "mono");
    tbody.appendChild(tr);
  }

  function stop() {
    S.stopRequested = true;
    if (S.abort) S.abort.abort();
  }

  // ---- wiring -----------------------------------------------------------------------------------------
  $("gguf-input").addEventListener("change", function (ev) {
    var f = ev.target.files && ev.target.files[0];
    if (f) openModel(f, f.name, "file");
  });
  $("gguf-url-load").addEventListener("click", function () { var v = $("gguf-url").value.trim(); if (v) openUrl(v); });
  $("run").addEventListener("click", function () { run(); });
  $("stop").addEventListener("click", stop);
  // Switching between the model's template and semif-plain: a loaded model keeps running with the other one;
  // a model refused for its template is opened again.
  $("use-plain").addEventListener("change", function () {
    if (S.state === "running" || S.state === "loading" || !S.header) return;
    if (S.engine) {
      try { chooseTemplate(); message("model-msg", ""); setState("ready"); $("run").disabled = false; }
      catch (e) { refuse(S.file.name + ": " + e.message); }
    } else if (S.blob) openModel(S.blob, S.file.name, S.source, S.sha256);
  });
  var overlay = $("drop-overlay");
  document.addEventListener("dragover", function (ev) { ev.preventDefault(); overlay.hidden = false; });
  document.addEventListener("dragleave", function (ev) { if (!ev.relatedTarget) overlay.hidden = true; });
  document.addEventListener("drop", function (ev) {
    ev.preventDefault();
    overlay.hidden = true;
    var f = ev.dataTransfer && ev.dataTransfer.files && ev.dataTransfer.files[0];
    if (f) openModel(f, f.name, "file");
  });
  if (!CONFIG.wllama.present) $("run-status").textContent = "No engine in this build.";

  window.semifLive = {
    state: function () { return { state: S.state, error: S.error, file: S.file, sha256: S.sha256, template: S.template,
                                  nCtx: S.nCtx, threads: S.threads, multiThread: S.multiThread, facts: S.facts,
                                  warnings: S.warnings.slice() }; },
    results: function () { return JSON.parse(JSON.stringify({ run: S.run, decisions: S.results })); },
    trace: function () { return S.trace ? S.trace.text : null; },
    openUrl: openUrl, run: run, stop: stop,
  };
})();
