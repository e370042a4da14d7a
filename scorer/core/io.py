"""Create-only outputs, exclusive locks, atomic reports and side-effect-free resume points.

What every SemIf writer promises, in one place:

* **Never overwrite silently.** A new output is created with ``O_CREAT | O_EXCL`` (or, for a whole
  file written at once, hard-linked into place from a temporary file), so two runs racing for one path
  cannot both win; :func:`refuse_overwrite` is the one message for a refusal.
* **One writer per output.** A records output (:class:`RecordsOutput`) is held under an exclusive,
  non-blocking ``flock`` on the output file itself for the whole run, taken *before* any model loads.
  The lock lives on the open file description, so the kernel drops it when the process dies (SIGKILL
  included): no stale lock file survives a crash and nothing needs cleaning (a sidecar ``.lock`` file
  would be left behind by a kill, and removing one on exit lets two runs lock two different files
  under one name). A second writer, or a
  ``--resume`` of a live run, is refused at once. The lock is advisory: tools that do not take it
  (an editor, ``cat >``) are not stopped.
* **Resume without damage.** :func:`read_resume` only reads; the torn tail of a killed run is cut
  (:meth:`RecordsOutput.accept`) only after the caller has checked that the complete lines belong to
  the run being resumed, and only once the first new record is written. A file whose unterminated
  last line is not the start of a record is refused untouched.
* **Reports appear whole.** :func:`write_atomic` writes a temporary file in the target's folder, then
  renames (``--force``) or hard-links (create-only) it into place: readers see the old file or the
  new one, never half of one.

Records survive a killed process (every record is handed to the kernel before the next is computed);
they are fsynced once when a run ends, not per record, so a power cut may lose the last records.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from scorer.core.errors import OutputError, OutputExistsError, OutputLockedError

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
_REOPEN = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)

FORCE_HINT = "pass --force, or choose another --output"
"""The refusal's hint for a command whose ``--force`` overwrites its output."""


def refuse_overwrite(path: Path | str, hint: str = "choose another --output") -> OutputExistsError:
    """The one "refusing to overwrite" error (exit 2); ``hint`` says how to proceed."""
    return OutputExistsError(f"{path} exists; refusing to overwrite it ({hint})")


def os_error_text(exc: OSError) -> str:
    """A one-line description of an environment fault: the errno text and the path(s) involved."""
    what = exc.strerror or str(exc) or type(exc).__name__
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{what}: {' -> '.join(paths)}" if paths else what


def check_writable(path: Path, overwrite: bool = False, hint: str = "choose another --output") -> None:
    """Refuse (exit 2) an output that is a directory, or that exists when ``overwrite`` is not set; and
    raise the ``OSError`` (exit 1) that writing it would meet in its folder (:func:`check_folder`: a file
    where one of its folders should be, ``NotADirectoryError`` naming that file; a read-only folder).

    A command calls this for every output before it computes or prints anything, so a refusal leaves
    every output as it was and costs no work; the writers themselves stay create-only, so a file that
    appears in between is still not overwritten.
    """
    if path.is_dir():
        raise OutputError(f"{path} is a directory (expected a file path for the output)")
    if path.exists() and not overwrite:
        raise refuse_overwrite(path, hint)
    check_folder(path)


def check_folder(path: Path) -> None:
    """Raise the ``OSError`` that creating ``path`` would meet in its folder, before any work is done: a file
    in the way of one of its folders (``NotADirectoryError`` naming that file), or a folder where no file
    may be created (read-only, forbidden: the error names ``path``).

    The folder, or where it does not exist yet its nearest existing ancestor (where the writer will
    create it), gets a probe file created exclusively and removed at once: unlike permission bits or
    ``os.access`` this agrees with the kernel for root, ACLs and read-only mounts alike.
    """
    blocker = _blocker(path)
    if blocker is not None:  # found now, before any output is written, not when this one is
        raise _in_the_way(blocker)
    folder = path.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    probe = folder / f".{path.name[:64]}.{os.getpid()}.{os.urandom(4).hex()}.probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, str(path)) from None
    probe.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes, overwrite: bool = False, hint: str = "choose another --output") -> None:
    """Write ``data`` to ``path`` all at once: readers see either no file, the old one or the new one.

    Without ``overwrite`` the file must not exist (checked atomically by hard-linking the temporary
    file into place, so a racing writer cannot be clobbered); ``hint`` completes the refusal message.
    """
    check_writable(path, overwrite, hint)
    make_parent(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        if overwrite:
            os.replace(tmp, path)
        else:
            _link_new(tmp, path, hint)
    finally:
        tmp.unlink(missing_ok=True)


def _link_new(tmp: Path, path: Path, hint: str) -> None:
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise refuse_overwrite(path, hint) from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        # A file system without hard links: fall back to an exclusive create, then a rename over it.
        try:
            os.close(os.open(path, _CREATE, 0o666))
        except FileExistsError:
            raise refuse_overwrite(path, hint) from None
        os.replace(tmp, path)


def make_parent(path: Path) -> None:
    """Create ``path``'s parent folders; a file in the way is reported as ``ENOTDIR`` naming that file
    (``mkdir`` alone says "File exists", which reads as if the output itself existed)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _in_the_way(_blocker(path) or path.parent) from None


def _blocker(path: Path) -> Path | None:
    """The first of ``path``'s parent folders that exists and is not a directory (None when there is none)."""
    return next((p for p in reversed((path.parent, *path.parent.parents)) if p.exists() and not p.is_dir()), None)


def _in_the_way(blocker: Path) -> NotADirectoryError:
    return NotADirectoryError(errno.ENOTDIR, f"{os.strerror(errno.ENOTDIR)} (a file is in the way of the output's "
                              "folder)", str(blocker))


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (``os.umask`` can only set it, and
    setting it briefly would affect files other threads create meanwhile)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0)
    os.umask(mask)
    return mask


@dataclass(frozen=True)
class ResumePoint:
    """What an existing output holds, read without changing it."""

    lines: list[bytes]
    """The complete (newline-terminated) lines, without their newlines, in file order."""
    complete_bytes: int
    """Size of the complete lines; a resumed run continues from this offset."""
    torn: bytes
    """The unterminated last line of a killed run (empty when the file ends with a newline)."""


def read_resume(data: bytes, path: Path | str, line_prefix: bytes) -> ResumePoint:
    """Split an output's bytes into complete lines and a torn tail, refusing a file that is not ours.

    A torn tail is accepted only if it could be the start of a line this writer writes (it is a prefix
    of ``line_prefix`` or starts with it); anything else (say, a notes file without a final newline)
    raises :class:`OutputError` and nothing is changed. Only ``\\n`` ends a line.
    """
    cut = data.rfind(b"\n") + 1
    torn = data[cut:]
    if torn and not (torn.startswith(line_prefix) or line_prefix.startswith(torn)):
        lineno = data.count(b"\n", 0, cut) + 1
        raise OutputError(f"{path}:{lineno}: the last line is unterminated and is not the start of a record "
                          "(not an output of this command?); refusing to resume into it, nothing was changed")
    lines = data[:cut].split(b"\n")[:-1] if cut else []
    return ResumePoint(lines, cut, torn)


class RecordsOutput:
    """A JSONL output held exclusively (``flock``) from before the model loads until the run ends.

    Open it with :meth:`create` (a new file; refuses an existing one) or :meth:`resume` (an existing
    file, or a new one if there is none). Use as a context manager: on an unsuccessful exit an output
    that this run created and left empty is removed again, so an interrupted or refused run leaves
    nothing behind that would block a plain rerun.
    """

    def __init__(self, path: Path, fd: int, created: bool):
        self.path = path
        """Where the records go."""
        self.created = created
        """True when this run created the file (so it may remove it again while still empty)."""
        self.records = 0
        """Complete records in the file: those kept from a resumed run plus those written since."""
        self.removed = False
        """True once :meth:`close` removed an empty file this run created."""
        self._fd: int | None = fd
        self._size = os.fstat(fd).st_size
        self._pending_cut = False

    # --- opening -----------------------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, hint: str = "pass --resume to continue that run, or choose another --output"
               ) -> RecordsOutput:
        """Create ``path`` (and its parent folders) exclusively and lock it; refuse if it exists."""
        _check_target(path)
        make_parent(path)
        try:
            fd = os.open(path, _CREATE, 0o666)
        except FileExistsError:
            if path.is_dir():
                _check_target(path)
            raise refuse_overwrite(path, hint) from None
        return cls(path, _lock(fd, path, created=True), True)

    @classmethod
    def resume(cls, path: Path) -> RecordsOutput:
        """Open ``path`` to continue it (creating it if absent) and lock it. Nothing is changed yet."""
        _check_target(path)
        make_parent(path)
        try:
            fd = os.open(path, _REOPEN)
        except FileNotFoundError:
            return cls.create(path)
        except IsADirectoryError:
            _check_target(path)
            raise
        return cls(path, _lock(fd, path, created=False), False)

    # --- reading and writing -------------------------------------------------------------------------------
    def read(self) -> bytes:
        """The file's current bytes (read through the locked descriptor; nothing is changed)."""
        fd = self._require()
        size = os.fstat(fd).st_size
        chunks, off = [], 0
        while off < size:
            b = os.pread(fd, min(1 << 24, size - off), off)
            if not b:
                break
            chunks.append(b)
            off += len(b)
        return b"".join(chunks)

    def count_kept(self, point: ResumePoint) -> None:
        """Count ``point``'s complete lines as the records this file keeps, before they are accepted: the
        caller has checked their structure (records of this input, in order) but not yet the configuration
        (which needs the loaded model). An interruption in between (a SIGTERM during the model load) then
        says what the file holds. Nothing is changed on disk; :meth:`accept` sets the count again."""
        self._require()
        self.records = len(point.lines)

    def accept(self, point: ResumePoint) -> None:
        """Continue after ``point``'s complete lines (the caller has checked they belong to this run).

        A torn tail is cut only when the first new record is written or the run ends well, so a run
        that fails before writing anything leaves the file exactly as it found it.
        """
        self._require()
        self.records = len(point.lines)
        self._size = point.complete_bytes
        self._pending_cut = bool(point.torn)

    def _cut(self, fd: int) -> None:
        if self._pending_cut:
            os.ftruncate(fd, self._size)
            self._pending_cut = False

    def write_line(self, line: bytes) -> None:
        """Append one complete line (ending in ``\\n``), handed to the kernel before returning.

        If the write fails (disk full, an interrupt between partial writes), the file is cut back to
        its last complete line before the error propagates, so what is left is a valid resume point.
        """
        fd = self._require()
        self._cut(fd)
        view = memoryview(line)
        try:
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except BaseException as exc:
            if isinstance(exc, OSError) and exc.filename is None:
                exc.filename = str(self.path)  # os.write names no file; the message should
            # If even the cut fails, the original error says more; --resume cuts a torn tail anyway.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, self._size)
            raise
        self._size += len(line)
        self.records += 1

    # --- closing -------------------------------------------------------------------------------------------
    def close(self, ok: bool) -> None:
        """Release the lock. ``ok``: fsync the records. Otherwise remove the file if this run created it
        and it is still empty (checked to be the very file this run holds)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if ok:
                self._cut(fd)
                os.fsync(fd)
            elif self.created and os.fstat(fd).st_size == 0 and _same_file(fd, self.path):
                self.path.unlink()
                self.removed = True
        finally:
            os.close(fd)  # drops the flock

    def kept_note(self, total: int | None = None) -> str:
        """One phrase saying what the output holds now, for an interrupted or failed run."""
        if self.removed:
            return f"no record was written; removed the empty {self.path}"
        of = f" of {total}" if total is not None else ""
        return f"{self.records}{of} records kept in {self.path} (rerun with --resume to continue)"

    def __enter__(self) -> RecordsOutput:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close(ok=et is None)

    def _require(self) -> int:
        if self._fd is None:
            raise ValueError(f"{self.path}: output already closed")
        return self._fd


def _check_target(path: Path) -> None:
    if path.is_dir():
        raise OutputError(f"{path} is a directory (expected a file path for the records)")


def _lock(fd: int, path: Path, created: bool) -> int:
    """Take the exclusive lock on ``fd`` without waiting, or close ``fd`` and refuse: another process holds
    the lock, the path no longer names this file (removed or replaced meanwhile), or the file system
    cannot lock (an environment fault). A file this run ``created`` is removed again unless another run
    holds it."""
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputLockedError(f"{path} is being written by another semif run (it holds the file's lock); "
                                    "refusing to write to it (wait for that run to end, then --resume)") from None
        except OSError as exc:
            raise OSError(exc.errno, f"{exc.strerror or exc} (taking the output's lock)", str(path)) from None
        if not _same_file(fd, path):
            raise OutputLockedError(f"{path} was removed or replaced while this run opened it; refusing to write "
                                    "to it (is another run using the same --output?)")
    except OutputLockedError:
        os.close(fd)
        raise
    except BaseException:
        if created and _same_file(fd, path) and os.fstat(fd).st_size == 0:
            path.unlink()
        os.close(fd)
        raise
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
