"""The live page's inputs: the vendored in-browser engine (``@wllama/wllama`` from ``node_modules``, pinned by
``package-lock.json``) and the words of SemIf's prompts, which the page renders with the model's own chat template.

The engine ships as the site's own files under ``assets/wllama/`` (no CDN, nothing fetched at run time): its
JavaScript wrapped as a classic script (the page also works from ``file://``, where module scripts and fetches of
sibling files are refused), its WebAssembly as is (fetched over http) and again as a base64 script (for
``file://``), and its licence. Without ``node_modules/@wllama/wllama`` the live page is still written and says
that this build has no engine (:func:`engine_files` returns no files; the build prints a warning).
"""

from __future__ import annotations

import base64
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer import __version__
from scorer.core.package_data import data_path
from scorer.models.gguf_tools import FTYPES
from scorer.prompting import prompt as semif_prompt
from scorer.site.inputs import BuildError

ROOT = Path(__file__).resolve().parents[2]
"""The checkout (``node_modules`` lies there after ``npm ci``; an installed wheel has none: no in-page engine)."""
PACKAGE = ROOT / "node_modules" / "@wllama" / "wllama"
LIVE_PAGE_SCRIPTS = ("live-engine.js", "live-page.js")
"""The page's own code under scorer/site/assets/, concatenated in this order into ``assets/live.js``, the one script
the page
loads at first: the engine's plumbing (``window.SemifLiveEngine``), then the page that uses it."""
LIVE_MODULES = ("live/sha256.js", "live/gguf.js", "live/bpe.js", "live/jinja-parse.js", "live/jinja.js",
                "live/prompt.js", "live/pyjson.js", "live/lanes.js", "replay/format.js", "live/trace-summary.js",
                "live/trace.js")
"""The pure modules under scorer/site/assets/ (tested in Node: tests/site/test_live_prompt.py,
tests/site/test_live_trace.py; the
trace's summary rounds with the replay's format.js), concatenated in this order into ``assets/live-modules.js``,
which the page loads when a model is opened (with the engine), so that what it loads before its first paint
stays small."""
LIVE_PAGE_PARTS = ("live-lanes.js", "live-record.js")
"""The page's code that runs only once a model is open (the generated lanes, the run's trace), appended to
``assets/live-modules.js`` after the pure modules it uses."""
SHOWCASE = data_path("versus", "shape-s01.json")


@dataclass(frozen=True)
class Engine:
    """The vendored engine: its version, llama.cpp build, and the files it adds to the site."""

    present: bool
    version: str = ""
    libllama: str = ""
    files: dict[str, bytes] = field(default_factory=dict)

    def config(self) -> dict[str, Any]:
        wasm = len(self.files.get("assets/wllama/wllama.wasm", b""))
        return {"present": self.present, "version": self.version, "libllama": self.libllama,
                "modules": "../assets/live-modules.js", "js": "../assets/wllama/wllama.js",
                "wasm": "../assets/wllama/wllama.wasm",
                "wasm_js": "../assets/wllama/wllama-wasm.js", "size_text": f"{wasm / 2**20:.1f} MiB of WebAssembly"}


def engine_files(package: Path | None = None) -> Engine:
    """The engine's files for ``assets/wllama/`` (from ``package``, default :data:`PACKAGE`), or an absent engine
    when the npm package is not installed; a package that is there but incomplete is a :class:`BuildError`
    naming the missing file."""
    package = PACKAGE if package is None else package
    if not package.is_dir():
        return Engine(present=False)
    wasm = package / "esm" / "wasm" / "wllama.wasm"
    return _engine_files(package, wasm.stat().st_mtime_ns if wasm.is_file() else 0)


@functools.lru_cache(maxsize=4)
def _engine_files(package: Path, _stamp: int) -> Engine:
    """:func:`engine_files`, once per installed package (a build encodes 9 MB of WebAssembly; the tests build often)."""
    need = {"package.json": package / "package.json", "esm/index.cjs": package / "esm" / "index.cjs",
            "esm/wasm/wllama.wasm": package / "esm" / "wasm" / "wllama.wasm", "LICENCE": package / "LICENCE"}
    for rel, path in need.items():
        if not path.is_file():
            raise BuildError(f"{path}: missing from the installed @wllama/wllama (expected {rel}; run npm ci)")
    meta = json.loads(need["package.json"].read_text("utf-8"))
    cjs = need["esm/index.cjs"].read_text("utf-8")
    lib = _libllama(cjs)
    wasm = need["esm/wasm/wllama.wasm"].read_bytes()
    version = str(meta.get("version", "?"))
    head = f"/* @wllama/wllama {version} (MIT licence: LICENCE beside this file), llama.cpp {lib}; "
    # the CommonJS build as a classic script: its exports become window.SemifWllama (it requires nothing)
    js = (head + "wrapped by build.py as a classic script */\n(function () {\nvar module = { exports: {} }, "
          "exports = module.exports;\n" + cjs + "\nwindow.SemifWllama = module.exports;\n})();\n")
    wasm_js = (head + "its WebAssembly as base64, for file:// */\nwindow.SemifWllamaWasm = \""
               + base64.b64encode(wasm).decode("ascii") + "\";\n")
    files = {"assets/wllama/wllama.js": js.encode("utf-8"), "assets/wllama/wllama.wasm": wasm,
             "assets/wllama/wllama-wasm.js": wasm_js.encode("ascii"),
             "assets/wllama/LICENCE": need["LICENCE"].read_bytes()}
    return Engine(present=True, version=version, libllama=lib, files=files)


def _libllama(cjs: str) -> str:
    """The llama.cpp build the package was compiled from (its ``LIBLLAMA_VERSION``)."""
    marker = 'LIBLLAMA_VERSION = "'
    at = cjs.find(marker)
    return cjs[at + len(marker): cjs.index('"', at + len(marker))] if at >= 0 else "unknown build"


def page_config(engine: Engine) -> dict[str, Any]:
    """What the page's script reads from the page (``#semif-live-config``): the prompt's words, the engine, this
    build's SemIf version (a live trace's ``versions.semif``) and llama.cpp's file-type names (its ``model.dtype``)."""
    return {"prompt": prompt_words(), "wllama": engine.config(), "semif": __version__,
            "ftypes": {str(v): k for k, v in FTYPES.items()}}


def prompt_words() -> dict[str, Any]:
    """scorer.prompting.prompt's constants, for the page's renderer (one source for the prompt's words)."""
    p = semif_prompt
    return {"version": p.PROMPT_VERSION, "system": p.SYSTEM, "state_head": p._STATE_HEAD,
            "state_tail": p._STATE_TAIL, "letters": list(p.LETTERS), "array_version": p.ARRAY_PROMPT_VERSION,
            "array_system": p.ARRAY_SYSTEM, "plain_template": p.PLAIN_TEMPLATE,
            "yes_no": [{"id": o.id, "description": o.description} for o in p.YES_NO]}


def showcase(path: Path = SHOWCASE) -> dict[str, Any]:
    """The page's prefilled decision: the showcase input's state (as the text SemIf's prompts show it), its
    criteria, and the versus criteria's options."""
    try:
        doc = json.loads(path.read_text("utf-8"))
        state, criteria = doc["state"], doc["criteria"]
        rows = [{"id": str(c["id"]), "question": str(c["question"])} for c in criteria]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BuildError(f"{path}: cannot read the live page's showcase input ({exc})") from None
    return {"id": str(doc.get("id", path.stem)), "state": semif_prompt.state_text(state), "criteria": rows,
            "options": ", ".join(f"{o.id}={o.description}" for o in semif_prompt.YES_NO)}
