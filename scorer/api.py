"""The public Python API: a semantic ``if`` inside agent code.

    from scorer import Scorer

    with Scorer(model="smollm2-135m", mode="shared") as s:
        d = s.decide(state, "Is the user asking for a refund?", {"yes": "a refund is asked for", "no": "anything else"})
        if d.choice == "yes" and d.margin > 0.2:
            ...

:class:`Scorer` owns one backend for its whole life (loaded once, on ``__enter__`` or first use, closed
on ``__exit__``/:meth:`Scorer.close`). Rows are validated exactly like JSONL input rows
(:func:`scorer.formats.rows.parse_decision`: the same field-level messages, as :class:`~scorer.core.errors.InputError`)
and scored by the same core as ``semif score`` (:mod:`scorer.scoring.modes`), so a :attr:`DecisionRecord.record`
equals the CLI's record for the same row and configuration apart from timings, the run's start time and how its
prefix came out of the cache: a :class:`Scorer` keeps one radix prefix cache (:mod:`scorer.scoring.radix_cache`) for its
whole life, so a call reuses the prefixes of earlier calls (records say so in ``cache``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

import orjson

from scorer import (
    __version__,
    backends,  # load_backend looked up when called: the seam tests replace
)
from scorer.backends import BackendConfig
from scorer.backends.base import Backend
from scorer.backends.registry import BACKENDS
from scorer.calibration.apply import apply_records, check_config, check_on_uncovered, covered
from scorer.calibration.core import Calibration, load_calibration
from scorer.calibration.label_free_defaults import Resolved as LabelFreeResolved
from scorer.calibration.label_free_defaults import auto_slots, check_label_free
from scorer.calibration.label_free_defaults import resolve as resolve_label_free
from scorer.core.checks import (
    AUTO_SLOTS,
    OptionError,
    byte_size,
    check_run_options,
    check_sequence_norm,
    check_slots,
    check_slots_backend,
    scores_continuations,
)
from scorer.core.errors import InputError, SemifError, brief
from scorer.core.hashing import sha256_chunks
from scorer.decision.policy import Policy, Verdict
from scorer.decision.questions import Answer, Answers, Question, answer_of, normalize_options, question_fields
from scorer.formats.echo import check_echo, with_echo
from scorer.formats.record_types import Record
from scorer.formats.rows import Decision, nonempty_str, parse_decision, unprintable
from scorer.formats.signature import signature_readout
from scorer.models import store
from scorer.prompting.demos import DEFAULT_K, DEFAULT_SEED, Demos, load_demos
from scorer.prompting.layouts import STATE_MAJOR, check_layout, signature_version
from scorer.scoring.label_free import ContentFreeCache, calibrate_records, derived_decisions, row_method
from scorer.scoring.measured_confidence import with_confidence
from scorer.scoring.modes import prepare, score_items
from scorer.scoring.options import (
    ScorerOptions,
    checked_config_parts,
    config_sha256,
    default_slots,
    resolve_layout,
)
from scorer.scoring.presets import Preset, check_states_disjoint, load_preset, with_preset
from scorer.scoring.radix_cache import RadixCache

if TYPE_CHECKING:
    from pathlib import Path

    from scorer.backends import BackendConfig
    from scorer.calibration.core import Calibration
    from scorer.prompting.demos import Demos
    from scorer.scoring.presets import Preset

DECIDE_SOURCE = "decision"
"""The ``path`` that :meth:`Scorer.decide` errors name (there is no file)."""
ROWS_SOURCE = "rows"
"""The ``path`` that :meth:`Scorer.decide_many` errors name; the ``line`` is the 1-based row number."""
ASK_SOURCE = "ask"
"""The ``path`` that :meth:`Scorer.ask` errors name; a question's field is ``questions.NAME.FIELD``."""
_QUESTION_FIELDS = ("question", "options", "type")
_OPTIONS = ScorerOptions()
"""The options' defaults (:class:`~scorer.scoring.options.ScorerOptions`: one definition for every face)."""
_BACKEND_OPTIONS = ("revision", "device", "dtype", "threads", "gguf", "llama_gpu_layers", "base_url", "api_key_env",
                    "served_model", "concurrency", "retries", "request_timeout_s")


@dataclass(frozen=True)
class CalibratedReadout:
    """The ``calibrated`` block of a record, typed: the readout after a calibration file's offsets."""

    probabilities: Mapping[str, float]
    """Calibrated probability of each option, by option id, in declared order."""
    choice: str | None
    """Option id with the highest calibrated probability; None when the top is a tie."""
    margin: float
    """Top calibrated probability minus the runner-up's."""
    tie: bool
    """True when the top calibrated logits are equal within the readout's tolerance."""
    applied: bool
    """False when the calibration had no entry fitted on enough rows for this decision's signature: the
    numbers above are then the raw ones (see the block's ``reason``)."""
    method: str
    """``prior`` (label-free) or ``bias`` (fitted on labels)."""
    level: str | None
    """Where the entry came from: ``signature``, ``family``, ``options`` or ``global`` (None when not applied)."""

    @classmethod
    def from_block(cls, ids: Sequence[str], block: Mapping[str, Any]) -> CalibratedReadout:
        return cls(probabilities=MappingProxyType(dict(zip(ids, block["probabilities"], strict=True))),
                   choice=block["choice"], margin=block["margin"], tie=block["tie"], applied=block["applied"],
                   method=block["method"], level=block.get("level"))


@dataclass(frozen=True)
class DecisionRecord:
    """One scored decision: the typed view of a ``semif-record-v1`` record."""

    id: str
    """The row's id (``decide`` uses ``"decision"`` unless given one)."""
    probabilities: Mapping[str, float]
    """Probability of each declared option, by option id, in declared order (softmax over the options'
    answer-slot logits; an uncalibrated conditional score unless a calibration was applied)."""
    choice: str | None
    """Option id with the highest probability; None when the top is a tie."""
    margin: float
    """Top probability minus the runner-up's."""
    tie: bool
    """True when the top option logits are equal in the backend's logits dtype."""
    tied_option_ids: tuple[str, ...]
    """The option ids sharing the top logit (empty unless ``tie``)."""
    allowed_token_mass: float
    """Share of the full-vocabulary softmax on the option letters: low means the model wanted to say
    something else, so the decision is weakly supported."""
    prompt_sha256: str
    """sha256 of the exact prompt text (UTF-8)."""
    tokens_sha256: str
    """sha256 of the prompt token ids (little-endian int32)."""
    timing: Mapping[str, float]
    """Seconds spent: ``encode_s``, ``forward_s``, ``total_s`` and, with prefix reuse, the prefill/copy/
    suffix split (shared mode: this row's equal share of its group's passes)."""
    record: Record
    """The exact record ``semif score`` writes for this row (a dict, schema ``semif-record-v2``: its fields are typed
    by :class:`~scorer.formats.record_types.Record`; write it with :func:`scorer.formats.records.dumps_record`)."""
    calibrated: CalibratedReadout | None = None
    """The calibrated readout when the scorer has a ``calibration``; None otherwise. The raw fields above
    are never changed by a calibration."""

    @property
    def final_choice(self) -> str | None:
        """The choice to act on: the calibrated one when a calibration was given, else the raw one (the
        same rule as ``record.get("calibrated", record)["choice"]`` for records on disk)."""
        return self.calibrated.choice if self.calibrated is not None else self.choice

    @property
    def answer(self) -> Answer:
        """The typed answer of this record (:func:`scorer.decision.questions.answer_of`; a row without a ``type`` is a
        ``choice``)."""
        return answer_of(self.record)

    def verdict(self, policy: Policy) -> Verdict:
        """Whether ``policy`` lets this decision be acted on, and why (:class:`scorer.decision.policy.Policy`)."""
        return self.answer.verdict(policy)

    def confident(self, policy: Policy) -> bool:
        """True when ``policy`` lets this decision be acted on (never on a tie)."""
        return self.answer.confident(policy)

    def final_choice_or(self, default: Any = None, policy: Policy | None = None) -> Any:
        """:attr:`final_choice` when ``policy`` is confident about it, else ``default`` (no policy: only a tie
        abstains)."""
        return self.answer.final_choice_or(default, policy)

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> DecisionRecord:
        """The typed view of one record dict (which it keeps, read-only, as :attr:`record`)."""
        return cls(id=rec["id"],
                   probabilities=MappingProxyType(dict(zip(rec["option_ids"], rec["probabilities"], strict=True))),
                   choice=rec["choice"], margin=rec["margin"], tie=rec["tie"],
                   tied_option_ids=tuple(rec["tied_option_ids"]), allowed_token_mass=rec["allowed_token_mass"],
                   prompt_sha256=rec["prompt_sha256"], tokens_sha256=rec["tokens_sha256"],
                   timing=MappingProxyType(dict(rec["timing"])), record=cast(Record, rec),
                   calibrated=CalibratedReadout.from_block(rec["option_ids"], rec["calibrated"])
                   if isinstance(rec.get("calibrated"), dict) else None)


def rows_sha256(lines: Sequence[bytes]) -> str:
    """The ``input_sha256`` of rows given in memory: the sha256 of the JSONL file that holds them as
    ``orjson.dumps(row)`` lines, so scoring that very file with ``semif score`` names the same run."""
    return sha256_chunks(line + b"\n" for line in lines)


def parse_rows(rows: Iterable[Any], source: str = ROWS_SOURCE) -> tuple[list[Decision], list[bytes]]:
    """Validate in-memory rows exactly like JSONL lines (row ``i`` is reported as ``source:i``), ids unique,
    every value JSON.

    Returns the decisions and each row as its JSON line (for :func:`rows_sha256`). Raises :class:`InputError`.
    """
    decisions: list[Decision] = []
    plain: list[bytes] = []
    seen: dict[str, int] = {}
    for n, obj in enumerate(rows, start=1):
        d, line = _parse_row(obj, source, n)
        if d.id in seen:
            raise InputError(source, n, "id", f"duplicate id {brief(d.id)} (first in row {seen[d.id]})",
                             "ids unique within the rows")
        seen[d.id] = n
        decisions.append(d)
        plain.append(line)
    if not decisions:
        raise InputError(source, None, None, "no decisions", "at least one row")
    return decisions, plain


def _parse_row(obj: Any, source: str, n: int | None) -> tuple[Decision, bytes]:
    """One row validated like a JSONL line (``source:n`` in messages; just ``source`` when ``n`` is None)."""
    d = parse_decision(obj, source, n)
    try:
        line = orjson.dumps(obj)
    except TypeError as exc:  # a set, a datetime… in an extra field: a JSONL row could not hold it
        raise InputError(source, n, None, f"not JSON ({exc})",
                         "JSON values only (str, number, bool, null, list, object)") from None
    return d, line


def ask_rows(state: Any, questions: Any, id: str | None = None, **extra: Any) -> list[dict[str, Any]]:
    """The rows :meth:`Scorer.ask` scores, one per question, in question order: ``{"id": NAME (or ID/NAME),
    "state", "question", "options", "type", **extra}``. A file of these rows (one ``orjson.dumps(row)`` per
    line) scored by ``semif score --mode shared`` gives :meth:`Scorer.ask`'s records."""
    if not isinstance(questions, Mapping) or not questions:
        raise InputError(ASK_SOURCE, None, "questions", f"{brief(questions)}",
                         "a non-empty mapping name -> Choice/YesNo/Score (or {type, question, options})")
    if id is not None and not nonempty_str(id):
        raise InputError(ASK_SOURCE, None, "id", f"{brief(id)} is not a non-empty string", "a non-empty string")
    clash = sorted(k for k in extra if k in ("id", "state", *_QUESTION_FIELDS, "echo"))
    if clash:  # echo is an argument of ask (the call's echo), so it can be no row's extra field here
        raise InputError(ASK_SOURCE, None, clash[0], "given as an extra field",
                         "extra fields other than id, state, question, options, type, echo")
    rows = []
    for name, spec in questions.items():
        if not nonempty_str(name):
            raise InputError(ASK_SOURCE, None, "questions", f"the name {brief(name)} is not a non-empty string",
                             "question names that are non-empty strings")
        bad = unprintable(name)
        if bad is not None:
            raise InputError(ASK_SOURCE, None, "questions", f"the name {brief(name)} holds the control character "
                             f"{bad}", "question names of printable characters (no control characters, line "
                             "breaks or tabs)")
        rows.append({"id": name if id is None else f"{id}/{name}", "state": state,
                     **question_fields(name, spec, ASK_SOURCE), **extra})
    return rows


def ask_decisions(state: Any, questions: Any, id: str | None = None,
                  **extra: Any) -> tuple[list[str], list[Decision], list[bytes]]:
    """The names, validated decisions and JSON lines of :func:`ask_rows` (nothing is scored): a bad question
    raises :class:`InputError` naming ``questions.NAME.FIELD``, a bad state or extra field names that field."""
    rows = ask_rows(state, questions, id, **extra)
    names = list(questions)
    decisions: list[Decision] = []
    plain: list[bytes] = []
    for name, row in zip(names, rows, strict=True):
        try:
            d, line = _parse_row(row, ASK_SOURCE, None)
        except InputError as exc:
            head = (exc.field or "").split("[")[0].split(".")[0]
            if head not in _QUESTION_FIELDS:
                raise
            raise InputError(ASK_SOURCE, None, f"questions.{name}.{exc.field}", exc.problem, exc.expected) from None
        decisions.append(d)
        plain.append(line)
    return names, decisions, plain


def ask_call(doc: Any, source: str = "body") -> tuple[Any, Any, str | None, dict[str, Any]]:
    """``(state, questions, id, extra)`` of an ask request in JSON (``{"state", "questions", "id"?, "extra"?}``:
    the service's ``/v1/ask`` body), every question validated (:func:`ask_decisions`); errors name ``source``
    and the field. An ``echo`` in ``extra`` is refused: it is the call's option (:meth:`Scorer.ask`)."""
    if not isinstance(doc, dict):
        raise InputError(source, None, None, f"a JSON {type(doc).__name__}",
                         'an object {"state", "questions", "id"?, "extra"?}')
    unknown = sorted(set(doc) - {"state", "questions", "id", "extra"})
    if unknown:
        raise InputError(source, None, unknown[0], "unknown key", "state, questions, id, extra")
    for key in ("state", "questions"):
        if key not in doc:
            raise InputError(source, None, key, "missing", 'an object {"state", "questions", "id"?, "extra"?}')
    extra = doc.get("extra", {})
    if not isinstance(extra, dict):
        raise InputError(source, None, "extra", f"a {type(extra).__name__}", "an object of extra fields")
    clash = sorted(k for k in extra if k in ("state", "questions", "id", *_QUESTION_FIELDS, "echo"))
    if clash:
        raise InputError(source, None, f"extra.{clash[0]}", "a field of the row itself, or the request's echo",
                         "extra fields other than state, questions, id, question, options, type, echo")
    ask_decisions(doc["state"], doc["questions"], doc.get("id"), **extra)
    return doc["state"], doc["questions"], doc.get("id"), extra


class Scorer:
    """Scores decisions with one model, loaded once and owned until :meth:`close` (or the ``with`` block ends).

    ``backend`` is ``"torch"``, ``"llamacpp"`` or an already built object implementing
    :class:`scorer.backends.base.Backend` (which the scorer then uses as it is, ignoring ``model``, and
    does not close). Backend options (``revision``, ``device``, ``dtype``, ``threads``, ``gguf``,
    ``llama_gpu_layers``) are those of :class:`scorer.backends.BackendConfig`. ``mode`` is ``direct``,
    ``serial`` or ``shared`` (rows that share a state are prefilled once and scored in packed passes).
    ``calibration`` is a calibration file (``semif calibrate prior|bias``) or a loaded
    :class:`~scorer.calibration.core.Calibration`: every record then carries a ``calibrated`` block
    (:attr:`DecisionRecord.calibrated`, :attr:`DecisionRecord.final_choice`), exactly as
    ``semif score --calibration FILE`` writes it; a row whose signature (question, options, model) the file
    does not cover is refused before anything is scored, naming the file and the signature — or, with
    ``on_uncovered="raw"``, scored with its raw numbers and a ``calibrated`` block flagged ``uncovered``. The
    file is read and checked at construction (bad JSON, wrong version or NaN raise
    :class:`~scorer.core.errors.InputError`), and so is its model: a file that holds nothing for the model this
    scorer would load is refused before the model loads. ``echo`` (True/``"digest"`` or ``"full"``) stores the
    question, options and a state digest (or the state) in every record (:mod:`scorer.formats.echo`); every scoring
    method
    takes ``echo=`` too, for that call only (None: the scorer's; False: none), as the service's and MCP's requests do.
    ``slots`` is what is read out: ``"auto"`` (the default, :data:`~scorer.scoring.options.DEFAULT_SLOTS`: a yes/no
    question read as ``"json"`` reads it, every other question by letters, a choice question as ``"json"`` too for
    weights measured so, :meth:`readout_for`; letters with a calibration file or the openai backend), ``"letters"``
    (the options lettered A, B, …) or ``"ids"`` (the
    options listed under their ids, each id's own token read: every id must be one token, else the row is
    refused naming ``options[i].id``) or ``"sequence"`` (the ids prompt, each id scored as a continuation of it: its
    tokens' log-probabilities from a fork of the prompt's state, any number of tokens; ``sequence_norm`` ``"sum"``, the
    default, or ``"mean"`` per token) or ``"json"`` (the answer asked for as a JSON object, each option scored as its
    quoted id after the prefilled ``{"answer":``; per token by default: :mod:`scorer.prompting.prompt`), as
    ``semif score --slots`` and ``--sequence-norm``.
    ``layout`` is ``state-major`` (the default, ``semif-direct-v1``), ``question-major`` or ``auto`` (per call of
    :meth:`decide_many`, whichever shares more prefix tokens over its rows; one row is always state-major).
    ``demos`` is a demonstrations file (``semif score --demos``) or loaded :class:`~scorer.prompting.demos.Demos`, with
    ``demos_k`` demonstrations per decision chosen by ``seed`` (for a file; defaults as the command line's).
    ``prefix_cache_bytes`` is the memory budget of the scorer's radix prefix cache (:attr:`prefix_cache`; bytes or
    text such as ``"512M"``; default 1 GiB): serial and shared modes reuse the longest cached prefix of every row,
    across calls, and evict the least recently used leaves past the budget.
    ``preset`` is a committed configuration (a name, ``scorer/data/presets/NAME.json``, a path to a preset file, or a
    loaded
    :class:`~scorer.scoring.presets.Preset`; ``semif score --preset``): its layout, readout (``slots``), demonstrations
    (``demos``, ``demos_k``, ``seed``) and calibration file fill every one of those left as None here, so an explicit
    value always wins; every record then carries ``preset`` (name, path, sha256), and a row whose state is the state
    of one of the preset's demonstrations is refused (:func:`scorer.scoring.presets.check_states_disjoint`).

    Thread-safe: calls are serialised (one backend runs one thing at a time).
    """

    def __init__(self, model: str = store.DEFAULT_MODEL, backend: str | Backend = "torch",
                 mode: str = _OPTIONS.mode, calibration: str | Path | Calibration | None = _OPTIONS.calibration, *,
                 max_batch_tokens: int = _OPTIONS.max_batch_tokens, on_uncovered: str = _OPTIONS.on_uncovered,
                 label_free: str = _OPTIONS.label_free,
                 echo: bool | str | None = _OPTIONS.echo, slots: str | None = _OPTIONS.slots,
                 sequence_norm: str | None = _OPTIONS.sequence_norm, layout: str | None = _OPTIONS.layout,
                 demos: str | Path | Demos | None = _OPTIONS.demos, demos_k: int | None = _OPTIONS.demos_k,
                 seed: int | None = _OPTIONS.seed, prefix_cache_bytes: int | str = _OPTIONS.prefix_cache_bytes,
                 preset: str | Path | Preset | None = _OPTIONS.preset, **options: Any) -> None:
        # The keywords are ScorerOptions' fields with its defaults (a contract test holds them equal).
        self.options = ScorerOptions(mode=mode, max_batch_tokens=max_batch_tokens, calibration=calibration,
                                     on_uncovered=on_uncovered, label_free=label_free, echo=echo, slots=slots,
                                     sequence_norm=sequence_norm, layout=layout, demos=demos, demos_k=demos_k,
                                     seed=seed,
                                     prefix_cache_bytes=prefix_cache_bytes, preset=preset)
        """The options as given (before a preset filled any)."""

        # A preset fills what the call leaves unset (None); whatever is given explicitly wins.
        self.preset = _load_preset(preset, model)
        if self.preset is not None:
            filled = self.preset.fill({"layout": layout, "slots": slots, "sequence_norm": sequence_norm,
                                       "demos": demos, "demos_k": demos_k, "seed": seed,
                                       "calibration": calibration}, demos_loaded=isinstance(demos, Demos))
            layout, slots, sequence_norm = filled["layout"], filled["slots"], filled["sequence_norm"]
            demos, demos_k, seed, calibration = filled["demos"], filled["demos_k"], filled["seed"], \
                filled["calibration"]
        # One validation for the API and the command line (scorer.core.checks): the same rules, the same words.
        self.mode, self.max_batch_tokens = check_run_options(mode, max_batch_tokens)
        if slots is None:  # the default readout, unless the backend or a calibration file rules it out
            continuations = backend.scores_continuations if isinstance(backend, Backend) \
                else scores_continuations(str(backend))
            slots = default_slots(continuations, calibration is not None)
        self.slots = check_slots(slots)
        self.sequence_norm = check_sequence_norm(sequence_norm, self.slots)
        self.prefix_cache = RadixCache(byte_size(prefix_cache_bytes, "prefix_cache_bytes"))
        """The radix prefix cache every call of this scorer shares (``prefix_cache.stats``, ``.summary()``)."""
        unknown = sorted(set(options) - set(_BACKEND_OPTIONS), key=str)
        if unknown:
            raise SemifError(f"unknown backend options {', '.join(map(str, unknown))} "
                             f"(expected {', '.join(_BACKEND_OPTIONS)})")
        if isinstance(backend, str):  # checked now, not when the model loads
            self._config: BackendConfig | None = BackendConfig(model=model, backend=backend, **options)
            check_slots_backend(self.slots, backend)
        elif isinstance(backend, Backend):
            if options:
                raise SemifError(f"backend options ({', '.join(sorted(options))}) apply only to a backend named by "
                                 "string; this backend object is already built")
            self._config = None
        else:
            raise OptionError("backend", f"{brief(backend)} is not one of {', '.join(BACKENDS)} "
                              "(or a built scorer.backends.base.Backend)")
        self.on_uncovered = check_on_uncovered(on_uncovered)
        try:
            self.label_free = check_label_free(label_free)
        except OptionError as exc:
            raise OptionError("label_free", exc.problem) from None
        """The label-free option as given (``auto``: the loaded weights' measured default, :meth:`label_free_for`)."""
        self._label_free: LabelFreeResolved | None = None
        self.content_free_cache = ContentFreeCache()
        """Content-free priors of the questions this scorer has seen (label-free methods that use them)."""
        self.echo = check_echo(echo)
        self.calibration = _load_calibration(calibration)
        if self.calibration is not None and self._config is not None:
            check_config(self.calibration, self._config)  # a file for another model: refused before it loads
        self.layout = check_layout(STATE_MAJOR if layout is None else layout)
        self.demos = _load_demos(demos, demos_k, seed)
        self._preset_demos = self.preset is not None and self.demos is not None \
            and self.demos.source.get("path") == str(self.preset.demos_path)
        self.model = model
        self._backend: Backend | None = None if isinstance(backend, str) else backend
        self._owned = isinstance(backend, str)
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_options(cls, cfg: BackendConfig, options: ScorerOptions) -> Scorer:
        """A scorer for a :class:`~scorer.backends.BackendConfig` and its :class:`ScorerOptions` (what the command
        line, the HTTP service and MCP build)."""
        return cls(cfg.model, cfg.backend, **options.kwargs(), **{k: getattr(cfg, k) for k in _BACKEND_OPTIONS})

    # --- life cycle ---------------------------------------------------------------------------------
    def __enter__(self) -> Scorer:
        self.load()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load(self) -> Backend:
        """The backend, loaded on first call (fetching and verifying the model by sha256 as the CLI does)."""
        with self._lock:
            return self._load_locked()

    def _load_locked(self) -> Backend:
        if self._closed:
            raise SemifError("this Scorer is closed; make a new one")
        if self._backend is None:
            assert self._config is not None
            self._backend = backends.load_backend(self._config)
        return self._backend

    def close(self) -> None:
        """Free the backend this scorer loaded (a backend passed in is left to its owner). Idempotent."""
        with self._lock:
            backend, self._backend, self._closed = self._backend, None, True
            self.prefix_cache.clear()
        if self._owned and backend is not None:  # llama.cpp frees its context; torch just drops the model
            backend.close()

    def model_info(self) -> dict[str, Any]:
        """The records' ``model`` block (loads the model if needed)."""
        return self.load().model_info()

    # --- scoring ------------------------------------------------------------------------------------
    def decide(self, state: str | dict[str, Any] | list[Any], question: str, options: Any,
               id: str = "decision", *, echo: bool | str | None = None, **extra: Any) -> DecisionRecord:
        """Score one decision. ``options``: a list of ids, ``{id: description}`` or ``[{"id", "description"}, …]``
        (2–255, lettered A, B, … in this order, numbered past 16; :func:`scorer.decision.questions.normalize_options`).
        ``extra`` fields are carried into the record, never into the prompt (``type="yesno"``/``"score"`` types the
        readout: :attr:`DecisionRecord.answer`); ``echo`` is this call's echo (None: the scorer's), not an extra field.
        Raises :class:`InputError` with the field-level message a JSONL row would get."""
        row = {"id": id, "state": state, "question": question,
               "options": normalize_options(options, DECIDE_SOURCE, None), **extra}
        return self.decide_row(row, DECIDE_SOURCE, echo=echo)

    def decide_row(self, row: Any, source: str = "row", *, echo: bool | str | None = None) -> DecisionRecord:
        """Score one row given in the JSONL row schema (a dict); errors name ``source`` (no line number).
        ``echo``: this call's (None: the scorer's)."""
        decision, line = _parse_row(row, source, None)
        return self._score([decision], [line], echo)[0]

    def decide_many(self, rows: Iterable[Mapping[str, Any]], *, echo: bool | str | None = None
                    ) -> list[DecisionRecord]:
        """Score rows (dicts in the JSONL row schema: id, state, question, options, extra fields), all
        validated before any is scored. In shared mode rows that share a state are prefilled once and scored
        together. Records come back in input order and equal ``semif score``'s for a file of these rows (with
        ``--echo`` when this call or the scorer echoes). ``echo``: this call's (None: the scorer's)."""
        decisions, plain = parse_rows(rows)
        return self._score(decisions, plain, echo)

    def ask_rows(self, state: str | dict[str, Any] | list[Any], questions: Mapping[str, Question | Mapping[str, Any]],
                 id: str | None = None, **extra: Any) -> list[dict[str, Any]]:
        """The rows :meth:`ask` scores (:func:`ask_rows`)."""
        return ask_rows(state, questions, id, **extra)

    def ask(self, state: str | dict[str, Any] | list[Any], questions: Mapping[str, Question | Mapping[str, Any]],
            id: str | None = None, *, echo: bool | str | None = None, **extra: Any) -> Answers:
        """Ask several named questions about one state: ``{"team": Choice(q, options), "refund": YesNo(q),
        "severity": Score(q, labels)}`` -> :class:`~scorer.decision.questions.Answers`, name -> typed answer
        (:class:`~scorer.decision.questions.ChoiceAnswer`, :class:`~scorer.decision.questions.YesNoAnswer`,
        :class:`~scorer.decision.questions.ScoreAnswer`). The state is prefilled once and the questions scored in packed
        passes (shared mode, whatever this scorer's ``mode``). Every question is validated before any is scored
        (:func:`ask_decisions`); a bad one raises :class:`InputError` naming ``questions.NAME.FIELD``. ``echo``:
        this call's (None: the scorer's), not an extra field."""
        names, decisions, plain = ask_decisions(state, questions, id, **extra)
        records = self.score_decisions(decisions, {"input_sha256": rows_sha256(plain), "semif": __version__},
                                       mode="shared", echo=echo)
        return Answers({name: answer_of(rec, name) for name, rec in zip(names, records, strict=True)})

    def _score(self, decisions: list[Decision], plain: list[bytes], echo: bool | str | None) -> list[DecisionRecord]:
        records = self.score_decisions(decisions, {"input_sha256": rows_sha256(plain), "semif": __version__},
                                       echo=echo)
        return [DecisionRecord.from_record(r) for r in records]

    def label_free_for(self, info: Mapping[str, Any]) -> LabelFreeResolved:
        """The label-free method this scorer applies to the model ``info`` describes (its backend's ``model_info()``):
        the one named, or with ``auto`` the one measured for these weights and this readout
        (:mod:`scorer.calibration.label_free_defaults`; ``none`` where nothing was measured). Resolved once: a
        scorer holds one backend."""
        if self._label_free is None:
            # the readout auto comes to for these weights, asked for by name, is what auto's default was measured on
            measured_as = AUTO_SLOTS if self.slots == auto_slots(info) else self.slots
            self._label_free = resolve_label_free(self.label_free, info, measured_as)
        return self._label_free

    def readout_for(self, info: Mapping[str, Any]) -> str:
        """The readout this scorer's ``slots`` come to for the model ``info`` describes: ``auto`` per weights
        (:func:`~scorer.calibration.label_free_defaults.auto_slots`: choice questions as JSON answers where that was
        measured right more often), every other readout as given."""
        return auto_slots(info) if self.slots == AUTO_SLOTS else self.slots

    def _label_free_rows(self, decisions: Sequence[Decision], method: str, info: dict[str, Any],
                         layout: str) -> list[int]:
        """The positions of the decisions ``method`` corrects: none with ``none``, else every one whose own method
        (its kind's, :func:`~scorer.scoring.label_free.row_method`) is not ``none`` and that the calibration file does
        not cover (a covered one keeps the file's block, so its extra prompts would be wasted)."""
        if method == "none":
            return []
        hit = [False] * len(decisions)
        if self.calibration is not None:
            slots = self.readout_for(info)
            version = signature_version(layout, self.demos.k if self.demos is not None else 0, slots)
            hit = covered(self.calibration, decisions, info, version, signature_readout(1, slots, self.sequence_norm))
        return [k for k, (d, c) in enumerate(zip(decisions, hit, strict=True))
                if not c and row_method(method, d) != "none"]

    def uncovered_rule(self, method: str) -> str:
        """What a row the calibration file does not cover gets when ``method`` is the label-free method applied:
        its raw numbers here (the label-free correction then replaces them), or with ``none``
        :attr:`on_uncovered`."""
        return "raw" if method != "none" else self.on_uncovered

    def echo_level(self, echo: bool | str | None = None) -> str | None:
        """The echo level a call with ``echo`` records: the scorer's when None, else ``echo`` checked
        (:func:`scorer.formats.echo.check_echo`: False is none, True is ``digest``)."""
        return self.echo if echo is None else check_echo(echo)

    def run_config(self, decisions: Sequence[Decision], run_parts: Mapping[str, Any], info: dict[str, Any],
                   mode: str | None = None, layout: str | None = None, echo: bool | str | None = None
                   ) -> dict[str, Any]:
        """What names a run of ``decisions`` by this scorer (:func:`scorer.scoring.options.checked_config_parts` with
        every option of this scorer), checked: the one place the API and the service's batching name runs.
        ``layout``: the resolved one (default: this scorer's, resolved for these decisions alone); ``echo``: the
        call's (None: the scorer's)."""
        slots = self.readout_for(info)
        if layout is None:
            layout = self.layout if self.layout != "auto" else resolve_layout(self.load(), decisions, "auto",
                                                                                 self.demos, slots)[0]
        method = self.label_free_for(info).method
        return checked_config_parts(info, decisions, run_parts, self.mode if mode is None else mode,
                                    self.max_batch_tokens, calibration=self.calibration,
                                    on_uncovered=self.uncovered_rule(method), echo=self.echo_level(echo),
                                    layout=layout, demos=self.demos, slots=slots,
                                    sequence_norm=self.sequence_norm,
                                    preset=None if self.preset is None else self.preset.sha256, label_free=method)

    def score_decisions(self, decisions: Sequence[Decision], run_parts: dict[str, Any], resumed_from: int = 0,
                        indices: Sequence[int] | None = None, mode: str | None = None,
                        echo: bool | str | None = None) -> list[dict[str, Any]]:
        """Engine-level entry: the records of already validated ``decisions`` (one run of
        :func:`scorer.scoring.modes.score_items`, so shared mode groups them by state prefix).

        ``run_parts`` identifies the run as ``semif score`` does (``input_sha256`` of the input file,
        ``semif`` version); ``indices`` are the rows' positions in that input (``run.index``; default
        0, 1, …) when these decisions are a slice of it; ``resumed_from`` is recorded as is. With a
        calibration every decision's signature is checked before any is scored, and the records carry the
        ``calibrated`` block (the run's configuration then names the calibration file's sha256, as the
        CLI's does). ``mode`` overrides the scorer's mode for this call (``ask`` scores in shared mode), ``echo``
        its echo (None: the scorer's; checked before anything is scored).
        """

        mode = self.mode if mode is None else check_run_options(mode, self.max_batch_tokens)[0]
        if not decisions:
            return []  # nothing to score: the model is not loaded for it
        if self.preset is not None and self._preset_demos:
            assert self.demos is not None
            check_states_disjoint(self.demos.states(), decisions, self.preset)
        level = self.echo_level(echo)
        with self._lock:
            backend = self._load_locked()
            cal = self.calibration
            info = backend.model_info()
            slots = self.readout_for(info)
            layout, _ = resolve_layout(backend, decisions, self.layout, self.demos, slots)
            parts = self.run_config(decisions, run_parts, info, mode, layout, level or False)
            run = {"config_sha256": config_sha256(parts), "started_unix": round(time.time(), 3),
                   "resumed_from": resumed_from}
            label_free = self.label_free_for(info)
            method = label_free.method
            fix = self._label_free_rows(decisions, method, info, layout)
            extra = derived_decisions(method, [decisions[k] for k in fix], self.content_free_cache) if fix else []
            items = prepare(backend, [*decisions, *extra], with_prefix=mode != "direct", layout=layout,
                            demos=self.demos, slots=slots)
            scored = list(score_items(backend, items, mode, run, 0, self.max_batch_tokens, self.prefix_cache,
                                      self.sequence_norm))
            records, derived = scored[:len(decisions)], scored[len(decisions):]
            if cal is not None:
                records = list(apply_records(cal, records, self.uncovered_rule(method)))
            if fix:  # what a calibration file covers keeps its block; the rest is corrected
                fixed = calibrate_records(method, [decisions[k] for k in fix], [records[k] for k in fix], derived,
                                          self.content_free_cache, label_free.describe())
                for k, rec in zip(fix, fixed, strict=True):
                    records[k] = rec
            records = list(with_preset(with_echo(with_confidence(records, label_free.measured), decisions, level),
                                       self.preset))
        if indices is not None:
            for rec, index in zip(records, indices, strict=True):
                rec["run"]["index"] = index
        return records


def _load_preset(preset: str | Path | Preset | None, model: str) -> Preset | None:
    """A preset named or given by path is read and checked now (its files' sha256 too), before any model loads; a
    name with no file of its own is looked up for ``model`` (:func:`scorer.scoring.presets.preset_path`)."""
    if preset is None:
        return None

    return preset if isinstance(preset, Preset) else load_preset(preset, model=model)


def _load_demos(demos: str | Path | Demos | None, k: int | None, seed: int | None) -> Demos | None:
    """Demonstrations given by path are read and checked now (file:line:field errors), before any model loads."""
    if demos is None:
        if k is not None or seed is not None:
            raise SemifError("demos_k and seed choose demonstrations: give them with demos=FILE")
        return None
    if isinstance(demos, Demos):
        if k is not None or seed is not None:
            raise SemifError("demos_k and seed are those of the Demos given; pass a file to choose them here")
        return demos
    if not isinstance(demos, str | os.PathLike):
        raise SemifError(f"demos {brief(demos)} is not a file path or a scorer.prompting.demos.Demos "
                         "(expected labelled rows in the input schema)")
    return load_demos(demos, DEFAULT_K if k is None else k, DEFAULT_SEED if seed is None else seed)


def _load_calibration(calibration: str | Path | Calibration | None) -> Calibration | None:
    """A calibration given by path is loaded and checked now, so a bad file fails before any model loads."""
    if calibration is None:
        return None

    if isinstance(calibration, Calibration):
        return calibration
    if not isinstance(calibration, str | os.PathLike):
        raise SemifError(f"calibration {brief(calibration)} is not a file path or a Calibration "
                         "(expected a file written by `semif calibrate prior|bias`)")
    return load_calibration(calibration)
