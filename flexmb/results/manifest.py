"""What flexmb wrote into a run folder, so that replacing it (``--overwrite``) removes only that.

A run folder holds ``manifest.json``: the files (paths relative to the folder) that flexmb
wrote there beyond the run format's own files, i.e. ParaView files, plots, ``summary.json``, a
sweep's ``params.json`` and ``row.json``, and the files the case's postprocess wrote. The run
format's own files (``meta.json``, ``end.json``, ``manifest.json``, ``chunk_NNNNN.npz`` and the
``.<name>.tmp`` a killed write leaves) belong to flexmb when the folder has a manifest or its
``meta.json`` says ``"format": "flexmb-run"`` (their ``.tmp`` always: a folder killed while it
was being made). flexmb records a file before it writes it, so a run killed while writing
leaves nothing unrecorded: its own files by name before each write, and the files of code it
runs but did not write (a case's postprocess) through :func:`recording`, which records every
file the process opens for writing inside the folder just before it is opened.

:func:`clear` empties such a folder for a new run: it first lists everything in it (without
following symbolic links), and if anything is not flexmb's (a user's file, a folder flexmb did
not make, a symbolic link) it removes nothing and raises :class:`~flexmb.errors.RunDirError`
naming what it found. A ``meta.json`` that merely claims the format owns nothing else.
Entries of a manifest are data: one with ``..``, an absolute path or a backslash owns nothing.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from flexmb.errors import RunDirError
from flexmb.results.files import write_json

__all__ = ["MANIFEST", "RUN_FORMAT", "record", "recorded", "recording", "foreign_files", "refuse_foreign", "refuse_links",
           "clear", "claims_run_format", "Snapshot"]

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "flexmb-files"
RUN_FORMAT = "flexmb-run"
_FORMAT_FILE = re.compile(r"^(meta\.json|end\.json|manifest\.json|chunk_\d{5,}\.npz)$")
_TMP = re.compile(r"^\.(.+)\.tmp$")
_SHOWN = 8  # foreign files named in the refusal


def claims_run_format(d: str | Path) -> bool:
    """True if ``d/meta.json`` says it is a flexmb run (``"format": "flexmb-run"``)."""
    try:
        meta = json.loads((Path(d) / "meta.json").read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(meta, dict) and meta.get("format") == RUN_FORMAT


def _safe_rel(entry: object) -> str | None:
    """``entry`` as a clean relative POSIX path inside the folder, or None."""
    if not isinstance(entry, str) or not entry or "\\" in entry or "\x00" in entry:
        return None
    p = PurePosixPath(entry)
    if p.is_absolute() or any(part in ("..", ".", "") for part in entry.split("/")):
        return None
    return str(p)


def recorded(d: str | Path) -> set[str] | None:
    """The files the manifest of ``d`` lists (clean relative paths), or None without a valid manifest."""
    try:
        m = json.loads((Path(d) / MANIFEST).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not (isinstance(m, dict) and m.get("format") == MANIFEST_FORMAT and isinstance(m.get("files"), list)):
        return None
    return {r for r in map(_safe_rel, m["files"]) if r is not None}


def record(d: str | Path, paths: Iterable[str | Path] = (), fsync: bool = False) -> None:
    """Add ``paths`` (files flexmb wrote, absolute or relative to ``d``) to the manifest of the
    run folder ``d``, creating it if needed. Paths outside ``d`` are not recorded."""
    d = Path(d)
    files = recorded(d) or set()
    base = Path(os.path.abspath(d))
    for p in paths:
        p = Path(p)
        full = Path(os.path.abspath(p if p.is_absolute() else d / p))
        try:
            rel = full.relative_to(base).as_posix()
        except ValueError:
            continue
        if _safe_rel(rel) is not None:
            files.add(rel)
    write_json(d / MANIFEST, {"format": MANIFEST_FORMAT, "files": sorted(files)}, fsync)


def refuse_links(d: str | Path, paths: Iterable[str | Path]) -> None:
    """RunDirError if one of ``paths`` (files or folders flexmb is about to write; absolute, or
    relative to the working directory), named inside the folder ``d``, would be reached through
    a symbolic link there: the write would land outside the run folder (or where in it flexmb
    did not put it), and replacing a file would replace someone else's. Paths not named inside
    ``d`` are not checked. Call it before writing anything."""
    base = Path(os.path.abspath(d))
    for p in paths:
        full = Path(os.path.abspath(p))
        try:
            rel = full.relative_to(base)
        except ValueError:
            continue
        cur = base
        for part in rel.parts:
            cur = cur / part
            if cur.is_symlink():
                raise RunDirError(f"'{cur}' is a symbolic link (to '{os.readlink(cur)}'): writing '{rel.as_posix()}' of the "
                                  f"run folder '{d}' through it would write '{os.path.realpath(full)}'; nothing was written",
                                  "flexmb writes into a run folder only through its real folders: remove the link, or "
                                  "write elsewhere with --out")


def _owned_names(d: Path) -> tuple[set[str], bool]:
    """(files the manifest lists, whether the run format's own files are flexmb's)."""
    files = recorded(d)
    return (files or set()), files is not None or claims_run_format(d)


def _is_owned(rel: str, files: set[str], format_owned: bool) -> bool:
    if rel in files:
        return True
    head, _, name = rel.rpartition("/")
    if not head and format_owned and _FORMAT_FILE.match(name):
        return True
    m = _TMP.match(name)  # a write of an owned file that was killed before its rename; the format's own
    if not m:             # (.meta.json.tmp, .manifest.json.tmp) also in a folder killed while it was being made
        return False
    return _is_owned(f"{head}/{m.group(1)}" if head else m.group(1), files, format_owned or not head)


def _walk(d: Path) -> tuple[list[str], list[str], list[str]]:
    """(files, folders, other entries: links, devices) under ``d``, relative, no link followed."""
    files: list[str] = []
    dirs: list[str] = []
    other: list[str] = []
    stack = [(d, "")]
    while stack:
        path, rel = stack.pop()
        with os.scandir(path) as it:
            for e in it:
                r = f"{rel}{e.name}"
                if e.is_symlink():
                    other.append(r)
                elif e.is_dir(follow_symlinks=False):
                    dirs.append(r)
                    stack.append((Path(e.path), f"{r}/"))
                elif e.is_file(follow_symlinks=False):
                    files.append(r)
                else:
                    other.append(r)
    return files, dirs, other


def foreign_files(d: str | Path) -> list[str]:
    """Everything in the folder ``d`` that flexmb did not write (relative paths, sorted): files
    neither in its manifest nor of the run format, symbolic links, folders holding no file of
    flexmb's."""
    d = Path(d)
    files, dirs, other = _walk(d)
    listed, format_owned = _owned_names(d)
    foreign = [f for f in files if not _is_owned(f, listed, format_owned)] + other
    for sub in dirs:  # a folder flexmb made holds (or held) a file it recorded
        if not any(f.startswith(f"{sub}/") for f in listed):
            foreign.append(f"{sub}/")
    return sorted(foreign)


def refuse_foreign(d: str | Path, what: str = "output folder") -> None:
    """RunDirError if ``d`` is a symbolic link, not a folder, or holds anything flexmb did not
    write (named in the message); nothing is touched."""
    d = Path(d)
    if d.is_symlink():
        raise RunDirError(f"{what} '{d}' is a symbolic link (to '{os.readlink(d)}'); flexmb replaces only real folders",
                          "give the folder it points to, or another output folder")
    if not d.exists():
        return
    if not d.is_dir():
        raise RunDirError(f"{what} '{d}' exists and is not a folder", "choose another output folder")
    foreign = foreign_files(d)
    if foreign:
        shown = ", ".join(foreign[:_SHOWN]) + (f" and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN else "")
        listed, format_owned = _owned_names(d)
        if listed or format_owned:
            raise RunDirError(f"{what} '{d}' holds files flexmb did not write: {shown}; nothing was removed",
                              "move those files away (flexmb replaces only what it wrote), or choose another folder")
        raise RunDirError(f"{what} '{d}' is not a flexmb run directory (no meta.json with format '{RUN_FORMAT}'); it holds "
                          f"{shown}; nothing was removed", "flexmb replaces only its own run directories: choose another one")


def clear(d: str | Path, what: str = "output folder") -> None:
    """Remove flexmb's files from the folder ``d`` (and the folders they were in); refuse
    (:func:`refuse_foreign`: RunDirError, nothing removed) if ``d`` is a symbolic link or not a
    folder, or holds anything that is not flexmb's. ``what`` names the folder in messages."""
    d = Path(d)
    refuse_foreign(d, what)
    if not d.exists():
        return
    files, dirs, _ = _walk(d)
    for f in sorted(files, key=lambda r: r == MANIFEST):  # the manifest last: a crash leaves it listing the rest
        (d / f).unlink()
    for sub in sorted(dirs, key=lambda r: -r.count("/")):
        (d / sub).rmdir()


class Snapshot:
    """The files under a folder at one moment (path -> (size, mtime_ns)), to record what a step
    (a case's postprocess) wrote: :meth:`changed` lists the files new or changed since."""

    def __init__(self, d: str | Path) -> None:
        self.d = Path(d)
        self.files = self._stat()

    def _stat(self) -> dict[str, tuple[int, int]]:
        if not self.d.is_dir():
            return {}
        out = {}
        for f in _walk(self.d)[0]:
            try:
                st = (self.d / f).stat()
            except OSError:
                continue
            out[f] = (st.st_size, st.st_mtime_ns)
        return out

    def changed(self) -> list[str]:
        """Files new or changed since the snapshot (relative paths)."""
        return sorted(f for f, s in self._stat().items() if self.files.get(f) != s)


# ------------------------------------------------------------------ recording writes as they happen
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_watched: list[tuple[str, str]] = []  # the folders of the active recording() blocks: (absolute path, real path)
_lock = threading.Lock()  # one manifest update at a time (the postprocess may write from threads)
_busy = threading.local()  # set while the hook writes a manifest: its own writes are not recorded
_hook_installed = False


def _written_path(event: str, args: tuple) -> object:
    """The path an audit event is about to write, or None (a read, a file descriptor)."""
    if event == "open":
        path, _mode, flags = args
        return path if isinstance(flags, int) and flags & _WRITE_FLAGS else None
    if event == "os.rename":  # os.rename and os.replace: the destination is written
        return args[1] if args[3] == -1 else None  # relative to a directory descriptor: not followed
    return None


def _inside(folder: tuple[str, str], path: str) -> str | None:
    """``path`` relative to the folder (given as its absolute and its real path), POSIX, or None
    if it is not inside it (compared as given, then with symbolic links resolved)."""
    full = os.path.abspath(path)
    real = os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full))
    for base, p in ((folder[0], full), (folder[1], real)):
        rel = os.path.relpath(p, base)
        if rel not in (".", "..") and not rel.startswith("../"):
            return _safe_rel(Path(rel).as_posix())
    return None


def _audit(event: str, args: tuple) -> None:
    if not _watched or event not in ("open", "os.rename") or getattr(_busy, "on", False):
        return
    path = _written_path(event, args)
    if not isinstance(path, (str, bytes, os.PathLike)):
        return
    try:
        path = os.fsdecode(os.fspath(path))
    except (TypeError, ValueError):
        return
    for folder in list(_watched):
        rel = _inside(folder, path)
        if rel is None or rel in (MANIFEST, f".{MANIFEST}.tmp"):
            continue
        _busy.on = True
        try:
            with _lock:
                if rel not in (recorded(folder[0]) or set()):
                    record(folder[0], [rel])
        finally:
            _busy.on = False


@contextmanager
def recording(d: str | Path) -> Iterator[None]:
    """While the block runs, every file this process (any thread) opens for writing inside the
    run folder ``d``, or renames to a name inside it, is recorded in ``d``'s manifest before it
    is opened, so that a process killed in the middle of the write leaves no file a later
    ``overwrite`` would take for a user's. For code flexmb runs but did not write (a case's
    postprocess): files written through Python's ``open``/``os.open``/``os.replace`` (matplotlib,
    numpy, pathlib, ...). Files written by C libraries without them (e.g. HDF5) are not seen:
    record those after the block (:class:`Snapshot`). Uses a Python audit hook
    (``sys.addaudithook``), installed on first use and idle outside these blocks; a manifest
    that cannot be written makes the open fail with that error."""
    global _hook_installed
    folder = (os.path.abspath(d), os.path.realpath(d))
    with _lock:
        if not _hook_installed:
            sys.addaudithook(_audit)
            _hook_installed = True
        _watched.append(folder)
    try:
        yield
    finally:
        with _lock:
            _watched.remove(folder)
