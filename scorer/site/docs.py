"""The site's Docs section: the Markdown pages of a docs folder (the checkout's ``docs/``) rendered with markdown-it-py.

CommonMark with GitHub's tables, raw HTML off (a ``<script>`` in a page is shown as text), so a page follows the
site's rules like every other: no inline script, no request outside the site. Headings get the ids GitHub gives them,
so ``page.md#section`` works in the repository and on the site alike. Links are resolved at build time:

* ``other.md`` (``#section``) → ``other.html`` (``#section``); a page or section that does not exist stops the build;
* a file under the data directory → its page on the site: a report's ``../results/<slug>.html``, a trace's replay;
* anything else (a source file, a folder, a report not in this build, another site) becomes plain text: every link on
  the site resolves inside it. A link to a file that does not exist at all stops the build, naming the page.

``index.md`` is the section's first page; the others are listed on every page in the order it links them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markupsafe import Markup

from scorer.site.inputs import BuildError, ReportFile, TraceFile

INDEX = "index.md"


@dataclass
class DocPage:
    """One Markdown page of the docs folder, parsed; :func:`render_docs` fills in ``html``."""

    rel: str
    """File name in the docs folder (``install.md``)."""
    slug: str
    """Output name without ``.html`` (``install``; ``index`` for index.md)."""
    path: Path
    """The file, resolved (links are resolved against its folder)."""
    title: str
    """The text of its one ``#`` heading."""
    tokens: list[Token]
    """markdown-it's token stream."""
    ids: set[str] = field(default_factory=set)
    """Its headings' ids (what ``#section`` may name)."""
    html: Markup = field(default_factory=Markup)
    """The rendered page body."""


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def table_open(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        # wide tables scroll sideways inside the page (focusable, so a keyboard can scroll them too)
        return '<div class="table-scroll" tabindex="0"><table>\n'

    def table_close(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        return "</table></div>\n"

    md.add_render_rule("table_open", table_open)
    md.add_render_rule("table_close", table_close)
    return md


def heading_id(text: str, taken: set[str]) -> str:
    """GitHub's id for a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces to ``-``; a repeated one
    gets ``-1``, ``-2``…"""
    base = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
    out, n = base, 1
    while out in taken:
        out, n = f"{base}-{n}", n + 1
    taken.add(out)
    return out


def _inline_text(tok: Token) -> str:
    return "".join(c.content for c in tok.children or [] if c.type in ("text", "code_inline"))


def _parse(md: MarkdownIt, path: Path, rel: str) -> DocPage:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BuildError(f"docs/{rel}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    tokens = md.parse(text)
    ids: set[str] = set()
    titles = []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            words = _inline_text(tokens[i + 1])
            tok.attrSet("id", heading_id(words, ids))
            if tok.tag == "h1":
                titles.append(words)
        elif tok.type == "inline":
            for child in tok.children or []:
                if child.type == "image":
                    raise BuildError(f"docs/{rel}: an image ({child.attrGet('src')}); the site's pages load none")
    if len(titles) != 1:
        raise BuildError(f"docs/{rel}: {len(titles)} '# ' headings (expected exactly one: the page's title)")
    return DocPage(rel, rel[:-3], path.resolve(), titles[0], tokens, ids)


def _order(pages: dict[str, DocPage]) -> list[DocPage]:
    """index.md, then the pages in the order index.md links them, then the rest by name."""
    index = pages[INDEX]
    linked = []
    for tok in index.tokens:
        for child in tok.children or []:
            href = str(child.attrGet("href") or "") if child.type == "link_open" else ""
            name = unquote(href.split("#", 1)[0])
            if name in pages and name not in linked and name != INDEX:
                linked.append(name)
    rest = sorted(set(pages) - set(linked) - {INDEX})
    return [index, *(pages[n] for n in (*linked, *rest))]


class _Links:
    """Where a link of a docs page goes on the site (None: nowhere, shown as text)."""

    def __init__(self, pages: list[DocPage], data_dir: Path | None, traces: list[TraceFile],
                 reports: list[ReportFile]) -> None:
        self.pages = {p.path: p for p in pages}
        self.data = data_dir.resolve() if data_dir is not None else None
        self.reports = {r.rel: r.slug for r in reports}
        self.traces = {t.rel: t.slug for t in traces}

    def target(self, page: DocPage, href: str) -> str | None:
        if href.startswith("#"):
            if unquote(href[1:]) not in page.ids:
                raise BuildError(f"docs/{page.rel}: link {href!r}: no such heading on this page")
            return href
        if re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", href) or href.startswith("//"):
            return None  # another site: the site's pages link only inside themselves
        path, _, frag = href.partition("#")
        target = (page.path.parent / unquote(path)).resolve()
        doc = self.pages.get(target)
        if doc is not None:
            if frag and unquote(frag) not in doc.ids:
                raise BuildError(f"docs/{page.rel}: link {href!r}: no such heading in {doc.rel}")
            return f"{doc.slug}.html" + (f"#{frag}" if frag else "")
        if not target.exists():
            raise BuildError(f"docs/{page.rel}: link {href!r}: no such file")
        if self.data is not None and target.is_file() and target.is_relative_to(self.data):
            rel = target.relative_to(self.data).as_posix()
            if rel in self.reports:
                return f"../results/{self.reports[rel]}.html"
            if rel in self.traces:
                return f"../demo/index.html#trace={self.traces[rel]}"
        return None


def _resolve_links(page: DocPage, links: _Links) -> None:
    """Point every link at its page on the site, or turn it into its text."""
    for tok in page.tokens:
        if tok.type != "inline" or not tok.children:
            continue
        kept: list[Token] = []
        open_links: list[bool] = []  # per open link: kept as a link?
        for child in tok.children:
            if child.type == "link_open":
                where = links.target(page, str(child.attrGet("href") or ""))
                open_links.append(where is not None)
                if where is None:
                    continue
                child.attrSet("href", where)
            elif child.type == "link_close" and not open_links.pop():
                continue
            kept.append(child)
        tok.children = kept


def load_docs(docs_dir: Path) -> list[DocPage]:
    """Parse every ``*.md`` of ``docs_dir`` (not its subfolders); index.md first, then the order it links them."""
    if not docs_dir.is_dir():
        raise BuildError(f"{docs_dir}: docs directory not found")
    md = _markdown()
    pages = {p.name: _parse(md, p, p.name) for p in sorted(docs_dir.glob("*.md")) if p.is_file()}
    if INDEX not in pages:
        raise BuildError(f"{docs_dir}/{INDEX}: missing (the Docs section's first page, which lists the others)")
    return _order(pages)


def render_docs(pages: list[DocPage], data_dir: Path | None, traces: list[TraceFile],
                reports: list[ReportFile]) -> None:
    """Resolve every page's links (see the module's docstring) and render its body into ``html``."""
    md = _markdown()
    links = _Links(pages, data_dir, traces, reports)
    for page in pages:
        _resolve_links(page, links)
        page.html = Markup(md.renderer.render(page.tokens, md.options, {}))
