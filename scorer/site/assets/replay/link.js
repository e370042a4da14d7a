/* The replay's share link: the part of the address after "#" names a trace, a repeat, a time and a speed
   (trace=<slug>&r=<repeat>&t=<seconds>&speed=<factor>). Pure functions (tests/js/link.test.js).
   In the page: window.SemifReplayLink; in Node: require("…/link.js"). */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifReplayLink = api;
})(this, function () {
  "use strict";

  // The hash (without "#") for a moment of a built-in trace.
  function formatHash(slug, repeat, t, speed) {
    return "trace=" + encodeURIComponent(slug) + "&r=" + repeat + "&t=" + String(t) + "&speed=" + String(speed);
  }
  // The hash's fields as strings ({trace, r, t, speed, …}); a leading "#" is ignored, and so is a part that is
  // not key=value or cannot be decoded (a hand-edited link opens what it still names).
  function parseHash(hash) {
    var h = String(hash).replace(/^#/, "");
    var out = {};
    h.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) { try { out[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1)); } catch (err) { /* ignore a malformed part */ } }
    });
    return out;
  }

  return { formatHash: formatHash, parseHash: parseHash };
});
