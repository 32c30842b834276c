"""What flexmb writes when the writing goes wrong: a run killed in the middle of its case's
postprocess, a case name too long for a file name, a full or read-only disk, an output folder
that is a symbolic link. flexmb owns what it wrote (and only that), never writes outside the
folder it was given, and reports the environment's faults as such, not as a bug of its own."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import meshio
import numpy as np
import pytest
from matplotlib.figure import Figure

import flexmb as fm
from flexmb.app.casefile import load_case
from flexmb.app.cli import EXIT_OK, EXIT_USAGE, main
from flexmb.results.manifest import foreign_files, recorded, recording
from flexmb.results.paraview import MAX_NAME_BYTES, safe_name, write_pvd
from flexmb.results.rundir import RunWriter
from flexmb.solvers.simulate import simulate

PENDULUM = Path(__file__).resolve().parent / "cases" / "flexible_pendulum.py"
LONG_NAME = "a_case_whose_name_goes_on_" * 200  # 5200 characters

KILLED_CASE = '''"""A pendulum whose postprocess writes figures, and with kill=1 is killed in the middle of one."""
import os
import signal

import numpy as np
import flexmb as fm

DEFAULTS = dict(t_end=0.005, dt=1e-3, kill=0)


def build(**p):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n", (0, 0, 0))
    mb.add_body("rod", "n", 1.0, (0.5, 0, 0), np.diag([0, 1, 1]) / 12)
    mb.add_joint("pin", "revolute", "ground", "n", axis=(0, 0, 1))
    return mb.compile()


def postprocess(result, model, params, out_dir):
    (out_dir / "figures").mkdir(exist_ok=True)
    for name in ("figures/fig9_forces_undamped.png", "fig10_forces_damped.png"):
        with open(out_dir / name, "wb") as f:
            f.write(b"\\x89PNG\\r\\n\\x1a\\n the first bytes of a figure")
            f.flush()
            if params["kill"] and name.startswith("fig10"):
                os.kill(os.getpid(), signal.SIGKILL)  # as a kill -9 in the middle of the write
            f.write(b" and the rest")
    return {}
'''


def test_recording_records_a_file_before_it_is_written_and_nothing_else(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "users_notes.txt").write_text("the user's notes")
    outside = tmp_path / "beside.txt"
    with recording(d):
        assert (d / "users_notes.txt").read_text() == "the user's notes"  # read: not claimed
        with open(d / "fig.png", "wb") as f:
            assert "fig.png" in recorded(d)  # recorded when opened, before any byte is written
            f.write(b"png")
        Path(d / "sub").mkdir()
        fd = os.open(d / "sub" / "data.bin", os.O_WRONLY | os.O_CREAT)
        assert "sub/data.bin" in recorded(d)
        os.close(fd)
        outside.write_text("outside the run folder")
        (d / ".table.csv.tmp").write_text("a,b")
        os.replace(d / ".table.csv.tmp", d / "table.csv")
    assert recorded(d) == {"fig.png", "sub/data.bin", ".table.csv.tmp", "table.csv"}
    assert foreign_files(d) == ["users_notes.txt"]
    with open(d / "late.txt", "w") as f:  # after the block: not recorded
        f.write("late")
    assert "late.txt" not in recorded(d)


def test_overwrite_after_a_kill_in_the_middle_of_the_postprocess(tmp_path, capsys):
    case = tmp_path / "killed.py"
    case.write_text(KILLED_CASE)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "flexmb.app.cli", "run", str(case), "--out", str(out), "-q", "--param", "kill=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (out / "fig10_forces_damped.png").read_bytes().endswith(b"the first bytes of a figure")  # killed mid-write
    assert not (out / "summary.json").exists()  # killed before the run's last step
    assert foreign_files(out) == []  # every file the killed postprocess wrote is flexmb's
    (out / "notes.txt").write_text("the user's notes")
    assert main(["run", str(case), "--out", str(out), "-q", "--overwrite"]) == EXIT_USAGE  # a user's file: still refused
    assert "notes.txt" in capsys.readouterr().err and (out / "notes.txt").exists()
    (out / "notes.txt").unlink()
    assert main(["run", str(case), "--out", str(out), "-q", "--overwrite"]) == EXIT_OK
    assert (out / "fig10_forces_damped.png").read_bytes().endswith(b"and the rest")
    assert {"fig10_forces_damped.png", "figures/fig9_forces_undamped.png", "summary.json"} <= recorded(out)


def one_line_error(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and "internal error" not in err, err
    assert 1 <= len(lines) <= 2 and lines[0].startswith("flexmb: error: "), err
    for w in words:
        assert w in err, (w, err)


def pendulum_run(out: Path, case_name: str) -> Path:
    """The flexible pendulum's default run streamed into ``out`` with ``case_name`` as its stored case name."""
    case = load_case(PENDULUM)
    p = case.defaults
    simulate(case.build(p), p["t_end"], p["dt"], rho_inf=p["rho_inf"], out=RunWriter(out, meta={"case_name": case_name}))
    return out


@pytest.fixture(scope="module")
def long_named_run(tmp_path_factory) -> Path:
    return pendulum_run(tmp_path_factory.mktemp("long") / "run", LONG_NAME)


# ------------------------------------------------------------------------ a case name too long for a file name
def test_a_case_name_too_long_for_a_file_name_is_shortened_the_same_way_every_time(long_named_run, capsys):
    run = long_named_run
    assert main(["export", str(run)]) == EXIT_OK
    assert main(["export", str(run), "--format", "xdmf"]) == EXIT_OK
    first = sorted(p.name for p in (run / "paraview").iterdir())
    stem = safe_name(LONG_NAME)
    assert len(stem.encode()) <= MAX_NAME_BYTES and LONG_NAME.startswith(stem[:-9]) and stem[-9] == "-"
    assert f"{stem}.pvd" in first and f"{stem}.xdmf" in first and f"{stem}.h5" in first
    assert all(len(n.encode()) < 255 for n in first)
    assert main(["export", str(run), "--overwrite"]) == EXIT_OK  # the same names: replaced, none added
    assert sorted(p.name for p in (run / "paraview").iterdir()) == first
    # two long names that differ only after the kept beginning give different stems; multi-byte letters are counted as bytes
    assert safe_name(LONG_NAME + "x") != stem and safe_name(LONG_NAME + "x")[:-9] == stem[:-9]
    wide = safe_name("é" * 3000)
    assert len(wide.encode()) <= MAX_NAME_BYTES and wide.startswith("éé") and safe_name("é" * 3000) == wide
    assert safe_name("short_name") == "short_name"
    # a name the user gives is refused, not changed
    capsys.readouterr()
    assert main(["export", str(run), "--name", LONG_NAME]) == EXIT_USAGE
    one_line_error(capsys.readouterr().err, "--name", "5200 bytes long", f"more than the {MAX_NAME_BYTES}")
    with pytest.raises(ValueError, match="5200 bytes long"):
        write_pvd(fm.load(run), None, run / "elsewhere", LONG_NAME)
    assert not (run / "elsewhere").exists()


# ------------------------------------------------------------------------ a full disk, a read-only folder
def refuse(code: int, calls: list | None = None):
    """A writer that fails as the disk would (OSError ``code``, naming no file, as a full disk's
    write or close does)."""
    def write(*args, **kwargs):
        if calls is not None:
            calls.append(args)
        raise OSError(code, os.strerror(code))
    return write


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "is full"), (errno.EDQUOT, "quota is used up"),
                                         (errno.EROFS, "read-only file system"), (errno.EACCES, "permission denied")])
def test_a_disk_that_refuses_an_export_is_reported_as_such(long_named_run, tmp_path, monkeypatch, capsys, code, words):
    run = tmp_path / "run"
    shutil.copytree(long_named_run, run, ignore=shutil.ignore_patterns("paraview"))
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != "manifest.json"}
    monkeypatch.setattr(meshio, "write", refuse(code))
    capsys.readouterr()
    assert main(["export", str(run), "--out", str(tmp_path / "pv")]) == EXIT_USAGE
    err = capsys.readouterr().err
    one_line_error(err, words, str(tmp_path / "pv" / f"{safe_name(LONG_NAME)}_00000.vtu"), "hint: ", "--out DIR")
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file() and p.name != "manifest.json"} == before
    assert fm.load(run).status == "finished"


def test_a_full_disk_in_any_write_is_named(long_named_run, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    shutil.copytree(long_named_run, run, ignore=shutil.ignore_patterns("paraview"))
    # the HDF5 file of an XDMF export, a plot, a saved result, and the chunk of a running simulation
    for command, target, patch in (
            (["export", str(run), "--format", "xdmf"], run / "paraview" / f"{safe_name(LONG_NAME)}.h5", (h5py, "File")),
            (["plot", str(run), "energy"], run / "plots" / "energy.png", (Figure, "savefig")),
            (["run", str(PENDULUM), "--out", str(tmp_path / "new"), "-q"], tmp_path / "new" / "chunk_00000.npz",
             (np, "savez"))):
        with monkeypatch.context() as m:
            m.setattr(*patch, refuse(errno.ENOSPC))
            assert main(command) == EXIT_USAGE, command
        one_line_error(capsys.readouterr().err, f"the disk holding '{target}' is full", "free space on that disk")
    with monkeypatch.context() as m:
        m.setattr(np, "savez_compressed", refuse(errno.ENOSPC))
        with pytest.raises(OSError) as info:
            fm.load(run).save(tmp_path / "saved.npz")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(tmp_path / "saved.npz")


# ------------------------------------------------------------------------ a symbolic link inside a run folder
def test_nothing_is_written_through_a_symbolic_link_in_a_run_folder(tmp_path, capsys):
    run = pendulum_run(tmp_path / "run", "pend")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    mine = {"pend.h5": b"the user's own HDF5 file", "pend.xdmf": b"<mine/>", "pend.pvd": b"<mine/>",
            "energy.png": b"the user's own figure"}
    for name, data in mine.items():
        (elsewhere / name).write_bytes(data)
    (run / "paraview").symlink_to(elsewhere, target_is_directory=True)
    (run / "plots").symlink_to(elsewhere, target_is_directory=True)
    (run / "anim").symlink_to(elsewhere, target_is_directory=True)
    manifest = (run / "manifest.json").read_bytes()
    capsys.readouterr()
    for command, link in ((["export", str(run), "--format", "xdmf", "--overwrite"], "paraview"),
                          (["export", str(run), "--overwrite"], "paraview"),
                          (["export", str(run), "--out", str(run / "paraview"), "--overwrite"], "paraview"),
                          (["plot", str(run), "energy"], "plots"),
                          (["animate", str(run), "--out", str(run / "anim" / "a.gif")], "anim")):
        assert main(command) == EXIT_USAGE, command
        one_line_error(capsys.readouterr().err, f"'{run / link}' is a symbolic link", str(elsewhere), "nothing was written")
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(mine)
    assert all((elsewhere / name).read_bytes() == data for name, data in mine.items())
    assert (run / "manifest.json").read_bytes() == manifest  # nothing recorded either
    # the same export into a real folder of the run works
    (run / "paraview").unlink()
    assert main(["export", str(run), "--format", "xdmf"]) == EXIT_OK and (run / "paraview" / "pend.h5").is_file()
