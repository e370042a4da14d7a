/* A GGUF file's header read in the page: its metadata (name, context length, chat template, the tokenizer's
   vocabulary and merges) and its tensor table, from which the size the file must have follows, so a file cut
   short (a partial download) is refused before the engine sees it. Pure: parse(bytes, fileSize) works on the
   leading bytes of the file and says how many more it needs when the header runs past them
   (tests/js_live/, against the Python gguf package's reader). In the page: window.SemifLiveGguf. */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifLiveGguf = api;
})(this, function () {
  "use strict";

  // ggml tensor types: [elements per block, bytes per block] (gguf-py's GGML_QUANT_SIZES; checked in tests).
  var TYPE_SIZES = {
    0: [1, 4], 1: [1, 2], 2: [32, 18], 3: [32, 20], 6: [32, 22], 7: [32, 24], 8: [32, 34], 9: [32, 40],
    10: [256, 84], 11: [256, 110], 12: [256, 144], 13: [256, 176], 14: [256, 210], 15: [256, 292],
    16: [256, 66], 17: [256, 74], 18: [256, 98], 19: [256, 50], 20: [32, 18], 21: [256, 110], 22: [256, 82],
    23: [256, 136], 24: [1, 1], 25: [1, 2], 26: [1, 4], 27: [1, 8], 28: [1, 8], 29: [256, 56], 30: [1, 2],
    34: [256, 54], 35: [256, 66], 39: [32, 17], 40: [64, 36], 41: [128, 18],
  };

  function GgufError(kind, message) {
    var e = new Error(message);
    e.name = "GgufError";
    e.kind = kind;  // "not-gguf", "truncated", "unsupported", "need-more"
    return e;
  }

  // parse(bytes: Uint8Array holding the file's first bytes, fileSize) → the header, or a GgufError:
  // kind "need-more" (with e.need, the bytes to read) when the header runs past `bytes` inside the file.
  function parse(bytes, fileSize) {
    var view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    var pos = 0;
    var decoder = new TextDecoder("utf-8", { fatal: false });
    function need(n) {
      if (pos + n <= bytes.length) return;
      if (pos + n > fileSize) {
        throw GgufError("truncated", "the file ends inside its GGUF header (at byte " + fileSize.toLocaleString("en") +
                        ", the header needs more): a partial download or a cut copy");
      }
      var e = GgufError("need-more", "header longer than the bytes read");
      e.need = Math.min(fileSize, Math.max(bytes.length * 2, pos + n + (1 << 20)));
      throw e;
    }
    function u32() { need(4); var v = view.getUint32(pos, true); pos += 4; return v; }
    function u64() {
      need(8);
      var v = view.getBigUint64(pos, true);
      pos += 8;
      if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw GgufError("unsupported", "a GGUF size field is larger than 2^53");
      return Number(v);
    }
    function str() {
      var n = u64();
      need(n);
      var s = decoder.decode(bytes.subarray(pos, pos + n));
      pos += n;
      return s;
    }
    function scalar(t) {
      var v;
      switch (t) {
        case 0: need(1); v = view.getUint8(pos); pos += 1; return v;
        case 1: need(1); v = view.getInt8(pos); pos += 1; return v;
        case 2: need(2); v = view.getUint16(pos, true); pos += 2; return v;
        case 3: need(2); v = view.getInt16(pos, true); pos += 2; return v;
        case 4: return u32();
        case 5: need(4); v = view.getInt32(pos, true); pos += 4; return v;
        case 6: need(4); v = view.getFloat32(pos, true); pos += 4; return v;
        case 7: need(1); v = view.getUint8(pos) !== 0; pos += 1; return v;
        case 8: return str();
        case 10: return u64();
        case 11: need(8); v = Number(view.getBigInt64(pos, true)); pos += 8; return v;
        case 12: need(8); v = view.getFloat64(pos, true); pos += 8; return v;
      }
      throw GgufError("unsupported", "unknown GGUF value type " + t + " at byte " + pos);
    }
    function value(t) {
      if (t !== 9) return scalar(t);
      var inner = u32(), n = u64(), out = new Array(n);
      for (var i = 0; i < n; i++) out[i] = value(inner);
      return out;
    }

    if (fileSize < 4) throw GgufError("not-gguf", "the file is " + fileSize + " bytes long: not a GGUF model");
    need(4);
    var magic = String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]);
    if (magic !== "GGUF") {
      throw GgufError("not-gguf", "not a GGUF file: it starts with " + JSON.stringify(magic) +
                      " where a GGUF model starts with \"GGUF\" (pick a .gguf file: llama.cpp's model format)");
    }
    pos = 4;
    var version = u32();
    if (version < 2 || version > 3) throw GgufError("unsupported", "GGUF version " + version + " (this page reads versions 2 and 3)");
    var nTensors = u64(), nKv = u64();
    var kv = {};
    for (var k = 0; k < nKv; k++) {
      var key = str();
      kv[key] = value(u32());
    }
    var tensors = [];
    for (var t = 0; t < nTensors; t++) {
      var name = str(), nd = u32(), dims = [];
      for (var d = 0; d < nd; d++) dims.push(u64());
      tensors.push({ name: name, dims: dims, type: u32(), offset: u64() });
    }
    var align = typeof kv["general.alignment"] === "number" ? kv["general.alignment"] : 32;
    var dataOffset = Math.ceil(pos / align) * align;
    var dataEnd = 0;
    tensors.forEach(function (x) {
      var ts = TYPE_SIZES[x.type];
      if (!ts) throw GgufError("unsupported", "tensor " + x.name + " has ggml type " + x.type + ", which this page does not know");
      var elems = x.dims.reduce(function (a, b) { return a * b; }, 1);
      x.bytes = elems / ts[0] * ts[1];
      dataEnd = Math.max(dataEnd, x.offset + x.bytes);
    });
    var expected = dataOffset + dataEnd;
    if (fileSize < expected) {
      throw GgufError("truncated", "the file is truncated: its tensors end at byte " + expected.toLocaleString("en") +
                      " but the file has " + fileSize.toLocaleString("en") + " bytes (" +
                      (expected - fileSize).toLocaleString("en") + " missing): a partial download or a cut copy");
    }
    return { version: version, kv: kv, tensors: tensors, headerBytes: pos, dataOffset: dataOffset, expectedSize: expected };
  }

  // The facts the page shows and checks, from a parsed header.
  function describe(h) {
    var kv = h.kv, arch = kv["general.architecture"];
    var tokens = kv["tokenizer.ggml.tokens"];
    var ctx = arch ? kv[arch + ".context_length"] : undefined;
    return {
      name: kv["general.name"] || null,
      architecture: arch || null,
      contextLength: typeof ctx === "number" ? ctx : null,
      chatTemplate: typeof kv["tokenizer.chat_template"] === "string" ? kv["tokenizer.chat_template"] : null,
      tokenizerModel: kv["tokenizer.ggml.model"] || null,
      preTokenizer: kv["tokenizer.ggml.pre"] || null,
      vocabSize: Array.isArray(tokens) ? tokens.length : null,
      layers: arch ? kv[arch + ".block_count"] || null : null,
      embedding: arch ? kv[arch + ".embedding_length"] || null : null,
      headsKv: arch ? kv[arch + ".attention.head_count_kv"] || kv[arch + ".attention.head_count"] || null : null,
      heads: arch ? kv[arch + ".attention.head_count"] || null : null,
      fileType: typeof kv["general.file_type"] === "number" ? kv["general.file_type"] : null,
      tensors: h.tensors.length,
    };
  }

  return { parse: parse, describe: describe, TYPE_SIZES: TYPE_SIZES, GgufError: GgufError };
});
