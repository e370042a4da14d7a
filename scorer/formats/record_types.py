"""A decision record's fields, typed, for code that reads them: :class:`Record` is ``semif-record-v2``
(``schemas/record-v2.json``) as a ``TypedDict``, one docstring per field. Records travel as plain dicts (they are
JSON at every edge); this type says what such a dict holds, at the API boundary
(:attr:`scorer.api.DecisionRecord.record`). ``tests/formats/test_record_types.py`` holds it to the schema: the same
fields,
the same required ones."""

from __future__ import annotations

from typing import Any, TypedDict


class _RecordRequired(TypedDict):
    schema: str
    """``semif-record-v2``."""
    id: str
    """The row's id."""
    signature: str
    """sha256 of the decision signature (prompt version, question, ordered options, model identity, readout)."""
    option_ids: list[str]
    """The declared options' ids, in the order they were shown."""
    letters: list[str]
    """Each option's letter in the prompt (A, B, …)."""
    probabilities: list[float]
    """Softmax over the declared options' readout, in ``option_ids`` order."""
    option_logits: list[float]
    """Each option's answer-slot logit (or its sequence score)."""
    choice: str | None
    """The argmax option id; None on a tie."""
    margin: float
    """Top probability minus the runner-up's."""
    tie: bool
    """The top logits are equal in the backend's logits dtype."""
    tied_option_ids: list[str]
    """The ids sharing the top logit (empty unless ``tie``)."""
    allowed_token_mass: float | None
    """Share of the full-vocabulary softmax on the answer slots (None in a remote decision record)."""
    full_vocab_argmax: dict[str, Any] | None
    """The full vocabulary's top token at the answer position (None in a remote decision record)."""
    score_kind: str
    """What kind of number ``probabilities`` is, in words."""
    input_tokens: int | None
    """Tokens of the whole prompt (None in a remote decision record)."""
    prompt_version: str
    """The prompt's version (its layout and readout); a remote decision record: the request shape sent."""
    prompt_template: str | None
    """``chat`` (the model's own template) or the plain fallback (None in a remote decision record)."""
    prompt_sha256: str | None
    """sha256 of the prompt text (None in a remote decision record)."""
    tokens_sha256: str | None
    """sha256 of the prompt's token ids (little-endian int32; None in a remote decision record)."""
    mode: str
    """``direct``, ``serial`` or ``shared``; ``remote`` for a remote decision API's record."""
    kernel: str
    """Which backend kernel computed the readout."""
    prefix_tokens: int | None
    """Tokens of the prefilled prefix (None in direct mode)."""
    suffix_tokens: int | None
    """Tokens after the prefix (None in direct mode)."""
    cache_hit: bool | None
    """The prefix came from a held state (None in direct mode)."""
    prefix_sha256: str | None
    """sha256 of the prefix's token ids (None in direct mode)."""
    escalated: bool
    """Re-scored on the fresh path (``--exact``) or taken from the reference path (routing)."""
    timing: dict[str, float]
    """Seconds: ``encode_s``, ``forward_s``, ``total_s`` and, with prefix reuse, their split."""
    model: dict[str, Any]
    """The model's identity: key, backend, dtype, sha256s, versions."""
    extra: dict[str, Any]
    """Input fields carried through (label, family, group…), never shown to the model."""
    run: dict[str, Any]
    """The run: its configuration's sha256, start time, the row's index."""


class Record(_RecordRequired, total=False):
    """One decision record (``semif-record-v2``): the required fields above, and these when they apply."""

    slots: dict[str, Any]
    """Which readout ran (letters, ids, sequence) and its answer slots."""
    layout: str
    """The prompt layout: ``state-major`` or ``question-major``."""
    demos: dict[str, Any]
    """The demonstrations shown before this decision (k, ids, level)."""
    cache: dict[str, Any] | None
    """How the prefix state came out of the radix cache."""
    temperature: float | None
    """The temperature the logits were divided by."""
    permute: dict[str, Any]
    """The order-averaged readout's orderings."""
    batch: dict[str, Any]
    """Requests scored together with this one (``semif serve --batch-window-ms``)."""
    route: dict[str, Any]
    """Which path (fast or reference) produced this decision, and why."""
    type: str
    """The question type: ``choice``, ``yesno`` or ``score``."""
    echo: dict[str, Any]
    """What the record was asked (question, options, the state's digest or the state)."""
    preset: dict[str, Any]
    """The committed configuration that ran (name, path, sha256)."""
    calibrated: dict[str, Any]
    """The decision after a calibration; the fields above stay raw."""
    gguf: dict[str, Any]
    """llama.cpp: the GGUF file's name, bytes, sha256 and quantization type."""
    remote: dict[str, Any]
    """A remote decision API answered (``semif score --backend systemone``): the endpoint, the request's sha256,
    the served model, usage and answer; the token-level fields are then None."""


def required_fields() -> frozenset[str]:
    """The fields every record has."""
    return frozenset(_RecordRequired.__annotations__)


def optional_fields() -> frozenset[str]:
    """The fields a record has when they apply."""
    return frozenset(Record.__annotations__) - required_fields()
