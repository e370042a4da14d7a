"""Writing the built site: the output directory is replaced, and only when it is empty or a previous build."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from scorer.site.inputs import BuildError

SITE_MARKER = ".semif-site"
"""A file the build leaves in its output directory: only a directory holding it is ever emptied."""


def write_site(files: dict[str, bytes], out_dir: Path) -> None:
    """Replace the output directory's contents; refuse a non-empty directory that is not a previous build.

    A symbolic link is followed: the link stays and the directory it names is rebuilt (under the same
    rules); a link to nothing is refused."""
    if out_dir.is_symlink():
        if not out_dir.exists():
            raise BuildError(f"{out_dir}: a symbolic link to {os.readlink(out_dir)}, which does not exist")
        out_dir = out_dir.resolve()
    if out_dir.exists():
        if not out_dir.is_dir():
            raise BuildError(f"{out_dir}: output path exists and is not a directory")
        if any(out_dir.iterdir()):
            if not (out_dir / SITE_MARKER).is_file():
                raise BuildError(f"{out_dir}: not empty and not a previous site build (no {SITE_MARKER}); "
                                 "choose an empty or new directory")
            shutil.rmtree(out_dir)
    for rel, data in sorted(files.items()):
        p = out_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
