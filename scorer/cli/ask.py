"""``semif ask``: named questions about one state from the shell, answers as JSON (:meth:`scorer.api.Scorer.ask`).

    semif ask --state @ticket.txt --choice "team=Which team?:billing|tech|sales" \\
              --yesno "refund=Is the customer asking for a refund?" \\
              --score "severity=How severe is it?:cosmetic|minor|major" --policy 0.2

A spec is ``NAME=QUESTION:OPTIONS`` (``--choice``, ``--score``: the question ends at its first ``:``, then
options separated by ``|``; an option is an id, or ``id=description``) or ``NAME=QUESTION`` (``--yesno``:
options ``yes``/``no`` in their default wording). The answers go to stdout as one JSON object;
``--records OUT.jsonl`` also keeps the records (create-only).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from scorer.cli.arguments import add_model_args, add_scorer_args, backend_config, scorer_options
from scorer.cli.score import add_policy_args, policy_arg
from scorer.core.errors import InputError
from scorer.core.jsonl import loads_input

SPEC_FORMS = {"--choice": "NAME=QUESTION:ID|ID|… (an option may be ID=DESCRIPTION)",
              "--score": "NAME=QUESTION:LOWEST|…|HIGHEST (a label may be ID=DESCRIPTION)",
              "--yesno": "NAME=QUESTION"}


def register(sub: Any) -> None:
    """Add ``semif ask``."""
    p = sub.add_parser("ask", help="ask named questions (choice, yesno, score) about one state; JSON answers")
    p.add_argument("--state", required=True, metavar="TEXT|@FILE", help="the state: text, or @FILE to read it")
    p.add_argument("--json-state", action="store_true", help="the state is JSON (an object or an array)")
    p.add_argument("--choice", action="append", default=[], metavar="SPEC", help=SPEC_FORMS["--choice"])
    p.add_argument("--yesno", action="append", default=[], metavar="SPEC", help=SPEC_FORMS["--yesno"])
    p.add_argument("--score", action="append", default=[], metavar="SPEC", help=SPEC_FORMS["--score"])
    p.add_argument("--id", help="record ids are ID/NAME (default: NAME)")
    p.add_argument("--records", metavar="OUT.jsonl", help="also write the records here (never overwritten)")
    add_policy_args(p)
    add_scorer_args(p)
    add_model_args(p)
    p.set_defaults(func=_cmd_ask)


def _state(args: argparse.Namespace) -> Any:
    text = args.state
    if text.startswith("@"):
        path = Path(text[1:])
        if not path.is_file():
            raise InputError(text[1:], None, None, "file not found" if not path.exists() else "not a regular file",
                             "--state @FILE naming a text file")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(str(path), None, None, f"not UTF-8 ({exc.reason} at byte {exc.start + 1})",
                             "UTF-8 text") from None
    if not args.json_state:
        return text
    return loads_input(text, "--state", None, "a JSON object or array (--json-state)")


def parse_spec(flag: str, text: str) -> tuple[str, dict[str, Any]]:
    """``(name, question)`` of one ``--choice``/``--yesno``/``--score`` spec (:data:`SPEC_FORMS`); the question
    in the JSON form :func:`scorer.decision.questions.question_fields` takes."""
    name, eq, rest = text.partition("=")
    if not eq or not name.strip():
        raise InputError(flag, None, None, f"{text!r} has no NAME= in front", SPEC_FORMS[flag])
    qtype = flag.removeprefix("--")
    if flag == "--yesno":
        return name, {"type": qtype, "question": rest}
    question, colon, opts = rest.partition(":")  # the question ends at its first ':' (descriptions may hold more)
    if not colon:
        raise InputError(flag, None, None, f"{text!r} has no ':' before its options", SPEC_FORMS[flag])
    options: dict[str, str] = {}
    for item in opts.split("|"):
        oid, eq, desc = item.partition("=")
        oid = oid.strip()
        if oid in options:
            raise InputError(flag, None, None, f"{text!r} names option {oid!r} twice", "unique option ids")
        options[oid] = desc.strip() if eq else oid
    return name, {"type": qtype, "question": question, "options": options}


def _cmd_ask(args: argparse.Namespace) -> int:
    from scorer import cli
    from scorer.api import Scorer, ask_decisions
    from scorer.calibration.core import load_calibration
    from scorer.core.io import check_writable, write_atomic
    from scorer.formats.records import dumps_record
    from scorer.scoring.presets import load_preset

    questions: dict[str, dict[str, Any]] = {}
    for flag in ("--choice", "--yesno", "--score"):
        for text in getattr(args, flag.removeprefix("--")):
            name, q = parse_spec(flag, text)
            if name in questions:
                raise InputError(flag, None, None, f"the name {name!r} is used twice", "one name per question")
            questions[name] = q
    if not questions:
        raise InputError("--choice/--yesno/--score", None, None, "no question given", "at least one question spec")
    state = _state(args)
    policy = policy_arg(args)
    options = scorer_options(args)
    # Checked before the model loads: the preset and its files, the calibration file and its model, the questions.
    preset = load_preset(options.preset, "--preset", model=args.model) if options.preset else None
    out = Path(args.records) if args.records else None
    if out is not None:
        check_writable(out)
    ask_decisions(state, questions, args.id)
    cfg = backend_config(args)
    cal_file = options.calibration or (preset.calibration_path if preset is not None else None)  # explicit one wins
    cal = load_calibration(cal_file) if isinstance(cal_file, str | Path) else cal_file
    if cal is not None:
        cli.check_calibration_model(cal, cfg)  # a file for another model: refused before the model loads
    checked = replace(options, calibration=cal, preset=preset)
    with Scorer(cfg.model, cli.load_backend(cfg), **checked.kwargs()) as scorer:
        answers = scorer.ask(state, questions, args.id)
    doc: dict[str, Any] = {"answers": answers.to_json()}
    if policy is not None:
        doc["policy"] = policy.describe()
        for name, a in answers.items():
            v = a.verdict(policy)
            doc["answers"][name].update(act=v.confident, reason=v.reason)
    if out is not None:
        write_atomic(out, b"".join(dumps_record(dict(r)) for r in answers.records))
        doc["records"] = str(out)
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0
