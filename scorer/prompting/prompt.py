"""Prompt versions, rendering with the model's own chat template, token encoding and hashes.

Layout (``semif-direct-v1``): what all criteria about one state share comes first — the system
instructions, then the state — and only then the criterion and its lettered options, so the state's
tokens form a reusable prefix (serial/shared modes). The model never sees option ids, only letters.
The other layouts and the demonstrations are arranged by :mod:`scorer.prompting.layouts` and rendered here
(:func:`render_messages`).

Answer slots (:data:`scorer.core.checks.SLOTS`): ``letters`` (the default, above) or ``ids``: the options are listed
under
their own ids (``yes: …``), the model is asked for the id, and each id's token is its answer slot
(``semif-direct-ids-v1``: the same layout with those two differences). An id must then be exactly one
token, decode back to itself, differ from the other ids' tokens and stay that token when appended to
the prompt — the letters' rules; an id that breaks one is refused naming its field (``options[1].id``).
``sequence`` renders the ``ids`` prompt unchanged (same text, same version, same hashes) and scores each option id
as a continuation of it instead of one token: the id's text exactly as written, appended right after the prompt's
last character (no leading space: a chat template ends the assistant header with a newline; the semif-plain
template ends with ``Answer:``, as for ``ids``) and tokenized as plain text; its tokens are those the prompt's
encoding gains (:func:`sequence_slots`: the prompt's tokens unchanged, decoding back to the id, no id's tokens the
start of another's, so the options are disjoint answers).
``codes`` (``semif-direct-codes-v1``) numbers the options instead of lettering them — ``01. …`` to ``17. …``, every
number zero-padded to the width of the largest, so no number's text begins another's — and scores each number as a
continuation, as ``sequence`` scores an id (its tokens' log-probabilities summed). It is how a question with more
options than letters (more than 16, up to :data:`scorer.formats.rows.MAX_OPTIONS`) is read when the run reads letters
(:func:`slots_for`), and can be asked for any question with ``--slots codes``.
``json`` (``semif-json-v2``) asks for the answer as a JSON object, as decision APIs' clients and the PyPI peer
typed-gguf do: the state in a user turn of its own, then the question with its options listed under their ids — as
bullets (``- billing: …``) under the cue ``Answer with JSON: {"answer": "<exactly one option id>"}``, or, for a yes/no
question, as ``yes. …`` lines under ``Answer with JSON: {"answer": "<one of yes, no>"}`` (``semif-json-v1`` listed
every question that way) — in a second one; the assistant turn is prefilled with
``{"answer":`` and each option is scored as the continuation `` "billing"`` (its id in quotes, the closing quote
included, so ids that share first tokens, ``d1`` and ``d10``, are still disjoint answers), per token by default
(:data:`scorer.core.checks.JSON_SEQUENCE_NORM`); the closing quote's token is read as every token that begins with it
(``"``, ``"}``, ``",`` …: :func:`closing_classes`), the probability that the model closes the id there. The
single-request JSON studies (``docs/results.md``) chose the shapes.

Encoding rule: the chat template's own control tokens are parsed; the message contents (state, question,
option descriptions, instructions) are tokenized as plain text, so control-token strings inside user
content (``<|im_end|>``, ``<start_of_turn>``, BOS/EOS…) stay characters and cannot forge a turn. The
prompt hash is the hash of the rendered string; ``tokens_sha256`` hashes the ids this rule produced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from scorer.core.checks import AUTO_CHOICE_JSON, AUTO_FORMS, SEQUENCE_SLOTS, SLOTS
from scorer.core.errors import InputError, ValidationError
from scorer.core.hashing import sha256_chunks, sha256_text
from scorer.decision.questions import answer_kind
from scorer.formats.rows import Decision, Option, codes

PROMPT_VERSION = "semif-direct-v1"
IDS_PROMPT_VERSION = "semif-direct-ids-v1"
"""The prompt version of ``--slots ids`` (module docstring)."""
CODES_PROMPT_VERSION = "semif-direct-codes-v1"
"""The prompt version of ``--slots codes`` (module docstring)."""
JSON_PROMPT_VERSION = "semif-json-v2"
"""The prompt version of ``--slots json`` (module docstring)."""
JSON_PREFILL = '{"answer":'
"""What ``--slots json`` prefills the assistant turn with; each option is read as `` "id"`` after it."""
LETTERS = "ABCDEFGHIJKLMNOP"

SYSTEM = (
    "You are a precise decision function. Read the state, then answer the question by choosing exactly "
    "one of the lettered options. Reply with the option's letter only."
)
IDS_SYSTEM = (
    "You are a precise decision function. Read the state, then answer the question by choosing exactly "
    "one of the options. Reply with the option's id only."
)
CODES_SYSTEM = (
    "You are a precise decision function. Read the state, then answer the question by choosing exactly "
    "one of the numbered options. Reply with the option's number only."
)
JSON_SYSTEM = (
    "You are a precise decision function. Read the state and answer the question with exactly one of the listed "
    "options. Reply with a JSON object and nothing else."
)
_STATE_HEAD = "State:\n"
_STATE_TAIL = "\n\n"

# Used when a model ships no chat template (e.g. a base model): recorded as template "semif-plain".
PLAIN_TEMPLATE = "semif-plain"


Span = tuple[int, int]
"""A ``[start, end)`` character range of a rendered prompt."""
_T = TypeVar("_T")


class Tokenizer(Protocol):
    """What prompt rendering and slot validation need from a tokenizer (HF adapter, llama.cpp, fakes)."""

    def encode(self, text: str, plain: Sequence[Span] = ()) -> list[int]:
        """Token ids of ``text`` as the model will see them. Special (control) tokens are parsed in the
        text, except inside the ``plain`` spans (user content), which are always tokenized as text: a
        state that contains ``<|im_end|>`` gets the tokens of those characters, never the control token.
        A BOS token is prepended only when the model requires one and the text does not start with it."""

    def decode(self, ids: list[int]) -> str:
        """Text of the ids, special tokens included."""

    def ids_beginning(self, text: str) -> tuple[int, ...]:
        """Ids of every vocabulary token (control tokens excepted) whose text begins with ``text``, ascending: what a
        JSON answer's closing quote is read as (:func:`closing_classes`)."""

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The model's own chat template rendered to text, thinking disabled where supported."""

    @property
    def template_name(self) -> str:
        """``"chat"`` for the model's own template, :data:`PLAIN_TEMPLATE` for the fallback."""


def sha256_tokens(ids: list[int]) -> str:
    """Hash of token ids: little-endian int32 bytes, so it is easy to recompute anywhere."""
    return sha256_chunks(int(i).to_bytes(4, "little", signed=True) for i in ids)


def state_text(state: str | dict[str, Any] | list[Any]) -> str:
    """Text form of a state. JSON keeps its key order: a reordered object is a different prompt."""
    if isinstance(state, str):
        return state.strip()
    return json.dumps(state, ensure_ascii=False)


def state_block(decision: Decision) -> str:
    """``State:`` and the state's text (what :func:`user_content` puts before the question)."""
    return f"{_STATE_HEAD}{state_text(decision.state)}"


def slots_for(slots: str, n: int, ids: Sequence[str] = (), qtype: str | None = None) -> str:
    """The answer slots a decision with ``n`` options (ids ``ids``, type ``qtype``) is read through when the run reads
    ``slots``: ``auto`` reads a yes/no question (exactly the ids ``yes`` and ``no``, in either order, whatever its
    ``type``) as ``json`` — the answer asked for as a JSON object, ``"yes"`` and ``"no"`` scored after the prefilled
    ``{"answer":`` — and every other question by letters (the single-request study and the JSON study beside
    typed-gguf: read by letter the model leans towards ``A. Yes``; the JSON answer is right at least as often as the
    bare words on every labelled set, ``docs/results.md``); :data:`~scorer.core.checks.AUTO_CHOICE_JSON` (what
    ``auto`` comes to for weights measured so) reads a choice question of up to 16 options as ``json`` too, its
    options as bullets (a score question's levels keep their letters: there the bullets were not right more often).
    A question with more options than there are letters is numbered (``codes``) instead of lettered; every other
    case as asked."""
    if slots in AUTO_FORMS:
        kind = answer_kind(qtype, ids)
        as_json = kind == "yesno" or (slots == AUTO_CHOICE_JSON and kind == "choice" and n <= len(LETTERS))
        slots = "json" if as_json else "letters"
    return "codes" if slots == "letters" and n > len(LETTERS) else slots


def positions(n: int) -> Sequence[str]:
    """What a record's ``letters`` says of ``n`` options read by id (``ids``, ``sequence``, ``json``), which the model
    never sees lettered: the letters of their positions, or past 16 options their numbers (as ``codes`` numbers them),
    so the record holds one per option."""
    return LETTERS[:n] if n <= len(LETTERS) else codes(n)


def lists_ids(slots: str) -> bool:
    """Whether a decision read through ``slots`` (as :func:`slots_for` resolved them) lists its options under their
    own ids (``ids``, ``sequence``, ``json``), so the model reads each id, or under letters or numbers, so it never
    does."""
    return slots not in ("letters", "codes")


def labels(decision: Decision, slots: str) -> tuple[str, ...]:
    """What each option is listed under: its letter, its number (``codes``) or its own id (:func:`lists_ids`)."""
    n = len(decision.options)
    if slots == "letters":
        return tuple(LETTERS[:n])
    return codes(n) if slots == "codes" else tuple(decision.option_ids)


def json_bullets(decision: Decision) -> bool:
    """Whether ``--slots json`` lists ``decision``'s options as bullets (``- billing: …``, every question but a
    yes/no one) rather than as ``yes. …`` lines (a yes/no question). The bulleted listing, whose cue names no option,
    was right more often on choice questions and the dotted one on yes/no questions in the single-request JSON
    studies (``docs/results.md``), so each kind keeps the one it was measured best with."""
    return answer_kind(decision.type, decision.option_ids) != "yesno"


def question_block(decision: Decision, slots: str = "letters") -> str:
    """The question and its options, one per line: under their letters (the model then never sees option
    ids), their numbers (``slots="codes"``) or, with ``slots="ids"`` or ``"sequence"``, under their own ids; with
    ``slots="json"`` under their ids too, as bullets (``- billing: …``) unless it is a yes/no question
    (:func:`json_bullets`)."""
    lines = [f"Question: {decision.question.strip()}", "Options:"]
    pairs = zip(labels(decision, slots), decision.options, strict=True)
    if slots == "json" and json_bullets(decision):
        lines += [f"- {label}: {opt.description.strip()}" for label, opt in pairs]
    else:
        sep = ":" if slots in ("ids", "sequence") else "."
        lines += [f"{label}{sep} {opt.description.strip()}" for label, opt in pairs]
    return "\n".join(lines)


def json_answer(option_id: str) -> str:
    """What ``--slots json`` scores for an option after the prefilled ``{"answer":``: a space and the id quoted."""
    return f' "{option_id}"'


def json_cue(decision: Decision) -> str:
    """``--slots json``'s last line: the answer's exact shape — naming the option ids for a yes/no question, asking
    for "exactly one option id" for every other (bulleted, :func:`json_bullets`: a cue that lists the ids in order
    gives the first ones a push the bullets above it do not)."""
    if json_bullets(decision):
        return 'Answer with JSON: {"answer": "<exactly one option id>"}'
    ids = ", ".join(decision.option_ids)
    return f'Answer with JSON: {{"answer": "<one of {ids}>"}}'


def json_turns(decision: Decision, question_first: bool = False) -> tuple[str, str]:
    """``--slots json``'s two user turns: the layout's first part in a turn of its own (the state; the question and
    its options with ``question_first``, as question-major places them), then the other part and the JSON cue."""
    question, state = question_block(decision, "json"), state_block(decision)
    first, second = (question, state) if question_first else (state, question)
    return first, f"{second}\n\n{json_cue(decision)}"


def json_messages(decision: Decision, question_first: bool = False,
                  before: Sequence[dict[str, str]] = ()) -> tuple[list[dict[str, str]], Head]:
    """``--slots json``'s messages (the instructions, the turns ``before`` it — demonstrations — and
    :func:`json_turns`), and where the head shared with other rows ends: at the end of the first turn."""
    first, rest = json_turns(decision, question_first)
    return [{"role": "system", "content": JSON_SYSTEM}, *before, {"role": "user", "content": first},
            {"role": "user", "content": rest}], Head(-2, len(first))


def user_content(decision: Decision, slots: str = "letters") -> tuple[str, int]:
    """The user message of the state-major layout, and the length of its shared head (instructions + state)."""
    head = f"{state_block(decision)}{_STATE_TAIL}"
    return head + question_block(decision, slots), len(head)


class SpecialSplitter:
    """Cuts a rendered prompt at the special-token strings that the *template* put there.

    Outside the plain spans, special strings are matched leftmost-longest (as Hugging Face's added-token
    splitter does); inside a plain span nothing is matched, and a match may not reach into one. Text
    between the cuts is then encoded with special-token parsing off, so for a prompt whose user content
    holds no special string the ids are the ones a plain ``encode(text)`` gives.
    """

    def __init__(self, specials: Iterable[str]):
        self._trie: dict[str, Any] = {}
        for s in specials:
            if not s:
                continue
            node = self._trie
            for ch in s:
                node = node.setdefault(ch, {})
            node[""] = s  # end marker: the empty key holds the whole string

    def _longest(self, text: str, i: int, limit: int) -> int:
        node, best, j = self._trie, 0, i
        while j < limit and text[j] in node:
            node = node[text[j]]
            j += 1
            if "" in node:
                best = j - i
        return best

    def split(self, text: str, plain: Sequence[Span]) -> list[tuple[str, bool]]:
        """``(piece, is_special)`` pieces whose concatenation is ``text``."""
        spans = sorted(plain)
        out: list[tuple[str, bool]] = []
        start = i = k = 0
        while i < len(text):
            while k < len(spans) and spans[k][1] <= i:
                k += 1
            if k < len(spans) and spans[k][0] <= i:  # inside user content: never a control token
                i = spans[k][1]
                continue
            limit = spans[k][0] if k < len(spans) else len(text)
            n = self._longest(text, i, limit) if text[i] in self._trie else 0
            if n:
                if start < i:
                    out.append((text[start:i], False))
                out.append((text[i:i + n], True))
                i = start = i + n
            else:
                i += 1
        if start < len(text):
            out.append((text[start:], False))
        return out


def message_spans(text: str, messages: list[dict[str, str]]) -> tuple[Span, ...]:
    """Where each message's content sits in the rendered ``text`` (searched in order).

    Raises :class:`ValidationError` when a user message is not there verbatim: its characters could not
    then be kept as text. A system message the template rewrites is skipped (it is ours, not user input).
    """
    spans: list[Span] = []
    pos = 0
    for m in messages:
        content = m["content"]
        at = text.find(content, pos) if content else -1
        if at < 0:
            if m["role"] == "system":
                continue
            raise ValidationError(f"the chat template does not include the {m['role']} message verbatim; "
                                  "cannot keep its text apart from the template's control tokens")
        spans.append((at, at + len(content)))
        pos = at + len(content)
    return tuple(spans)


def clip_spans(spans: Sequence[Span], end: int) -> tuple[Span, ...]:
    """The parts of ``spans`` before ``end`` (for a leading slice of the prompt)."""
    return tuple((a, min(b, end)) for a, b in spans if a < end)


def plain_render(messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """Fallback for models without a chat template; a versioned, documented format."""
    parts = []
    for m in messages:
        role = {"system": "Instructions", "user": "Input", "assistant": "Answer"}[m["role"]]
        parts.append(f"{role}:\n{m['content']}\n\n")
    if add_generation_prompt:
        parts.append("Answer:")
    return "".join(parts)


@dataclass(frozen=True)
class Prompt:
    """One rendered, encoded prompt."""

    version: str
    """Prompt version, e.g. ``semif-direct-v1``."""
    text: str
    """The exact string given to the tokenizer."""
    ids: list[int]
    """Its token ids."""
    prefix_text: str
    """The leading part shared by every criterion about the same state (system + state)."""
    letters: Sequence[str]
    """The letters of the options' positions, one per option (the answer slots with ``slots="letters"``); with
    ``slots="codes"`` their numbers."""
    slot_ids: list[int]
    """Token id of each option's answer slot (``slots="sequence"``: the first token of each continuation, which two
    options may share)."""
    template: str
    """Chat template used: ``chat`` (the model's own) or ``semif-plain``."""
    plain_spans: tuple[Span, ...] = field(default=())
    """Character spans of ``text`` holding message contents (state, question, options, instructions):
    tokenized as text, special-token strings in them never become control tokens."""
    slots: str = "letters"
    """What the answer slots are (:data:`scorer.core.checks.SLOTS`)."""
    slot_texts: tuple[str, ...] = ()
    """The text of each option's answer slot: its letter, or its id (``slots="ids"``, ``"sequence"``)."""
    layout: str = "state-major"
    """The layout that placed the parts (:mod:`scorer.prompting.layouts`): ``state-major`` or ``question-major``."""
    demo_ids: tuple[str, ...] = ()
    """Ids of the demonstrations shown before the decision, in the order shown (:mod:`scorer.prompting.demos`)."""
    demo_level: str | None = None
    """Where the demonstrations came from: ``signature``, ``family`` or ``generic`` (None without them)."""
    demos_k: int = 0
    """Demonstrations the run asked for (``--demos-k``; 0 without ``--demos``): part of the signature."""
    continuations: tuple[tuple[int, ...], ...] = ()
    """``slots="sequence"``, ``"codes"`` or ``"json"``: each option's token ids as a continuation of :attr:`ids`
    (:func:`sequence_slots`); empty for the other slots."""
    closers: tuple[tuple[int, ...], ...] = ()
    """``slots="json"``: per option, the tokens its continuation's last token stands for (:func:`closing_classes`:
    every token beginning with the closing quote's text, the quote alone among them); empty for the other slots."""

    @property
    def answer_texts(self) -> tuple[str, ...]:
        """The text each option's answer is, appended to :attr:`text`: its slot text (a letter, id or number), or
        under ``json`` its quoted id (:func:`json_answer`)."""
        return tuple(json_answer(t) for t in self.slot_texts) if self.slots == "json" else tuple(self.slot_texts)

    @property
    def sha256(self) -> str:
        return sha256_text(self.text)

    @property
    def tokens_sha256(self) -> str:
        return sha256_tokens(self.ids)

    @property
    def signature_version(self) -> str:
        """The prompt version a decision signature names: the layout's version, ``+demos-K`` when the run
        showed K demonstrations (a calibration fitted without them never applies to a run with them)."""
        return f"{self.version}+demos-{self.demos_k}" if self.demos_k else self.version


def system_for(slots: str) -> str:
    """The state-major system instructions of a decision read out through ``slots``."""
    return {"letters": SYSTEM, "codes": CODES_SYSTEM, "json": JSON_SYSTEM}.get(slots, IDS_SYSTEM)


def messages_for(decision: Decision, slots: str = "letters") -> tuple[list[dict[str, str]], Head]:
    """The state-major messages of ``decision`` read out through ``slots`` (no demonstrations), and where the head
    every criterion about its state shares ends."""
    if slots == "json":
        return json_messages(decision)
    system = {"role": "system", "content": system_for(slots)}
    content, head_len = user_content(decision, slots)
    return [system, {"role": "user", "content": content}], Head(-1, head_len)


def prompt_version(slots: str = "letters") -> str:
    """The prompt version of a decision read out through ``slots``."""
    if slots not in SLOTS:
        raise ValidationError(f"unknown answer slots {slots!r} (expected one of {', '.join(SLOTS)})")
    # sequence scores the ids prompt
    return {"letters": PROMPT_VERSION, "codes": CODES_PROMPT_VERSION, "json": JSON_PROMPT_VERSION}.get(
        slots, IDS_PROMPT_VERSION)


# --- the versus prompts: kept here so that a trace's verifier can re-render them from its inputs ---------
YES_NO = (Option("yes", "Yes"), Option("no", "No"))
"""The options of every versus criterion (typed prompts: ``A. Yes`` / ``B. No``; generated: ``"yes"``/``"no"``)."""

ARRAY_PROMPT_VERSION = "semif-array-v1"
ARRAY_SYSTEM = (
    "You are a precise decision function. Read the state, then answer every question with yes or no. "
    'Reply with a JSON array of lowercase strings, "yes" or "no", one per question, in the order of the '
    "questions, and nothing else."
)


def array_user_content(state: str | dict[str, Any] | list[Any], questions: Sequence[str]) -> str:
    """``semif-array-v1``'s user message: the state, then the numbered questions, then the exact answer shape."""
    n = len(questions)
    numbered = "\n".join(f"{i}. {q.strip()}" for i, q in enumerate(questions, start=1))
    return (f"State:\n{state_text(state)}\n\nQuestions:\n{numbered}\n\n"
            f'Answer with a JSON array of exactly {n} strings, each "yes" or "no", in the order of the questions.')


def letter_slots(tok: Tokenizer, n: int) -> list[int]:
    """Validate the first ``n`` answer letters for this tokenizer and return their token ids.

    Each letter must be exactly one token, decode back to itself, and no two letters may share an id.
    """
    ids: list[int] = []
    for letter in LETTERS[:n]:
        enc = tok.encode(letter)
        enc = _strip_bos(tok, enc)
        if len(enc) != 1:
            raise ValidationError(f"answer slot {letter!r} is {len(enc)} tokens {enc} in this tokenizer "
                                  "(expected exactly one token): this model cannot be read out by letter")
        if enc[0] in ids:
            raise ValidationError(f"answer slots collide: {letter!r} has the same token id {enc[0]} as "
                                  f"{LETTERS[ids.index(enc[0])]!r} (expected distinct ids)")
        back = tok.decode(enc)
        if back != letter:
            raise ValidationError(f"answer slot {letter!r} (token {enc[0]}) decodes to {back!r} "
                                  f"(expected {letter!r})")
        ids.append(enc[0])
    return ids


def _strip_bos(tok: Tokenizer, ids: list[int]) -> list[int]:
    bos = getattr(tok, "bos_id_prepended", None)
    return ids[1:] if bos is not None and ids and ids[0] == bos else ids


def id_slots(tok: Tokenizer, decision: Decision) -> list[int]:
    """Validate the option ids of ``decision`` as its answer slots (``--slots ids``) and return their token ids.

    The letters' rules (:func:`letter_slots`), each refusal an :class:`InputError` naming the row and the
    option's field: an id must be exactly one token, decode back to itself, and not share a token with another.
    """
    ids: list[int] = []
    for i, opt in enumerate(decision.options):
        where = f"options[{i}].id"
        enc = _strip_bos(tok, tok.encode(opt.id))
        if len(enc) != 1:
            raise InputError(decision.source or decision.id, None, where,
                             f"{opt.id!r} is {len(enc)} tokens {enc} in this tokenizer",
                             "an id that is exactly one token, for --slots ids (or --slots letters)")
        if enc[0] in ids:
            other = decision.options[ids.index(enc[0])].id
            raise InputError(decision.source or decision.id, None, where,
                             f"{opt.id!r} is the same token {enc[0]} as option {other!r}",
                             "ids with distinct tokens, for --slots ids (or --slots letters)")
        back = tok.decode(enc)
        if back != opt.id:
            raise InputError(decision.source or decision.id, None, where,
                             f"{opt.id!r} (token {enc[0]}) decodes to {back!r}",
                             "an id that its token decodes back to, for --slots ids (or --slots letters)")
        ids.append(enc[0])
    return ids


def sequence_slots(tok: Tokenizer, decision: Decision, text: str, spans: Sequence[Span],
                   ids: list[int], texts: Sequence[str] | None = None,
                   quoted: bool = False) -> tuple[tuple[int, ...], ...]:
    """Each option's answer text as a continuation of the prompt ``text`` (encoded ``ids``), for ``slots="sequence"``
    (``texts`` None: the option ids), ``"json"`` (``quoted``: each id as `` "id"``) or ``"codes"`` (``texts``: the
    options' numbers): the tokens that ``text + answer`` (the answer as plain text, never a control token) adds to
    ``ids``.

    Refused, naming ``options[i].id`` (an :class:`InputError` for an id; a :class:`ValidationError` for a number,
    which is ours, not the caller's): an answer that changes the prompt's own tokens when appended (a merge across
    the boundary), one whose tokens do not decode back to it, and one whose tokens begin another option's (or repeat
    them): then the shorter answer's probability would include the longer's, the options would not be disjoint
    answers and their probabilities would not add up."""
    codes_ = texts is not None
    answers = list(texts) if texts is not None else [json_answer(i) if quoted else i for i in decision.option_ids]
    flag = "--slots codes" if codes_ else "--slots json" if quoted else "--slots sequence"

    def refuse(i: int, what: str, expected: str) -> InputError | ValidationError:
        if codes_:
            return ValidationError(f"option {i + 1}'s number {answers[i]!r}: {what} (expected {expected}): this model "
                                   "cannot read the options by number")
        return InputError(decision.source or decision.id, None, f"options[{i}].id", what,
                          f"{expected}, for {flag} (or --slots letters)")

    out: list[tuple[int, ...]] = []
    for i, ans in enumerate(answers):
        ext = tok.encode(text + ans, (*spans, (len(text), len(text) + len(ans))))
        cont = tuple(ext[len(ids):])
        if ext[: len(ids)] != ids or not cont:
            raise refuse(i, f"{ans!r} changes the prompt's last tokens when appended (prompt ends {ids[-3:]}, "
                            f"prompt+{ans!r} ends {ext[-4:]})", "an answer whose tokens follow the prompt unchanged")
        back = tok.decode(list(cont))
        if back != ans:
            raise refuse(i, f"{ans!r} (tokens {list(cont)}) decodes to {back!r}",
                         "an answer that its tokens decode back to")
        for j, other in enumerate(out):
            short, long_ = (other, cont) if len(other) <= len(cont) else (cont, other)
            if long_[: len(short)] == short:
                raise refuse(i, f"{ans!r} (tokens {list(cont)}) and option {answers[j]!r} (tokens {list(other)}): "
                                "one's tokens begin the other's",
                             "answers none of whose tokens begin another's, so the options are disjoint answers")
        out.append(cont)
    return tuple(out)


def closing_classes(tok: Tokenizer, decision: Decision,
                    conts: Sequence[tuple[int, ...]]) -> tuple[tuple[int, ...], ...]:
    """What each JSON answer's last token is read as: every token whose text begins with that token's (its closing
    quote, ``"``), so the option's score is the probability that the model closes the id there, however it goes on.

    A model writes ``"billing"}`` with the quote merged into what follows (qwen2.5 has 424 tokens beginning with
    ``"``: ``"}``, ``",`` …), so the quote alone, the token the answer's text encodes to, holds a few thousandths of the
    mass at that position: read alone it would add a nuisance term to every option and leave the declared answers
    a few thousandths of the vocabulary's mass. The class keeps the options disjoint answers (each is still its id
    closed by a quote, so ``d1`` never counts ``d10``); an option's class that holds the token another option
    continues with from the same tokens is refused, naming that option's id."""
    out: list[tuple[int, ...]] = []
    for i, cont in enumerate(conts):
        last = cont[-1]
        cls = tok.ids_beginning(tok.decode([last]))
        if last not in cls:
            raise ValidationError(f"option {i + 1}'s closing token {last} ({tok.decode([last])!r}) is not among the "
                                  "tokens beginning with its own text: this tokenizer cannot read JSON answers")
        members = set(cls)
        for j, other in enumerate(conts):
            at = len(cont) - 1
            if j != i and len(other) > at and other[:at] == cont[:at] and other[at] in members:
                raise InputError(decision.source or decision.id, None, f"options[{j}].id",
                                 f"{decision.option_ids[j]!r} continues option {decision.option_ids[i]!r}'s answer "
                                 f"with a token that closes it ({tok.decode([other[at]])!r})",
                                 "ids none of which is another id followed by a quote, for --slots json "
                                 "(or --slots letters)")
        out.append(cls)
    return tuple(out)


def closing_block(text: str, cls: Sequence[int]) -> dict[str, Any]:
    """A record's account of one option's closing class (``slots.closing[i]``): the text its tokens begin with, how
    many there are and the :func:`sha256_tokens` of their ids, ascending."""
    return {"begins": text, "tokens": len(cls), "tokens_sha256": sha256_tokens(list(cls))}


def render(tok: Tokenizer, decision: Decision, slots: str = "letters") -> Prompt:
    """Render, encode and validate the state-major prompt of one decision without demonstrations
    (``semif-direct-v1``, or ``semif-direct-ids-v1`` read out through the option ids;
    :func:`scorer.prompting.layouts.render` renders every layout).

    Raises :class:`ValidationError` when an answer letter is not stable at the prompt's boundary
    (appending the letter must add exactly that letter's token and leave the prompt's tokens as they are);
    with ``slots="ids"`` an option id that breaks a slot rule is an :class:`InputError` naming its field.
    """
    slots = slots_for(slots, len(decision.options), decision.option_ids, decision.type)
    msgs, head = messages_for(decision, slots)
    return render_messages(tok, msgs, head, decision, prompt_version(slots), slots=slots)


@dataclass(frozen=True)
class Head:
    """Where a prompt's shared head ends: ``length`` characters into the content of message ``message``
    (an index from the end of the message list, so a system message the template drops does not shift it)."""

    message: int
    length: int


def render_messages(tok: Tokenizer, msgs: list[dict[str, str]], head: Head, decision: Decision, version: str,
                    slots: str = "letters", **meta: Any) -> Prompt:
    """Render ``msgs`` with the model's chat template, encode and validate the answer slots of ``decision``
    (its letters, its option ids with ``slots="ids"``, or its option ids' continuations with ``slots="sequence"``).

    ``head`` marks the end of the part shared with other rows (the reusable prefix); ``meta`` fills the
    :class:`Prompt`'s layout and demonstration fields. Raises as :func:`render`.
    """
    if head.message >= 0:
        raise ValueError(f"head.message is an index from the end of the messages, got {head.message}")
    text = tok.render_chat(msgs, add_generation_prompt=True)
    if slots == "json":  # the answer's JSON begun for the model: what follows is an option's quoted id
        text += JSON_PREFILL
    spans = message_spans(text, msgs)
    at = spans[head.message][0]
    prefix_text = text[: at + head.length]
    ids = tok.encode(text, spans)
    n = len(decision.options)
    texts = labels(decision, slots)
    if slots in SEQUENCE_SLOTS:
        conts = sequence_slots(tok, decision, text, spans, ids, texts if slots == "codes" else None,
                               quoted=slots == "json")
        closers = closing_classes(tok, decision, conts) if slots == "json" else ()
        shown = texts if slots == "codes" else tuple(positions(n))
        return Prompt(version, text, ids, prefix_text, shown, [c[0] for c in conts], tok.template_name, spans,
                      slots, texts, continuations=conts, closers=closers, **meta)
    slot_ids = id_slots(tok, decision) if slots == "ids" else letter_slots(tok, n)
    for k, (label, slot) in enumerate(zip(texts, slot_ids, strict=True)):
        ext = tok.encode(text + label, spans)
        if ext[: len(ids)] != ids or ext[len(ids):] != [slot]:
            what = (f"answer slot {label!r} is not stable at the prompt boundary of row {decision.id!r}: "
                    f"prompt ends {ids[-3:]}, prompt+{label!r} ends {ext[-4:]}")
            if slots == "ids":
                raise InputError(decision.source or decision.id, None, f"options[{k}].id", what,
                                 f"an id whose token follows the prompt unchanged, [{slot}], for --slots ids "
                                 "(or --slots letters)")
            raise ValidationError(f"{what} (expected the prompt's tokens followed by [{slot}])")
    return Prompt(version, text, ids, prefix_text, positions(n), slot_ids, tok.template_name, spans, slots, texts,
                  **meta)


def common_prefix(seqs: Sequence[Sequence[_T]]) -> list[_T]:
    """Longest common prefix of sequences (token ids, or the characters of strings)."""
    if not seqs:
        return []
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for s in seqs[1:]:
        i = 0
        while i < n and s[i] == first[i]:
            i += 1
        n = i
    return list(first[:n])


def prefix_ids(tok: Tokenizer, prompt: Prompt) -> list[int]:
    """Token prefix of ``prompt`` that belongs to its shared head (system + state).

    BPE can merge characters across the boundary between the state and what follows, so the prefix is
    the longest common *token* prefix of the full prompt and the encoded head, never the head's own
    encoding. At least one token is always left for the suffix.
    """
    head = tok.encode(prompt.prefix_text, clip_spans(prompt.plain_spans, len(prompt.prefix_text)))
    pre = common_prefix([prompt.ids, head])
    return pre[: len(prompt.ids) - 1]
