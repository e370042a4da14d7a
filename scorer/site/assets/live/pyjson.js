/* Python's json.loads and json.dumps, as far as judging a generated lane needs them: a live run's trace must
   carry the very words scorer.trace.derive.parse_array writes (verify re-derives them), and JSON.parse words its
   errors, and takes NaN, its own way. So this is CPython 3.11's decoder (Modules/_json.c, json/decoder.py):
   the same documents accepted (NaN, Infinity, -Infinity too), the same error messages at the same character
   positions (code points, as Python counts them), ints kept apart from floats; and json.dumps(v,
   ensure_ascii=False) of what it parsed (", " and ": " separators, Python's float repr).
   Pure: tests/site/test_live_prompt.py compares both with Python on a corpus. In the page: window.SemifLivePyJson. */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifLivePyJson = api;
})(this, function () {
  "use strict";

  function DecodeError(msg, pos) {
    var e = new Error(msg + " at char " + pos);
    e.name = "JSONDecodeError";
    e.msg = msg;
    e.pos = pos;
    return e;
  }
  function Stop(pos) { this.pos = pos; }  // the scanner's StopIteration: no value starts at pos
  // Python's values that JS has no type for: an int (its digits, any size) and a float.
  function PyInt(digits) { this.digits = digits; }
  function PyFloat(x) { this.x = x; }
  function PyDict(pairs) { this.pairs = pairs; }  // insertion order, a repeated key keeps its first place

  var WS = { " ": 1, "\t": 1, "\n": 1, "\r": 1 };
  var ESC = { '"': '"', "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" };
  // str.isspace(): what Python's str.strip() removes.
  var PY_SPACE = /[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;

  function pyStrip(s) {
    var c = Array.from(s), a = 0, b = c.length;
    while (a < b && PY_SPACE.test(c[a])) a++;
    while (b > a && PY_SPACE.test(c[b - 1])) b--;
    return c.slice(a, b).join("");
  }

  function Scanner(text) { this.s = Array.from(text); this.n = this.s.length; }
  Scanner.prototype.ws = function (i) { while (i < this.n && WS[this.s[i]]) i++; return i; };
  Scanner.prototype.at = function (i, word) { return this.s.slice(i, i + word.length).join("") === word; };
  // scan_once: [value, end] or throws Stop(idx) where no value starts.
  Scanner.prototype.value = function (i) {
    if (i >= this.n) throw new Stop(i);
    var c = this.s[i];
    if (c === '"') return this.string(i + 1);
    if (c === "{") return this.object(i + 1);
    if (c === "[") return this.array(i + 1);
    var lits = [["null", null], ["true", true], ["false", false], ["NaN", new PyFloat(NaN)],
                ["Infinity", new PyFloat(Infinity)], ["-Infinity", new PyFloat(-Infinity)]];
    for (var k = 0; k < lits.length; k++) if (this.at(i, lits[k][0])) return [lits[k][1], i + lits[k][0].length];
    return this.number(i);
  };
  function digit(c) { return c !== undefined && c >= "0" && c <= "9"; }
  Scanner.prototype.number = function (start) {
    var s = this.s, i = start;
    if (s[i] === "-") i++;
    if (s[i] >= "1" && s[i] <= "9") { while (digit(s[i])) i++; } else if (s[i] === "0") i++; else throw new Stop(start);
    var isFloat = false;
    if (s[i] === "." && digit(s[i + 1])) { isFloat = true; i += 2; while (digit(s[i])) i++; }
    if (s[i] === "e" || s[i] === "E") {
      var e = i;
      i++;
      if (s[i] === "-" || s[i] === "+") i++;
      if (digit(s[i])) { isFloat = true; while (digit(s[i])) i++; } else i = e;
    }
    var tok = s.slice(start, i).join("");
    return [isFloat ? new PyFloat(Number(tok)) : new PyInt(tok), i];
  };
  Scanner.prototype.string = function (end) {
    var s = this.s, begin = end - 1, out = "";
    for (;;) {
      var next = end, c = "";
      for (; next < this.n; next++) {
        c = s[next];
        if (c === '"' || c === "\\") break;
        if (c.codePointAt(0) <= 0x1f) throw DecodeError("Invalid control character at", next);
      }
      if (next >= this.n) throw DecodeError("Unterminated string starting at", begin);
      out += s.slice(end, next).join("");
      next++;
      if (c === '"') return [out, next];
      if (next === this.n) throw DecodeError("Unterminated string starting at", begin);
      c = s[next];
      if (c !== "u") {
        if (!(c in ESC)) throw DecodeError("Invalid \\escape", next - 1);
        out += ESC[c];
        end = next + 1;
        continue;
      }
      var hex = this.hex4(next + 1);
      end = next + 5;
      // a high surrogate followed by \u and a low one is one character
      if (hex >= 0xd800 && hex <= 0xdbff && end + 6 < this.n && s[end] === "\\" && s[end + 1] === "u") {
        var low = this.hex4(end + 2);
        if (low >= 0xdc00 && low <= 0xdfff) {
          out += String.fromCodePoint(0x10000 + ((hex - 0xd800) << 10) + (low - 0xdc00));
          end += 6;
          continue;
        }
      }
      out += String.fromCharCode(hex);
    }
  };
  Scanner.prototype.hex4 = function (i) {
    if (i + 4 >= this.n) throw DecodeError("Invalid \\uXXXX escape", i - 1);
    var t = this.s.slice(i, i + 4).join("");
    if (!/^[0-9a-fA-F]{4}$/.test(t)) throw DecodeError("Invalid \\uXXXX escape", i - 1);
    return parseInt(t, 16);
  };
  Scanner.prototype.array = function (i) {
    var out = [];
    i = this.ws(i);
    if (i < this.n && this.s[i] === "]") return [out, i + 1];
    for (;;) {
      var r = this.value(i);
      out.push(r[0]);
      i = this.ws(r[1]);
      if (i < this.n && this.s[i] === "]") return [out, i + 1];
      if (i >= this.n || this.s[i] !== ",") throw DecodeError("Expecting ',' delimiter", i);
      i = this.ws(i + 1);
    }
  };
  Scanner.prototype.object = function (i) {
    var pairs = [];
    i = this.ws(i);
    if (i < this.n && this.s[i] === "}") return [new PyDict(pairs), i + 1];
    for (;;) {
      if (i >= this.n || this.s[i] !== '"') throw DecodeError("Expecting property name enclosed in double quotes", i);
      var k = this.string(i + 1);
      i = this.ws(k[1]);
      if (i >= this.n || this.s[i] !== ":") throw DecodeError("Expecting ':' delimiter", i);
      var v = this.value(this.ws(i + 1));
      var old = pairs.filter(function (p) { return p[0] === k[0]; })[0];
      if (old) old[1] = v[0]; else pairs.push([k[0], v[0]]);
      i = this.ws(v[1]);
      if (i < this.n && this.s[i] === "}") return [new PyDict(pairs), i + 1];
      if (i >= this.n || this.s[i] !== ",") throw DecodeError("Expecting ',' delimiter", i);
      i = this.ws(i + 1);
    }
  };

  // json.loads(text): the value (PyInt, PyFloat and PyDict where JS has no such type), or a thrown JSONDecodeError.
  function loads(text) {
    var sc = new Scanner(String(text));
    if (sc.s[0] === "\ufeff") throw DecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    var r;
    try { r = sc.value(sc.ws(0)); } catch (e) {
      if (e instanceof Stop) throw DecodeError("Expecting value", e.pos);
      throw e;
    }
    var end = sc.ws(r[1]);
    if (end !== sc.n) throw DecodeError("Extra data", end);
    return r[0];
  }

  // repr(float): the shortest digits, as Python lays them out (exponent below 1e-4 and from 1e16).
  function floatRepr(x) {
    if (isNaN(x)) return "NaN";
    if (!isFinite(x)) return x > 0 ? "Infinity" : "-Infinity";
    if (x === 0) return 1 / x < 0 ? "-0.0" : "0.0";
    var a = Math.abs(x);
    if (a >= 1e16 || a < 1e-4) {
      var m = x.toExponential().split("e"), exp = Number(m[1]);
      return m[0] + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
    }
    var s = String(x);
    return /[.e]/.test(s) ? s : s + ".0";
  }
  // json.dumps(v, ensure_ascii=False) of a value loads() returned.
  function dumps(v) {
    if (v === null) return "null";
    if (v === true) return "true";
    if (v === false) return "false";
    if (typeof v === "string") return JSON.stringify(v);
    if (v instanceof PyInt) return v.digits.replace(/^(-?)0*(\d)/, "$1$2").replace(/^-0$/, "0");
    if (v instanceof PyFloat) return floatRepr(v.x);
    if (Array.isArray(v)) return "[" + v.map(dumps).join(", ") + "]";
    return "{" + v.pairs.map(function (p) { return JSON.stringify(p[0]) + ": " + dumps(p[1]); }).join(", ") + "}";
  }
  // type(v).__name__
  function typeName(v) {
    if (v === null) return "NoneType";
    if (typeof v === "boolean") return "bool";
    if (typeof v === "string") return "str";
    if (v instanceof PyInt) return "int";
    if (v instanceof PyFloat) return "float";
    return Array.isArray(v) ? "list" : "dict";
  }

  return { loads: loads, dumps: dumps, typeName: typeName, pyStrip: pyStrip, floatRepr: floatRepr, DecodeError: DecodeError };
});
