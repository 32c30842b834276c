"""ParaView output: what :mod:`flexmb.results.drawing` draws, written as

* ``pvd`` (default): one VTU file per drawn output time (meshio) and a ``.pvd`` collection
  whose time values are the simulation times — ParaView's *PVD reader*;
* ``xdmf``: one ``.xdmf`` file (XDMF 3, a temporal collection) with its arrays in an HDF5
  file beside it (``<name>.h5``, named relative to the .xdmf). Written by flexmb itself, not
  by meshio's TimeSeriesWriter, to avoid the three faults that make meshio 5.3.5's time
  series unusable in ParaView 5.11: the .h5 lands beside the .xdmf
  whatever the working directory; the line topology carries ``NodesPerElement="2"``; every
  time step has its own geometry (the mechanism moves without a Warp filter) and there is no
  separate mesh grid that ParaView would show a second time. Open it with ParaView's
  *Xdmf3 Reader T* (or *S*); meshio's ``xdmf.TimeSeriesReader`` reads it too.

Both take the result alone (its ``drawing``); a model may be given for results saved
before the drawing was stored. A model with shapes (flexmb.builder.shapes: meshes on bodies, beams
drawn with their section) gets their triangles as a second cell block of the same dataset (VTU:
a ``triangle`` block after the ``line`` block; XDMF: a ``Mixed`` topology), their points after the
others, placed by their carrier nodes' poses, ``cell_kind`` the ``shape`` kind and the line cells'
other arrays zero on them: ``Threshold`` on ``cell_kind`` shows the shapes alone.

Files are written only inside the output folder: ``name`` is a file name stem of at most
:data:`MAX_NAME_BYTES` bytes, never a path (:func:`safe_name` reduces a name read from a result
file, such as its ``case_name``, to one, shortening a long one),
and a file to be written that is a symbolic link is refused. :func:`export` with
``overwrite=False`` checks every file it would write (each ``.vtu``, the ``.pvd``; the
``.xdmf`` and ``.h5``) before writing any.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

import h5py
import meshio
import numpy as np

from flexmb.errors import ResultFileError, RunDirError
from flexmb.results.drawing import drawing_of, frame_indices, frames, lines, triangles
from flexmb.results.files import naming

if TYPE_CHECKING:  # type hints only
    from flexmb.model import Model
    from flexmb.results.result import Result

__all__ = ["FORMATS", "MAX_NAME_BYTES", "write_pvd", "write_xdmf", "export", "planned_files", "check_targets", "safe_name",
           "check_name"]

FORMATS = ("pvd", "xdmf")
_NAME = re.compile(r"^[\w+\- ][\w.+\- ]*$")  # a file name stem: letters, digits, _ + - . and spaces, no leading dot


MAX_NAME_BYTES = 100
"""Longest file name stem (UTF-8 bytes) an export writes: with the frame number and the
extension its file names stay far below the 255 bytes file systems allow."""
_HASH = 8  # hex digits of the hash that ends a shortened name


def safe_name(name: object, fallback: str = "mechanism") -> str:
    """``name`` (data, e.g. a result's stored case name) reduced to a file name stem: its last
    path component, with every character other than letters, digits, ``_ + - .`` and spaces
    replaced by ``_`` and leading dots removed; ``fallback`` if nothing is left.
    ``"../../X"`` and ``"/some/dir/X"`` both give ``"X"``. A stem longer than
    :data:`MAX_NAME_BYTES` (UTF-8) is shortened to its beginning followed by ``-`` and 8 hex
    digits of a hash of the whole stem: the same long name always gives the same file names
    (a later export with ``--overwrite`` replaces them), two long names with the same
    beginning give different ones."""
    text = str(name) if isinstance(name, str) else ""
    text = re.split(r"[/\\]", text)[-1]
    text = re.sub(r"[^\w.+\- ]", "_", text).lstrip(". ")
    if len(text.encode("utf-8")) > MAX_NAME_BYTES:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH]
        head = text.encode("utf-8")[:MAX_NAME_BYTES - _HASH - 1].decode("utf-8", "ignore")
        text = f"{head.rstrip()}-{digest}"
    return text if text and _NAME.match(text) else fallback


def check_name(name: object, what: str = "export name") -> None:
    """ValueError (naming it as ``what``) unless ``name`` is a file name stem an export may use:
    letters, digits, ``_ + - .`` and spaces, no path, no leading dot, at most
    :data:`MAX_NAME_BYTES` bytes (UTF-8); a name given by the user is refused, not changed."""
    if not (isinstance(name, str) and _NAME.match(name)):
        raise ValueError(f"{what} {name!r} is not a file name stem (letters, digits, _ + - . and spaces, no path, "
                         f"no leading dot); e.g. {safe_name(name)!r}")
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise ValueError(f"{what} '{name[:40]}...' is {size} bytes long, more than the {MAX_NAME_BYTES} a file name stem "
                         f"may have; give a shorter one, e.g. {safe_name(name)!r}")


def _target(out: Path, fname: str) -> Path:
    """``out/fname``, refused if it is a symbolic link (the write would land outside ``out``)."""
    f = out / fname
    if f.is_symlink():
        raise RunDirError(f"'{f}' is a symbolic link; flexmb writes its export files only inside '{out}'",
                          "remove the link or choose another output folder")
    return f


def check_targets(out_dir: str | Path, files: list[str], overwrite: bool) -> None:
    """RunDirError naming them if any of ``files`` exists in ``out_dir`` (without
    ``overwrite``) or is a symbolic link (always: the write would land outside ``out_dir``)."""
    out = Path(out_dir)
    for f in files:
        _target(out, f)
    found = [] if overwrite else [f for f in files if (out / f).exists()]
    if found:
        shown = ", ".join(found[:6]) + (f" and {len(found) - 6} more" if len(found) > 6 else "")
        raise RunDirError(f"'{out}' already holds {shown}", "pass --overwrite (overwrite=True) to replace them, "
                          "or choose another output folder or name")


def _drawing(result: Result, model: Model | None) -> dict[str, np.ndarray]:
    if model is not None:
        return drawing_of(model)
    if not result.drawing:
        raise ResultFileError("this result holds no drawing topology (saved by an older flexmb); "
                              "export it with its model: write_pvd(result, model, ...).")
    return result.drawing


def planned_files(n_rows: int, fmt: str, name: str, every: int = 1) -> list[str]:
    """The names of the files an export of a result with ``n_rows`` output rows writes."""
    if fmt == "pvd":
        return [f"{name}_{i:05d}.vtu" for i in frame_indices(n_rows, every)] + [f"{name}.pvd"]
    if fmt == "xdmf":
        return [f"{name}.h5", f"{name}.xdmf"]
    raise ValueError(f"unknown export format {fmt!r}; use one of {FORMATS}.")


def write_pvd(result: Result, model: Model | None = None, out_dir: str | Path = ".", name: str = "mechanism",
              every: int = 1) -> Path:
    """Write ``name_XXXXX.vtu`` per drawn output time and ``name.pvd`` into ``out_dir``; returns
    the .pvd path. Time values in the collection are the simulation times; ``every`` writes
    every n-th output time (the last one always). ``model``: only for results without a
    stored drawing."""
    check_name(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    d = _drawing(result, model)
    cells = lines(d)[0]
    tris, tri_kind = triangles(d)
    entries = []
    for i, t, pts, pdata, cdata in frames(result, d, every):
        fname = f"{name}_{i:05d}.vtu"
        if len(tris):  # the shapes: a second cell block of triangles, zero in the line cells' arrays
            mesh = meshio.Mesh(pts, [("line", cells), ("triangle", tris)], point_data=pdata,
                               cell_data={k: [v, _tri_column(k, v, len(tris), tri_kind)] for k, v in cdata.items()})
        else:
            mesh = meshio.Mesh(pts, [("line", cells)], point_data=pdata, cell_data={k: [v] for k, v in cdata.items()})
        f = _target(out, fname)
        with naming(f):
            meshio.write(f, mesh)
        entries.append(f'    <DataSet timestep="{t!r}" group="" part="0" file={quoteattr(fname)}/>')
    pvd = _target(out, f"{name}.pvd")
    with naming(pvd):
        pvd.write_text('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
                       "  <Collection>\n" + "\n".join(entries) + "\n  </Collection>\n</VTKFile>\n")
    return pvd


def _tri_column(key: str, v: np.ndarray, n: int, kind: int) -> np.ndarray:
    """A cell array's values on the ``n`` triangles: their cell kind in ``cell_kind``, else zero."""
    return np.full(n, kind, dtype=v.dtype) if key == "cell_kind" else np.zeros(n, dtype=v.dtype)


def _mixed(cells: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """XDMF's Mixed topology of line cells and triangles: per line (2 = Polyline, 2 points, a, b), per
    triangle (4 = Triangle, a, b, c)."""
    ln = np.concatenate([np.full((len(cells), 2), 2, dtype=np.int64), cells], axis=1).ravel()
    tr = np.concatenate([np.full((len(tris), 1), 4, dtype=np.int64), tris], axis=1).ravel()
    return np.concatenate([ln, tr]).astype(np.int64)


_XDMF_TYPE = {"float64": ("Float", "8"), "int64": ("Int", "8")}


def _data_item(h5name: str, path: str, a: np.ndarray) -> str:
    kind, prec = _XDMF_TYPE[str(a.dtype)]
    dims = " ".join(str(n) for n in a.shape)
    return (f'<DataItem Dimensions="{dims}" NumberType="{kind}" Precision="{prec}" Format="HDF">'
            f"{h5name}:{path}</DataItem>")


def write_xdmf(result: Result, model: Model | None = None, out_dir: str | Path = ".", name: str = "mechanism",
               every: int = 1) -> Path:
    """Write ``name.xdmf`` and ``name.h5`` (HDF5, beside it) into ``out_dir``; returns the
    .xdmf path. One grid per drawn output time, with its own points; the topology is stored
    once and shared. ``every``: as in :func:`write_pvd`."""
    check_name(name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    d = _drawing(result, model)
    cells = lines(d)[0].astype(np.int64)
    tris, tri_kind = triangles(d)
    topo = _mixed(cells, tris) if len(tris) else cells
    ttype = (f'TopologyType="Mixed" NumberOfElements="{len(cells) + len(tris)}"' if len(tris) else
             f'TopologyType="Polyline" NumberOfElements="{len(cells)}" NodesPerElement="2"')
    h5name = f"{name}.h5"
    grids = []
    h5path = _target(out, h5name)
    with naming(h5path), h5py.File(h5path, "w") as h5:
        h5.create_dataset("topology", data=topo)
        for i, t, pts, pdata, cdata in frames(result, d, every):
            g = f"step_{i:05d}"
            h5.create_dataset(f"{g}/points", data=pts)
            parts = [
                f'    <Grid Name="{g}" GridType="Uniform">',
                f'      <Time Value="{t!r}"/>',
                f"      <Topology {ttype}>",
                f"        {_data_item(h5name, '/topology', topo)}",
                "      </Topology>",
                '      <Geometry GeometryType="XYZ">',
                f"        {_data_item(h5name, f'/{g}/points', pts)}",
                "      </Geometry>",
            ]
            if len(tris):
                cdata = {k: np.concatenate([v, _tri_column(k, v, len(tris), tri_kind)]) for k, v in cdata.items()}
            for center, data in (("Node", pdata), ("Cell", cdata)):
                for key, a in data.items():
                    a = np.ascontiguousarray(a)
                    h5.create_dataset(f"{g}/{key}", data=a)
                    kind = "Vector" if a.ndim == 2 and a.shape[1] == 3 else "Scalar"
                    parts += [f'      <Attribute Name={quoteattr(key)} AttributeType="{kind}" Center="{center}">',
                              f"        {_data_item(h5name, f'/{g}/{key}', a)}", "      </Attribute>"]
            parts.append("    </Grid>")
            grids.append("\n".join(parts))
    xdmf = _target(out, f"{name}.xdmf")
    with naming(xdmf):
        xdmf.write_text('<?xml version="1.0"?>\n<Xdmf Version="3.0">\n  <Domain>\n'
                        f'  <Grid Name={quoteattr(name)} GridType="Collection" CollectionType="Temporal">\n'
                        + "\n".join(grids) + "\n  </Grid>\n  </Domain>\n</Xdmf>\n")
    return xdmf


def export(result: Result, out_dir: str | Path, fmt: str = "pvd", name: str = "mechanism", every: int = 1,
           model: Model | None = None, overwrite: bool = True) -> Path:
    """Write ``result`` for ParaView in format ``fmt`` (``pvd`` or ``xdmf``) into ``out_dir``;
    returns the file to open. ``overwrite=False``: refuse (RunDirError naming them) if any file
    it would write exists, before writing any."""
    check_name(name)
    check_targets(out_dir, planned_files(len(result.t), fmt, name, every), overwrite)
    if fmt == "pvd":
        return write_pvd(result, model, out_dir, name, every)
    if fmt == "xdmf":
        return write_xdmf(result, model, out_dir, name, every)
    raise ValueError(f"unknown export format {fmt!r}; use one of {FORMATS}.")
