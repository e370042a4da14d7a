// The pure modules also run as plain scripts in the page (build.py concatenates them into assets/replay.js,
// no module system): each then defines its window.SemifReplay* global with the same functions.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

const DIR = path.join(__dirname, "..", "..", "scorer", "site", "assets", "replay");
const MODULES = { "format.js": "SemifReplayFormat", "link.js": "SemifReplayLink", "prepare.js": "SemifReplayPrepare",
                  "timeline.js": "SemifReplayTimeline", "verdict.js": "SemifReplayVerdict" };

test("every file under scorer/site/assets/replay/ is a module this test knows", () => {
  assert.deepEqual(fs.readdirSync(DIR).sort(), Object.keys(MODULES).sort());
});

for (const [file, name] of Object.entries(MODULES)) {
  test(file + " defines window." + name + " as a plain script", () => {
    const window = {};
    vm.createContext(window);
    vm.runInContext(fs.readFileSync(path.join(DIR, file), "utf8"), window, { filename: file });
    const fromPage = window[name];
    const fromNode = require(path.join(DIR, file));
    assert.ok(fromPage, name + " is not defined");
    assert.deepEqual(Object.keys(fromPage).sort(), Object.keys(fromNode).sort());
    assert.deepEqual(Object.keys(window), [name]);  // nothing else leaks into the page
  });
}
