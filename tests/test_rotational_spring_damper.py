"""The rotational spring-damper (ModelBuilder.add_rotational_spring_damper; elements/rotational_spring_damper.py,
docs/rotational_spring_damper.md), each test against a closed form or an independent computation:

* a torsion pendulum (a disk on a revolute joint, the spring between ground and disk): period 2π sqrt(J/k) and
  the damped decay against the closed form;
* the same joint with add_joint_spring instead: the same motion to round-off;
* the motion does not change when the whole model is moved and turned;
* a free body tied to ground by an isotropic and an axis element, spinning and swinging in 3-D: the energy
  balance closes (strain + dissipated);
* the complete tangents (R6), (R9) against central differences of the moments (R7), (R10) at random states;
  the time step's (R13) and exact (R14) blocks are its symmetric parts as the docs say; (R13) is PSD;
* the compiled Newton step and run are the Python loop's bit for bit;
* a torque law equal to the linear law gives the same motion; outputs by name; bad input refused by name.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_element_run import _assert_same, _both

import flexmb as fm
from flexmb.elements import FAMILIES
from flexmb.elements import rotational_spring_damper_kernels as kernels
from flexmb.elements.rotational_spring_damper import RotationalSpringDampers, kernel_arrays
from flexmb.results.drawing import cell_kinds, lines
from flexmb.results.names import unit_of
from flexmb.rotations import expm as rotvec_to_matrix
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha


def torsion(k: float = 50.0, c: float = 0.0, J: float = 0.2, joint_spring: bool = False, q0: float = 0.3,
            turn: np.ndarray | None = None, shift=(0.1, 0.2, 0.0)) -> fm.Model:
    """A disk of polar inertia J on a revolute joint about z at ``shift``, no gravity, started at q0 at rest,
    with a torsion spring-damper (k, c) about z between ground and disk (or a joint spring); ``turn``: every
    position and axis turned by that rotation matrix."""
    Q = np.eye(3) if turn is None else turn
    p = Q @ np.asarray(shift, dtype=float)
    z = Q @ np.array([0.0, 0.0, 1.0])
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("d", p, rotation=Q)
    mb.add_body("d", "d", 1.0, (0.0, 0.0, 0.0), np.diag([0.1, 0.15, J]))
    mb.add_joint("O", "revolute", "ground", "d", point=p, axis=z, q0=q0)
    if joint_spring:
        mb.add_joint_spring("O", k, c)
    else:
        mb.add_rotational_spring_damper("rs", "ground", "d", axis=z, stiffness=k, damping=c)
    return mb.compile()


def _roots(y: np.ndarray, dt: float) -> tuple[float, float]:
    """(decay rate σ, frequency ω) of a sampled damped oscillation y_{n+1} = p1 y_n + p2 y_{n-1} (least squares)."""
    A = np.column_stack((y[1:-1], y[:-2]))
    p1, p2 = np.linalg.lstsq(A, y[2:], rcond=None)[0]
    z = np.roots([1.0, -p1, -p2])[0]
    return -math.log(abs(z)) / dt, abs(math.atan2(z.imag, z.real)) / dt


def test_torsion_pendulum_has_the_closed_form_period_and_decay() -> None:
    """J φ'' + c φ' + k φ = 0: φ = A e^(-σt) cos(ω_d t + ·), σ = c / 2J, ω_d = sqrt(k/J - σ²). The roots of the
    sampled motion are read off by least squares. Generalized-α's frequency and decay errors are O((ω h)²):
    with ω h = 1e-3 about 1e-7, so 1e-6 holds with a margin (a lagged, first-order torque would err by 1e-3).
    The undamped period 2π sqrt(J/k) is checked the same way."""
    J, k = 0.2, 50.0
    for c in (0.0, 0.3):
        omega0 = math.sqrt(k / J)
        sigma = c / (2 * J)
        omega_d = math.sqrt(omega0**2 - sigma**2)
        h = 1e-3 / omega0
        res = fm.simulate(torsion(k, c, J), 600 * 20 * h, h, output_every=20)  # equally spaced rows
        assert res.status == "finished"
        phi = res.spring_damper("rs", "length")  # column 0: the angle
        np.testing.assert_allclose(phi, res.q[:, 0], rtol=0, atol=1e-14)  # the joint angle since assembly
        sigma_num, omega_num = _roots(phi, res.t[1] - res.t[0])
        assert abs(omega_num / omega_d - 1) < 1e-6, (omega_num, omega_d)
        if c:
            assert abs(sigma_num / sigma - 1) < 1e-6, (sigma_num, sigma)
        else:
            assert abs(2 * math.pi / omega_num / (2 * math.pi * math.sqrt(J / k)) - 1) < 1e-6
            assert abs(sigma_num) < 1e-6 * omega0
        T = res.history("rs.torque")
        np.testing.assert_allclose(T, k * phi + c * res.history("rs.rate"), rtol=1e-13, atol=1e-13 * k)


def test_the_element_on_a_revolute_joint_is_the_joint_spring() -> None:
    """On the disk's revolute joint the torsion element (axis = the joint axis) and add_joint_spring (same k,
    c, rest) give the same motion: the angle (R3) is the joint coordinate, g = e (R5), the moments (R7) project
    on the coordinate as the joint spring's torque. Equal to round-off: 1e-13 of the amplitude 0.3 rad."""
    a = fm.simulate(torsion(50.0, 0.3), 0.5, 1e-3, output_every=10)
    b = fm.simulate(torsion(50.0, 0.3, joint_spring=True), 0.5, 1e-3, output_every=10)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-13 * 0.3)
    np.testing.assert_allclose(a.u, b.u, rtol=0, atol=1e-13 * 0.3 * math.sqrt(50.0 / 0.2))
    ea, eb = a.energy, b.energy  # the joint spring's energy is potential, the element's strain
    np.testing.assert_allclose(ea["strain"] + ea["potential"], eb["strain"] + eb["potential"], rtol=0, atol=1e-12 * 2.25)
    np.testing.assert_allclose(ea["dissipated"], eb["dissipated"], rtol=0, atol=1e-12 * 2.25)


def test_the_motion_is_the_same_when_the_model_is_moved_and_turned() -> None:
    """The element acts by moments only: moving the joint 100 m off the origin and turning the whole model by
    a rotation Q leaves the joint angle's history unchanged (to 1e-10 rad: the positions' round-off at 100 m
    is 1e-14, amplified by the orientation's conditioning)."""
    ref = fm.simulate(torsion(50.0, 0.3), 0.4, 1e-3, output_every=10)
    Q = rotvec_to_matrix(np.array([0.3, -1.1, 0.7]))
    moved = fm.simulate(torsion(50.0, 0.3, turn=Q, shift=(100.0, -40.0, 25.0)), 0.4, 1e-3, output_every=10)
    np.testing.assert_allclose(moved.q, ref.q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(moved.spring_dampers, ref.spring_dampers, rtol=0, atol=1e-8)


def free_body(c: float = 0.4) -> fm.Model:
    """A free body (6 coordinates) tied to ground by two rotational elements (isotropic and about an axis) and
    held in place by a spring-damper, spun and tumbling: a 3-D motion with swing."""
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("b", (0.3, 0.1, -0.2))
    mb.add_body("b", "b", 2.0, (0.0, 0.0, 0.0), np.diag([0.05, 0.08, 0.11]))
    mb.add_joint("f", "free", "ground", "b", u0=[0.0, 0.0, 0.0, 4.0, -2.0, 5.0])
    mb.add_rotational_spring_damper("iso", "ground", "b", stiffness=3.0, damping=c)
    mb.add_rotational_spring_damper("ax", "ground", "b", axis=(0.2, 0.3, 1.0), stiffness=2.0, damping=0.5 * c,
                                    rest=0.1, preload=0.05)
    mb.add_spring_damper("hold", "ground", "b", stiffness=100.0, damping=1.0, point_a=(0.3, 0.1, 0.5))
    return mb.compile()


def test_a_tumbling_body_balances_its_energy() -> None:
    """Kinetic + strain (½ k |ψ|², ½ k (φ - φ0)² + T0 (φ - φ0), the spring-damper's) + dissipated is constant:
    the trapezoidal work integrals err by O((ω h)²) of the energy scale, ω ~ 10 rad/s, h = 2e-4: 4e-6, asserted
    below 1e-5 of the largest kinetic energy; the dissipated energy is a sizable part of it."""
    res = fm.simulate(free_body(), 2.0, 2e-4, output_every=50)
    assert res.status == "finished"
    scale = float(np.max(res.energy["kinetic"]))
    drift = res.total_energy - res.total_energy[0]
    assert res.energy["dissipated"][-1] > 0.1 * scale
    assert np.max(np.abs(drift)) < 1e-5 * scale, np.max(np.abs(drift)) / scale
    assert np.max(res.history("iso.angle")) > 0.5  # a large rotation, not a linearization


def _moments(data, prep, R, V, N):
    """The node wrenches (N + 1, 6) of rotational_forces at node orientations R, twists V, and the evaluation."""
    fam: RotationalSpringDampers = FAMILIES["rotational_spring_damper"]
    n = data.n
    w = np.zeros((N + 1, 6))
    g, out = np.empty((n, 3)), [np.empty(n) for _ in range(5)]
    assert kernels.rotational_forces(R, V, kernel_arrays(data, prep), w, (g, *out)) < 0
    return w, fam.evaluation(R, V, g, *out, data.k, data.c)


def test_the_complete_tangent_is_that_of_central_differences() -> None:
    """At random node orientations and twists of the tumbling body's elements (node a ground) and of a pair of
    free nodes: central differences of the moments (R7), (R10) in the nodes' virtual rotations (R -> exp([δ]×) R,
    step 1e-6) and angular velocities against the complete tangent (kernels.FULL); truncation O(δ²) ~ 1e-12 and
    round-off 1e-16/δ ~ 1e-10 of the moments' scale (k ~ 3): agreement to 1e-7 of the scale. The time step's
    blocks (R13) are PSD and equal the complete tangent where the body turns about the axis only."""
    rng = np.random.default_rng(7)
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    for i, p in enumerate(((0, 0, 0), (1, 0, 0))):
        mb.add_node(f"n{i}", p)
        mb.add_body(f"n{i}", f"n{i}", 1.0, (0, 0, 0), np.eye(3))
        mb.add_joint(f"f{i}", "free", "ground", f"n{i}")
    mb.add_rotational_spring_damper("iso", "n0", "n1", stiffness=3.0, damping=0.7)
    mb.add_rotational_spring_damper("ax", "n0", "n1", axis=(0.3, -0.2, 1.0), stiffness=2.0, damping=0.4, preload=0.3,
                                    rest=-0.2)
    mb.add_rotational_spring_damper("gx", "ground", "n1", axis=(1.0, 0.5, 0.0), stiffness=1.5, damping=0.2)
    model = mb.compile()
    data = model.elements["rotational_spring_damper"]
    fam = FAMILIES["rotational_spring_damper"]
    prep = fam.prepare(model, data)
    N = 2
    for _ in range(5):
        R = np.stack([rotvec_to_matrix(rng.normal(scale=0.6, size=3)) for _ in range(N)])
        V = rng.normal(size=(N, 6))
        w0, fe = _moments(data, prep, R, V, N)
        K = fam.full_blocks(data, prep, fe, 1.0, 0.0, kernels.FULL)
        Cm = fam.full_blocks(data, prep, fe, 0.0, 1.0, kernels.FULL)
        d = 1e-6
        for e in range(data.n):
            one, pe = _single(data, e), (prep[0][e:e + 1], prep[1][e:e + 1])
            nodes = [int(prep[0][e]), int(prep[1][e])]
            for side, node in enumerate(nodes):
                if node == N:  # ground: no columns
                    continue
                for j in range(3):
                    col = 6 * side + 3 + j
                    dR = rotvec_to_matrix(d * np.eye(3)[j])
                    Rp, Rm = R.copy(), R.copy()
                    Rp[node], Rm[node] = dR @ R[node], dR.T @ R[node]
                    Vp, Vm = V.copy(), V.copy()
                    Vp[node, 3 + j] += d
                    Vm[node, 3 + j] -= d
                    dw = (_moments(one, pe, Rp, V, N)[0] - _moments(one, pe, Rm, V, N)[0]) / (2 * d)
                    dv = (_moments(one, pe, R, Vp, N)[0] - _moments(one, pe, R, Vm, N)[0]) / (2 * d)
                    for s2, n2 in enumerate(nodes):  # rows of both ends (ground's row N: the element's reaction)
                        np.testing.assert_allclose(K[e, 6 * s2:6 * s2 + 6, col], dw[n2], rtol=0, atol=1e-7 * 3)
                        np.testing.assert_allclose(Cm[e, 6 * s2:6 * s2 + 6, col], dv[n2], rtol=0, atol=1e-7 * 3)
        # (R13) symmetric PSD; (R14) the symmetric part of the complete tangent
        S = fam.full_blocks(data, prep, fe, 1.0, 0.0, kernels.TIME_STEP)
        X = fam.full_blocks(data, prep, fe, 1.0, 0.0, kernels.EXACT)
        for e in range(data.n):
            np.testing.assert_array_equal(S[e], S[e].T)
            assert np.linalg.eigvalsh(S[e]).min() > -1e-12 * 3
            np.testing.assert_allclose(X[e], 0.5 * (K[e] + K[e].T), rtol=0, atol=1e-14 * 3)


def _single(data, e):
    """The data of element ``e`` alone."""
    import dataclasses
    fields = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    out = {}
    for k, v in fields.items():
        if isinstance(v, np.ndarray) and k != "laws":
            out[k] = v[e:e + 1]
        elif isinstance(v, tuple):
            out[k] = v[e:e + 1]
        else:
            out[k] = v
    out["laws"] = np.zeros(0, dtype=np.int64)
    return type(data)(**out)


def test_the_time_step_tangent_is_complete_on_a_revolute_joint() -> None:
    """Where node b turns about the axis only (h = 0, ρ = 1) the swing terms of (R6a) vanish along the joint:
    a linear torsion pendulum converges in one Newton correction per step (two iterates)."""
    res = fm.simulate(torsion(50.0, 0.3), 0.2, 1e-3, output_every=10)
    assert int(np.max(res.steps["iterations"])) <= 2


def test_compiled_step_and_run_are_the_python_loop_bit_for_bit(monkeypatch) -> None:
    """The tumbling body takes the compiled element step (no fallback) and its fixed-step runs the whole-run call (the
    element state, the reference angles of (R3), set at every step's end inside it: element_run._rotational_end), and
    it is the Python Newton loop's numbers bit for bit (the same kernels in the same order)."""
    model = free_body()
    integ = GeneralizedAlpha(model)
    how = integ.describe_solver(fixed_steps=True, callback=False)
    assert "Newton loop and iterates in Python" not in how and "Newton in Python" not in how, how
    assert "whole runs compiled between output rows" in how, how
    assert ElementStep.applies(model, integ.asm, True)
    fast, slow, calls = _both(monkeypatch, model, 0.3, 1e-3, output_every=10)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)
    _assert_same(fast, slow)
    np.testing.assert_array_equal(fast.spring_dampers, slow.spring_dampers)
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        python = fm.simulate(model, 0.3, 1e-3, output_every=10)
    _assert_same(slow, python)
    np.testing.assert_array_equal(slow.spring_dampers, python.spring_dampers)


def test_a_linear_torque_law_is_the_linear_element(monkeypatch) -> None:
    """law(φ, φ', t) = k φ + c φ' (complex-step tangents k and c exactly) gives the linear element's motion to
    round-off (the law's torque added after the kernel's zero); the law runs compiled, the Python loop's numbers bit
    for bit; a law numba cannot compile (it reads a dict) keeps the Python loop, named."""
    k, c = 50.0, 0.3
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("d", (0.1, 0.2, 0.0))
    mb.add_body("d", "d", 1.0, (0.0, 0.0, 0.0), np.diag([0.1, 0.15, 0.2]))
    mb.add_joint("O", "revolute", "ground", "d", axis=(0, 0, 1), q0=0.3)
    mb.add_rotational_spring_damper("rs", "ground", "d", axis=(0, 0, 1), law=lambda p, v, t: k * p + c * v)
    law = mb.compile()
    assert "Newton loop and iterates in Python" not in GeneralizedAlpha(law).describe_solver()
    a = fm.simulate(law, 0.3, 1e-3, output_every=10)
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        python = fm.simulate(law, 0.3, 1e-3, output_every=10)
    _assert_same(a, python)
    table = {"k": k}
    mb.add_rotational_spring_damper("py", "ground", "d", axis=(0, 1, 0), law=lambda p, v, t: table["k"] * p)
    how = GeneralizedAlpha(mb.compile()).describe_solver()
    assert "rotational spring-damper 'py': its torque law does not compile with numba" in how, how
    b = fm.simulate(torsion(k, c), 0.3, 1e-3, output_every=10)
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-14)
    # the law's power T φ' is counted as dissipated: ∫ (k φ + c φ') φ' = ½ k (φ² - φ(0)²) + ∫ c φ'², the linear
    # element's strain + dissipated less ½ k φ(0)²; the trapezoidal integral errs by O((ω h)²) of it
    e0 = 0.5 * k * 0.3**2
    np.testing.assert_allclose(a.energy["dissipated"] + e0, b.energy["dissipated"] + b.energy["strain"], rtol=0,
                               atol=1e-3 * e0)


@pytest.mark.parametrize("kwargs, words", [
    (dict(node_a="d", node_b="d"), "both 'd'"),
    (dict(node_a="ground", node_b="nowhere"), "unknown node 'nowhere'"),
    (dict(node_b="ground", node_a="d"), "ground may be node_a only"),
    (dict(axis=(0.0, 0.0, 0.0)), "zero vector"),
    (dict(axis=(0.0, math.nan, 1.0)), "NaN"),
    (dict(stiffness=-1.0), "stiffness"),
    (dict(damping=-0.1), "damping"),
    (dict(axis=None, rest=0.2), "need an axis"),
    (dict(law=lambda p, v, t: p, stiffness=1.0), "law replaces"),
    (dict(law_tangent=lambda p, v, t: (1.0, 0.0)), "law_tangent without law"),
    (dict(name="O"), "joint"),
])
def test_bad_input_is_refused_by_name(kwargs, words) -> None:
    mb = fm.ModelBuilder()
    mb.add_node("d", (0, 0, 0))
    mb.add_body("d", "d", 1.0, (0, 0, 0), np.eye(3))
    mb.add_joint("O", "revolute", "ground", "d", axis=(0, 0, 1))
    args = dict(name="rs", node_a="ground", node_b="d", axis=(0, 0, 1), stiffness=1.0)
    args.update(kwargs)
    with pytest.raises(fm.ModelError, match="rotational spring-damper") as err:
        mb.add_rotational_spring_damper(**args)
    assert words in str(err.value)


def test_outputs_drawing_and_info() -> None:
    """The result's rows, the drawing's line between the nodes and flexmb info's description."""
    model = free_body()
    res = fm.simulate(model, 0.05, 1e-3, output_every=10)
    assert res.spring_damper_names == ("hold", "iso", "ax")
    assert res.history("ax.angle").shape == res.t.shape
    assert unit_of(res, "ax.angle") == "angle [rad]" and unit_of(res, "ax.torque") == "torque [N m]"
    np.testing.assert_array_equal(res.history("iso.torque"), res.spring_damper("iso", "force"))
    assert "rotational_spring_damper" in cell_kinds()
    d = res.drawing
    np.testing.assert_array_equal(d["rotational_spring_damper_a"], [-1, -1])
    cells, kinds, _ = lines(d)
    assert np.count_nonzero(kinds == cell_kinds().index("rotational_spring_damper")) == 2
    assert "rotational spring-dampers" in fm.describe(model)


def test_statics_holds_a_pendulum_where_the_torques_balance() -> None:
    """A pendulum (mass m at L on the x axis of its node, revolute about z, gravity -y) held by a preloaded
    torsion element about z: equilibrium where k (q - φ0) + T0 + m g L cos q = 0, solved independently by
    bisection. The static solve (exact tangent (R14)) converges to 1e-12 of the force scale: q to 1e-10 rad."""
    from scipy.optimize import brentq

    from flexmb.solvers.statics import static_equilibrium
    m, L, g0, k, T0, rest = 1.5, 0.4, 9.81, 20.0, 0.7, 0.2
    mb = fm.ModelBuilder(gravity=(0.0, -g0, 0.0))
    mb.add_node("p", (0.0, 0.0, 0.0))
    mb.add_body("p", "p", m, (L, 0.0, 0.0), np.diag([1e-3, 1e-2, 1e-2]))
    mb.add_joint("O", "revolute", "ground", "p", axis=(0, 0, 1))
    mb.add_rotational_spring_damper("rs", "ground", "p", axis=(0, 0, 1), stiffness=k, damping=1.0, rest=rest,
                                    preload=T0)
    q = static_equilibrium(mb.compile(), tol=1e-12).state.q[0]
    ref = brentq(lambda x: k * (x - rest) + T0 + m * g0 * L * math.cos(x), -1.5, 1.5, xtol=1e-15)
    assert q == pytest.approx(ref, abs=1e-10)
