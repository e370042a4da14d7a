"""What the peer benchmark compares, as plain data: the exported prompts, the lm-eval task, the identity
check of the token ids each peer scored, and the agreement of the option probabilities.

Nothing here runs a model. The prompts come from :func:`scorer.prompting.prompt.render` (what ``semif prompt``
prints), so every peer is fed the very string and token ids that semif scores.

lm-eval's convention, which the identity check allows for and nothing else: its ``_encode_pair`` moves
the context's trailing whitespace into the continuation, so for a prompt ending in ``"\\n"`` it scores
``context = prompt[:-1]`` and ``continuation = "\\n" + letter``. The tokens are then
``ids[:-1] + [ids[-1], slot]`` — the same ids — and the extra term ``log p(ids[-1] | ids[:-1])`` is the same
for every option, so it cancels in the softmax over the options. The check proves both facts per row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scorer.formats.rows import Decision
from scorer.prompting.prompt import Tokenizer, render

TASK_VERSION = 1
"""Bumped when the task files' layout changes (lm-eval caches by task name and version)."""


@dataclass(frozen=True)
class ExportedRow:
    """One decision as every peer sees it: the exact prompt string and its token ids."""

    id: str
    """The row's id in the workload."""
    prompt: str
    """The rendered prompt (chat template applied), verbatim."""
    ids: list[int]
    """Its token ids, as semif scores them."""
    letters: str
    """The answer letters, one per option (``"AB"``)."""
    slot_ids: list[int]
    """Token id of each letter."""
    option_ids: list[str]
    """The options' ids, in letter order (to name a choice)."""
    gold: int | None
    """Index of the labelled option, when the row has a label among its options."""
    prompt_sha256: str
    """sha256 of the prompt string (UTF-8)."""
    tokens_sha256: str
    """sha256 of the ids as little-endian int32."""


def export_prompts(tok: Tokenizer, decisions: Sequence[Decision]) -> list[ExportedRow]:
    """Render every row with semif's own prompt code (the ``semif prompt`` logic, no subprocess)."""
    rows = []
    for d in decisions:
        p = render(tok, d)
        label = d.extra.get("label")
        opts = [o.id for o in d.options]
        rows.append(ExportedRow(d.id, p.text, list(p.ids), p.letters, list(p.slot_ids), opts,
                                opts.index(label) if label in opts else None, p.sha256, p.tokens_sha256))
    return rows


def write_jsonl(path: Path, docs: Iterable[Mapping[str, Any]]) -> Path:
    """One JSON object per line, UTF-8 (create or replace: these are a run's own working files)."""
    with path.open("w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + "\n")
    return path


def read_prompts(path: Path) -> list[ExportedRow]:
    """The exported prompts written by :func:`write_jsonl` of ``asdict`` rows."""
    with path.open(encoding="utf-8") as f:
        return [ExportedRow(**json.loads(line)) for line in f if line.strip()]


def write_prompts(path: Path, rows: Sequence[ExportedRow]) -> Path:
    return write_jsonl(path, (asdict(r) for r in rows))


def task_name(model_key: str, workload: str) -> str:
    """An lm-eval task name (letters, digits, underscores) for this model and workload."""
    raw = f"semif_peers_{model_key}_{workload}"
    return "".join(c if c.isalnum() else "_" for c in raw).lower()


def task_yaml(name: str, docs_path: Path) -> str:
    """The lm-eval task: zero-shot multiple choice over the prompt verbatim, the letters as continuations.

    Fields are named (not Jinja templates), so lm-eval reads ``doc["prompt"]`` as is: a state holding
    ``{{`` cannot be mistaken for a template. ``target_delimiter`` is empty, so each continuation is the
    bare letter (the prompt already ends where the answer starts).
    """
    return "\n".join([
        f"task: {name}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {json.dumps(str(docs_path.resolve()))}",
        "test_split: test",
        "output_type: multiple_choice",
        "doc_to_text: prompt",
        "doc_to_choice: choices",
        "doc_to_target: gold",
        'target_delimiter: ""',
        "num_fewshot: 0",
        "metric_list:",
        "  - metric: acc",
        "metadata:",
        f"  version: {TASK_VERSION}",
        "",
    ])


def write_lmeval_task(folder: Path, name: str, rows: Sequence[ExportedRow]) -> tuple[Path, Path]:
    """Write ``<name>.yaml`` and ``<name>.jsonl`` (one doc per row) into ``folder``; return both paths.

    A row without a label gets ``gold`` 0: lm-eval needs a target, and its accuracy is not used here.
    """
    folder.mkdir(parents=True, exist_ok=True)
    docs = folder / f"{name}.jsonl"
    write_jsonl(docs, ({"id": r.id, "prompt": r.prompt, "choices": list(r.letters),
                        "gold": 0 if r.gold is None else r.gold} for r in rows))
    yaml = folder / f"{name}.yaml"
    yaml.write_text(task_yaml(name, docs), encoding="utf-8")
    return yaml, docs


# --- identity of what lm-eval scored -----------------------------------------------------------------------
@dataclass(frozen=True)
class LoggedChoice:
    """One request of one lm-eval sample: what it scored for one option."""

    context: str
    """The request's context string (lm-eval's logged ``arguments[i][0]``)."""
    continuation: str
    """The request's continuation string (``arguments[i][1]``)."""
    context_ids: list[int]
    """Token ids of the context after lm-eval's own ``_encode_pair``."""
    continuation_ids: list[int]
    """Token ids of the continuation after ``_encode_pair`` (trailing whitespace of the context moved in)."""
    loglikelihood: float
    """Sum of the continuation tokens' log-probabilities (``filtered_resps[i][0]``)."""


@dataclass
class RowIdentity:
    """Whether lm-eval scored exactly semif's tokens for one row."""

    id: str
    """Row id."""
    identical: bool
    """Every option's context + continuation ids equal semif's ids + the letter's slot id, and the
    continuation's extra tokens are the same for every option (so they cancel)."""
    moved_ids: list[int] = field(default_factory=list)
    """Prompt tokens lm-eval scored as part of every continuation (``[198]`` for a moved ``\\n``)."""
    problems: list[str] = field(default_factory=list)
    """What differed, in words (empty when identical)."""


def logged_choices(sample: Mapping[str, Any]) -> list[LoggedChoice]:
    """The choices of one sample as the lm-eval driver writes it (lm-eval's logged ``arguments`` and
    ``filtered_resps``, plus ``encoded``: ``_encode_pair`` of each argument)."""
    args, resps, enc = sample["arguments"], sample["filtered_resps"], sample["encoded"]
    if not (len(args) == len(resps) == len(enc)):
        raise ValueError(f"sample {sample.get('doc_id')}: {len(args)} arguments, {len(resps)} responses, "
                         f"{len(enc)} encodings (expected one of each per option)")
    out = []
    for (ctx, cont), resp, (ctx_ids, cont_ids) in zip(args, resps, enc, strict=True):
        ll = resp[0] if isinstance(resp, list | tuple) else resp
        out.append(LoggedChoice(str(ctx), str(cont), [int(i) for i in ctx_ids], [int(i) for i in cont_ids],
                                float(ll)))
    return out


def check_identity(row: ExportedRow, choices: Sequence[LoggedChoice]) -> RowIdentity:
    """Prove (or refute) that lm-eval scored semif's prompt and token ids for every option of ``row``."""
    problems: list[str] = []
    if len(choices) != len(row.letters):
        return RowIdentity(row.id, False, [], [f"{len(choices)} lm-eval requests for {len(row.letters)} options"])
    moved: list[list[int]] = []
    for letter, slot, c in zip(row.letters, row.slot_ids, choices, strict=True):
        if c.context + c.continuation != row.prompt + letter:
            problems.append(f"option {letter}: context + continuation is not the prompt + {letter!r}")
        got = c.context_ids + c.continuation_ids
        want = [*row.ids, slot]
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
            problems.append(f"option {letter}: token ids differ at position {at} of {len(want)} "
                            f"(lm-eval {got[at:at + 3]}, semif {want[at:at + 3]})")
        if not c.continuation_ids or c.continuation_ids[-1] != slot:
            problems.append(f"option {letter}: continuation {c.continuation_ids} does not end with slot {slot}")
        moved.append(c.continuation_ids[:-1])
    if any(m != moved[0] for m in moved):
        problems.append(f"continuations carry different prompt tokens per option {moved} (they would not cancel)")
    return RowIdentity(row.id, not problems, moved[0] if moved else [], problems)


# --- agreement of option probabilities ------------------------------------------------------------------------
def softmax(scores: Sequence[float]) -> list[float]:
    """Softmax in float64 (log-likelihoods or logits of the declared options only)."""
    top = max(scores)
    e = [math.exp(s - top) for s in scores]
    z = sum(e)
    return [x / z for x in e]


def choice(probs: Sequence[float]) -> int | None:
    """Index of the largest probability; None on an exact tie for the top (never silently option A)."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    if len(order) > 1 and probs[order[0]] == probs[order[1]]:
        return None
    return order[0]


def agreement(reference: Mapping[str, Sequence[float]], other: Mapping[str, Sequence[float]]) -> dict[str, Any]:
    """Max and mean |Δp| over every option of every row, and the rows whose choice differs.

    Both maps go from row id to probabilities in letter order; they must hold the same rows.
    """
    if set(reference) != set(other):
        missing = sorted(set(reference) ^ set(other))
        raise ValueError(f"the two runs hold different rows (e.g. {missing[:3]})")
    worst, total, n = 0.0, 0.0, 0
    worst_id: str | None = None
    differ = []
    for rid, ref in reference.items():
        oth = other[rid]
        if len(ref) != len(oth):
            raise ValueError(f"row {rid!r}: {len(ref)} vs {len(oth)} probabilities")
        for a, b in zip(ref, oth, strict=True):
            d = abs(a - b)
            total += d
            n += 1
            if d > worst:
                worst, worst_id = d, rid
        if choice(ref) != choice(oth):
            differ.append(rid)
    return {"rows": len(reference), "max_abs_dp": worst, "max_abs_dp_row": worst_id,
            "mean_abs_dp": total / n if n else 0.0, "differing_choices": len(differ), "differing_ids": differ}
