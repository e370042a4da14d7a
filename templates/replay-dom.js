/* The replay page's DOM helpers (window.SemifReplayDom): elements built from text only (never markup: every
   string from a trace is untrusted), SVG elements, and writes skipped when nothing changed. */
(function () {
  "use strict";
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  // a region that may scroll: reachable by keyboard (so it can be scrolled) and named for screen readers
  function scrollable(node, label) {
    node.tabIndex = 0; node.setAttribute("role", "region"); node.setAttribute("aria-label", label);
    return node;
  }
  function setText(node, text) { if (node.textContent !== text) node.textContent = text; }  // no write when unchanged

  window.SemifReplayDom = { el: el, svgEl: svgEl, clear: clear, scrollable: scrollable, setText: setText };
})();
