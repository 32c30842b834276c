"""ParaView output (DESIGN §6): what :mod:`flexmb.results.drawing` draws, written as

* ``pvd`` (default): one VTU file per drawn output time (meshio) and a ``.pvd`` collection
  whose time values are the simulation times — ParaView's *PVD reader*;
* ``xdmf``: one ``.xdmf`` file (XDMF 3, a temporal collection) with its arrays in an HDF5
  file beside it (``<name>.h5``, named relative to the .xdmf). Written by flexmb itself, not
  by meshio's TimeSeriesWriter, to avoid the three faults that make meshio 5.3.5's time
  series unusable in ParaView 5.11 (../shared/PARAVIEW.md): the .h5 lands beside the .xdmf
  whatever the working directory; the line topology carries ``NodesPerElement="2"``; every
  time step has its own geometry (the mechanism moves without a Warp filter) and there is no
  separate mesh grid that ParaView would show a second time. Open it with ParaView's
  *Xdmf3 Reader T* (or *S*); meshio's ``xdmf.TimeSeriesReader`` reads it too.

Both take the result alone (its ``drawing``); a model may be given for results saved
before the drawing was stored.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import meshio
import numpy as np

from flexmb.results.drawing import drawing_of, frames, lines

__all__ = ["FORMATS", "write_pvd", "write_xdmf", "export"]

FORMATS = ("pvd", "xdmf")


def _drawing(result, model) -> dict[str, np.ndarray]:
    if model is not None:
        return drawing_of(model)
    if not result.drawing:
        from flexmb.errors import ResultFileError

        raise ResultFileError("this result holds no drawing topology (saved by an older flexmb); "
                              "export it with its model: write_pvd(result, model, ...).")
    return result.drawing


def write_pvd(result, model=None, out_dir: str | Path = ".", name: str = "mechanism", every: int = 1) -> Path:
    """Write ``name_XXXXX.vtu`` per drawn output time and ``name.pvd`` into ``out_dir``; returns
    the .pvd path. Time values in the collection are the simulation times; ``every`` writes
    every n-th output time (the last one always). ``model``: only for results without a
    stored drawing."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    d = _drawing(result, model)
    cells = lines(d)[0]
    entries = []
    for i, t, pts, pdata, cdata in frames(result, d, every):
        fname = f"{name}_{i:05d}.vtu"
        mesh = meshio.Mesh(pts, [("line", cells)], point_data=pdata, cell_data={k: [v] for k, v in cdata.items()})
        meshio.write(out / fname, mesh)
        entries.append(f'    <DataSet timestep="{t!r}" group="" part="0" file={quoteattr(fname)}/>')
    pvd = out / f"{name}.pvd"
    pvd.write_text(
        '<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
        "  <Collection>\n" + "\n".join(entries) + "\n  </Collection>\n</VTKFile>\n"
    )
    return pvd


_XDMF_TYPE = {"float64": ("Float", "8"), "int64": ("Int", "8")}


def _data_item(h5name: str, path: str, a: np.ndarray) -> str:
    kind, prec = _XDMF_TYPE[str(a.dtype)]
    dims = " ".join(str(n) for n in a.shape)
    return (f'<DataItem Dimensions="{dims}" NumberType="{kind}" Precision="{prec}" Format="HDF">'
            f"{h5name}:{path}</DataItem>")


def write_xdmf(result, model=None, out_dir: str | Path = ".", name: str = "mechanism", every: int = 1) -> Path:
    """Write ``name.xdmf`` and ``name.h5`` (HDF5, beside it) into ``out_dir``; returns the
    .xdmf path. One grid per drawn output time, with its own points; the topology is stored
    once and shared. ``every``: as in :func:`write_pvd`."""
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5py is a dependency
        from flexmb.errors import BackendError

        raise BackendError("XDMF export needs h5py (pip install h5py); or export to pvd.") from None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    d = _drawing(result, model)
    cells = lines(d)[0].astype(np.int64)
    h5name = f"{name}.h5"
    grids = []
    with h5py.File(out / h5name, "w") as h5:
        h5.create_dataset("topology", data=cells)
        for i, t, pts, pdata, cdata in frames(result, d, every):
            g = f"step_{i:05d}"
            h5.create_dataset(f"{g}/points", data=pts)
            parts = [
                f'    <Grid Name="{g}" GridType="Uniform">',
                f'      <Time Value="{t!r}"/>',
                f'      <Topology TopologyType="Polyline" NumberOfElements="{len(cells)}" NodesPerElement="2">',
                f"        {_data_item(h5name, '/topology', cells)}",
                "      </Topology>",
                '      <Geometry GeometryType="XYZ">',
                f"        {_data_item(h5name, f'/{g}/points', pts)}",
                "      </Geometry>",
            ]
            for center, data in (("Node", pdata), ("Cell", cdata)):
                for key, a in data.items():
                    a = np.ascontiguousarray(a)
                    h5.create_dataset(f"{g}/{key}", data=a)
                    kind = "Vector" if a.ndim == 2 and a.shape[1] == 3 else "Scalar"
                    parts += [f'      <Attribute Name={quoteattr(key)} AttributeType="{kind}" Center="{center}">',
                              f"        {_data_item(h5name, f'/{g}/{key}', a)}", "      </Attribute>"]
            parts.append("    </Grid>")
            grids.append("\n".join(parts))
    xdmf = out / f"{name}.xdmf"
    xdmf.write_text(
        '<?xml version="1.0"?>\n<Xdmf Version="3.0">\n  <Domain>\n'
        f'  <Grid Name={quoteattr(name)} GridType="Collection" CollectionType="Temporal">\n'
        + "\n".join(grids) + "\n  </Grid>\n  </Domain>\n</Xdmf>\n"
    )
    return xdmf


def export(result, out_dir: str | Path, fmt: str = "pvd", name: str = "mechanism", every: int = 1, model=None) -> Path:
    """Write ``result`` for ParaView in format ``fmt`` (``pvd`` or ``xdmf``); returns the file
    to open."""
    if fmt == "pvd":
        return write_pvd(result, model, out_dir, name, every)
    if fmt == "xdmf":
        return write_xdmf(result, model, out_dir, name, every)
    raise ValueError(f"unknown export format {fmt!r}; use one of {FORMATS}.")
