/* The model's own tokenizer, rebuilt in the page from the GGUF's vocabulary and merges, so the page knows
   the token ids it asks the engine to score (the engine, llama.cpp's server context in wasm, takes text and
   does not expose its tokenizer). Byte-level BPE ("gpt2" vocabularies) with llama.cpp's pre-tokenizer
   splits for the pre-tokenizer types listed in PRE; any other vocabulary is refused by name.

   Encoding follows SemIf's rule (scorer/prompting/prompt.py): the chat template's control tokens are cut out of the
   rendered text outside the plain spans (the message contents, leftmost-longest), and everything else is
   tokenized as text, so a control-token string inside a state stays characters. Pure: tests/js_live/
   compares its ids with the Python reference tokenizer's on every prompt it renders. In the page:
   window.SemifLiveBpe. */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifLiveBpe = api;
})(this, function () {
  "use strict";

  // llama.cpp's pre-tokenizer regexes (src/llama-vocab.cpp), applied one after the other: each splits every
  // piece the previous ones left into its matches and the text between them.
  var GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
  var QWEN2 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  var LLAMA3 = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  var PRE = {
    gpt2: [GPT2],
    smollm: ["\\p{N}", GPT2],
    qwen2: [QWEN2],
    "llama-bpe": [LLAMA3],
    llama3: [LLAMA3],
  };
  var CONTROL = 3;  // llama.cpp's token type for control tokens (tokenizer.ggml.token_type)

  function TokenizerError(message) {
    var e = new Error(message);
    e.name = "TokenizerError";
    return e;
  }

  // GPT-2's byte ↔ printable-character table (each byte is one character of a token's text).
  function byteTables() {
    var bs = [], cs = [], b;
    for (b = 33; b <= 126; b++) bs.push(b);
    for (b = 161; b <= 172; b++) bs.push(b);
    for (b = 174; b <= 255; b++) bs.push(b);
    cs = bs.slice();
    var n = 0;
    for (b = 0; b < 256; b++) if (bs.indexOf(b) < 0) { bs.push(b); cs.push(256 + n); n++; }
    var enc = new Array(256), dec = {};
    bs.forEach(function (x, i) { enc[x] = String.fromCharCode(cs[i]); dec[String.fromCharCode(cs[i])] = x; });
    return { enc: enc, dec: dec };
  }
  var BYTES = byteTables();

  function splitBy(pieces, pattern) {
    var re = new RegExp(pattern, "gu"), out = [];
    pieces.forEach(function (p) {
      re.lastIndex = 0;
      var last = 0, m;
      while ((m = re.exec(p)) !== null) {
        if (m[0] === "") { re.lastIndex++; continue; }
        if (m.index > last) out.push(p.slice(last, m.index));
        out.push(m[0]);
        last = m.index + m[0].length;
      }
      if (last < p.length) out.push(p.slice(last));
    });
    return out;
  }

  // Tokenizer(kv): from the GGUF metadata (tokenizer.ggml.*); throws a TokenizerError naming what it cannot read.
  function Tokenizer(kv) {
    var model = kv["tokenizer.ggml.model"], pre = kv["tokenizer.ggml.pre"] || "default";
    if (model !== "gpt2") {
      throw TokenizerError("this model's tokenizer is '" + model + "' (" + (model === "llama" ? "SentencePiece" : "not byte-level BPE") +
                           "); this page rebuilds byte-level BPE vocabularies ('gpt2') only");
    }
    if (!PRE[pre]) {
      throw TokenizerError("this model's pre-tokenizer is '" + pre + "'; this page knows " + Object.keys(PRE).join(", "));
    }
    this.pre = pre;
    this.regexes = PRE[pre];
    this.tokens = kv["tokenizer.ggml.tokens"];
    var types = kv["tokenizer.ggml.token_type"] || [];
    var merges = kv["tokenizer.ggml.merges"] || [];
    this.ids = new Map();
    for (var i = 0; i < this.tokens.length; i++) if (!this.ids.has(this.tokens[i])) this.ids.set(this.tokens[i], i);
    this.ranks = new Map();
    for (var r = 0; r < merges.length; r++) this.ranks.set(merges[r], r);
    this.control = {};
    for (var t = 0; t < types.length; t++) if (types[t] === CONTROL && !(this.tokens[t] in this.control)) this.control[this.tokens[t]] = t;
    this.controlTrie = trie(Object.keys(this.control));
    var bos = kv["tokenizer.ggml.bos_token_id"];
    // llama.cpp's rule for byte-level BPE: a BOS only where the vocabulary asks for one
    this.addBos = kv["tokenizer.ggml.add_bos_token"] === true && typeof bos === "number";
    this.bosId = typeof bos === "number" ? bos : null;
    this.eosId = typeof kv["tokenizer.ggml.eos_token_id"] === "number" ? kv["tokenizer.ggml.eos_token_id"] : null;
    this.cache = new Map();
  }

  Tokenizer.prototype.bpe = function (word) {
    var hit = this.cache.get(word);
    if (hit) return hit;
    var syms = Array.from(word), ranks = this.ranks;
    while (syms.length > 1) {
      var best = -1, bestRank = Infinity;
      for (var i = 0; i < syms.length - 1; i++) {
        var rk = ranks.get(syms[i] + " " + syms[i + 1]);
        if (rk !== undefined && rk < bestRank) { bestRank = rk; best = i; }
      }
      if (best < 0) break;
      syms.splice(best, 2, syms[best] + syms[best + 1]);
    }
    var ids = [], self = this;
    syms.forEach(function (s) {
      var id = self.ids.get(s);
      if (id !== undefined) { ids.push(id); return; }
      Array.from(s).forEach(function (ch) {  // llama.cpp's fallback: the symbol's bytes one by one
        var bid = self.ids.get(ch);
        if (bid === undefined) throw TokenizerError("no token for byte " + JSON.stringify(ch) + " in this vocabulary");
        ids.push(bid);
      });
    });
    if (this.cache.size < 50000) this.cache.set(word, ids);
    return ids;
  };

  // Text → ids with special-token parsing off (what llama.cpp's tokenize gives with parse_special = false).
  Tokenizer.prototype.encodePlain = function (text) {
    if (!text) return [];
    var pieces = [text];
    this.regexes.forEach(function (r) { pieces = splitBy(pieces, r); });
    var out = [], utf8 = new TextEncoder();
    for (var i = 0; i < pieces.length; i++) {
      var bytes = utf8.encode(pieces[i]), w = "";
      for (var b = 0; b < bytes.length; b++) w += BYTES.enc[bytes[b]];
      var ids = this.bpe(w);
      for (var k = 0; k < ids.length; k++) out.push(ids[k]);
    }
    return out;
  };

  function trie(words) {
    var root = {};
    words.forEach(function (w) {
      if (!w) return;
      var node = root;
      for (var i = 0; i < w.length; i++) node = node[w[i]] || (node[w[i]] = {});
      node[""] = w;
    });
    return root;
  }

  // SemIf's encoding rule: control tokens cut out of the text outside `plain` spans ([start, end) character
  // ranges, UTF-16 indexes as JS strings count them), leftmost-longest; the rest tokenized as plain text;
  // a BOS prepended where the model wants one.
  Tokenizer.prototype.encode = function (text, plain) {
    var spans = (plain || []).slice().sort(function (a, b) { return a[0] - b[0]; });
    var out = [], start = 0, i = 0, k = 0, self = this;
    function flush(end) { if (end > start) self.encodePlain(text.slice(start, end)).forEach(function (x) { out.push(x); }); }
    if (!spans.length) spans = [];
    var noSpans = !plain;
    while (i < text.length) {
      while (k < spans.length && spans[k][1] <= i) k++;
      if (!noSpans && k < spans.length && spans[k][0] <= i) { i = spans[k][1]; continue; }
      var limit = !noSpans && k < spans.length ? spans[k][0] : text.length;
      var node = this.controlTrie, j = i, best = 0;
      while (j < limit && node[text[j]]) {
        node = node[text[j]];
        j++;
        if (node[""] !== undefined) best = j - i;
      }
      if (best) {
        flush(i);
        out.push(this.control[text.slice(i, i + best)]);
        i = start = i + best;
      } else i++;
    }
    flush(text.length);
    if (this.addBos && (!out.length || out[0] !== this.bosId)) out.unshift(this.bosId);
    return out;
  };

  // Ids → text (control tokens as their text), as llama.cpp's detokenizer writes byte-level tokens.
  Tokenizer.prototype.decode = function (ids) {
    var bytes = [], self = this, out = "";
    var dec = new TextDecoder("utf-8");
    function flush() { if (bytes.length) { out += dec.decode(new Uint8Array(bytes)); bytes = []; } }
    ids.forEach(function (id) {
      var s = self.tokens[id];
      if (s === undefined) throw TokenizerError("token id " + id + " is outside this vocabulary");
      if (Object.prototype.hasOwnProperty.call(self.control, s) && self.control[s] === id) { flush(); out += s; return; }
      Array.from(s).forEach(function (ch) {
        var b = BYTES.dec[ch];
        if (b === undefined) { flush(); out += ch; } else bytes.push(b);
      });
    });
    flush();
    return out;
  };

  Tokenizer.prototype.stripBos = function (ids) {
    return this.addBos && ids.length && ids[0] === this.bosId ? ids.slice(1) : ids;
  };

  return { Tokenizer: Tokenizer, PRE: PRE, TokenizerError: TokenizerError };
});
