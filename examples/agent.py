"""A support-ticket agent on SemIf: three named questions per ticket, one prefill each, and an abstention policy.

The first example of docs/python-api.md, as a file you can run. For every ticket the agent asks which team should
handle it and two yes/no policy questions (is a refund asked for? is there a threat to cancel or sue?), acts on the
answers its policy is confident about and hands the others to a human. ::

    .venv/bin/python examples/agent.py --model qwen2.5-0.5b \\
        --calibration data/results/agent-example-qwen2.5-0.5b/bias.json \\
        --policy data/results/agent-example-qwen2.5-0.5b/thresholds-calibrated.json

The tickets are the ``test`` split of ``data/examples/agent-tickets.json``, written for this example with their
labels (see its ``about``). The calibration and the policy (a ``semif calibrate thresholds`` file: per question,
the smallest margin that kept the acted-on answers at the target precision) are fitted on its ``train`` split by
``benchmarks/agent_example.py``, so the numbers this prints at the end are out of sample: per question, how many
answers it acted on, how many it left to a human, how many acted-on answers match the labels, and how many of all
the answers the acting (calibrated) and the raw readouts got right. ``--records OUT.jsonl`` keeps every answer's
record, with its question, options and the ticket's sha256 echoed in it, so each can be audited alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from scorer import Choice, Scorer, YesNo
from scorer.core.errors import SemifError
from scorer.decision.policy import Policy, load_policy
from scorer.decision.questions import Answers
from scorer.formats.records import dumps_record

TICKETS = Path(__file__).resolve().parent.parent / "data" / "examples" / "agent-tickets.json"
TEAMS = {"billing": "Billing: charges, invoices, payment methods, subscriptions",
         "technical": "Technical support: bugs, crashes, errors, outages",
         "account": "Account and access: login, passwords, two-factor, personal data",
         "shipping": "Shipping: deliveries, tracking, lost, damaged or wrong parcels"}
QUESTIONS = {"team": Choice("Which team should handle this ticket?", TEAMS),
             "refund": YesNo("Is the customer asking for money back?"),
             "escalate": YesNo("Does the customer threaten to cancel, leave or take legal action?")}
HUMAN = "human"
"""What an answer the policy abstains on becomes: the ticket goes to a person for that question."""
TALLY = ("{name}: acted on {acted}/{decisions}, abstained on {abstained}, right among acted {right_acted}/{acted}; "
         "right of all: acting {right_acting}/{decisions}, raw {right_raw}/{decisions}")
"""One line of the closing tally per question (and ``all``); benchmarks/agent_example.py reads it back."""


def agent(scorer: Scorer, tickets: list[dict[str, Any]], policy: Policy
          ) -> Iterator[tuple[dict[str, Any], Answers, dict[str, str]]]:
    """The agent: for each ticket its answers and what it acts on (an option id, or :data:`HUMAN`)."""
    for t in tickets:
        a = scorer.ask(t["text"], QUESTIONS, id=t["id"])  # one prefill of the ticket, the three questions packed
        act = {q: a[q].final_choice_or(HUMAN, policy) for q in QUESTIONS}  # HUMAN where the policy abstains
        yield t, a, act


def tally(done: list[tuple[dict[str, Any], Answers, dict[str, str]]]) -> dict[str, dict[str, int]]:
    """Per question (and over ``all``): answers, acted on, abstained on, right among acted, and right of all by the
    acting and by the raw readout, against the tickets' labels."""
    keys = ("decisions", "acted", "abstained", "right_acted", "right_acting", "right_raw")
    out = {q: dict.fromkeys(keys, 0) for q in (*QUESTIONS, "all")}
    for t, a, act in done:
        for q in QUESTIONS:
            gold = t["labels"][q]
            for c in (out[q], out["all"]):
                c["decisions"] += 1
                c["acted" if act[q] != HUMAN else "abstained"] += 1
                c["right_acted"] += act[q] == gold
                c["right_acting"] += a[q].final_choice == gold
                c["right_raw"] += a[q].raw_choice == gold
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-0.5b", help="a model key (semif models list) or path")
    ap.add_argument("--tickets", type=Path, default=TICKETS, help="the tickets file (default: %(default)s)")
    ap.add_argument("--split", default="test", help="which list of the tickets file to run (default test)")
    ap.add_argument("--calibration", help="a semif calibrate prior|bias file fitted on other tickets")
    ap.add_argument("--policy", required=True, help="a semif calibrate thresholds file fitted on other tickets")
    ap.add_argument("--records", type=Path, help="also write every answer's record here (never overwritten)")
    args = ap.parse_args(argv)
    try:
        if args.records is not None and args.records.exists():  # refused before the model loads, never replaced
            raise FileExistsError(f"{args.records} exists; records are never overwritten")
        tickets = orjson.loads(args.tickets.read_bytes())[args.split]
        policy = load_policy(args.policy)
        with Scorer(model=args.model, calibration=args.calibration, on_uncovered="raw", echo=True) as scorer:
            done = list(agent(scorer, tickets, policy))
    except (SemifError, OSError, KeyError, orjson.JSONDecodeError) as exc:  # the message, not a traceback
        print(f"examples/agent.py: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    for t, _, act in done:
        print(t["id"], " ".join(f"{q}={v}" for q, v in act.items()))
    for q, c in tally(done).items():
        print(TALLY.format(name=q, **c))
    if args.records:
        with args.records.open("xb") as f:  # "x": create-only, even if a file appeared while it ran
            f.write(b"".join(dumps_record(r) for _, a, _ in done for r in a.records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
