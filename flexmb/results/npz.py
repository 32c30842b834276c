"""``.npz`` files: the format of :meth:`flexmb.results.result.Result.save`, and the bounded,
checked reading of every ``.npz`` flexmb opens (a saved result, a run directory's chunks).

:func:`read_arrays` never unpickles and never allocates more than the file can hold: each
member's declared shape and dtype (its ``.npy`` header) are checked against the bytes the zip
says it holds, and those against the file's real size (stored members) or against the data
really inflated in a first pass that keeps nothing (compressed members), before the array is
allocated. A damaged or crafted file gives a :class:`~flexmb.errors.ResultFileError` naming
the file and what is wrong, never an internal error and never a 1 GiB allocation from a 1 MB
file.

The Result.save format: one member per per-row array of :class:`~flexmb.results.result.Result`
under its field name, ``energy__<term>`` and ``drawing__<key>`` for the two dicts,
``stats__keys``/``stats__values``, ``meta__json`` (JSON text), names as string arrays.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from flexmb.errors import ResultFileError
from flexmb.results.files import jsonable

__all__ = ["read_arrays", "write_result", "read_result_fields", "NAME_FIELDS", "ROW_FIELDS", "OPTIONAL_FIELDS"]

ROW_FIELDS = ("t", "q", "u", "udot", "x", "R", "joint_points", "twists", "drive_forces", "reactions",
              "newton_iterations", "element_forces", "element_energy", "cut_forces", "cut_forces_global")
"""The Result fields with one row per output time."""
NAME_FIELDS = ("coordinate_names", "node_names", "joint_names", "driven_names", "element_names", "cut_names")
"""The Result fields that name the columns of the per-row arrays."""
OPTIONAL_FIELDS = ("element_forces", "element_energy", "element_names", "cut_forces", "cut_forces_global", "cut_names")
"""Fields absent from results saved by older flexmb (read as empty)."""
_OPTIONAL = OPTIONAL_FIELDS
_MAGIC = b"\x93NUMPY"
_PIECE = 1 << 20  # bytes inflated at a time when a compressed member's real size is measured


def _damaged(path: Path, what: str) -> ResultFileError:
    return ResultFileError(f"'{path}' is damaged: {what}",
                           "the file was cut short or changed after flexmb wrote it; run the case again")


def read_arrays(path: str | Path, stored_only: bool = False, kinds: str = "biuf") -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file ``path`` (member name without ``.npy`` -> array).

    ``stored_only``: refuse compressed members (run-directory chunks are written uncompressed,
    so their arrays can never need more memory than the file's size). ``kinds``: the numpy
    dtype kinds accepted (``biuf``: bool, integers, floats; add ``U`` for text arrays). Raises
    ResultFileError naming the file and the member that is wrong."""
    path = Path(path)
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
        for info in infos:
            name = info.filename
            if not name.endswith(".npy") or name[:-4] in out:
                raise _damaged(path, f"member '{name}' is not a numpy array (or is there twice)")
            out[name[:-4]] = _read_member(path, zf, info, stored_only, kinds)
    return out


def _read_member(path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, stored_only: bool, kinds: str) -> np.ndarray:
    key = info.filename[:-4]
    if info.compress_type == zipfile.ZIP_STORED:
        if info.file_size != info.compress_size:
            raise _damaged(path, f"array '{key}' declares {info.file_size} bytes but stores {info.compress_size}")
    elif info.compress_type != zipfile.ZIP_DEFLATED or stored_only:
        raise _damaged(path, f"array '{key}' is compressed (method {info.compress_type}); flexmb wrote it uncompressed")
    try:
        if info.compress_type == zipfile.ZIP_DEFLATED:
            real = 0
            with zf.open(info) as f:
                while piece := f.read(_PIECE):
                    real += len(piece)
            if real != info.file_size:
                raise _damaged(path, f"array '{key}' inflates to {real} bytes, not the declared {info.file_size}")
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
            buf = bytearray(nbytes)  # at most what the file really holds (checked above)
            view, got = memoryview(buf), 0
            while got < nbytes:
                n = f.readinto(view[got:])
                if not n:
                    raise _damaged(path, f"array '{key}' is cut short ({got} of {nbytes} bytes)")
                got += n
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
        if f.name in ("energy", "drawing"):
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
    np.savez_compressed(path, **arrays)
    return path


def read_result_fields(path: str | Path) -> dict[str, Any]:
    """The Result fields stored in the ``.npz`` ``path`` by :func:`write_result` (keyword
    arguments of Result; check them with flexmb.results.checks.check_result)."""
    path = Path(path)
    z = read_arrays(path, kinds="biufU")

    def need(key: str) -> np.ndarray:
        if key not in z:
            raise ResultFileError(f"'{path}' is not a flexmb result: it has no array '{key}'",
                                  "give a .npz written by Result.save or a run directory")
        return z[key]

    kw: dict[str, Any] = {}
    for name in ROW_FIELDS:
        if name in _OPTIONAL and name not in z:
            continue
        kw[name] = need(name)
    for name in NAME_FIELDS:
        if name in _OPTIONAL and name not in z:
            continue
        a = need(name)
        if a.ndim != 1 or (a.size and a.dtype.kind != "U"):
            raise _damaged(path, f"'{name}' is not a list of names (dtype {a.dtype}, shape {a.shape})")
        kw[name] = tuple(str(s) for s in a.tolist())
    kw["energy"] = {k[8:]: a for k, a in z.items() if k.startswith("energy__")}
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
    return kw
