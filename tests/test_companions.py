"""Companion runs (flexmb.app.companions): a case's further runs start on a spare core while the
main run runs, reach the postprocess with the same result as a run made there, and fail with a
message naming the companion; the worker then writes the main run's ParaView files and plots."""

from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest

import flexmb as fm
from flexmb.app.casefile import load_case
from flexmb.app.companions import Companions, companion_params
from flexmb.app.run import run_case
from flexmb.app.study import run_one
from flexmb.errors import CaseError
from flexmb.results.manifest import recorded

CASE = '''"""A pendulum compared with a heavier (or, with bad=True, a massless) twin."""
import numpy as np
import flexmb as fm

DEFAULTS = dict(t_end=0.04, dt=1e-3, output_every=2, mass=1.0, bad=False, twin_param="mass")


def build(**p):
    if p["mass"] <= 0:
        raise ValueError(f"mass {p['mass']} must be positive")
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n", (0, 0, 0))
    mb.add_body("rod", "n", p["mass"], (0.5, 0, 0), np.diag([0, 1, 1]) * p["mass"] / 12)
    mb.add_joint("pin", "revolute", "ground", "n", axis=(0, 0, 1))
    mb.add_joint_spring("pin", 40.0 * p["mass"], damping=0.1)
    return mb.compile()


def companions(params):
    return {"heavy": {params["twin_param"]: 0.0 if params["bad"] else 3.0 * params["mass"]}}


def postprocess(result, model, params, out_dir, companions=None):
    c = companions["heavy"]
    return {"twin_mass": c.params["mass"], "twin_status": c.result.status, "twin_rows": int(c.result.t.size),
            "twin_final_angle": float(c.result.coordinate("pin.q")[-1]),
            "twin_model_mass": float(c.model.elements["body"].mass[0])}
'''

OLD_PROTOCOL = CASE[:CASE.index("def postprocess")] + '''def postprocess(result, model, params, out_dir):
    return {"rows": int(result.t.size)}
'''


@pytest.fixture()
def case(tmp_path):
    p = tmp_path / "twin_pendulum.py"
    p.write_text(CASE)
    return p


def _direct(params: dict) -> fm.Result:
    """The heavy twin simulated here, as a postprocess would."""
    cs = load_case(_direct.path)
    return fm.simulate(cs.build(params), **cs.settings(params).as_dict())


@pytest.mark.parametrize("workers", [None, 0])
def test_companion_reaches_the_postprocess_with_the_same_result(case, tmp_path, workers):
    out = run_case(case, {"mass": 2.0}, tmp_path / f"run{workers}", companion_workers=workers)
    s = out.summary
    assert not out.postprocess_error, out.postprocess_error
    assert s["twin_mass"] == 6.0 and s["twin_model_mass"] == 6.0 and s["twin_status"] == "finished"
    assert s["twin_rows"] == 21  # t = 0 and every second of 40 steps
    _direct.path = case
    ref = _direct({**load_case(case).defaults, "mass": 6.0})
    assert s["twin_final_angle"] == float(ref.coordinate("pin.q")[-1])  # bit for bit, in a worker or here
    assert ref.coordinate("pin.q")[-1] != out.result.coordinate("pin.q")[-1]  # the twin is another run
    if workers is None:  # the companions ran beside the main run, then its ParaView files and plots
        assert "worker process" in s["companion_runs"]
    else:
        assert "in this process after the main run" in s["companion_runs"]
    # the ParaView files and plots are written and recorded, wherever they were made
    assert out.paraview is not None and out.paraview.is_file() and out.plots and all(p.is_file() for p in out.plots)
    files = recorded(out.out)
    assert "summary.json" in files and "energy.png" in files and any(f.startswith("paraview/") for f in files)
    assert not multiprocessing.active_children()  # no worker left behind


def test_companion_that_fails_names_itself_and_keeps_the_main_run(case, tmp_path):
    out = run_case(case, {"bad": True}, tmp_path / "run", companion_workers=None)
    assert out.completed and out.result.status == "finished" and out.result.t.size == 21
    assert "companion run 'heavy'" in out.postprocess_error and "mass 0.0 must be positive" in out.postprocess_error
    assert "(mass=0.0)" in out.postprocess_error  # which overrides made it
    assert out.paraview is not None and out.paraview.is_file()  # the main run's outputs are still written
    assert not multiprocessing.active_children()


def test_bad_companion_overrides_are_refused_before_anything_runs(case, tmp_path):
    with pytest.raises(CaseError, match=r"companion 'heavy': unknown parameter 'massx'"):
        run_case(case, {"twin_param": "massx"}, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    cs = load_case(case)
    assert companion_params(cs, cs.defaults)["heavy"]["mass"] == 3.0


def test_a_postprocess_without_companions_gets_none_started(tmp_path):
    p = tmp_path / "old.py"
    p.write_text(OLD_PROTOCOL)
    cs = load_case(p)
    assert not cs.takes_companions
    out = run_case(p, {}, tmp_path / "run")
    assert not out.postprocess_error and out.summary["rows"] == 21 and "companion_runs" not in out.summary


def test_sweep_runs_companions_in_its_worker(case, tmp_path):
    """A sweep's workers already use the cores: run_one runs the companions after the main run."""
    row = run_one(str(case), 0, {"mass": 0.5}, str(tmp_path / "r0"))
    assert row["status"] == "finished" and row["twin_mass"] == 1.5


def test_six_link_case_declares_its_twin():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "cases" / "zahariev_six_link.py"
    spec = importlib.util.spec_from_file_location("six_link_for_companions", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.companions({"damping": 1e-3}) == {"twin": {"damping": 0.0}}
    assert mod.companions({"damping": 0.0}) == {"twin": {"damping": mod.DEFAULTS["twin_damping"]}}
    cs = load_case(path)
    assert cs.takes_companions
    assert Companions(cs, companion_params(cs, cs.defaults), workers=0).describe() == (
        "companion runs twin (damping=0.0) of case 'zahariev_six_link' in this process after the main run (one core)")
    assert np.isclose(companion_params(cs, cs.defaults)["twin"]["damping"], 0.0)


def test_info_shows_the_companion_runs(capsys):
    from pathlib import Path

    from flexmb.app.cli import EXIT_OK, main

    path = Path(__file__).resolve().parents[1] / "cases" / "zahariev_six_link.py"
    assert main(["info", str(path), "--param", "damping=0.0"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "companion runs twin (damping=0.001) of case 'zahariev_six_link'" in out


@pytest.mark.parametrize("name", ["zahariev_six_link", "bearing_friction_self_locking", "spin_up_beam", "bennett_linkage",
                                  "attia_3rrr"])
def test_seed_cases_declare_companions_that_resolve(name):
    """The seed cases whose postprocess compares further runs declare them, with parameters the case takes."""
    from pathlib import Path

    cs = load_case(Path(__file__).resolve().parents[1] / "cases" / f"{name}.py")
    assert cs.takes_companions
    runs = companion_params(cs, cs.defaults)
    assert runs and all(p != cs.defaults for p in runs.values())  # each is another run than the main one


def _cholmod_blas_threads() -> int:
    """Threads of the OpenBLAS CHOLMOD loaded in this process (0: it loaded another BLAS)."""
    import ctypes

    from flexmb.engine.linalg import blas_info

    info = blas_info()
    if not info.startswith("OpenBLAS"):
        return 0
    return int(ctypes.CDLL(info.rsplit(" ", 1)[1]).openblas_get_num_threads())


def test_a_forked_companion_worker_runs_one_blas_thread():
    """A forked worker no longer reads OPENBLAS_NUM_THREADS: its initializer sets every OpenBLAS
    to one thread, as a spawned worker gets from its environment."""
    import concurrent.futures as cf
    import ctypes
    import os

    from flexmb.app import companions as comp
    from flexmb.engine.linalg import blas_info

    info = blas_info()
    if not info.startswith("OpenBLAS"):
        pytest.skip(f"CHOLMOD runs on {info}, not OpenBLAS")
    lib = ctypes.CDLL(info.rsplit(" ", 1)[1])
    before = lib.openblas_get_num_threads()
    lib.openblas_set_num_threads(2)  # as a parent with two BLAS threads
    try:
        with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=comp._forked_worker,
                                    initargs=(os.getpid(),)) as pool:
            assert pool.submit(_cholmod_blas_threads).result() == 1
        assert _cholmod_blas_threads() == 2  # the parent keeps its own
    finally:
        lib.openblas_set_num_threads(before)


def _numba_threads() -> int:
    import numba

    from flexmb.engine import parallel

    return numba.get_num_threads() * 1000 + parallel.threads_for(10 * parallel.PARALLEL_MIN)


def test_workers_run_the_beams_on_one_numba_thread(monkeypatch):
    """A forked companion worker and a spawned sweep worker give the beams' passes one thread
    (flexmb/engine/parallel.py: threads_for), so two workers on two cores do not each start two;
    the parent keeps numba's thread count."""
    import concurrent.futures as cf
    import multiprocessing
    import os

    import numba

    from flexmb.app import companions as comp
    from flexmb.app.executors import _one_thread_per_worker

    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    parent = numba.get_num_threads()
    with cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"), initializer=comp._forked_worker,
                                initargs=(os.getpid(),)) as pool:
        assert pool.submit(_numba_threads).result() == 1001
    with _one_thread_per_worker(), cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_numba_threads).result() == 1001
    assert numba.get_num_threads() == parent


COMPILING_CASE = '''"""A pendulum whose monitor compiles a numba function of its own (not cached) in every process."""
import numba
import numpy as np
import flexmb as fm

DEFAULTS = dict(t_end=0.01, dt=1e-3, mass=1.0)


@numba.njit
def _twice(x):
    return 2.0 * x


def build(**p):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n", (0, 0, 0))
    mb.add_body("rod", "n", p["mass"], (0.5, 0, 0), np.diag([0, 1, 1]) * p["mass"] / 12)
    mb.add_joint("pin", "revolute", "ground", "n", axis=(0, 0, 1))
    return mb.compile()


def monitor(model, params):
    threads = numba.get_num_threads()  # launches numba's threads in this process (forked: inherited) if not yet
    value = _twice(1.5)  # then compiles: numba reloads its configuration from the environment
    return lambda state, evaluation: f"threads={threads} twice={value}"


def companions(params):
    return {"heavy": {"mass": 3.0}}


def postprocess(result, model, params, out_dir, companions=None):
    return {"twin_status": companions["heavy"].result.status}
'''


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_companion_worker_compiles_after_numba_threads_were_launched(tmp_path, monkeypatch, method):
    """Issue 33: a forked companion worker inherited NUMBA_NUM_THREADS=1 in its environment (set for
    spawned workers) while its numba, imported by the parent, had read the core count; the first
    compilation in the worker after numba's threads were launched then raised "Cannot set
    NUMBA_NUM_THREADS to a different value once the threads have been launched". Whichever start
    method, the worker now compiles and runs its numba passes on one thread."""
    import numba

    from flexmb.app import companions as comp

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba runs one thread here: a worker's one thread is no change")
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    monkeypatch.setattr(comp, "_start_method", lambda: method)
    numba.get_num_threads()  # the parent has launched numba's threads (a fork inherits that state)
    p = tmp_path / "compiling_twin.py"
    p.write_text(COMPILING_CASE)
    out = run_case(p, {}, tmp_path / "run", companion_workers=1, paraview=False, plots=False)
    assert not out.postprocess_error, out.postprocess_error
    assert out.summary["twin_status"] == "stopped: threads=1 twice=3.0"
    assert "NUMBA_NUM_THREADS" not in os.environ  # the parent's environment is as it was
    assert not multiprocessing.active_children()
