"""Latency of one typed-decision request with 1 to 64 questions about one state: ``semif serve``'s
``POST /v1/systemone`` beside the PyPI peer typed-gguf (which serves the same wire) and beside grammar-constrained
generation of the same answers by llama-server, on the same machine, in one run.

Lanes, per model (every lane is a server on loopback, started here and stopped at the end):

* ``semif-<backend>`` for each ``--backends`` entry: ``semif serve --model KEY --backend torch|llamacpp`` (this source
  tree), ``POST /v1/systemone``;
* ``typed-gguf`` (typed-gguf 0.3.0 in its own virtualenv under the semif cache, :data:`scorer.engines.venv.TYPED_GGUF`):
  ``typed-gguf serve``, ``POST /v1/systemone``, on the same GGUF file as SemIf's llama.cpp backend (a registry of
  one alias written into its own data home) with ``TYPED_GGUF_RUNTIME_DIR`` pointed at llama-cpp-python's bundled
  libraries (``llama_cpp/lib``; nothing is downloaded);
* ``llama-server`` (``semif engine start llama-server``'s build, one slot): one ``POST /completion`` per request with
  the chat-templated prompt and a GBNF grammar (:class:`scorer.prompting.grammar.ObjectGrammar`) that forces exactly
  one JSON object with one field per question whose value is one of that question's option names; greedy.

typed-gguf and llama-server run llama.cpp only: they run once per model whatever ``--backends`` says, beside the
SemIf lane(s) (with ``--backends torch``: beside SemIf's torch lane).

Workload: the state is the text of ``scorer/data/versus/shape-s01.json``'s ``state`` (a support-queue snapshot,
about 500 tokens); the N questions are the first N of a fixed list that interleaves noul, choice and score
(:func:`question_pool`): the noul questions are that file's 21 criteria verbatim, the choice and score questions ask
about the same snapshot's fields (plan, country, channel, priority, CSAT… the vocabularies of
``data/workloads/build.py``) and about its message.

Each size N: every lane is primed once (untimed) with the warm request, then ``--repeats`` rounds; in each round
every lane, in an order rotated each round (so a burst of load falls on all of them), answers a **cold** request (a
per-round nonce line prepended to the state: a state no server has seen) and then the **warm** one (the primed
request again, byte for byte: a tool that caches prefixes has the state cached). Latency is measured by the client,
request sent to answer read (httpx, the same for every lane; llama-server's prompt is templated by its own
``/apply-template`` beforehand, untimed, as an SDK builds its body untimed). Every answer is checked: for the
System One lanes with the TypeSafe SDK's own wire model (``SystemOneResponse.model_validate(..., strict=True)``) and
an answer of the asked type for every question; for llama-server the JSON parsed, complete and in range.

The 1-minute load average is read before every timed request (after waiting up to ``--settle`` seconds for it to
fall to ``--max-load``); a cell with any request above ``--max-load`` is ``quiet: false`` and must not be quoted.

    PYTHONPATH=. .venv/bin/python benchmarks/decision_latency.py --models qwen2.5-0.5b,qwen2.5-1.5b \\
        --backends torch,llamacpp --sizes 1,4,16,64 --repeats 5 --output data/results/decision-latency.json

Writes one report (the common envelope, kind ``decision-latency``); progress on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scorer.core.io import refuse_overwrite  # noqa: E402
from scorer.formats.envelope import file_input, make_report, write_report  # noqa: E402
from scorer.prompting.grammar import ObjectGrammar  # noqa: E402

KIND = "decision-latency"
FORMAT = "semif-decision-latency-v1"
STATE_FILE = ROOT / "scorer" / "data" / "versus" / "shape-s01.json"
"""The state (its ``state`` text) and the noul questions (its ``criteria``)."""
CACHES = ("cold", "warm")
TOOLS = ("semif", "typed-gguf", "llama-server")
BACKENDS = ("torch", "llamacpp")
READY_TIMEOUT_S = 900.0
REQUEST_TIMEOUT_S = 3600.0


# --- the workload ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    """One question of the workload, in the tool-neutral form every lane's request is made from."""

    name: str
    """``q01``…: the answer's key on every wire."""
    type: str
    """``noul``, ``choice`` or ``score``."""
    text: str
    """The question (System One ``instructions``)."""
    options: tuple[str, ...] = ()
    """choice: the option names; score: the level texts in order (0 first); noul: none."""
    source: str = ""
    """Where it comes from (a shape criterion id, or the snapshot field it asks about)."""

    def answer_values(self) -> tuple[str, ...]:
        """The values a generated answer may take: the option names, the level indices as text, or yes/no."""
        if self.type == "choice":
            return self.options
        if self.type == "score":
            return tuple(str(i) for i in range(len(self.options)))
        return ("yes", "no")


_CHOICES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("plan", "Which plan is the primary customer on?", ("Free", "Basic", "Pro", "Enterprise")),
    ("country", "In which country is the primary customer based?",
     ("Germany", "France", "Spain", "Netherlands", "Ireland", "Poland", "Sweden", "Italy", "United Kingdom",
      "Austria")),
    ("channel", "Through which channel was the primary ticket submitted?", ("email", "chat", "phone", "web form")),
    ("status", "What is the primary ticket's status?", ("open", "pending customer", "escalated", "resolved")),
    ("priority", "What priority does the primary ticket have?", ("low", "normal", "high", "urgent")),
    ("payment", "How was the primary order paid?", ("credit card", "PayPal", "bank transfer", "invoice")),
    ("product_type", "What kind of product is the primary ticket about?", ("hardware", "software")),
    ("preferred_language", "In which language does the primary customer prefer to be contacted?",
     ("English", "German", "French", "Spanish", "Dutch", "Polish", "Swedish", "Italian")),
    ("product", "Which product is the primary ticket about?",
     ("Aero X2 router", "Lumen desk lamp", "Pulse fitness band", "Nimbus 4K webcam", "Orbit smart thermostat",
      "Quill e-reader", "CloudVault backup", "Ledgerly invoicing", "PhotoForge editor", "TaskHive planner",
      "SecureNest VPN", "Chorus team chat")),
    ("assigned_to", "Who is the primary ticket assigned to?",
     ("K. Brandt", "L. Osei", "M. Ruiz", "S. Holm", "D. Kaur", "T. Nguyen", "nobody")),
    ("message", "What is the main problem in the primary customer's message?",
     ("late or missing delivery", "broken or crashing product", "promo code not applied", "billing question",
      "account access", "other")),
    ("message", "What does the primary customer ask for first?",
     ("refund", "replacement", "cancellation", "information", "nothing")),
    ("message", "What is the tone of the primary customer's message?", ("polite", "neutral", "frustrated", "hostile")),
    ("message", "Which team should handle the primary ticket?",
     ("billing", "logistics", "technical support", "account management", "legal")),
    ("message", "What should the agent do next on the primary ticket?",
     ("issue a refund", "escalate to a supervisor", "send troubleshooting steps", "close the ticket",
      "ask for more information")),
    ("message", "What is the biggest risk in the primary ticket?",
     ("customer churn", "legal action", "chargeback", "bad review", "none")),
    ("tickets", "What do most of the other (background) tickets in the snapshot concern?",
     ("refunds and charges", "deliveries", "cancellations", "logins and accounts", "data export", "mixed topics")),
    ("opened", "On which weekday was the primary ticket opened?",
     ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")),
    ("account_opened", "In which quarter of the year was the primary customer's account opened?",
     ("Q1", "Q2", "Q3", "Q4")),
    ("channel", "Through which channel should the agent reply to the primary customer?",
     ("email", "phone", "chat")),
    ("message", "What is the state of the primary order's delivery?",
     ("delivered on time", "delivered late", "not delivered", "not mentioned")),
    ("message", "Which promo code does the primary customer mention?",
     ("AUTUMN10", "WELCOME15", "SPRING20", "none")),
)
"""The choice questions: (snapshot field asked about, question, option names)."""

_SCORES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("priority", "How high is the primary ticket's priority?", ("low", "normal", "high", "urgent")),
    ("last_csat", "How did the primary customer rate their last support interaction?",
     ("1 (very dissatisfied)", "2", "3", "4", "5 (very satisfied)")),
    ("previous_tickets", "How many previous tickets has the primary customer opened?",
     ("none", "one or two", "three to five", "more than five")),
    ("order_amount_eur", "How large is the primary order?",
     ("under 20 EUR", "20 to 50 EUR", "50 to 100 EUR", "100 to 250 EUR", "over 250 EUR")),
    ("attachments", "How many attachments does the primary ticket include?", ("none", "one", "two or more")),
    ("account_opened", "How long before the snapshot date was the primary customer's account opened?",
     ("under 6 months", "6 to 12 months", "1 to 2 years", "2 to 5 years", "over 5 years")),
    ("opened", "How long before the snapshot date was the primary ticket opened?",
     ("the same day", "1 to 3 days", "4 to 7 days", "1 to 2 weeks", "over 2 weeks")),
    ("message", "How urgent is the primary customer's request?", ("can wait", "this week", "today", "immediately")),
    ("message", "How frustrated is the primary customer?", ("calm", "mildly annoyed", "frustrated", "furious")),
    ("message", "How likely is the primary customer to leave?", ("unlikely", "possible", "likely")),
    ("message", "How serious is the legal risk in the primary ticket?", ("none", "low", "high")),
    ("message", "How likely is the primary customer to get a refund?", ("unlikely", "possible", "likely")),
    ("message", "How clear is the primary customer's message?", ("unclear", "partly clear", "clear")),
    ("message", "How many distinct problems does the primary customer report?",
     ("one", "two", "three", "four or more")),
    ("message", "How hard will the primary ticket be to resolve?", ("trivial", "moderate", "hard")),
    ("message", "How polite is the primary customer's message?", ("rude", "neutral", "polite")),
    ("plan", "How valuable is the primary customer to the company?", ("low", "medium", "high")),
    ("message", "How late was the primary order's delivery?",
     ("not late", "a few days", "about a week", "more than a week")),
    ("message", "How much support effort will the primary ticket need?", ("minutes", "hours", "days")),
    ("message", "How severe is the product failure the primary customer reports?",
     ("none", "minor", "major", "total")),
    ("tickets", "How many other (background) tickets are in the snapshot?",
     ("three or fewer", "four", "five", "six or more")),
)
"""The score questions: (snapshot field asked about, question, level texts from lowest to highest)."""


def load_state_file(path: Path = STATE_FILE) -> tuple[str, list[dict[str, str]]]:
    """The state as text and the criteria (``[{id, question, …}]``) of a versus input file. A JSON state becomes its
    JSON text (``json.dumps``, default separators), so every lane is sent the very same characters."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    state, criteria = doc.get("state"), doc.get("criteria")
    if isinstance(state, dict | list):
        state = json.dumps(state, ensure_ascii=False)
    if not isinstance(state, str) or not state or not isinstance(criteria, list) or not criteria:
        raise SystemExit(f"{path}: expected a 'state' (text or JSON) and a non-empty 'criteria' list")
    return state, criteria


def question_pool(criteria: Sequence[dict[str, str]]) -> list[Question]:
    """Every question, in the order sizes take them: noul, choice, score, noul, … (each kind in its own order; a kind
    that runs out is skipped), named ``q01``… by position. The noul questions are ``criteria`` verbatim."""
    kinds: list[list[tuple[str, str, str, tuple[str, ...]]]] = [
        [("noul", str(c["id"]), str(c["question"]), ()) for c in criteria],
        [("choice", f, q, o) for f, q, o in _CHOICES],
        [("score", f, q, o) for f, q, o in _SCORES],
    ]
    order: list[tuple[str, str, str, tuple[str, ...]]] = []
    while any(kinds):
        for k in kinds:
            if k:
                order.append(k.pop(0))
    width = max(2, len(str(len(order))))
    return [Question(f"q{i + 1:0{width}d}", t, text, opts, src) for i, (t, src, text, opts) in enumerate(order)]


def questions_for(pool: Sequence[Question], n: int) -> list[Question]:
    """The first ``n`` questions of the pool (an error when it holds fewer)."""
    if not 1 <= n <= len(pool):
        raise SystemExit(f"--sizes: {n} questions asked, the workload has 1 to {len(pool)}")
    return list(pool[:n])


def mix(qs: Sequence[Question]) -> dict[str, int]:
    return {t: sum(q.type == t for q in qs) for t in ("noul", "choice", "score")}


def systemone_body(model: str, state: str, qs: Sequence[Question]) -> dict[str, Any]:
    """The ``POST /v1/systemone`` request (the TypeSafe SDK's ``SystemOneRequest`` shape)."""
    questions: dict[str, Any] = {}
    for q in qs:
        if q.type == "choice":
            questions[q.name] = {"type": "choice", "instructions": q.text, "criteria": dict.fromkeys(q.options)}
        elif q.type == "score":
            questions[q.name] = {"type": "score", "instructions": q.text, "criteria": list(q.options)}
        else:
            questions[q.name] = {"type": "noul", "instructions": q.text}
    return {"model": model, "state": state, "questions": questions}


def grammar_for(qs: Sequence[Question]) -> ObjectGrammar:
    """The llama-server lane's grammar: one JSON object, a field per question, its value one of the answer values."""
    return ObjectGrammar(tuple(q.name for q in qs), tuple(q.answer_values() for q in qs))


GENERATION_INSTRUCTIONS = ("Answer every question below about the state above. Reply with one JSON object that has "
                           "one field per question, named by the question's id, whose value is exactly one of that "
                           "question's options, and nothing else.")


def generation_messages(state: str, qs: Sequence[Question]) -> list[dict[str, str]]:
    """The llama-server lane's chat: the state first (so a prompt cache can share it), then the questions, each
    with the exact values its field may take."""
    lines = []
    for q in qs:
        if q.type == "score":
            opts = ", ".join(f'"{i}" ({t})' for i, t in enumerate(q.options))
            lines.append(f"{q.name}: {q.text} Options, from lowest to highest: {opts}.")
        elif q.type == "choice":
            lines.append(f"{q.name}: {q.text} Options: " + ", ".join(json.dumps(o) for o in q.options) + ".")
        else:
            lines.append(f'{q.name}: {q.text} Options: "yes", "no".')
    user = f"State:\n{state}\n\n{GENERATION_INSTRUCTIONS}\n\nQuestions:\n" + "\n".join(lines)
    return [{"role": "user", "content": user}]


def cold_state(state: str, nonce: str) -> str:
    """A state no server has seen: a nonce line before the text (everything the state prefix caches differs)."""
    return f"[request {nonce}]\n{state}"


# --- checking answers --------------------------------------------------------------------------------------------
def systemone_problems(doc: Any, qs: Sequence[Question]) -> list[str]:
    """Why ``doc`` is not a valid, complete System One answer to ``qs`` (empty: it is): the TypeSafe SDK's own wire
    model in strict mode, then one answer per question, of its type, within its options."""
    from pydantic import ValidationError
    from typesafe_sdk._schemas.models import SystemOneResponse

    try:
        SystemOneResponse.model_validate(doc, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        return [f"SystemOneResponse (strict): {exc.error_count()} error(s), first at "
                f"{'.'.join(map(str, first['loc']))}: {first['msg']}"]
    answers = doc.get("answers") or {}
    out = []
    missing = [q.name for q in qs if q.name not in answers]
    extra = [k for k in answers if k not in {q.name for q in qs}]
    if missing or extra:
        out.append(f"answers missing {missing[:8]}, extra {extra[:8]}")
    for q in qs:
        a = answers.get(q.name)
        if not isinstance(a, dict):
            continue
        if a.get("type") != q.type:
            out.append(f"{q.name}: a {a.get('type')!r} answer to a {q.type} question")
        elif q.type == "choice" and a.get("choice") not in q.options:
            out.append(f"{q.name}: choice {a.get('choice')!r} is not one of its options")
        elif q.type == "score" and not 0 <= float(a.get("score", -1)) <= len(q.options) - 1:
            out.append(f"{q.name}: score {a.get('score')!r} outside 0..{len(q.options) - 1}")
        elif q.type == "noul" and not 0 <= float(a.get("noul", -1)) <= 1:
            out.append(f"{q.name}: noul {a.get('noul')!r} outside 0..1")
    return out


# --- statistics --------------------------------------------------------------------------------------------------
def percentile(xs: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty sequence."""
    if not xs:
        raise ValueError("percentile of nothing")
    ys = sorted(xs)
    return ys[max(0, min(len(ys), math.ceil(q / 100 * len(ys))) - 1)]


def summarize(reqs: Sequence[dict[str, Any]], size: int, max_load: float) -> dict[str, Any]:
    """One cell (a model, lane, size and cache): latency p50/p95/mean of the answered requests, decisions/s
    (questions answered over the time spent answering them), how many answers were valid, and ``quiet`` (every
    request started with the 1-minute load average at most ``max_load``)."""
    ok = [r for r in reqs if r.get("status") == 200]
    lat = [float(r["latency_s"]) for r in ok]
    loads = [r["load_before"][0] for r in reqs if r.get("load_before")]
    cached = [r.get("cached_tokens") for r in ok]
    return {"requests": len(reqs), "answered": len(ok), "valid": sum(1 for r in ok if not r["problems"]),
            "latency_p50_s": round(percentile(lat, 50), 4) if lat else None,
            "latency_p95_s": round(percentile(lat, 95), 4) if lat else None,
            "latency_mean_s": round(statistics.fmean(lat), 4) if lat else None,
            "latency_min_s": round(min(lat), 4) if lat else None,
            "decisions_per_s": round(size * len(lat) / sum(lat), 3) if lat and sum(lat) > 0 else None,
            "input_tokens": _median_int([r.get("input_tokens") for r in ok]),
            "output_tokens": _median_int([r.get("output_tokens") for r in ok]),
            "cached_tokens": None if all(c is None for c in cached) else cached,
            "load_max": max(loads) if loads else None,
            "quiet": bool(loads) and len(loads) == len(reqs) and max(loads) <= max_load,
            "problems": sorted({p for r in reqs for p in r["problems"]})[:10]}


def _median_int(xs: Sequence[Any]) -> float | None:
    """The median of the integers among ``xs`` (None when a tool reported none)."""
    ints = [x for x in xs if isinstance(x, int) and not isinstance(x, bool)]
    return statistics.median(ints) if ints else None


def ratios(cells: Sequence[dict[str, Any]], sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Per model, lane and cache: the p50 latency of the largest size over the smallest's (the goal for SemIf: well
    under the size ratio, which is what answering the questions one by one would cost)."""
    lo, hi = min(sizes), max(sizes)
    if lo == hi:
        return []
    by = {(c["model"], c["lane"], c["cache"], c["size"]): c for c in cells}
    out = []
    for (model, lane, cache, size), c in by.items():
        if size != lo:
            continue
        d = by.get((model, lane, cache, hi))
        a, b = c.get("latency_p50_s"), (d or {}).get("latency_p50_s")
        out.append({"model": model, "lane": lane, "cache": cache, "from_size": lo, "to_size": hi,
                    "size_ratio": round(hi / lo, 3),
                    "p50_ratio": round(b / a, 3) if a and b is not None else None,
                    "quiet": bool(c.get("quiet")) and bool((d or {}).get("quiet"))})
    return out


def rotated(items: Sequence[Any], k: int) -> list[Any]:
    """``items`` starting at position ``k`` (mod its length): the order of round ``k``."""
    if not items:
        return []
    k %= len(items)
    return list(items[k:]) + list(items[:k])


def wait_quiet(max_load: float, settle_s: float, sleep: Callable[[float], None] = time.sleep,
               loadavg: Callable[[], tuple[float, float, float]] = os.getloadavg) -> tuple[list[float], float]:
    """Wait (up to ``settle_s``) for the 1-minute load average to fall to ``max_load``; the load averages then, and
    the seconds waited."""
    waited = 0.0
    while True:
        load = [round(x, 2) for x in loadavg()]
        if load[0] <= max_load or waited >= settle_s:
            return load, round(waited, 1)
        step = min(2.0, settle_s - waited)
        sleep(step)
        waited += step


# --- lanes -------------------------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lane:
    """One server answering the workload: how to ask it, and what it is."""

    name: str
    """``semif-torch``, ``semif-llamacpp``, ``typed-gguf`` or ``llama-server``."""
    tool: str
    backend: str
    base: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    """What the report says about it: command, versions, ready time, how it caches."""
    served_model: str = ""
    """The ``model`` its System One requests name."""

    @property
    def systemone(self) -> bool:
        return self.tool != "llama-server"


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def server_process(cmd: list[str], env: dict[str, str], health: str, log: Path,
                   timeout_s: float = READY_TIMEOUT_S) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    """Run ``cmd`` (its output into ``log``, its own process group) until the block ends; yields the process and the
    seconds until ``health`` answered 200. A server that exits or never gets ready ends the block with its log."""
    import httpx

    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                cwd=ROOT, start_new_session=True)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited {proc.returncode} before it was ready; its log ({log}):\n"
                                   f"{_tail(log)}")
            if time.perf_counter() - t0 > timeout_s:
                raise RuntimeError(f"{cmd[0]} was not ready within {timeout_s:.0f} s; its log ({log}):\n{_tail(log)}")
            try:
                if httpx.get(health, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        yield proc, round(time.perf_counter() - t0, 2)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def llama_cpp_lib_dir() -> Path:
    """llama-cpp-python's bundled shared libraries (libllama.so, libggml*.so): typed-gguf's runtime here."""
    import importlib.util

    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("llama-cpp-python is not installed in this environment")
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    if not (lib / "libllama.so").is_file():
        raise RuntimeError(f"{lib} holds no libllama.so")
    return lib


def typed_gguf_home(root: Path, aliases: dict[str, Path], current: str) -> Path:
    """typed-gguf's data home (``TYPED_GGUF_HOME``) holding a registry of ``aliases`` (alias → GGUF path), the one
    named ``current`` its default (what ``jev-latest`` answers): the GGUFs SemIf uses, registered where they lie."""
    root.mkdir(parents=True, exist_ok=True)
    reg = {"schema": "typed_gguf.registry/v1", "current": current,
           "aliases": {a: {"alias": a, "path": str(p)} for a, p in aliases.items()}}
    (root / "registry.json").write_text(json.dumps(reg, indent=1) + "\n", encoding="utf-8")
    return root


@contextlib.contextmanager
def start_lanes(model: str, backends: Sequence[str], tools: Sequence[str], args: argparse.Namespace, work: Path,
                gguf: Path) -> Iterator[tuple[list[Lane], list[dict[str, Any]]]]:
    """Start every lane of ``model``; yields the lanes that are up and the ones that could not start (with why).
    Every server started is stopped when the block ends."""
    lanes: list[Lane] = []
    failed: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        if "semif" in tools:
            for b in backends:
                lane = Lane(f"semif-{b}", "semif", b, served_model=model)
                try:
                    _start_semif(lane, model, args, work, stack)
                    lanes.append(lane)
                except Exception as exc:  # a lane that cannot start is reported; the others still run
                    failed.append({"model": model, "lane": lane.name, "error": str(exc)[-3000:]})
        if "typed-gguf" in tools:
            lane = Lane("typed-gguf", "typed-gguf", "llamacpp", served_model=model)
            try:
                _start_typed_gguf(lane, model, gguf, args, work, stack)
                lanes.append(lane)
            except Exception as exc:
                failed.append({"model": model, "lane": lane.name, "error": str(exc)[-3000:]})
        if "llama-server" in tools:
            lane = Lane("llama-server", "llama-server", "llamacpp", served_model=model)
            try:
                _start_llama_server(lane, model, args, stack)
                lanes.append(lane)
            except Exception as exc:
                failed.append({"model": model, "lane": lane.name, "error": str(exc)[-3000:]})
        for f in failed:
            say(f"{f['lane']} did not start: {f['error'][-600:]}")
        yield lanes, failed


def _start_semif(lane: Lane, model: str, args: argparse.Namespace, work: Path, stack: contextlib.ExitStack) -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "scorer.cli", "serve", "--model", model, "--backend", lane.backend,
           "--host", "127.0.0.1", "--port", str(port), "--threads", str(args.threads), *args.semif_flags]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    lane.base = f"http://127.0.0.1:{port}"
    say(f"starting {lane.name}: semif serve --model {model} --backend {lane.backend}")
    _proc, ready = stack.enter_context(server_process(cmd, env, lane.base + "/healthz",
                                                      work / f"{lane.name}-{model}.log"))
    lane.info = {"command": shlex.join(["semif", *cmd[3:]]), "ready_s": ready, "endpoint": "POST /v1/systemone",
                 "cache": "radix prefix cache across requests (--prefix-cache-bytes): a warm request reuses the "
                          "state's prefix"}


def _start_typed_gguf(lane: Lane, model: str, gguf: Path, args: argparse.Namespace, work: Path,
                      stack: contextlib.ExitStack, log_dir: Path | None = None) -> None:
    """``typed-gguf serve`` on ``gguf``, its home under ``work`` and its log there too unless ``log_dir`` is given (a
    caller whose ``work`` is a temporary folder keeps the log where it outlives the server)."""
    from scorer.engines import venv

    status = venv.ensure(venv.TYPED_GGUF)
    if not status.ok:
        raise RuntimeError(f"typed-gguf's virtualenv ({' '.join(venv.TYPED_GGUF.specs)}): {status.error}")
    exe = Path(status.python).parent / "typed-gguf"
    lib = llama_cpp_lib_dir()
    home = typed_gguf_home(work / f"typed-gguf-home-{model}", {model: gguf}, model)
    env = {**os.environ, "TYPED_GGUF_HOME": str(home), "TYPED_GGUF_RUNTIME_DIR": str(lib),
           "TYPED_GGUF_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)
    port = free_port()
    cmd = [str(exe), "serve", "--host", "127.0.0.1", "--port", str(port), "--keep-alive", args.typed_gguf_keep_alive]
    lane.base = f"http://127.0.0.1:{port}"
    say(f"starting typed-gguf serve on {gguf.name} (runtime {lib})")

    def keep_stop() -> None:  # its warm host is a process of its own, kept alive for --keep-alive: end it
        subprocess.run([str(exe), "keep", "stop", "--json"], env=env, capture_output=True, timeout=120)

    stack.callback(keep_stop)
    _proc, ready = stack.enter_context(server_process(cmd, env, lane.base + "/health",
                                                      (log_dir or work) / f"typed-gguf-{model}.log"))
    version = next((ln.split("==", 1)[1] for ln in status.freeze if ln.lower().startswith("typed-gguf==")), None)
    lane.info = {"command": shlex.join(["typed-gguf", *cmd[1:]]), "ready_s": ready, "endpoint": "POST /v1/systemone",
                 "version": version, "venv": {"python": status.python, "specs": status.specs,
                                              "reused": status.reused, "freeze": status.freeze},
                 "runtime_dir": str(lib), "runtime_libllama_sha256": _sha256(lib / "libllama.so"),
                 "runtime_note": "TYPED_GGUF_RUNTIME_DIR is llama-cpp-python's own llama_cpp/lib (libllama, "
                                 "libggml, libggml-base, libggml-cpu); typed-gguf pins llama.cpp b11026 and drives it "
                                 "through ctypes (its structs' field lists match llama-cpp-python 0.3.36's); the "
                                 "folder has no llama-cli/llama-fit-params, so its fit plan is its own estimate "
                                 "(W_FIT_ESTIMATED) and `typed-gguf doctor` cannot name the build",
                 "threads": f"os.cpu_count() = {os.cpu_count()} (the System One wire carries no thread count)",
                 "cache": "none across requests on the System One wire (its state cache needs --state-id and "
                          "--save-state, which the wire cannot send): warm and cold both prefill the state",
                 "home": str(home)}


def _start_llama_server(lane: Lane, model: str, args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
    from scorer.engines.launcher import EngineSpec, start, stop

    say("starting llama-server (one slot)")
    st = start(EngineSpec(engine="llama-server", model=model, ctx=args.llama_ctx, parallel=1, threads=args.threads),
               say=False)
    stack.callback(stop, port=st["port"])
    lane.base = st["base_url"]
    lane.info = {"command": shlex.join(st["command"]), "ready_s": st.get("ready_s"),
                 "endpoint": "POST /completion (grammar: one JSON object, a field per question)",
                 "version": st.get("engine_version"),
                 "cache": "prompt cache of its one slot (cache_prompt) and its host-memory prompt cache "
                          "(--cache-ram, default 8 GiB): a warm request reuses the identical prompt's KV"}


def _sha256(path: Path) -> str:
    from scorer.core.hashing import sha256_file

    return sha256_file(path)


# --- asking ------------------------------------------------------------------------------------------------------
def ask(client: Any, lane: Lane, state: str, qs: Sequence[Question], grammar: ObjectGrammar) -> dict[str, Any]:
    """One timed request of ``lane`` about ``state`` with ``qs``: its latency (request sent to answer read), status,
    problems (empty: a valid, complete answer) and the tokens it read from a cache when the tool says."""
    import httpx

    if lane.systemone:
        path, body = "/v1/systemone", systemone_body(lane.served_model, state, qs)
    else:
        try:  # the engine's own chat template, applied before the clock starts (as an SDK builds its body)
            tpl = client.post(lane.base + "/apply-template", json={"messages": generation_messages(state, qs)})
            tpl.raise_for_status()
        except httpx.HTTPError as exc:
            return {"latency_s": None, "status": f"/apply-template: {type(exc).__name__}: {exc}",
                    "problems": ["no prompt"], "cached_tokens": None}
        path = "/completion"
        body = {"prompt": tpl.json()["prompt"], "grammar": grammar.gbnf(), "n_predict": grammar.max_new_tokens(),
                "temperature": 0.0, "top_k": 1, "cache_prompt": True, "stream": False}
    raw = json.dumps(body).encode()
    t0 = time.perf_counter()
    try:
        r = client.post(lane.base + path, content=raw, headers={"content-type": "application/json"})
        status: int | str = r.status_code
    except httpx.HTTPError as exc:
        return {"latency_s": round(time.perf_counter() - t0, 4), "status": f"{type(exc).__name__}: {exc}",
                "problems": ["no answer"], "cached_tokens": None}
    dt = time.perf_counter() - t0
    out: dict[str, Any] = {"latency_s": round(dt, 4), "status": status, "cached_tokens": None}
    try:
        doc = r.json()
    except ValueError:
        out["problems"] = [f"HTTP {status}, not JSON: {r.text[:200]}"]
        return out
    if status != 200:
        out["problems"] = [f"HTTP {status}: {json.dumps(doc)[:300]}"]
        return out
    if lane.systemone:
        out["problems"] = systemone_problems(doc, qs)
        usage = doc.get("usage") or {}
        out["input_tokens"], out["output_tokens"] = usage.get("input_tokens"), usage.get("output_tokens")
        out["cached_tokens"] = usage.get("cached_input_tokens")
    else:
        text = doc.get("content", "")
        out["problems"] = grammar.problems(text)
        if doc.get("truncated") or doc.get("stop_type") == "limit":
            out["problems"].append("stopped at n_predict")
        t = doc.get("timings") or {}
        evaluated, cached = t.get("prompt_n"), t.get("cache_n")
        # the prompt's tokens, evaluated or read from the cache (as semif's usage.input_tokens counts them)
        out["input_tokens"] = evaluated + cached if isinstance(evaluated, int) and isinstance(cached, int) else None
        out["output_tokens"] = t.get("predicted_n")
        out["cached_tokens"] = cached
    return out


def say(msg: str) -> None:
    """A progress line, named after the benchmark that runs (single_request_peer starts its servers with these
    helpers too)."""
    print(f"[{Path(sys.argv[0]).stem.replace('_', '-')}] {msg}", file=sys.stderr, flush=True)


def measure_model(model: str, lanes: list[Lane], pool: list[Question], state: str, args: argparse.Namespace,
                  rng: random.Random) -> list[dict[str, Any]]:
    """Every size, every round, every lane (rotated), cold then warm: the request rows."""
    import httpx

    rows: list[dict[str, Any]] = []
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        for size in args.sizes:
            qs = questions_for(pool, size)
            grammar = grammar_for(qs)
            for lane in lanes:  # prime: the warm request once, untimed (and the first request's model load)
                r = ask(client, lane, state, qs, grammar)
                say(f"{model} {lane.name} N={size}: primed in {r['latency_s'] or 0:.2f} s "
                    f"({'valid' if not r['problems'] else r['problems'][:2]})")
            for rnd in range(args.repeats):
                nonce = f"{rng.getrandbits(48):012x}"
                for lane in rotated(lanes, rnd):
                    for cache in CACHES:
                        load, waited = wait_quiet(args.max_load, args.settle)
                        r = ask(client, lane, cold_state(state, nonce) if cache == "cold" else state, qs, grammar)
                        r.update(model=model, lane=lane.name, tool=lane.tool, backend=lane.backend, size=size,
                                 cache=cache, round=rnd, load_before=load, waited_s=waited,
                                 quiet=load[0] <= args.max_load)
                        rows.append(r)
                        say(f"{model} {lane.name} N={size} {cache} round {rnd + 1}/{args.repeats}: "
                            f"{r['latency_s'] or 0:.3f} s, load {load[0]}"
                            + ("" if not r["problems"] else f", problems {r['problems'][:2]}"))
    return rows


def cells_of(rows: list[dict[str, Any]], max_load: float) -> list[dict[str, Any]]:
    keys = list(dict.fromkeys((r["model"], r["lane"], r["tool"], r["backend"], r["size"], r["cache"]) for r in rows))
    out = []
    for model, lane, tool, backend, size, cache in keys:
        mine = [r for r in rows if (r["model"], r["lane"], r["size"], r["cache"]) == (model, lane, size, cache)]
        out.append({"model": model, "lane": lane, "tool": tool, "backend": backend, "size": size, "cache": cache,
                    **summarize(mine, size, max_load)})
    return out


def silent_lanes(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lanes that started but answered none of their timed requests (a server that died after it was ready, as
    typed-gguf's host does where its build meets an instruction the CPU lacks), for ``failed_lanes``: a lane whose
    cells all read ``no answer`` is a failed lane, not a slow one."""
    out = []
    for model, lane in dict.fromkeys((r["model"], r["lane"]) for r in rows):
        mine = [r for r in rows if (r["model"], r["lane"]) == (model, lane)]
        if not any(r.get("status") == 200 for r in mine):
            seen = sorted({str(r.get("status")) for r in mine})
            out.append({"model": model, "lane": lane, "error": f"answered none of its {len(mine)} timed requests "
                                                               f"(status: {'; '.join(seen)[:600]})"})
    return out


def _csv(kind: type, text: str) -> list[Any]:
    return [kind(x.strip()) for x in text.split(",") if x.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--models", default="qwen2.5-0.5b,qwen2.5-1.5b", help="model store keys, comma-separated")
    ap.add_argument("--backends", default="torch,llamacpp", help="SemIf's backends, comma-separated")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"lanes to run, comma-separated ({', '.join(TOOLS)})")
    ap.add_argument("--sizes", default="1,4,16,64", help="questions per request, comma-separated")
    ap.add_argument("--repeats", type=int, default=5, help="rounds per size (each: a cold and a warm request per lane)")
    ap.add_argument("--threads", type=int, default=usable_cores(),
                    help="CPU threads of semif serve and llama-server (typed-gguf takes os.cpu_count())")
    ap.add_argument("--max-load", type=float, default=1.5,
                    help="a measurement started above this 1-minute load average is not quiet (not to be quoted)")
    ap.add_argument("--settle", type=float, default=60.0,
                    help="seconds to wait at most, before each timed request, for the load to fall to --max-load")
    ap.add_argument("--llama-ctx", type=int, default=8192, help="llama-server's context (one slot)")
    ap.add_argument("--typed-gguf-keep-alive", default="24h",
                    help="typed-gguf's warm host lifetime (its default 600 s could unload it between requests)")
    ap.add_argument("--semif-flags", default="", help="more `semif serve` flags, e.g. '--preset accurate-qwen2.5-1.5b'")
    ap.add_argument("--seed", type=int, default=20261204, help="seeds the cold requests' nonces")
    ap.add_argument("--output", type=Path, required=True)
    ap.add_argument("--force", action="store_true", help="overwrite an existing report")
    args = ap.parse_args(argv)
    args.models = _csv(str, args.models)
    args.backends = _csv(str, args.backends)
    args.tools = _csv(str, args.tools)
    args.sizes = _csv(int, args.sizes)
    args.semif_flags = shlex.split(args.semif_flags)
    bad = [b for b in args.backends if b not in BACKENDS] + [t for t in args.tools if t not in TOOLS]
    if bad or not args.models or not args.sizes or args.repeats < 1:
        ap.error(f"--backends from {BACKENDS}, --tools from {TOOLS}, at least one model and size, --repeats >= 1 "
                 f"(got {bad or 'no models/sizes'})")
    if "semif" in args.tools and not args.backends:
        ap.error("--backends: at least one for the semif lanes")
    return args


def notes(args: argparse.Namespace) -> list[str]:
    out = [
        "latency: client-side (httpx), request sent to answer read, one request at a time; decisions/s = questions "
        "answered / seconds spent answering them",
        "cold: a nonce line prepended to the state (no server has seen it); warm: the request primed before the "
        "rounds, byte for byte (a tool that caches prefixes has the state cached; cached_tokens says what it reused "
        "where the tool says: semif usage.cached_input_tokens, llama-server timings.cache_n; typed-gguf does not)",
        "typed-gguf and llama-server run llama.cpp only: they run once per model beside the SemIf lanes"
        + (" — here beside SemIf's torch lane, on the GGUF (Q4) while SemIf's torch lane runs the fp32 weights "
           "dequantized from it" if "llamacpp" not in args.backends and "semif" in args.tools else ""),
        "llama-server generates: its latency grows with the answer's length (every field name and value is a token "
        "decoded, forced or not), the System One servers read logits and generate nothing",
        f"quiet: every request of the cell started with the 1-minute load average <= {args.max_load} (after waiting "
        f"up to {args.settle:g} s: the average also counts the lanes' own previous requests, which keep "
        f"{args.threads} thread(s) busy); a cell that is not quiet must not be quoted",
        "p50_ratio: the p50 latency of the largest size over the smallest's; answering the questions one request "
        "each would cost about size_ratio. A warm 1-question request to semif serve is a whole-prompt cache hit (the "
        "state and that one question's row were both cached by the identical earlier request: at most one token is "
        "computed); from 2 questions on semif packs the questions after the cached state in one pass and keeps only "
        "the state cached, so its warm ratio divides by a request that computed next to nothing; llama-server's "
        "warm requests reuse the whole identical prompt at every size and only generate. The cold ratio says how "
        "the work grows with the questions",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.output.exists() and not args.force:
        raise SystemExit(str(refuse_overwrite(args.output)))
    from scorer.models import store

    state, criteria = load_state_file()
    pool = question_pool(criteria)
    for n in args.sizes:
        questions_for(pool, n)
    rng = random.Random(args.seed)
    rows: list[dict[str, Any]] = []
    lanes_out: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    ggufs: dict[str, dict[str, Any]] = {}
    t_start = time.time()
    # SIGTERM (a kill, a CI timeout) unwinds like Ctrl-C, so every server is stopped by its context manager instead
    # of being left loaded beside the next benchmark (a killed run left typed-gguf and llama-server running)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    with tempfile.TemporaryDirectory(prefix="semif-decision-latency-") as tmp:
        work = Path(tmp)
        for model in args.models:
            path, sha = store.gguf_for(store.resolve(model))
            ggufs[f"gguf.{model}"] = {"path": str(path), "sha256": sha}
            with start_lanes(model, args.backends, args.tools, args, work, Path(path)) as (lanes, bad):
                failed += bad
                lanes_out += [{"model": model, "lane": ln.name, "tool": ln.tool, "backend": ln.backend, **ln.info}
                              for ln in lanes]
                if lanes:
                    measured = measure_model(model, lanes, pool, state, args, rng)
                    failed += silent_lanes(measured)
                    rows += measured
    cells = cells_of(rows, args.max_load)
    size_ratios = ratios(cells, args.sizes)
    biggest = questions_for(pool, max(args.sizes))
    body = {
        "title": f"One request, 1 to {max(args.sizes)} questions: semif serve vs typed-gguf vs llama-server "
                 f"(grammar), {', '.join(args.models)}",
        "command": shlex.join([sys.executable, *sys.argv]) if argv is None else shlex.join(argv),
        "settings": {"models": args.models, "backends": args.backends, "tools": args.tools, "sizes": args.sizes,
                     "repeats": args.repeats, "threads": args.threads, "max_load": args.max_load,
                     "settle_s": args.settle, "llama_ctx": args.llama_ctx, "semif_flags": args.semif_flags,
                     "seed": args.seed, "wall_s": round(time.time() - t_start, 1)},
        "workload": {"state": {"path": str(STATE_FILE.relative_to(ROOT)), "chars": len(state),
                               "what": "shape-s01.json's state (a support-queue snapshot: one primary ticket among "
                                       "background tickets) as its JSON text, sent as a text state to every lane"},
                     "questions": [{"name": q.name, "type": q.type, "question": q.text, "options": list(q.options),
                                    "source": q.source} for q in biggest],
                     "mix": {str(n): mix(questions_for(pool, n)) for n in args.sizes},
                     "derivation": "the first N of a fixed interleaving noul, choice, score, noul, …: the noul "
                                   "questions are shape-s01.json's 21 criteria verbatim, the choice and score "
                                   "questions (benchmarks/decision_latency.py _CHOICES, _SCORES) ask about the same "
                                   "snapshot's fields and message; named q01…"},
        "lanes": lanes_out,
        "failed_lanes": failed,
        "quiet": bool(cells) and all(c["quiet"] for c in cells),
        "results": cells,
        "ratios": size_ratios,
        "requests": rows,
        "notes": notes(args),
    }
    versions = {"typed-gguf": next((ln.get("version") for ln in lanes_out if ln["tool"] == "typed-gguf"), None),
                "llama-server": next((ln.get("version") for ln in lanes_out if ln["tool"] == "llama-server"), None)}
    try:
        from importlib import metadata

        versions["typesafe-sdk"] = metadata.version("typesafe-sdk")
    except Exception:
        versions["typesafe-sdk"] = None
    report = make_report(KIND, FORMAT, {"state": file_input(STATE_FILE), **ggufs}, body, versions=versions)
    write_report(args.output, report, overwrite=args.force)
    say(f"wrote {args.output} ({len(rows)} timed requests, quiet: {body['quiet']})")
    for r in size_ratios:
        say(f"{r['model']} {r['lane']} {r['cache']}: {r['to_size']} questions / {r['from_size']} = {r['p50_ratio']}x")
    return 0 if not failed and all(c["valid"] == c["requests"] for c in cells) else 1


if __name__ == "__main__":
    raise SystemExit(main())
