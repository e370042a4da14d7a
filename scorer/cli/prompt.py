"""``semif prompt``: the exact prompt, token ids and hashes of one input row."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from scorer.cli.arguments import add_layout_args, add_model_args, add_slots_arg, layout_options, load_model


def register(sub: Any) -> None:
    """Add ``semif prompt``."""
    p = sub.add_parser("prompt", help="print the exact prompt, token ids and hashes of one row")
    p.add_argument("--input", required=True, help="decisions, one JSON object per line")
    p.add_argument("--id", required=True, help="the id of the row to render")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (prompt, token ids, hashes, slots, model) instead of text")
    add_slots_arg(p, norm=False)  # the prompt does not depend on how its continuations' scores are normalised
    add_model_args(p)
    add_layout_args(p)
    p.set_defaults(func=_cmd_prompt)


def _cmd_prompt(args: argparse.Namespace) -> int:
    from scorer.calibration.label_free_defaults import auto_slots
    from scorer.core.checks import AUTO_SLOTS
    from scorer.core.errors import InputError
    from scorer.formats.rows import load_decisions
    from scorer.prompting.demos import prompt_for
    from scorer.prompting.prompt import closing_block, prefix_ids
    from scorer.scoring.options import resolve_layout

    rows = load_decisions(Path(args.input))
    decisions = {d.id: d for d in rows}
    if args.id not in decisions:
        raise InputError(args.input, None, "id", f"no row with id {args.id!r}", "an id present in the file")
    layout, demos = layout_options(args)
    backend = load_model(args)
    # --slots auto comes to what a scorer of these weights reads (choice questions as JSON answers for some)
    slots = auto_slots(backend.model_info()) if args.slots == AUTO_SLOTS else args.slots
    # auto: the choice `semif score --layout auto` makes for this very file
    layout, choice = resolve_layout(backend, rows, layout, demos, slots)
    if choice is not None:
        print(f"[semif] {choice.describe()}", file=sys.stderr)
    p = prompt_for(backend.tokenizer, decisions[args.id], layout, demos, slots)
    head = prefix_ids(backend.tokenizer, p)
    doc = {"id": args.id, "prompt_version": p.version, "layout": p.layout,
           "demos": {"k": p.demos_k, "ids": list(p.demo_ids), "level": p.demo_level} if p.demos_k else None,
           "shared_head_tokens": len(head), "prompt_template": p.template, "prompt": p.text,
           "token_ids": p.ids, "input_tokens": len(p.ids), "letters": p.letters, "slots": p.slots,
           "slot_texts": list(p.slot_texts), "slot_token_ids": p.slot_ids,
           **({"continuations": [list(c) for c in p.continuations]} if p.continuations else {}),
           **({"closing": [closing_block(backend.tokenizer.decode([c[-1]]), cls)
                           for c, cls in zip(p.continuations, p.closers, strict=True)]} if p.closers else {}),
           "prompt_sha256": p.sha256, "tokens_sha256": p.tokens_sha256, "plain_spans": p.plain_spans,
           "hash_rules": {"prompt_sha256": "sha256 of the prompt string, UTF-8",
                          "tokens_sha256": "sha256 of the token ids as little-endian int32 bytes",
                          "token_ids": "the template's control tokens parsed; plain_spans (state, question, "
                                       "options, instructions) tokenized as text, never as control tokens"},
           "model": backend.model_info()}
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        print(p.text)
        print(f"\n--- {len(p.ids)} tokens: {p.ids}", file=sys.stdout)
        shown = f"; demonstrations {', '.join(p.demo_ids)} ({p.demo_level})" if p.demos_k else ""
        print(f"layout {p.layout} ({p.version}); shared head {len(head)} tokens (the prefix rows like it reuse)"
              f"{shown}")
        slots = dict(zip(p.slot_texts, p.continuations if p.continuations else p.slot_ids, strict=True))
        print(f"prompt_sha256 {p.sha256}\ntokens_sha256 {p.tokens_sha256}\nslots {slots}")
        if p.closers:
            print(f"each closing quote read as any of the {len(p.closers[0])} tokens beginning with it")
    return 0
