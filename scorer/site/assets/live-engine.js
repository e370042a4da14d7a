/* The live page's engine plumbing, apart from the page's state: how a script of the site is loaded, how the
   vendored engine's code and WebAssembly are fetched (by address over http; as a data: URL under file://, where a
   page may not fetch its sibling files), whether this browser can run the engine, and what a model needs in the
   engine's memory. Concatenated before live-page.js into assets/live.js (the page's one first-paint script);
   live-page.js reads it as window.SemifLiveEngine. */
(function () {
  "use strict";

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = resolve;
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  // The engine's code: wllama's JS, and its wasm by address (http) or, under file:// (where a page may not fetch
  // its sibling files, and the engine's worker may not read a blob: URL made in the page), as a data: URL.
  var wasmUrl = null;  // kept for the next model
  function assets(W) {
    if (wasmUrl) return Promise.resolve(wasmUrl);
    return loadScript(W.js).then(function () {
      if (location.protocol !== "file:") return new URL(W.wasm, document.baseURI).href;
      classicWorkers();
      return loadScript(W.wasm_js).then(function () {
        var url = "data:application/wasm;base64," + window.SemifWllamaWasm;
        window.SemifWllamaWasm = null;
        return url;
      });
    }).then(function (url) { wasmUrl = url; return url; });
  }

  // Under file:// the page's origin is opaque and Chromium starts no module worker from it; wllama asks for a
  // module worker, but its worker code imports nothing, so a blob: module worker is started as a classic one.
  function classicWorkers() {
    var Native = window.Worker;
    if (Native.semifClassic) return;
    var Classic = function (url, opts) {
      var blob = String(url).indexOf("blob:") === 0;
      return new Native(url, blob && opts && opts.type === "module" ? Object.assign({}, opts, { type: "classic" }) : opts);
    };
    Classic.prototype = Native.prototype;
    Classic.semifClassic = true;
    window.Worker = Classic;
  }

  // Why this browser cannot run the vendored engine, or null when it can.
  function support() {
    var missing = [];
    if (typeof WebAssembly !== "object") return "this browser has no WebAssembly";
    if (!WebAssembly.Suspending) missing.push("JavaScript promise integration (JSPI)");
    try { new WebAssembly.Memory({ initial: 1n, maximum: 2n, address: "i64" }); } catch (e) { missing.push("64-bit memory (memory64)"); }
    if (missing.length) {
      return "this browser lacks WebAssembly " + missing.join(" and ") + ", which the vendored engine needs (Chromium 137 or later has both); its compatibility build, which loads from a CDN, is not used here";
    }
    return null;
  }

  // What the model needs in the engine: the file (read on demand, but resident once loaded), the f16 KV cache
  // for the context and an allowance for llama.cpp's work buffers (an estimate, not a measurement: the page says so).
  function memoryPlan(facts, size, nCtx) {
    var headDim = facts.embedding && facts.heads ? facts.embedding / facts.heads : 0;
    var kv = facts.layers && facts.headsKv && headDim ? 2 * facts.layers * nCtx * facts.headsKv * headDim * 2 : 0;
    var work = 256 * 1024 * 1024;
    return { file: size, kv: kv, work: work, total: size + kv + work };
  }

  window.SemifLiveEngine = { loadScript: loadScript, assets: assets, support: support, memoryPlan: memoryPlan };
})();
