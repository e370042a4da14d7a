/* The replay page's DOM helpers (window.SemifReplayDom): elements built from text only (never markup: every
   string from a trace is untrusted), SVG elements, writes skipped when nothing changed, and the wait for the
   first paint. */
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

  function afterFirstPaint() {
    // Once the browser reports the first contentful paint (the page as build.py rendered it). A tab in the
    // background paints nothing, so there the data loads after the load event. A visible tab waits for the
    // paint report itself: a timer would fire before a late paint on a busy machine and put the trace's data
    // (hundreds of kB) ahead of it; the long safety timer only covers a browser that never reports paints.
    return new Promise(function (resolve) {
      var done = false;
      var go = function () { if (!done) { done = true; setTimeout(resolve, 0); } };
      var observed = false;
      try {
        new PerformanceObserver(function (list) {
          if (list.getEntries().some(function (e) { return e.name === "first-contentful-paint"; })) go();
        }).observe({ type: "paint", buffered: true });
        observed = (PerformanceObserver.supportedEntryTypes || []).indexOf("paint") >= 0;
      } catch (err) { /* no paint timing here: the load event below */ }
      var later = function () {
        if (!observed || document.visibilityState === "hidden") go(); else setTimeout(go, 15000);
      };
      if (document.readyState === "complete") later(); else window.addEventListener("load", later, { once: true });
    });
  }
  window.SemifReplayDom = { el: el, svgEl: svgEl, clear: clear, scrollable: scrollable, setText: setText, afterFirstPaint: afterFirstPaint };
})();
