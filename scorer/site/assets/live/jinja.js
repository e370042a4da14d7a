/* A model's chat template (Jinja) rendered in the page with the semantics SemIf's Python side renders it with:
   transformers' apply_chat_template, i.e. Jinja2's sandbox with trim_blocks and lstrip_blocks on, the
   loop-controls extension, transformers' {% generation %} block, its tojson filter (ensure_ascii off) and its
   raise_exception global. Only the part of Jinja that chat templates use is here; a tag, filter, test or
   method outside it is refused by name (render throws a JinjaError saying what and where), never guessed.
   Values follow Python's rules where a template can tell (truthiness, str() of None/True/False, lists and
   dicts, negative indexes, slices, string methods). Pure: tests/js_live/ checks it against the Python
   renderer's strings (tests/site/test_live_prompt.py). The parser is jinja-parse.js. In the page: window.SemifLiveJinja. */
(function (root, factory) {
  "use strict";
  var node = typeof module === "object" && module.exports;
  // the parser (jinja-parse.js): in the page it comes before this module in assets/live-modules.js
  var api = factory(node ? require("./jinja-parse.js") : root.SemifLiveJinjaParse);
  if (node) module.exports = api;
  else root.SemifLiveJinja = api;
})(this, function (parser) {
  "use strict";

  var JinjaError = parser.JinjaError, parseTemplate = parser.parseTemplate;

  // Jinja's Undefined: prints as "", is false, and fails loudly when used as a value in arithmetic.
  var UNDEFINED = Object.freeze({ __undefined: true });
  function isUndef(v) { return v === UNDEFINED || v === undefined; }

  // ---- values with Python's rules ---------------------------------------------------------------------
  function Namespace(init) { this.__ns = true; var self = this; Object.keys(init || {}).forEach(function (k) { self[k] = init[k]; }); }
  function isDict(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && !isUndef(v) && !(v instanceof Namespace); }
  function truthy(v) {
    if (isUndef(v) || v === null || v === false || v === 0 || v === "") return false;
    if (Array.isArray(v)) return v.length > 0;
    if (isDict(v)) return Object.keys(v).length > 0;
    return true;
  }
  function pyRepr(v) {
    if (typeof v === "string") {
      var q = v.indexOf("'") >= 0 && v.indexOf('"') < 0 ? '"' : "'";
      return q + v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t")
        .replace(new RegExp(q, "g"), "\\" + q) + q;
    }
    return pyStr(v);
  }
  function pyNum(n) {
    if (Number.isInteger(n)) return String(n);
    if (!isFinite(n)) return isNaN(n) ? "nan" : n > 0 ? "inf" : "-inf";
    var s = String(n);
    var m = /^(-?)(\d+(?:\.\d+)?)e([+-])(\d+)$/.exec(s);
    if (m) return m[1] + m[2] + "e" + m[3] + (m[4].length < 2 ? "0" : "") + m[4];
    return s;
  }
  function pyStr(v) {
    if (isUndef(v)) return "";
    if (v === null) return "None";
    if (v === true) return "True";
    if (v === false) return "False";
    if (typeof v === "number") return pyNum(v);
    if (typeof v === "string") return v;
    if (Array.isArray(v)) return "[" + v.map(pyRepr).join(", ") + "]";
    if (v instanceof Namespace) return "<Namespace>";
    if (typeof v === "function") return "<function>";
    return "{" + Object.keys(v).map(function (k) { return pyRepr(k) + ": " + pyRepr(v[k]); }).join(", ") + "}";
  }
  // json.dumps(x, ensure_ascii=False) with Python's default separators (", " and ": "), or indented.
  function pyJson(v, indent, level) {
    level = level || 0;
    if (isUndef(v)) throw JinjaError("tojson of an undefined value");
    if (v === null) return "null";
    if (v === true) return "true";
    if (v === false) return "false";
    if (typeof v === "number") return pyNum(v).replace(/^nan$/, "NaN").replace(/^inf$/, "Infinity").replace(/^-inf$/, "-Infinity");
    if (typeof v === "string") {
      return '"' + v.replace(/[\\"\u0000-\u001f]/g, function (c) {
        var map = { "\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f" };
        return map[c] || "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4);
      }) + '"';
    }
    var nl = indent == null ? "" : "\n" + " ".repeat(indent * (level + 1));
    var end = indent == null ? "" : "\n" + " ".repeat(indent * level);
    var sep = indent == null ? ", " : ",";
    if (Array.isArray(v)) {
      if (!v.length) return "[]";
      return "[" + nl + v.map(function (x) { return pyJson(x, indent, level + 1); }).join(sep + nl) + end + "]";
    }
    var keys = Object.keys(v);
    if (!keys.length) return "{}";
    return "{" + nl + keys.map(function (k) { return pyJson(k) + ": " + pyJson(v[k], indent, level + 1); }).join(sep + nl) + end + "}";
  }
  function eq(a, b) {
    if (isUndef(a) || isUndef(b)) return isUndef(a) && isUndef(b);
    if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every(function (x, i) { return eq(x, b[i]); });
    if (isDict(a) && isDict(b)) {
      var ka = Object.keys(a), kb = Object.keys(b);
      return ka.length === kb.length && ka.every(function (k) { return Object.prototype.hasOwnProperty.call(b, k) && eq(a[k], b[k]); });
    }
    return a === b;
  }
  function typeName(v) {
    if (isUndef(v)) return "Undefined";
    if (v === null) return "NoneType";
    if (Array.isArray(v)) return "list";
    if (isDict(v)) return "dict";
    return { string: "str", number: "int", boolean: "bool" }[typeof v] || typeof v;
  }
  function need(v, what) {
    if (isUndef(v)) throw JinjaError(what + " of an undefined value");
    return v;
  }
  function index(seq, k) {
    var n = seq.length;
    if (typeof k !== "number") return UNDEFINED;
    var i = k < 0 ? n + k : k;
    return i >= 0 && i < n ? seq[i] : UNDEFINED;
  }
  function pySlice(seq, a, b, c) {
    var isStr = typeof seq === "string";
    var arr = isStr ? Array.from(seq) : seq;
    var n = arr.length, step = c == null ? 1 : c;
    if (step === 0) throw JinjaError("slice step cannot be zero");
    function norm(x, dflt) {
      if (x == null) return dflt;
      if (x < 0) x += n;
      return step > 0 ? Math.min(Math.max(x, 0), n) : Math.min(Math.max(x, -1), n - 1);
    }
    var start = norm(a, step > 0 ? 0 : n - 1), stop = norm(b, step > 0 ? n : -1), out = [];
    for (var i = start; step > 0 ? i < stop : i > stop; i += step) out.push(arr[i]);
    return isStr ? out.join("") : out;
  }
  function stripChars(s, chars, left, right) {
    var set = chars == null ? null : String(chars);
    var isWs = function (c) { return set === null ? /\s/.test(c) : set.indexOf(c) >= 0; };
    var a = 0, b = s.length;
    if (left) while (a < b && isWs(s[a])) a++;
    if (right) while (b > a && isWs(s[b - 1])) b--;
    return s.slice(a, b);
  }
  function pySplit(s, sep, max) {
    var limit = max == null || max < 0 ? Infinity : max;
    var out = [];
    if (sep == null) {
      var rest = s.replace(/^\s+/, "");
      while (rest.length) {
        if (out.length >= limit) { out.push(rest); return out; }
        var m = /\s+/.exec(rest);
        if (!m) { out.push(rest); break; }
        out.push(rest.slice(0, m.index));
        rest = rest.slice(m.index + m[0].length);
      }
      return out;
    }
    if (sep === "") throw JinjaError("split: empty separator");
    var pos = 0;
    for (;;) {
      var at = out.length < limit ? s.indexOf(sep, pos) : -1;
      if (at < 0) { out.push(s.slice(pos)); return out; }
      out.push(s.slice(pos, at));
      pos = at + sep.length;
    }
  }
  var STR_METHODS = {
    strip: function (s, c) { return stripChars(s, c, true, true); },
    lstrip: function (s, c) { return stripChars(s, c, true, false); },
    rstrip: function (s, c) { return stripChars(s, c, false, true); },
    upper: function (s) { return s.toUpperCase(); },
    lower: function (s) { return s.toLowerCase(); },
    title: function (s) { return s.replace(/[A-Za-z]+/g, function (w) { return w[0].toUpperCase() + w.slice(1).toLowerCase(); }); },
    capitalize: function (s) { return s ? s[0].toUpperCase() + s.slice(1).toLowerCase() : s; },
    startswith: function (s, p) { return (Array.isArray(p) ? p : [p]).some(function (x) { return s.startsWith(x); }); },
    endswith: function (s, p) { return (Array.isArray(p) ? p : [p]).some(function (x) { return s.endsWith(x); }); },
    split: function (s, sep, max) { return pySplit(s, sep, max); },
    replace: function (s, a, b, n) {
      if (n == null || n < 0) return s.split(a).join(b);
      var parts = s.split(a);
      return parts.slice(0, n + 1).join(b) + (parts.length > n + 1 ? a + parts.slice(n + 1).join(a) : "");
    },
    find: function (s, x) { return s.indexOf(x); },
    count: function (s, x) { return x === "" ? s.length + 1 : s.split(x).length - 1; },
    join: function (s, items) { return items.map(pyStr).join(s); },
    isdigit: function (s) { return /^\d+$/.test(s); },
    isspace: function (s) { return /^\s+$/.test(s); },
  };
  var DICT_METHODS = {
    items: function (d) { return Object.keys(d).map(function (k) { return [k, d[k]]; }); },
    keys: function (d) { return Object.keys(d); },
    values: function (d) { return Object.keys(d).map(function (k) { return d[k]; }); },
    get: function (d, k, dflt) { return Object.prototype.hasOwnProperty.call(d, k) ? d[k] : dflt === undefined ? null : dflt; },
  };
  // Jinja's getattr: an attribute (a method of str/dict here), then the item of that name.
  function getAttr(v, name) {
    if (isUndef(v)) return UNDEFINED;
    if (typeof v === "string" && STR_METHODS[name]) return function () { return STR_METHODS[name].apply(null, [v].concat([].slice.call(arguments))); };
    if (isDict(v) && DICT_METHODS[name] && !Object.prototype.hasOwnProperty.call(v, name)) {
      return function () { return DICT_METHODS[name].apply(null, [v].concat([].slice.call(arguments))); };
    }
    if (v instanceof Namespace) return Object.prototype.hasOwnProperty.call(v, name) ? v[name] : UNDEFINED;
    if (isDict(v)) return Object.prototype.hasOwnProperty.call(v, name) ? v[name] : UNDEFINED;
    return UNDEFINED;
  }
  function getItem(v, k) {
    if (isUndef(v)) return UNDEFINED;
    if (Array.isArray(v)) return index(v, k);
    if (typeof v === "string") { var r = index(Array.from(v), k); return r; }
    if (isDict(v) || v instanceof Namespace) {
      var key = typeof k === "string" ? k : pyStr(k);
      if (Object.prototype.hasOwnProperty.call(v, key)) return v[key];
      return typeof k === "string" ? getAttr(v, k) : UNDEFINED;
    }
    return UNDEFINED;
  }
  function iterate(v) {
    if (isUndef(v)) throw JinjaError("cannot loop over an undefined value");
    if (Array.isArray(v)) return v;
    if (typeof v === "string") return Array.from(v);
    if (isDict(v)) return Object.keys(v);
    throw JinjaError("cannot loop over a " + typeName(v));
  }
  function length(v) {
    if (typeof v === "string") return Array.from(v).length;
    if (Array.isArray(v)) return v.length;
    if (isDict(v)) return Object.keys(v).length;
    throw JinjaError("length of a " + typeName(v));
  }

  var TESTS = {
    defined: function (v) { return !isUndef(v); },
    undefined: function (v) { return isUndef(v); },
    none: function (v) { return v === null; },
    string: function (v) { return typeof v === "string"; },
    number: function (v) { return typeof v === "number"; },
    integer: function (v) { return typeof v === "number" && Number.isInteger(v); },
    float: function (v) { return typeof v === "number" && !Number.isInteger(v); },
    boolean: function (v) { return typeof v === "boolean"; },
    true: function (v) { return v === true; },
    false: function (v) { return v === false; },
    mapping: function (v) { return isDict(v); },
    sequence: function (v) { return Array.isArray(v) || typeof v === "string" || isDict(v); },
    iterable: function (v) { return Array.isArray(v) || typeof v === "string" || isDict(v); },
    callable: function (v) { return typeof v === "function"; },
    equalto: function (v, x) { return eq(v, x); },
    eq: function (v, x) { return eq(v, x); },
    "==": function (v, x) { return eq(v, x); },
    ne: function (v, x) { return !eq(v, x); },
    in: function (v, x) { return contains(x, v); },
    odd: function (v) { return v % 2 === 1; },
    even: function (v) { return v % 2 === 0; },
    divisibleby: function (v, x) { return v % x === 0; },
  };
  function contains(container, item) {
    if (typeof container === "string") return typeof item === "string" && container.indexOf(item) >= 0;
    if (Array.isArray(container)) return container.some(function (x) { return eq(x, item); });
    if (isDict(container)) return Object.prototype.hasOwnProperty.call(container, item);
    throw JinjaError("'in' on a " + typeName(container));
  }
  function attrOf(x, path) { return String(path).split(".").reduce(function (o, k) { return getItem(o, /^\d+$/.test(k) ? Number(k) : k); }, x); }
  var FILTERS = {
    tojson: function (v, kw) { return pyJson(v, kw.indent == null ? null : kw.indent); },
    trim: function (v) { return stripChars(pyStr(need(v, "trim")), null, true, true); },
    length: function (v) { return length(need(v, "length")); },
    count: function (v) { return length(need(v, "count")); },
    upper: function (v) { return pyStr(v).toUpperCase(); },
    lower: function (v) { return pyStr(v).toLowerCase(); },
    title: function (v) { return STR_METHODS.title(pyStr(v)); },
    capitalize: function (v) { return STR_METHODS.capitalize(pyStr(v)); },
    string: function (v) { return pyStr(v); },
    safe: function (v) { return v; },
    int: function (v) { var n = parseInt(pyStr(v), 10); return isNaN(n) ? 0 : n; },
    float: function (v) { var n = parseFloat(pyStr(v)); return isNaN(n) ? 0 : n; },
    list: function (v) { return iterate(v).slice(); },
    first: function (v) { var s = iterate(v); return s.length ? s[0] : UNDEFINED; },
    last: function (v) { var s = iterate(v); return s.length ? s[s.length - 1] : UNDEFINED; },
    reverse: function (v) { return typeof v === "string" ? Array.from(v).reverse().join("") : iterate(v).slice().reverse(); },
    join: function (v, kw, sep, attr) {
      var items = iterate(v);
      if (attr != null || kw.attribute != null) items = items.map(function (x) { return attrOf(x, attr != null ? attr : kw.attribute); });
      return items.map(pyStr).join(sep == null ? (kw.d == null ? "" : kw.d) : sep);
    },
    default: function (v, kw, dflt, boolean) { var b = boolean != null ? boolean : kw.boolean; return (isUndef(v) || (truthy(b) && !truthy(v))) ? (dflt === undefined ? "" : dflt) : v; },
    replace: function (v, kw, a, b) { return STR_METHODS.replace(pyStr(v), a, b); },
    items: function (v) { return DICT_METHODS.items(v); },
    map: function (v, kw, name) {
      if (kw.attribute != null) return iterate(v).map(function (x) { return attrOf(x, kw.attribute); });
      var f = FILTERS[name];
      if (!f) throw JinjaError("unsupported filter '" + name + "' in map");
      return iterate(v).map(function (x) { return f(x, {}); });
    },
    selectattr: function (v, kw, attr, test, arg) { return selectBy(v, attr, test, arg, true); },
    rejectattr: function (v, kw, attr, test, arg) { return selectBy(v, attr, test, arg, false); },
    select: function (v, kw, test, arg) { return iterate(v).filter(function (x) { return test == null ? truthy(x) : runTest(test, x, [arg]); }); },
    reject: function (v, kw, test, arg) { return iterate(v).filter(function (x) { return !(test == null ? truthy(x) : runTest(test, x, [arg])); }); },
    dictsort: function (v) { return DICT_METHODS.items(v).sort(function (a, b) { return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0; }); },
  };
  FILTERS.d = FILTERS.default;
  function runTest(name, v, args) {
    var t = TESTS[name];
    if (!t) throw JinjaError("unsupported Jinja test '" + name + "'");
    return t.apply(null, [v].concat(args));
  }
  function selectBy(v, attr, test, arg, keep) {
    return iterate(v).filter(function (x) {
      var a = attrOf(x, attr);
      return (test == null ? truthy(a) : runTest(test, a, [arg])) === keep;
    });
  }

  // ---- evaluation -------------------------------------------------------------------------------------
  function Scope(parent, vars) { this.parent = parent; this.vars = vars || {}; }
  Scope.prototype.get = function (name) {
    for (var s = this; s; s = s.parent) if (Object.prototype.hasOwnProperty.call(s.vars, name)) return s.vars[name];
    return UNDEFINED;
  };

  function arith(op, a, b) {
    if (op === "~") return pyStr(a) + pyStr(b);
    if (isUndef(a) || isUndef(b)) throw JinjaError("'" + op + "' with an undefined value");
    if (op === "+") {
      if (typeof a === "string" && typeof b === "string") return a + b;
      if (typeof a === "number" && typeof b === "number") return a + b;
      if (Array.isArray(a) && Array.isArray(b)) return a.concat(b);
      throw JinjaError("cannot add " + typeName(a) + " and " + typeName(b));
    }
    if (op === "*" && typeof a === "string" && typeof b === "number") return a.repeat(Math.max(0, b));
    if (typeof a !== "number" || typeof b !== "number") throw JinjaError("'" + op + "' on " + typeName(a) + " and " + typeName(b));
    switch (op) {
      case "-": return a - b;
      case "*": return a * b;
      case "/": return a / b;
      case "//": return Math.floor(a / b);
      case "%": return ((a % b) + b) % b;
      case "**": return Math.pow(a, b);
    }
    throw JinjaError("unknown operator " + op);
  }
  function compare(op, a, b) {
    if (op === "==") return eq(a, b);
    if (op === "!=") return !eq(a, b);
    if (isUndef(a) || isUndef(b) || a === null || b === null) throw JinjaError("cannot compare " + typeName(a) + " and " + typeName(b) + " with " + op);
    switch (op) {
      case "<": return a < b;
      case ">": return a > b;
      case "<=": return a <= b;
      case ">=": return a >= b;
    }
    return false;
  }

  function evalArgs(call, scope) {
    var kw = {};
    Object.keys(call.kwargs).forEach(function (k) { kw[k] = ev(call.kwargs[k], scope); });
    return { args: call.args.map(function (a) { return ev(a, scope); }), kw: kw };
  }
  function ev(e, scope) {
    switch (e.n) {
      case "lit": return e.v;
      case "var": return scope.get(e.name);
      case "list": return e.items.map(function (x) { return ev(x, scope); });
      case "dict": {
        var d = {};
        e.pairs.forEach(function (p) { d[pyStr(ev(p[0], scope))] = ev(p[1], scope); });
        return d;
      }
      case "attr": return getAttr(ev(e.a, scope), e.name);
      case "item": return getItem(ev(e.a, scope), ev(e.key, scope));
      case "slice": {
        var seq = need(ev(e.a, scope), "a slice");
        var pv = e.parts.map(function (x) { return x ? ev(x, scope) : null; });
        return pySlice(seq, pv[0], pv[1], pv[2]);
      }
      case "call": {
        var f = ev(e.f, scope);
        if (typeof f !== "function") throw JinjaError("calling " + (e.f.name ? "'" + e.f.name + "'" : "a value") + ", which is not a function here");
        var a = evalArgs(e.call, scope);
        return f.apply(null, a.args.concat(Object.keys(a.kw).length ? [{ __kwargs: a.kw }] : []));
      }
      case "filter": {
        var fl = FILTERS[e.name];
        if (!fl) throw JinjaError("unsupported Jinja filter '" + e.name + "'");
        var fa = evalArgs(e.call, scope);
        return fl.apply(null, [ev(e.a, scope), fa.kw].concat(fa.args));
      }
      case "test": {
        var ta = evalArgs(e.call, scope);
        var r = runTest(e.name, ev(e.a, scope), ta.args);
        return e.neg ? !r : r;
      }
      case "not": return !truthy(ev(e.a, scope));
      case "and": { var x = ev(e.a, scope); return truthy(x) ? ev(e.b, scope) : x; }
      case "or": { var y = ev(e.a, scope); return truthy(y) ? y : ev(e.b, scope); }
      case "cond": return truthy(ev(e.c, scope)) ? ev(e.a, scope) : (e.b ? ev(e.b, scope) : UNDEFINED);
      case "neg": { var v = ev(e.a, scope); if (typeof v !== "number") throw JinjaError("unary minus on a " + typeName(v)); return -v; }
      case "bin": return arith(e.op, ev(e.a, scope), ev(e.b, scope));
      case "cmp": return compare(e.op, ev(e.a, scope), ev(e.b, scope));
      case "in": return contains(ev(e.b, scope), ev(e.a, scope));
    }
    throw JinjaError("cannot evaluate " + e.n);
  }

  var BREAK = {}, CONTINUE = {};
  function run(nodes, scope, out) {
    for (var i = 0; i < nodes.length; i++) {
      var nd = nodes[i];
      switch (nd.n) {
        case "text": out.push(nd.v); break;
        case "out": out.push(pyStr(ev(nd.e, scope))); break;
        case "if":
          for (var b = 0; b < nd.branches.length; b++) {
            var br = nd.branches[b];
            if (br.c === null || truthy(ev(br.c, scope))) { run(br.body, scope, out); break; }
          }
          break;
        case "for": runFor(nd, scope, out); break;
        case "set": {
          var val = ev(nd.e, scope);
          if (nd.attr) {
            var ns = scope.get(nd.targets[0]);
            if (!(ns instanceof Namespace)) throw JinjaError("cannot set an attribute of '" + nd.targets[0] + "', which is not a namespace");
            ns[nd.attr] = val;
          } else if (nd.targets.length === 1) scope.vars[nd.targets[0]] = val;
          else {
            var seq = iterate(val);
            if (seq.length !== nd.targets.length) throw JinjaError("cannot unpack " + seq.length + " values into " + nd.targets.length);
            nd.targets.forEach(function (t, k) { scope.vars[t] = seq[k]; });
          }
          break;
        }
        case "setblock": { var o = []; run(nd.body, scope, o); scope.vars[nd.name] = o.join(""); break; }
        case "macro": scope.vars[nd.name] = macro(nd, scope); break;
        case "group": run(nd.body, scope, out); break;
        case "do": ev(nd.e, scope); break;
        case "break": throw BREAK;
        case "continue": throw CONTINUE;
      }
    }
  }
  function runFor(nd, scope, out) {
    var items = iterate(ev(nd.iter, scope));
    if (nd.filt) {
      items = items.filter(function (x) {
        var s = new Scope(scope);
        bind(s, nd.targets, x);
        return truthy(ev(nd.filt, s));
      });
    }
    if (!items.length) { run(nd.elseBody, scope, out); return; }
    // Jinja scopes loop variables to the loop; a plain {% set %} inside does not leak out (namespaces do)
    var n = items.length;
    for (var k = 0; k < n; k++) {
      var s = new Scope(scope);
      bind(s, nd.targets, items[k]);
      s.vars.loop = { index: k + 1, index0: k, revindex: n - k, revindex0: n - k - 1, first: k === 0, last: k === n - 1,
                      length: n, previtem: k > 0 ? items[k - 1] : UNDEFINED, nextitem: k < n - 1 ? items[k + 1] : UNDEFINED };
      try { run(nd.body, s, out); } catch (sig) {
        if (sig === BREAK) break;
        if (sig === CONTINUE) continue;
        throw sig;
      }
    }
  }
  function bind(s, targets, x) {
    if (targets.length === 1) { s.vars[targets[0]] = x; return; }
    var seq = iterate(x);
    if (seq.length !== targets.length) throw JinjaError("cannot unpack " + seq.length + " values into " + targets.length + " loop variables");
    targets.forEach(function (t, i) { s.vars[t] = seq[i]; });
  }
  function macro(nd, defScope) {
    return function () {
      var args = [].slice.call(arguments), kw = {};
      if (args.length && args[args.length - 1] && args[args.length - 1].__kwargs) kw = args.pop().__kwargs;
      var s = new Scope(defScope);
      nd.params.forEach(function (p, i) {
        s.vars[p.name] = i < args.length ? args[i] : Object.prototype.hasOwnProperty.call(kw, p.name) ? kw[p.name] :
          p.def ? ev(p.def, defScope) : UNDEFINED;
      });
      var o = [];
      run(nd.body, s, o);
      return o.join("");
    };
  }

  function globals() {
    return {
      raise_exception: function (msg) { throw JinjaError("the chat template raised: " + pyStr(msg)); },
      range: function (a, b, c) {
        var start = b === undefined ? 0 : a, stop = b === undefined ? a : b, step = c === undefined ? 1 : c, r = [];
        for (var i = start; step > 0 ? i < stop : i > stop; i += step) r.push(i);
        return r;
      },
      namespace: function (kw) { return new Namespace(kw && kw.__kwargs ? kw.__kwargs : {}); },
      dict: function (kw) { return kw && kw.__kwargs ? Object.assign({}, kw.__kwargs) : {}; },
      strftime_now: function () { throw JinjaError("this chat template asks for today's date (strftime_now), which would make the prompt differ by day; not supported here"); },
    };
  }

  // Compile once, render with a context (messages, add_generation_prompt, bos_token, …).
  function compile(src) {
    var nodes = parseTemplate(String(src));
    return function (context) {
      var scope = new Scope(new Scope(null, globals()), Object.assign({}, context));
      var out = [];
      run(nodes, scope, out);
      return out.join("");
    };
  }

  return { compile: compile, render: function (src, ctx) { return compile(src)(ctx); }, pyJson: pyJson, pyStr: pyStr,
           UNDEFINED: UNDEFINED };
});
