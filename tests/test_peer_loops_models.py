"""The models of benchmarks/peer_loops.py (no timing here): its A02 N-four-bar (fm_n_four_bar, its arguments
passed to benchmarks/n_four_bar_model.n_four_bar) builds the same flexmb model as tests/cut_mechanisms.n_four_bar
called as the tests call it, its exact motion is n_four_bar_angle's, and its exudyn
models (when the benchmark-only exudyn is installed) follow that exact motion."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from cut_mechanisms import n_four_bar, n_four_bar_angle

import flexmb as fm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import peer_loops as pl  # noqa: E402


@pytest.mark.parametrize("cut", ["elastic", "rigid"])
@pytest.mark.parametrize("theta0", [math.pi / 2, math.pi / 4])
def test_the_benchmark_builds_the_tests_n_four_bar(cut, theta0):
    ours = fm.simulate(pl.fm_n_four_bar(fm, 2, cut, 1e9, theta0), 0.01, 1e-3)
    ref = fm.simulate(n_four_bar(2, cut, k=1e9, theta0=theta0), 0.01, 1e-3)
    assert ours.status == ref.status == "finished"
    assert list(ours.node_names) == list(ref.node_names)
    assert np.array_equal(ours.x, ref.x)


def test_exact_motion_and_passages():
    t = np.linspace(0.0, 5.0, 11)
    for theta0 in (math.pi / 2, math.pi / 4):
        assert np.abs(pl.exact_angle(10, t, theta0) - n_four_bar_angle(10, t, theta0=theta0)).max() < 1e-9
    th = n_four_bar_angle(10, np.linspace(0.0, 5.0, 50001))
    assert pl.passages(10, 5.0, math.pi / 2, 1e-3) == int(np.sum(np.diff(np.floor(th / np.pi)) != 0))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # exudyn's renamed settings, set by benchlib
@pytest.mark.parametrize("model", ["3d EP", "3d RotVecLG", "2d"])
def test_exudyn_models_follow_the_exact_motion(model):
    exu = pytest.importorskip("exudyn")
    import benchlib as bl
    import exudyn.itemInterface as eii

    theta0, n, t_end = math.pi / 3, 2, 0.3
    if model == "2d":
        sc, mbs, crank0 = pl.exu_n_four_bar_2d(exu, eii, n, theta0)
    else:
        sc, mbs, crank0 = pl.exu_n_four_bar_3d(exu, eii, n, theta0, model.split()[1])
    sensor = mbs.AddSensor(eii.SensorBody(bodyNumber=crank0, localPosition=[0.5, 0.0, 0.0], storeInternal=True,
                                          outputVariableType=exu.OutputVariableType.Position, writeToFile=False))
    ss = bl.exu_settings(exu, t_end, 1e-3, 1e-8, 0.9)
    ss.solution.sensors.active = True
    ss.solution.sensors.writePeriod = 0.01
    out = bl.run_exudyn_solver(exu, mbs, ss, 1e-3, False, 60.0, math.inf)
    assert out["status"] == "finished"
    data = np.asarray(mbs.GetSensorStoredData(sensor))
    acc = pl.accuracy(n, data[:, 0], data[:, 1], theta0, t_end, 1e-3)
    assert acc["rows"] == 31 and acc["err_max"] < 1e-5
