"""Render the README picture with ParaView (run by pvbatch, under xvfb-run if needed):

    xvfb-run -a pvbatch docs/render_paraview.py runs/sharma_saha_arm/paraview/sharma_saha_arm.pvd docs/arm_paraview.png

Opens the demo's .pvd (PVD reader) and shows the arm at five times of its motion, each drawn
the way the README suggests: a Tube filter on the line cells (links), coloured by the speed
of the points, and a Glyph filter (arrows) on the node axis e1 to show the node frames.
"""

import sys

import paraview.simple as pv

path, png = sys.argv[1], sys.argv[2]
reader = pv.PVDReader(FileName=path)
times = list(reader.TimestepValues)
view = pv.CreateView("RenderView")
view.ViewSize = [1000, 620]
view.Background = [1, 1, 1]
view.OrientationAxesVisibility = 0
try:
    view.UseColorPaletteForBackground = 0
except AttributeError:
    pass
picks = [times[int(round(f * (len(times) - 1)))] for f in (0.0, 0.25, 0.5, 0.75, 1.0)]
lut = pv.GetColorTransferFunction("velocity")
lut.ApplyPreset("Viridis (matplotlib)", True)
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
        bar = pv.GetScalarBar(lut, view)
        bar.Title = "speed [m/s]"
        bar.ComponentTitle = ""
        bar.TitleColor = bar.LabelColor = [0.1, 0.1, 0.1]
        bar.Visibility = 1
lut.RescaleTransferFunction(0.0, vmax)
text = pv.Text(Text="Sharma & Saha two-link arm (flexmb demo): t = "
               + ", ".join(f"{t:.1f}" for t in picks) + " s; tubes: links, arrows: node axis e1")
td = pv.Show(text, view)
td.FontSize = 13
td.Color = [0.1, 0.1, 0.1]
td.WindowLocation = "Upper Center"
view.CameraPosition = [0.6, -0.3, 4.0]
view.CameraFocalPoint = [0.6, -0.3, 0.0]
view.CameraViewUp = [0, 1, 0]
pv.ResetCamera(view)
view.CameraParallelProjection = 1
pv.Render(view)
pv.SaveScreenshot(png, view, ImageResolution=[1000, 620])
print("wrote", png)
