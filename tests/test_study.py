"""Parameter sweeps (issue 7): a 2×3 grid over a small case gives, on local worker processes and
on a dask.distributed cluster, the same per-run results as running each parameter set one by
one in this process (bit for bit: the engine is deterministic); a sweep killed mid-way resumes
without repeating a finished run and ends with the table of an uninterrupted sweep; failing
parameter sets (build() raises, a bad value, a Newton failure) are recorded with their reason
while the other runs complete. The tiny case is tests/cases/flexible_pendulum.py."""

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.app.casefile import load_case, resolve_params
from flexmb.app.cli import EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, _split_values, main
from flexmb.app.study import TIMING_COLUMNS, read_table, sample_runs, sweep
from flexmb.solvers.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "tests" / "cases" / "flexible_pendulum.py"
FLEXMB = Path(sys.executable).parent / "flexmb"
GRID = {"theta0": [0.0, 0.3], "E": [0.7e9, 1.4e9, 2.8e9]}
POINTS = [{"theta0": a, "E": e} for a in GRID["theta0"] for e in GRID["E"]]  # first name slowest
OUTPUTS = ["node:beam.2", "peak_force:beam.e*"]
ARRAYS = ("t", "q", "u", "udot", "x", "R", "joint_points", "twists", "reactions", "newton_iterations", "element_forces",
          "element_energy")


def one_by_one(overrides: dict) -> fm.Result:
    """The run of ``overrides`` done here, in this process, as `flexmb run` does it."""
    case = load_case(CASE)
    p = resolve_params(case, overrides)
    return simulate(case.build(p), p["t_end"], p["dt"], rho_inf=p["rho_inf"])


def assert_same_run(a: fm.Result, b: fm.Result) -> None:
    """Bit-for-bit equal time histories."""
    assert a.status == b.status
    for k in ARRAYS:
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    for k in a.energy:
        assert np.array_equal(a.energy[k], b.energy[k]), k


def assert_same_table(a: dict, b: dict) -> None:
    """Equal tables, apart from the wall-time columns (timings differ between two sweeps)."""
    assert list(a) == list(b)
    for k in a:
        if k in TIMING_COLUMNS:
            continue
        va, vb = a[k], b[k]
        if isinstance(va, np.ndarray):
            assert np.array_equal(va, vb, equal_nan=va.dtype.kind == "f"), k
        else:
            assert va == vb, k


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The 2×3 grid sweep on two local worker processes (the default execution)."""
    out = tmp_path_factory.mktemp("sweeps") / "reference"
    s = sweep(CASE, grid=GRID, outputs=OUTPUTS, out_dir=out, workers=2, progress=False)
    return s


def test_grid_sweep_on_local_processes_equals_runs_one_by_one(reference):
    s = reference
    assert (s.n_runs, s.ran, s.skipped, s.failed) == (6, 6, 0, 0)
    tab = read_table(s.table)
    assert tab["run"] == [f"run_{i:04d}" for i in range(6)]
    assert tab["status"] == ["finished"] * 6
    assert np.array_equal(tab["theta0"], [p["theta0"] for p in POINTS])
    assert np.array_equal(tab["E"], [p["E"] for p in POINTS])
    peaks = []
    for i, point in enumerate(POINTS):
        here = one_by_one(point)
        assert here.status == "finished"
        run_dir = s.out_dir / f"run_{i:04d}"
        assert json.loads((run_dir / "params.json").read_text())["params"]["E"] == point["E"]
        assert_same_run(fm.load(run_dir), here)
        # the table's columns, recomputed here from the one-by-one run
        peak = np.abs(here.element_forces[:, :, 0]).max()
        peaks.append(peak)
        assert tab["peak_axial_force_N"][i] == peak and tab["peak_N[beam.e*]"][i] == peak
        assert tab["max_axial_force_N"][i] == peak  # the case's own postprocess summary
        assert tab["pin_angle_end_rad"][i] == here.coordinate("pin.q")[-1]
        assert [tab[f"beam.2.{a}"][i] for a in "xyz"] == here.node_position("beam.2")[-1].tolist()
        assert tab["final_time_s"][i] == here.t[-1] and tab["steps"][i] == 20
        assert tab["newton_iterations"][i] == here.stats["newton_iterations"]
        e = here.total_energy
        assert tab["energy_balance_error_J"][i] == np.abs(e - e[0]).max()
    # the parameters reached the runs: released at 0.3 rad the beam pulls harder than at 0
    # (centripetal load after a larger fall), and each E gives its own history
    assert min(peaks[3:]) > 2 * max(peaks[:3])
    assert len(set(peaks)) == 6


def test_same_sweep_on_a_dask_cluster_gives_identical_results(reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    import dask

    # Dask's 30 s connect/comm timeouts can expire on a loaded machine: here they only guard against a hang
    with dask.config.set({"distributed.comm.timeouts.connect": "600s", "distributed.comm.timeouts.tcp": "600s"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                     processes=True) as cluster, distributed.Client(cluster) as client:
        s = sweep(CASE, grid=GRID, outputs=OUTPUTS, out_dir=tmp_path / "dask", client=client, progress=False)
        assert (s.ran, s.failed) == (6, 0)
        # the same through the command line, with the scheduler's address (a part of the grid)
        code = main(["sweep", str(CASE), "--grid", "theta0=0.3", "--grid", "E=2.8e9", "--output", "node:beam.2",
                     "--output", "peak_force:beam.e*", "--scheduler", cluster.scheduler_address,
                     "--out", str(tmp_path / "dask_cli"), "-q"])
        assert code == EXIT_OK
    for i in range(6):
        assert_same_run(fm.load(tmp_path / "dask" / f"run_{i:04d}"), fm.load(reference.out_dir / f"run_{i:04d}"))
    assert_same_table(read_table(s.table), read_table(reference.table))
    cli_tab = read_table(tmp_path / "dask_cli")
    ref_tab = read_table(reference.table)
    for k in ("peak_axial_force_N", "beam.2.x", "beam.2.y", "energy_balance_error_J", "newton_iterations"):
        assert np.array_equal(cli_tab[k], ref_tab[k][5:]), k


def _group_alive(pgid: int) -> bool:
    """True while a live (not zombie) process of the process group ``pgid`` exists (Linux /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def test_killed_sweep_resumes_without_repeating_finished_runs(reference, tmp_path):
    out = tmp_path / "killed"
    cmd = [str(FLEXMB), "sweep", str(CASE), "--grid", "theta0=0.0,0.3", "--grid", "E=0.7e9,1.4e9,2.8e9",
           "--output", "node:beam.2", "--output", "peak_force:beam.e*", "--workers", "1", "--out", str(out), "-q"]
    # events, not wall-clock time: the runs with theta0 = 0.3 (run_0003..5) are held in build() until
    # a file appears that never does (tests/cases/flexible_pendulum.py), and the sweep is killed once
    # the three others wrote their rows; the deadlines only guard against a hang
    env = {**os.environ, "FLEXMB_TEST_HOLD": str(tmp_path / "never")}
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    deadline = time.monotonic() + 900
    while len(list(out.glob("run_*/row.json"))) < 3 and p.poll() is None:
        assert time.monotonic() < deadline, "the sweep wrote no two rows"
        time.sleep(0.02)
    os.kill(p.pid, signal.SIGKILL)  # the sweep's own process only: its worker must notice and stop
    p.wait()
    deadline = time.monotonic() + 600
    while _group_alive(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(p.pid), "a worker process outlived the killed sweep"
    done = sorted(f.parent.name for f in out.glob("run_*/row.json"))
    # a run killed after closing its result but before writing its row is done as well (resumed from its files)
    closed = {f.parent.name for f in out.glob("run_*/end.json") if json.loads(f.read_text()).get("status") == "finished"}
    finished = sorted(set(done) | closed)
    assert done == finished == ["run_0000", "run_0001", "run_0002"], finished  # killed while run_0003 was held
    stamps = {d: (out / d / "end.json").stat().st_mtime_ns for d in finished}
    rows = {d: (out / d / "row.json").stat().st_mtime_ns for d in done}
    # resume (in this process: the resume logic is the driver's, whatever runs the tasks)
    s = sweep(CASE, grid=GRID, outputs=OUTPUTS, out_dir=out, workers=0, progress=False)
    assert (s.n_runs, s.skipped, s.ran, s.failed) == (6, len(finished), 6 - len(finished), 0)
    for d, st in stamps.items():  # no finished run was run again
        assert (out / d / "end.json").stat().st_mtime_ns == st, d
    for d, st in rows.items():
        assert (out / d / "row.json").stat().st_mtime_ns == st, d
    tab = read_table(out / "summary.csv")
    assert tab["status"] == ["finished"] * 6
    assert_same_table(tab, read_table(reference.table))
    for i in range(6):
        assert_same_run(fm.load(out / f"run_{i:04d}"), fm.load(reference.out_dir / f"run_{i:04d}"))
    assert json.loads((out / "sweep.json").read_text())["last"]["skipped"] == len(done)
    # killed after its result was closed but before its row was written: the row comes back from
    # the result files, the simulation is not repeated
    (out / "run_0003" / "row.json").unlink()
    end = (out / "run_0003" / "end.json").stat().st_mtime_ns
    s = sweep(CASE, grid=GRID, outputs=OUTPUTS, out_dir=out, workers=0, progress=False)
    assert (s.skipped, s.ran) == (6, 0) and (out / "run_0003" / "end.json").stat().st_mtime_ns == end
    assert_same_table(read_table(out / "summary.csv"), read_table(reference.table))


def test_failing_parameter_sets_are_recorded_and_the_others_complete(reference, tmp_path, capsys):
    runs = [{}, {"n_elements": 0}, {"fail_at": 0.02}, {"E": "steel"}, {"theta0": 0.3, "E": 2.8e9}]
    out = tmp_path / "failing"
    log = io.StringIO()
    s = sweep(CASE, runs=runs, outputs=OUTPUTS, out_dir=out, workers=1, progress=log)
    assert (s.n_runs, s.ran, s.skipped, s.failed) == (5, 5, 0, 3)
    # progress of the whole sweep: one line per finished task, each failure named with its reason
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("sweep: 0/5 runs done (0 skipped, 0 failed)") and "left" in lines[0]
    assert lines[-1].startswith("sweep: 5/5 runs done (0 skipped, 3 failed)") and "left 00:00" in lines[-1]
    assert sum(ln.startswith("run_0001: error: build() failed") for ln in lines) == 1
    tab = read_table(s.table)
    assert tab["status"] == ["finished", "error", "failed", "error", "finished"]
    assert tab["reason"][0] == "" and tab["reason"][4] == ""
    assert "build() failed: ModelError" in tab["reason"][1] and "n_elements = 0" in tab["reason"][1]
    assert "bad parameter" in tab["reason"][3] and "'E'" in tab["reason"][3]
    assert "non-finite" in tab["reason"][2] and tab["reason"][2].startswith("t = 0.02")
    # the Newton failure keeps its result up to the failure, and the run directory says so
    failed = fm.load(out / "run_0002")
    assert failed.status.startswith("failed") and failed.t[-1] < 0.02 and tab["final_time_s"][2] == failed.t[-1]
    # the good runs are the reference sweep's runs 0 and 5, bit for bit
    assert_same_run(fm.load(out / "run_0000"), fm.load(reference.out_dir / "run_0000"))
    assert_same_run(fm.load(out / "run_0004"), fm.load(reference.out_dir / "run_0005"))
    ref = read_table(reference.table)
    assert tab["peak_axial_force_N"][4] == ref["peak_axial_force_N"][5]
    # resuming keeps the recorded failures (no rerun); the command exits 1 and names them
    runs_file = tmp_path / "runs.json"
    runs_file.write_text(json.dumps(runs))
    capsys.readouterr()
    code = main(["sweep", str(CASE), "--runs", str(runs_file), "--output", "node:beam.2", "--output", "peak_force:beam.e*",
                 "--out", str(out), "-q"])
    text = capsys.readouterr().out
    assert code == EXIT_RUN_FAILED
    assert "5 runs: 0 ran, 5 skipped" in text and "3 failed" in text and "run_0001: error: build() failed" in text


def test_sweep_command_refuses_bad_input_with_one_line(tmp_path, capsys, monkeypatch):
    def run(*args):
        capsys.readouterr()
        code = main(["sweep", str(CASE), *args, "--out", str(tmp_path / "x"), "-q"])
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert "Traceback" not in err and len(lines) == 2 and lines[0].startswith("flexmb: error: "), err
        assert lines[1].startswith("  hint: ")
        return code, err

    code, err = run("--grid", "stiffness=1,2")
    assert code == EXIT_USAGE and "unknown parameter 'stiffness'" in err and "theta0" in err
    code, err = run("--grid", "E=")
    assert code == EXIT_USAGE and "name=v1,v2" in err
    code, err = run("--grid", "E=1e9", "--samples", "3")
    assert code == EXIT_USAGE and "one of --grid, --runs or --samples" in err
    code, err = run("--samples", "3", "--range", "E=1e9")
    assert code == EXIT_USAGE and "lo:hi" in err
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if dask.distributed were not installed
    code, err = run("--grid", "E=1e9", "--scheduler", "tcp://127.0.0.1:1")
    assert code == EXIT_USAGE and "dask.distributed is not installed" in err and "flexmb[cluster]" in err
    assert not (tmp_path / "x").exists()  # nothing was written by the refused sweeps
    # a directory holding another sweep is refused, not mixed
    sweep(CASE, runs=[{"n_elements": 0}], out_dir=tmp_path / "other", workers=0, progress=False)
    capsys.readouterr()
    assert main(["sweep", str(CASE), "--grid", "n_elements=-1", "--out", str(tmp_path / "other"), "-q"]) == EXIT_USAGE
    assert "other parameters" in capsys.readouterr().err


def test_grid_values_and_random_samples():
    assert _split_values("1, 2.5,'a,b',[1, 2],(3, 4)") == ["1", "2.5", "'a,b'", "[1, 2]", "(3, 4)"]
    defaults = {"n": 4, "x": 1.0}
    a = sample_runs({"n": (2, 5), "x": (1e-3, 1e3, "log"), "c": ["p", "q"]}, 200, seed=7, defaults=defaults)
    assert a == sample_runs({"n": (2, 5), "x": (1e-3, 1e3, "log"), "c": ["p", "q"]}, 200, seed=7, defaults=defaults)
    assert a != sample_runs({"n": (2, 5), "x": (1e-3, 1e3, "log"), "c": ["p", "q"]}, 200, seed=8, defaults=defaults)
    n = np.array([r["n"] for r in a])
    x = np.array([r["x"] for r in a])
    assert all(isinstance(r["n"], int) for r in a) and set(n) == {2, 3, 4, 5}
    assert x.min() >= 1e-3 and x.max() <= 1e3
    # log-uniform: log10(x) uniform on [-3, 3], so about half the draws lie below 1
    assert 0.35 < np.mean(x < 1.0) < 0.65 and np.mean(x < 1e-2) > 0.1
    assert {r["c"] for r in a} == {"p", "q"}
