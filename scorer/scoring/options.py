"""What a scorer and a scoring run are and what names them: the options of a :class:`~scorer.api.Scorer`
(:class:`ScorerOptions`, the one definition every face builds from), those of a records run (:class:`ScoreConfig`,
checked by the rules the command line and the API share), the policies that re-score records before they are
written (:class:`RecordPolicy`), the layout
``auto`` resolves to, and the run's identity (:func:`checked_config_parts`, hashed by :func:`config_sha256`), which
goes into every record and which ``--resume`` must match."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scorer.backends.base import Backend
from scorer.calibration.apply import check_decisions, check_on_uncovered
from scorer.core.checks import (
    AUTO_FORMS,
    DEFAULT_MAX_BATCH_TOKENS,
    OptionError,
    check_run_options,
    check_sequence_norm,
    check_slots,
    positive_float,
    positive_int,
)
from scorer.core.errors import ValidationError
from scorer.core.hashing import canonical_sha256
from scorer.formats.echo import check_echo
from scorer.formats.rows import Decision
from scorer.formats.signature import signature_readout
from scorer.prompting.demos import Demos, prompt_for
from scorer.prompting.layouts import (
    AUTO,
    LAYOUTS,
    STATE_MAJOR,
    LayoutChoice,
    check_layout,
    choose,
    signature_version,
    version,
)
from scorer.prompting.prompt import Prompt
from scorer.scoring.modes import Item
from scorer.scoring.radix_cache import DEFAULT_BUDGET_BYTES, RadixCache
from scorer.scoring.sequence import check_sequence_options

DEFAULT_LABEL_FREE = "auto"
"""The label-free correction a scorer applies unless told otherwise: the one measured for its weights and readout
(:mod:`scorer.calibration.label_free_defaults`; ``none``, the raw readout, where nothing was measured)."""

DEFAULT_SLOTS = "auto"
"""The readout a scorer reads unless told otherwise (or a preset says): a yes/no question as a JSON answer, every other
question by letters, and for weights measured so (qwen2.5-1.5b:
:func:`scorer.calibration.label_free_defaults.auto_slots`) a choice question as a JSON answer too (its options as
bullets). Chosen by the single-request studies
(``docs/results.md``): yes/no questions as JSON ahead of letters on the authored set defaults are chosen on and on
boundary, for both shipped models (qwen2.5-0.5b with its label-free correction 0.508 -> 0.550 authored, 0.458 -> 0.625
boundary; qwen2.5-1.5b raw, one System One request per state, 0.635 -> 0.701 and 0.625 -> 0.875), and level or ahead
on the held-out single set; choice questions as JSON ahead of letters on every labelled set with qwen2.5-1.5b's
label-free default, behind with qwen2.5-0.5b's. Where it cannot apply (:func:`default_slots`) the default is letters;
a records run (``semif score``) reads letters unless told: its records are meant to be comparable with the committed
ones."""


def default_slots(scores_continuations: bool, calibration: bool) -> str:
    """The readout of a scorer not told one: :data:`DEFAULT_SLOTS`, or letters where auto cannot apply — with a
    calibration file (its signatures name one prompt version) and on a backend that does not score continuations
    (``openai``: it returns one position's log-probabilities, and a JSON answer is read at several)."""
    return DEFAULT_SLOTS if scores_continuations and not calibration else "letters"

if TYPE_CHECKING:
    from scorer.calibration.core import Calibration
    from scorer.scoring.presets import Preset


@dataclass(frozen=True)
class ScorerOptions:
    """How a :class:`~scorer.api.Scorer` scores, whatever the face it is reached through: the one definition of these
    options and their defaults. The Python API takes them as ``Scorer``'s keywords (same names, same defaults), the
    command line as ``semif ask``'s, ``semif serve``'s and ``semif mcp``'s flags
    (:func:`scorer.cli.arguments.add_scorer_args`), the HTTP service as
    :attr:`scorer.serving.service.ServeConfig.options` and MCP as :func:`scorer.serving.mcp.serve_mcp`'s
    ``options``; a contract test holds the four to this class.

    Values are checked where they are used (the ``Scorer``, by :mod:`scorer.core.checks`' rules, with the same words
    on every face). None means not given: a preset fills it, else the default named in its note applies. (A records
    run, ``semif score``, is a :class:`ScoreConfig`: its own options, resume and policies, and mode ``direct`` by
    default, since a file run's records are meant to equal fresh scoring's.)"""

    mode: str = "shared"
    """``direct``, ``serial`` or ``shared`` (:data:`scorer.core.checks.MODES`): rows about one state are prefilled
    once and packed."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode: suffix tokens per packed pass."""
    calibration: str | Path | Calibration | None = None
    """A prior or bias file (``semif calibrate prior|bias``) or a loaded calibration: every record gets its
    ``calibrated`` block."""
    on_uncovered: str = "error"
    """A row the calibration does not cover: refused (``error``) or scored raw and flagged (``raw``); with a
    ``label_free`` method, corrected by it instead."""
    label_free: str = DEFAULT_LABEL_FREE
    """The label-free correction of every request (:data:`scorer.calibration.label_free.METHODS`, or one per kind of
    question, :func:`scorer.calibration.label_free.by_kind`; ``none``: the raw readout acts; ``auto``: per kind, the
    method measured for the loaded weights and readout, :mod:`scorer.calibration.label_free_defaults`): computed from a
    few more prompts about each question, no labels, no batch; a calibration file that covers a question wins."""
    echo: bool | str | None = None
    """What every record echoes of its input: ``digest`` (or True), ``full``, or None (nothing)."""
    slots: str | None = None
    """The readout: ``auto`` (the default, :data:`DEFAULT_SLOTS`: a yes/no question read as ``json`` reads it, every
    other question by letters, a choice question as ``json`` too for weights measured so; letters with a calibration
    file or a backend that does not score continuations, such as openai: :func:`default_slots`), ``letters``, ``ids``,
    ``sequence``, ``codes`` or ``json``
    (:data:`scorer.core.checks.SLOTS`)."""
    sequence_norm: str | None = None
    """``slots="sequence"`` (or ``"json"``, ``"auto"``): ``sum`` or ``mean`` per token (default: sum, auto's
    JSON answers included; json: mean)."""
    layout: str | None = None
    """The prompt layout: ``state-major`` (default), ``question-major`` or ``auto``."""
    demos: str | Path | Demos | None = None
    """A demonstrations file (labelled rows) or loaded demonstrations, shown before every decision."""
    demos_k: int | None = None
    """Demonstrations per decision (default :data:`scorer.prompting.demos.DEFAULT_K`)."""
    seed: int | None = None
    """The seed that orders the demonstration candidates (default :data:`scorer.prompting.demos.DEFAULT_SEED`)."""
    prefix_cache_bytes: int | str = DEFAULT_BUDGET_BYTES
    """Memory budget of the radix prefix cache every call shares (bytes, or text such as ``512M``)."""
    preset: str | Path | Preset | None = None
    """A committed configuration (a name such as ``accurate``, a file, or a loaded preset) filling what is not
    given."""

    def kwargs(self) -> dict[str, Any]:
        """The options as ``Scorer``'s keyword arguments."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def config_sha256(parts: dict[str, Any]) -> str:
    """Hash of everything that must match for ``--resume`` to continue a run."""
    return canonical_sha256(parts)


def config_parts(info: Mapping[str, Any], run_parts: Mapping[str, Any], mode: str,
                 max_batch_tokens: int) -> dict[str, Any]:
    """What identifies a plain run (no permute/temperature/exact): ``run_parts`` (input hash, version), the
    identity of the loaded model (``info``: its ``model_info()``), the mode and the pass budget. Its
    :func:`config_sha256` goes into every record, so every entry (CLI, Python API, HTTP service) that scores
    the same rows the same way names the same run."""
    ident = {k: info.get(k) for k in ("key", "source", "gguf_sha256", "revision", "local_sha256", "dtype",
                                       "device", "backend")}
    engine = info.get("engine")
    if isinstance(engine, dict):  # a remote engine: which one, serving what, is part of the run's identity
        ident["engine"] = {k: engine.get(k) for k in ("kind", "version", "served_model")}
    return {**run_parts, "model": ident, "mode": mode, "max_batch_tokens": max_batch_tokens}


class RecordPolicy(Protocol):
    """A policy that re-scores some fast-path records before they are written (``--exact``:
    :class:`scorer.scoring.exact.ExactPolicy`). Scoring calls it; it is free to score again itself."""

    def config(self) -> dict[str, Any]:
        """What must match for ``--resume`` (goes into the run's config hash)."""
        ...

    def calibrate(self, backend: Backend, items: list[Item], mode: str, max_batch_tokens: int) -> None:
        """Settle the policy on these rows before any record is written."""
        ...

    def apply(self, backend: Backend, items: list[Item], mode: str,
              records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """The records, in order, some of them replaced."""
        ...


@dataclass(frozen=True)
class ScoreConfig:
    """How a records file is scored: everything but the rows, the backend and the output."""

    mode: str = "direct"
    """One of :data:`~scorer.core.checks.MODES`."""
    run_parts: Mapping[str, Any] = field(default_factory=dict)
    """What identifies the run besides the model and these options (input hash, semif version); the
    model block is added by :func:`~scorer.scoring.file_run.run_score`."""
    resume: bool = False
    """Continue the records already in the output (all of them must be this configuration's)."""
    max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS
    """Shared mode: suffix tokens per packed pass."""
    permute: int = 1
    """K > 1: read each decision out over K cyclic option orderings
    (:func:`~scorer.scoring.permuted.score_permuted`)."""
    temperature: float | None = None
    """Rescale the option logits by 1/T (:func:`scorer.calibration.temperature.apply_temperature`)."""
    exact: RecordPolicy | None = None
    """Re-score fresh the fast-path decisions under a drift bound (:class:`scorer.scoring.exact.ExactPolicy`)."""
    route: RecordPolicy | None = None
    """Re-score low-margin decisions on an accurate engine (:class:`scorer.scoring.routing.RoutePolicy`)."""
    calibration: Calibration | None = None
    """Add a ``calibrated`` block to every record (:meth:`scorer.calibration.core.Calibration.apply`)."""
    on_uncovered: str = "error"
    """A row the calibration does not cover: refuse the run (``error``) or keep its raw numbers, flagged
    (``raw``; :data:`scorer.calibration.apply.ON_UNCOVERED`)."""
    echo: str | None = None
    """Store the question, options and a state digest (``digest``) or the state (``full``) in every record
    (:mod:`scorer.formats.echo`)."""
    slots: str = "letters"
    """The answer slots read out: the letters A–P, the option ids, or the ids as token sequences
    (:data:`scorer.core.checks.SLOTS`)."""
    sequence_norm: str | None = None
    """``slots="sequence"``: ``sum`` (the default) or ``mean`` of each option's token log-probabilities
    (:data:`scorer.core.checks.SEQUENCE_NORMS`); resolved at construction (None for the other slots)."""
    layout: str = STATE_MAJOR
    """The prompt layout (:mod:`scorer.prompting.layouts`): ``state-major``, ``question-major`` or ``auto``."""
    demos: Demos | None = None
    """Demonstrations shown before each decision (:mod:`scorer.prompting.demos`)."""
    prefix_cache: RadixCache | None = None
    """The radix prefix cache of the fast modes (its budget, its stats for the run's summary; kept for the
    caller); None: the run makes its own. Not part of the run's identity: it changes how much is reused, not
    what is scored."""
    preset: Preset | None = None
    """The preset whose values the run took (:mod:`scorer.scoring.presets`): named in every record and in the run's
    hash."""

    def __post_init__(self) -> None:
        """The options checked by the rules the command line and the API use (:mod:`scorer.core.checks`)."""

        check_on_uncovered(self.on_uncovered)
        object.__setattr__(self, "echo", check_echo(self.echo))
        check_run_options(self.mode, self.max_batch_tokens)
        check_slots(self.slots)
        object.__setattr__(self, "sequence_norm", check_sequence_norm(self.sequence_norm, self.slots))
        if self.sequence_norm is not None:
            check_sequence_options(self.permute, self.exact, self.route, self.slots)
        check_layout(self.layout)
        positive_int(self.permute, "permute")
        if self.temperature is not None:
            positive_float(self.temperature, "temperature")


def checked_config_parts(info: dict[str, Any], decisions: Sequence[Decision], run_parts: Mapping[str, Any], mode: str,
                         max_batch_tokens: int, *, permute: int = 1, temperature: float | None = None,
                         calibration: Calibration | None = None,
                         exact: RecordPolicy | None = None, route: RecordPolicy | None = None,
                         on_uncovered: str = "error", echo: str | None = None, layout: str = STATE_MAJOR,
                         demos: Demos | None = None, slots: str = "letters",
                         sequence_norm: str | None = None, preset: str | None = None,
                         label_free: str = "none") -> dict[str, Any]:
    """What identifies a run (:func:`config_parts` plus the options that change its records, each only when
    set, so a plain run's hash is what it always was), checked before anything is scored: a calibration
    must cover every row's signature, and ``exact`` does not combine with ``permute``. The CLI, the Python
    API and the Ray engine all name their runs through this one function. ``on_uncovered="raw"`` (only the
    calibration's model is checked then), ``echo``, ``layout`` (a resolved one) and ``demos`` enter the hash
    only when set, and so does ``preset`` (the sha256 of the preset file that ran: :mod:`scorer.scoring.presets`);
    ``--slots sequence`` names its normalisation (``sequence_norm``, default sum) and refuses ``permute`` and
    ``exact`` (:class:`~scorer.core.checks.OptionError` naming the field)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r} must be resolved before the run is named (resolve_layout)")
    parts = config_parts(info, run_parts, mode, max_batch_tokens)
    if check_slots(slots) != "letters":  # the letters' run hash stays what it always was
        parts["slots"] = slots
    sequence_norm = check_sequence_norm(sequence_norm, slots)
    if sequence_norm is not None:
        parts["sequence_norm"] = sequence_norm
        check_sequence_options(permute, exact, route, slots)
    if layout != STATE_MAJOR:
        parts["layout"] = layout
    if demos is not None:
        if permute > 1:
            raise ValidationError("--demos and --permute cannot be combined yet (the demonstrations of a rotated "
                                  "decision would be picked for another option order)")
        parts["demos"] = demos.config()
        if layout == STATE_MAJOR:
            # state-major's order with demonstrations changed on 2026-12-02 (demonstrations first, under a version
            # of its own): a run of the earlier order must not resume into, or be mistaken for, one of this order
            parts["prompt_version"] = version(layout, slots, True)
    if permute > 1:
        parts["permute"] = permute
    if temperature is not None:
        parts["temperature"] = temperature
    if calibration is not None:
        if slots in AUTO_FORMS:
            raise OptionError("slots", "auto reads each question in one of two prompts, and a calibration file names "
                              "one prompt version; give slots letters (or the slots the file was fitted with) "
                              "with a calibration file")
        check_decisions(calibration, decisions, info, permute, on_uncovered,
                        prompt_version=signature_version(layout, demos.k if demos is not None else 0, slots),
                        readout=signature_readout(permute, slots, sequence_norm))
        parts["calibration"] = calibration.source.get("sha256")  # the file's content, wherever it lies
        if on_uncovered != "error":
            parts["uncovered"] = on_uncovered
    if echo is not None:
        parts["echo"] = echo
    if preset is not None:
        parts["preset"] = preset
    if label_free != "none":
        parts["label_free"] = label_free
    if exact is not None:
        if permute > 1:
            raise ValidationError("--exact and --permute cannot be combined (escalation re-scores one ordering)")
        parts["exact"] = exact.config()
    if route is not None:
        if slots != "letters":
            raise ValidationError(f"live routing (--fast/--accurate) reads the letters; it does not take --slots "
                                  f"{slots}")
        if permute > 1 or calibration is not None or temperature is not None:
            raise ValidationError("live routing (--fast/--accurate) takes its calibrations in the SPECs "
                                  "(calibration=FILE) and does not combine with --permute, --temperature or "
                                  "--calibration")
        parts["route"] = route.config()
    return parts


def resolve_layout(backend: Backend, decisions: Sequence[Decision], layout: str,
                   demos: Demos | None = None, slots: str = "letters") -> tuple[str, LayoutChoice | None]:
    """``layout`` itself, or for ``auto`` the layout whose prompts share more prefix tokens over
    ``decisions`` (both rendered for ``slots`` and counted on ``backend``'s tokenizer:
    :func:`scorer.prompting.layouts.choose`)."""
    if check_layout(layout) != AUTO:
        return layout, None
    tok = backend.tokenizer
    prompts: dict[str, list[Prompt]] = {}
    for name in LAYOUTS:
        try:
            prompts[name] = [prompt_for(tok, d, name, demos, slots) for d in decisions]
        except ValidationError as exc:
            raise ValidationError(f"--layout auto: rendering {name}: {exc}") from None
    choice = choose(prompts)
    return choice.layout, choice
