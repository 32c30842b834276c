"""Render the picture of the flexible UR5 with ParaView (run by pvbatch, under xvfb-run if needed):

    flexmb run cases/flexible_arm.py
    xvfb-run -a pvbatch docs/render_flexible_arm.py runs/flexible_arm/paraview/flexible_arm.pvd docs/flexible_arm_paraview.png

Opens the case's .pvd (PVD reader) and shows the robot in the middle of its move (t = 0.3 s) the way
a user would: Threshold on ``cell_kind`` = the ``shape`` kind keeps the robot's shapes (the URDF's
collision meshes), half transparent, coloured by the speed of their points; Threshold on
``cell_kind`` 0 keeps the beam elements of the flexible upper arm, drawn as a red tube.
"""

import os
import sys

import paraview.simple as pv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # render_common.py beside this script
from render_common import open_view, save, speed_bar, title  # noqa: E402

path, png = sys.argv[1], sys.argv[2]
SHAPE, BEAM = 6, 0  # cell kinds: flexmb.results.drawing.cell_kinds() with the shape family registered
reader, times, view, lut = open_view(pv, path, [1000, 700])
picks = [times[min(range(len(times)), key=lambda i: abs(times[i] - t))] for t in (0.3,)]
vmax = 1e-9
for k, t in enumerate(picks):
    snap = pv.ForceTime(Input=reader, IgnorePipelineTime=1, ForcedTime=t)
    # ranges around the kind (a range of one value can be widened to the data's by ParaView's domain)
    shapes = pv.Threshold(Input=snap, Scalars=["CELLS", "cell_kind"], LowerThreshold=SHAPE - 0.5, UpperThreshold=SHAPE + 0.5)
    d = pv.Show(shapes, view)
    pv.ColorBy(d, ("POINTS", "velocity", "Magnitude"))
    d.LookupTable = lut
    d.Opacity = 0.45
    snap.UpdatePipeline()
    vmax = max(vmax, snap.PointData["velocity"].GetRange(-1)[1])
    beam = pv.Threshold(Input=snap, Scalars=["CELLS", "cell_kind"], LowerThreshold=BEAM - 0.5, UpperThreshold=BEAM + 0.5)
    tube = pv.Tube(Input=pv.ExtractSurface(Input=beam), Radius=0.02, NumberofSides=16)
    b = pv.Show(tube, view)
    b.ColorArrayName = [None, ""]
    b.DiffuseColor = b.AmbientColor = [0.85, 0.15, 0.1]
    if k == len(picks) - 1:  # (one time here; more times would be drawn over each other)
        speed_bar(pv, lut, view)
lut.RescaleTransferFunction(0.0, vmax)
title(pv, view, "UR5 with a flexible upper arm (cases/flexible_arm.py) at t = "
      + ", ".join(f"{t:.1f}" for t in picks) + " s: the URDF's collision meshes coloured by speed; red: the beam")
save(pv, view, ([2.2, -1.2, 1.2], [0.0, 0.2, 0.3], [0, 0, 1]), png, [1000, 700])
