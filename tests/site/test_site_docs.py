"""The site's Docs section (scorer/site/docs.py): docs/*.md rendered by markdown-it-py into pages that keep the site's
rules, every link resolved inside the site or turned into text, and a bad page stopping the build naming it.

The page rules every site page keeps (self-contained, CSP, no inline script) are checked on the docs pages by
test_site_build.py (its PAGES include them); the browser and accessibility checks by test_site_browser.py and
test_site_defects.py.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from site_helpers import ROOT, build, make_data_dir, tree_bytes

from scorer import cli
from scorer.site.docs import heading_id

DOCS = ROOT / "docs"


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("href") is not None:
            self.hrefs.append(a["href"] or "")
        if a.get("id"):
            self.ids.add(a["id"] or "")


def anchors(html: str) -> _Anchors:
    parser = _Anchors()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built from the checkout's data/ and docs/."""
    out = tmp_path_factory.mktemp("real") / "site"
    build.build(ROOT / "data", out, docs_dir=DOCS)
    return out


def test_every_docs_page_is_built_with_the_docs_nav(real: Path) -> None:
    pages = sorted(p.stem for p in DOCS.glob("*.md"))
    assert sorted(p.stem for p in (real / "docs").glob("*.html")) == pages
    for page in ("index.html", "demo/index.html", "traces/index.html", "live/index.html", "docs/cli.html"):
        html = (real / page).read_text()
        root = "../" if "/" in page else ""
        assert f'<a href="{root}docs/index.html"' in html, page
    index = (real / "docs/index.html").read_text()
    listed = re.search(r'<nav class="doc-pages.*?</nav>', index, flags=re.S)
    assert listed and all(f'href="{p}.html"' in listed.group(0) for p in pages)
    assert '<h1 id="semif-documentation">SemIf documentation</h1>' in index


def test_every_link_of_a_docs_page_resolves_inside_the_site(real: Path) -> None:
    """Every href is relative, names a file of the built site, and a #section names an id on that page; no link to a
    report or a trace of this data directory was turned into text."""
    data_links = 0
    for md in sorted(DOCS.glob("*.md")):
        data_links += len(re.findall(r"\]\((?:\.\./)+data/[^)]+\.json\)", md.read_text()))
        page = real / "docs" / f"{md.stem}.html"
        found = anchors(page.read_text())
        for href in found.hrefs:
            assert not re.match(r"[a-z][a-z0-9+.-]*:", href), (md.name, href)
            path, _, frag = href.partition("#")
            target = (page.parent / path).resolve() if path else page
            assert target.is_file(), (md.name, href)
            if frag and target.suffix == ".html" and "trace=" not in frag:
                assert frag in anchors(target.read_text()).ids, (md.name, href)
    on_site = sum(len(re.findall(r'href="\.\./(?:results/[^"]+\.html|demo/index\.html#trace=[^"]+)"', p.read_text()))
                  for p in (real / "docs").glob("*.html"))
    assert data_links > 40 and on_site == data_links


def test_the_cli_reference_page_keeps_its_tables_and_anchors(real: Path) -> None:
    html = (real / "docs/cli.html").read_text()
    assert '<h2 id="semif-calibrate-thresholds">semif calibrate thresholds</h2>' in html
    assert '<a href="#semif-engine-start"><code>semif engine start</code></a>' in html
    assert html.count('<div class="table-scroll" tabindex="0"><table>') > 20
    assert "<code>--llama-threads</code>" in html


def _docs(tmp: Path, pages: dict[str, str]) -> Path:
    d = tmp / "docs"
    d.mkdir(exist_ok=True)
    for name, text in pages.items():
        (d / name).write_text(text, encoding="utf-8")
    return d


def test_links_go_to_pages_reports_and_traces_or_become_text(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    docs = _docs(tmp_path, {
        "index.md": "# Docs\n\nSee [the guide](guide.md#a-section), [a report](../data/results/mystery.json), "
                    "[a trace](../data/traces/trace-fake.json), [code](../data/README.md), [elsewhere](https://x.org) "
                    "and [here](#docs).\n\n<script>alert(1)</script> <b>bold</b>\n\n| a | b |\n| --- | --- |\n"
                    "| `x\\|y` | 2 |\n",
        "guide.md": "# Guide\n\n## A section\n\n```sh\nsemif --help   # http://127.0.0.1:8000\n```\n",
    })
    (data / "README.md").write_text("data notes\n")
    build.build(data, tmp_path / "site", docs_dir=docs)
    html = (tmp_path / "site/docs/index.html").read_text()
    assert '<a href="guide.html#a-section">the guide</a>' in html
    assert '<a href="../results/mystery.html">a report</a>' in html
    assert '<a href="../demo/index.html#trace=trace-fake">a trace</a>' in html
    assert ", code, elsewhere and " in html and "x.org" not in html  # not links on the site: text
    assert '<a href="#docs">here</a>' in html
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<b>" not in html
    assert "<td><code>x|y</code></td>" in html
    guide = (tmp_path / "site/docs/guide.html").read_text()
    assert '<pre><code class="language-sh">semif --help   # http://127.0.0.1:8000\n</code></pre>' in guide
    assert '<a href="index.html">Docs</a>' in guide and '<a href="guide.html" aria-current="page">Guide</a>' in guide


@pytest.mark.parametrize("pages,match", [
    ({"index.md": "# Docs\n\n[gone](gone.md)\n"}, r"docs/index\.md: link 'gone\.md': no such file"),
    ({"index.md": "# Docs\n\n[x](other.md#nowhere)\n", "other.md": "# Other\n"},
     r"docs/index\.md: link 'other\.md#nowhere': no such heading in other\.md"),
    ({"index.md": "# Docs\n\n[x](#nowhere)\n"}, r"docs/index\.md: link '#nowhere': no such heading on this page"),
    ({"index.md": "# Docs\n\n# Again\n"}, r"docs/index\.md: 2 '# ' headings"),
    ({"index.md": "Docs without a title\n"}, r"docs/index\.md: 0 '# ' headings"),
    ({"index.md": "# Docs\n\n![a picture](x.png)\n"}, r"docs/index\.md: an image \(x\.png\)"),
    ({"guide.md": "# Guide\n"}, r"index\.md: missing"),
    ({"index.md": "# Docs\n", "bad.md": b"# Bad \xff\n"}, r"docs/bad\.md: not UTF-8"),
])
def test_a_bad_docs_page_stops_the_build_naming_it(tmp_path: Path, pages: dict[str, str | bytes], match: str) -> None:
    d = tmp_path / "docs"
    d.mkdir()
    for name, content in pages.items():
        if isinstance(content, bytes):
            (d / name).write_bytes(content)
        else:
            (d / name).write_text(content)
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    with pytest.raises(build.BuildError, match=match):
        build.build(data, tmp_path / "site", docs_dir=d)
    assert not (tmp_path / "site").exists()


def test_heading_ids_are_githubs() -> None:
    taken: set[str] = set()
    assert heading_id("semif engine-start", taken) == "semif-engine-start"
    assert heading_id("A remote API: TypeSafe System One", taken) == "a-remote-api-typesafe-system-one"
    assert heading_id("`--exact` and drift", taken) == "--exact-and-drift"
    assert heading_id("semif engine-start", taken) == "semif-engine-start-1"


def test_a_build_without_docs_has_no_docs_section(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path, hostile=False)
    build.build(data, tmp_path / "site")
    assert not (tmp_path / "site/docs").exists()
    assert "docs/index.html" not in (tmp_path / "site/index.html").read_text()


def test_the_build_with_docs_is_deterministic(tmp_path: Path) -> None:
    data = make_data_dir(tmp_path)
    build.build(data, tmp_path / "a", docs_dir=DOCS)
    build.build(data, tmp_path / "b", docs_dir=DOCS)
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")


def test_semif_site_build_takes_docs_from_the_folder_or_the_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    data = make_data_dir(tmp_path, hostile=False, reports=False)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["site", "build", "--data", str(data), "--out", "plain"]) == 0
    assert not (tmp_path / "plain/docs").exists()  # no ./docs here: no Docs section
    _docs(tmp_path, {"index.md": "# Here\n"})
    assert cli.main(["site", "build", "--data", str(data), "--out", "local"]) == 0
    assert (tmp_path / "local/docs/index.html").is_file()  # ./docs by default
    assert cli.main(["site", "build", "--data", str(data), "--out", "flag", "--docs", str(DOCS)]) == 0
    assert (tmp_path / "flag/docs/cli.html").is_file()
    assert cli.main(["site", "build", "--data", str(data), "--out", "none", "--docs", "missing"]) == 2
    assert "missing: docs directory not found" in capsys.readouterr().err
