// Renders SemIf's typed prompts with the page's own modules (scorer/site/assets/live/*.js) for a GGUF file, as the live
// page does, and prints what it got as JSON, for tests/site/test_live_prompt.py to compare with the Python renderer.
//   node tests/js_live/render_prompts.js CASES.json   (CASES: {gguf, words, cases: [{state, question, options}]})
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const LIVE = path.join(__dirname, "..", "..", "scorer", "site", "assets", "live");
const G = require(path.join(LIVE, "gguf.js"));
const B = require(path.join(LIVE, "bpe.js"));
const J = require(path.join(LIVE, "jinja.js"));
const PR = require(path.join(LIVE, "prompt.js"));

function header(file) {
  const fd = fs.openSync(file, "r");
  const size = fs.fstatSync(fd).size;
  let want = Math.min(size, 4 << 20);
  for (;;) {
    const buf = Buffer.alloc(want);
    fs.readSync(fd, buf, 0, want, 0);
    try { const h = G.parse(new Uint8Array(buf.buffer, buf.byteOffset, want), size); fs.closeSync(fd); return h; }
    catch (e) { if (e.kind === "need-more") { want = e.need; continue; } fs.closeSync(fd); throw e; }
  }
}

function specials(kv) {
  const tokens = kv["tokenizer.ggml.tokens"], out = {};
  for (const [name, key] of [["bos_token", "bos"], ["eos_token", "eos"], ["unk_token", "unknown"], ["pad_token", "padding"]]) {
    const id = kv["tokenizer.ggml." + key + "_token_id"];
    if (typeof id === "number" && tokens[id] !== undefined) out[name] = tokens[id];
  }
  return out;
}

const input = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const h = header(input.gguf);
const d = G.describe(h);
const out = { describe: d, tokenizer: null, template: null, cases: [] };
let tok = null;
try { tok = new B.Tokenizer(h.kv); out.tokenizer = "ok"; } catch (e) { out.tokenizer = e.message; }
let chat;
if (d.chatTemplate) {
  const render = J.compile(d.chatTemplate);
  const ctx = specials(h.kv);
  chat = (messages) => render(Object.assign({ messages, add_generation_prompt: true, tools: null, documents: null,
                                              enable_thinking: false }, ctx));
  out.template = "chat";
} else {
  chat = (messages) => PR.plainRender(messages, true);
  out.template = input.words.plain_template;
}
for (const c of input.cases) {
  if (!tok) {  // the text alone (the page refuses such a model; the test checks the refusal and the text)
    const mh = PR.messagesFor(input.words, c.state, c.question, c.options);
    out.cases.push({ text: chat(mh.messages) });
    continue;
  }
  try {
    const p = PR.render(input.words, { tok, chat, template: out.template }, c.state, c.question, c.options);
    const a = PR.renderArray(input.words, { tok, chat, template: out.template }, c.state, [c.question, c.question + " (again)"]);
    out.cases.push({ text: p.text, ids: p.ids, prefixText: p.prefixText, prefixIds: p.prefixIds, slotIds: p.slotIds,
                     arrayText: a.text, arrayIds: a.ids, decoded: tok.decode(p.ids) });
  } catch (e) {
    out.cases.push({ error: e.message });
  }
}
process.stdout.write(JSON.stringify(out));
