"""The parts the ParaView pictures of the docs share (docs/render_paraview.py, docs/render_flexible_arm.py,
run by pvbatch): a white render view over a run's .pvd with the speed colour map, the speed bar, and
the title, camera and screenshot.
"""

from typing import Any


def open_view(pv: Any, path: str, size: list[int]) -> tuple[Any, list[float], Any, Any]:
    """(reader, output times, view, colour map of the speed) for the .pvd ``path``: a render view of
    ``size`` on white without the orientation axes, the colour map Viridis (matplotlib)."""
    reader = pv.PVDReader(FileName=path)
    times = list(reader.TimestepValues)
    view = pv.CreateView("RenderView")
    view.ViewSize = size
    view.Background = [1, 1, 1]
    view.OrientationAxesVisibility = 0
    try:
        view.UseColorPaletteForBackground = 0
    except AttributeError:
        pass
    lut = pv.GetColorTransferFunction("velocity")
    lut.ApplyPreset("Viridis (matplotlib)", True)
    return reader, times, view, lut


def speed_bar(pv: Any, lut: Any, view: Any) -> None:
    """The colour bar of the speed, dark text."""
    bar = pv.GetScalarBar(lut, view)
    bar.Title = "speed [m/s]"
    bar.ComponentTitle = ""
    bar.TitleColor = bar.LabelColor = [0.1, 0.1, 0.1]
    bar.Visibility = 1


def title(pv: Any, view: Any, text: str) -> None:
    """``text`` above the picture, dark, 13 pt."""
    td = pv.Show(pv.Text(Text=text), view)
    td.FontSize = 13
    td.Color = [0.1, 0.1, 0.1]
    td.WindowLocation = "Upper Center"


def save(pv: Any, view: Any, camera: tuple[list[float], list[float], list[float]], png: str, size: list[int],
         parallel: bool = False) -> None:
    """The camera (position, focal point, view up), reset to the data, the parallel projection if
    ``parallel``, then the screenshot ``png`` of ``size``."""
    view.CameraPosition, view.CameraFocalPoint, view.CameraViewUp = camera
    pv.ResetCamera(view)
    if parallel:
        view.CameraParallelProjection = 1
    pv.Render(view)
    pv.SaveScreenshot(png, view, ImageResolution=size)
    print("wrote", png)
