/* SemIf's typed prompt (semif-direct-v1: system instructions, then the state, then the criterion and its
   lettered options) rendered in the page as scorer/prompting/prompt.py renders it: the same messages, the model's own
   chat template (SemifLiveJinja), the same encoding rule and the same answer-slot checks (each letter one
   token, distinct, decoding back to itself, and stable at the prompt's end). The prompt's words are not
   written here: build.py passes scorer.prompting.prompt's constants to the page (window.SemifLivePromptText), and
   tests/site/test_live_prompt.py compares every rendered string and id with the Python side's.
   Pure. In the page: window.SemifLivePrompt. */
(function (root, factory) {
  "use strict";
  var api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.SemifLivePrompt = api;
})(this, function () {
  "use strict";

  function PromptError(message, field) {
    var e = new Error(message);
    e.name = "PromptError";
    e.field = field || null;
    return e;
  }

  // state_text: a string state is used stripped (Python's str.strip: whitespace at both ends).
  function stateText(state) { return String(state).replace(/^\s+|\s+$/g, ""); }

  // user_content: the user message and the length of its shared head (instructions and state).
  function userContent(P, state, question, options) {
    var head = P.state_head + stateText(state) + P.state_tail;
    var lines = ["Question: " + stateText(question), "Options:"];
    options.forEach(function (o, i) { lines.push(P.letters[i] + ". " + stateText(o.description)); });
    return { content: head + lines.join("\n"), headLen: head.length };
  }

  function messagesFor(P, state, question, options) {
    var u = userContent(P, state, question, options);
    return { messages: [{ role: "system", content: P.system }, { role: "user", content: u.content }], headLen: u.headLen };
  }

  // semif-array-v1's user message (the generated lanes' prompt): the state, the numbered questions, the shape.
  function arrayUserContent(P, state, questions) {
    var numbered = questions.map(function (q, i) { return (i + 1) + ". " + stateText(q); }).join("\n");
    return "State:\n" + stateText(state) + "\n\nQuestions:\n" + numbered + "\n\n" +
      "Answer with a JSON array of exactly " + questions.length + ' strings, each "yes" or "no", in the order of the questions.';
  }

  // The fallback for a model without a chat template (scorer.prompting.prompt.plain_render, recorded as semif-plain).
  function plainRender(messages, addGenerationPrompt) {
    var role = { system: "Instructions", user: "Input", assistant: "Answer" };
    var out = messages.map(function (m) { return role[m.role] + ":\n" + m.content + "\n\n"; }).join("");
    return addGenerationPrompt ? out + "Answer:" : out;
  }

  // Where each message's content sits in the rendered text (searched in order); a system message the
  // template rewrites is skipped, a user message that is not there verbatim is refused (scorer.prompting.prompt.message_spans).
  function messageSpans(text, messages) {
    var spans = [], pos = 0;
    messages.forEach(function (m) {
      var at = m.content ? text.indexOf(m.content, pos) : -1;
      if (at < 0) {
        if (m.role === "system") return;
        throw PromptError("the chat template does not include the " + m.role + " message verbatim; cannot keep its text apart from the template's control tokens");
      }
      spans.push([at, at + m.content.length]);
      pos = at + m.content.length;
    });
    return spans;
  }

  function clipSpans(spans, end) {
    return spans.filter(function (s) { return s[0] < end; }).map(function (s) { return [s[0], Math.min(s[1], end)]; });
  }

  function commonPrefix(a, b) {
    var n = Math.min(a.length, b.length), i = 0;
    while (i < n && a[i] === b[i]) i++;
    return a.slice(0, i);
  }

  // letter_slots: the first n letters, each exactly one token, distinct, decoding back to itself.
  function letterSlots(P, tok, n) {
    var ids = [];
    for (var i = 0; i < n; i++) {
      var letter = P.letters[i];
      var enc = tok.stripBos(tok.encode(letter));
      if (enc.length !== 1) {
        throw PromptError("answer slot '" + letter + "' is " + enc.length + " tokens [" + enc.join(", ") + "] in this model's vocabulary (expected exactly one token): this model cannot be read out by letter", "letters");
      }
      if (ids.indexOf(enc[0]) >= 0) {
        throw PromptError("answer slots collide: '" + letter + "' has the same token id " + enc[0] + " as '" + P.letters[ids.indexOf(enc[0])] + "' (expected distinct ids)", "letters");
      }
      var back = tok.decode(enc);
      if (back !== letter) throw PromptError("answer slot '" + letter + "' (token " + enc[0] + ") decodes to " + JSON.stringify(back) + " (expected '" + letter + "')", "letters");
      ids.push(enc[0]);
    }
    return ids;
  }

  // render(P, model, state, criterion) → the typed prompt of one criterion, encoded and checked.
  // model: { tok (SemifLiveBpe.Tokenizer), chat (function(messages) → text: the compiled template), template }.
  function render(P, model, state, question, options) {
    if (!options.length || options.length > P.letters.length) {
      throw PromptError("a criterion needs 1 to " + P.letters.length + " options (got " + options.length + ")", "options");
    }
    var mh = messagesFor(P, state, question, options);
    var text = model.chat(mh.messages);
    var spans = messageSpans(text, mh.messages);
    var head = spans[spans.length - 1][0] + mh.headLen;
    var prefixText = text.slice(0, head);
    var ids = model.tok.encode(text, spans);
    var slots = letterSlots(P, model.tok, options.length);
    slots.forEach(function (slot, k) {
      var label = P.letters[k];
      var ext = model.tok.encode(text + label, spans);
      var same = ext.length === ids.length + 1 && ext[ext.length - 1] === slot && ids.every(function (x, j) { return ext[j] === x; });
      if (!same) {
        throw PromptError("answer slot '" + label + "' is not stable at the prompt boundary: prompt ends [" + ids.slice(-3).join(", ") +
                          "], prompt+'" + label + "' ends [" + ext.slice(-4).join(", ") + "] (expected the prompt's tokens followed by [" + slot + "])", "letters");
      }
    });
    var headIds = model.tok.encode(prefixText, clipSpans(spans, prefixText.length));
    var shared = commonPrefix(ids, headIds).slice(0, ids.length - 1);
    return { version: P.version, text: text, ids: ids, prefixText: prefixText, prefixIds: shared, letters: P.letters.slice(0, options.length),
             slotIds: slots, template: model.template, spans: spans, messages: mh.messages };
  }

  // The generated lanes' prompt (semif-array-v1), rendered and encoded the same way.
  function renderArray(P, model, state, questions) {
    var messages = [{ role: "system", content: P.array_system }, { role: "user", content: arrayUserContent(P, state, questions) }];
    var text = model.chat(messages);
    var spans = messageSpans(text, messages);
    return { version: P.array_version, text: text, ids: model.tok.encode(text, spans), spans: spans, messages: messages };
  }

  // The probabilities the typed lane reads: a softmax over the answer slots' log-probabilities (a full-vocabulary
  // log-softmax differs from the logits by one constant per position, which a softmax over the slots cancels).
  function slotSoftmax(logps) {
    var m = Math.max.apply(null, logps);
    var ex = logps.map(function (x) { return Math.exp(x - m); });
    var s = ex.reduce(function (a, b) { return a + b; }, 0);
    return ex.map(function (x) { return x / s; });
  }

  return { stateText: stateText, userContent: userContent, messagesFor: messagesFor, arrayUserContent: arrayUserContent,
           plainRender: plainRender, messageSpans: messageSpans, letterSlots: letterSlots, render: render,
           renderArray: renderArray, slotSoftmax: slotSoftmax, commonPrefix: commonPrefix, PromptError: PromptError };
});
