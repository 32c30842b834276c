"""Run directories: results streamed to disk while a simulation runs (DESIGN §6), so a crash,
SIGKILL, a Newton failure or Ctrl-C keeps every output row computed so far.

A run directory holds

* ``meta.json`` — format tag, names (coordinates, nodes, joints, drives, beam elements), the
  shape and dtype of every per-row field, the drawing topology (flexmb.results.drawing), settings and
  the caller's facts (case, parameters); written once, before the first step;
* ``chunk_00000.npz``, ``chunk_00001.npz``, … — consecutive blocks of output rows (plain
  arrays, no pickle), each written to a temporary name, flushed to disk and renamed
  (``os.replace``: atomic), every ``flush_rows`` rows or ``flush_seconds`` of wall time;
* ``end.json`` — how the run ended (``finished``, ``failed: <reason>``, ``interrupted``) and
  its statistics, written (atomically) when the run stops.

A directory without ``end.json`` belongs to a run that nobody could close (SIGKILL, power
loss, a crashed interpreter): :func:`load_run` then reports ``incomplete: ...`` with the last
time reached. Only whole chunks are ever visible, so the file set is consistent at any
instant; what is lost is at most the rows since the last flush.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time as _time
from pathlib import Path

import numpy as np

from flexmb.errors import ResultFileError
from flexmb.results.result import Result, _jsonable

__all__ = ["RunWriter", "load_run", "is_run_dir", "FORMAT"]

FORMAT = "flexmb-run"
VERSION = 1
ROW_FIELDS = ("t", "q", "u", "udot", "x", "R", "joint_points", "twists", "drive_forces", "reactions",
              "newton_iterations", "element_forces", "element_energy")
_CHUNK = re.compile(r"^chunk_(\d+)\.npz$")


def is_run_dir(path: str | Path) -> bool:
    """True if ``path`` is a directory holding a flexmb run (its ``meta.json`` says so)."""
    meta = Path(path) / "meta.json"
    try:
        return json.loads(meta.read_text()).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _atomic_write(path: Path, write, fsync: bool) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        if fsync:
            os.fsync(f.fileno())
    os.replace(tmp, path)


def _write_json(path: Path, obj: dict, fsync: bool) -> None:
    _atomic_write(path, lambda f: f.write(json.dumps(obj, indent=1, default=_jsonable).encode()), fsync)


def _array_spec(a: np.ndarray) -> dict:
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.ravel().tolist()}


def _array_from_spec(s: dict) -> np.ndarray:
    return np.array(s["data"], dtype=s["dtype"]).reshape(s["shape"])


class RunWriter:
    """Streams output rows of a simulation into the run directory ``path``.

    ``overwrite``: replace an existing *run directory* (one holding a flexmb ``meta.json``);
    any other non-empty directory is never deleted. ``meta``: JSON-able facts stored in
    meta.json (case file, parameters, ...). ``flush_rows``/``flush_seconds``: write a chunk
    after this many rows or this much wall time, whichever comes first. ``fsync``: force each
    chunk to the disk before renaming it (survives power loss, not only a killed process).
    """

    def __init__(self, path: str | Path, overwrite: bool = False, meta: dict | None = None,
                 flush_rows: int = 500, flush_seconds: float = 2.0, fsync: bool = True) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.meta = dict(meta or {})
        self.flush_rows = max(1, int(flush_rows))
        self.flush_seconds = float(flush_seconds)
        self.fsync = fsync
        self._rows: list[dict[str, np.ndarray]] = []
        self._chunk = 0
        self._n_rows = 0
        self._last_t = float("nan")
        self._last_flush = _time.monotonic()
        self._fields: list[str] = []
        self.closed = False
        self.opened = False

    # ------------------------------------------------------------------ life cycle
    def begin(self, result_template: Result, settings: dict) -> None:
        """Create the directory and write meta.json from the names/drawing of an empty result
        of the run (its arrays give the per-row shapes) and the run ``settings``."""
        p = self.path
        if p.exists() and (not p.is_dir() or any(p.iterdir())):
            if not p.is_dir():
                raise FileExistsError(f"'{p}' exists and is not a directory; choose another output path.")
            if not self.overwrite:
                raise FileExistsError(f"output directory '{p}' already exists and is not empty; "
                                      "choose another one or allow overwriting.")
            if not is_run_dir(p):
                raise FileExistsError(f"'{p}' is not empty and holds no flexmb run (no meta.json); "
                                      "flexmb deletes only its own run directories. Choose another output path.")
            shutil.rmtree(p)
        p.mkdir(parents=True, exist_ok=True)
        r = result_template
        self._fields = list(ROW_FIELDS) + [f"energy__{k}" for k in r.energy]
        shapes = {}
        for name in self._fields:
            a = r.energy[name[8:]] if name.startswith("energy__") else getattr(r, name)
            shapes[name] = {"shape": list(a.shape[1:]), "dtype": str(a.dtype)}
        meta = {
            "format": FORMAT, "version": VERSION, "created": _time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "fields": shapes,
            "names": {k: list(getattr(r, k)) for k in ("coordinate_names", "node_names", "joint_names", "driven_names",
                                                        "element_names")},
            "drawing": {k: _array_spec(np.asarray(v)) for k, v in r.drawing.items()},
            "settings": settings, "meta": self.meta,
        }
        _write_json(p / "meta.json", meta, self.fsync)
        self.opened = True

    def append(self, row: dict[str, np.ndarray | float]) -> None:
        """Queue one output row (keys: ROW_FIELDS and ``energy__<term>``); writes a chunk
        when ``flush_rows`` rows are queued or ``flush_seconds`` passed since the last one."""
        self._rows.append({k: np.array(row[k]) for k in self._fields})
        self._last_t = float(row["t"])
        if len(self._rows) >= self.flush_rows or _time.monotonic() - self._last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Write the queued rows as the next chunk (atomic rename)."""
        self._last_flush = _time.monotonic()
        if not self._rows:
            return
        arrays = {k: np.stack([r[k] for r in self._rows]) for k in self._fields}
        _atomic_write(self.path / f"chunk_{self._chunk:05d}.npz", lambda f: np.savez(f, **arrays), self.fsync)
        self._chunk += 1
        self._n_rows += len(self._rows)
        self._rows = []

    def close(self, status: str, stats: dict | None = None) -> None:
        """Write the remaining rows and the end record ``status`` (idempotent)."""
        if self.closed or not self.opened:
            return
        self.flush()
        end = {"status": status, "rows": self._n_rows, "last_time": self._last_t, "chunks": self._chunk,
               "stats": dict(stats or {}), "ended": _time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        _write_json(self.path / "end.json", end, self.fsync)
        self.closed = True


def load_run(path: str | Path) -> Result:
    """Read a run directory into a :class:`~flexmb.results.result.Result` (no pickle). A run with no
    end record gets ``status = "incomplete: ..."`` naming the last time reached."""
    p = Path(path)
    if not is_run_dir(p):
        raise ResultFileError(f"'{p}' is not a flexmb run directory (no meta.json with format '{FORMAT}').")
    meta = json.loads((p / "meta.json").read_text())
    if meta.get("version", 0) > VERSION:
        raise ResultFileError(f"'{p}' was written by a newer flexmb (format version {meta['version']}); update flexmb.")
    chunks = sorted((int(m.group(1)), f) for f in p.iterdir() if (m := _CHUNK.match(f.name)))
    idx = [i for i, _ in chunks]
    if idx != list(range(len(idx))):
        raise ResultFileError(f"'{p}': chunk files {idx[:10]} are not consecutive from 0; a chunk was removed.")
    fields = meta["fields"]
    parts: dict[str, list[np.ndarray]] = {k: [] for k in fields}
    for _, f in chunks:
        try:
            with np.load(f, allow_pickle=False) as z:
                for k in fields:
                    parts[k].append(z[k])
        except (OSError, ValueError, KeyError) as exc:
            raise ResultFileError(f"'{f}' is damaged ({type(exc).__name__}: {exc}).") from None
    data = {k: np.concatenate(parts[k]) if parts[k] else np.zeros([0] + s["shape"], dtype=s["dtype"])
            for k, s in fields.items()}
    t = data["t"]
    end_file = p / "end.json"
    if end_file.exists():
        end = json.loads(end_file.read_text())
        status, stats = end["status"], {k: float(v) for k, v in end.get("stats", {}).items()}
    else:
        last = f"t = {t[-1]:.6g}" if t.size else "no output row"
        status = (f"incomplete: the run wrote no end record (killed or crashed); last time reached {last} "
                  f"after {t.size} output rows")
        stats = {}
    names = meta["names"]
    return Result(
        **{k: data[k] for k in ROW_FIELDS},
        energy={k[8:]: data[k] for k in fields if k.startswith("energy__")},
        coordinate_names=tuple(names["coordinate_names"]), node_names=tuple(names["node_names"]),
        joint_names=tuple(names["joint_names"]), driven_names=tuple(names["driven_names"]),
        element_names=tuple(names["element_names"]), status=status, stats=stats,
        drawing={k: _array_from_spec(v) for k, v in meta["drawing"].items()},
        meta={"settings": meta.get("settings", {}), **meta.get("meta", {})},
    )
