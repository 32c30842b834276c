"""Run by ParaView's ``pvbatch`` (not by pytest): open a flexmb time series (.pvd or .xdmf), go to its
last time step and print, as one JSON line prefixed ``SHAPES``, the time and the corner coordinates of
every triangle cell ParaView read (the shapes of flexmb.builder.shapes), in cell order.

usage: pvbatch paraview_shapes_probe.py FILE[@READER] ...  (READER as in paraview_probe.py)
"""

import json
import sys

import paraview.simple as pv
from paraview import servermanager

VTK_TRIANGLE = 5


def main(path, reader=None):
    src = getattr(pv, reader)(FileName=path) if reader else pv.OpenDataFile(path)
    times = list(src.TimestepValues)
    src.UpdatePipeline(times[-1])
    data = servermanager.Fetch(src)
    if data.IsA("vtkCompositeDataSet"):
        it = data.NewIterator()
        it.InitTraversal()
        data = it.GetCurrentDataObject()
    pts = data.GetPoints()
    tris = []
    for c in range(data.GetNumberOfCells()):
        if data.GetCellType(c) == VTK_TRIANGLE:
            ids = data.GetCell(c).GetPointIds()
            tris.append([list(pts.GetPoint(ids.GetId(k))) for k in range(3)])
    kinds = data.GetCellData().GetArray("cell_kind")
    kind = sorted({int(kinds.GetValue(c)) for c in range(data.GetNumberOfCells())
                   if data.GetCellType(c) == VTK_TRIANGLE}) if kinds is not None else []
    print("SHAPES " + json.dumps({"file": path, "time": times[-1], "triangles": tris, "kinds": kind}), flush=True)
    pv.Delete(src)


if __name__ == "__main__":
    for spec in sys.argv[1:]:
        path, _, reader = spec.partition("@")
        main(path, reader or None)
