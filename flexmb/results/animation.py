"""Animations of a result that open anywhere (no ParaView needed): a GIF, or an MP4 where ffmpeg
is installed, drawn by matplotlib from the result's stored drawing topology
(flexmb.results.drawing: :func:`~flexmb.results.drawing.lines` and
:func:`~flexmb.results.drawing.frames`, the same points and line cells as the ParaView files).

What is drawn, by ``cell_kind``: beam elements (flexible links) as blue lines with their nodes,
rigid bodies (a body's node to its joint points and to its centre of mass: joint and body cells)
as thick grey lines, particle bodies as grey lines, bushings as red dashed lines, spring-dampers as
green dash-dotted lines from point to point, the cells of any other element family as purple dotted
lines labelled by their kind (:func:`_style`); the points of
the joints as open circles (a joint on the ground as a black square) and the centres of mass as
dots; shapes (flexmb.builder.shapes: meshes on bodies, beams drawn with their section) as light grey
surfaces, shaded by the angle between each triangle and the light (in a plane: their silhouettes,
shaded alike), the nearest triangle at each pixel (flexmb.results.raster: the UR5's 5340 triangles
in under 10 ms a frame), under the lines. The title holds the case name and the time. The axes are fixed and hold the whole motion
(every drawn frame), with equal scales. ``view``: ``xy``, ``xz``, ``yz`` (a plane, the first
letter across) or ``3d``; ``auto`` (default) takes the plane of the two largest extents of the
motion when the third is below 1 % of the largest, else ``3d``.

Frames: every ``every``-th output row and the last (:func:`~flexmb.results.drawing.frame_indices`);
by default the smallest step that keeps at most :data:`MAX_FRAMES` frames, so an animation of a
long run stays small and quick to write. Each frame is rendered on matplotlib's Agg canvas; in a
plane only the moving artists are redrawn over the fixed axes (blitting: the demo's 187 frames in
about 2 s, where matplotlib's PillowWriter, which redraws the whole figure per frame, took 23 s).
Formats, by the file name's ending: ``.gif`` (Pillow; at most :data:`MAX_GIF_FPS` frames per
second, since GIF viewers slow faster ones down) and ``.mp4`` (H.264 through the ffmpeg
matplotlib is configured with, ``rcParams['animation.ffmpeg_path']``; refused where there is none).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from flexmb.errors import AnimationError, ResultFileError, RunDirError
from flexmb.results.drawing import cell_kinds, frames, lines, triangles
from flexmb.results.files import atomic_write

__all__ = ["MAX_FRAMES", "MAX_GIF_FPS", "VIEWS", "FORMATS", "animation_every", "animation_format", "check_request",
           "choose_view", "animate"]

MAX_FRAMES = 200
"""Default ceiling of the frames of an animation (every n-th output row, the last always)."""
MAX_GIF_FPS = 50.0
"""GIF stores frame delays in 1/100 s, and viewers show delays below 2/100 s as 1/10 s."""
VIEWS = ("auto", "xy", "xz", "yz", "3d")
FORMATS = (".gif", ".mp4")
SIZE = (640, 480)  # pixels of a frame (even numbers: H.264 needs them)
_DPI = 80
_PLANES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}
# cell kind -> (label, colour, line width, line style, z order), drawing.CELL_KINDS order
_STYLE = {0: ("flexible link (beam)", "tab:blue", 2.5, "solid", 3),
          1: ("rigid body", "0.6", 7.0, "solid", 2),  # wider than a beam: a link lying on a beam still shows
          2: ("rigid body", "0.6", 7.0, "solid", 2),
          3: ("particle body", "0.55", 2.0, "solid", 2),
          4: ("bushing (cut)", "tab:red", 2.0, "dashed", 4)}
# the styles of further element families' cell kinds, by name (drawing.cell_kinds: their numbers follow the registry)
_NAMED_STYLE = {"spring_damper": ("spring-damper", "tab:green", 2.0, "dashdot", 4),
                "actuator": ("actuator", "tab:orange", 3.0, "solid", 4),
                "rotational_spring_damper": ("rotational spring-damper", "tab:olive", 2.0, "dotted", 4)}


def _style(kind: int) -> tuple[str, str, float, str, int]:
    """The style of cell kind ``kind``: :data:`_STYLE`'s or :data:`_NAMED_STYLE`'s, or for a kind
    another element family registered (drawing.cell_kinds) a purple dotted line labelled by the
    kind's name."""
    if kind in _STYLE:
        return _STYLE[kind]
    names = cell_kinds()
    if 0 <= kind < len(names) and names[kind] in _NAMED_STYLE:
        return _NAMED_STYLE[names[kind]]
    return (names[kind] if 0 <= kind < len(names) else f"cell kind {kind}"), "tab:purple", 1.5, "dotted", 4


def animation_every(n_rows: int, every: int | None = None, max_frames: int = MAX_FRAMES) -> int:
    """Draw every ``every``-th output row; by default (None or 0) the smallest step that keeps
    at most ``max_frames`` frames (``frame_indices`` adds the last row: ceil((n - 1)/every) + 1)."""
    if every:
        return int(every)
    return max(1, math.ceil((n_rows - 1) / max(1, max_frames - 1)))


def animation_format(path: str | Path) -> str:
    """``.gif`` or ``.mp4`` from the file name's ending (any case); AnimationError otherwise."""
    # matplotlib and Pillow are imported where they are used: they take half a second to load, and the
    # `flexmb` command imports this module at its start for the constants of its options
    from matplotlib.animation import FFMpegWriter

    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise AnimationError(f"animation file '{path}': unknown format '{Path(path).suffix or '(no ending)'}'; "
                             f"the file name must end in {' or '.join(FORMATS)}", "e.g. --out animation.gif")
    if suffix == ".mp4" and not FFMpegWriter.isAvailable():
        raise AnimationError(f"animation file '{path}': writing MP4 needs ffmpeg, which is not installed (matplotlib "
                             "looks for it as rcParams['animation.ffmpeg_path'])",
                             "install ffmpeg (apt-get install ffmpeg), or write a GIF: --out NAME.gif")
    return suffix


def check_request(result, path: str | Path, every: int | None = None, fps: float = 20.0, view: str = "auto",
                  overwrite: bool = False) -> Path:
    """The animation file ``path``, after checking everything :func:`animate` needs before it
    writes anything: the file (a known format, :func:`animation_format`; not a folder or a
    symbolic link; not an existing file without ``overwrite``: RunDirError), the arguments
    (AnimationError) and the result (drawing topology and at least one output row:
    ResultFileError)."""
    p = Path(path)
    fmt = animation_format(p)
    if p.is_symlink():
        raise RunDirError(f"'{p}' is a symbolic link; flexmb writes an animation only to a real file",
                          "remove the link or choose another file name (--out)")
    if p.is_dir():
        raise RunDirError(f"'{p}' is a folder, not an animation file", "give a file name ending in .gif or .mp4 (--out)")
    if p.exists() and not overwrite:
        raise RunDirError(f"'{p}' already exists", "pass --overwrite (overwrite=True) to replace it, or choose another "
                          "file name (--out)")
    if view not in VIEWS:
        raise AnimationError(f"view {view!r} is not one of {', '.join(VIEWS)}", "e.g. --view xy")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not (0 < fps < math.inf):
        raise AnimationError(f"fps = {fps!r} must be a positive number of frames per second", "e.g. --fps 20")
    if fmt == ".gif" and fps > MAX_GIF_FPS:
        raise AnimationError(f"fps = {fps:g} is too fast for a GIF (at most {MAX_GIF_FPS:g}: GIF viewers show faster "
                             "frames at 10 per second)", "use --fps 50 or less, or write an MP4 (--out NAME.mp4)")
    if every is not None and (isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1):
        raise AnimationError(f"every = {every!r} must be a positive integer (draw every n-th output row)", "e.g. --every 5")
    if not result.drawing:
        raise ResultFileError("this result holds no drawing topology (saved by an older flexmb), so it cannot be drawn",
                              "run the case again with this flexmb")
    if len(result.t) == 0:
        raise ResultFileError(f"this result holds no output rows (status: {result.status}): nothing to animate",
                              "run the case again (flexmb run CASE); its status says why it stopped")
    return p


def choose_view(points: np.ndarray) -> str:
    """``xy``, ``xz``, ``yz`` or ``3d`` for points (..., 3) of the whole motion: the plane of
    the two largest extents when the third is below 1 % of the largest, else ``3d``."""
    ext = np.ptp(points.reshape(-1, 3), axis=0)
    order = np.argsort(ext)
    if ext[order[0]] > 0.01 * max(ext[order[2]], 1e-300):
        return "3d"
    a, b = sorted(order[1:])
    return "xyz"[a] + "xyz"[b]


def _span(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Limits holding [lo, hi] with a 6 % margin; an extent below 5 % of the largest is widened to that."""
    ext = hi - lo
    big = max(float(ext.max()), 1e-9)
    ext = np.maximum(ext, 0.05 * big)
    mid = (lo + hi) / 2
    return mid - 0.56 * ext, mid + 0.56 * ext


def animate(result, path: str | Path, every: int | None = None, fps: float = 20.0, view: str = "auto",
            overwrite: bool = False, title: str | None = None) -> Path:
    """Write an animation of ``result``'s motion to ``path`` (``.gif`` or ``.mp4``, module
    docstring) and return the path.

    ``every``: draw every n-th output row (default :func:`animation_every`: at most
    :data:`MAX_FRAMES` frames); ``fps``: frames per second of the file (GIF: at most
    :data:`MAX_GIF_FPS`); ``view``: one of :data:`VIEWS`; ``overwrite``: replace an existing
    file; ``title``: the name in the title (default: the result's case name). Refused before
    anything is written (:func:`check_request`): a bad argument (AnimationError), an existing
    file without ``overwrite``, a folder or a link (RunDirError), a result without drawing
    topology or output rows (ResultFileError). The file is written to a temporary name beside it and
    renamed when complete (flexmb.results.files), so it is never seen half written."""
    p = check_request(result, path, every, fps, view, overwrite)
    fmt = animation_format(p)
    scene = _Scene(result, animation_every(len(result.t), every), view, title)
    p.parent.mkdir(parents=True, exist_ok=True)
    if fmt == ".gif":
        images = []
        for rgba in scene.rendered():
            images.append(_palette_image(rgba))
        atomic_write(p, lambda f: images[0].save(f, format="GIF", save_all=True, append_images=images[1:],
                                                 duration=round(1000 / fps), loop=0))
        return p
    with tempfile.TemporaryDirectory(prefix="flexmb-animate-") as work:  # ffmpeg's own file, then flexmb's atomic write
        movie = Path(work) / "movie.mp4"
        _encode_mp4(scene, fps, movie)
        with open(movie, "rb") as src:
            atomic_write(p, lambda f: shutil.copyfileobj(src, f))
    return p


def _encode_mp4(scene: _Scene, fps: float, path: Path) -> None:
    """Pipe the scene's frames (raw RGBA) through ffmpeg (the one matplotlib's FFMpegWriter
    runs, rcParams['animation.ffmpeg_path']) into ``path``: H.264 in yuv420p (the pixel format
    every player reads), its index at the front (plays while it loads). Piped here rather than
    by FFMpegWriter.grab_frame, which redraws the whole figure for every frame."""
    from matplotlib.animation import FFMpegWriter  # see animation_format

    w, h = SIZE
    cmd = [FFMpegWriter.bin_path(), "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgba", "-s", f"{w}x{h}",
           "-framerate", f"{fps:g}", "-i", "pipe:", "-vcodec", "h264", "-pix_fmt", "yuv420p", "-movflags", "+faststart",
           "-f", "mp4", "-y", str(path)]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err)
        try:
            for rgba in scene.rendered():
                proc.stdin.write(np.ascontiguousarray(rgba).tobytes())
            proc.stdin.close()
        except BrokenPipeError:  # ffmpeg ended early: its exit code and message below say why
            pass
        finally:
            code = proc.wait()
        if code:
            err.seek(0)
            text = err.read().decode(errors="replace").strip().splitlines()
            raise AnimationError(f"ffmpeg failed to write '{path}' (exit code {code}): {text[-1] if text else 'no message'}",
                                 "write a GIF instead (--out NAME.gif), or check the ffmpeg installation")


_LIGHT = np.array([0.3, -0.5, 0.81]) / np.linalg.norm([0.3, -0.5, 0.81])  # 3-D: from above, front, right

_MARKERS = {"node": ("beam node", dict(marker="o", markersize=3, color="tab:blue", zorder=5)),
            "joint": ("joint", dict(marker="o", markersize=7, markerfacecolor="white", markeredgecolor="k", zorder=6)),
            "ground": ("joint on the ground", dict(marker="s", markersize=7, color="k", zorder=6)),
            "com": ("centre of mass", dict(marker="o", markersize=4, color="0.2", zorder=5))}


class _Scene:
    """The figure of an animation and its moving artists: line collections by cell kind and
    point markers, set to one drawn output row after another."""

    def __init__(self, result, every: int, view: str, title: str | None) -> None:
        # see animation_format
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import LineCollection
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
        from mpl_toolkits.mplot3d.art3d import Line3DCollection

        d = result.drawing
        self.drawn = [(t, pts) for _, t, pts, _, _ in frames(result, d, every)]
        self.cells, self.kind, _ = lines(d)
        allpts = np.stack([pts for _, pts in self.drawn])
        self.view = choose_view(allpts) if view == "auto" else view
        self.three = self.view == "3d"
        self.axes = [0, 1, 2] if self.three else list(_PLANES[self.view])
        name = title if title is not None else str(result.meta.get("case_name") or "result")
        status = result.status.partition(":")[0].strip()
        self.head = name + ("" if status == "finished" else f"  (run {status})")
        times = np.array([t for t, _ in self.drawn])
        gap = float(np.diff(times).min()) if times.size > 1 else 1.0
        self.decimals = int(min(6, max(0, math.ceil(-math.log10(gap)) if gap > 0 else 3)))
        self.fig = Figure(figsize=(SIZE[0] / _DPI, SIZE[1] / _DPI), dpi=_DPI)
        self.canvas = FigureCanvasAgg(self.fig)
        # computed_zorder=False: in 3-D too the kinds are stacked by their z order (_style), not by depth
        ax = self.ax = self.fig.add_subplot(projection="3d", computed_zorder=False) if self.three else self.fig.add_subplot()
        self.colls: dict[int, LineCollection | Line3DCollection] = {}
        seen: set[str] = set()
        for k in np.unique(self.kind).tolist():
            label, colour, width, style, z = _style(int(k))
            Coll = Line3DCollection if self.three else LineCollection
            self.colls[k] = Coll([], colors=colour, linewidths=width, linestyles=style, zorder=z,
                                 label=None if label in seen else label)
            seen.add(label)
            if self.three:
                ax.add_collection3d(self.colls[k], autolim=False)
            else:
                ax.add_collection(self.colls[k])
        self.tris = triangles(d)[0]
        self.shape_pts = np.zeros((0, 3))  # the shapes: drawn into the canvas under the lines (_draw_shapes)
        self.groups = _point_groups(d, result, allpts.shape[1], self.cells, self.kind)
        self.markers = {key: ax.plot(*([[]] * len(self.axes)), linestyle="none", label=label, **style)[0]
                        for key, (label, style) in _MARKERS.items() if self.groups[key].size}
        lo, hi = _span(allpts.min(axis=(0, 1))[self.axes], allpts.max(axis=(0, 1))[self.axes])
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_xlabel(f"{'xyz'[self.axes[0]]} [m]")
        ax.set_ylabel(f"{'xyz'[self.axes[1]]} [m]")
        if self.three:
            ax.set_zlim(lo[2], hi[2])
            ax.set_zlabel("z [m]")
            ax.set_box_aspect(hi - lo)
            for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
                axis.set_major_locator(MaxNLocator(4))
        else:
            ax.set_aspect("equal", adjustable="box")
            ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", borderaxespad=0.0)
        self._set(*self.drawn[-1])  # the longest title and the whole layout before it is fixed
        self.fig.tight_layout()

    def _set(self, t: float, pts: np.ndarray) -> None:
        sel = pts[:, self.axes]
        self.shape_pts = pts  # drawn by _shapes_image once the view's projection is fixed
        for k, coll in self.colls.items():
            coll.set_segments(sel[self.cells[self.kind == k]])
        for key, m in self.markers.items():
            q = sel[self.groups[key]]
            if self.three:
                m.set_data_3d(q[:, 0], q[:, 1], q[:, 2])
            else:
                m.set_data(q[:, 0], q[:, 1])
        self.ax.set_title(f"{self.head}    t = {t:.{self.decimals}f} s")

    def updated(self):
        """Set the artists to each drawn row in turn (yields the row's time)."""
        for t, pts in self.drawn:
            self._set(t, pts)
            yield t

    def _draw_shapes(self) -> None:
        """Draw the shapes at the current row into the canvas (flexmb.results.raster): their points
        projected as the lines are (in 3-D by the view's projection, in a plane by its axes), the
        nearest triangle at each pixel, shaded by the angle to the light (in a plane: to its normal)."""
        from mpl_toolkits.mplot3d import proj3d  # see animation_format

        from flexmb.results.raster import rasterize, shade  # numba's kernel: loaded only when shapes are drawn

        pts = self.shape_pts
        if self.three:
            xs, ys, depth = proj3d.proj_transform(pts[:, 0], pts[:, 1], pts[:, 2], self.ax.M)
            xy = np.stack([xs, ys], axis=1)
            light = _LIGHT
        else:
            xy, third = pts[:, self.axes], 3 - sum(self.axes)
            depth = pts[:, third] * (1.0 if third == 1 else -1.0)  # xz: the eye on -y; xy, yz: on +z, +x
            light = np.eye(3)[third]
        image = np.asarray(self.canvas.buffer_rgba())
        disp = self.ax.transData.transform(xy)
        disp[:, 1] = image.shape[0] - disp[:, 1]  # image rows from the top
        rasterize(disp, depth, self.tris, shade(pts[self.tris], light), image)

    def rendered(self):
        """Each drawn row as an RGBA image (height, width, 4) uint8. The axes, grid, panes and legend
        are drawn once and only the moving artists and the title on top of them (Agg blitting; in
        3-D the view does not turn, so the projection of the first full draw holds: each moving
        collection is projected with it before it is drawn). The shapes are drawn first, into the
        canvas's pixels (:meth:`_draw_shapes`)."""
        moving = sorted([*self.colls.values(), *self.markers.values()], key=lambda a: a.get_zorder()) + [self.ax.title]
        for a in moving:
            a.set_animated(True)
        self.canvas.draw()
        background = self.canvas.copy_from_bbox(self.fig.bbox)
        for _ in self.updated():
            self.canvas.restore_region(background)
            if len(self.tris):
                self._draw_shapes()
            for a in moving:
                if self.three and hasattr(a, "do_3d_projection"):
                    a.do_3d_projection()
                self.ax.draw_artist(a)
            yield np.asarray(self.canvas.buffer_rgba())
        for a in moving:
            a.set_animated(False)


def _palette_image(rgba: np.ndarray):
    """An RGBA frame as a GIF palette image (a palette per frame, by Pillow's fast octree: a drawing
    has few colours), with the near-white entries made white (the octree averages each colour
    bucket, which would tint the background from frame to frame)."""
    from PIL import Image  # see animation_format

    im = Image.fromarray(rgba[:, :, :3]).quantize(colors=255, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    pal = np.array(im.getpalette(), dtype=np.int64).reshape(-1, 3)
    pal[(pal >= 248).all(axis=1)] = 255
    im.putpalette(pal.ravel().tolist())
    return im


def _point_groups(d: dict, result, n_points: int, cells: np.ndarray, kind: np.ndarray) -> dict[str, np.ndarray]:
    """Indices of the drawn points (drawing order: nodes, joint points, centres of mass, then the
    shapes' points) by marker: beam nodes, joints (those drawn: not free joints), joints on the ground,
    centres of mass (the ends of the body cells; the points of other families, e.g. a spring-damper's,
    are their lines' ends only)."""
    n_nodes = result.x.shape[1]
    n_joints = result.joint_points.shape[1]
    drawn = np.asarray(d.get("joint_draw", np.ones(n_joints)), dtype=bool)
    ground = np.asarray(d.get("joint_parent", np.zeros(n_joints)), dtype=np.int64) < 0
    joints = n_nodes + np.arange(n_joints)
    return {"node": np.unique(cells[kind == 0]).astype(np.int64),
            "joint": joints[drawn & ~ground], "ground": joints[drawn & ground],
            "com": np.unique(cells[kind == 2][:, 1]).astype(np.int64)}  # body cells: node -> centre of mass
