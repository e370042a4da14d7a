// Unit tests of scorer/site/assets/replay/link.js (the share link in the address's "#" part). Run: node --test tests/js/
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const L = require("../../scorer/site/assets/replay/link.js");

test("formatHash names trace, repeat, time and speed, the slug encoded", () => {
  assert.equal(L.formatHash("versus-ticket-21", 2, 1.5, 0.25), "trace=versus-ticket-21&r=2&t=1.5&speed=0.25");
  assert.equal(L.formatHash("a&b c", 0, 0, 1), "trace=a%26b%20c&r=0&t=0&speed=1");
});

test("parseHash reads what formatHash writes, with or without the '#'", () => {
  const h = L.formatHash("a&b c=d", 1, 0.123456789, 4);
  assert.deepEqual(L.parseHash(h), { trace: "a&b c=d", r: "1", t: "0.123456789", speed: "4" });
  assert.deepEqual(L.parseHash("#" + h), L.parseHash(h));
  assert.deepEqual(L.parseHash(""), {});
});

test("parseHash skips parts it cannot read and keeps the rest", () => {
  assert.deepEqual(L.parseHash("#trace=x&t=%E0%A4%A&junk&=v&speed=2"), { trace: "x", speed: "2" });
  assert.deepEqual(L.parseHash("t=1=2"), { t: "1=2" });  // only the first '=' splits
});
