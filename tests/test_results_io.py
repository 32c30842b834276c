"""Result files (issue 4): a run streams its output rows into a run directory as it goes; a
run killed by SIGKILL, a run whose Newton iteration fails and a run interrupted by Ctrl-C
each leave a directory that loads, holds every step computed before the end (up to the last
flush for SIGKILL) and says how the run ended. Also: the energy split (strain apart from
gravity and springs) against a hand-written potential, and the overwrite safety."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.results.rundir import RunWriter
from flexmb.solvers.simulate import simulate

CASES = Path(__file__).resolve().parent / "cases"
sys.path.insert(0, str(CASES))
import four_bar  # noqa: E402

ARRAYS = ("t", "q", "u", "udot", "x", "R", "joint_points", "twists", "drive_forces", "reactions", "newton_iterations",
          "element_forces", "element_energy")


def assert_same_rows(a, b, n=None):
    """Every per-row array of ``a`` equals the first ``n`` rows of ``b``, bit for bit."""
    n = len(a.t) if n is None else n
    for k in ARRAYS:
        assert np.array_equal(getattr(a, k), getattr(b, k)[:n]), k
    assert set(a.energy) == set(b.energy)
    for k in a.energy:
        assert np.array_equal(a.energy[k], b.energy[k][:n]), k


def test_streamed_run_loads_back_bit_for_bit(tmp_path):
    model = four_bar.build()
    out = tmp_path / "run"
    writer = RunWriter(out, flush_rows=7, flush_seconds=1e9, meta={"case": "four_bar"})  # chunks by rows, not by time
    res = simulate(model, 0.04, 2e-3, rho_inf=0.8, out=writer)
    back = fm.load(out)
    assert res.status == back.status == "finished"
    assert len(back.t) == 21
    assert_same_rows(back, res)
    assert back.coordinate_names == res.coordinate_names and back.element_names == res.element_names
    assert back.meta["case"] == "four_bar" and back.meta["settings"]["dt"] == 2e-3
    for k in res.drawing:
        assert np.array_equal(back.drawing[k], res.drawing[k]), k
    chunks = sorted(p.name for p in out.glob("chunk_*.npz"))
    assert chunks == ["chunk_00000.npz", "chunk_00001.npz", "chunk_00002.npz"]  # 7 + 7 + 7 rows
    for c in chunks:  # plain arrays: loading them needs no pickle
        with np.load(out / c, allow_pickle=False) as z:
            assert all(z[f].dtype != object for f in z.files)
    assert json.loads((out / "end.json").read_text())["rows"] == 21
    assert not list(out.glob(".*tmp"))  # no temporary file left behind


def test_npz_save_keeps_energy_split_drawing_and_meta(tmp_path):
    res = simulate(four_bar.build(), 0.01, 2e-3, rho_inf=0.8)
    back = fm.load(res.save(tmp_path / "r.npz"))
    assert_same_rows(back, res)
    assert back.meta == res.meta and set(back.drawing) == set(res.drawing)
    assert np.array_equal(back.total_energy, res.total_energy)


def test_sigkill_mid_run_leaves_every_flushed_step(tmp_path):
    """A child process streams a long run in chunks of 10 rows and is killed with SIGKILL after
    its fifth chunk: the directory loads, says the run is incomplete with the last time, and
    holds rows 0..n-1 without a gap, equal to an uninterrupted run of the same length."""
    out = tmp_path / "killed"
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(CASES)!r})
        import four_bar
        from flexmb.results.rundir import RunWriter
        from flexmb.solvers.simulate import simulate
        simulate(four_bar.build(), 1000.0, 2e-3, rho_inf=0.8,
                 out=RunWriter(sys.argv[1], flush_rows=10, flush_seconds=1e9))
    """))
    proc = subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while not (out / "chunk_00004.npz").exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the child wrote no fifth chunk in time"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    res = fm.load(out)
    n = len(res.t)
    assert n >= 50 and n % 10 == 0  # whole chunks only: nothing half-written is visible
    assert res.status.startswith("incomplete") and f"t = {res.t[-1]:.6g}" in res.status
    assert not (out / "end.json").exists()
    ref = simulate(four_bar.build(), (n - 1) * 2e-3, 2e-3, rho_inf=0.8)
    assert len(ref.t) == n
    assert_same_rows(res, ref)


def test_newton_failure_is_recorded_with_every_step_before_it(tmp_path):
    """The coupler load turns NaN at t = 0.02 s: Newton cannot converge at that step even after
    step halving. The run stops with status 'failed: ...' naming the time and the cause, and
    the directory holds every step before, equal to a run that simply ends there."""
    out = tmp_path / "failed"
    model = four_bar.build(fail_at=0.02)
    res = simulate(model, 0.1, 2e-3, rho_inf=0.8, out=out)
    back = fm.load(out)
    assert back.status == res.status
    assert back.status.startswith("failed: ") and "t = 0.02" in back.status and "non-finite" in back.status
    assert back.t[-1] == pytest.approx(0.018, abs=1e-12) and len(back.t) == 10
    ref = simulate(four_bar.build(), 0.018, 2e-3, rho_inf=0.8)  # same model without the NaN
    assert_same_rows(back, ref)
    end = json.loads((out / "end.json").read_text())
    assert end["status"] == res.status and end["rows"] == 10


def test_ctrl_c_closes_the_run_as_interrupted(tmp_path):
    out = tmp_path / "interrupted"
    steps = []

    def stop_at_step_6(st, ev):
        steps.append(st.t)
        if len(steps) == 6:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        simulate(four_bar.build(), 0.1, 2e-3, rho_inf=0.8, out=out, callback=stop_at_step_6)
    back = fm.load(out)
    assert back.status == "interrupted"
    assert len(back.t) == 6  # the initial row and the five steps completed before the interrupted one
    ref = simulate(four_bar.build(), 0.01, 2e-3, rho_inf=0.8)
    assert_same_rows(back, ref)


def test_energy_split_matches_hand_written_potential_and_element_energies():
    """potential = gravity (bodies and beams, at the beams' Hermite centres of mass) + joint spring,
    strain = sum of the beams' strain energies, both written here from the recorded positions."""
    p = dict(four_bar.DEFAULTS, E=0.7e9)
    model = four_bar.build(**p)
    res = simulate(model, 0.1, 2e-3, rho_inf=0.8)
    g = np.array([0, -9.81, 0])
    bodies, beams = model.elements["body"], model.elements["beam"]
    com = res.x[:, bodies.node] + np.einsum("tbij,bj->tbi", res.R[:, bodies.node], bodies.com)
    V = -np.einsum("b,tbi,i->t", bodies.mass, com, g)
    # beams: centre of mass of the cubic (Hermite) deflection curve, planar: the end tangents t_i
    # make angles th_i with the chord, and the mean deflection is L0/12 (th_1 - th_2) along the
    # in-plane normal n = e_z x chord
    xa, xb = res.x[:, beams.a], res.x[:, beams.b]
    chord = (xb - xa) / np.linalg.norm(xb - xa, axis=-1, keepdims=True)
    n = np.stack([-chord[..., 1], chord[..., 0], 0 * chord[..., 0]], -1)
    def angle(R, C):
        t = np.einsum("teij,ej->tei", R, C[:, :, 0])
        return np.arctan2(np.einsum("tei,tei->te", np.cross(chord, t), np.array([0, 0, 1.0])[None, None]),
                          np.einsum("tei,tei->te", chord, t))
    th1, th2 = angle(res.R[:, beams.a], beams.C1), angle(res.R[:, beams.b], beams.C2)
    mid = 0.5 * (xa + xb) + (beams.L0 / 12 * (th1 - th2))[..., None] * n
    V -= np.einsum("e,tei,i->t", beams.mass, mid, g)
    V += 0.5 * p["k_rocker"] * res.coordinate("O4.q") ** 2
    assert np.allclose(res.energy["potential"], V, rtol=1e-12, atol=1e-12 * np.abs(V).max())
    assert np.allclose(res.energy["strain"], res.element_energy.sum(axis=1), rtol=1e-12, atol=0)
    assert res.energy["strain"].max() > 1e-3  # the coupler really deforms


def test_run_directory_is_never_overwritten_by_accident(tmp_path):
    model = four_bar.build()
    out = tmp_path / "run"
    simulate(model, 0.004, 2e-3, out=out)
    with pytest.raises(FileExistsError, match="already exists"):
        simulate(model, 0.004, 2e-3, out=out)
    simulate(model, 0.006, 2e-3, out=RunWriter(out, overwrite=True))
    assert len(fm.load(out).t) == 4
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a flexmb run directory"):
        simulate(model, 0.004, 2e-3, out=RunWriter(other, overwrite=True))
    assert (other / "notes.txt").read_text() == "keep me"


def test_load_refuses_what_is_not_a_result(tmp_path):
    with pytest.raises(fm.ResultFileError, match="does not exist"):
        fm.load(tmp_path / "nothing")
    (tmp_path / "d").mkdir()
    with pytest.raises(fm.ResultFileError, match="not a flexmb run directory"):
        fm.load(tmp_path / "d")
    bad = tmp_path / "x.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(fm.ResultFileError, match="not a flexmb result"):
        fm.load(bad)
