"""``.npz`` files: the format of :meth:`flexmb.results.result.Result.save`, and the bounded,
checked reading of every ``.npz`` flexmb opens (a saved result, a run directory's chunks).

:func:`read_arrays` never unpickles and never allocates more than the file can hold: each
member's declared shape and dtype (its ``.npy`` header, the only part inflated before the
data is wanted) are checked against the bytes the zip says it holds, and those against the
file's real size (stored members) or against the most its compressed bytes can inflate to
(deflated members: 1032 times), before the array is allocated; the data must then be exactly
what was declared. A saved result is refused before any data is inflated if its members'
declared shapes do not fit together (one row per output time, as many names as columns):
a member declaring a gigabyte that the others do not account for is never read. A damaged or
crafted file gives a :class:`~flexmb.errors.ResultFileError` naming the file and the member,
never an internal error, and never an allocation beyond what the file's bytes can hold.

The Result.save format: one member per per-row array of :class:`~flexmb.results.result.Result`
under its field name, ``energy__<term>`` and ``drawing__<key>`` for the two dicts,
``stats__keys``/``stats__values``, ``meta__json`` (JSON text), names as string arrays.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from flexmb.errors import ResultFileError
from flexmb.results.files import jsonable, naming

__all__ = ["read_arrays", "read_headers", "ArraySpec", "NpzSource", "write_result", "read_result_fields", "NAME_FIELDS",
           "ROW_FIELDS", "OPTIONAL_FIELDS"]

ROW_FIELDS = ("t", "q", "u", "udot", "x", "R", "joint_points", "twists", "drive_forces", "reactions",
              "newton_iterations", "element_forces", "element_energy", "cut_forces", "cut_forces_global", "spring_dampers",
              "couplings", "joint_forces", "motion_loads")
"""The Result fields with one row per output time."""
NAME_FIELDS = ("coordinate_names", "node_names", "joint_names", "driven_names", "element_names", "cut_names",
               "spring_damper_names", "coupling_names", "joint_force_names", "motion_load_names")
"""The Result fields that name the columns of the per-row arrays."""
OPTIONAL_FIELDS = ("element_forces", "element_energy", "element_names", "cut_forces", "cut_forces_global", "cut_names",
                   "spring_dampers", "spring_damper_names", "couplings", "coupling_names", "joint_forces",
                   "joint_force_names", "motion_loads", "motion_load_names")
"""Fields absent from results saved by older flexmb (read as empty)."""
_OPTIONAL = OPTIONAL_FIELDS
_MAGIC = b"\x93NUMPY"
_DEFLATE_RATIO = 1032  # deflate's largest inflation: 258 bytes per 2-bit code at best
_DEFLATE_SLACK = 1024  # and a few bytes of its blocks' headers


def _damaged(path: Path, what: str) -> ResultFileError:
    return ResultFileError(f"'{path}' is damaged: {what}",
                           "the file was cut short or changed after flexmb wrote it; run the case again")


class ArraySpec(NamedTuple):
    """Shape and dtype of an array stored in a file, checked against the bytes it holds (read
    from its ``.npy`` header by :func:`read_headers`, before any data is read)."""

    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)


def read_arrays(path: str | Path, stored_only: bool = False, kinds: str = "biuf",
                names: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` (member name without ``.npy`` -> array).

    ``stored_only``: refuse compressed members (run-directory chunks are written uncompressed,
    so their arrays can never need more memory than the file's size). ``kinds``: the numpy
    dtype kinds accepted (``biuf``: bool, integers, floats; add ``U`` for text arrays).
    ``names``: read only these members (the others are not read; a name the file does not
    hold is left out). Raises ResultFileError naming the file and the member that is wrong."""
    return _read(path, stored_only, kinds, names, False)


def read_headers(path: str | Path, stored_only: bool = False, kinds: str = "biuf") -> dict[str, ArraySpec]:
    """Every member's :class:`ArraySpec` of the ``.npz`` file ``path``, with all the checks of
    :func:`read_arrays` that need no data (zip directory, sizes, ``.npy`` headers, dtypes; a
    compressed member is inflated once, keeping nothing, to measure it); no array is allocated."""
    return _read(path, stored_only, kinds, None, True)


def _read(path: str | Path, stored_only: bool, kinds: str, names: Iterable[str] | None, headers: bool) -> dict:
    path = Path(path)
    wanted = None if names is None else set(names)
    try:
        size = path.stat().st_size
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise ResultFileError(f"'{path}' is not a flexmb result file, or is damaged: not a readable .npz (zip) file "
                              f"({type(exc).__name__}: {exc})",
                              "give a run directory written by 'flexmb run' or a .npz saved by Result.save") from None
    out: dict[str, np.ndarray] = {}
    with zf:
        infos = zf.infolist()
        if sum(i.compress_size for i in infos) > size:
            raise _damaged(path, f"its members declare more bytes than the file's {size}")
        seen: set[str] = set()
        for info in infos:
            name = info.filename
            if not name.endswith(".npy") or name[:-4] in seen:
                raise _damaged(path, f"member '{name}' is not a numpy array (or is there twice)")
            seen.add(name[:-4])
            if wanted is None or name[:-4] in wanted:
                out[name[:-4]] = _read_member(path, zf, info, stored_only, kinds, headers)
    return out


def _read_member(path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, stored_only: bool, kinds: str,
                 header_only: bool = False) -> np.ndarray | ArraySpec:
    key = info.filename[:-4]
    if info.compress_type == zipfile.ZIP_STORED:
        if info.file_size != info.compress_size:
            raise _damaged(path, f"array '{key}' declares {info.file_size} bytes but stores {info.compress_size}")
    elif info.compress_type != zipfile.ZIP_DEFLATED or stored_only:
        raise _damaged(path, f"array '{key}' is compressed (method {info.compress_type}); flexmb wrote it uncompressed")
    elif info.file_size > _DEFLATE_RATIO * info.compress_size + _DEFLATE_SLACK:
        raise _damaged(path, f"array '{key}' declares {info.file_size} bytes, more than its {info.compress_size} compressed "
                       "bytes can inflate to")
    try:
        with zf.open(info) as f:
            if f.read(6) != _MAGIC:
                raise _damaged(path, f"array '{key}' has no numpy header")
            f.seek(0)
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise _damaged(path, f"array '{key}' has numpy format version {version}")
            if dtype.hasobject or dtype.kind not in kinds or dtype.fields is not None:
                raise _damaged(path, f"array '{key}' has dtype {dtype} (flexmb writes plain numbers"
                               f"{' and text' if 'U' in kinds else ''}; objects are never unpickled)")
            nbytes = math.prod(shape) * dtype.itemsize
            if f.tell() + nbytes != info.file_size:
                raise _damaged(path, f"array '{key}' declares shape {tuple(shape)} {dtype} ({nbytes} bytes) but holds "
                               f"{info.file_size - f.tell()} bytes")
            if header_only:
                return ArraySpec(tuple(shape), dtype)
            buf = bytearray(nbytes)  # stored: at most the file's size; deflated: at most what its bytes inflate to
            view, got = memoryview(buf), 0
            while got < nbytes:
                n = f.readinto(view[got:])
                if not n:
                    raise _damaged(path, f"array '{key}' is cut short ({got} of {nbytes} bytes)")
                got += n
            if f.read(1):  # zipfile stops at the declared size; at the end it checks the CRC
                raise _damaged(path, f"array '{key}' holds more than its {nbytes} declared bytes")
    except ResultFileError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, SyntaxError, TypeError) as exc:
        raise _damaged(path, f"array '{key}' cannot be read ({type(exc).__name__}: {exc})") from None
    return np.frombuffer(buf, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def write_result(result: Any, path: str | Path) -> Path:
    """Write the :class:`~flexmb.results.result.Result` ``result`` to the ``.npz`` ``path``
    (compressed; plain arrays, no pickled objects)."""
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    for f in fields(result):
        v = getattr(result, f.name)
        if f.name in ("energy", "drawing", "steps"):
            for k, a in v.items():
                arrays[f"{f.name}__{k}"] = np.asarray(a)
        elif f.name == "meta":
            arrays["meta__json"] = np.array(json.dumps(v, default=jsonable))
        elif f.name == "stats":
            arrays["stats__keys"] = np.array(list(v), dtype=str)
            arrays["stats__values"] = np.array(list(v.values()), dtype=float)
        elif isinstance(v, tuple):
            arrays[f.name] = np.array(v, dtype=str)
        elif isinstance(v, str):
            arrays[f.name] = np.array(v)
        else:
            arrays[f.name] = v
    with naming(path):
        np.savez_compressed(path, **arrays)
    return path


def read_result_fields(path: str | Path) -> tuple[dict[str, Any], NpzSource]:
    """The Result fields stored in the ``.npz`` ``path`` by :func:`write_result` (keyword
    arguments of Result; check them with flexmb.results.checks.check_result), and the source
    the per-row arrays, energy terms and step history are read from on first use: in ``kw``
    those are :class:`ArraySpec` (checked headers), the names, status, statistics, meta,
    drawing and times are read."""
    path = Path(path)
    specs = read_headers(path, kinds="biufU")
    _check_declared(path, specs)  # before any data is inflated: a member declaring rows the others lack is refused
    small = [k for k in specs if k not in ROW_FIELDS and not k.startswith(("energy__", "steps__"))]
    z = read_arrays(path, kinds="biufU", names=[*small, "t"])

    def need(key: str) -> np.ndarray:
        if key not in specs:
            raise ResultFileError(f"'{path}' is not a flexmb result: it has no array '{key}'",
                                  "give a .npz written by Result.save or a run directory")
        return z.get(key, specs[key])

    kw: dict[str, Any] = {}
    for name in ROW_FIELDS:
        if name in _OPTIONAL and name not in specs:
            continue
        kw[name] = need(name)
    for name in NAME_FIELDS:
        if name in _OPTIONAL and name not in specs:
            continue
        a = need(name)
        if a.ndim != 1 or (a.size and a.dtype.kind != "U"):
            raise _damaged(path, f"'{name}' is not a list of names (dtype {a.dtype}, shape {a.shape})")
        kw[name] = tuple(str(s) for s in a.tolist())
    kw["energy"] = {k[8:]: a for k, a in specs.items() if k.startswith("energy__")}
    kw["steps"] = {k[7:]: a for k, a in specs.items() if k.startswith("steps__")}
    kw["drawing"] = {k[9:]: a for k, a in z.items() if k.startswith("drawing__")}
    status = need("status")
    if status.shape != () or status.dtype.kind != "U":
        raise _damaged(path, f"'status' is not a text (dtype {status.dtype}, shape {status.shape})")
    kw["status"] = str(status)
    keys, values = need("stats__keys"), need("stats__values")
    if keys.ndim != 1 or values.shape != keys.shape or (keys.size and keys.dtype.kind != "U") or values.dtype.kind != "f":
        raise _damaged(path, "the statistics ('stats__keys', 'stats__values') are not names with one number each")
    kw["stats"] = dict(zip((str(k) for k in keys.tolist()), (float(v) for v in values.tolist())))
    if "meta__json" in z:
        m = z["meta__json"]
        try:
            meta = json.loads(str(m)) if m.shape == () and m.dtype.kind == "U" else None
        except ValueError:
            meta = None
        if not isinstance(meta, dict):
            raise _damaged(path, "'meta__json' is not a JSON object")
        kw["meta"] = meta
    lazy = tuple(k for k in specs if k in ROW_FIELDS and k != "t" or k.startswith("energy__"))
    return kw, NpzSource(path, lazy, tuple(k for k in specs if k.startswith("steps__")))


_COLUMNS = {"coordinate_names": "q", "node_names": "x", "joint_names": "reactions", "driven_names": "drive_forces",
            "element_names": "element_forces", "cut_names": "cut_forces",
            "spring_damper_names": "spring_dampers", "coupling_names": "couplings",
            "joint_force_names": "joint_forces",
            "motion_load_names": "motion_loads"}  # the per-row array whose columns each names


def _check_declared(path: Path, specs: dict[str, ArraySpec]) -> None:
    """Refuse (naming the member) a saved result whose members' declared shapes do not fit
    together: every per-row array and energy term one row per output time ('t', as many rows
    as 'q'), every list of names as long as the columns it names, scalar texts. Only headers
    are used, so a member that declares a gigabyte the others do not account for is refused
    before any of it is inflated."""
    for k in ("t", "q"):
        if k not in specs:
            raise ResultFileError(f"'{path}' is not a flexmb result: it has no array '{k}'",
                                  "give a .npz written by Result.save or a run directory")
    t, q = specs["t"], specs["q"]
    if t.ndim != 1 or q.ndim != 2 or t.shape[0] != q.shape[0]:
        raise _damaged(path, f"arrays 't' (declared shape {t.shape}, {_size(t)} bytes) and 'q' (declared shape {q.shape}, "
                       f"{_size(q)} bytes) do not fit: 'q' must have a row per output time in 't'")
    n = t.shape[0]
    for k, a in specs.items():
        if (k in ROW_FIELDS or k.startswith("energy__")) and (a.ndim == 0 or a.shape[0] != n):
            raise _damaged(path, f"array '{k}' declares shape {a.shape} ({_size(a)} bytes), not {n} rows (one per output "
                           "time in 't')")
    for k, rows in _COLUMNS.items():
        if k in specs and rows in specs:
            a, cols = specs[k], specs[rows].shape[1:2]
            if a.shape != cols:
                raise _damaged(path, f"array '{k}' declares shape {a.shape} ({_size(a)} bytes), but '{rows}' has "
                               f"{cols[0] if cols else 'no'} columns for it to name")
    for k in ("status", "meta__json"):
        if k in specs and specs[k].shape != ():
            raise _damaged(path, f"array '{k}' declares shape {specs[k].shape} ({_size(specs[k])} bytes), not one text")


def _size(a: ArraySpec) -> int:
    return math.prod(a.shape) * a.dtype.itemsize


class NpzSource:
    """The per-row arrays, energy terms and step history of a saved result, each read (and
    checked again, flexmb.results.npz.read_arrays) when a lazy Result first uses it."""

    def __init__(self, path: Path, row_fields: tuple[str, ...], step_fields: tuple[str, ...]) -> None:
        self.path, self.row_fields, self.step_fields = path, row_fields, step_fields

    def _member(self, name: str) -> np.ndarray:
        a = read_arrays(self.path, kinds="biuf", names=[name]).get(name)
        if a is None:
            raise _damaged(self.path, f"array '{name}' is gone (the file changed after it was opened)")
        return a

    def read(self, name: str, lo: int, hi: int) -> np.ndarray:
        a = self._member(name)
        return a if (lo, hi) == (0, a.shape[0]) else a[lo:hi].copy()

    def read_steps(self, t0: float, t1: float) -> dict[str, np.ndarray]:
        steps = {k[7:]: self._member(k) for k in self.step_fields}
        keep = (steps["t"] >= t0) & (steps["t"] <= t1)
        return {k: v[keep] for k, v in steps.items()}
