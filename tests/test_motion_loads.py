"""Node loads of the motion, ``add_load(name, node, f(t, x, R, v, w))`` (flexmb/motion_loads.py,
elements/motion_load.py, docs/motion_forces.md §7), each against a closed form or an independent
computation:

* linear drag -c v on a body thrown under gravity: v(t) against the closed form, second order in h;
* a rotational damper -d w on a tilted spinning body: the decay of the spin against the closed form;
* a spring to a fixed point -k (x - x0): the oscillation against the closed form, second order in h;
* a magnetic (Lorentz) force q v × B, whose tangent is skew (its symmetric part, in the matrix, is zero):
  the cyclotron circle against the closed form, no load work, Newton still converging;
* the tangent (M9)-(M11) against central differences along true rotations; the given tangent used as given;
  the blocks (M12) the symmetric part of β' K + γ' C;
* statics: a body hanging on a spring to a point at the closed-form sag;
* the energy balance with the load's work inside the trapezoid rule's bound;
* the same motion as an equivalent ground spring-damper (add_spring_damper);
* the motion unchanged when the model and the load's fixed point move 100 m away;
* a sampled load (period): f of the node's state at the samples, held between, its work Σ F_k · Δx, the
  energy balance closed to round-off;
* the path named (the Python Newton loop, by name), and bad signatures refused by name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import flexmb as fm
from flexmb.elements.motion_load import FAMILY
from flexmb.engine.assembly import Assembler
from flexmb.errors import ModelError
from flexmb.motion_loads import LOAD_HOLD_KEY
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.statics import static_equilibrium

M, G0 = 2.0, 9.81
P0 = np.array([0.3, 0.2, 1.0])


def free_body(load, g: float = G0, u0=None, tangent=None, origin=(0.0, 0.0, 0.0)) -> fm.Model:
    """A body of mass M on a free joint at P0 (+ ``origin``), the load ``L`` on its node."""
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, -g))
    mb.add_node("b", P0 + np.asarray(origin))
    mb.add_body("b", "b", M, (0.0, 0.0, 0.0), np.diag([0.02, 0.03, 0.04]))
    mb.add_joint("j", "free", "ground", "b", u0=u0)
    mb.add_load("L", "b", load, tangent=tangent)
    return mb.compile()


def test_linear_drag_on_a_thrown_body_has_the_closed_form_velocity() -> None:
    """m v' = m g - c v: v(t) = v0 e^(-t/τ) + g τ (1 - e^(-t/τ)), τ = m / c. Generalized-α is second order:
    the error is O(v (h/τ)²), and halving h divides it by about 4 (a first-order, lagged load: by 2)."""
    c, v0 = 3.0, np.array([1.0, -0.5, 2.0])
    tau = M / c
    errs = []
    for h in (2e-3, 1e-3):
        res = fm.simulate(free_body(lambda t, x, R, v, w: -c * v, u0=(*v0, 0, 0, 0)), 1.0, h)
        e = np.exp(-res.t / tau)[:, None]
        exact = v0 * e + np.array([0.0, 0.0, -G0 * tau]) * (1 - e)
        errs.append(np.abs(res.twists[:, 0, :3] - exact).max())
        scale = np.linalg.norm(v0) + G0 * tau
        assert errs[-1] <= scale * (h / tau) ** 2
    assert 3.0 < errs[0] / errs[1] < 5.0


def test_spring_to_a_fixed_point_has_the_closed_form_oscillation() -> None:
    """m x'' = -k (x - x0): x(t) = x0 + (X0 - x0) cos ωt, ω = sqrt(k/m), along the line through both. The phase
    error of a second-order method is about ω t (ωh)² / 12 of the amplitude; bound: 1/6 of it, factor 4 per halving."""
    k, x0 = 800.0, np.array([0.5, -0.1, 1.2])
    om, T = math.sqrt(k / M), 0.5
    errs = []
    for h in (2e-3, 1e-3):
        res = fm.simulate(free_body(lambda t, x, R, v, w: -k * (x - x0), g=0.0), T, h)
        exact = x0 + np.outer(np.cos(om * res.t), P0 - x0)
        errs.append(np.abs(res.x[:, 0] - exact).max())
        assert errs[-1] <= np.linalg.norm(P0 - x0) * om * T * (om * h) ** 2 / 6
    assert 3.0 < errs[0] / errs[1] < 5.0


def test_a_skew_tangent_lorentz_force_converges_on_the_cyclotron_circle() -> None:
    """F = q v × B (B along z), no gravity: v turns at ω = qB/m, v = (cos ωt, -sin ωt, 0), kinetic energy constant
    and no work. The tangent ∂F/∂v = -qB [e_z]× is skew: the matrix takes its symmetric part, zero (M12), so
    Newton runs as with no tangent at all: it converges still, in a few iterations per step."""
    qB = 4.0
    om, T, h = qB / M, 1.0, 1e-3
    ez = np.array([0.0, 0.0, 1.0])
    res = fm.simulate(free_body(lambda t, x, R, v, w: qB * np.cross(v, ez), g=0.0, u0=(1.0, 0, 0, 0, 0, 0)), T, h)
    exact = np.stack([np.cos(om * res.t), -np.sin(om * res.t)], axis=1)
    assert np.abs(res.twists[:, 0, :2] - exact).max() <= om * T * (om * h) ** 2
    T0 = 0.5 * M
    assert abs(res.energy["load_work"][-1]) <= 1e-12 * T0  # F · v = 0 up to round-off
    assert np.ptp(res.energy["kinetic"]) <= T0 * om * T * (om * h) ** 2
    assert res.newton_iterations[1:].max() <= 4


def test_rotational_damper_on_a_tilted_spinning_body_has_the_closed_form_decay() -> None:
    """A moment -d w (global axes) on a body spinning about its principal axis z, the node tilted 30° about x so
    that body and global axes differ: the spin stays on that axis, w(t) = w0 e^(-d t / I_zz) along R e_z (a w read
    in body axes would turn the moment off the axis). Second order: error O(w0 (h d / I)²)."""
    d, Izz, w0, h, T = 0.02, 0.04, 5.0, 1e-3, 1.0
    tilt = Rotation.from_rotvec([math.pi / 6, 0.0, 0.0]).as_matrix()
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("b", P0, rotation=tilt)
    mb.add_body("b", "b", M, (0.0, 0.0, 0.0), np.diag([0.02, 0.03, Izz]))
    mb.add_joint("j", "free", "ground", "b", u0=(0, 0, 0, 0, 0, w0))  # body-axes angular velocity
    mb.add_load("L", "b", lambda t, x, R, v, w: np.concatenate([0.0 * v, -d * w]))
    res = fm.simulate(mb.compile(), T, h)
    exact = w0 * np.exp(-d * res.t / Izz)[:, None] * tilt[:, 2]
    assert np.abs(res.twists[:, 0, 3:] - exact).max() <= w0 * (h * d / Izz) ** 2
    assert res.newton_iterations[1:].max() <= 2


def test_static_equilibrium_against_a_spring_to_a_point() -> None:
    """Statics takes the load and its stiffness K = k I (M12, load-stepped by the load factor): on a vertical
    prismatic joint the body hangs at x_z = x0_z - M g / k, to the solver's tolerance (1e-10) of that sag;
    the load is linear, so Newton's first iteration lands on it."""
    k, x0 = 800.0, np.array([0.5, -0.1, 1.2])
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, -G0))
    mb.add_node("b", P0)
    mb.add_body("b", "b", M, (0.0, 0.0, 0.0), np.diag([0.02, 0.03, 0.04]))
    mb.add_joint("s", "prismatic", "ground", "b", axis=(0, 0, 1))
    mb.add_load("L", "b", lambda t, x, R, v, w: -k * (x - x0))
    st = static_equilibrium(mb.compile())
    sag = M * G0 / k
    assert abs(st.x[0, 2] - (x0[2] - sag)) <= 1e-10 * sag
    assert st.iterations.sum() <= 2


def test_newton_uses_the_tangent_fewer_iterations_than_without() -> None:
    """The drag's tangent in the matrix (M12) saves Newton iterations: without it (a tangent of zeros) every step
    needs at least one more; the motion is the same to Newton's tolerance."""
    c = 30.0
    runs = [fm.simulate(free_body(lambda t, x, R, v, w: -c * v, u0=(1.0, 0, 0, 0, 0, 0), tangent=tg), 0.2, 1e-3)
            for tg in (None, lambda t, x, R, v, w: np.zeros((3, 12)))]
    with_t, without = runs[0].newton_iterations[1:], runs[1].newton_iterations[1:]
    assert with_t.mean() + 1 <= without.mean()
    assert np.abs(runs[0].u - runs[1].u).max() <= 1e-6 * np.abs(runs[0].u).max()


def _rotated(R: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """exp([θ]×) R: R turned by θ in global axes (scipy, independent of the code's perturbation)."""
    return Rotation.from_rotvec(theta).as_matrix() @ R


def _wrench(t, x, R, v, w):
    """A nonlinear load of everything: force and moment, complex-analytic."""
    a = np.array([0.3, -0.7, 0.5])
    f = -5.0 * (x - a) * (1.0 + 0.2 * (x @ x)) - 2.0 * v * (1.0 + v @ v) + 3.0 * (R @ a)
    mom = -4.0 * (R[:, 0] * R[1, 2] - R[:, 1]) - 1.5 * w * (w @ w + 1.0) + np.cross(x, v)
    return np.concatenate([f, mom])


def _finite_differences(load, t, x, R, v, w) -> np.ndarray:
    """∂(f, m)/∂(x, θ, v, w) ((3 or 6) x 12) by central differences, rotations by exp([θ]×) R, step 1e-6."""
    n = np.asarray(load(t, x, R, v, w)).size
    h, out = 1e-6, np.zeros((n, 12))
    for k in range(12):
        b, j = divmod(k, 3)
        d = np.zeros(3)
        d[j] = h
        args_p, args_m = [x, R, v, w], [x, R, v, w]
        if b == 1:
            args_p[1], args_m[1] = _rotated(R, d), _rotated(R, -d)
        else:
            args_p[b], args_m[b] = args_p[b] + d, args_m[b] - d
        out[:, k] = (load(t, *args_p) - load(t, *args_m)) / (2 * h)
    return out


def test_tangents_match_finite_differences_along_rotations() -> None:
    """(M9)-(M11): the complex-step tangent and the central-difference one (a load with abs, so the check (M11)
    switches) against central differences along true rotations; the FD error is O(h²) times the third
    derivatives, here about 1e-10 of the entries, checked to 1e-7 of the largest entry."""
    model = free_body(_wrench, g=0.0)
    ld = model.elements["motion_load"].load[0]
    assert ld.complex_step and ld.n_out == 6
    rng = np.random.default_rng(3)
    x, v, w = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
    R = Rotation.from_rotvec(rng.normal(size=3)).as_matrix()
    fd = _finite_differences(_wrench, 0.0, x, R, v, w)
    assert np.abs(ld.tangent(0.0, x, R, v, w) - fd).max() <= 1e-7 * np.abs(fd).max()

    def kinked(t, x, R, v, w):
        return -3.0 * v * np.abs(v) - 2.0 * x * np.abs(x[0])

    kmodel = free_body(kinked, g=0.0)
    kl = kmodel.elements["motion_load"].load[0]
    assert not kl.complex_step  # abs is not analytic: the check (M11) chose central differences
    fd = _finite_differences(kinked, 0.0, x, R, v, w)
    assert np.abs(kl.tangent(0.0, x, R, v, w)[:3] - fd).max() <= 1e-6 * np.abs(fd).max()


def test_given_tangent_and_blocks_are_the_symmetric_part() -> None:
    """A given tangent is used as given; the blocks (M12) are sym(β' K + γ' C), K = -∂F/∂(x, θ), C = -∂F/∂(v, w)."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(6, 12))
    model = free_body(lambda t, x, R, v, w: np.zeros(6), g=0.0, tangent=lambda t, x, R, v, w: A)
    asm = Assembler(model)
    st = model.initial_state()
    ev = asm.evaluate(st)
    fe = ev.elements["motion_load"]
    np.testing.assert_array_equal(fe.K[0], -A[:, :6])
    np.testing.assert_array_equal(fe.C[0], -A[:, 6:])
    bp, gp = 0.25, 0.5
    E = FAMILY.blocks(model, model.elements["motion_load"], None, fe, ev.kin, bp, gp, 1.0, False, False)[0]
    ref = -(bp * A[:, :6] + gp * A[:, 6:])
    np.testing.assert_allclose(E, 0.5 * (ref + ref.T), rtol=0, atol=1e-15 * np.abs(A).max())


def test_energy_balance_closes_with_the_load_work() -> None:
    """T + V + dissipated - load work is constant up to the trapezoid rule's error on the load's power,
    T_end h²/12 max|P''| (P = -c |v|² from the recorded twists, P'' by differences); the work is the drag's."""
    c, h, T = 3.0, 1e-3, 1.0
    res = fm.simulate(free_body(lambda t, x, R, v, w: -c * v, u0=(1.0, -0.5, 2.0, 0, 0, 0)), T, h)
    E = res.energy
    balance = E["kinetic"] + E["potential"] + E["dissipated"] - E["drive_work"] - E["load_work"]
    P = -c * np.einsum("ni,ni->n", res.twists[:, 0, :3], res.twists[:, 0, :3])
    P2 = np.abs(np.gradient(np.gradient(P, res.t), res.t)).max()
    assert np.abs(balance - balance[0]).max() <= T * h**2 / 12 * P2
    work = np.sum(0.5 * (P[1:] + P[:-1]) * np.diff(res.t))
    assert abs(E["load_work"][-1] - work) <= 1e-12 * abs(work)


def test_same_motion_as_an_equivalent_ground_spring_damper(monkeypatch) -> None:
    """On a prismatic joint along x, the spring-damper from ground point p0 = (-1, 0.2, 1) with rest length 1
    pulls with -k (x_x - p0_x - 1) - c v_x along x while the body stays on the side x > p0_x (it swings between
    x = -0.35 and 0.35); the load -k (x - p0 - e_x) - c v gives that along x (its other components are taken by
    the joint). Both on the Python Newton loop (the spring-damper's compiled
    one is tested in tests/test_spring_damper.py): same matrix, same iterates, equal to round-off."""
    k, c = 500.0, 2.0
    p0 = np.array([-1.0, 0.2, 1.0])

    def model(load: bool) -> fm.Model:
        mb = fm.ModelBuilder(gravity=(0.0, 0.0, -G0))
        mb.add_node("b", P0)
        mb.add_body("b", "b", M, (0.0, 0.0, 0.0), np.diag([0.02, 0.03, 0.04]))
        mb.add_joint("s", "prismatic", "ground", "b", axis=(1, 0, 0), u0=0.5)
        if load:
            mb.add_load("L", "b", lambda t, x, R, v, w: -k * (x - p0 - np.array([1.0, 0, 0])) - c * v)
        else:
            mb.add_spring_damper("sd", "ground", "b", point_a=p0, point_b=P0, stiffness=k, damping=c, rest_length=1.0)
        return mb.compile()

    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        a = fm.simulate(model(True), 0.5, 1e-3)
        b = fm.simulate(model(False), 0.5, 1e-3)
    scale = np.abs(b.q).max() + np.abs(b.u).max() * 0.5
    assert np.abs(a.q - b.q).max() <= 1e-9 * scale
    assert np.abs(a.u - b.u).max() <= 1e-9 * np.abs(b.u).max()


def test_motion_unchanged_when_the_model_moves_100_m() -> None:
    """The load reads global positions: the model and the fixed point moved by 100 m, the motion relative to them
    is the same up to the round-off of 100 m coordinates (eps 100 m times the spring's amplification)."""
    k, x0 = 800.0, np.array([0.5, -0.1, 1.2])
    shift = np.array([100.0, -60.0, 30.0])
    a = fm.simulate(free_body(lambda t, x, R, v, w: -k * (x - x0), g=0.0), 0.2, 1e-3)
    b = fm.simulate(free_body(lambda t, x, R, v, w: -k * (x - x0 - shift), g=0.0, origin=shift), 0.2, 1e-3)
    tol = 1e3 * np.finfo(float).eps * np.linalg.norm(shift)
    assert np.abs((b.x[:, 0] - shift) - a.x[:, 0]).max() <= tol


def test_the_path_is_named_and_bad_signatures_are_refused() -> None:
    """The model takes the compiled Newton step (flexmb/solvers/motion_load_step.py; tests/test_motion_load_compiled.py);
    signatures and outputs that are neither form are refused by name."""
    model = free_body(lambda t, x, R, v, w: -v)
    how = GeneralizedAlpha(model, linear_solver="dense").describe_solver()
    assert "not compiled" not in how and "whole Newton loop in one compiled call" in how, how
    mb = fm.ModelBuilder()
    mb.add_node("b", (0, 0, 0))
    with pytest.raises(ModelError, match=r"load 'L'.*3 required positional"):
        mb.add_load("L", "b", lambda t, x, v: x)
    with pytest.raises(ModelError, match=r"load 'L'.*returned \[1.0, 2.0\]"):
        mb.add_load("L", "b", lambda t, x, R, v, w: np.array([1.0, 2.0]))
    with pytest.raises(ModelError, match=r"load 'L'.*no moment"):
        mb.add_load("L", "b", lambda t, x, R, v, w: -v, moment=(1.0, 0, 0))
    with pytest.raises(ModelError, match=r"load 'L'.*tangent and period are for a load of the motion"):
        mb.add_load("L", "b", lambda t: (0.0, 0.0, 1.0), tangent=lambda *a: 0)
    with pytest.raises(ModelError, match=r"load 'L'.*period"):
        mb.add_load("L", "b", lambda t, x, R, v, w: -v, period=-0.1)
    mb.add_load("L", "b", lambda t: (0.0, 0.0, 1.0))  # the time-only form unchanged
    with pytest.raises(ModelError, match="duplicate load name 'L'"):
        mb.add_load("L", "b", lambda t, x, R, v, w: -v)


def test_sampled_load_holds_f_of_the_samples() -> None:
    """period = 5 dt: the load is f of the node's state at t_k = k period, held until the next sample (M15). The
    hold seen after every step changes only at the samples, to f of that state (the same call: to the bit);
    every step took the value held at its start; the load work is Σ F_k · Δx up to the trapezoid rule's error
    on the motion between samples (h² ω² of the work, ω the oscillation's); the energy balance closes with it to
    round-off (the accelerations jump with the samples, M16)."""
    k, c, dt, period, T = 200.0, 1.0, 1e-2, 5e-2, 1.0
    x0 = np.array([0.5, -0.1, 1.2])

    def f(t, x, R, v, w):
        return -k * (x - x0) - c * v

    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("b", P0)
    mb.add_body("b", "b", M, (0.0, 0.0, 0.0), np.diag([0.02, 0.03, 0.04]))
    mb.add_joint("s", "prismatic", "ground", "b", axis=(1, 0, 0))
    mb.add_load("L", "b", f, period=period)
    seen = []

    def watch(st, ev):
        seen.append((st.t, ev.kin.x[0].copy(), ev.kin.V[0, :3].copy(), st.elements[LOAD_HOLD_KEY][0].copy()))
    res = fm.simulate(mb.compile(), T, dt, callback=watch)
    t = np.array([s[0] for s in seen])
    x, v, hold = (np.array([s[i] for s in seen]) for i in (1, 2, 3))
    sample = np.rint(t / dt).astype(int) % 5 == 0
    for i in np.flatnonzero(sample):
        np.testing.assert_array_equal(hold[i, :3], f(t[i], x[i], np.eye(3), v[i], np.zeros(3)))
        assert hold[i, 13] == t[i]
    np.testing.assert_array_equal(hold[~sample, :6], hold[~sample, 6:12])  # no sample: the value goes on
    np.testing.assert_array_equal(hold[1:, 6:12], hold[:-1, :6])  # each step took the value held at its start
    xs = np.concatenate(([P0[0]], x[:, 0]))
    F0 = f(0.0, P0, np.eye(3), np.zeros(3), np.zeros(3))[0]
    work = np.sum(np.concatenate(([F0], hold[:-1, 0])) * np.diff(xs))
    omega = math.sqrt(k / M)
    assert abs(res.energy["load_work"][-1] - work) <= (omega * dt) ** 2 * abs(work)
    # T - W: the accelerations jump with each sample (M16), so between samples the body moves under a constant
    # force from a consistent acceleration, which generalized-α integrates exactly: the balance closes to
    # round-off, where a step whose pseudo-acceleration lagged the jump would err by |ΔF_k| |v_k| h / 2 per sample
    E = res.energy
    balance = E["kinetic"] + E["potential"] - E["load_work"]
    drift = np.abs(balance - balance[0]).max()
    assert drift <= 100 * np.finfo(float).eps * res.t.size * np.abs(E["load_work"]).max()
    jumps = np.sum(np.abs(hold[sample, 0] - hold[sample, 6]) * np.abs(v[sample, 0])) * dt / 2
    assert jumps > 1e6 * drift
    # a row at a sample holds the new load with the accelerations after the jump: the prismatic joint's reaction
    # along its free axis is zero to round-off on every row (the step's old load with the new accelerations: ΔF)
    assert np.abs(res.reaction("s")[:, 0]).max() <= 1e3 * np.finfo(float).eps * np.abs(hold[:, 0]).max()
    assert np.ptp(res.twists[:, 0, 0]) > 0  # it moves
    # the Result's rows (M15): the wrench acting from each row on, by name, and the sample it comes from
    np.testing.assert_array_equal(res.history("L.fx")[1:], hold[:, 0])
    np.testing.assert_array_equal(res.history("L.sampled_at")[1:], hold[:, 13])
    assert np.array_equal(np.unique(res.history("L.sampled_at")), res.t[::5])  # the sample instants k period


def test_the_initial_state_holds_the_first_sample_of_its_own_pose() -> None:
    """The first sample of a sampled load (M15) is f at the initial state, taken when the model is compiled
    (Model.start_holds: the model itself reads no kinematics) and copied by every initial_state: the node's
    pose there (q0 = 0.3 along x, u0 = 2) gives the held force to the bit, and a state's hold is its own."""
    x0 = np.array([0.5, -0.1, 1.2])

    def f(t, x, R, v, w):
        return np.concatenate([-200.0 * (x - x0) - v, np.cross(x, v)])

    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("b", P0)
    mb.add_body("b", "b", M, (0.0, 0.0, 0.0), np.diag([0.02, 0.03, 0.04]))
    mb.add_joint("s", "prismatic", "ground", "b", axis=(1, 0, 0), q0=0.3, u0=2.0)
    mb.add_load("L", "b", f, period=0.05)
    model = mb.compile()
    a, b = model.initial_state(), model.initial_state()
    x, v = P0 + np.array([0.3, 0.0, 0.0]), np.array([2.0, 0.0, 0.0])
    np.testing.assert_array_equal(a.elements[LOAD_HOLD_KEY][0, :6], f(0.0, x, np.eye(3), v, np.zeros(3)))
    np.testing.assert_array_equal(a.elements[LOAD_HOLD_KEY][0, 6:12], a.elements[LOAD_HOLD_KEY][0, :6])
    assert a.elements[LOAD_HOLD_KEY][0, 12] == 0.05 and a.elements[LOAD_HOLD_KEY][0, 13] == 0.0
    a.elements[LOAD_HOLD_KEY][0, 0] = 7.0
    assert b.elements[LOAD_HOLD_KEY][0, 0] != 7.0 and model.initial_state().elements[LOAD_HOLD_KEY][0, 0] != 7.0
    assert not model.start_holds[LOAD_HOLD_KEY].flags.writeable
