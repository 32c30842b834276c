"""Writing files safely: the only copies of flexmb's atomic write and JSON helpers.

A file is written to a temporary name beside it (``.<name>.tmp``), flushed (and, with
``fsync``, forced to the disk) and renamed over the target (``os.replace``: atomic on POSIX), so
a reader sees the old file or the new one, never half of one, whatever kills the writer.

A write the disk or the file system refuses (full, over quota, read-only, not permitted:
:data:`DISK_ERRNOS`) is the user's environment, not a fault of flexmb: :func:`naming` makes
such an OSError name the file it was writing, :func:`disk_problem` says what it means and what
to do (the command line reports it so, flexmb.app.cli).
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["atomic_write", "write_json", "write_text", "jsonable", "json_normal", "tmp_name", "DISK_ERRNOS", "naming",
           "disk_problem"]

DISK_ERRNOS = {errno.ENOSPC: ("the disk holding {} is full", "free space on that disk, or write to another folder (--out DIR); "
                              "then run the command again"),
               errno.EDQUOT: ("the disk quota is used up, writing {}", "remove files of yours, or write to another folder "
                              "(--out DIR); then run the command again"),
               errno.EROFS: ("{} is on a read-only file system", "write to another folder (--out DIR)"),
               errno.EACCES: ("permission denied: {}", "check the permissions of that file and its folder, or write to "
                              "another folder (--out DIR)")}
"""The errnos of an OSError that is the environment refusing a write: (message, hint) of each."""


def tmp_name(path: Path) -> Path:
    """The temporary file a write of ``path`` goes through (``.<name>.tmp`` beside it)."""
    return path.with_name(f".{path.name}.tmp")


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], Any], fsync: bool = False) -> Path:
    """Write ``path`` atomically: ``write(f)`` fills a binary temporary file that then replaces
    ``path``. ``fsync``: force the data to the disk before the rename (survives power loss, not
    only a killed process)."""
    path = Path(path)
    tmp = tmp_name(path)
    try:
        with naming(path, tmp):
            with open(tmp, "wb") as f:
                write(f)
                f.flush()
                if fsync:
                    os.fsync(f.fileno())
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


@contextmanager
def naming(path: str | Path, *aliases: str | Path) -> Iterator[None]:
    """An OSError of :data:`DISK_ERRNOS` raised in the block names ``path`` (the file being
    written) if it names no file or one of ``aliases`` (e.g. the temporary file of an atomic
    write); a full disk often fails a write or a close, which name none."""
    try:
        yield
    except OSError as exc:
        if exc.errno in DISK_ERRNOS and (exc.filename is None or str(exc.filename) in map(str, aliases)):
            exc.filename = str(path)
        raise


def disk_problem(exc: BaseException) -> tuple[str, str] | None:
    """(message, hint) if ``exc`` is an OSError of :data:`DISK_ERRNOS` (the disk or the file
    system refused a write), naming its file; None for any other exception."""
    if not isinstance(exc, OSError) or exc.errno not in DISK_ERRNOS:
        return None
    what, hint = DISK_ERRNOS[exc.errno]
    where = f"'{exc.filename}'" if exc.filename is not None else "a file flexmb was writing"
    return f"{what.format(where)} ({exc.strerror or os.strerror(exc.errno)})", hint


def write_text(path: str | Path, text: str, fsync: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")), fsync)


def write_json(path: str | Path, obj: Any, fsync: bool = False) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically (numpy values through :func:`jsonable`)."""
    return write_text(path, json.dumps(obj, indent=1, default=jsonable), fsync)


def jsonable(v: Any) -> Any:
    """JSON fallback (``json.dumps(default=jsonable)``): numpy scalars as numbers, numpy arrays
    as lists, anything else as its text."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def json_normal(obj: Any) -> Any:
    """``obj`` as it reads back from JSON (tuples -> lists, numpy scalars -> numbers)."""
    return json.loads(json.dumps(obj, default=jsonable))
