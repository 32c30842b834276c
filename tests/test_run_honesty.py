"""A run that says "finished" reached t_end with finite outputs; a failure is a real one (issue 11,
items 8, 9, 11, 12 and simulate's own settings).

* 11.8: t_end = 1 with dt = 0.3, 0.6 and 3 ends at exactly t = 1 (the last step shortened): a body
  falling freely, which generalized-α integrates exactly (constant acceleration), is where
  q = -g t²/2 says at every row, the last one included.
* 11.9: step halving declares a failure only when the smallest step dt/2^max_halvings fails, and
  the message names that step. Issue's model: a 2 m aluminium link pinned at one end with a 1e6 N
  tip load, dt = 1e-3: it failed at t = 0.0008 naming h = 2.5e-4 (the smallest step actually tried
  was 6.25e-5), although it finishes with dt = 2.5e-4.
* 11.11, 11.12: a NaN/inf names the first coordinate, node, body or element where it appears, and
  a run never says "finished" with a non-finite output.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import flexmb as fm
from flexmb.errors import FlexmbError, ModelError, SolverError
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.tree_run import TreeRun

G = 9.81


def free_fall() -> fm.Model:
    """A 2 kg body on a vertical prismatic joint under gravity: q(t) = -g t²/2, u(t) = -g t."""
    mb = fm.ModelBuilder(gravity=(0, -G, 0))
    mb.add_node("n", position=(0, 0, 0))
    mb.add_body("ball", node="n", mass=2.0, inertia=np.eye(3) * 0.1)
    mb.add_joint("slide", "prismatic", parent="ground", child="n", axis=(0, 1, 0))
    return mb.compile()


def overloaded_link() -> fm.Model:
    """Issue 11.9: a 2 m aluminium link (Zahariev's section) pinned at one end, 8 beam elements,
    a 1e6 N transverse tip load (about 4e5 m/s² on its 2.4 kg)."""
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    sec = fm.BeamSection(E=0.7e11, G=0.27e11, A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7, rho=3000)
    nodes = mb.add_flexible_link("link", (0, 0, 0), (2, 0, 0), 8, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_load("tip", nodes[-1], force=(0, -1e6, 0))
    return mb.compile()


def pendulum(com=(0.5, 0.0, 0.0), drive=None, spring=None, q0=-1.0) -> fm.Model:
    """A 1 kg rod on a pin; ``drive`` = (position, velocity, acceleration) functions of time."""
    mb = fm.ModelBuilder(gravity=(0, -G, 0))
    mb.add_node("n1", position=(0, 0, 0))
    mb.add_body("rod", node="n1", mass=1.0, com=com, inertia=np.diag([0, 1, 1]) / 12)
    mb.add_joint("pin", "revolute", parent="ground", child="n1", axis=(0, 0, 1), q0=q0)
    if spring is not None:
        mb.add_joint_spring("pin", spring)
    if drive is not None:
        mb.add_drive("pin", *drive)
    return mb.compile()


def assert_all_finite(res: fm.Result) -> None:
    for k in ("t", "q", "u", "udot", "x", "R", "twists", "joint_points", "drive_forces", "reactions",
              "element_forces", "element_energy"):
        assert np.all(np.isfinite(getattr(res, k))), k
    for k, v in res.energy.items():
        assert np.all(np.isfinite(v)), k


# ------------------------------------------------------------------ 11.8: the run ends at t_end
@pytest.mark.parametrize(("dt", "times"), [(0.3, [0, 0.3, 0.6, 0.9, 1.0]), (0.6, [0, 0.6, 1.0]), (3.0, [0, 1.0])])
def test_run_ends_exactly_at_t_end(dt, times):
    seen = []
    res = fm.simulate(free_fall(), t_end=1.0, dt=dt, progress=lambda t, it: seen.append(t))
    assert res.status == "finished"
    assert res.t[-1] == 1.0 and np.allclose(res.t, times, rtol=0, atol=1e-15)
    # the rows are the states at those times: exact free fall (generalized-α is exact for a
    # constant acceleration), the shortened last step included
    assert np.allclose(res.q[:, 0], -0.5 * G * res.t**2, rtol=1e-12, atol=1e-14)
    assert np.allclose(res.u[:, 0], -G * res.t, rtol=1e-12, atol=1e-14)
    # stats and progress count the steps taken, the shortened one included; progress ends at t_end
    assert res.stats["steps"] == len(times) - 1 == len(seen) and seen[-1] == 1.0


def test_output_every_always_records_the_final_row():
    res = fm.simulate(free_fall(), t_end=1.0, dt=0.3, output_every=2)
    assert np.allclose(res.t, [0, 0.6, 1.0], rtol=0, atol=1e-15) and res.t[-1] == 1.0
    assert res.q[-1, 0] == pytest.approx(-0.5 * G, rel=1e-12)


def test_t_end_a_multiple_of_dt_keeps_every_step_of_dt():
    """Round-off in t_end/dt (0.3/0.1 = 2.9999999999999996) gives no sliver of a fourth step; the
    times are the sums of the steps (0.1 + 0.1 + 0.1 = 0.30000000000000004, t_end to round-off),
    as in a longer run, whose first rows the shorter run's are, bit for bit."""
    res = fm.simulate(free_fall(), t_end=0.3, dt=0.1)
    assert res.t.tolist() == [0.0, 0.1, 2 * 0.1, 3 * 0.1] and res.stats["steps"] == 3
    assert res.t[-1] == pytest.approx(0.3, rel=1e-15, abs=0)
    longer = fm.simulate(free_fall(), t_end=0.55, dt=0.1)
    assert longer.t[-1] == 0.55 and longer.t.tolist()[:6] == [i * 0.1 for i in range(6)]
    for k in ("t", "q", "u", "udot", "reactions"):
        assert np.array_equal(getattr(res, k), getattr(longer, k)[:4]), k


# ------------------------------------------------------------------ 11.9: step halving
def test_overloaded_link_finishes_with_the_step_its_halvings_reach():
    """Before: 'failed: t = 0.0008125 ... also after 10 step halvings (h = 2.500e-04)' with
    dt = 1e-3, while dt = 2.5e-4 finished. Now dt = 1e-3 halves where it must and gives the same
    sub-steps, hence the same motion, as dt = 2.5e-4."""
    model = overloaded_link()
    coarse = fm.simulate(model, t_end=0.002, dt=1e-3)
    fine = fm.simulate(model, t_end=0.002, dt=2.5e-4)
    assert coarse.status == "finished" and fine.status == "finished"
    assert coarse.t[-1] == fine.t[-1] == 0.002
    assert coarse.stats["steps"] == 2 and coarse.stats["substeps"] > 2
    assert coarse.stats["min_step"] >= 1e-3 / 2**10
    tip_c, tip_f = coarse.node_position("link.8")[-1], fine.node_position("link.8")[-1]
    assert np.allclose(tip_c, tip_f, rtol=0, atol=1e-9)
    assert np.linalg.norm(tip_c - [2, 0, 0]) > 1.0  # the load really swings the link


def _attempts(monkeypatch, fails):
    """Record every step attempt (t, h, failed) of GeneralizedAlpha; ``fails(t, h)`` makes an
    attempt fail as a Newton failure would."""
    orig = GeneralizedAlpha.step
    log: list[tuple[float, float, bool]] = []

    def step(self, st, a, h, *t1):
        if fails(st.t, h):
            log.append((st.t, h, True))
            raise SolverError(f"t = {st.t + h:.6g}: Newton did not converge (test)", st.t + h)
        out = orig(self, st, a, h, *t1)
        log.append((st.t, h, False))
        return out

    monkeypatch.setattr(GeneralizedAlpha, "step", step)
    # the steps of a rigid tree between rows run in one compiled call (flexmb/solvers/tree_run.py), which does
    # not call GeneralizedAlpha.step: keep every step in the Python loop where the failures are injected
    monkeypatch.setattr(TreeRun, "applies", staticmethod(lambda integ, callback: False))
    return log


def test_growth_after_a_success_does_not_use_up_the_halvings(monkeypatch):
    """Every step longer than dt/4 fails: two halvings suffice for every step of the run (the
    old count over all sub-steps of a step gave up after the first growth)."""
    dt = 0.1
    log = _attempts(monkeypatch, lambda t, h: h > dt / 4 * (1 + 1e-9))
    res = fm.simulate(free_fall(), t_end=0.5, dt=dt, max_halvings=2)
    assert res.status == "finished" and res.t[-1] == 0.5
    assert res.stats["substeps"] == 20 and res.stats["min_step"] == pytest.approx(dt / 4)
    assert min(h for _, h, _ in log) == pytest.approx(dt / 4)
    assert np.allclose(res.q[:, 0], -0.5 * G * res.t**2, rtol=1e-12)


def test_failure_names_the_smallest_step_and_that_step_really_failed(monkeypatch):
    """Every step ending after t = 0.25 fails: the run stops there; the message names the step
    dt/2^max_halvings, the smallest tried, and the last attempt, of that size, failed."""
    dt, n = 0.1, 6
    log = _attempts(monkeypatch, lambda t, h: t + h > 0.25)
    res = fm.simulate(free_fall(), t_end=0.5, dt=dt, max_halvings=n)
    assert res.status.startswith("failed: ") and res.t[-1] == pytest.approx(0.2)
    named = float(re.search(r"failed down to h = ([0-9.e+-]+)", res.status).group(1))
    smallest = min(h for _, h, _ in log)
    assert named == pytest.approx(dt / 2**n, rel=1e-3) and smallest == pytest.approx(named, rel=1e-3)
    t_last, h_last, failed = log[-1]
    assert failed and h_last == smallest and t_last + h_last > 0.25
    # it failed only at the barrier: everything before it was accepted
    assert all(not f for t, h, f in log if t + h <= 0.25)
    with pytest.raises(SolverError, match="failed down to h = "):
        fm.simulate(free_fall(), t_end=0.5, dt=dt, max_halvings=n, raise_on_failure=True)


def test_rerun_at_the_named_step_fails_at_the_same_time(monkeypatch):
    """A load that cannot be integrated beyond t = 0.25 (a NaN from then on): the failure names a
    step; a run with that step as dt fails at the same time."""
    _attempts(monkeypatch, lambda t, h: t + h > 0.25)
    res = fm.simulate(free_fall(), t_end=0.5, dt=0.1, max_halvings=3)
    h = float(re.search(r"h = ([0-9.e+-]+?)[ ,)]", res.status).group(1))
    again = fm.simulate(free_fall(), t_end=0.5, dt=h, max_halvings=0)
    assert again.status.startswith("failed: ") and again.t[-1] == pytest.approx(0.25, abs=h)


# ------------------------------------------------------------------ 11.11: where a NaN/inf appears
def test_nonfinite_mass_names_the_body_and_node():
    """Centre of mass at 1e300: m c² overflows. Before: 'non-finite udot' in simulate, naming
    nothing; now compile() refuses the model, naming the node and its body."""
    with pytest.raises(ModelError) as e:
        pendulum(com=(1e300, 0, 0))
    msg = str(e.value)
    assert "node 'n1'" in msg and "'rod'" in msg and "not finite" in msg


@pytest.mark.parametrize("zero_inertia_ball", [False, True])
def test_massless_coordinate_is_named(zero_inertia_ball):
    """A node without mass on a pin, or a body without inertia on a spherical joint at its centre of
    mass: M̄ is singular. Before: 'iteration matrix is not positive definite
    (../Cholesky/t_cholmod_rowfac.c:430 ...)' naming nothing. (compile() may refuse it first: the
    promise is one FlexmbError naming the joint, here its coordinate.)"""
    mb = fm.ModelBuilder(gravity=(0, -G, 0))
    mb.add_node("a", position=(0, 0, 0))
    if zero_inertia_ball:
        mb.add_body("ball", node="a", mass=1.0)
        mb.add_joint("sph", "spherical", parent="ground", child="a")
    else:
        mb.add_joint("pinA", "revolute", parent="ground", child="a", axis=(0, 0, 1))
    mb.add_node("b", position=(0, 0, 1))  # a sound pendulum beside it
    mb.add_body("rodB", node="b", mass=1.0, com=(0.5, 0, 0), inertia=np.diag([0, 1, 1]) / 12)
    mb.add_joint("pinB", "revolute", parent="ground", child="b", axis=(0, 0, 1))
    with pytest.raises(FlexmbError, match=r"\bsph\b" if zero_inertia_ball else r"\bpinA\b"):
        fm.simulate(mb.compile(), 0.01, 1e-3)


def test_nonfinite_acceleration_names_the_coordinate():
    """A spring of 1e308 N m/rad stretched by 1 rad: the acceleration of 'pin.q' overflows."""
    with pytest.raises(SolverError, match=r"acceleration of coordinate 'pin\.q'"):
        fm.simulate(pendulum(spring=1e308), 0.01, 1e-3)


def test_nan_load_mid_run_names_the_load_and_node():
    mb = fm.ModelBuilder(gravity=(0, -G, 0))
    sec = fm.BeamSection(E=0.7e11, G=0.27e11, A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7, rho=3000)
    nodes = mb.add_flexible_link("link", (0, 0, 0), (1, 0, 0), 2, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_load("gust", nodes[1], force=lambda t: (0.0, math.nan if t > 0.0035 else 1.0, 0.0))
    res = fm.simulate(mb.compile(), 0.01, 1e-3, max_halvings=2)
    # 0.003 -> 0.0035 is accepted, 0.0035 -> 0.004 and -> 0.00375 (dt/4) fail
    assert res.status.startswith("failed: t = 0.00375: non-finite value")
    assert "the step from t = 0.0035 failed down to h = 2.500e-04" in res.status
    assert "nodal load on node 'link.1'" in res.status and "load 'gust'" in res.status
    assert res.t[-1] == pytest.approx(0.003) and res.t.size == 4
    assert_all_finite(res)


# ------------------------------------------------------------------ 11.12: never "finished" with inf
def test_drive_force_overflow_fails_naming_the_drive_force(tmp_path):
    """Centre of mass at 1e154 (m c² = 1e308, still finite), driven with an acceleration ramp 1e3 t:
    the drive torque passes 1.8e308 between t = 1 and 2 ms. Before: 'finished' with inf in drive
    forces, reactions and energies."""
    model = pendulum(com=(1e154, 0, 0), drive=(lambda t: -1 + 1e3 * t**3 / 6, lambda t: 1e3 * t**2 / 2,
                                              lambda t: 1e3 * t))
    res = fm.simulate(model, 0.01, 1e-3, out=tmp_path / "run")
    assert res.status.startswith("failed: t = 0.002: non-finite output") and "drive force of coordinate 'pin.q'" in res.status
    assert res.t[-1] == pytest.approx(0.001) and res.t.size == 2
    assert_all_finite(res)
    back = fm.load(tmp_path / "run")
    assert back.status == res.status and back.t.size == 2
    assert_all_finite(back)


def test_drive_velocity_1e300_is_refused_at_the_start():
    """Before: 'finished' with inf drive forces, reactions and kinetic energy; now compile()
    refuses the start, naming the node and the fast coordinate."""
    with pytest.raises(ModelError) as e:
        pendulum(drive=(lambda t: 1e300 * t, lambda t: 1e300, lambda t: 0.0))
    msg = str(e.value)
    assert "node 'n1'" in msg and "not finite" in msg and "'pin.q'" in msg


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_joint_spring_power_overflow_fails_naming_it():
    """A spring of 1.7e308 on a coordinate driven at 200 rad/s: its torque times the velocity
    overflows in the first step. Before: 'finished' with inf in drive forces and energies."""
    model = pendulum(spring=1.7e308, q0=0.0, drive=(lambda t: 200 * t, lambda t: 200.0, lambda t: 0.0))
    res = fm.simulate(model, 0.01, 1e-3)
    assert res.status.startswith("failed: t = 0.001: non-finite output") and "power of the drives" in res.status
    assert res.t.size == 1
    assert_all_finite(res)


# ------------------------------------------------------------------ simulate's own settings
@pytest.mark.parametrize(("kw", "name"), [
    ({"t_end": True}, "t_end"), ({"t_end": 0.0}, "t_end"), ({"t_end": "1"}, "t_end"), ({"t_end": math.inf}, "t_end"),
    ({"dt": True}, "dt"), ({"dt": -1e-3}, "dt"), ({"dt": math.nan}, "dt"), ({"dt": 1e-14}, "dt"),
    ({"rho_inf": None}, "rho_inf"), ({"rho_inf": 1.5}, "rho_inf"), ({"rho_inf": -0.1}, "rho_inf"),
    ({"rho_inf": True}, "rho_inf"),
    ({"output_every": 0}, "output_every"), ({"output_every": 2.5}, "output_every"), ({"output_every": True}, "output_every"),
    ({"rtol": 0.0}, "rtol"), ({"rtol": None}, "rtol"), ({"rtol": 2.0}, "rtol"),
    ({"max_halvings": -1}, "max_halvings"), ({"max_halvings": 1.5}, "max_halvings"), ({"max_halvings": 1000}, "max_halvings"),
    ({"max_halvings": None}, "max_halvings"), ({"reuse_factor": "yes"}, "reuse_factor"),
    ({"callback": 3}, "callback"), ({"progress": "bar"}, "progress"), ({"state": [0.0]}, "state"),
])
def test_invalid_settings_are_refused_naming_the_argument(kw, name, tmp_path):
    args = {"t_end": 1.0, "dt": 1e-3, **kw}
    with pytest.raises(ValueError, match=rf"\b{name} = ") as e:
        fm.simulate(free_fall(), out=tmp_path / "run", **args)
    assert isinstance(e.value, FlexmbError)
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_valid_settings_in_other_number_types_run():
    res = fm.simulate(free_fall(), t_end=np.float64(0.2), dt=np.float32(0.1), rho_inf=1, output_every=np.int64(1),
                      max_halvings=4.0)
    assert res.status == "finished" and res.t[-1] == pytest.approx(0.2)


def test_a_newton_failure_diagnoses_its_cuts_only_when_its_message_is_read():
    """The families' notes on a failed step (rigid cuts: a singular value decomposition) are formed
    once, when the message is first read: an attempt that is halved and passes costs none; pickled
    (a sweep worker's failure) it is the SolverError with the whole message."""
    import pickle

    from flexmb.solvers.generalized_alpha import NewtonFailure

    calls = []

    def notes() -> list[str]:
        calls.append(1)
        return ["rigid cut 'B' open", "a singular configuration"]

    exc = NewtonFailure("t = 1: Newton did not converge", 1.0, notes)
    assert isinstance(exc, SolverError) and exc.time == 1.0 and not calls
    text = str(exc)
    assert text == "t = 1: Newton did not converge; rigid cut 'B' open; a singular configuration"
    assert str(exc) == text and len(calls) == 1
    back = pickle.loads(pickle.dumps(NewtonFailure("t = 2: no", 2.0, notes)))
    assert type(back) is SolverError and str(back) == "t = 2: no; rigid cut 'B' open; a singular configuration"
    assert back.time == 2.0

    def broken() -> list[str]:
        raise np.linalg.LinAlgError("SVD did not converge")

    assert "the cuts' diagnosis failed: LinAlgError" in str(NewtonFailure("t = 3: no", 3.0, broken))
