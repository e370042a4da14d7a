/* SemIf trace checks that run in the page, for a trace opened from disk without a rebuild:
   a JSON Schema validator for the keywords the trace schema uses (build.py refuses a schema that needs any
   other), canonical JSON exactly as orjson OPT_SORT_KEYS writes it, and SHA-256, so the trace's own
   checksums are verified here the same way the trace module verifies them. */
(function () {
  "use strict";

  // ---- JSON Schema (draft 2020-12 subset) ----------------------------------------------------------------
  function kind(v) {
    if (v === null) return "null";
    if (Array.isArray(v)) return "array";
    return typeof v;
  }
  function isType(v, t) {
    switch (t) {
      case "null": return v === null;
      case "boolean": return typeof v === "boolean";
      case "string": return typeof v === "string";
      case "number": return typeof v === "number" && isFinite(v);
      case "integer": return typeof v === "number" && Number.isInteger(v);
      case "array": return Array.isArray(v);
      case "object": return v !== null && typeof v === "object" && !Array.isArray(v);
      default: return false;
    }
  }
  function stableString(v) {
    if (Array.isArray(v)) return "[" + v.map(stableString).join(",") + "]";
    if (v !== null && typeof v === "object") {
      return "{" + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ":" + stableString(v[k]); }).join(",") + "}";
    }
    return JSON.stringify(v);
  }
  function equal(a, b) { return stableString(a) === stableString(b); }
  function pathStr(path) {
    var s = "$";
    for (var i = 0; i < path.length; i++) s += typeof path[i] === "number" ? "[" + path[i] + "]" : "." + path[i];
    return s;
  }
  function codeLength(s) { return Array.from(s).length; }

  function validate(root, data, maxErrors) {
    var limit = maxErrors || 20;
    function resolve(ref) {
      if (ref === "#") return root;
      if (ref.indexOf("#/") !== 0) throw new Error("unsupported $ref " + ref);
      var node = root;
      ref.slice(2).split("/").forEach(function (part) {
        part = decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");
        node = node[part];
        if (node === undefined) throw new Error("unresolvable $ref " + ref);
      });
      return node;
    }
    function check(s, v, path, errs) {
      if (errs.length >= limit) return;
      if (s === true || s === undefined) return;
      if (s === false) { errs.push(pathStr(path) + ": not allowed here"); return; }
      var n0 = errs.length;
      function err(msg) { errs.push(pathStr(path) + ": " + msg); }
      if (s.$ref !== undefined) check(resolve(s.$ref), v, path, errs);
      if (s.type !== undefined) {
        var types = Array.isArray(s.type) ? s.type : [s.type];
        if (!types.some(function (t) { return isType(v, t); })) {
          err("expected " + types.join(" or ") + ", found " + kind(v));
          return;
        }
      }
      if (s.const !== undefined && !equal(s.const, v)) err("must be " + JSON.stringify(s.const));
      if (s.enum !== undefined && !s.enum.some(function (e) { return equal(e, v); })) {
        err("must be one of " + s.enum.map(function (e) { return JSON.stringify(e); }).join(", "));
      }
      if (typeof v === "number") {
        if (s.minimum !== undefined && v < s.minimum) err("must be ≥ " + s.minimum);
        if (s.maximum !== undefined && v > s.maximum) err("must be ≤ " + s.maximum);
        if (s.exclusiveMinimum !== undefined && v <= s.exclusiveMinimum) err("must be > " + s.exclusiveMinimum);
        if (s.exclusiveMaximum !== undefined && v >= s.exclusiveMaximum) err("must be < " + s.exclusiveMaximum);
        if (s.multipleOf !== undefined && !Number.isInteger(v / s.multipleOf)) err("must be a multiple of " + s.multipleOf);
      }
      if (typeof v === "string") {
        if (s.minLength !== undefined && codeLength(v) < s.minLength) err("shorter than " + s.minLength);
        if (s.maxLength !== undefined && codeLength(v) > s.maxLength) err("longer than " + s.maxLength);
        if (s.pattern !== undefined && !new RegExp(s.pattern, "u").test(v)) err("does not match " + s.pattern);
      }
      if (Array.isArray(v)) {
        if (s.minItems !== undefined && v.length < s.minItems) err("needs at least " + s.minItems + " items, has " + v.length);
        if (s.maxItems !== undefined && v.length > s.maxItems) err("allows at most " + s.maxItems + " items, has " + v.length);
        var pre = s.prefixItems || [];
        pre.forEach(function (ps, i) { if (i < v.length) check(ps, v[i], path.concat(i), errs); });
        if (s.items !== undefined) {
          for (var i = pre.length; i < v.length && errs.length < limit; i++) check(s.items, v[i], path.concat(i), errs);
        }
        if (s.uniqueItems) {
          var seen = {};
          v.forEach(function (x, i) { var k = stableString(x); if (seen[k]) err("item " + i + " repeats an earlier item"); seen[k] = true; });
        }
        if (s.contains !== undefined && !v.some(function (x, i) { var e = []; check(s.contains, x, path.concat(i), e); return !e.length; })) {
          err("contains no matching item");
        }
      }
      if (isType(v, "object")) {
        var keys = Object.keys(v);
        if (s.minProperties !== undefined && keys.length < s.minProperties) err("needs at least " + s.minProperties + " fields");
        if (s.maxProperties !== undefined && keys.length > s.maxProperties) err("allows at most " + s.maxProperties + " fields");
        (s.required || []).forEach(function (k) { if (!Object.prototype.hasOwnProperty.call(v, k)) err("missing required field '" + k + "'"); });
        if (s.dependentRequired) {
          Object.keys(s.dependentRequired).forEach(function (k) {
            if (Object.prototype.hasOwnProperty.call(v, k)) {
              s.dependentRequired[k].forEach(function (d) { if (!Object.prototype.hasOwnProperty.call(v, d)) err("field '" + k + "' needs '" + d + "'"); });
            }
          });
        }
        var props = s.properties || {};
        var pats = s.patternProperties || {};
        keys.forEach(function (k) {
          if (errs.length >= limit) return;
          var matched = false;
          if (Object.prototype.hasOwnProperty.call(props, k)) { matched = true; check(props[k], v[k], path.concat(k), errs); }
          Object.keys(pats).forEach(function (p) {
            if (new RegExp(p, "u").test(k)) { matched = true; check(pats[p], v[k], path.concat(k), errs); }
          });
          if (!matched && s.additionalProperties !== undefined) {
            if (s.additionalProperties === false) errs.push(pathStr(path.concat(k)) + ": unexpected field");
            else check(s.additionalProperties, v[k], path.concat(k), errs);
          }
          if (s.propertyNames !== undefined) check(s.propertyNames, k, path.concat(k), errs);
        });
      }
      if (s.allOf) s.allOf.forEach(function (sub) { check(sub, v, path, errs); });
      if (s.anyOf || s.oneOf) {
        var branches = s.anyOf || s.oneOf;
        var results = branches.map(function (sub) { var e = []; check(sub, v, path, e); return e; });
        var passing = results.filter(function (e) { return !e.length; }).length;
        if (s.anyOf && passing === 0 || s.oneOf && passing === 0) {
          // Report the branch that came closest: "runs[3].tokens[2].t: must be ≥ 0" beats "matches no branch".
          var best = results.slice().sort(function (a, b) { return a.length - b.length; })[0];
          best.forEach(function (e) { errs.push(e); });
        } else if (s.oneOf && passing > 1) {
          err("matches more than one of the allowed shapes");
        }
      }
      if (s.not !== undefined) { var ne = []; check(s.not, v, path, ne); if (!ne.length) err("matches a shape that is not allowed"); }
      if (s.if !== undefined) {
        var ie = []; check(s.if, v, path, ie);
        if (!ie.length) { if (s.then !== undefined) check(s.then, v, path, errs); }
        else if (s.else !== undefined) check(s.else, v, path, errs);
      }
      return errs.length === n0;
    }
    var errors = [];
    check(root, data, [], errors);
    return errors.slice(0, limit);
  }

  // ---- canonical JSON (as orjson OPT_SORT_KEYS writes it) ----------------------------------------------
  // JSON.parse forgets whether a number was written 1 or 1.0; Python does not (int vs float), and orjson
  // writes them differently. So the canonical form is built from a parse that keeps number literals.
  function parseLiteral(text) {
    var i = 0;
    function ws() { while (i < text.length && " \t\n\r".indexOf(text[i]) >= 0) i++; }
    function fail(msg) { throw new SyntaxError(msg + " at character " + i); }
    function value() {
      ws();
      var c = text[i];
      if (c === "{") {
        i++; var obj = new Map(); ws();
        if (text[i] === "}") { i++; return { o: obj }; }
        for (;;) {
          ws(); if (text[i] !== "\"") fail("expected a key");
          var k = str(); ws(); if (text[i] !== ":") fail("expected ':'"); i++;
          obj.set(k, value()); ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === "}") { i++; return { o: obj }; }
          fail("expected ',' or '}'");
        }
      }
      if (c === "[") {
        i++; var arr = []; ws();
        if (text[i] === "]") { i++; return { a: arr }; }
        for (;;) {
          arr.push(value()); ws();
          if (text[i] === ",") { i++; continue; }
          if (text[i] === "]") { i++; return { a: arr }; }
          fail("expected ',' or ']'");
        }
      }
      if (c === "\"") return { s: str() };
      var m = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i, i + 400));
      if (m && m[0]) { i += m[0].length; return { n: m[0] }; }
      if (text.startsWith("true", i)) { i += 4; return { l: "true" }; }
      if (text.startsWith("false", i)) { i += 5; return { l: "false" }; }
      if (text.startsWith("null", i)) { i += 4; return { l: "null" }; }
      fail("unexpected input");
    }
    function str() {
      var start = i; i++;
      while (i < text.length && text[i] !== "\"") { if (text[i] === "\\") i++; i++; }
      if (i >= text.length) fail("unterminated string");
      i++;
      return JSON.parse(text.slice(start, i));
    }
    var out = value(); ws();
    if (i !== text.length) fail("trailing data");
    return out;
  }
  function formatNumber(lit) {
    if (!/[.eE]/.test(lit)) return BigInt(lit).toString();
    var v = Number(lit);
    if (!isFinite(v)) return "null";
    if (v === 0) return lit.trim().charAt(0) === "-" ? "-0.0" : "0.0";
    var a = Math.abs(v);
    if (a >= 1e16 || a < 1e-5) return v.toExponential();
    var s = String(v);
    return /[.e]/.test(s) ? s : s + ".0";
  }
  function cmpCodePoints(a, b) {
    var x = Array.from(a), y = Array.from(b);
    for (var i = 0; i < Math.min(x.length, y.length); i++) {
      var d = x[i].codePointAt(0) - y[i].codePointAt(0);
      if (d) return d;
    }
    return x.length - y.length;
  }
  function canonical(node) {
    if (node.o) {
      var keys = Array.from(node.o.keys()).sort(cmpCodePoints);
      return "{" + keys.map(function (k) { return JSON.stringify(k) + ":" + canonical(node.o.get(k)); }).join(",") + "}";
    }
    if (node.a) return "[" + node.a.map(canonical).join(",") + "]";
    if (node.s !== undefined) return JSON.stringify(node.s);
    if (node.n !== undefined) return formatNumber(node.n);
    return node.l;
  }

  // ---- SHA-256 (FIPS 180-4), synchronous so it works in any context, file:// included -------------------
  var K = new Uint32Array([
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01,
    0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc,
    0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08,
    0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);
  function sha256Bytes(bytes) {
    var n = bytes.length, blocks = ((n + 9 + 63) >> 6) << 6;
    var buf = new Uint8Array(blocks);
    buf.set(bytes); buf[n] = 0x80;
    var dv = new DataView(buf.buffer);
    dv.setUint32(blocks - 8, Math.floor(n / 0x20000000)); dv.setUint32(blocks - 4, (n << 3) >>> 0);
    var h = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    var w = new Uint32Array(64);
    for (var off = 0; off < blocks; off += 64) {
      for (var t = 0; t < 16; t++) w[t] = dv.getUint32(off + 4 * t);
      for (t = 16; t < 64; t++) {
        var x = w[t - 15], y = w[t - 2];
        var s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
        var s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
        w[t] = (w[t - 16] + s0 + w[t - 7] + s1) >>> 0;
      }
      var a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
      for (t = 0; t < 64; t++) {
        var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        var ch = (e & f) ^ (~e & g);
        var t1 = (hh + S1 + ch + K[t] + w[t]) >>> 0;
        var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        var maj = (a & b) ^ (a & c) ^ (b & c);
        var t2 = (S0 + maj) >>> 0;
        hh = g; g = f; f = e; e = (d + t1) >>> 0; d = c; c = b; b = a; a = (t1 + t2) >>> 0;
      }
      h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    }
    var hex = "";
    for (var j = 0; j < 8; j++) hex += ("00000000" + h[j].toString(16)).slice(-8);
    return hex;
  }
  function sha256Text(text) { return sha256Bytes(new TextEncoder().encode(text)); }

  // The trace's checksums block, recomputed from the text of the trace (see the schema's description).
  function verifyChecksums(text) {
    var root = parseLiteral(text);
    if (!root.o) return ["the trace is not a JSON object"];
    var sums = root.o.get("checksums");
    if (!sums || !sums.o) return ["no checksums block"];
    var want = function (k) { var n = sums.o.get(k); return n && n.s; };
    var problems = [];
    var inputs = root.o.get("inputs");
    var sub = new Map();
    ["id", "state", "criteria"].forEach(function (k) { if (inputs && inputs.o && inputs.o.has(k)) sub.set(k, inputs.o.get(k)); });
    var content = new Map(root.o); content.delete("checksums");
    var got = {
      inputs_sha256: sha256Text(canonical({ o: sub })),
      runs_sha256: sha256Text(canonical(root.o.get("runs") || { l: "null" })),
      content_sha256: sha256Text(canonical({ o: content }))
    };
    Object.keys(got).forEach(function (k) {
      if (want(k) !== got[k]) problems.push("checksums." + k + " is " + want(k) + " but the content hashes to " + got[k]);
    });
    var inputsSum = inputs && inputs.o && inputs.o.get("sha256");
    if (inputsSum && inputsSum.s !== got.inputs_sha256) problems.push("inputs.sha256 does not match the inputs");
    return problems;
  }

  window.SemifCheck = {
    validate: validate,
    parseLiteral: parseLiteral,
    canonical: function (text) { return canonical(parseLiteral(text)); },
    formatNumber: formatNumber,
    sha256Text: sha256Text,
    sha256Bytes: sha256Bytes,
    verifyChecksums: verifyChecksums
  };
})();
