"""The TypeSafe System One wire, as a client sends it (``typesafe-sdk==0.7.5``'s shapes): a request per state,
``POST {base}/v1/systemone`` with ``{"model", "state", "questions": {name: question}}``, and the answers read back
into one probability per declared option. No I/O here: :mod:`scorer.scoring.systemone_run` is the run over it.

How a row becomes a question (``question_types``):

* ``native`` (default): a ``choice`` row (or a row without a type) is a ``choice`` question, ``criteria`` = {option
  id: description} in option order; a ``yesno`` row is a ``noul`` question (``instructions`` = the question,
  ``criteria`` = {"true": yes's description, "false": no's}), whose ``noul`` is P(yes) and 1 - noul P(no); a
  ``score`` row is a ``score`` question whose ``criteria`` are the options' descriptions in order (the level index
  is the option's position). Each keeps the served numbers exact: one served number per option (noul: its
  complement is the other).
* ``choice``: every row is a ``choice`` question (the closest to how SemIf itself reads a row: one distribution over
  the declared options, under their ids).

A question's name in the request is its row's id (unique within the input, so within a request). Answers are held
to what the SDK's consumers check (pydantic-ai's ``_answer_fits``): a choice's probability keys are exactly the option
ids, a score's exactly ``"0"``…``"n-1"``, every number finite in [0, 1], and their sum within ``1e-6 + 0.005 n`` of 1
(servers round); a noul in [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from scorer.core.errors import ValidationError
from scorer.formats.rows import Decision

BACKEND = "systemone"
"""Its name on the command line (``semif score --backend systemone``): a decision API, not a token-level backend, so
it is no entry of :data:`scorer.backends.registry.REGISTRY` (whose backends the contract tests hold to logits)."""
API = "typesafe-systemone"
"""The wire dialect's name, in records (``remote.api``) and run configurations."""
PATH = "/v1/systemone"
"""Where decisions are asked (appended to the server's root, as the SDK does)."""
MODELS_PATH = "/v1/models"
"""The server's model list (``{"models": [{"name", "description", "release_date"}]}``)."""
QUESTION_TYPES = ("native", "choice")
"""How rows become questions (module docstring)."""
PROMPT_VERSIONS = {"choice": f"{API}-choice-v1", "noul": f"{API}-noul-v1", "score": f"{API}-score-v1"}
"""A remote record's ``prompt_version``: the request shape SemIf sent (the prompt itself is the server's)."""
REQUEST_ID_HEADER = "x-typesafe-request-id"


class WireError(Exception):
    """A server's answer that does not hold what was asked (the message says where and what)."""


def normalize_base_url(url: str) -> str:
    """The server's root ``http(s)://host[:port][/path]`` of ``url`` (a trailing ``/`` or ``/v1`` dropped: the SDK
    appends ``/v1/systemone`` itself); :class:`ValidationError` unless http(s) with a host and a valid port."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(f"--base-url {url!r}: expected http://HOST:PORT or https://HOST[:PORT] (the System One "
                              "server's root; /v1/systemone is appended)")
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError:
        raise ValidationError(f"--base-url {url!r}: bad port (expected 1 to 65535)") from None
    if parts.query or parts.fragment:
        raise ValidationError(f"--base-url {url!r}: no query or fragment (the server's root URL)")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return f"{parts.scheme}://{parts.netloc}{path}"


def question_type(d: Decision, question_types: str = "native") -> str:
    """The System One question type row ``d`` is sent as (module docstring)."""
    if question_types not in QUESTION_TYPES:
        raise ValueError(f"question_types {question_types!r} (expected one of {', '.join(QUESTION_TYPES)})")
    if question_types == "native" and d.type == "yesno":
        return "noul"
    if question_types == "native" and d.type == "score":
        return "score"
    return "choice"


def question_of(d: Decision, qtype: str) -> dict[str, Any]:
    """Row ``d`` as a System One question of type ``qtype``."""
    if qtype == "noul":
        desc = {o.id: o.description for o in d.options}
        return {"type": "noul", "instructions": d.question, "criteria": {"true": desc["yes"], "false": desc["no"]}}
    if qtype == "score":
        return {"type": "score", "instructions": d.question, "criteria": [o.description for o in d.options]}
    return {"type": "choice", "instructions": d.question, "criteria": {o.id: o.description for o in d.options}}


def request_body(model: str, state: Any, questions: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The ``POST /v1/systemone`` body (key order as the SDK sends it: state, model, questions)."""
    return {"state": state, "model": model, "questions": dict(questions)}


def _number(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def served_probabilities(answers: Any, name: str, qtype: str, ids: Sequence[str]) -> tuple[list[float], dict[str, Any]]:
    """One served probability per option id (in ``ids``' order) of question ``name``'s answer, and the answer as
    served; :class:`WireError` when it is missing, of another type, or does not hold one number per option."""
    if not isinstance(answers, dict):
        raise WireError(f"answers is {type(answers).__name__}, not an object keyed by question name")
    ans = answers.get(name)
    if not isinstance(ans, dict):
        raise WireError(f"no answer to question {name!r}" if ans is None else
                        f"answers.{name} is not an object")
    if ans.get("type") != qtype:
        raise WireError(f"answers.{name}.type is {ans.get('type')!r} for a {qtype} question")
    n = len(ids)
    if qtype == "noul":
        v: Any = ans.get("noul")
        if not _number(v) or not 0 <= v <= 1:
            raise WireError(f"answers.{name}.noul is {v!r} (expected a number from 0 to 1)")
        p_yes = float(v)
        return [p_yes if i == "yes" else 1.0 - p_yes for i in ids], ans
    probs = ans.get("probabilities")
    keys = list(ids) if qtype == "choice" else [str(i) for i in range(n)]
    if not isinstance(probs, dict) or sorted(probs) != sorted(keys):
        got = sorted(probs) if isinstance(probs, dict) else probs
        raise WireError(f"answers.{name}.probabilities has keys {got!r} (expected exactly {keys!r})")
    out = []
    for k in keys:
        v = probs[k]
        if not _number(v) or not 0 <= v <= 1:
            raise WireError(f"answers.{name}.probabilities.{k} is {v!r} (expected a number from 0 to 1)")
        out.append(float(v))
    total = sum(out)
    if abs(total - 1.0) > 1e-6 + 0.005 * n:
        raise WireError(f"answers.{name}.probabilities sum to {total:.6g} (expected 1 within {1e-6 + 0.005 * n:.3g})")
    return out, ans


def error_message(body: Any, text: str) -> str:
    """The message of an error answer, found as the SDK finds it (first match): a non-JSON text; ``error`` as a
    string; ``error.message``; ``message``; ``detail`` as a string; ``detail.message``; a ``detail`` list (FastAPI's
    422) as ``loc.without.body: msg`` joined by ``; ``; else the body's JSON, cut to 200 characters."""
    if body is None:
        return " ".join(text.split())[:400] or "(no body)"
    if isinstance(body, str):
        return " ".join(body.split())[:400] or "(no body)"
    if isinstance(body, dict):
        err, det = body.get("error"), body.get("detail")
        for cand in (err, err.get("message") if isinstance(err, dict) else None, body.get("message"), det,
                     det.get("message") if isinstance(det, dict) else None):
            if isinstance(cand, str) and cand:
                return cand
        if isinstance(det, list):
            parts = []
            for e in det:
                if isinstance(e, dict) and isinstance(e.get("msg"), str):
                    loc = [str(x) for x in e.get("loc") or [] if x != "body"]
                    parts.append(f"{'.'.join(loc)}: {e['msg']}" if loc else e["msg"])
            if parts:
                return "; ".join(parts)
    compact = " ".join(str(body).split())
    return compact if len(compact) <= 200 else compact[:200] + "…"


def listed_models(body: Any) -> list[dict[str, Any]]:
    """The ``models`` of a ``GET /v1/models`` answer (each an object with a ``name``); :class:`WireError` otherwise."""
    models = body.get("models") if isinstance(body, dict) else None
    if not isinstance(models, list) or not all(isinstance(m, dict) and isinstance(m.get("name"), str)
                                               for m in models):
        raise WireError(f"GET {MODELS_PATH} answered {' '.join(str(body).split())[:200]!r} (expected "
                        '{"models": [{"name": …}, …]})')
    return models
