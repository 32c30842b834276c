"""Run directories: results streamed to disk while a simulation runs, so a crash,
SIGKILL, a Newton failure or Ctrl-C keeps every output row computed so far.

A run directory holds

* ``meta.json`` — format tag, names (coordinates, nodes, joints, drives, beam elements, cuts), the
  shape and dtype of every per-row field, the drawing topology (flexmb.results.drawing), settings and
  the caller's facts (case, parameters); written once, before the first step;
* ``chunk_00000.npz``, ``chunk_00001.npz``, … — consecutive blocks of output rows (plain
  arrays, no pickle) and the step history since the previous chunk (``steps__t``,
  ``steps__h``, … : one entry per step attempt, flexmb.results.checks.STEP_COLUMNS), each
  written to a temporary name, flushed to disk and renamed (``os.replace``: atomic), every
  ``flush_rows`` rows or ``flush_seconds`` of wall time (the recorder also bounds a chunk's
  bytes, flexmb.solvers.recorder);
* ``end.json`` — how the run ended (``finished``, ``stopped: <reason>``, ``failed: <reason>``,
  ``interrupted``), the numbers of rows and chunks written and the statistics, written
  (atomically) when the run stops;
* ``manifest.json`` — the other files flexmb wrote into the folder (flexmb.results.manifest),
  so that ``overwrite`` removes only those.

A directory without ``end.json`` belongs to a run that nobody could close (SIGKILL, power
loss, a crashed interpreter): :func:`load_run` then reports ``incomplete: ...`` with the last
time reached. Only whole chunks are ever visible, so the file set is consistent at any
instant; what is lost is at most the rows since the last flush. A run whose last chunks are
gone (a copy cut short) loads with status ``incomplete: ...`` naming the missing chunks and
the last time present.

:func:`load_run` trusts nothing it reads: ``meta.json`` and ``end.json`` are checked field by
field, every chunk's arrays against the shapes ``meta.json`` declares and against the file's
real size before anything is allocated (flexmb.results.npz), and the whole against
``end.json``, the output times finite and increasing from chunk to chunk; whatever does not
fit gives a ResultFileError naming the file and what is wrong (for the times: the first bad row).
It reads only the chunks' headers and output times: the Result it returns reads each per-row
array when first used, and a window of it only the chunks that hold its rows
(:class:`RunDirSource`), so loading a long run costs memory for what is used only.
"""

from __future__ import annotations

import json
import math
import re
import time as _time
from pathlib import Path
from typing import Any

import numpy as np

from flexmb.errors import ResultFileError, RunDirError
from flexmb.results import manifest
from flexmb.results.checks import STEP_COLUMNS, check_result, names_problem, row_shapes, steps_problem, times_problem
from flexmb.results.files import atomic_write, write_json
from flexmb.results.manifest import RUN_FORMAT as FORMAT
from flexmb.results.npz import NAME_FIELDS, ROW_FIELDS, ArraySpec, read_arrays, read_headers
from flexmb.results.result import Result

__all__ = ["RunWriter", "RunDirSource", "load_run", "is_run_dir", "FORMAT", "VERSION"]

VERSION = 1
_CHUNK = re.compile(r"^chunk_(\d+)\.npz$")
_DTYPES = ("float64", "int64")  # what a run directory's per-row arrays are written as
# absent from runs written before flexmb recorded cut forces, spring-dampers, couplings or joint forces of the motion
_LATER = ("cut_forces", "cut_forces_global", "cut_names", "spring_dampers", "spring_damper_names", "couplings",
          "coupling_names", "joint_forces", "joint_force_names", "motion_loads", "motion_load_names")


def is_run_dir(path: str | Path) -> bool:
    """True if ``path`` is a directory whose ``meta.json`` says it holds a flexmb run (which
    says nothing of the other files in it: see flexmb.results.manifest)."""
    return manifest.claims_run_format(path)


def _array_spec(a: np.ndarray) -> dict:
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.ravel().tolist()}


class RunWriter:
    """Streams output rows of a simulation into the run directory ``path``.

    ``overwrite``: replace an existing run directory, removing only the files flexmb wrote
    there (flexmb.results.manifest.clear); a folder holding anything else, or a symbolic link,
    is refused (RunDirError) with nothing removed. ``meta``: JSON-able facts stored in
    meta.json (case file, parameters, ...). ``flush_rows``/``flush_seconds``: write a chunk
    after this many rows or this much wall time, whichever comes first (:meth:`due`; the
    writer holds no rows itself: the recorder queues them in its own block and hands a block
    to :meth:`write_chunk`). ``fsync``: force each chunk to the disk before renaming it
    (survives power loss, not only a killed process).
    """

    def __init__(self, path: str | Path, overwrite: bool = False, meta: dict | None = None,
                 flush_rows: int = 500, flush_seconds: float = 2.0, fsync: bool = True) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.meta = dict(meta or {})
        self.flush_rows = max(1, int(flush_rows))
        self.flush_seconds = float(flush_seconds)
        self.fsync = fsync
        self._chunk = 0
        self._n_rows = 0
        self._last_t = float("nan")
        self._last_flush = _time.monotonic()
        self._fields: list[str] = []
        self.closed = False
        self.opened = False

    # ------------------------------------------------------------------ life cycle
    def check(self) -> None:
        """Refuse (RunDirError, nothing touched) an output path this writer may not use: a
        symbolic link, a file, a non-empty folder without ``overwrite``, or with it a folder
        holding files flexmb did not write. Called by :meth:`begin`; call it earlier to refuse
        before any work is done."""
        p = self.path
        if p.is_symlink():
            raise RunDirError(f"output directory '{p}' is a symbolic link (to '{p.readlink()}'); flexmb writes runs only "
                              "into real folders", "give the folder it points to (--out TARGET), or another one")
        if not p.exists():
            return
        if not p.is_dir():
            raise RunDirError(f"'{p}' exists and is not a directory", "choose another output path")
        if not any(p.iterdir()):
            return
        if not self.overwrite:
            raise RunDirError(f"output directory '{p}' already exists and is not empty",
                              "pass --overwrite (overwrite=True) to replace a run there, or choose another one")
        manifest.refuse_foreign(p, "output directory")

    def begin(self, result_template: Result, settings: dict) -> None:
        """Create the directory and write meta.json from the names/drawing of an empty result
        of the run (its arrays give the per-row shapes) and the run ``settings``."""
        p = self.path
        self.check()
        if self.overwrite:
            manifest.clear(p, "output directory")
        p.mkdir(parents=True, exist_ok=True)
        r = result_template
        self._fields = list(ROW_FIELDS) + [f"energy__{k}" for k in r.energy]
        shapes = {}
        for name in self._fields:
            a = r.energy[name[8:]] if name.startswith("energy__") else getattr(r, name)
            shapes[name] = {"shape": list(a.shape[1:]), "dtype": str(a.dtype)}
        meta = {
            "format": FORMAT, "version": VERSION, "created": _time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "fields": shapes, "steps": dict(STEP_COLUMNS),
            "names": {k: list(getattr(r, k)) for k in NAME_FIELDS},
            "drawing": {k: _array_spec(np.asarray(v)) for k, v in r.drawing.items()},
            "settings": settings, "meta": self.meta,
        }
        manifest.record(p, (), self.fsync)
        write_json(p / "meta.json", meta, self.fsync)
        self.opened = True

    def due(self, queued_rows: int) -> bool:
        """Whether ``queued_rows`` rows make a chunk now (``flush_rows`` rows, or ``flush_seconds``
        since the last chunk)."""
        return queued_rows >= self.flush_rows or _time.monotonic() - self._last_flush >= self.flush_seconds

    def write_chunk(self, rows: dict[str, np.ndarray], steps: dict[str, np.ndarray] | None = None) -> None:
        """Write the next chunk (atomic rename): ``rows``, one array (n, ...) per field of
        meta.json (views into the recorder's block are written without copying them whole), and
        the step history since the last chunk (columns of STEP_COLUMNS; empty if None)."""
        self._last_flush = _time.monotonic()
        n = int(rows["t"].shape[0])
        steps = steps if steps is not None else {k: np.zeros(0, dtype=d) for k, d in STEP_COLUMNS.items()}
        if n == 0 and not steps["t"].size:
            return
        arrays = {k: rows[k] for k in self._fields}
        arrays.update({f"steps__{k}": np.asarray(steps[k], dtype=d) for k, d in STEP_COLUMNS.items()})
        atomic_write(self.path / f"chunk_{self._chunk:05d}.npz", lambda f: np.savez(f, **arrays), self.fsync)
        self._chunk += 1
        self._n_rows += n
        if n:
            self._last_t = float(rows["t"][-1])

    def close(self, status: str, stats: dict | None = None, extra: dict | None = None) -> None:
        """Write the end record ``status`` (idempotent; the recorder writes its last chunk first).
        ``extra``: further JSON-able facts for end.json (e.g. the relaxed start)."""
        if self.closed or not self.opened:
            return
        end = {"status": status, "rows": self._n_rows, "last_time": self._last_t, "chunks": self._chunk,
               "stats": dict(stats or {}), "ended": _time.strftime("%Y-%m-%dT%H:%M:%S%z"), **(extra or {})}
        write_json(self.path / "end.json", end, self.fsync)
        self.closed = True


# ---------------------------------------------------------------------------------- reading
def _bad(f: Path, what: str) -> ResultFileError:
    return ResultFileError(f"'{f}' is damaged: {what}",
                           "the file was cut short or changed after flexmb wrote it; run the case again")


def _json_file(f: Path) -> Any:
    try:
        text = f.read_text(encoding="utf-8")
    except OSError as exc:
        raise ResultFileError(f"'{f}' cannot be read: {exc.strerror}", "check the file's permissions") from None
    except UnicodeDecodeError:
        raise _bad(f, "it is not text") from None
    if not text.strip():
        raise _bad(f, "it is empty")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _bad(f, f"it is not JSON ({exc})") from None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _read_meta(p: Path) -> dict:
    """meta.json, checked: format, version, fields, names, drawing, settings, meta."""
    f = p / "meta.json"
    meta = _json_file(f)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ResultFileError(f"'{p}' is not a flexmb run directory (no meta.json with format '{FORMAT}').")
    v = meta.get("version")
    if not _is_int(v) or v < 1:
        raise _bad(f, f"'version' is {v!r}, not a format version number")
    if v > VERSION:
        raise ResultFileError(f"'{p}' was written by a newer flexmb (format version {v}); update flexmb.",
                              "pip install -U flexmb")
    names = meta.get("names")
    if not isinstance(names, dict) or any(k not in names for k in NAME_FIELDS if k not in _LATER):
        raise _bad(f, f"'names' must hold {', '.join(NAME_FIELDS)}")
    for k in _LATER:  # written by an older flexmb: none of these
        if k in NAME_FIELDS:
            names.setdefault(k, [])
    bad = names_problem(names)
    if bad:
        raise _bad(f, bad)
    fields = meta.get("fields")
    if not isinstance(fields, dict):
        raise _bad(f, "'fields' (the per-row arrays and their shapes) is missing")
    expect = row_shapes(*(len(names[k]) for k in NAME_FIELDS))
    for k in (*ROW_FIELDS, *(f"energy__{e}" for e in ("kinetic", "potential", "dissipated", "drive_work", "load_work"))):
        if k not in fields and k not in _LATER:
            raise _bad(f, f"'fields' lacks '{k}'")
    for k, spec in fields.items():
        if not (isinstance(k, str) and (k in ROW_FIELDS or k.startswith("energy__"))):
            raise _bad(f, f"'fields' holds an unknown field '{k}'")
        if not (isinstance(spec, dict) and spec.get("dtype") in _DTYPES and isinstance(spec.get("shape"), list)
                and all(_is_int(n) and n >= 0 for n in spec["shape"])):
            raise _bad(f, f"field '{k}' is not declared as {{'shape': [n, ...], 'dtype': {' or '.join(_DTYPES)}}}")
        want = expect.get(k, ())
        if tuple(spec["shape"]) != want:
            raise _bad(f, f"field '{k}' is declared with rows of shape {tuple(spec['shape'])}, its names give {want}")
    drawing = meta.get("drawing", {})
    if not isinstance(drawing, dict):
        raise _bad(f, "'drawing' is not an object")
    meta["drawing"] = {k: _drawing_array(f, k, s) for k, s in drawing.items()}
    for k in ("settings", "meta"):
        if not isinstance(meta.get(k, {}), dict):
            raise _bad(f, f"'{k}' is not an object")
    steps = meta.get("steps", {})  # absent from runs written before the step history was recorded
    if steps and steps != STEP_COLUMNS:
        raise _bad(f, f"'steps' declares the step history as {steps!r}, not {STEP_COLUMNS!r}")
    return meta


def _drawing_array(f: Path, key: str, s: Any) -> np.ndarray:
    if not (isinstance(s, dict) and s.get("dtype") in _DTYPES and isinstance(s.get("shape"), list)
            and all(_is_int(n) and n >= 0 for n in s["shape"]) and isinstance(s.get("data"), list)):
        raise _bad(f, f"drawing array '{key}' is not {{'dtype': {' or '.join(_DTYPES)}, 'shape': [...], 'data': [...]}}")
    n = math.prod(s["shape"])
    if len(s["data"]) != n:
        raise _bad(f, f"drawing array '{key}' has {len(s['data'])} values for its shape {tuple(s['shape'])}")
    num = (int, float) if s["dtype"] == "float64" else (int,)
    if not all(isinstance(x, num) and not isinstance(x, bool) for x in s["data"]):
        raise _bad(f, f"drawing array '{key}' holds values that are not {'numbers' if len(num) == 2 else 'integers'}")
    try:
        return np.array(s["data"], dtype=s["dtype"]).reshape(s["shape"])
    except (OverflowError, ValueError) as exc:
        raise _bad(f, f"drawing array '{key}': {exc}") from None


def _read_end(f: Path) -> dict:
    """end.json, checked: status (text), rows and chunks (counts), stats (numbers)."""
    end = _json_file(f)
    if not isinstance(end, dict):
        raise _bad(f, "it is not a JSON object")
    if not isinstance(end.get("status"), str) or not end["status"]:
        raise _bad(f, "it has no 'status' (how the run ended)")
    for k in ("rows", "chunks"):
        if k in end and not (_is_int(end[k]) and end[k] >= 0):
            raise _bad(f, f"'{k}' is {end[k]!r}, not a count")
    stats = end.get("stats", {})
    if not isinstance(stats, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                              for v in stats.values()):
        raise _bad(f, "'stats' are not numbers")
    end["stats"] = {str(k): float(v) for k, v in stats.items()}
    return end


class RunDirSource:
    """The chunks of a run directory, checked (:func:`load_run`), read field by field and only
    where a lazy Result's rows lie (flexmb.results.result.RowSource)."""

    def __init__(self, path: Path, files: list[Path], starts: np.ndarray, fields: dict, steps: bool) -> None:
        self.path = path
        self.files = files
        self.starts = starts  # first row of each chunk, and the row count at the end
        self.specs = fields
        self.row_fields = tuple(k for k in fields if k != "t")
        self.step_fields = tuple(f"steps__{k}" for k in STEP_COLUMNS) if steps else ()

    def _member(self, k: int, name: str) -> np.ndarray:
        f = self.files[k]
        if not f.is_file():
            raise ResultFileError(f"'{f}' is gone: the run directory changed after it was loaded (a lazy result "
                                  "reads its rows when they are first used)",
                                  "load it again, or read the fields you need at once: flexmb.load(path, fields=[...])")
        a = read_arrays(f, stored_only=True, names=[name]).get(name)
        if a is None:
            raise _bad(f, f"it has no array '{name}' (the file changed after the run was loaded)")
        return a

    def read(self, name: str, lo: int, hi: int) -> np.ndarray:
        s = self.specs[name]
        parts = []
        k0 = max(int(np.searchsorted(self.starts, lo, side="right")) - 1, 0)
        for k in range(k0, len(self.files)):
            c0, c1 = int(self.starts[k]), int(self.starts[k + 1])
            if c0 >= hi:
                break
            if c1 <= lo:
                continue
            a = self._member(k, name)
            if a.shape != (c1 - c0, *s["shape"]) or a.dtype != np.dtype(s["dtype"]):
                raise _bad(self.files[k], f"array '{name}' is {a.dtype} {a.shape}, not what it was when the run was "
                           "loaded (the file changed since)")
            parts.append(a[max(lo, c0) - c0:min(hi, c1) - c0])
        if not parts:
            return np.zeros((0, *s["shape"]), dtype=s["dtype"])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def read_steps(self, t0: float, t1: float) -> dict[str, np.ndarray]:
        out: dict[str, list[np.ndarray]] = {k: [] for k in STEP_COLUMNS}
        for k in range(len(self.files)):
            ts = self._member(k, "steps__t")
            keep = (ts >= t0) & (ts <= t1)
            if not keep.any():
                continue
            for c in STEP_COLUMNS:
                a = ts if c == "t" else self._member(k, f"steps__{c}")
                if a.shape != ts.shape:
                    raise _bad(self.files[k], f"array 'steps__{c}' has {a.shape[0]} entries, 'steps__t' has {ts.size}")
                out[c].append(a[keep])
        return {c: np.concatenate(v) if v else np.zeros(0, dtype=STEP_COLUMNS[c]) for c, v in out.items()}


def _chunk_rows(f: Path, fields: dict, steps: bool) -> int:
    """The number of rows of chunk ``f``, after checking every array's header (declared shape and
    dtype, bytes held; nothing is read) against meta.json's declaration."""
    heads = read_headers(f, stored_only=True)
    n = None
    for k, s in fields.items():
        a = heads.get(k)
        if a is None:
            raise _bad(f, f"it has no array '{k}'")
        if a.dtype != np.dtype(s["dtype"]) or a.shape[1:] != tuple(s["shape"]) or a.ndim != len(s["shape"]) + 1:
            raise _bad(f, f"array '{k}' is {a.dtype} of shape {a.shape}, meta.json declares rows of "
                       f"{tuple(s['shape'])} {s['dtype']}")
        if n is None:
            n = a.shape[0]
        elif a.shape[0] != n:
            raise _bad(f, f"array '{k}' has {a.shape[0]} rows, 't' has {n}")
    if steps:
        bad = steps_problem({k: heads.get(f"steps__{k}") for k in STEP_COLUMNS}, "steps__")
        if bad:
            raise _bad(f, bad)
    return int(n or 0)


def load_run(path: str | Path) -> Result:
    """Read a run directory into a lazy :class:`~flexmb.results.result.Result` (no pickle).

    A run with no end record gets ``status = "incomplete: ..."`` naming the last time reached;
    one whose last chunks are missing (fewer than end.json records) ``incomplete: ...`` naming
    them and the last time present. ResultFileError, naming the file and what is wrong, for
    anything damaged: JSON that is not what flexmb writes, a chunk that is cut short or whose
    arrays do not have the declared shapes or the same number of rows, more chunks or rows than
    end.json records, a gap in the chunk numbers, output times that are not finite or do not
    increase strictly (the first such row named). These checks read the chunks' headers and
    output times only; the per-row arrays are read when first used (:class:`RunDirSource`)."""
    p = Path(path)
    if not (p / "meta.json").is_file():
        raise ResultFileError(f"'{p}' is not a flexmb run directory (no meta.json with format '{FORMAT}').")
    meta = _read_meta(p)  # names meta.json and what is wrong with it, or says it is not a flexmb run
    fields = meta["fields"]
    has_steps = bool(meta.get("steps"))
    chunks = sorted((int(m.group(1)), f) for f in p.iterdir() if (m := _CHUNK.match(f.name)))
    idx = [i for i, _ in chunks]
    if idx != list(range(len(idx))):
        gap = min(set(range(len(idx))) - set(idx))
        raise ResultFileError(f"'{p}': chunk {gap} is missing (chunk files {idx[:10]}{' ...' if len(idx) > 10 else ''} "
                              "are not consecutive from 0); the rows after it cannot be placed in time",
                              "copy the run directory again from where it was written")
    end_file = p / "end.json"
    end = _read_end(end_file) if end_file.exists() else None
    if end is not None and "chunks" in end and len(chunks) > end["chunks"]:
        raise _bad(end_file, f"it records {end['chunks']} chunks, the directory holds {len(chunks)}")
    files = [f for _, f in chunks]
    counts = [_chunk_rows(f, fields, has_steps) for f in files]
    times = [read_arrays(f, stored_only=True, names=["t"])["t"] for f in files]
    before, first = None, 0
    for f, n, tk in zip(files, counts, times):
        if tk.shape != (n,):
            raise _bad(f, f"array 't' has shape {tk.shape}, its header said ({n},) (the file changed while it was read)")
        bad = times_problem(tk, before, first)  # finite and increasing, within the chunk and after the one before
        if bad:
            raise _bad(f, bad)
        before, first = (float(tk[-1]) if n else before), first + n
    t = np.concatenate(times) if times else np.zeros(0)
    last = f"t = {t[-1]:.6g}" if t.size else "no output row"
    if end is None:
        status = (f"incomplete: the run wrote no end record (killed or crashed); last time reached {last} "
                  f"after {t.size} output rows")
        stats: dict = {}
    else:
        status, stats = end["status"], end["stats"]
        n_chunks, n_rows = end.get("chunks"), end.get("rows")
        if n_chunks is not None and len(chunks) < n_chunks:
            gone = list(range(len(chunks), n_chunks))
            status = (f"incomplete: chunk{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} of {n_chunks} "
                      f"missing (the run ended '{end['status']}' with {n_rows} output rows); last time present {last} "
                      f"after {t.size} output rows")
        elif n_rows is not None and t.size != n_rows:
            raise _bad(end_file, f"it records {n_rows} output rows, the chunks hold {t.size}")
    names = meta["names"]
    n = int(t.size)
    kw: dict[str, Any] = {k: ArraySpec((n, *s["shape"]), np.dtype(s["dtype"])) for k, s in fields.items()
                          if not k.startswith("energy__")}
    kw["t"] = t
    run_meta = {"settings": meta.get("settings", {}), **meta.get("meta", {})}
    if end is not None and isinstance(end.get("start"), dict):
        run_meta["start"] = end["start"]
    static = dict(**{k: tuple(names[k]) for k in NAME_FIELDS}, status=status, stats=stats, drawing=meta["drawing"],
                  meta=run_meta)
    energy = {k[8:]: ArraySpec((n,), np.dtype(s["dtype"])) for k, s in fields.items() if k.startswith("energy__")}
    check_result({**kw, **static, "energy": energy}, str(p))
    source = RunDirSource(p, files, np.concatenate([[0], np.cumsum(counts, dtype=np.int64)]), fields, has_steps)
    return Result.from_source(source, 0, n, t, **static)
