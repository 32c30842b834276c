"""Render the README picture with ParaView (run by pvbatch, under xvfb-run if needed):

    xvfb-run -a pvbatch docs/render_paraview.py runs/sharma_saha_arm/paraview/sharma_saha_arm.pvd docs/arm_paraview.png

Opens the demo's .pvd (PVD reader) and shows the arm at five times of its motion, each drawn
the way the README suggests: a Tube filter on the line cells (links), coloured by the speed
of the points, and a Glyph filter (arrows) on the node axis e1 to show the node frames.
"""

import os
import sys

import paraview.simple as pv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # render_common.py beside this script
from render_common import open_view, save, speed_bar, title  # noqa: E402

path, png = sys.argv[1], sys.argv[2]
reader, times, view, lut = open_view(pv, path, [1000, 620])
picks = [times[int(round(f * (len(times) - 1)))] for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
vmax = 1e-9
for k, t in enumerate(picks):
    snap = pv.ForceTime(Input=reader, IgnorePipelineTime=1, ForcedTime=t)
    surface = pv.ExtractSurface(Input=snap)  # Tube takes polygonal data: VTU lines need Extract Surface first
    tube = pv.Tube(Input=surface, Radius=0.02, NumberofSides=24)
    d = pv.Show(tube, view)
    pv.ColorBy(d, ("POINTS", "velocity", "Magnitude"))
    d.LookupTable = lut
    snap.UpdatePipeline()
    vmax = max(vmax, snap.PointData["velocity"].GetRange(-1)[1])
    d.Opacity = 0.35 + 0.65 * k / (len(picks) - 1)
    glyph = pv.Glyph(Input=snap, GlyphType="Arrow", OrientationArray=["POINTS", "e1"], ScaleArray=["POINTS", "No scale array"],
                     ScaleFactor=0.12, GlyphMode="All Points")
    g = pv.Show(glyph, view)
    g.DiffuseColor = [0.85, 0.2, 0.1]
    g.AmbientColor = [0.85, 0.2, 0.1]
    g.ColorArrayName = [None, ""]
    if k == len(picks) - 1:
        speed_bar(pv, lut, view)
lut.RescaleTransferFunction(0.0, vmax)
title(pv, view, "Sharma & Saha two-link arm (flexmb demo): t = "
      + ", ".join(f"{t:.1f}" for t in picks) + " s; tubes: links, arrows: node axis e1")
save(pv, view, ([0.6, -0.3, 4.0], [0.6, -0.3, 0.0], [0, 1, 0]), png, [1000, 620], parallel=True)
