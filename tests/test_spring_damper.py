"""The point-to-point spring-damper (ModelBuilder.add_spring_damper; elements/spring_damper.py,
docs/spring_damper.md), each test against a closed form or an independent computation:

* a mass on a spring-damper: frequency and decay of the free vibration against the closed form;
* a preloaded spring in statics: the equilibrium displacement against (m g - F0) / k;
* a pendulum hung on a spring-damper: the energy balance (dissipation included) closes;
* a spring-damper at 45 degrees in space: its force along the line between its points;
* a linear force law is the linear element bit for bit;
* the blocks (S8)-(S10) against central differences of the wrenches (S5); symmetry;
* zero length refused, naming the element; an element whose points meet in a run fails by name;
* the motion does not change when the model is moved by 100 m and scaled to 1 cm;
* the compiled Newton path and run (bit for bit with the per-step path);
* outputs by name, the ParaView cell kind and the animation's style.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from test_element_run import _assert_same, _both

import flexmb as fm
from flexmb.elements import spring_damper_kernels as kernels
from flexmb.results.drawing import cell_kinds, frames, lines
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.statics import static_equilibrium

G0 = 9.81


def oscillator(k: float = 800.0, c: float = 4.0, m: float = 2.0, law=None, tangent=None) -> fm.Model:
    """A body of mass m on a prismatic joint along x, tied to ground at the origin by a
    spring-damper of rest length 0.9 m; it starts at x = 1 m at rest (equilibrium: x = 0.9 m)."""
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("m", (1.0, 0.0, 0.0))
    mb.add_body("m", "m", m, (0.0, 0.0, 0.0), np.diag([1e-3] * 3))
    mb.add_joint("s", "prismatic", "ground", "m", axis=(1, 0, 0))
    if law is None:
        mb.add_spring_damper("sd", "ground", "m", stiffness=k, damping=c, rest_length=0.9)
    else:
        mb.add_spring_damper("sd", "ground", "m", force_law=law, force_law_tangent=tangent)
    return mb.compile()


def test_mass_on_a_spring_damper_has_the_closed_form_frequency_and_decay() -> None:
    """m x'' + c x' + k (x - L0) = 0: x - L0 = A e^(-σt) cos(ω_d t + φ), σ = c / 2m, ω_d = sqrt(k/m - σ²).
    The sampled motion obeys x_{n+1} = p1 x_n + p2 x_{n-1} with roots z = e^((-σ ± iω_d) Δ); the
    roots are read off the run by least squares. Generalized-α is second order: its relative
    frequency and decay errors are O((ω h)²); with ω h = 1e-3 they are about 1e-7, so 1e-6 holds
    with a margin and would fail for a first-order (lagged) force (error O(ω h) = 1e-3)."""
    k, c, m = 800.0, 4.0, 2.0
    omega0 = math.sqrt(k / m)  # 20 rad/s
    sigma = c / (2 * m)
    omega_d = math.sqrt(omega0**2 - sigma**2)
    h = 1e-3 / omega0
    res = fm.simulate(oscillator(k, c, m), 1.0, h, output_every=40)
    assert res.status == "finished"
    y = res.x[:, 0, 0] - 0.9
    dt = res.t[1] - res.t[0]
    A = np.column_stack((y[1:-1], y[:-2]))
    p1, p2 = np.linalg.lstsq(A, y[2:], rcond=None)[0]
    z = np.roots([1.0, -p1, -p2])[0]
    sigma_num, omega_num = -math.log(abs(z)) / dt, abs(math.atan2(z.imag, z.real)) / dt
    assert abs(omega_num / omega_d - 1) < 1e-6, (omega_num, omega_d)
    assert abs(sigma_num / sigma - 1) < 1e-6, (sigma_num, sigma)
    # the recorded length, rate and tension are those of the motion
    l, ldot, F = res.spring_damper("sd").T
    np.testing.assert_allclose(l, res.x[:, 0, 0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(ldot, res.u[:, 0], rtol=0, atol=1e-14)
    np.testing.assert_allclose(F, k * (l - 0.9) + c * ldot, rtol=1e-14, atol=1e-12)


def test_a_preloaded_spring_holds_a_mass_where_statics_says() -> None:
    """A mass m hangs on a vertical spring of stiffness k, rest length its assembly length, with the
    preload F0 (a tension): equilibrium where k δ + F0 = m g, δ = (m g - F0) / k (stretch down).
    The static solve converges to tol 1e-12 of the force scale m g, so δ to 1e-12 m g / k
    (relative: 1e-12 over δ's size, taken as 1e-10 for round-off of the geometry)."""
    k, F0, m = 5e3, 3.0, 1.5
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, -G0))
    mb.add_node("m", (0.2, 0.1, 0.0))
    mb.add_body("m", "m", m, (0.0, 0.0, 0.0), np.diag([1e-3] * 3))
    mb.add_joint("z", "prismatic", "ground", "m", axis=(0, 0, 1))
    mb.add_spring_damper("sd", "ground", "m", stiffness=k, damping=7.0, preload=F0, point_a=(0.2, 0.1, 0.5))
    model = mb.compile()
    st = static_equilibrium(model, tol=1e-12).state
    delta = (m * G0 - F0) / k
    assert st.q[0] == pytest.approx(-delta, rel=1e-10)


def pendulum(damping: float = 2.0, scale: float = 1.0, offset=(0.0, 0.0, 0.0), gravity: float = G0) -> fm.Model:
    """A rigid pendulum (mass 1.2 kg at 0.8 m) on a revolute joint about z at ``offset``, a
    spring-damper from a ground point to a point of the pendulum off its node (turning points)."""
    o = np.asarray(offset, dtype=float)
    s = scale
    mb = fm.ModelBuilder(gravity=(0.0, -gravity, 0.0))
    mb.add_node("p", o)
    mb.add_body("p", "p", 1.2, (0.8 * s, 0.0, 0.0), np.diag([1e-3, 1e-2, 1e-2]) * s * s)
    mb.add_joint("O", "revolute", "ground", "p", point=o, axis=(0, 0, 1), q0=-0.3)
    mb.add_spring_damper("sd", "ground", "p", stiffness=60.0, damping=damping, rest_length=0.5 * s, preload=4.0 * s,
                         point_a=o + s * np.array([0.6, 0.7, 0.1]), point_b=o + s * np.array([0.5, 0.05, 0.0]))
    return mb.compile()


def test_a_pendulum_on_a_spring_damper_balances_its_energy() -> None:
    """Kinetic + potential + strain (½ k (l - L0)² + F0 (l - L0)) + dissipated (∫ c l'²) is
    constant; the integrals are trapezoidal over the steps, whose error is O(h²) of the energy's
    scale: with h = 1e-4 s and motion frequencies about 10 rad/s, (ω h)² ≈ 1e-6; the closure is
    asserted to 1e-6 of the scale (the largest kinetic energy) and the dissipated energy is a sizable
    share of it (so the check is not passed by a small damper)."""
    res = fm.simulate(pendulum(), 2.0, 1e-4, output_every=100)
    assert res.status == "finished"
    scale = float(np.max(res.energy["kinetic"]))
    drift = res.total_energy - res.total_energy[0]
    assert res.energy["dissipated"][-1] > 0.1 * scale
    assert np.max(np.abs(drift)) < 1e-6 * scale, np.max(np.abs(drift)) / scale


def test_force_at_45_degrees_acts_along_the_line_between_the_points() -> None:
    """A free body, its spring-damper's ground point on a line at 45° to z (and 60° to x and y) from
    its node: at rest, no gravity, the preload F0 plus k times the stretch pulls the body toward the
    ground point: the initial acceleration is -n F / m, n the unit vector from a to b (exact up to
    round-off of the products: 1e-14 relative)."""
    m, k, L0, F0 = 3.0, 100.0, 0.7, 2.5
    pa = np.array([0.3, -0.2, 0.4])
    n = np.array([0.5, 0.5, math.sqrt(0.5)])
    pb = pa + 1.2 * n
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("b", pb)
    mb.add_body("b", "b", m, (0.0, 0.0, 0.0), np.diag([1.0, 2.0, 3.0]))
    mb.add_joint("free", "free", "ground", "b")
    mb.add_spring_damper("sd", "ground", "b", stiffness=k, damping=1.0, rest_length=L0, preload=F0, point_a=pa)
    res = fm.simulate(mb.compile(), 1e-4, 1e-4)
    F = k * (1.2 - L0) + F0
    acc = res.udot[0, :3]
    np.testing.assert_allclose(acc, -n * F / m, rtol=1e-14, atol=1e-14 * F / m)
    assert res.spring_damper("sd", "force")[0] == pytest.approx(F, rel=1e-15)


def _python(monkeypatch, model: fm.Model, *args, **kw) -> fm.Result:
    """The run on the Python Newton loop and iterates (the families' own evaluate and blocks)."""
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        return fm.simulate(model, *args, **kw)


def test_a_linear_force_law_is_the_linear_element_bit_for_bit(monkeypatch) -> None:
    """F = k (l - L0) + c l' given as a law (its tangents by complex step: exact for a linear law)
    and given as k, c, L0: the same arithmetic, so the same motion bit for bit, the law compiled with
    numba into the compiled step (flexmb info says so; the linear element on the Python loop)."""
    k, c = 800.0, 4.0
    law_model = oscillator(law=lambda l, v, t: k * (l - 0.9) + c * v)
    lin = _python(monkeypatch, oscillator(k, c), 0.3, 1e-3)
    law = fm.simulate(law_model, 0.3, 1e-3)
    assert "force laws compiled with numba" in GeneralizedAlpha(law_model).describe_solver()
    np.testing.assert_array_equal(law.q, lin.q)
    np.testing.assert_array_equal(law.u, lin.u)
    np.testing.assert_array_equal(law.spring_dampers, lin.spring_dampers)
    # its power F l' is counted as work it takes out (no strain energy): the law's "dissipated" is the
    # linear element's strain energy gained plus its dissipation (both trapezoidal sums of the same
    # powers over the steps: equal to the integrators' O(h²), 1e-4 of the energy at ω h = 0.02)
    assert np.all(law.energy["strain"] == 0.0)
    gained = lin.energy["strain"] - lin.energy["strain"][0] + lin.energy["dissipated"]
    np.testing.assert_allclose(law.energy["dissipated"], gained, rtol=0, atol=1e-4 * lin.energy["strain"][0])
    # the tangents given: the same too
    given = fm.simulate(oscillator(law=lambda l, v, t: k * (l - 0.9) + c * v, tangent=lambda l, v, t: (k, c)), 0.3, 1e-3)
    np.testing.assert_array_equal(given.q, lin.q)


def test_a_nonlinear_force_law_runs_with_its_complex_step_tangent() -> None:
    """A hardening law k l_s + k3 l_s³ (l_s = l - L0): the run converges in few Newton iterations
    (the tangent k + 3 k3 l_s² from the complex step is exact), and its tension is recorded."""
    law = lambda l, v, t: 800.0 * (l - 0.9) + 5e5 * (l - 0.9) ** 3 + 2.0 * v  # noqa: E731
    res = fm.simulate(oscillator(law=law), 0.2, 1e-3)
    assert res.status == "finished" and res.newton_iterations.max() <= 4
    l, ldot, F = res.spring_damper("sd").T
    np.testing.assert_allclose(F, [law(a, b, 0.0) for a, b in zip(l, ldot)], rtol=1e-13, atol=1e-13)


def _wrenches(x, R, V, sa, sb, k, c, L0, F0):
    """(S5) of one element between nodes 0 and 1 (w (3, 6), row 2 ground) and its evaluation."""
    w = np.zeros((3, 6))
    out = [np.empty((1, 12)), np.empty((1, 3)), np.empty((1, 3)), np.empty((1, 3))] + [np.empty(1) for _ in range(5)]
    springs = kernels.SpringDamperArrays(np.array([0]), np.array([1]), sa, sb, np.array([k]), np.array([c]), np.array([L0]),
                                         np.array([F0]), np.array([1e-9]))
    kernels.spring_damper_forces(x, R, V, springs, w, kernels.SpringDamperResults(*out))
    return w[:2].reshape(12), out


def _rot(v):
    """exp([v]×) (Rodrigues)."""
    a = np.linalg.norm(v)
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + (np.sin(a) / a) * K + ((1 - np.cos(a)) / a**2) * K @ K if a else np.eye(3)


@pytest.mark.parametrize("F0", [3.0, -40.0], ids=["tension", "compression"])
def test_the_blocks_are_the_derivatives_of_the_wrenches(F0) -> None:
    """Central differences (step 1e-6 on coordinates of size 1: truncation 1e-12, round-off
    1e-16 · 1e2 / 1e-6 = 1e-8 of the wrenches' size 1e2; asserted to 1e-6 of the largest block
    entry) of the wrenches over the node motions (δx, δθ with δR = [δθ]× R) and the twists:
    the exact tangent (S9) is the symmetric part of the stiffness, the damping block c GᵀG is the
    derivative over the twists; all blocks are symmetric; (S8) is positive semi-definite, also in
    compression, and is (S9) where the points sit on their nodes and the element is in tension."""
    rng = np.random.default_rng(3)
    x = np.array([[0.1, 0.2, -0.1], [0.9, 0.6, 0.4]])
    R = np.array([_rot(rng.normal(size=3)) for _ in range(2)])
    sa, sb = np.array([[0.2, -0.1, 0.3]]), np.array([[-0.25, 0.15, 0.1]])
    k, c, L0 = 120.0, 3.0, 0.6
    V0 = np.zeros((2, 6))
    w0, out = _wrenches(x, R, V0, sa, sb, k, c, L0, F0)
    G, nv, ra, rb, l, ldot, F = out[:7]
    h = 1e-6
    K = np.empty((12, 12))
    for j in range(12):
        cols = []
        for s in (h, -h):
            xx, RR = x.copy(), R.copy()
            node, comp = divmod(j, 6)
            if comp < 3:
                xx[node, comp] += s
            else:
                RR[node] = _rot(s * np.eye(3)[comp - 3]) @ R[node]
            cols.append(_wrenches(xx, RR, V0, sa, sb, k, c, L0, F0)[0])
        K[:, j] = (cols[0] - cols[1]) / (2 * h)
    C = np.empty((12, 12))
    for j in range(12):
        cols = []
        for s in (h, -h):
            V = V0.copy()
            V[divmod(j, 6)] += s
            cols.append(_wrenches(x, R, V, sa, sb, k, c, L0, F0)[0])
        C[:, j] = (cols[0] - cols[1]) / (2 * h)
    blocks = {}
    for mode in (kernels.MATERIAL, kernels.TIME_STEP, kernels.EXACT):
        for ck, cc in ((1.0, 0.0), (0.0, 1.0)):
            b = np.empty((1, 12, 12))
            kernels.spring_damper_blocks(G, nv, ra, rb, l, F, np.array([k]), np.array([c]), ck, cc, mode, b)
            blocks[mode, ck] = b[0]
            np.testing.assert_array_equal(b[0], b[0].T)
    scale = np.abs(K).max()
    np.testing.assert_allclose(blocks[kernels.EXACT, 1.0], 0.5 * (K + K.T), rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(blocks[kernels.EXACT, 0.0], C, rtol=0, atol=1e-6 * np.abs(C).max())
    np.testing.assert_allclose(blocks[kernels.TIME_STEP, 0.0], C, rtol=0, atol=1e-6 * np.abs(C).max())
    np.testing.assert_allclose(blocks[kernels.MATERIAL, 1.0], k * np.outer(G[0], G[0]), rtol=1e-15, atol=0)
    assert np.linalg.eigvalsh(blocks[kernels.TIME_STEP, 1.0]).min() > -1e-12 * scale
    # points on the node origins, in tension: the time step's block is the whole tangent
    z = np.zeros((1, 3))
    w0, out = _wrenches(x, R, V0, z, z, k, c, 0.5, abs(F0))
    G, nv, ra, rb, l, ldot, F = out[:7]
    b = np.empty((1, 12, 12))
    kernels.spring_damper_blocks(G, nv, ra, rb, l, F, np.array([k]), np.array([c]), 1.0, 0.0, kernels.TIME_STEP, b)
    Kx = np.empty((12, 12))
    for j in range(12):
        cols = []
        for s in (h, -h):
            xx, RR = x.copy(), R.copy()
            node, comp = divmod(j, 6)
            if comp < 3:
                xx[node, comp] += s
            else:
                RR[node] = _rot(s * np.eye(3)[comp - 3]) @ R[node]
            cols.append(_wrenches(xx, RR, V0, z, z, k, c, 0.5, abs(F0))[0])
        Kx[:, j] = (cols[0] - cols[1]) / (2 * h)
    np.testing.assert_allclose(b[0], Kx, rtol=0, atol=1e-6 * np.abs(Kx).max())


def test_zero_length_is_refused_naming_the_element(monkeypatch) -> None:
    """Points that coincide at assembly: ModelError naming the element, the points and what to do;
    a run that brings the points together: a SolverError naming the element and its length."""
    mb = fm.ModelBuilder()
    mb.add_node("m", (1.0, 0.0, 0.0))
    mb.add_body("m", "m", 1.0, (0.0, 0.0, 0.0), np.diag([1e-3] * 3))
    mb.add_joint("s", "prismatic", "ground", "m", axis=(1, 0, 0))
    with pytest.raises(fm.ModelError,
                       match=r"spring-damper .tie.*coincide at assembly \(distance 0 m\).*give point_a and point_b apart"):
        mb.add_spring_damper("tie", "ground", "m", stiffness=1.0, point_a=(1.0, 0.0, 0.0))
    # a preload pulls the mass into the ground point (no stiffness, a constant force of 50 N)
    mb.add_spring_damper("tie", "ground", "m", preload=50.0, point_a=(0.0, 0.0, 0.0))
    model = mb.compile()
    for res in (fm.simulate(model, 1.0, 1e-3), _python(monkeypatch, model, 1.0, 1e-3)):
        assert res.status.startswith("failed"), res.status
        assert "spring-damper 'tie'" in res.status and "m long" in res.status and "meet" in res.status
        assert np.all(np.isfinite(res.q))


def test_the_motion_is_the_same_moved_by_100_m_and_scaled_to_1_cm() -> None:
    """The pendulum without gravity (no length scale of its own: g would set one), swung by its
    spring-damper, at the origin and at 100 m scaled to 1 cm (lengths × 0.01, inertia × 1e-4, the
    preload × 0.01: the same dimensionless motion). Angles and the scaled length agree to 1e-9:
    Newton stops at rtol 1e-10 (simulate's default) of the force scale on either model, so the
    motions may differ by about that, relative; the angle swings through more than 0.3 rad."""
    ref = fm.simulate(pendulum(gravity=0.0), 1.0, 1e-3, output_every=10)
    s = 0.01
    moved = fm.simulate(pendulum(gravity=0.0, scale=s, offset=(100.0, -100.0, 100.0)), 1.0, 1e-3, output_every=10)
    assert ref.status == moved.status == "finished"
    assert np.ptp(ref.q[:, 0]) > 0.3
    np.testing.assert_allclose(moved.q, ref.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(moved.spring_damper("sd", "length") / s, ref.spring_damper("sd", "length"), rtol=1e-9)


def chain(n: int = 6) -> fm.Model:
    """n links hung from each other by revolute joints, a damped spring-damper between neighbouring
    links' ends and one from ground to the last link: spring-dampers between two moving nodes."""
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    for i in range(n):
        mb.add_node(f"n{i}", (0.3 * i, 0.0, 0.0))
        mb.add_body(f"b{i}", f"n{i}", 0.5, (0.15, 0.0, 0.0), np.diag([1e-4, 4e-3, 4e-3]))
        mb.add_joint(f"j{i}", "revolute", "ground" if i == 0 else f"n{i - 1}", f"n{i}", point=(0.3 * i, 0.0, 0.0),
                     axis=(0, 0, 1))
        if i:
            mb.add_spring_damper(f"sd{i}", f"n{i - 1}", f"n{i}", stiffness=200.0, damping=0.5,
                                 point_a=(0.3 * i - 0.15, 0.05, 0.0), point_b=(0.3 * i + 0.15, 0.05, 0.0))
    mb.add_spring_damper("top", "ground", f"n{n - 1}", stiffness=50.0, damping=0.2, point_a=(0.3 * n, 0.5, 0.0),
                         point_b=(0.3 * n, 0.0, 0.0))
    return mb.compile()


@pytest.mark.parametrize("solver", ["auto", "band"])
def test_spring_dampers_take_the_compiled_run_bit_for_bit(monkeypatch, solver) -> None:
    """The compiled Newton loop (flexmb info names it) and the compiled run between output rows
    (ElementRun) give the per-step path's numbers bit for bit: rows, energies (the dampers'
    dissipation an ordered sum on both), step history, counters."""
    model = chain()
    integ = GeneralizedAlpha(model, linear_solver=solver)
    assert "one compiled call" in integ.newton_path() and ElementRun.applies(integ, None)
    assert "whole Newton loop in one compiled call" in integ.describe_solver()  # what flexmb info prints
    fast, slow, calls = _both(monkeypatch, model, 0.3, 1e-3, output_every=25, linear_solver=solver)
    assert fast.status == "finished" and fast.energy["dissipated"][-1] > 0
    _assert_same(fast, slow)
    np.testing.assert_array_equal(fast.spring_dampers, slow.spring_dampers)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)
    python = _python(monkeypatch, model, 0.3, 1e-3, output_every=25, linear_solver=solver)
    np.testing.assert_array_equal(python.q, fast.q)  # the families' Python evaluate and blocks: the same arithmetic
    np.testing.assert_array_equal(python.energy["dissipated"], fast.energy["dissipated"])


def test_compiled_iterates_on_cholmod_are_the_python_iterates_bit_for_bit(monkeypatch) -> None:
    """On CHOLMOD (the loop in Python, each iterate and the matrix's values compiled: element_iterate,
    element_matrix with the spring-dampers' blocks on the lower triangle) the run equals the
    families' Python evaluate and blocks bit for bit."""
    model = chain()
    integ = GeneralizedAlpha(model, linear_solver="cholmod")
    assert "each Newton iterate and the iteration matrix's values in compiled calls" in integ.newton_path()
    fast = fm.simulate(model, 0.1, 1e-3, output_every=10, linear_solver="cholmod")
    slow = _python(monkeypatch, model, 0.1, 1e-3, output_every=10, linear_solver="cholmod")
    assert fast.status == "finished"
    for name in ("q", "u", "udot", "spring_dampers", "newton_iterations"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    np.testing.assert_array_equal(fast.energy["dissipated"], slow.energy["dissipated"])


def test_outputs_by_name_and_the_paraview_cells(tmp_path) -> None:
    """Result.spring_damper by name; a saved result keeps them; every spring-damper is one line cell
    of its own kind from p_a to p_b, carrying its length, rate and force."""
    model = chain(3)
    res = fm.simulate(model, 0.05, 1e-3, output_every=10, out=tmp_path / "run")  # streamed into a run folder
    assert res.spring_damper_names == ("sd1", "sd2", "top")
    np.testing.assert_array_equal(fm.load(tmp_path / "run").spring_dampers, res.spring_dampers)
    with pytest.raises(fm.ModelError, match="unknown spring-damper 'nope'"):
        res.spring_damper("nope")
    back = fm.load(res.save(tmp_path / "r.npz"))
    np.testing.assert_array_equal(back.spring_damper("top"), res.spring_damper("top"))
    kind_no = cell_kinds().index("spring_damper")
    cells, kind, carrier = lines(res.drawing)
    on = np.flatnonzero(kind == kind_no)
    assert on.size == 3
    row, t, pts, pdata, cdata = list(frames(res, res.drawing))[-1]
    L = np.linalg.norm(pts[cells[on, 1]] - pts[cells[on, 0]], axis=1)
    np.testing.assert_allclose(L, res.spring_dampers[row, :, 0], rtol=1e-14)
    np.testing.assert_array_equal(cdata["spring_damper_force"][on], res.spring_dampers[row, :, 2])
    assert np.all(cdata["spring_damper_force"][kind != kind_no] == 0.0)
    np.testing.assert_array_equal(pdata["velocity"][cells[on[-1], 0]], 0.0)  # the ground point is at rest


def test_flexmb_animate_draws_the_spring_dampers(tmp_path) -> None:
    """``flexmb animate``: the spring-dampers' cells in their own style (green, dash-dotted), their
    end points not drawn as centres of mass; the GIF is written."""
    from flexmb.results.animation import _point_groups, _style, animate

    res = fm.simulate(chain(3), 0.05, 1e-3, output_every=10)
    kind_no = cell_kinds().index("spring_damper")
    assert _style(kind_no)[:4] == ("spring-damper", "tab:green", 2.0, "dashdot")
    cells, kind, _ = lines(res.drawing)
    n_points = len(list(frames(res, res.drawing))[0][2])
    groups = _point_groups(res.drawing, res, n_points, cells, kind)
    assert groups["com"].size == 3 and not set(groups["com"]) & set(cells[kind == kind_no].ravel())
    assert animate(res, tmp_path / "chain.gif").stat().st_size > 0


def test_flexmb_info_names_the_compiled_path_of_a_spring_damper_model(tmp_path, capsys) -> None:
    """``flexmb info`` on a case file of spring-dampers: listed, and a compiled Newton path named."""
    from flexmb.app.cli import EXIT_OK, main

    case = tmp_path / "sd_chain.py"
    case.write_text('"""Spring-damper chain (test case)."""\n\nimport sys\n\nsys.path.insert(0, '
                    f'{str(Path(__file__).resolve().parent)!r})\nfrom test_spring_damper import chain\n\n'
                    'DEFAULTS = dict(t_end=0.01, dt=1e-3)\n\n\ndef build(**params):\n    """The chain."""\n'
                    '    return chain(4)\n')
    assert main(["info", str(case)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "spring-dampers (point to point" in out and "top: ground" in out
    assert "linear solver: dense Cholesky" in out and "each step's whole Newton loop in one compiled call" in out
    assert "Newton loop and iterates in Python" not in out
