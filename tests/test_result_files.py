"""Files and damaged results (issue 11, items 1–7): flexmb writes only inside the folder it was
given and deletes only what it wrote; a damaged or tampered result gives a ResultFileError
naming the file and what is wrong (exit code 2 for `flexmb export` and `flexmb plot`), never an
internal error, a silent 'finished' or a gigabyte allocation.

* export names read from a result (its stored case_name) are data, never paths;
* a run folder records what flexmb wrote (manifest.json); --overwrite (CLI run, RunWriter,
  sweep run folders) removes only that and refuses a folder holding anything else — a user's
  file in a run folder and one next to it survive every --overwrite and every export;
* export without --overwrite checks every file it would write;
* a symbolic link as run folder: a clear refusal;
* 32 damaged variants of a run folder, missing chunks, inconsistent chunks, crafted sizes.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.app.casefile import load_case
from flexmb.app.cli import EXIT_OK, EXIT_USAGE, main
from flexmb.app.study import read_table, sweep
from flexmb.errors import ResultFileError, RunDirError
from flexmb.results.manifest import clear, foreign_files, record, recorded
from flexmb.results.paraview import safe_name, write_pvd, write_xdmf
from flexmb.results.rundir import RunWriter
from flexmb.solvers.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
PENDULUM = ROOT / "tests" / "cases" / "flexible_pendulum.py"
CASE = '''"""A pendulum whose postprocess writes a file of its own into the run folder."""
import numpy as np
import flexmb as fm

DEFAULTS = dict(t_end=0.01, dt=1e-3, mass=1.0)


def build(**p):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n", (0, 0, 0))
    mb.add_body("rod", "n", p["mass"], (0.5, 0, 0), np.diag([0, 1, 1]) / 12)
    mb.add_joint("pin", "revolute", "ground", "n", axis=(0, 0, 1))
    return mb.compile()


def postprocess(result, model, params, out_dir):
    (out_dir / "angle.txt").write_text(repr(float(result.coordinate("pin.q")[-1])))
    return {}
'''


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its content (links as their target)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = b"-> " + os.readlink(p).encode()
        elif p.is_file():
            out[rel] = p.read_bytes()
    return out


def one_line_error(capsys, *words) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err and "internal error" not in err, err
    assert 1 <= len(lines) <= 2 and lines[0].startswith("flexmb: error: "), err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    """The flexible pendulum (2 beam elements) streamed in 7 chunks of 3 rows (21 rows)."""
    out = tmp_path_factory.mktemp("base") / "run"
    case = load_case(PENDULUM)
    p = case.defaults
    simulate(case.build(p), p["t_end"], p["dt"], rho_inf=p["rho_inf"],
             out=RunWriter(out, flush_rows=3, flush_seconds=1e9, meta={"case_name": "flexible_pendulum"}))
    assert len(list(out.glob("chunk_*.npz"))) == 7
    return out


@pytest.fixture
def run_copy(base_run, tmp_path) -> Path:
    d = tmp_path / "deep" / "er" / "run"
    shutil.copytree(base_run, d)
    return d


# ------------------------------------------------------------------------ 1: export names are data
@pytest.mark.parametrize("stored", ["../../X", "ABSOLUTE/some/dir/X"])
def test_export_names_read_from_a_result_never_leave_the_output_folder(run_copy, tmp_path, stored, capsys):
    absdir = tmp_path / "some" / "dir"
    absdir.mkdir(parents=True)
    (absdir / "X.h5").write_text("the user's own HDF5 file")
    stored = stored.replace("ABSOLUTE/some/dir", str(absdir))
    meta = json.loads((run_copy / "meta.json").read_text())
    meta["meta"]["case_name"] = stored
    (run_copy / "meta.json").write_text(json.dumps(meta))
    before = tree(tmp_path)
    assert main(["export", str(run_copy)]) == EXIT_OK
    assert main(["export", str(run_copy), "--format", "xdmf"]) == EXIT_OK
    after = tree(tmp_path)
    new = sorted(set(after) - set(before))
    manifest = str((run_copy / "manifest.json").relative_to(tmp_path))
    assert all(before[k] == after[k] for k in before if k != manifest)  # nothing existing changed...
    assert {"paraview/X.pvd", "paraview/X.h5", "paraview/X.xdmf"} <= recorded(run_copy)  # ...but the run's record
    prefix = str((run_copy / "paraview").relative_to(tmp_path))
    assert new and all(k.startswith(prefix + "/X") for k in new), new  # only inside RUN/paraview, named X
    assert {Path(k).name for k in new} >= {"X.pvd", "X_00000.vtu", "X.xdmf", "X.h5"}
    assert (absdir / "X.h5").read_text() == "the user's own HDF5 file"
    assert safe_name(stored) == "X"
    # a --name given on the command line is refused if it is a path; the API refuses it too
    capsys.readouterr()
    assert main(["export", str(run_copy), "--name", "../../Y"]) == EXIT_USAGE
    one_line_error(capsys, "--name '../../Y' is not a file name")
    res = fm.load(run_copy)
    for bad in ("../Y", str(absdir / "Y"), ".hidden"):
        with pytest.raises(ValueError, match="not a file name stem"):
            write_pvd(res, None, tmp_path / "out", bad)
        with pytest.raises(ValueError, match="not a file name stem"):
            write_xdmf(res, None, tmp_path / "out", bad)
    assert not list(tmp_path.glob("Y*")) and not list(absdir.glob("Y*")) and not (tmp_path / "out").exists()


# ------------------------------------------------------------------------ 2: --overwrite removes only flexmb's files
def test_overwrite_removes_only_what_flexmb_wrote(tmp_path, capsys):
    case = tmp_path / "pendulum.py"
    case.write_text(CASE)
    runs = tmp_path / "runs"
    out = runs / "run"
    beside = runs / "next_to_the_run.txt"
    runs.mkdir()
    beside.write_text("a user's file next to the run folder")
    assert main(["run", str(case), "--out", str(out), "-q"]) == EXIT_OK
    assert {"angle.txt", "summary.json", "energy.png", "paraview/pendulum.pvd", "paraview/pendulum_00010.vtu"} <= recorded(out)
    assert main(["export", str(out), "--format", "xdmf"]) == EXIT_OK  # recorded too
    assert {"paraview/pendulum.xdmf", "paraview/pendulum.h5"} <= recorded(out)
    assert main(["plot", str(out), "energy", "pin.q"]) == EXIT_OK
    assert {"plots/energy.png", "plots/coordinates.png"} <= recorded(out)
    capsys.readouterr()
    # a user's files inside: --overwrite refuses, lists them, removes nothing
    (out / "notes.txt").write_text("the user's notes")
    (out / "analysis").mkdir()
    (out / "analysis" / "fit.py").write_text("print('mine')")
    (out / "paraview" / "state.pvsm").write_text("a ParaView state the user saved")
    snapshot = tree(runs)
    assert main(["run", str(case), "--out", str(out), "--overwrite", "-q"]) == EXIT_USAGE
    one_line_error(capsys, "holds files flexmb did not write", "notes.txt", "analysis/fit.py", "paraview/state.pvsm",
                   "nothing was removed")
    assert tree(runs) == snapshot
    with pytest.raises(RunDirError, match="notes.txt"):
        simulate(load_case(case).build({"mass": 1.0}), 0.002, 1e-3, out=RunWriter(out, overwrite=True))
    assert tree(runs) == snapshot
    # every export keeps them too (with and without --overwrite)
    assert main(["export", str(out), "--format", "xdmf", "--overwrite"]) == EXIT_OK
    assert main(["export", str(out), "--out", str(runs), "--overwrite"]) == EXIT_OK  # next to the run folder
    assert (out / "notes.txt").read_text() == "the user's notes" and (out / "analysis" / "fit.py").exists()
    assert (out / "paraview" / "state.pvsm").exists() and beside.read_text() == "a user's file next to the run folder"
    # the user moves them away: --overwrite replaces the run, its old files included (shorter run: fewer frames)
    shutil.move(out / "notes.txt", tmp_path / "notes.txt")
    shutil.rmtree(out / "analysis")
    (out / "paraview" / "state.pvsm").unlink()
    assert main(["run", str(case), "--out", str(out), "--overwrite", "--t-end", "0.004", "-q"]) == EXIT_OK
    assert sorted(p.name for p in (out / "paraview").iterdir()) == ["pendulum.pvd"] + [f"pendulum_0000{i}.vtu" for i in range(5)]
    assert not (out / "plots").exists() and (out / "angle.txt").exists() and len(fm.load(out).t) == 5
    assert beside.read_text() == "a user's file next to the run folder"


def test_overwrite_refuses_a_folder_that_merely_claims_to_be_a_run(tmp_path, capsys):
    case = tmp_path / "pendulum.py"
    case.write_text(CASE)
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "meta.json").write_text('{"format": "flexmb-run"}')
    (fake / "thesis.tex").write_text("precious")
    assert main(["run", str(case), "--out", str(fake), "--overwrite", "-q"]) == EXIT_USAGE
    one_line_error(capsys, "thesis.tex", "nothing was removed")
    assert (fake / "thesis.tex").read_text() == "precious" and (fake / "meta.json").exists()
    # a manifest is data: an entry pointing outside the folder owns nothing there
    (fake / "manifest.json").write_text(json.dumps({"format": "flexmb-files", "files": ["../victim.txt", "/etc/passwd"]}))
    (tmp_path / "victim.txt").write_text("outside")
    (fake / "thesis.tex").unlink()
    assert main(["run", str(case), "--out", str(fake), "--overwrite", "-q"]) == EXIT_OK
    assert (tmp_path / "victim.txt").read_text() == "outside"


def test_sweep_never_clears_a_run_folder_holding_a_users_file(tmp_path):
    case = tmp_path / "pendulum.py"
    case.write_text(CASE)
    out = tmp_path / "sweep"
    sweep(case, grid={"mass": [1.0, 2.0]}, out_dir=out, workers=0, progress=False)
    run1 = out / "run_0001"
    (run1 / "row.json").unlink()  # as if killed: simulated again on resume...
    (run1 / "end.json").unlink()
    (run1 / "notes.txt").write_text("the user's notes")  # ...but the user put a file there
    (tmp_path / "next_to.txt").write_text("beside")
    s = sweep(case, grid={"mass": [1.0, 2.0]}, out_dir=out, workers=0, progress=False)
    tab = read_table(s.table)
    assert tab["status"] == ["finished", "error"] and "notes.txt" in tab["reason"][1]
    assert (run1 / "notes.txt").read_text() == "the user's notes" and (tmp_path / "next_to.txt").read_text() == "beside"
    assert not (run1 / "row.json").exists()  # nothing written into it: the run is tried again on the next resume
    (run1 / "notes.txt").unlink()
    s = sweep(case, grid={"mass": [1.0, 2.0]}, out_dir=out, workers=0, progress=False)
    assert read_table(s.table)["status"] == ["finished", "finished"] and s.ran == 1


def test_what_a_killed_write_leaves_is_flexmbs_and_nothing_else(tmp_path):
    """The temporary file of an atomic write killed before its rename belongs to flexmb if the
    file it was writing does (the run format's own files always); any other file does not."""
    d = tmp_path / "run"
    d.mkdir()
    (d / ".manifest.json.tmp").write_text("{")  # killed while the folder was being made
    assert foreign_files(d) == []
    record(d, ["summary.json"])
    (d / ".summary.json.tmp").write_text("{")
    (d / ".chunk_00004.npz.tmp").write_bytes(b"PK")
    (d / ".notes.txt.tmp").write_text("an editor's backup of the user's notes")
    assert foreign_files(d) == [".notes.txt.tmp"]
    with pytest.raises(RunDirError, match="notes.txt.tmp"):
        clear(d)
    (d / ".notes.txt.tmp").unlink()
    clear(d)
    assert list(d.iterdir()) == []


# ------------------------------------------------------------------------ 3: export checks every file first
def test_export_without_overwrite_checks_every_file_it_would_write(run_copy, capsys):
    pv = run_copy / "paraview"
    pv.mkdir()
    (pv / "flexible_pendulum_00000.vtu").write_text("the user's own frame")
    assert main(["export", str(run_copy)]) == EXIT_USAGE
    one_line_error(capsys, "flexible_pendulum_00000.vtu", "--overwrite")
    assert sorted(p.name for p in pv.iterdir()) == ["flexible_pendulum_00000.vtu"]  # nothing written
    (pv / "flexible_pendulum.h5").write_text("the user's own HDF5 file")
    assert main(["export", str(run_copy), "--format", "xdmf"]) == EXIT_USAGE
    one_line_error(capsys, "flexible_pendulum.h5")
    assert (pv / "flexible_pendulum.h5").read_text() == "the user's own HDF5 file"
    assert not (pv / "flexible_pendulum.xdmf").exists()
    assert main(["export", str(run_copy), "--format", "xdmf", "--overwrite"]) == EXIT_OK
    assert (pv / "flexible_pendulum.h5").read_bytes()[:8] == b"\x89HDF\r\n\x1a\n"


# ------------------------------------------------------------------------ 4: a symbolic link as run folder
def test_a_symbolic_link_as_run_folder_is_refused_clearly(tmp_path, capsys):
    case = tmp_path / "pendulum.py"
    case.write_text(CASE)
    real = tmp_path / "real"
    assert main(["run", str(case), "--out", str(real), "-q"]) == EXIT_OK
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    snapshot = tree(real)
    capsys.readouterr()
    for extra in (["--overwrite"], []):
        assert main(["run", str(case), "--out", str(link), "-q", *extra]) == EXIT_USAGE
        one_line_error(capsys, "is a symbolic link", str(real))
    assert tree(real) == snapshot and link.is_symlink()
    # a link inside a run folder is not flexmb's either, and is never followed
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "data.txt").write_text("keep")
    (real / "paraview" / "linked").symlink_to(victim, target_is_directory=True)
    assert main(["run", str(case), "--out", str(real), "--overwrite", "-q"]) == EXIT_USAGE
    one_line_error(capsys, "paraview/linked")
    assert (victim / "data.txt").read_text() == "keep"


# ------------------------------------------------------------------------ 5: damaged and tampered run folders
def _edit_json(name, f):
    def edit(d: Path) -> None:
        p = d / name
        p.write_text(json.dumps(f(json.loads(p.read_text()))))
    return edit


def _write(name, data: bytes):
    def edit(d: Path) -> None:
        (d / name).write_bytes(data)
    return edit


def _chunk(index: int, change):
    """Rewrite chunk ``index`` with its arrays changed by ``change(dict) -> dict``."""
    def edit(d: Path) -> None:
        p = d / f"chunk_{index:05d}.npz"
        with np.load(p) as z:
            arrays = {k: z[k] for k in z.files}
        with open(p, "wb") as f:
            np.savez(f, **change(arrays))
    return edit


def _truncate(d: Path) -> None:
    p = d / "chunk_00002.npz"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _header_lie(d: Path) -> None:
    """Chunk 1 whose 't' declares 5 rows but holds 3."""
    p = d / "chunk_00001.npz"
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    with zipfile.ZipFile(p, "w") as zf:
        for k, a in arrays.items():
            b = io.BytesIO()
            np.lib.format.write_array(b, a)
            data = b.getvalue()
            if k == "t":
                data = data.replace(b"(3,)", b"(5,)")
            zf.writestr(f"{k}.npy", data)


def _meta(f):
    return _edit_json("meta.json", f)


def _drop(key):
    return lambda m: {k: v for k, v in m.items() if k != key}


def _set(path, value):
    def f(m):
        node = m
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
        return m
    return f


VARIANTS = {
    "chunk truncated": (_truncate, "chunk_00002.npz", "not a readable .npz"),
    "chunk empty": (_write("chunk_00003.npz", b""), "chunk_00003.npz", "not a readable .npz"),
    "chunk not a zip": (_write("chunk_00003.npz", b"PK\x03\x04 but nothing after"), "chunk_00003.npz", "not a readable"),
    "chunk without an array": (_chunk(1, lambda a: {k: v for k, v in a.items() if k != "q"}), "chunk_00001.npz",
                               "no array 'q'"),
    "chunk q with fewer rows than t": (_chunk(1, lambda a: {**a, "q": a["q"][:2]}), "chunk_00001.npz", "has 2 rows"),
    "chunk with other node counts": (_chunk(4, lambda a: {**a, "x": np.zeros((3, 9, 3))}), "chunk_00004.npz",
                                     "declares rows of"),
    "chunk with a float32 array": (_chunk(0, lambda a: {**a, "t": a["t"].astype(np.float32)}), "chunk_00000.npz",
                                   "float32"),
    "chunk with an object array": (_chunk(0, lambda a: {**a, "t": np.array([1.0, "x", None], dtype=object)}),
                                   "chunk_00000.npz", "dtype object"),
    "chunk header declares more than it holds": (_header_lie, "chunk_00001.npz", "declares shape (5,)"),
    "chunk gap": (lambda d: (d / "chunk_00002.npz").unlink(), "chunk 2 is missing", "not consecutive"),
    "chunk beyond end.json": (lambda d: shutil.copy(d / "chunk_00006.npz", d / "chunk_00007.npz"), "end.json",
                              "records 7 chunks"),
    "end.json empty": (_write("end.json", b""), "end.json", "it is empty"),
    "end.json not JSON": (_write("end.json", b"{status: finished"), "end.json", "not JSON"),
    "end.json a list": (_write("end.json", b'["finished"]'), "end.json", "not a JSON object"),
    "end.json without status": (_edit_json("end.json", _drop("status")), "end.json", "no 'status'"),
    "end.json stats not numbers": (_edit_json("end.json", _set(["stats", "steps"], "many")), "end.json",
                                   "'stats' are not numbers"),
    "end.json rows not a count": (_edit_json("end.json", _set(["rows"], "21")), "end.json", "not a count"),
    "end.json rows not what the chunks hold": (_edit_json("end.json", _set(["rows"], 30)), "end.json",
                                               "records 30 output rows, the chunks hold 21"),
    "meta.json not JSON": (_write("meta.json", b"{"), "meta.json", "not JSON"),
    "meta.json without fields": (_meta(_drop("fields")), "meta.json", "'fields'"),
    "meta.json without names": (_meta(_drop("names")), "meta.json", "'names' must hold"),
    "meta.json version a string": (_meta(_set(["version"], "1")), "meta.json", "'version' is '1'"),
    "meta.json from a newer flexmb": (_meta(_set(["version"], 99)), "run", "newer flexmb"),
    "meta.json node_names a number": (_meta(_set(["names", "node_names"], 3)), "meta.json",
                                      "'node_names' is not a list of names"),
    "meta.json node_names not texts": (_meta(_set(["names", "node_names"], [1, 2, 3, 4])), "meta.json",
                                       "'node_names' is not a list of names"),
    "meta.json field shape unlike its names": (_meta(_set(["fields", "x", "shape"], [9, 3])), "meta.json",
                                               "field 'x' is declared with rows of shape (9, 3)"),
    "meta.json field dtype object": (_meta(_set(["fields", "q", "dtype"], "object")), "meta.json", "field 'q'"),
    "meta.json meta a list": (_meta(_set(["meta"], [1, 2])), "meta.json", "'meta' is not an object"),
    "drawing data not fitting its shape": (_meta(_set(["drawing", "body_com", "shape"], [5, 3])), "meta.json",
                                           "'body_com' has 6 values for its shape (5, 3)"),
    "drawing object dtype": (_meta(_set(["drawing", "beam_a", "dtype"], "object")), "meta.json",
                             "drawing array 'beam_a'"),
    "drawing values not numbers": (_meta(_set(["drawing", "beam_a", "data"], ["a", "b"])), "meta.json",
                                   "not integers"),
    "drawing index outside the model": (_meta(_set(["drawing", "beam_a", "data"], [0, 99])), "run",
                                        "drawing 'beam_a' points at node 99"),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_damaged_run_folders_give_one_clear_error(run_copy, name, capsys):
    damage, where, what = VARIANTS[name]
    damage(run_copy)
    with pytest.raises(ResultFileError) as info:
        fm.load(run_copy)
    msg = str(info.value)
    assert where in msg and what in msg, msg
    assert str(run_copy) in msg and info.value.hint  # the file named by its path, and what to do
    capsys.readouterr()
    assert main(["export", str(run_copy)]) == EXIT_USAGE
    one_line_error(capsys, what)
    assert main(["plot", str(run_copy), "energy"]) == EXIT_USAGE
    one_line_error(capsys, what)
    assert not (run_copy / "paraview").exists() and not (run_copy / "plots").exists()


def test_at_least_28_variants():
    assert len(VARIANTS) >= 28


# ------------------------------------------------------------------------ 6: end.json's rows and chunks checked
def test_missing_last_chunks_are_named_in_the_status(run_copy):
    full = fm.load(run_copy, fields=("q",))  # read now: the chunks are deleted below
    assert full.status == "finished" and len(full.t) == 21
    for k in (5, 6):
        (run_copy / f"chunk_{k:05d}.npz").unlink()
    res = fm.load(run_copy)
    assert len(res.t) == 15 and np.array_equal(res.q, full.q[:15])
    assert res.status.startswith("incomplete: chunks 5, 6 of 7 missing")
    assert "the run ended 'finished' with 21 output rows" in res.status
    assert f"last time present t = {full.t[14]:.6g} after 15 output rows" in res.status
    for k in range(5):
        (run_copy / f"chunk_{k:05d}.npz").unlink()
    res = fm.load(run_copy)
    assert len(res.t) == 0 and res.status.startswith("incomplete: chunks 0, 1, 2, 3, 4, 5, 6 of 7 missing")
    assert "no output row" in res.status


# ------------------------------------------------------------------------ 7: sizes checked before allocating
def _bomb_member(zf: zipfile.ZipFile, name: str, shape: tuple, payload: int, compress: int) -> None:
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(b, {"descr": "<f8", "fortran_order": False, "shape": shape})
    zf.writestr(zipfile.ZipInfo(name), b.getvalue() + bytes(payload), compress_type=compress)


def test_a_crafted_1MB_chunk_never_makes_load_allocate_1GiB(run_copy, tmp_path):
    """Chunk 0's 't' declares 2**27 float64 rows (1 GiB) and holds 1 MB: refused before any
    allocation; the same for a compressed .npz (Result.save's format)."""
    p = run_copy / "chunk_00000.npz"
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files if k != "t"}
    with zipfile.ZipFile(p, "w") as zf:
        _bomb_member(zf, "t.npy", (2**27,), 2**20, zipfile.ZIP_STORED)
        for k, a in arrays.items():
            b = io.BytesIO()
            np.lib.format.write_array(b, a)
            zf.writestr(f"{k}.npy", b.getvalue())
    assert 2**20 < p.stat().st_size < 2**21
    npz = tmp_path / "bomb.npz"
    with zipfile.ZipFile(npz, "w") as zf:
        _bomb_member(zf, "t.npy", (2**27,), 2**20, zipfile.ZIP_DEFLATED)
    for path, what in ((run_copy, "chunk_00000.npz"), (npz, "bomb.npz")):
        tracemalloc.start()
        try:
            with pytest.raises(ResultFileError, match=r"declares shape \(134217728,\)") as info:
                fm.load(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert what in str(info.value)
        assert peak < 32 * 2**20, peak  # far below the 1 GiB the header asks for
