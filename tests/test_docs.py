"""The README and docs/ tell the truth: every command they show runs, every link resolves, and the README stays a short
how-to without a run log.

* Every shell block (```` ```sh ````) of README.md and docs/*.md is either run here or says why not: a first line
  ``# not run: REASON``. A block that is run holds only ``semif`` commands; each runs in process, in a scratch folder
  per page (``data/`` mirrored into it: reports written there never reach the checkout; ``rows.jsonl`` a copy of
  ``data/examples/decisions.jsonl``), on the fake backend, and must exit 0. Blocks of one page run in order, so a page
  may read what an earlier command wrote.
* Every relative link of the README, docs/ and the other top-level pages names a file that exists, and a ``#section``
  a heading that exists (the ids GitHub and the site give headings).
* The README: at most 200 lines, no dates, machine names or load averages (history goes to CHANGELOG.md), the two
  ``make`` commands, a 12-line Python quickstart and an HTTP quickstart whose request the System One model accepts.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes import FakeBackend
from markdown_it import MarkdownIt

import scorer.backends as backends
from scorer import cli
from scorer.site.docs import heading_id

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
TOP = [README, ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md", ROOT / "THIRD_PARTY.md", *sorted(DOCS.glob("*.md"))]
SHELLS = ("sh", "bash", "shell", "console")
NOT_RUN = re.compile(r"^# not run: \S.{4,}")
_MD = MarkdownIt("commonmark").enable("table")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def shell_blocks(page: Path) -> list[tuple[int, str]]:
    """(line, text) of every shell block of a Markdown page."""
    return [(tok.map[0] + 1 if tok.map else 0, tok.content) for tok in _MD.parse(page.read_text(encoding="utf-8"))
            if tok.type == "fence" and tok.info.strip().split(" ")[0] in SHELLS]


def commands(block: str) -> list[list[str]]:
    """The commands of a block: continuation lines joined (and lines inside an open quote), comments dropped."""
    out, pending = [], ""
    for line in block.replace("\\\n", " ").splitlines():
        pending = f"{pending}\n{line}" if pending else line
        try:
            argv = shlex.split(pending, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        pending = ""
        if argv:
            out.append(argv)
    assert not pending, f"an unclosed quote: {pending!r}"
    return out


LONG_RUNNING = (["serve"], ["mcp"], ["engine", "start"])
"""Commands that do not return (servers) or start processes: their blocks must be marked ``# not run``."""


def _run_blocks() -> Iterator[tuple[str, list[tuple[int, str]]]]:
    for page in PAGES:
        run = [(line, text) for line, text in shell_blocks(page) if not NOT_RUN.match(text.lstrip())]
        if run:
            yield _rel(page), run


def _mirror(src: Path, dst: Path) -> None:
    """``src`` as real folders holding links to its files: reading goes to the checkout, writing stays here."""
    for dirpath, _dirnames, filenames in os.walk(src):
        here = dst / Path(dirpath).relative_to(src)
        here.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            (here / name).symlink_to(Path(dirpath) / name)


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _mirror(ROOT / "data", tmp_path / "data")
    shutil.copy(ROOT / "data" / "examples" / "decisions.jsonl", tmp_path / "rows.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "load_backend", lambda cfg: FakeBackend())
    monkeypatch.setattr(backends, "load_backend", lambda cfg: FakeBackend())
    monkeypatch.setenv("COLUMNS", "100")
    return tmp_path


def _semif(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: --help
        code = exc.code if isinstance(exc.code, int) else 1
    said = capsys.readouterr()
    return code, said.out + said.err


def _runnable(page: str, line: int, argv: list[str]) -> None:
    assert argv[0] == "semif", (f"{page}:{line}: {shlex.join(argv)!r} is not a semif command: run it here or mark "
                                "its block '# not run: REASON'")
    assert not any(argv[1:1 + len(c)] == c for c in LONG_RUNNING), (
        f"{page}:{line}: {shlex.join(argv)!r} does not return: mark its block '# not run: REASON'")


@pytest.mark.parametrize("page,blocks", list(_run_blocks()), ids=[p for p, _ in _run_blocks()])
def test_the_commands_shown_run(page: str, blocks: list[tuple[int, str]], scratch: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    for line, block in blocks:
        for argv in commands(block):
            _runnable(page, line, argv)
            code, said = _semif(argv[1:], capsys)
            assert code == 0, f"{page}:{line}: {shlex.join(argv)} exited {code}:\n{said[-2000:]}"


def test_every_shell_block_is_run_or_says_why_not() -> None:
    seen = 0
    for page in PAGES:
        for line, block in shell_blocks(page):
            seen += 1
            first = block.lstrip().splitlines()[0] if block.strip() else ""
            if first.startswith("# not run"):
                assert NOT_RUN.match(first), f"{_rel(page)}:{line}: '# not run: REASON' needs its reason"
            else:
                assert commands(block), f"{_rel(page)}:{line}: an empty shell block"
                for argv in commands(block):
                    _runnable(_rel(page), line, argv)
    assert seen > 20


def test_the_runner_reads_blocks_and_markers() -> None:
    text = "# not run: starts a server\nsemif serve\n"
    assert NOT_RUN.match(text)
    assert not NOT_RUN.match("# not run:\nsemif serve")
    assert commands("semif score --input a \\\n    --output b   # a comment\n\nsemif show b\n") == [
        ["semif", "score", "--input", "a", "--output", "b"], ["semif", "show", "b"]]
    assert commands("curl -d '{\"a\":\n 1}'\nsemif show b") == [["curl", "-d", '{"a":\n 1}'], ["semif", "show", "b"]]
    with pytest.raises(AssertionError, match="does not return"):
        _runnable("p", 1, ["semif", "serve", "--port", "1"])


# --- links ----------------------------------------------------------------------------------------------------------
def _ids(page: Path) -> set[str]:
    tokens = _MD.parse(page.read_text(encoding="utf-8"))
    taken: set[str] = set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            heading_id("".join(c.content for c in tokens[i + 1].children or []
                               if c.type in ("text", "code_inline")), taken)
    return taken


def _links(page: Path) -> Iterator[str]:
    for tok in _MD.parse(page.read_text(encoding="utf-8")):
        for child in tok.children or []:
            if child.type == "link_open":
                yield str(child.attrGet("href") or "")


@pytest.mark.parametrize("page", TOP, ids=[_rel(p) for p in TOP])
def test_every_relative_link_resolves(page: Path) -> None:
    for href in _links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", href):
            continue
        path, _, frag = href.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{_rel(page)}: link {href!r}: no such file"
        if frag and target.suffix == ".md":
            assert frag in _ids(target), f"{_rel(page)}: link {href!r}: no such heading in {_rel(target)}"


def test_the_docs_index_links_every_page() -> None:
    linked = {h.split("#")[0] for h in _links(DOCS / "index.md")}
    assert {p.name for p in DOCS.glob("*.md")} - {"index.md"} <= linked


def test_the_readme_links_the_docs_it_promises() -> None:
    text = README.read_text(encoding="utf-8")
    for name in ("docs/index.md", "docs/switch.md", "docs/cli.md", "docs/install.md", "ARCHITECTURE.md", "LICENSE",
                 "THIRD_PARTY.md", "CHANGELOG.md"):
        assert f"]({name})" in text, name


# --- the README -----------------------------------------------------------------------------------------------------
def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines (at most 200: reference goes to docs/)"


HISTORY = [
    (r"\b20\d\d-\d\d-\d\d\b", "a date"),
    (r"\b\d{1,2}:\d\d(:\d\d)? ?(UTC|GMT)\b|\bUTC\b", "a time of day"),
    (r"(?i)\bload average", "a load average"),
    (r"(?i)\bAVX[-0-9]*|EPYC|\bH\d00\b|\bA100\b|\bXeon\b", "a machine name"),
    (r"(?i)\b(this|the quiet|a quiet|a loaded|the loaded) machine\b", "a machine's run"),
    (r"(?i)\b(January|February|March|April|June|July|August|September|October|November|December) 20\d\d\b", "a date"),
    (r"\b\d+ min \d+ s\b", "a run's duration"),
]


@pytest.mark.parametrize("pattern,what", HISTORY, ids=[w for _, w in HISTORY])
def test_the_readme_keeps_no_run_history(pattern: str, what: str) -> None:
    for n, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        assert not re.search(pattern, line), (f"README.md:{n}: {what} ({line.strip()[:80]!r}): history goes to "
                                              "CHANGELOG.md")


def test_the_history_patterns_catch_a_log_line() -> None:
    log = "make demo took 8 min 8 s on the AVX-512 machine (2026-11-30 17:02 UTC, load average 0.6)"
    assert sum(bool(re.search(p, log)) for p, _ in HISTORY) >= 5


def test_the_readme_keeps_the_two_make_commands() -> None:
    text = README.read_text(encoding="utf-8")
    for target in ("make demo", "make test"):
        said = [ln for ln in text.splitlines() if ln.startswith(target)]
        assert said and all("#" in ln and len(ln.split("#", 1)[1].split()) >= 5 for ln in said), target


def _block(lang: str, starts: str) -> str:
    for tok in _MD.parse(README.read_text(encoding="utf-8")):
        if tok.type == "fence" and tok.info.strip() == lang and starts in tok.content:
            return tok.content
    raise AssertionError(f"no ```{lang} block with {starts!r} in README.md")


def test_the_python_quickstart_is_twelve_lines_of_the_public_api() -> None:
    code = _block("python", "from scorer import")
    assert code.startswith("from scorer import Scorer, Choice, YesNo, Score\n")
    assert len(code.splitlines()) <= 12 and ".ask(" in code
    ast.parse(code)


def test_the_http_quickstart_sends_a_request_the_system_one_model_accepts() -> None:
    from scorer.serving.systemone import SystemOneRequest

    block = _block("sh", "/v1/systemone")
    argv = commands(block)[1]
    assert argv[:2] == ["curl", "-s"] and "localhost:8000/v1/systemone" in argv
    body = json.loads(argv[argv.index("-d") + 1])
    request = SystemOneRequest.model_validate(body)
    assert {q.type for q in request.questions.values()} == {"choice", "noul"}
    assert len([ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")]) <= 5
