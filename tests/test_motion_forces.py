"""Joint forces of the motion f(t, q, u) (flexmb/motion_forces.py, docs/motion_forces.md): a PD
controller is the joint spring-damper it equals (same motion, same Newton iterations: its tangent
enters the iteration matrix), a quadratic damper follows its closed-form motion at second order,
the energy balance holds with the controller's work, the computed tangents match the analytic
ones, a sampled controller holds its output between samples and books its work exactly, is the exact
zero-order-hold recursion on a free rotor and closes the energy balance at second order (the accelerations
jump with each sample, (M16)), and the compiled Newton paths name the forces that keep a model in Python."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flexmb as fm
from flexmb.errors import ModelError
from flexmb.motion_forces import HOLD_KEY, MotionForce, motion_tangents
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

M, L = 1.0, 1.0
J = M * L**2 / 12 + M * (L / 2) ** 2  # the rod's inertia about the hinge
G = 9.81
KP, KD, REF = 20.0, 0.7, 0.4


def pendulum(force=None, spring=None, gravity: float = G, q0: float = 0.3, u0: float = 0.0, origin=(0.0, 0.0, 0.0),
             **kw) -> fm.Model:
    """A rod of mass M and length L on a hinge (axis z) at ``origin``, gravity along -y."""
    mb = fm.ModelBuilder(gravity=(0.0, -gravity, 0.0))
    mb.add_node("a", position=origin)
    mb.add_body("rod", node="a", mass=M, com=(L / 2, 0.0, 0.0), inertia=np.diag([1e-3, M * L**2 / 12, M * L**2 / 12]))
    mb.add_joint("hinge", "revolute", parent="ground", child="a", point=origin, axis=(0, 0, 1), q0=q0, u0=u0)
    if spring is not None:
        mb.add_joint_spring("hinge", *spring)
    if force is not None:
        mb.add_joint_force("hinge", force, **kw)
    return mb.compile()


def pd(t, q, u):
    return -KP * (q - REF) - KD * u


def balance(res) -> np.ndarray:
    """kinetic + potential + strain + dissipated - work of drives and loads, per row."""
    e = res.energy
    return e["kinetic"] + e["potential"] + e["strain"] + e["dissipated"] - e["drive_work"] - e["load_work"]


def test_pd_controller_is_the_joint_spring_damper():
    """f = -kp (q - r) - kd u against add_joint_spring(kp, kd, r): the same states and the same Newton
    iterations every step (with a tangent left out of the iteration matrix Newton would converge
    linearly and take more); both take the compiled tree step (the controller compiled by numba)."""
    dt, t_end = 1e-2, 2.0
    spring = fm.simulate(pendulum(spring=(KP, KD, REF)), t_end, dt)
    ctrl_model = pendulum(pd)
    assert "compiled with numba" in GeneralizedAlpha(ctrl_model).describe_solver()
    ctrl = fm.simulate(ctrl_model, t_end, dt)
    scale = np.abs(spring.q).max()
    assert np.abs(ctrl.q - spring.q).max() <= 8 * np.finfo(float).eps * scale
    assert np.abs(ctrl.u - spring.u).max() <= 8 * np.finfo(float).eps * np.abs(spring.u).max()
    assert np.array_equal(ctrl.newton_iterations, spring.newton_iterations)
    # without its tangent the same controller takes more iterations: the tangent is what makes them equal
    no_tangent = fm.simulate(pendulum(pd, tangent=lambda t, q, u: (0.0, 0.0)), t_end, dt)
    assert no_tangent.newton_iterations.sum() > ctrl.newton_iterations.sum()


def test_pd_controller_energy_balance():
    """The controller's work f u, integrated over the steps by the trapezoid rule (M7), closes the energy
    balance as the spring's energy and the damper's dissipation do: the balance drifts at most by the
    trapezoid rule's error bound T h² max|P''| / 12 with P'' ~ (2 ω)² ω E (ω the highest frequency of
    the linearised pendulum, E its initial energy above the controlled rest)."""
    dt, t_end = 1e-3, 1.0
    res = fm.simulate(pendulum(pd, q0=1.0), t_end, dt)
    omega = math.sqrt((KP + M * G * L / 2) / J)
    energy = 0.5 * KP * (1.0 - REF) ** 2 + M * G * L / 2 * abs(math.sin(1.0))
    bound = t_end * dt**2 * (2 * omega) ** 2 * omega * energy / 12
    drift = np.abs(balance(res) - balance(res)[0]).max()
    assert drift <= bound
    assert abs(res.energy["load_work"][-1]) > 1e3 * bound  # the work booked is not negligible


def test_quadratic_damper_against_closed_form():
    """f = -c u |u| on the rod without gravity: J u' = -c u|u| gives u = u0 / (1 + c u0 t / J) and
    q = q0 + J/c ln(1 + c u0 t / J). Generalized-α is second order: halving the step divides the error by
    about four (between 3 and 5); abs is not complex-analytic, so the tangent is by central differences."""
    c, u0, t_end = 0.5, 3.0, 2.0
    model = pendulum(lambda t, q, u: -c * u * abs(u), gravity=0.0, q0=0.0, u0=u0)
    assert model.mforce[0].complex_step is False
    errs = []
    for dt in (2e-2, 1e-2):
        res = fm.simulate(model, t_end, dt)
        q = J / c * np.log1p(c * u0 * res.t / J)
        errs.append(np.abs(res.q[:, 0] - q).max())
    assert 3.0 < errs[0] / errs[1] < 5.0
    # the same with the tangent given: the same motion to the Newton tolerance's effect on the states
    given = fm.simulate(pendulum(lambda t, q, u: -c * u * abs(u), tangent=lambda t, q, u: (0.0, -2 * c * abs(u)),
                                 gravity=0.0, q0=0.0, u0=u0), t_end, 1e-2)
    assert np.abs(given.q[:, 0] - J / c * np.log1p(c * u0 * given.t / J)).max() <= 1.01 * errs[1]


def test_tangents_complex_step_and_differences():
    """The complex-step tangents of a smooth f(t, q, u) equal the analytic derivatives to round-off; central
    differences (for a function that does not take complex input) to their truncation error h² |f'''| / 6."""
    def f(t, q, u):
        return -KP * np.sin(q - REF) - KD * u**3 + np.exp(-t) * q * u

    def df(t, q, u):
        return -KP * np.cos(q - REF) + np.exp(-t) * u, -3 * KD * u**2 + np.exp(-t) * q

    def real_only(t, q, u):
        return f(float(t), float(q), float(u))

    for t, q, u in ((0.0, 0.1, -0.5), (1.3, 2.0, 1.7)):
        exact = df(t, q, u)
        cs = motion_tangents(f, t, q, u)
        fd = motion_tangents(real_only, t, q, u)
        for e, a, b in zip(exact, cs, fd):
            scale = abs(e) + KP
            assert abs(a - e) <= 4 * np.finfo(float).eps * scale
            h = 6e-6 * max(1.0, abs(q), abs(u))
            assert abs(b - e) <= h**2 * 6 * scale + 1e3 * np.finfo(float).eps * scale / h


def test_origin_invariance():
    """The controller acts on the joint coordinate: moving the whole model changes nothing but round-off."""
    a = fm.simulate(pendulum(pd), 0.5, 1e-2)
    b = fm.simulate(pendulum(pd, origin=(1e3, -2e3, 5e2)), 0.5, 1e-2)
    assert np.abs(a.q - b.q).max() <= 1e-9 * np.abs(a.q).max()


def test_sampled_controller_holds_between_samples():
    """period = 5 dt: the force is f at the sample times t_k = k period from the state there, held until
    the next; the hold seen after every step changes only at the samples, to f(t_k, q(t_k), u(t_k)); its
    work over the run is the sum of F_k (q_{k+1} - q_k) up to the trapezoid rule's O(h^3) per step."""
    dt, period, t_end = 1e-2, 5e-2, 1.0
    model = pendulum(pd, period=period)
    assert model.mforce[0].sampled
    seen = []

    def watch(st, ev):
        seen.append((st.t, st.q[0], st.u[0], st.elements[HOLD_KEY][0, 0], st.elements[HOLD_KEY][2, 0]))
        return None
    res = fm.simulate(model, t_end, dt, callback=watch)
    t, q, u, held, acted = (np.array(c) for c in zip(*seen))
    k = np.rint(t / dt).astype(int)
    sample = k % 5 == 0
    assert np.allclose(held[sample], pd(t[sample], q[sample], u[sample]), rtol=0, atol=1e-14 * KP)
    assert np.array_equal(held[~sample], acted[~sample])  # not a sample: the value that acted goes on
    assert np.array_equal(acted[1:], held[:-1])  # every step took the value held at its start
    q_all = np.concatenate(([0.3], q))
    work = np.sum(np.concatenate(([pd(0.0, 0.3, 0.0)], held[:-1])) * np.diff(q_all))
    omega = math.sqrt((KP + M * G * L / 2) / J)
    assert abs(res.energy["load_work"][-1] - work) <= t_end * dt**2 * omega**3 * abs(work)
    # the held steps really differ from the continuous controller
    assert np.abs(fm.simulate(pendulum(pd), t_end, dt).q - res.q).max() > 1e-3


def zero_order_hold(q: float, u: float, period: float, n: int) -> np.ndarray:
    """The free rotor (J, no gravity) under pd sampled with ``period``: over each hold J u' = F_k is constant,
    so q_{k+1} = q_k + P u_k + P² F_k / 2J, u_{k+1} = u_k + P F_k / J exactly; the angles at the n + 1 samples."""
    out = [q]
    for k in range(n):
        f = pd(k * period, q, u)
        q, u = q + period * u + period**2 * f / (2 * J), u + period * f / J
        out.append(q)
    return np.array(out)


def test_sampled_controller_is_the_zero_order_hold(monkeypatch):
    """On the free rotor the held force is a constant acceleration between samples, which generalized-α
    integrates exactly from a consistent acceleration: with the jump of the accelerations at each sample (M16)
    the run is the zero-order-hold recursion to round-off. Without the jump (the step's pseudo-acceleration
    lagging the new force) each sample acts half a step late: an O(h) error, orders of magnitude larger."""
    dt, period, t_end = 1e-3, 5e-3, 0.5
    model = pendulum(pd, gravity=0.0, q0=1.0, period=period)
    exact = zero_order_hold(1.0, 0.0, period, round(t_end / period))
    res = fm.simulate(model, t_end, dt)
    err = np.abs(res.q[::5, 0] - exact).max()
    assert err <= 100 * np.finfo(float).eps * (1 + exact.size)  # round-off over the steps
    monkeypatch.setattr(GeneralizedAlpha, "sample_jump", lambda self, st: None)  # the old convention
    lag = np.abs(fm.simulate(model, t_end, dt).q[::5, 0] - exact).max()
    # each sample late by h/2: ΔF h / 2J of rate, over the run about (KP / J) h t_end²/2 of angle
    assert lag > 0.1 * KP / J * dt * t_end**2 / 2 > 1e6 * err


def test_sampled_controller_energy_balance(monkeypatch):
    """A sampled PD controller on the pendulum (M16): the energy balance with the held force's work (M7)
    closes to the continuous controller's bound T h² (2ω)² ω E / 12 (test_pd_controller_energy_balance):
    within each hold the motion is smooth and the integrator starts it from consistent accelerations, so
    the balance errs as for a continuous force, at second order (halving h divides it by about four).
    Without the jump of the accelerations at the samples it drifts by |ΔF_k| |u| h / 2 per sample, O(h):
    past the bound."""
    t_end, period = 1.0, 5e-3
    omega = math.sqrt((KP + M * G * L / 2) / J)
    energy = 0.5 * KP * (1.0 - REF) ** 2 + M * G * L / 2 * abs(math.sin(1.0))
    model = pendulum(pd, q0=1.0, period=period)
    drifts = []
    for dt in (1e-3, 5e-4):
        res = fm.simulate(model, t_end, dt)
        drifts.append(np.abs(balance(res) - balance(res)[0]).max())
        assert drifts[-1] <= t_end * dt**2 * (2 * omega) ** 2 * omega * energy / 12
    assert abs(res.energy["load_work"][-1]) > 1e3 * drifts[0]  # the work booked is not negligible
    assert 3.0 < drifts[0] / drifts[1] < 5.0
    monkeypatch.setattr(GeneralizedAlpha, "sample_jump", lambda self, st: None)  # the old convention
    old = fm.simulate(model, t_end, 1e-3)
    assert np.abs(balance(old) - balance(old)[0]).max() > 10 * t_end * 1e-6 * (2 * omega) ** 2 * omega * energy / 12


def test_bad_motion_forces_are_named():
    for kw, words in (
        (dict(force=lambda t, q: 0.0), ["hinge", "2 required positional", "force(t, q, u)"]),
        (dict(force=lambda t: 1.0, tangent=lambda t, q, u: (0, 0)), ["hinge", "tangent and period"]),
        (dict(force=pd, period=-1.0), ["hinge", "period"]),
        (dict(force=lambda t, q, u: 1 / 0), ["hinge", "ZeroDivisionError"]),
        (dict(force=pd, tangent="k"), ["hinge", "tangent"]),
    ):
        with pytest.raises(ModelError) as exc:
            pendulum(**kw)
        for w in words:
            assert w in str(exc.value)


def test_force_of_time_keeps_the_compiled_path():
    """A force of time only is still a time input of the compiled step (no motion force)."""
    m = pendulum(lambda t: math.sin(t))
    assert m.mforce_u.size == 0 and m.jforce_u.size == 1
    assert "compiled" in GeneralizedAlpha(m).describe_solver()
    assert isinstance(pendulum(pd).mforce[0], MotionForce)


class Gains:
    """A plain Python object: numba cannot compile a function that reads it."""

    kp = KP


def chain(forces: dict, period: float | None = None) -> fm.Model:
    """Three rods in a chain on hinges j0, j1, j2 with gravity; ``forces``: joint -> (force, tangent)."""
    mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
    parent = "ground"
    for i in range(3):
        mb.add_node(f"n{i}", position=(float(i), 0.0, 0.0))
        mb.add_body(f"b{i}", node=f"n{i}", mass=M, com=(L / 2, 0.0, 0.0), inertia=np.diag([1e-3, J - M / 4, J - M / 4]))
        mb.add_joint(f"j{i}", "revolute", parent=parent, child=f"n{i}", point=(float(i), 0.0, 0.0), axis=(0, 0, 1),
                     q0=0.2 * (i + 1), u0=1.0 - i)
        parent = f"n{i}"
    for joint, (force, tangent) in forces.items():
        mb.add_joint_force(joint, force, tangent=tangent, period=period if joint == "j0" else None)
    return mb.compile()


def smooth(t, q, u):
    return -KP * np.sin(q - REF) - KD * u * (1.0 + np.cos(t))


def smooth_tangent(t, q, u):
    return -KP * np.cos(q - REF), -KD * (1.0 + np.cos(t))


@pytest.mark.parametrize("period", [None, 0.01], ids=["continuous", "sampled"])
def test_compiled_step_is_the_python_step_bit_for_bit(period):
    """The forces compiled with numba inside the compiled tree step (flexmb/solvers/motion_step.py) against the
    Python step: complex step (PD), central differences (u |u|), a given tangent, optionally a sampled one; the
    same states, iterations and τ every step."""
    model = chain({"j0": (pd, None), "j1": (lambda t, q, u: -0.5 * u * abs(u), None), "j2": (smooth, smooth_tangent)},
                  period)
    A, B = GeneralizedAlpha(model), GeneralizedAlpha(model)
    B.tree_step = None
    assert A.tree_step is not None and "compiled with numba" in A.describe_solver()
    sa, _ = A.initial_acceleration(model.initial_state())
    sb, _ = B.initial_acceleration(model.initial_state())
    aa, ab = sa.udot.copy(), sb.udot.copy()
    h = 2e-3
    for _ in range(100):
        sa, aa, eva, ia = A.advance(sa, aa, h)
        sb, ab, evb, ib = B.advance(sb, ab, h)
        for name in ("q", "u", "udot"):
            np.testing.assert_array_equal(getattr(sa, name), getattr(sb, name), err_msg=name)
        assert (ia.iterations, ia.factorizations) == (ib.iterations, ib.factorizations)
        np.testing.assert_array_equal(eva.tau, evb.tau)
        for r in range(3):
            np.testing.assert_array_equal(eva.motion[r], evb.motion[r])
    assert A.timings["compiled_step"] > 0.0 and B.timings["compiled_step"] == 0.0
    assert np.abs(sa.u).max() > 0.1


def test_a_function_numba_does_not_compile_names_itself():
    """A force reading a Python object keeps the model in the Python Newton loop; describe_solver names the force
    and numba's error, and the motion is the one of the same force written with a number."""
    gains = Gains()
    slow = pendulum(lambda t, q, u: -gains.kp * (q - REF) - KD * u)
    integ = GeneralizedAlpha(slow)
    text = integ.describe_solver()
    assert integ.tree_step is None
    assert "'hinge[0]' does not compile with numba" in text and "Error" in text
    a, b = fm.simulate(slow, 0.5, 1e-2), fm.simulate(pendulum(pd), 0.5, 1e-2)
    np.testing.assert_array_equal(a.q, b.q)


def bushing_chain(period: float | None = None) -> fm.Model:
    """The three-rod chain with its tip held to ground by a soft bushing (free about z): an elastic loop, so
    the element step (flexmb/solvers/element_step.py) takes it."""
    mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
    parent = "ground"
    for i in range(3):
        mb.add_node(f"n{i}", position=(float(i), 0.0, 0.0))
        mb.add_body(f"b{i}", node=f"n{i}", mass=M, com=(L / 2, 0.0, 0.0), inertia=np.diag([1e-3, J - M / 4, J - M / 4]))
        mb.add_joint(f"j{i}", "revolute", parent=parent, child=f"n{i}", point=(float(i), 0.0, 0.0), axis=(0, 0, 1))
        parent = f"n{i}"
    mb.add_bushing("tip", "ground", "n2", stiffness=[2e3] * 6, free_rotation="z", point=(3.0, 0.0, 0.0))
    mb.add_joint_force("j0", pd, period=period)
    mb.add_joint_force("j1", lambda t, q, u: -0.5 * u * abs(u))
    mb.add_joint_force("j2", smooth, tangent=smooth_tangent)
    return mb.compile()


@pytest.mark.parametrize("solver", ["cholmod", "dense", "band"])
@pytest.mark.parametrize("period", [None, 0.01], ids=["continuous", "sampled"])
def test_element_step_is_the_python_step_bit_for_bit(monkeypatch, solver, period):
    """The forces compiled inside the element step (its iterates on CHOLMOD, its whole Newton loop on the dense
    and band factors) against the Python iterates: the same rows bit for bit, and the step really compiled."""
    from flexmb.solvers.element_step import ElementStep

    model = bushing_chain(period)
    integ = GeneralizedAlpha(model, linear_solver=solver)
    assert integ.element_step is not None and "compiled with numba" in integ.describe_solver()
    calls = {"n": 0}
    iterate, newton = ElementStep.iterate, ElementStep.newton

    def count_iterate(self, *a):
        calls["n"] += 1
        return iterate(self, *a)

    def count_newton(self, *a):
        calls["n"] += 1
        return newton(self, *a)
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "iterate", count_iterate)
        mp.setattr(ElementStep, "newton", count_newton)
        fast = fm.simulate(model, 0.2, 2e-3, linear_solver=solver)
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        slow = fm.simulate(model, 0.2, 2e-3, linear_solver=solver)
    assert calls["n"] >= fast.stats["steps"]
    for name in ("q", "u", "udot", "newton_iterations"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    np.testing.assert_array_equal(fast.energy["load_work"], slow.energy["load_work"])
    assert np.abs(fast.u).max() > 0.1
