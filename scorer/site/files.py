"""Reading a build's input files: strict JSON (what a browser's ``JSON.parse`` accepts), typed access to its
optional objects, and unique, URL-safe names for the files."""

from __future__ import annotations

import json
import re
from typing import Any

from scorer.site.inputs import BuildError


def load_json(raw: bytes, rel: str) -> Any:
    """A file's bytes as strict JSON: UTF-8, no NaN/Infinity (a browser's JSON.parse would refuse them too);
    a :class:`BuildError` names the file (``rel``) and where it is wrong."""

    def _reject(const: str) -> Any:
        raise BuildError(f"{rel}: non-standard JSON constant {const} (expected null or a finite number)")

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BuildError(f"{rel}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_reject)
    except json.JSONDecodeError as exc:
        raise BuildError(f"{rel}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise BuildError(f"{rel}: JSON nested too deep to read (arrays/objects inside each other thousands of "
                         "levels deep)") from None


def object_at(d: dict[str, Any], key: str) -> dict[str, Any]:
    """``d[key]`` when it is a JSON object, else an empty one (an optional block of a parsed file)."""
    value = d.get(key)
    return value if isinstance(value, dict) else {}


def unique_slug(rel: str, taken: set[str]) -> str:
    """``traces/Qwen 0.5B.json`` → ``qwen-0.5b``; the folder joins in only to tell equal file names apart."""

    def clean(text: str) -> str:
        text = text[:-5] if text.endswith(".json") else text
        return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.") or "file"

    s = clean(rel.rsplit("/", 1)[-1])
    if s in taken:
        s = clean(rel)
    out, n = s, 2
    while out in taken:
        out, n = f"{s}-{n}", n + 1
    taken.add(out)
    return out
