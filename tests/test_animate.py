"""``flexmb animate`` and flexmb.results.animation (issue 12, item 7): an animation of a result
that opens anywhere. Read back with Pillow: the GIF has the frames the rule promises (every n-th
output row and the last, at most 200 by default), 640×480 pixels, the frame delay of --fps; the
axes stay fixed (the tick labels are the same pixels in every frame) and hold the whole motion
(the beam never leaves them); frames differ where the mechanism moves and only in the title
(the time) where it does not. Bad input gives one error line and exit code 2, nothing written; a
user's file is never overwritten without --overwrite, never claimed in a run folder's manifest;
the animation written into a run folder is recorded there (a later run --overwrite removes it).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from matplotlib.animation import FFMpegWriter
from PIL import Image, ImageSequence

import flexmb as fm
from flexmb.app.cli import EXIT_OK, EXIT_USAGE, main
from flexmb.errors import AnimationError, ResultFileError, RunDirError
from flexmb.results.animation import MAX_FRAMES, SIZE, animate, animation_every, choose_view
from flexmb.results.manifest import recorded

ROOT = Path(__file__).resolve().parents[1]
FOUR_BAR = ROOT / "tests" / "cases" / "four_bar.py"
ROWS = 301  # 0.6 s at dt = 2 ms
BEAM_BLUE = np.array([31, 119, 180])  # matplotlib's tab:blue, the beams' colour
PALETTE_ROUNDING = 16  # colour levels a GIF frame's 255-colour palette may move a pixel by


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("animate") / "run"
    assert main(["run", str(FOUR_BAR), "--t-end", "0.6", "--out", str(out), "-q"]) == EXIT_OK
    assert len(fm.load(out).t) == ROWS
    return out


@pytest.fixture
def run(base_run, tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(base_run, d)
    return d


def frames_of(path: Path) -> list[np.ndarray]:
    with Image.open(path) as im:
        return [np.asarray(f.convert("RGB")).astype(int) for f in ImageSequence.Iterator(im)]


def one_line_error(capsys, *words: str) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and "internal error" not in err, err
    assert 1 <= len(lines) <= 2 and lines[0].startswith("flexmb: error: "), err
    assert len(lines) == 1 or lines[1].startswith("  hint: "), err
    for w in words:
        assert w in err, (w, err)
    return err


def test_gif_frames_size_and_delay(run, capsys):
    assert main(["animate", str(run)]) == EXIT_OK
    gif = run / "animation.gif"
    assert f"animation: {gif}" in capsys.readouterr().out
    # default: the smallest step keeping at most 200 frames: every 2nd of 301 rows -> rows 0, 2, ..., 300
    assert animation_every(ROWS) == 2
    with Image.open(gif) as im:
        assert im.format == "GIF" and im.size == SIZE == (640, 480)
        assert im.n_frames == 151 <= MAX_FRAMES
        assert im.info["duration"] == 50  # ms: 20 frames per second
    assert main(["animate", str(run), "--every", "7", "--fps", "10", "--out", str(run / "slow.gif")]) == EXIT_OK
    with Image.open(run / "slow.gif") as im:
        assert im.n_frames == len(range(0, ROWS, 7)) + 1 == 44  # and the last row (300 is no multiple of 7)
        assert im.info["duration"] == 100
    assert not list(run.glob(".*.tmp"))  # written under a temporary name, then renamed


def test_default_frame_count_never_exceeds_the_limit():
    for n in (1, 2, 199, 200, 201, 202, 398, 399, 400, 1301, 10_001):
        every = animation_every(n)
        count = len(sorted(set(range(0, n, every)) | {n - 1}))
        assert count <= MAX_FRAMES and (every == 1 or len(sorted(set(range(0, n, every - 1)) | {n - 1})) > MAX_FRAMES)


def test_frames_show_the_motion_on_fixed_axes(run, tmp_path):
    res = fm.load(run)
    moving = frames_of(animate(res, tmp_path / "moving.gif"))
    # the same result with the mechanism held at its first pose: only the title (the time) changes
    held = fm.load(run)
    for a in (held.x, held.R, held.joint_points):
        a[:] = a[0]
    still = frames_of(animate(held, tmp_path / "still.gif"))
    assert len(moving) == len(still) == 151
    # rows where a frame differs from another by more than a GIF palette's rounding (a palette per frame)
    rows_changed = lambda a, b: np.flatnonzero((np.abs(a - b).max(axis=2) > PALETTE_ROUNDING).any(axis=1))  # noqa: E731
    title = max(rows_changed(still[0], f).max() for f in still[1:]) + 1  # the band the time is written in
    assert 0 < title < 40
    for k in (1, 50, 150):
        changed = rows_changed(moving[0], moving[k])
        assert changed.size and changed.max() >= title  # the mechanism moved below the title
        assert np.abs(moving[k][-30:] - moving[0][-30:]).max() <= PALETTE_ROUNDING  # x tick labels: the axes stay put
    blue = [int((np.abs(f - BEAM_BLUE).sum(axis=2) < 30).sum()) for f in moving]
    assert min(blue) > 0.6 * max(blue)  # the coupler (1 m) stays whole inside the axes in every frame


def test_views_and_the_automatic_choice(run, tmp_path):
    res = fm.load(run)
    pts = np.zeros((2, 3, 3))
    pts[:, :, 0], pts[:, :, 2] = [[0, 1, 2], [1, 2, 3]], [[0, 1, 0], [1, 0, 1]]
    assert choose_view(pts) == "xz"
    pts[0, 0, 1] = 0.5
    assert choose_view(pts) == "3d"
    assert choose_view(res.x) == "xy"  # the four-bar moves in the x-y plane
    auto = frames_of(animate(res, tmp_path / "auto.gif", every=50))
    xy = frames_of(animate(res, tmp_path / "xy.gif", every=50, view="xy"))
    assert all(np.array_equal(a, b) for a, b in zip(auto, xy))
    for view in ("xz", "yz", "3d"):
        f = frames_of(animate(res, tmp_path / f"{view}.gif", every=50, view=view))
        assert len(f) == 7 and f[0].shape == (480, 640, 3)  # rows 0, 50, ..., 300


def test_npz_result_gets_its_animation_beside_it(run, tmp_path, capsys):
    npz = fm.load(run).save(tmp_path / "four_bar.npz")
    assert main(["animate", str(npz), "--every", "100"]) == EXIT_OK
    with Image.open(tmp_path / "four_bar.gif") as im:
        assert im.n_frames == 4  # rows 0, 100, 200, 300


def test_written_into_a_run_folder_it_is_recorded_and_removed_with_the_run(run, tmp_path, capsys):
    assert main(["animate", str(run), "--every", "50"]) == EXIT_OK
    assert "animation.gif" in recorded(run)
    outside = tmp_path / "elsewhere" / "a.gif"
    assert main(["animate", str(run), "--every", "50", "--out", str(outside)]) == EXIT_OK
    assert outside.exists() and not any("a.gif" in f for f in recorded(run))  # not in the run folder: not its file
    assert main(["run", str(FOUR_BAR), "--t-end", "0.01", "--out", str(run), "--overwrite", "-q"]) == EXIT_OK
    assert not (run / "animation.gif").exists()  # flexmb's own file, replaced with the run


def test_a_users_file_is_never_overwritten_or_claimed(run, capsys):
    mine = run / "mine.gif"
    mine.write_bytes(b"my precious animation")
    for args in (["--out", str(mine)], ["--out", str(mine), "--every", "3", "--view", "xz"]):
        assert main(["animate", str(run), *args]) == EXIT_USAGE
        one_line_error(capsys, f"'{mine}' already exists", "--overwrite")
    assert mine.read_bytes() == b"my precious animation" and "mine.gif" not in recorded(run)
    # flexmb's own animation is not replaced without --overwrite either; with it, it is
    assert main(["animate", str(run), "--every", "100"]) == EXIT_OK
    first = (run / "animation.gif").read_bytes()
    assert main(["animate", str(run), "--every", "50"]) == EXIT_USAGE
    one_line_error(capsys, "already exists")
    assert (run / "animation.gif").read_bytes() == first
    assert main(["animate", str(run), "--every", "50", "--overwrite"]) == EXIT_OK
    with Image.open(run / "animation.gif") as im:
        assert im.n_frames == 7
    # a folder or a symbolic link in the file's place: refused even with --overwrite
    (run / "dir.gif").mkdir()
    (run / "link.gif").symlink_to(mine)
    for name, words in (("dir.gif", "is a folder"), ("link.gif", "symbolic link")):
        assert main(["animate", str(run), "--out", str(run / name), "--overwrite"]) == EXIT_USAGE
        one_line_error(capsys, words)
    assert mine.read_bytes() == b"my precious animation"


def _damage_chunk(d: Path) -> None:
    chunk = sorted(d.glob("chunk_*.npz"))[0]
    chunk.write_bytes(chunk.read_bytes()[:200])


def _damage_meta(d: Path) -> None:
    (d / "meta.json").write_text("{not json")


def _damage_drawing(d: Path) -> None:
    meta = json.loads((d / "meta.json").read_text())
    meta["drawing"]["beam_a"]["data"][0] = 99
    (d / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("args, words", [
    (["--view", "top"], ["invalid choice: 'top'", "xy"]),
    (["--out", "movie.avi"], ["unknown format '.avi'", ".gif or .mp4"]),
    (["--out", "movie"], ["unknown format '(no ending)'"]),
    (["--fps", "0"], ["fps = 0.0 must be a positive number"]),
    (["--fps", "nan"], ["fps = nan"]),
    (["--fps", "60"], ["too fast for a GIF", "at most 50"]),
    (["--every", "0"], ["every = 0 must be a positive integer"]),
    (["--every", "two"], ["invalid int value"]),
])
def test_bad_options_give_one_line_and_exit_2(run, args, words, capsys, monkeypatch):
    monkeypatch.chdir(run)
    before = sorted(p.name for p in run.iterdir())
    manifest = (run / "manifest.json").read_text()
    assert main(["animate", str(run), *args]) == EXIT_USAGE
    one_line_error(capsys, *words)
    assert sorted(p.name for p in run.iterdir()) == before and (run / "manifest.json").read_text() == manifest


@pytest.mark.parametrize("damage, words", [(_damage_chunk, "chunk_00000.npz"), (_damage_meta, "meta.json"),
                                           (_damage_drawing, "drawing 'beam_a' points at node 99")])
def test_damaged_result_gives_one_line_and_exit_2(run, damage, words, capsys):
    damage(run)
    assert main(["animate", str(run)]) == EXIT_USAGE
    one_line_error(capsys, words)
    assert not (run / "animation.gif").exists()
    assert main(["animate", str(run.parent / "no_such_run")]) == EXIT_USAGE
    one_line_error(capsys, "does not exist")


def test_python_api_refuses_before_writing(run, tmp_path):
    res = fm.load(run)
    with pytest.raises(AnimationError, match="view 'top'"):
        animate(res, tmp_path / "a.gif", view="top")
    with pytest.raises(AnimationError, match="every = 1.5"):
        animate(res, tmp_path / "a.gif", every=1.5)
    empty = fm.load(run)
    empty.drawing = {}
    with pytest.raises(ResultFileError, match="no drawing topology"):
        animate(empty, tmp_path / "a.gif")
    (tmp_path / "b.gif").write_text("x")
    with pytest.raises(RunDirError, match="already exists"):
        animate(res, tmp_path / "b.gif")
    assert not (tmp_path / "a.gif").exists() and (tmp_path / "b.gif").read_text() == "x"


def test_mp4_without_ffmpeg_is_refused(run, capsys, monkeypatch):
    monkeypatch.setattr(FFMpegWriter, "isAvailable", classmethod(lambda cls: False))
    assert main(["animate", str(run), "--out", str(run / "a.mp4")]) == EXIT_USAGE
    one_line_error(capsys, "needs ffmpeg", "--out NAME.gif")
    assert not (run / "a.mp4").exists() and "a.mp4" not in recorded(run)


def _ffmpeg(monkeypatch) -> str | None:
    """ffmpeg's path: the system's, or the one the imageio-ffmpeg package ships (if installed)."""
    if not FFMpegWriter.isAvailable():
        try:
            import imageio_ffmpeg  # optional: not a dependency of flexmb
        except ImportError:
            return None
        monkeypatch.setitem(matplotlib.rcParams, "animation.ffmpeg_path", imageio_ffmpeg.get_ffmpeg_exe())
    return FFMpegWriter.bin_path() if FFMpegWriter.isAvailable() else None


def test_mp4_where_ffmpeg_is_installed(run, monkeypatch):
    exe = _ffmpeg(monkeypatch)
    if exe is None:
        pytest.skip("ffmpeg is not installed (neither on the PATH nor through imageio-ffmpeg)")
    assert main(["animate", str(run), "--out", str(run / "a.mp4"), "--fps", "25"]) == EXIT_OK
    info = subprocess.run([exe, "-i", str(run / "a.mp4")], capture_output=True, text=True).stderr
    assert "h264" in info and "640x480" in info and "yuv420p" in info and "25 fps" in info
    h, m, s = re.search(r"Duration: (\d+):(\d+):([\d.]+)", info).groups()
    assert float(s) + 60 * int(m) == pytest.approx(151 / 25, abs=0.05)  # 151 frames at 25 per second
    assert "a.mp4" in recorded(run) and not list(run.glob(".*.tmp"))


def test_help():
    p = subprocess.run([str(Path(sys.executable).parent / "flexmb"), "animate", "--help"], capture_output=True, text=True,
                       timeout=600)  # the timeout only guards against a hang
    assert p.returncode == 0 and "usage: flexmb animate" in p.stdout and "--view" in p.stdout and "exit codes" in p.stdout
