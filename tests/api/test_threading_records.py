"""Records carry the threads a kernel ran and how they waited (``model.threading``): ``threads="auto"`` reaches the
backend's config through the Scorer, the block lands in every record and the record schema holds it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fakes import FakeBackend

from scorer import Scorer
from scorer.core import threads
from scorer.core.errors import InputError
from scorer.formats.records import validate_records


class ThreadedFake(FakeBackend):
    """The fake kernel, reporting threads as the in-process kernels do (``threads`` and ``threading``)."""

    def __init__(self, choice: threads.ThreadChoice, policy: threads.WaitPolicy) -> None:
        super().__init__()
        self.choice, self.policy = choice, policy
        self.n_threads = choice.chosen or 4

    def model_info(self) -> dict[str, Any]:
        return {**super().model_info(), "threads": self.n_threads,
                "threading": threads.threading_block(self.choice, self.n_threads, self.policy)}


@pytest.fixture
def seen(monkeypatch):
    import scorer.backends as backends

    configs: list[Any] = []
    policy = threads.decide_wait_policy({}, (), {})

    def load(cfg):
        configs.append(cfg)
        # two usable cores, one kept busy by other work: auto runs one thread
        return ThreadedFake(threads.choose_threads(cfg.threads, usable=2, busy=lambda cpus: 1.02), policy)

    monkeypatch.setattr(backends, "load_backend", load)
    return configs


@pytest.mark.parametrize("mode", ["direct", "shared"])
def test_auto_threads_reach_the_backend_and_every_record(seen, mode):
    with Scorer(model="m", backend="torch", threads="auto", mode=mode) as s:
        recs = [d.record for d in s.decide_many([
            {"id": f"r{i}", "state": "a state", "question": f"q{i}?", "options": [{"id": "a", "description": "x"},
                                                                             {"id": "b", "description": "y"}]}
            for i in range(3)])]
    assert seen[0].threads == "auto"
    validate_records(recs)
    for r in recs:
        t = r["model"]["threading"]
        assert t["threads"]["asked"] == "auto" and t["threads"]["chosen"] == 1 == r["model"]["threads"]
        assert t["threads"]["usable_cores"] == 2 and t["threads"]["busy_cores"] == 1.02
        assert "2 usable cores, 1.02 busy" in t["threads"]["why"]
        assert t["wait_policy"] == {"OMP_WAIT_POLICY": "PASSIVE", "source": "semif", "in_effect": True,
                                    "runtimes_loaded_before": [], "GOMP_SPINCOUNT": None}


def test_a_default_run_records_the_librarys_choice(seen):
    with Scorer(model="m", backend="torch") as s:
        rec = s.decide("a state", "q?", {"a": "x", "b": "y"}).record
    assert seen[0].threads is None
    assert rec["model"]["threading"]["threads"] == {"asked": None, "chosen": 4,
                                                    "why": "not asked: the library's own choice"}


@pytest.mark.parametrize(("where", "value"), [
    (("threads", "asked"), "many"), (("threads", "chosen"), 0), (("threads", "why"), None),
    (("wait_policy", "source"), "somebody"), (("wait_policy", "in_effect"), "yes"),
])
def test_the_schema_refuses_a_malformed_threading_block(seen, where, value):
    with Scorer(model="m", backend="torch", threads=2) as s:
        rec = s.decide("a state", "q?", {"a": "x", "b": "y"}).record
    validate_records([rec])
    bad = copy.deepcopy(rec)
    bad["model"]["threading"][where[0]][where[1]] = value
    with pytest.raises(InputError, match=r"model\.threading"):
        validate_records([bad])
