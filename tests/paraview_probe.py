"""Run by ParaView's ``pvbatch`` (not by pytest): open a time series the way a user would and
print, as one JSON line prefixed ``PROBE``, what ParaView sees at every time step.

usage: pvbatch paraview_probe.py FILE[@READER] ...
READER: a paraview.simple reader name (PVDReader, Xdmf3ReaderT, Xdmf3ReaderS, XDMFReader);
default: whatever ParaView picks for the file (OpenDataFile). One PROBE line per file.

Per time step: number of points and cells, the point and cell arrays with their number of
components, and checksums computed inside ParaView from the data it read (sum of the point
coordinates, and per array the sum of its values), so the test can compare them with
what flexmb wrote.
"""

import json
import sys

import paraview.simple as pv
from paraview import servermanager
from vtkmodules.numpy_interface import dataset_adapter as dsa


def _blocks(obj):
    """Leaf datasets of a (possibly composite) VTK data object."""
    if obj.IsA("vtkCompositeDataSet"):
        it = obj.NewIterator()
        it.InitTraversal()
        while not it.IsDoneWithTraversal():
            yield it.GetCurrentDataObject()
            it.GoToNextItem()
    else:
        yield obj


def main(path, reader=None):
    if reader:
        key = "FileNames" if reader == "XDMFReader" else "FileName"
        src = getattr(pv, reader)(**{key: [path] if reader.startswith("Xdmf") or reader == "XDMFReader" else path})
    else:
        src = pv.OpenDataFile(path)
    if src is None:
        raise SystemExit(f"ParaView has no reader for {path}")
    times = list(src.TimestepValues) if src.TimestepValues is not None else []
    if not isinstance(times, list):
        times = [times]
    steps = []
    for t in times or [None]:
        src.UpdatePipeline(t) if t is not None else src.UpdatePipeline()
        data = servermanager.Fetch(src)
        n_pts = n_cells = 0
        psum = 0.0
        parrays: dict = {}
        carrays: dict = {}
        for blk in _blocks(data):
            w = dsa.WrapDataObject(blk)
            n_pts += blk.GetNumberOfPoints()
            n_cells += blk.GetNumberOfCells()
            if blk.GetNumberOfPoints():
                psum += float(w.Points.sum())
            for arrays, attr in ((parrays, w.PointData), (carrays, w.CellData)):
                for name in attr.keys():
                    a = attr[name]
                    ncomp = 1 if a.ndim == 1 else int(a.shape[1])
                    prev = arrays.get(name, (ncomp, 0.0))
                    arrays[name] = (ncomp, prev[1] + float(a.sum()))
        steps.append({"time": t, "points": n_pts, "cells": n_cells, "point_sum": psum,
                      "point_arrays": {k: list(v) for k, v in parrays.items()},
                      "cell_arrays": {k: list(v) for k, v in carrays.items()}})
    print("PROBE " + json.dumps({"file": path, "asked": reader, "reader": src.GetXMLName(), "times": times,
                                 "steps": steps}), flush=True)
    pv.Delete(src)


if __name__ == "__main__":
    for spec in sys.argv[1:]:
        path, _, reader = spec.partition("@")
        main(path, reader or None)
