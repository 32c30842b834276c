"""Writing files safely: the only copies of flexmb's atomic write and JSON helpers.

A file is written to a temporary name beside it (``.<name>.tmp``), flushed (and, with
``fsync``, forced to the disk) and renamed over the target (``os.replace``: atomic on POSIX), so
a reader sees the old file or the new one, never half of one, whatever kills the writer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["atomic_write", "write_json", "write_text", "jsonable", "json_normal", "tmp_name"]


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
