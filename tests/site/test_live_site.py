"""The live page as build.py writes it (no browser): the vendored engine copied from the pinned npm package, the
page linked from the overview and the replay but loaded by neither, its policy, and a build without the package.
"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import pytest
from site_helpers import build, embedded_json, inline_blocks, make_data_dir

from scorer.prompting import prompt as semif_prompt
from scorer.site import live, render


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not live.PACKAGE.is_dir():
        pytest.fail(f"{live.PACKAGE} is missing: run npm ci (scripts/install.sh does)", pytrace=False)
    tmp = tmp_path_factory.mktemp("live-site")
    build.build(make_data_dir(tmp, hostile=False, reports=False), tmp / "site")
    return tmp / "site"


def test_the_engine_is_the_pinned_package_byte_for_byte(out: Path) -> None:
    pkg = live.PACKAGE
    lock = json.loads((Path(live.ROOT) / "package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/@wllama/wllama"]["version"]
    assert json.loads((pkg / "package.json").read_text())["version"] == pinned
    assert (out / "assets/wllama/wllama.wasm").read_bytes() == (pkg / "esm/wasm/wllama.wasm").read_bytes()
    assert (out / "assets/wllama/LICENCE").read_bytes() == (pkg / "LICENCE").read_bytes()
    js = (out / "assets/wllama/wllama.js").read_text()
    assert (pkg / "esm/index.cjs").read_text() in js
    assert js.rstrip().endswith("window.SemifWllama = module.exports;\n})();")
    b64 = re.fullmatch(r'/\*.*?\*/\nwindow\.SemifWllamaWasm = "([A-Za-z0-9+/=]+)";\n',
                       (out / "assets/wllama/wllama-wasm.js").read_text(), flags=re.S)
    assert b64 and base64.b64decode(b64.group(1)) == (pkg / "esm/wasm/wllama.wasm").read_bytes()
    page = (out / "live/index.html").read_text()
    assert f"@wllama/wllama {pinned}" in page


def test_linked_from_the_overview_and_the_replay_which_load_none_of_it(out: Path) -> None:
    for rel in ("index.html", "demo/index.html"):
        text = (out / rel).read_text()
        assert 'href="' + ("" if rel == "index.html" else "../") + 'live/index.html"' in text, rel
        assert "wllama" not in text and "live.js" not in text, rel
    assert "wllama" not in (out / "assets/replay.js").read_text()


def test_the_live_page_loads_only_its_script_and_allows_only_what_the_engine_needs(out: Path) -> None:
    page = (out / "live/index.html").read_text()
    assert re.findall(r'<script src="([^"]+)"', page) == ["../assets/live.js"]
    assert inline_blocks(page, "script") == []
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    rules = dict((r.split()[0], r.split()[1:]) for r in html.unescape(csp).split("; "))
    assert rules["default-src"] == ["'none'"]
    assert rules["script-src"] == ["'self'", "'wasm-unsafe-eval'", "blob:"]  # never 'unsafe-eval' or inline
    assert rules["worker-src"] == ["blob:"]
    assert rules["connect-src"] == ["'self'", "blob:", "data:", "https:", "http://127.0.0.1:*", "http://localhost:*"]
    assert len(inline_blocks(page, "style")) == 1 and "'unsafe-inline'" not in csp
    config = embedded_json(page, "semif-live-config")
    words = config["prompt"]
    assert (words["system"], words["version"], "".join(words["letters"])) == (
        semif_prompt.SYSTEM, semif_prompt.PROMPT_VERSION, semif_prompt.LETTERS)
    assert config["wllama"]["present"] is True
    # the prefilled state is the showcase state as SemIf's prompts show it
    show = live.showcase()
    area = re.search(r'<textarea id="state"[^>]*>(.*?)</textarea>', page, flags=re.S).group(1)
    assert html.unescape(area) == show["state"]
    # the page loads its own code first (small: Lighthouse's budget before the first paint is 80 kB), the pure
    # modules and the engine only when a model is opened
    live_js = (out / "assets/live.js").read_text()
    assert live_js == "\n".join((render.TEMPLATES / n).read_text() for n in live.LIVE_PAGE_SCRIPTS)
    assert len(live_js.encode()) < 60_000
    modules = (out / "assets/live-modules.js").read_text()
    assert all((render.TEMPLATES / n).read_text() in modules for n in live.LIVE_MODULES)
    assert config["wllama"]["modules"] == "../assets/live-modules.js"


def test_a_build_without_the_package_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(live, "PACKAGE", tmp_path / "nowhere")
    build.build(make_data_dir(tmp_path, hostile=False, reports=False), tmp_path / "site")
    page = (tmp_path / "site" / "live/index.html").read_text()
    assert "This build has no in-browser engine" in page and not (tmp_path / "site" / "assets/wllama").exists()
    picker = re.search(r'<input type="file" id="gguf-input"[^>]*>', page).group(0)
    assert picker.endswith(" disabled>")
    assert "live page says this build has no in-browser engine" in capsys.readouterr().err


def test_an_incomplete_package_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "package.json").write_text('{"version": "0"}')
    with pytest.raises(build.BuildError, match=r"pkg/esm/index\.cjs: missing from the installed @wllama/wllama"):
        live.engine_files(tmp_path / "pkg")
