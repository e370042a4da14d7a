"""What a site build reads and what it makes of it: the build's error, and one record per trace and report.

Plain data: the records are filled in by :mod:`scorer.site.discover` (traces, with their lanes) and
:mod:`scorer.site.reports` (reports, with their charts and tables), and read by :mod:`scorer.site.render`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup


class BuildError(Exception):
    """The site cannot be built as asked; the message names the file and what is wrong with it."""


@dataclass
class Lane:
    """One path of a trace as the replay and its verdict show it (v1's ``generated`` path is the free lane).

    Times are medians over the lane's measured runs; answers, right/wrong and agreement are those of the
    first measured repeat (the trace summary's own basis)."""

    key: str
    """``typed``, ``free`` or ``constrained``."""
    path: str
    """The ``runs[].path`` value of this lane's runs (``generated`` in v1)."""
    name: str
    """What readers call it (``Free generation``)."""
    run: dict[str, Any]
    """The first measured repeat's run."""
    runs: int
    """Measured runs."""
    median_s: float | None
    """Median wall time, from the lane's t0 (before prompt rendering) to its last output."""
    first_s: float | None
    """Median time of the first decision (typed) or the first generated token."""
    ratio: float | None = None
    """Generated lanes: median time ÷ typed median time."""
    valid_runs: int | None = None
    """Generated lanes: runs that wrote a complete, valid array."""
    capped_runs: int | None = None
    """Generated lanes: runs stopped by the token limit before the model ended its turn."""
    limit: int | None = None
    """Generated lanes: the token limit (``max_new_tokens``)."""
    verdict: str = ""
    """Generated lanes: the first run's outcome in words (``valid: 21 values``, ``capped: …``, ``invalid: …``)."""
    correct: int | None = None
    """Values equal to their label (typed: the raw choices); None without labels or without a usable array."""
    calibrated_correct: int | None = None
    """Typed, v2 with calibration: calibrated choices equal to their label."""
    labelled: int = 0
    """Criteria with a label."""
    agree: int | None = None
    """Generated lanes with a usable array: values equal to the raw typed choice of the same repeat."""
    output_tokens: float | None = None
    """Median output tokens (0 for typed)."""
    masked_tokens: float | None = None
    """Constrained lane: median tokens where the grammar refused the model's own argmax."""

    @property
    def usable(self) -> bool:
        """A generated lane's first run wrote a complete, valid array (typed: always)."""
        return self.key == "typed" or bool(self.run.get("complete") and self.run.get("valid"))


@dataclass
class TraceFile:
    """One validated trace, ready to render."""

    rel: str
    """Path relative to the data directory, with forward slashes (shown to readers)."""
    slug: str
    """Unique, URL- and id-safe name: the picker key, the share-link key and the download file name."""
    raw: bytes
    """The file's bytes, copied unchanged to ``traces/``."""
    sha256: str
    """sha256 of ``raw`` (what a reader checks the download against)."""
    obj: dict[str, Any]
    """The parsed trace."""

    label: str = ""
    """Short picker label: model, engine, machine (and the date, then the file's name, when two would match)."""
    lanes: list[Lane] = field(default_factory=list)
    """The trace's paths as the replay shows them: typed, then the generated lanes."""
    control: bool = False
    """A timing control (random weights): listed and replayable, kept out of the headline numbers."""
    workload: str = ""
    """For calibrated typed decisions on one state of a labelled workload: how the same label-free calibration
    does on the whole workload (from a committed calibration report), so one state's count is seen in context."""


@dataclass
class ReportFile:
    """One result report, of a kind this build draws (``bench``, ``quant``, ``eval``…) or of one it does not know."""

    rel: str
    """Path relative to the data directory."""
    slug: str
    """Unique id-safe name (anchor on the index page, file name under ``results/``)."""
    raw: bytes
    """The file's bytes, copied unchanged to ``results/``."""
    sha256: str
    """sha256 of ``raw``."""
    obj: dict[str, Any]
    """The parsed report (a JSON object)."""
    kind: str
    """The report's own ``kind`` (the first field of its envelope; see scorer/formats/envelope.py)."""
    family: str = ""
    """The section of the index page it is listed under (``shape`` for ``bench``, else mostly the kind; see
    ``scorer.site.reports``)."""
    title: str = ""
    """Heading on the index page."""
    charts: list[Markup] = field(default_factory=list)
    """Inline SVG charts for the kinds this build knows (each may be followed by a one-line caption)."""
    note: str = ""
    """Said above its charts and tables: for a kind this build does not know, that it is shown as tables only."""
    tables: list[dict[str, Any]] = field(default_factory=list)
    """Tables: ``{"caption", "columns", "rows", "note"}`` with every cell already a string."""
