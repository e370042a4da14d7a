"""Writing the built site: the output directory is replaced, and only when it is empty or a previous build."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from scorer.core.io import make_parent
from scorer.site.inputs import BuildError

SITE_MARKER = ".semif-site"
"""A file the build leaves in its output directory: only a directory holding it is ever emptied."""


def write_site(files: dict[str, bytes], out_dir: Path) -> None:
    """Replace the output directory's contents; refuse a non-empty directory that is not a previous build.

    A symbolic link is followed: the link stays and the directory it names is rebuilt (under the same
    rules); a link to nothing is refused. Refusals are :class:`BuildError` (a file at ``out_dir``, a foreign
    directory: exit 2); a path that cannot be a directory here (a file where a parent folder should be, a
    folder this process may not write) is an ``OSError`` naming the path (an environment fault: exit 1),
    raised before anything of a previous build is removed. The directory itself is kept (its contents are
    replaced), so it may sit in a folder this process cannot write."""
    if out_dir.is_symlink():
        if not out_dir.exists():
            raise BuildError(f"{out_dir}: a symbolic link to {os.readlink(out_dir)}, which does not exist")
        out_dir = out_dir.resolve()
    if out_dir.exists():
        if not out_dir.is_dir():
            raise BuildError(f"{out_dir}: output path exists and is not a directory (expected a directory, new, "
                             f"empty or a previous site build)")
        if not os.access(out_dir, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, f"{os.strerror(errno.EACCES)} (the output directory)", str(out_dir))
        if any(out_dir.iterdir()):
            if not (out_dir / SITE_MARKER).is_file():
                raise BuildError(f"{out_dir}: not empty and not a previous site build (no {SITE_MARKER}); "
                                 "choose an empty or new directory")
            for child in sorted(out_dir.iterdir()):
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()
    else:
        make_parent(out_dir / SITE_MARKER)  # a file in the way: ENOTDIR naming that file
    for rel, data in sorted(files.items()):
        p = out_dir / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
