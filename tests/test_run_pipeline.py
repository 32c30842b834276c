"""One run pipeline (issue 13): `flexmb run` and every sweep worker call
flexmb.app.run.run_case, so a case runs the same way in both — its monitor applied, a stop
recorded as 'stopped: <reason>' (a sweep's own status, not 'error' or 'failed', and no failure
for the exit code), its postprocess run after a stop, and every file it writes recorded in the
run folder's manifest."""

from __future__ import annotations

import json

import numpy as np
import pytest

import flexmb as fm
import flexmb.app.cli as cli
import flexmb.app.run
import flexmb.app.study as study
from flexmb.app.cli import EXIT_OK, main
from flexmb.app.study import read_table, sweep
from flexmb.results.manifest import recorded

CASE = '''"""A pendulum whose monitor stops the run at t = stop_at."""
import numpy as np
import pytest
import flexmb as fm

DEFAULTS = dict(t_end=0.05, dt=1e-3, stop_at=0.02, mass=1.0)


def build(**p):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n", (0, 0, 0))
    mb.add_body("rod", "n", p["mass"], (0.5, 0, 0), np.diag([0, 1, 1]) / 12)
    mb.add_joint("pin", "revolute", "ground", "n", axis=(0, 0, 1))
    return mb.compile()


def monitor(model, params):
    return lambda st, ev: f"reached t = {st.t:.3f}" if st.t >= params["stop_at"] - 1e-12 else None


def postprocess(result, model, params, out_dir):
    (out_dir / "case_output").mkdir(exist_ok=True)
    (out_dir / "case_output" / "angle.txt").write_text(repr(float(result.coordinate("pin.q")[-1])))
    return {"postprocessed_rows": int(result.t.size)}
'''


def test_cli_and_sweep_run_a_case_through_the_same_pipeline(tmp_path, monkeypatch, capsys):
    case = tmp_path / "stopping.py"
    case.write_text(CASE)
    calls = []
    real = flexmb.app.run.run_case

    def spy(*args, **kw):
        calls.append(kw.get("reuse", False))
        return real(*args, **kw)

    monkeypatch.setattr(cli, "run_case", spy)
    monkeypatch.setattr(study, "run_case", spy)
    # flexmb run
    out = tmp_path / "run"
    assert main(["run", str(case), "--out", str(out), "-q"]) == EXIT_OK
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped: reached t = 0.020" and summary["postprocessed_rows"] == 21
    # a sweep of the same case (here: in this process), one run stopping, one finishing
    s = sweep(case, runs=[{}, {"stop_at": 1.0}], out_dir=tmp_path / "sweep", workers=0, progress=False)
    assert len(calls) == 3  # one run_case per run, whoever asked
    assert (s.n_runs, s.ran, s.failed, s.stopped) == (2, 2, 0, 1)
    tab = read_table(s.table)
    assert tab["status"] == ["stopped", "finished"]
    assert tab["reason"] == ["reached t = 0.020", ""]
    assert tab["final_time_s"] == pytest.approx([0.02, 0.05], abs=1e-12)  # 20 and 50 steps of 1 ms
    assert tab["postprocessed_rows"].tolist() == [21, 51]  # the postprocess ran after the stop too
    a, b = fm.load(out), fm.load(tmp_path / "sweep" / "run_0000")
    assert a.status == b.status == "stopped: reached t = 0.020"
    for k in ("t", "q", "u", "udot", "x", "reactions"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    # both recorded what the case's postprocess wrote, beside flexmb's own files
    assert "case_output/angle.txt" in recorded(out) and "summary.json" in recorded(out)
    assert {"case_output/angle.txt", "params.json", "row.json"} <= recorded(tmp_path / "sweep" / "run_0000")
    # resuming: a stopped run is done (not redone, not a failure); the command exits 0
    capsys.readouterr()
    code = main(["sweep", str(case), "--grid", "stop_at=0.02,1.0", "--workers", "0", "--out", str(tmp_path / "sweep2"), "-q"])
    text = capsys.readouterr().out
    assert code == EXIT_OK and "run_0000: stopped: reached t = 0.020" in text and "0 failed, 1 stopped" in text
    s = sweep(case, grid={"stop_at": [0.02, 1.0]}, out_dir=tmp_path / "sweep2", workers=0, progress=False)
    assert (s.ran, s.skipped, s.failed, s.stopped) == (0, 2, 0, 1)
    assert len(calls) == 5


def test_a_stopped_run_whose_row_was_lost_is_not_simulated_again(tmp_path):
    """Killed after the run ended but before its row was written: the row comes back from the
    result on disk (run_case reuse), also for a run the monitor stopped."""
    case = tmp_path / "stopping.py"
    case.write_text(CASE)
    out = tmp_path / "sweep"
    sweep(case, runs=[{}], out_dir=out, workers=0, progress=False)
    (out / "run_0000" / "row.json").unlink()
    end = (out / "run_0000" / "end.json").stat().st_mtime_ns
    s = sweep(case, runs=[{}], out_dir=out, workers=0, progress=False)
    assert (s.ran, s.skipped, s.stopped) == (0, 1, 1)
    assert (out / "run_0000" / "end.json").stat().st_mtime_ns == end
    assert read_table(s.table)["status"] == ["stopped"]
