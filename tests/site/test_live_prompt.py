"""The live page's pure JavaScript (scorer/site/assets/live/*.js), run in Node and compared with the Python side.

* the typed prompt (``semif-direct-v1``) and the generated lanes' prompt (``semif-array-v1``) of every model in the
  cache, rendered in JS with the model's own chat template and tokenized with its own vocabulary, equal the
  Python renderer's strings and token ids (``scorer.prompting.prompt.render`` with the reference tokenizer: what
  ``semif prompt --json`` prints), prefix and answer slots included; a model the page cannot serve (no chat
  template, a SentencePiece vocabulary) is refused with its reason, and its semif-plain text still agrees;
* the Jinja renderer equals transformers' (the renderer the Python side uses) on templates that exercise the
  parts of Jinja chat templates use, and refuses what it does not implement by name;
* the GGUF reader agrees with the ``gguf`` package on type sizes and on the real files, and refuses a file that
  is not a GGUF and one cut short; the streaming SHA-256 equals hashlib.

Node is required (as for tests/site/test_site_js.py): without it these tests fail, never skip. The reference tokenizers
come from the model cache's verified tokenizer folders (no weights are read).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from scorer.formats.rows import Decision, Option
from scorer.models import store
from scorer.prompting.prompt import LETTERS, PLAIN_TEMPLATE, prefix_ids, render
from scorer.site.live import prompt_words, showcase

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "scorer" / "site" / "assets" / "live"
HARNESS = ROOT / "tests" / "js_live" / "render_prompts.js"


def _node() -> str:
    node = shutil.which("node")
    assert node, "node not found on PATH: the live page's unit tests (tests/js_live/) need Node.js >= 18"
    return node


def node_eval(code: str, *args: str, timeout: int = 120) -> Any:
    """Run ``code`` in Node with the live modules at hand (``L.gguf``, ``L.bpe``, ``L.jinja``, ``L.prompt``,
    ``L.sha256``, ``L.lanes``); it prints JSON, which is returned."""
    pre = ("const path = require('node:path'); const L = {};"
           "for (const m of ['gguf', 'bpe', 'jinja', 'prompt', 'sha256', 'pyjson', 'lanes'])"
           f" L[m] = require(path.join({json.dumps(str(LIVE))}, m + '.js'));")
    run = subprocess.run([_node(), "-e", pre + code, *args], capture_output=True, text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout)


# --- the prompts of every cached model -----------------------------------------------------------------------
def cached_models() -> list[str]:
    return [k for k, e in store.REGISTRY.items() if store.gguf_path(e).is_file()]


YES_NO = [Option("yes", "Yes"), Option("no", "No")]
TEAMS = [Option("billing", "Billing: charges, invoices, refunds"), Option("tech", "Technical support: bugs, errors"),
         Option("account", "Account access: login, password, 2FA"), Option("sales", "Sales: upgrades, quotes"),
         Option("shipping", "Shipping: deliveries, tracking")]


def cases() -> list[Decision]:
    show = showcase()
    tricky = ("  Ticket 12 (opened 2024-06-16): «Ça ne marche pas» — the app says <|im_end|> and crashes; "
              "order ORD-533980 cost 49.32 EUR.\n\n\tRefund?   please!!  \n")
    return [
        Decision("s1", show["state"], show["criteria"][0]["question"], tuple(YES_NO)),
        Decision("s2", show["state"], show["criteria"][5]["question"], tuple(YES_NO)),
        Decision("t1", tricky, "Which team should handle this support ticket?", tuple(TEAMS)),
        Decision("t2", "Short.", " Is it   short? ", (Option("a", " Yes "), Option("b", "No, it is long"),
                                                         Option("c", "Can't tell"))),
    ]


def js_cases(decisions: list[Decision]) -> list[dict[str, Any]]:
    return [{"state": d.state, "question": d.question,
             "options": [{"id": o.id, "description": o.description} for o in d.options]} for d in decisions]


@pytest.fixture(scope="module", params=cached_models())
def model(request: pytest.FixtureRequest) -> tuple[str, Any, Path]:
    from scorer.prompting.tokenizer import HFTokenizer, load_reference_tokenizer

    key = request.param
    entry = store.get_entry(key)
    path = store.gguf_path(entry)
    hf, _ = load_reference_tokenizer(store.resolve(key), path, entry.sha256)
    return key, HFTokenizer(hf), path


def run_harness(path: Path, decisions: list[Decision], tmp_path: Path) -> dict[str, Any]:
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps({"gguf": str(path), "words": prompt_words(), "cases": js_cases(decisions)}))
    run = subprocess.run([_node(), str(HARNESS), str(spec)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout)


@pytest.mark.slow  # reads real model files (tokenizers, GGUF headers)
def test_js_prompts_equal_the_python_renderer(model: tuple[str, Any, Path], tmp_path: Path) -> None:
    key, tok, path = model
    decisions = cases()
    got = run_harness(path, decisions, tmp_path)
    from scorer.scoring.generation import render_array

    for d, js in zip(decisions, got["cases"], strict=True):
        py = render(tok, d)
        assert js.get("text") == py.text, (key, d.id)
        if got["tokenizer"] != "ok":  # the page refuses this model; the text still agrees
            continue
        assert "error" not in js, (key, d.id, js)
        assert js["ids"] == py.ids, (key, d.id)
        assert js["prefixText"] == py.prefix_text, (key, d.id)
        assert js["prefixIds"] == prefix_ids(tok, py), (key, d.id)
        assert js["slotIds"] == py.slot_ids, (key, d.id)
        assert js["decoded"] == tok.decode(py.ids), (key, d.id)

        inp = SimpleNamespace(state=d.state, criteria=(SimpleNamespace(question=d.question),
                                                       SimpleNamespace(question=d.question + " (again)")))
        text, ids = render_array(tok, inp)
        assert (js["arrayText"], js["arrayIds"]) == (text, ids), (key, d.id)
    if tok.template_name == PLAIN_TEMPLATE:
        assert got["template"] == PLAIN_TEMPLATE and got["describe"]["chatTemplate"] is None


@pytest.mark.slow  # reads real model files (tokenizers, GGUF headers)
def test_the_models_the_page_serves_and_refuses(tmp_path: Path) -> None:
    """smollm2 (the test model) is served; a SentencePiece vocabulary is refused by name, not guessed."""
    assert "smollm2-135m" in cached_models(), "the test model must be in the cache (semif models fetch smollm2-135m)"
    for key in cached_models():
        got = run_harness(store.gguf_path(store.get_entry(key)), [], tmp_path)
        if got["describe"]["tokenizerModel"] == "gpt2":
            assert got["tokenizer"] == "ok", key
        else:
            assert "byte-level BPE vocabularies ('gpt2') only" in got["tokenizer"], (key, got["tokenizer"])


def test_letter_slot_rules_are_the_python_ones() -> None:
    """A letter that is two tokens, two letters on one token, a letter decoding to something else: refused
    with the field and the reason (scorer.prompting.prompt.letter_slots' wording)."""
    code = """
    const P = {letters: %s};
    const fake = (enc, dec) => ({ encode: enc, decode: dec, stripBos: (x) => x });
    const out = [];
    for (const [enc, dec] of [[(t) => t === 'B' ? [5, 6] : [t.charCodeAt(0)], (ids) => String.fromCharCode(ids[0])],
                              [(t) => [7], (ids) => 'A'],
                              [(t) => [t.charCodeAt(0)], (ids) => ' ' + String.fromCharCode(ids[0])]]) {
      try { L.prompt.letterSlots(P, fake(enc, dec), 3); out.push(null); } catch (e) { out.push([e.field, e.message]); }
    }
    process.stdout.write(JSON.stringify(out));
    """.replace("%s", json.dumps(list(LETTERS)))
    two, collide, decodes = node_eval(code)
    assert two[0] == "letters" and "answer slot 'B' is 2 tokens [5, 6]" in two[1] and "exactly one token" in two[1]
    assert "answer slots collide: 'B' has the same token id 7 as 'A'" in collide[1]
    assert "answer slot 'A' (token 65) decodes to \" A\"" in decodes[1]


# --- Jinja against transformers ------------------------------------------------------------------------------
TEMPLATES = {
    "loops and loop vars": "{% for m in messages %}{{ loop.index }}/{{ loop.length }}{{ '!' if loop.first }}"
                           "{{ '.' if loop.last else ',' }}{{ m.role }}{% endfor %}",
    "trim and lstrip": "{% if true %}\n    {% for m in messages %}\n  {{ m['content'] }}\n    {% endfor %}\n"
                       "{% endif %}\nend",
    "whitespace control": "a  {%- if x is defined -%}  b {%- else %} c {% endif -%}   d\n  {{- ' e ' -}}  \n f",
    "set, namespace, slices": "{% set ns = namespace(n=0, s='') %}{% for m in messages[::-1] %}"
                              "{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s ~ m.role[:2] %}{% endfor %}"
                              "{{ ns.n }} {{ ns.s }} {{ messages[-1]['role'] }}",
    "filters and tests": "{{ messages | length }} {{ messages[0].content | trim | upper }}"
                         " {{ (messages | first).role }}"
                         " {{ none is none }} {{ x is not defined }} {{ 'ab' in 'cabd' }} {{ [1, 2] | join('-') }}"
                         " {{ messages | selectattr('role', 'equalto', 'user') | list | length }}",
    "tojson and str()": "{{ {'a': [1, 'x\"y', none, true], 'b': {}} | tojson }} {{ none }} {{ true }} {{ [1, 'a'] }}"
                        " {{ {'k': 'v'} }} {{ 'é' | tojson }} {{ messages[0] | tojson(indent=2) }}",
    "string methods": "{{ '  a b  '.strip() }}|{{ 'x,y,,z'.split(',') }}|{{ 'Hello'.startswith('He') }}"
                      "|{{ 'a-b'.replace('-', '+') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ ' a  b '.split() }}",
    "elif, macros, loop controls": "{% macro tag(r, c='?') %}<{{ r }}:{{ c }}>{% endmacro %}{% for m in messages %}"
                                   "{% if m.role == 'system' %}{% continue %}{% elif loop.index > 5 %}{% break %}"
                                   "{% else %}{{ tag(m.role) }}{{ tag(m.role, c=m.content) }}{% endif %}{% endfor %}",
    "generation block": "{% for m in messages %}{% generation %}[{{ m.content }}]{% endgeneration %}{% endfor %}",
    "raw and comments": "{# a comment #}\n{% raw %}{{ not rendered }}{% endraw %}\n{{ add_generation_prompt }}",
    "for over dict items": "{% for k, v in {'b': 1, 'a': 2}.items() %}{{ k }}={{ v }};{% endfor %}"
                           "{% for k in {'z': 0} %}{{ k }}{% endfor %}{% for x in [] %}no{% else %}empty{% endfor %}",
    "arithmetic": "{{ 7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 'ab' * 2 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}"
                  " {{ 1 < 2 and 2 < 3 }} {{ not 1 == 2 }} {{ 'a' ~ 1 ~ none }}",
}
MESSAGES = [{"role": "system", "content": "  You decide.  "}, {"role": "user", "content": "State:\nx <|im_end|> é"},
            {"role": "assistant", "content": "A"}, {"role": "user", "content": "again"}]


def transformers_render(template: str, **ctx: Any) -> str:
    from transformers.utils.chat_template_utils import _compile_jinja_template

    return _compile_jinja_template(template).render(**ctx)


def test_jinja_renders_as_transformers_does() -> None:
    ctx = {"messages": MESSAGES, "add_generation_prompt": True, "bos_token": "<s>"}
    want = {name: transformers_render(t, **ctx) for name, t in TEMPLATES.items()}
    code = """
    const [tpls, ctx] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2])];
    const out = {};
    for (const [k, t] of Object.entries(tpls)) {
      try { out[k] = L.jinja.render(t, ctx); } catch (e) { out[k] = 'ERROR ' + e.message; }
    }
    process.stdout.write(JSON.stringify(out));
    """
    got = node_eval(code, json.dumps(TEMPLATES), json.dumps(ctx))
    for name in TEMPLATES:
        assert got[name] == want[name], (name, got[name], want[name])


def test_jinja_refuses_what_it_does_not_implement() -> None:
    code = """
    const out = [];
    for (const t of ["{% include 'x' %}", "{{ x | wordwrap }}", "{{ x is sameas y }}", "{{ strftime_now('%d') }}",
                     "{{ raise_exception('no system role') }}", "{% if x %}", "{{ 'a' + 1 }}"]) {
      try { L.jinja.render(t, {x: 1}); out.push(null); } catch (e) { out.push(e.message); }
    }
    process.stdout.write(JSON.stringify(out));
    """
    include, wordwrap, sameas, date, raised, unclosed, add = node_eval(code)
    assert "unsupported Jinja tag 'include' at line 1" in include
    assert "unsupported Jinja filter 'wordwrap'" in wordwrap
    assert "unsupported Jinja test 'sameas'" in sameas
    assert "strftime_now" in date and "not supported" in date
    assert raised == "the chat template raised: no system role"
    assert "missing {% endif %}" in unclosed
    assert "cannot add str and int" in add


# --- GGUF header and SHA-256 -----------------------------------------------------------------------------
def test_ggml_type_sizes_are_gguf_pys() -> None:
    from gguf.constants import GGML_QUANT_SIZES

    js = node_eval("process.stdout.write(JSON.stringify(L.gguf.TYPE_SIZES))")
    assert {int(k): tuple(v) for k, v in js.items()} == {int(t): s for t, s in GGML_QUANT_SIZES.items()}


@pytest.mark.slow  # reads real model files (tokenizers, GGUF headers)
def test_gguf_header_agrees_with_gguf_py_and_refuses_bad_files(tmp_path: Path) -> None:
    from gguf import GGUFReader

    path = store.gguf_path(store.get_entry("smollm2-135m"))
    reader = GGUFReader(str(path))
    code = """
    const fs = require('node:fs');
    const read = (file, size) => {
      const fd = fs.openSync(file, 'r'); const total = size ?? fs.fstatSync(fd).size;
      let want = Math.min(total, 1 << 20);
      for (;;) {
        const buf = Buffer.alloc(want); fs.readSync(fd, buf, 0, want, 0);
        try { return L.gguf.parse(new Uint8Array(buf.buffer, buf.byteOffset, want), total); }
        catch (e) {
          if (e.kind === 'need-more') { want = e.need; continue; }
          return {kind: e.kind, message: e.message};
        }
      }
    };
    const [file, junk, cut, cutHeader] = process.argv.slice(1);
    const h = read(file);
    process.stdout.write(JSON.stringify({
      describe: L.gguf.describe(h), expected: h.expectedSize, dataOffset: h.dataOffset,
      tensors: h.tensors.map((t) => [t.name, t.type, t.offset, t.bytes]),
      junk: read(junk), cut: read(cut), cutHeader: read(cutHeader), empty: read(junk, 2),
    }));
    """
    junk = tmp_path / "notes.gguf"
    junk.write_text("These are notes, not a model.\n")
    cut = tmp_path / "cut.gguf"
    cut_header = tmp_path / "cut-header.gguf"
    with path.open("rb") as f:
        cut.write_bytes(f.read(path.stat().st_size - 4096))
        f.seek(0)
        cut_header.write_bytes(f.read(200_000))
    got = node_eval(code, str(path), str(junk), str(cut), str(cut_header))
    assert got["expected"] == path.stat().st_size  # the last tensor ends exactly at the end of the file
    assert got["dataOffset"] == reader.data_offset
    assert got["tensors"] == [[t.name, int(t.tensor_type), int(t.data_offset) - reader.data_offset, int(t.n_bytes)]
                              for t in reader.tensors]
    d = got["describe"]
    assert (d["name"], d["architecture"], d["contextLength"], d["vocabSize"]) == (
        "Smollm2 135M 8k Lc100K Mix1 Ep2", "llama", 8192, 49152)
    assert d["chatTemplate"] == bytes(reader.fields["tokenizer.chat_template"].parts[-1]).decode()
    assert got["junk"]["kind"] == "not-gguf" and 'it starts with "Thes"' in got["junk"]["message"]
    assert got["empty"]["kind"] == "not-gguf"
    assert got["cut"]["kind"] == "truncated" and "4,096 missing" in got["cut"]["message"]
    assert got["cutHeader"]["kind"] == "truncated" and "ends inside its GGUF header" in got["cutHeader"]["message"]


def test_streaming_sha256_equals_hashlib() -> None:
    sizes = [0, 1, 55, 56, 63, 64, 65, 119, 120, 1000, 1 << 16]
    code = """
    const sizes = JSON.parse(process.argv[1]); const out = [];
    for (const n of sizes) {
      const b = new Uint8Array(n); for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) & 255;
      const one = L.sha256.hex(b);
      const s = new L.sha256.Sha256(); for (let i = 0; i < n; i += 37) s.update(b.subarray(i, i + 37));
      out.push([one, s.hex()]);
    }
    process.stdout.write(JSON.stringify(out));
    """
    got = node_eval(code, json.dumps(sizes))
    for n, (one, chunked) in zip(sizes, got, strict=True):
        want = hashlib.sha256(bytes((i * 31 + 7) & 255 for i in range(n))).hexdigest()
        assert one == chunked == want, n


def test_every_live_module_is_built_into_the_page() -> None:
    from scorer.site.live import LIVE_MODULES

    # every module under scorer/site/assets/live/ is in the page's bundle (and the replay's format.js, whose rounding
    # the
    # trace's summary uses)
    assert sorted(n.removeprefix("live/") for n in LIVE_MODULES if n.startswith("live/")) == \
        sorted(p.name for p in LIVE.glob("*.js"))
    assert [n for n in LIVE_MODULES if not n.startswith("live/")] == ["replay/format.js"]
    assert os.path.isfile(HARNESS)


# --- the generated lanes' rules ---------------------------------------------------------------------------
def test_lane_grammar_limits_and_judgement_are_versus_ones() -> None:
    from scorer.prompting.grammar import ArrayGrammar
    from scorer.scoring.generation import default_max_new_tokens
    from scorer.trace.derive import parse_array, verdict

    sets = [[["yes", "no"]] * 3, [["yes", "no"], ["a", 'b"q', "é"], ["yes", "no"], ["x\\y"]], [["only"]]]
    # Every way a lane's output can fail, in Python's json words: the page must write parse_array's own errors
    # (a live trace carries them, and verify re-derives them).
    texts = ['["yes","no","yes"]', ' ["yes", "no", "yes"] ', '["yes","no"]', '["Yes","no","yes"]', '{"a": 1}', "",
             '["yes","no","yes","no"]', "5", "1. Yes.\n2. No.", "[", '["yes"', '["yes",', '["yes",]', '["yes" "no"]',
             '["ye', '["y\\qes"]', '["\\u12"]', '["\\u12G4"]', '["a\tb"]', '["\\ud83d\\ude00", 1]', "[1.0, 2]",
             "[1e5, 1E-7, -0, 0.0001, 1e16, 12345678901234567890]", "[NaN, Infinity, -Infinity]",
             '[{"b": [1], "a": 2}]',
             '{"a" 1}', "{1: 2}", '{"a": 1,}', '{"a": 1 "b": 2}', "[true, false, null]", "nul", "-", "-x", "01", "1e",
             "1e+", "[1.]", "tru", '```json\n["yes","no","yes"]\n```', '["yes","no","yes"] extra', "\ufeff[]",
             "\u3000[]\u3000", '"yes"', "null", "true", "2.5", "[]", '["yes","no","yes"]\n\nThe answers are above.',
             '["é", "\\u00e9\\n"]', "[1, 2", '{"a": {"b": ', '["yes"]]']
    code = """
    const [sets, texts] = [JSON.parse(process.argv[1]), JSON.parse(process.argv[2])];
    process.stdout.write(JSON.stringify({
      grammars: sets.map((v) => [L.lanes.gbnf(v), L.lanes.constrainedMaxTokens(v)]),
      free: [1, 3, 21].map((n) => L.lanes.freeMaxTokens(n)),
      judged: texts.map((t) => {
        const j = L.lanes.judge(t, 3);
        return [j.valid, j.complete, j.parsed, j.error, L.lanes.verdict(j, false, 9), L.lanes.verdict(j, true, 9)];
      }),
      rules: sets.map((v) => L.lanes.rule(v)),
    }));
    """
    got = node_eval(code, json.dumps(sets), json.dumps(texts))
    for values, (gbnf, limit) in zip(sets, got["grammars"], strict=True):
        g = ArrayGrammar(tuple(tuple(v) for v in values))
        assert (gbnf, limit) == (g.gbnf(), g.max_new_tokens())
    assert got["rules"] == [ArrayGrammar(tuple(tuple(v) for v in values)).rule() for values in sets]
    assert got["free"] == [default_max_new_tokens(n) for n in (1, 3, 21)]
    for text, js in zip(texts, got["judged"], strict=True):
        valid, complete, parsed, error = parse_array(text, 3)
        assert js[:4] == [valid, complete, parsed, error], text
        assert js[4:] == [verdict(valid, complete, capped, parsed, error, 9) for capped in (False, True)]
