/* The parser of the page's Jinja (jinja.js): a chat template's source lexed into text and tags with Jinja's
   whitespace rules (trim_blocks, lstrip_blocks, '-' markers), tags and expressions parsed into plain node objects
   that jinja.js runs. Only the tags a chat template uses are accepted; any other is refused by name and line
   (a JinjaError), never guessed. Pure. In the page: window.SemifLiveJinjaParse. */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifLiveJinjaParse = api;
})(this, function () {
  "use strict";

  function JinjaError(message) {
    var e = new Error(message);
    e.name = "JinjaError";
    return e;
  }

  // ---- lexing: text and tags, with Jinja's whitespace rules -------------------------------------------
  function lineOf(src, pos) { return src.slice(0, pos).split("\n").length; }

  function lex(src) {
    var out = [];
    var i = 0;
    var stripNext = false, trimNext = false;
    while (i < src.length) {
      var m = /\{[{%#]/g;
      m.lastIndex = i;
      var found = m.exec(src);
      var textEnd = found ? found.index : src.length;
      var text = src.slice(i, textEnd);
      if (stripNext) text = text.replace(/^\s+/, "");
      else if (trimNext && text[0] === "\n") text = text.slice(1);
      else if (trimNext && text.slice(0, 2) === "\r\n") text = text.slice(2);
      stripNext = trimNext = false;
      if (!found) { out.push({ t: "text", v: text }); break; }
      var kind = src[found.index + 1];
      var start = found.index + 2;
      var mod = src[start];
      if (mod === "-") { text = text.replace(/\s+$/, ""); start++; }
      else if (mod === "+") { start++; }
      else if (kind !== "{") {
        // lstrip_blocks: spaces and tabs between the start of a source line and a block or comment tag go
        var k = found.index;
        while (k > i && (src[k - 1] === " " || src[k - 1] === "\t")) k--;
        if (k === 0 || src[k - 1] === "\n") {
          var ws = found.index - k;
          text = text.slice(0, Math.max(0, text.length - ws));
        }
      }
      if (text) out.push({ t: "text", v: text });
      var close = kind === "{" ? "}}" : kind === "%" ? "%}" : "#}";
      var j = kind === "#" ? src.indexOf("#}", start) : scanTag(src, start, close);
      if (j < 0) throw JinjaError("unclosed '{" + kind + "' at line " + lineOf(src, found.index));
      var inner = src.slice(start, j);
      if (inner.slice(-1) === "-") { inner = inner.slice(0, -1); stripNext = true; }
      else if (inner.slice(-1) === "+") { inner = inner.slice(0, -1); }
      else if (kind !== "{") { trimNext = true; }
      var line = lineOf(src, found.index);
      if (kind === "%") {
        var raw = /^\s*raw\s*$/.test(inner);
        if (raw) {
          var endRaw = /\{%-?\s*endraw\s*-?%\}/g;
          endRaw.lastIndex = j + 2;
          var er = endRaw.exec(src);
          if (!er) throw JinjaError("unclosed raw block at line " + line);
          var body = src.slice(j + 2, er.index);
          if (trimNext && body[0] === "\n") body = body.slice(1);
          out.push({ t: "text", v: body });
          i = er.index + er[0].length;
          stripNext = /-%\}$/.test(er[0]);
          trimNext = !stripNext;
          continue;
        }
        out.push({ t: "block", v: inner, line: line });
      } else if (kind === "{") {
        out.push({ t: "var", v: inner, line: line });
      }
      i = j + 2;
    }
    return out;
  }
  // The end of a tag: the first close delimiter outside a string literal and outside brackets (Jinja's lexer
  // balances them too, so a dict literal's "}}" does not end a {{ … }} tag).
  function scanTag(src, i, close) {
    var q = null, depth = 0;
    for (; i < src.length; i++) {
      var c = src[i];
      if (q) {
        if (c === "\\") i++;
        else if (c === q) q = null;
      } else if (c === "'" || c === '"') q = c;
      else if (depth === 0 && src.substr(i, 2) === close) return i;
      else if (depth === 0 && (c === "-" || c === "+") && src.substr(i + 1, 2) === close) return i + 1;
      else if (c === "(" || c === "[" || c === "{") depth++;
      else if ((c === ")" || c === "]" || c === "}") && depth > 0) depth--;
    }
    return -1;
  }

  // ---- expression tokens ---------------------------------------------------------------------------------
  var OPS = ["//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "(", ")", "[", "]", "{", "}",
             ",", ":", ".", "|", "="];
  function tokens(s, line) {
    var out = [], i = 0;
    while (i < s.length) {
      var c = s[i];
      if (/\s/.test(c)) { i++; continue; }
      if (c === "'" || c === '"') {
        var j = i + 1, v = "";
        while (j < s.length && s[j] !== c) {
          if (s[j] === "\\") {
            var n = s[j + 1];
            var map = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0" };
            if (n in map) { v += map[n]; j += 2; continue; }
            if (n === "u" || n === "x") {
              var len = n === "u" ? 4 : 2;
              v += String.fromCharCode(parseInt(s.substr(j + 2, len), 16));
              j += 2 + len;
              continue;
            }
            v += "\\";
            j++;
            continue;
          }
          v += s[j++];
        }
        if (j >= s.length) throw JinjaError("unterminated string at line " + line);
        out.push({ k: "str", v: v });
        i = j + 1;
        continue;
      }
      var num = /^(\d+\.\d*|\d*\.\d+|\d+)([eE][+-]?\d+)?/.exec(s.slice(i));
      if (num && /\d/.test(c)) { out.push({ k: "num", v: Number(num[0]), float: /[.eE]/.test(num[0]) }); i += num[0].length; continue; }
      var name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(i));
      if (name) { out.push({ k: "name", v: name[0] }); i += name[0].length; continue; }
      var op = OPS.filter(function (o) { return s.substr(i, o.length) === o; })[0];
      if (!op) throw JinjaError("unexpected character " + JSON.stringify(c) + " at line " + line);
      out.push({ k: "op", v: op });
      i += op.length;
    }
    return out;
  }

  // ---- expressions: a recursive-descent parser with Jinja's precedence -----------------------------------
  function Parser(toks, line) { this.t = toks; this.i = 0; this.line = line; }
  Parser.prototype.peek = function (o) { return this.t[this.i + (o || 0)]; };
  Parser.prototype.isOp = function (v) { var x = this.peek(); return x && x.k === "op" && x.v === v; };
  Parser.prototype.isName = function (v) { var x = this.peek(); return x && x.k === "name" && x.v === v; };
  Parser.prototype.fail = function (what) {
    var x = this.peek();
    throw JinjaError(what + " at line " + this.line + (x ? " (near " + JSON.stringify(x.v) + ")" : " (at the end of the tag)"));
  };
  Parser.prototype.expectOp = function (v) { if (!this.isOp(v)) this.fail("expected '" + v + "'"); this.i++; };
  Parser.prototype.name = function () { var x = this.peek(); if (!x || x.k !== "name") this.fail("expected a name"); this.i++; return x.v; };
  Parser.prototype.done = function () { return this.i >= this.t.length; };
  Parser.prototype.expr = function () {
    var a = this.or();
    if (this.isName("if")) {
      this.i++;
      var c = this.or(), b = null;
      if (this.isName("else")) { this.i++; b = this.expr(); }
      return { n: "cond", c: c, a: a, b: b };
    }
    return a;
  };
  Parser.prototype.or = function () {
    var a = this.and();
    while (this.isName("or")) { this.i++; a = { n: "or", a: a, b: this.and() }; }
    return a;
  };
  Parser.prototype.and = function () {
    var a = this.not();
    while (this.isName("and")) { this.i++; a = { n: "and", a: a, b: this.not() }; }
    return a;
  };
  Parser.prototype.not = function () {
    if (this.isName("not")) { this.i++; return { n: "not", a: this.not() }; }
    return this.compare();
  };
  Parser.prototype.compare = function () {
    var a = this.math1();
    for (;;) {
      var x = this.peek();
      if (x && x.k === "op" && ["==", "!=", "<", ">", "<=", ">="].indexOf(x.v) >= 0) { this.i++; a = { n: "cmp", op: x.v, a: a, b: this.math1() }; }
      else if (this.isName("in")) { this.i++; a = { n: "in", a: a, b: this.math1() }; }
      else if (this.isName("not") && this.peek(1) && this.peek(1).k === "name" && this.peek(1).v === "in") {
        this.i += 2;
        a = { n: "not", a: { n: "in", a: a, b: this.math1() } };
      } else return a;
    }
  };
  // One level of left-associative binary operators: next (op next)*.
  Parser.prototype.binary = function (ops, next) {
    var a = next.call(this), self = this;
    while (ops.some(function (o) { return self.isOp(o); })) {
      var op = this.peek().v;
      this.i++;
      a = { n: "bin", op: op, a: a, b: next.call(this) };
    }
    return a;
  };
  Parser.prototype.math1 = function () { return this.binary(["+", "-"], this.concat); };
  Parser.prototype.concat = function () { return this.binary(["~"], this.math2); };
  Parser.prototype.math2 = function () { return this.binary(["*", "/", "//", "%"], this.pow); };
  Parser.prototype.pow = function () { return this.binary(["**"], this.unary); };
  Parser.prototype.unary = function () {
    if (this.isOp("-")) { this.i++; return this.filters({ n: "neg", a: this.unary() }); }
    if (this.isOp("+")) { this.i++; return this.unary(); }
    return this.filters(this.postfix(this.primary()));
  };
  Parser.prototype.primary = function () {
    var x = this.peek();
    if (!x) this.fail("expected a value");
    this.i++;
    if (x.k === "str") {
      var s = x.v;
      while (this.peek() && this.peek().k === "str") { s += this.peek().v; this.i++; }  // adjacent literals join
      return { n: "lit", v: s };
    }
    if (x.k === "num") return { n: "lit", v: x.v };
    if (x.k === "name") {
      var consts = { true: true, True: true, false: false, False: false, none: null, None: null };
      if (Object.prototype.hasOwnProperty.call(consts, x.v)) return { n: "lit", v: consts[x.v] };
      return { n: "var", name: x.v };
    }
    if (x.v === "(") {
      if (this.isOp(")")) { this.i++; return { n: "list", items: [] }; }
      var e = this.expr();
      if (this.isOp(",")) {
        var items = [e];
        while (this.isOp(",")) { this.i++; if (this.isOp(")")) break; items.push(this.expr()); }
        this.expectOp(")");
        return { n: "list", items: items };
      }
      this.expectOp(")");
      return e;
    }
    if (x.v === "[") {
      var li = [];
      while (!this.isOp("]")) { li.push(this.expr()); if (!this.isOp(",")) break; this.i++; }
      this.expectOp("]");
      return { n: "list", items: li };
    }
    if (x.v === "{") {
      var pairs = [];
      while (!this.isOp("}")) {
        var k = this.expr();
        this.expectOp(":");
        pairs.push([k, this.expr()]);
        if (!this.isOp(",")) break;
        this.i++;
      }
      this.expectOp("}");
      return { n: "dict", pairs: pairs };
    }
    this.i--;
    return this.fail("unexpected token");
  };
  Parser.prototype.args = function () {
    var args = [], kwargs = {};
    this.expectOp("(");
    while (!this.isOp(")")) {
      var x = this.peek(), y = this.peek(1);
      if (x && x.k === "name" && y && y.k === "op" && y.v === "=") { this.i += 2; kwargs[x.v] = this.expr(); }
      else args.push(this.expr());
      if (!this.isOp(",")) break;
      this.i++;
    }
    this.expectOp(")");
    return { args: args, kwargs: kwargs };
  };
  Parser.prototype.postfix = function (e) {
    for (;;) {
      if (this.isOp(".")) {
        this.i++;
        var x = this.peek();
        if (x && x.k === "num") { this.i++; e = { n: "item", a: e, key: { n: "lit", v: x.v } }; }
        else e = { n: "attr", a: e, name: this.name() };
      } else if (this.isOp("[")) {
        this.i++;
        var parts = [null, null, null], k = 0, slice = false;
        while (!this.isOp("]")) {
          if (this.isOp(":")) { this.i++; slice = true; k++; if (k > 2) this.fail("a slice has at most 3 parts"); continue; }
          parts[k] = this.expr();
        }
        this.expectOp("]");
        e = slice ? { n: "slice", a: e, parts: parts } : { n: "item", a: e, key: parts[0] };
      } else if (this.isOp("(")) {
        e = { n: "call", f: e, call: this.args() };
      } else return e;
    }
  };
  Parser.prototype.filters = function (e) {
    for (;;) {
      if (this.isOp("|")) {
        this.i++;
        var name = this.name();
        var call = this.isOp("(") ? this.args() : { args: [], kwargs: {} };
        e = { n: "filter", name: name, a: e, call: call };
      } else if (this.isName("is")) {
        this.i++;
        var neg = false;
        if (this.isName("not")) { neg = true; this.i++; }
        var test = this.name();
        var targs = { args: [], kwargs: {} };
        if (this.isOp("(")) targs = this.args();
        else if (this.peek() && (this.peek().k === "str" || this.peek().k === "num" ||
                 (this.peek().k === "name" && ["and", "or", "not", "if", "else", "in", "is"].indexOf(this.peek().v) < 0))) {
          targs.args.push(this.postfix(this.primary()));  // Jinja's one bare argument: `x is divisibleby 3`
        }
        e = { n: "test", name: test, neg: neg, a: e, call: targs };
      } else return e;
    }
  };

  function parseExpr(src, line) {
    var p = new Parser(tokens(src, line), line);
    var e = p.expr();
    if (!p.done()) p.fail("unexpected text after the expression");
    return e;
  }

  // ---- statements ---------------------------------------------------------------------------------------
  function parseTemplate(src) {
    var toks = lex(src);
    var pos = 0;
    function body(ends) {
      var nodes = [];
      while (pos < toks.length) {
        var t = toks[pos];
        if (t.t === "text") { nodes.push({ n: "text", v: t.v }); pos++; continue; }
        if (t.t === "var") { nodes.push({ n: "out", e: parseExpr(t.v, t.line) }); pos++; continue; }
        var word = (/^\s*([A-Za-z_]+)/.exec(t.v) || [])[1];
        if (ends.indexOf(word) >= 0) return { nodes: nodes, end: word, tok: t };
        pos++;
        nodes.push(statement(word, t));
      }
      if (ends.length) throw JinjaError("missing {% " + ends[ends.length - 1] + " %} at the end of the template");
      return { nodes: nodes, end: null };
    }
    function rest(t, word) { return t.v.replace(/^\s*[A-Za-z_]+/, ""); }
    function statement(word, t) {
      var src = rest(t, word);
      var p = new Parser(tokens(src, t.line), t.line);
      if (word === "if") {
        var branches = [], cond = p.expr(), r;
        if (!p.done()) p.fail("unexpected text in if");
        for (;;) {
          r = body(["elif", "else", "endif"]);
          branches.push({ c: cond, body: r.nodes });
          pos++;
          if (r.end === "elif") { cond = parseExpr(rest(r.tok), r.tok.line); continue; }
          if (r.end === "else") { r = body(["endif"]); pos++; branches.push({ c: null, body: r.nodes }); }
          return { n: "if", branches: branches };
        }
      }
      if (word === "for") {
        var targets = [p.name()];
        while (p.isOp(",")) { p.i++; targets.push(p.name()); }
        if (!p.isName("in")) p.fail("expected 'in'");
        p.i++;
        var iter = p.or(), filt = null;
        if (p.isName("if")) { p.i++; filt = p.expr(); }
        if (p.isName("recursive")) p.fail("recursive loops are not supported here");
        if (!p.done()) p.fail("unexpected text in for");
        var fb = body(["else", "endfor"]), elseBody = [];
        pos++;
        if (fb.end === "else") { elseBody = body(["endfor"]).nodes; pos++; }
        return { n: "for", targets: targets, iter: iter, filt: filt, body: fb.nodes, elseBody: elseBody };
      }
      if (word === "set") {
        var tg = [p.name()], attr = null;
        if (p.isOp(".")) { p.i++; attr = p.name(); }
        while (p.isOp(",")) { p.i++; tg.push(p.name()); }
        if (p.done()) {  // {% set x %}…{% endset %}
          var sb = body(["endset"]);
          pos++;
          return { n: "setblock", name: tg[0], body: sb.nodes };
        }
        p.expectOp("=");
        var value = p.expr();
        if (!p.done()) p.fail("unexpected text in set");
        return { n: "set", targets: tg, attr: attr, e: value };
      }
      if (word === "macro") {
        var mname = p.name(), params = [];
        p.expectOp("(");
        while (!p.isOp(")")) {
          var pn = p.name(), def = null;
          if (p.isOp("=")) { p.i++; def = p.expr(); }
          params.push({ name: pn, def: def });
          if (!p.isOp(",")) break;
          p.i++;
        }
        p.expectOp(")");
        var mb = body(["endmacro"]);
        pos++;
        return { n: "macro", name: mname, params: params, body: mb.nodes };
      }
      if (word === "generation") {  // transformers' AssistantTracker: the body, rendered as is
        var gb = body(["endgeneration"]);
        pos++;
        return { n: "group", body: gb.nodes };
      }
      if (word === "break" || word === "continue") return { n: word };
      if (word === "do") return { n: "do", e: p.expr() };
      throw JinjaError("unsupported Jinja tag '" + (word || t.v.trim()) + "' at line " + t.line +
                       " (this page renders if, for, set, macro, generation, break, continue, raw)");
    }
    var r = body([]);
    return r.nodes;
  }

  return { JinjaError: JinjaError, parseTemplate: parseTemplate, parseExpr: parseExpr };
});
