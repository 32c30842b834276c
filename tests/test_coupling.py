"""Couplings between joint coordinates (ModelBuilder.add_coupling, elements/coupling.py,
docs/coupling.md):

* a gear pair of ratio 3 driven by a torque: q_b = 3 q_a within the closure tolerance (C14) over the
  run, the motion and the tooth force against the closed form q̈_a = T / (J_a + r² J_b), f = -r J_b q̈_a;
* an elastic coupling converges to the rigid one as 1/k (the error times k settles, the order is 1);
* a rack and pinion (prismatic and revolute, gravity along the rack) against its closed form, the
  same wherever the model lies;
* the energy balance with an elastic, damped coupling (strain ½ k g², dissipated c ġ²);
* the node-twist rows (C6)-(C8) give exactly the generalized forces (C2) on coordinates of
  cylindrical, universal, prismatic, revolute and free joints at a random state, the blocks give
  (C10), and they are the finite-difference derivative of the forces;
* the compiled Newton paths (dense, band, CHOLMOD) give the Python path's numbers bit for bit;
* the bad input messages.
"""

from __future__ import annotations

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements import FAMILIES
from flexmb.elements.coupling_kernels import KAPPA
from flexmb.engine.assembly import Assembler
from flexmb.rotations import expm
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.modal import natural_frequencies
from flexmb.solvers.statics import static_equilibrium

EPS = np.finfo(float).eps
JA, JB, T0, RATIO = 0.5, 0.2, 2.0, 3.0


def gear_pair(stiffness=None, damping=None, torque=None, origin=(0.0, 0.0, 0.0)) -> fm.Model:
    """Two wheels on revolute joints to ground (inertias JA, JB about their axes), a torque on the first."""
    o = np.asarray(origin, dtype=float)
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("g1", position=o)
    mb.add_node("g2", position=o + (0.4, 0, 0))
    mb.add_body("w1", "g1", mass=1.0, inertia=np.eye(3) * JA)
    mb.add_body("w2", "g2", mass=1.0, inertia=np.eye(3) * JB)
    mb.add_joint("j1", "revolute", "ground", "g1", axis=(0, 0, 1))
    mb.add_joint("j2", "revolute", "ground", "g2", axis=(0, 0, 1))
    mb.add_joint_force("j1", T0 if torque is None else torque)
    mb.add_coupling("mesh", "j1", "j2.q", ratio=RATIO, stiffness=stiffness, damping=damping)
    return mb.compile()


def smooth_torque(t: float) -> float:
    """T0 sin²(π t / 2 t1) up to t1 = 0.5 s, then T0: no jump to ring the elastic mesh."""
    return T0 * np.sin(np.pi * min(t, 0.5) / 1.0) ** 2


def penalty_noise(model: fm.Model, dt: float, m_ref: float, size: float) -> float:
    """(C16) as a force: the penalty α = κ m_ref / β' (C13) times the round-off 16 ε of the gap's terms (size)."""
    ga = GeneralizedAlpha(model)
    bp = ga.beta * dt * dt * (1 - ga.af) / (1 - ga.am)
    return 16 * EPS * KAPPA * m_ref / bp * size


def test_a_gear_pair_follows_its_closed_form() -> None:
    dt = 1e-3
    res = fm.simulate(gear_pair(), t_end=0.5, dt=dt)
    assert res.status == "finished"
    t, qa, qb = res.t, res.coordinate("j1.q"), res.coordinate("j2.q")
    acc = T0 / (JA + RATIO**2 * JB)
    # kinematics: within the closure tolerance 1e-10 rad (C14) on every row
    assert np.max(np.abs(qb - RATIO * qa)) <= 1e-10
    # generalized-α integrates a constant acceleration exactly: q_a = ½ q̈ t² to round-off of q
    np.testing.assert_allclose(qa, 0.5 * acc * t**2, rtol=0, atol=64 * EPS * np.max(np.abs(qa)))
    # the force: -r J_b q̈_a, to the penalty's amplification of the gap's round-off (C16)
    f = res.coupling("mesh", "force")
    m_ref = 1.0 / (RATIO**2 / JA + 1.0 / JB)  # (C13): 1 / (Φ_q M̄⁻¹ Φ_qᵀ)
    tol = penalty_noise(gear_pair(), dt, m_ref, np.max(np.abs(qb) + np.abs(RATIO * qa)))
    assert tol < 1e-4 * RATIO * JB * acc  # the check is meaningful
    np.testing.assert_allclose(f, -RATIO * JB * acc, rtol=0, atol=tol)
    # gap and rate are recorded: the gap within (C14), the rate projected to round-off of the rates (C15)
    assert np.max(np.abs(res.coupling("mesh", "gap"))) <= 1e-10
    assert np.max(np.abs(res.coupling("mesh", "rate"))) <= 1e-14 * (np.max(np.abs(res.u)) + 1.0)  # (C15)
    # no energy is made or lost by a rigid coupling: kinetic = work of the torque
    scale = float(np.max(res.energy["kinetic"]))
    assert np.max(np.abs(res.total_energy)) < 1e-9 * scale


def test_an_elastic_coupling_converges_to_the_rigid_one_as_one_over_k() -> None:
    """With the torque ramped smoothly, the mesh deflection g ≈ f / k is quasi-static: q_a differs
    from the rigid run by O(1/k). Asserted: the error times k settles (successive values within 2%)
    and the observed order log(e_1/e_2)/log(k_2/k_1) is 1 within 0.02."""
    dt, t_end = 1e-3, 1.0
    rigid = fm.simulate(gear_pair(torque=smooth_torque), t_end=t_end, dt=dt)
    qa = rigid.coordinate("j1.q")
    ks = [1e3, 1e4, 1e5]
    errs = []
    for k in ks:
        res = fm.simulate(gear_pair(stiffness=k, torque=smooth_torque), t_end=t_end, dt=dt)
        assert res.status == "finished"
        errs.append(float(np.max(np.abs(res.coordinate("j1.q") - qa))))
        # g k -> f of the rigid coupling, to the same order
        gk = res.coupling("mesh", "gap") * k
        f = rigid.coupling("mesh", "force")
        assert np.max(np.abs(gk - f)) < 100.0 / k * np.max(np.abs(f))
    orders = [np.log(errs[i] / errs[i + 1]) / np.log(ks[i + 1] / ks[i]) for i in range(len(ks) - 1)]
    assert all(abs(p - 1.0) < 0.02 for p in orders), orders
    ek = np.array(errs) * np.array(ks)
    assert abs(ek[-1] / ek[-2] - 1.0) < 0.02, ek


def rack_and_pinion(origin=(0.0, 0.0, 0.0), radius=0.05, mass=3.0, J=0.01, torque=0.4, g=9.81) -> fm.Model:
    """A pinion (revolute about z, inertia J) drives a rack (prismatic along x, mass m) with gravity along
    -x: q_rack = radius q_pinion."""
    o = np.asarray(origin, dtype=float)
    mb = fm.ModelBuilder(gravity=(-g, 0, 0))
    mb.add_node("pinion", position=o)
    mb.add_node("rack", position=o + (0.0, -radius, 0.0))
    mb.add_body("pinion", "pinion", mass=0.5, inertia=np.eye(3) * J)
    mb.add_body("rack", "rack", mass=mass, inertia=np.eye(3) * 1e-3)
    mb.add_joint("pin", "revolute", "ground", "pinion", axis=(0, 0, 1))
    mb.add_joint("slide", "prismatic", "ground", "rack", axis=(1, 0, 0))
    mb.add_joint_force("pin", torque)
    mb.add_coupling("teeth", "pin", "slide", ratio=radius)
    return mb.compile()


def test_a_rack_and_pinion_follows_its_closed_form_wherever_it_lies() -> None:
    """J q̈_a = T + ρ f, m q̈_b = -m g - f, q̈_b = ρ q̈_a: q̈_a = (T - ρ m g) / (J + ρ² m), f = -m (g + ρ q̈_a)."""
    rho, m, J, T, g = 0.05, 3.0, 0.01, 0.4, 9.81
    acc = (T - rho * m * g) / (J + rho**2 * m)
    runs = []
    for origin in ((0.0, 0.0, 0.0), (1e3, -2e3, 5e2)):
        res = fm.simulate(rack_and_pinion(origin), t_end=0.3, dt=1e-3)
        assert res.status == "finished"
        qa, qb = res.coordinate("pin.q"), res.coordinate("slide.q")
        size = rack_and_pinion(origin).size  # (C14): a translation's tolerance is 1e-10 times the model's size
        assert np.max(np.abs(qb - rho * qa)) <= 1e-10 * size
        np.testing.assert_allclose(qa, 0.5 * acc * res.t**2, rtol=0, atol=64 * EPS * np.max(np.abs(qa)))
        m_ref = 1.0 / (rho**2 / J + 1.0 / m)
        tol = penalty_noise(rack_and_pinion(origin), 1e-3, m_ref, np.max(np.abs(qb) + rho * np.abs(qa)))
        np.testing.assert_allclose(res.coupling("teeth", "force"), -m * (g + rho * acc), rtol=0, atol=tol)
        runs.append(qa)
    np.testing.assert_allclose(runs[0], runs[1], rtol=0, atol=64 * EPS * np.max(np.abs(runs[0])))


def test_an_elastic_damped_coupling_balances_its_energy() -> None:
    """Kinetic + strain (½ k g²) + dissipated (∫ c ġ²) - work of the torque stays constant; the
    integrals are trapezoidal over the steps, O((ω h)²) of the energy's scale with the mesh frequency
    ω = sqrt(k / m_ref) ≈ 150 rad/s and h = 1e-4 s: 2e-4; asserted 1e-3 of the largest kinetic energy,
    with the damper taking a sizable share (so the check is not passed by a small damper)."""
    k, c = 1e3, 2.0
    res = fm.simulate(gear_pair(stiffness=k, damping=c), t_end=0.3, dt=1e-4, output_every=10)
    assert res.status == "finished"
    scale = float(np.max(res.energy["kinetic"]))
    assert res.energy["dissipated"][-1] > 1e-3 * scale and np.max(res.energy["strain"]) > 1e-3 * scale
    np.testing.assert_allclose(res.energy["strain"], 0.5 * k * res.coupling("mesh", "gap") ** 2, rtol=1e-12)
    assert np.max(np.abs(res.total_energy - res.total_energy[0])) < 1e-3 * scale


def branched_model() -> fm.Model:
    """Couplings between coordinates of cylindrical, universal, prismatic, revolute and free joints on
    different branches, elastic and damped."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    pts = {"n1": (0.1, 0.2, 0.0), "n2": (0.5, 0.3, 0.1), "n3": (-0.4, 0.1, 0.2), "n4": (-0.6, 0.5, -0.1), "n5": (0.2, -0.7, 0.3)}
    for n, p in pts.items():
        mb.add_node(n, position=p)
        mb.add_body(n, n, mass=1.0, com=(0.05, 0.02, -0.01), inertia=np.diag([0.02, 0.03, 0.04]))
    mb.add_joint("cy", "cylindrical", "ground", "n1", point=(0.1, 0.0, 0.0), axis=(0.0, 0.6, 0.8))
    mb.add_joint("u", "universal", "n1", "n2", axes=[(1, 0, 0), (0, 1, 0)])
    mb.add_joint("rv", "revolute", "ground", "n3", point=(-0.3, 0.0, 0.0), axis=(0, 0, 1))
    mb.add_joint("p", "prismatic", "n3", "n4", axis=(0.0, 0.8, 0.6))
    mb.add_joint("fr", "free", "ground", "n5")
    mb.add_coupling("c1", "u.r1", "p.q", ratio=-0.7, offset=0.1, stiffness=300.0, damping=2.0)
    mb.add_coupling("c2", "cy.r1", "cy.t0", ratio=0.02, stiffness=5e4, damping=10.0)  # a screw
    mb.add_coupling("c3", "fr.t1", "rv", ratio=2.5, stiffness=80.0, damping=0.5)
    return mb.compile()


def _random_state(model: fm.Model, seed: int):
    rng = np.random.default_rng(seed)
    st = model.initial_state()
    st.q = rng.uniform(-0.6, 0.6, model.n_q)
    st.balls = np.array([expm(rng.uniform(-1, 1, 3)) for _ in range(model.n_ball)]).reshape(-1, 3, 3)
    st.u = rng.uniform(-1, 1, model.n_u)
    return st


def _coupling_forces(model: fm.Model, asm: Assembler, st) -> tuple[np.ndarray, object]:
    """The couplings' generalized forces Bᵀ Gᵀ f (C8) through the node wrenches, and their evaluation."""
    fam, data = FAMILIES["coupling"], model.elements["coupling"]
    ev = asm.evaluate(st)
    w = np.zeros((model.n_nodes + 1, 6))
    fe = fam.evaluate(model, data, fam.prepare(model, data), st, ev.kin, 1.0, None, w)
    return ev.project(w[:-1]), fe


def test_the_rows_give_exactly_the_coordinate_forces_and_blocks() -> None:
    model = branched_model()
    asm = Assembler(model)
    data = model.elements["coupling"]
    ua = np.array([model.coordinate_names.index(c) for c in data.coordinate_a])
    ub = np.array([model.coordinate_names.index(c) for c in data.coordinate_b])
    E = np.zeros((data.n, model.n_u))  # rows e_b - r e_a (C12)
    E[np.arange(data.n), ub] += 1.0
    E[np.arange(data.n), ua] -= data.ratio
    for seed in range(3):
        st = _random_state(model, seed)
        Q, fe = _coupling_forces(model, asm, st)
        g = st.q[model.u_to_q[ub]] - data.ratio * st.q[model.u_to_q[ua]] - data.offset
        gdot = st.u[ub] - data.ratio * st.u[ua]
        np.testing.assert_allclose(fe.g, g, rtol=0, atol=4 * EPS)
        f = data.k * g + data.c * gdot  # (C3)
        np.testing.assert_allclose(fe.force, f, rtol=1e-14, atol=0)
        # (C8): exactly the forces (C2) on the two coordinates, nothing elsewhere; round-off of the rows'
        # sums over the model's lever arms
        np.testing.assert_allclose(Q, E.T @ f, rtol=0, atol=1e-13 * np.abs(f).max() * max(1.0, model.size))
        # (C10): the blocks on the coordinates, stiffness (β' = 1) and damping (γ' = 1) alone
        ev = asm.evaluate(st)
        free = model.free_u
        K = asm.iteration_matrix(ev, free, 0.0, 1.0, np.zeros(free.size), with_mass=False)
        C = asm.iteration_matrix(ev, free, 1.0, 0.0, np.zeros(free.size), with_mass=False)
        K, C = (np.asarray(A.todense() if hasattr(A, "todense") else A) for A in (K, C))
        K, C = np.tril(K) + np.tril(K, -1).T, np.tril(C) + np.tril(C, -1).T  # the factors read the lower triangle
        Ke = (E.T * data.k) @ E
        Ce = (E.T * data.c) @ E
        np.testing.assert_allclose(K, Ke[np.ix_(free, free)], rtol=0, atol=1e-12 * np.abs(Ke).max())
        np.testing.assert_allclose(C, Ce[np.ix_(free, free)], rtol=0, atol=1e-12 * np.abs(Ce).max())


def test_the_blocks_are_the_derivative_of_the_forces() -> None:
    """Central differences of the generalized forces (through the node wrenches at moved
    configurations) in each coordinate (q moved by State.retract) and each rate, δ = 1e-6."""
    model = branched_model()
    asm = Assembler(model)
    st = _random_state(model, 7)
    ev = asm.evaluate(st)
    free = model.free_u
    K = asm.iteration_matrix(ev, free, 0.0, 1.0, np.zeros(free.size), with_mass=False)
    C = asm.iteration_matrix(ev, free, 1.0, 0.0, np.zeros(free.size), with_mass=False)
    K, C = (np.asarray(A.todense() if hasattr(A, "todense") else A) for A in (K, C))
    K, C = np.tril(K) + np.tril(K, -1).T, np.tril(C) + np.tril(C, -1).T
    d = 1e-6
    Kfd, Cfd = np.zeros((free.size, free.size)), np.zeros((free.size, free.size))
    for j, k in enumerate(free):
        dq = np.zeros(model.n_u)
        dq[k] = d
        plus, minus = st.retract(model, dq), st.retract(model, -dq)
        Kfd[:, j] = (_coupling_forces(model, asm, plus)[0] - _coupling_forces(model, asm, minus)[0])[free] / (2 * d)
        up, um = st.copy(), st.copy()
        up.u[k] += d
        um.u[k] -= d
        Cfd[:, j] = (_coupling_forces(model, asm, up)[0] - _coupling_forces(model, asm, um)[0])[free] / (2 * d)
    # the forces are linear in q and u (C3, C8): the differences' error is their round-off, ε |Q| / δ
    # per evaluation (|Q| the largest force, up to a few ulps from the rows' sums)
    tol = 16 * EPS * np.abs(_coupling_forces(model, asm, st)[0]).max() / d
    assert tol < 1e-4 * min(np.abs(K).max(), np.abs(C).max())
    np.testing.assert_allclose(Kfd, K, rtol=0, atol=tol)
    np.testing.assert_allclose(Cfd, C, rtol=0, atol=tol)


def test_info_and_the_solver_name_the_couplings() -> None:
    model = gear_pair()
    text = fm.describe(model)
    assert "mesh: j2.q = 3 j1.q + 0; rigid" in text
    # the off-tree block takes a matrix factor, not the O(n) tree factor, and a compiled Newton loop
    solver = GeneralizedAlpha(model).describe_solver()
    assert solver.startswith("dense Cholesky") and "no rigid tree" in solver, solver
    assert "whole Newton loop in one compiled call" in solver and "in Python" not in solver.split(";")[1], solver


def _python(monkeypatch, model: fm.Model, *args, **kw) -> fm.Result:
    """The run on the Python Newton loop and iterates (the families' own evaluate and blocks)."""
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        return fm.simulate(model, *args, **kw)


@pytest.mark.parametrize("solver", ["auto", "band", "cholmod"])
@pytest.mark.parametrize("build", [gear_pair, branched_model], ids=["rigid gear pair", "elastic couplings"])
def test_the_compiled_paths_are_the_python_path_bit_for_bit(monkeypatch, solver, build) -> None:
    """A rigid coupling (its augmented Lagrangian's state carried through the compiled iterates) and
    elastic, damped ones on joints of every kind: the compiled Newton loop (dense, band) or the compiled
    iterates (CHOLMOD) give the Python loop's rows, coupling outputs, energies and iterations bit for bit."""
    model = build()
    assert "compiled call" in GeneralizedAlpha(model, linear_solver=solver).describe_solver()
    fast = fm.simulate(model, 0.05, 1e-3, linear_solver=solver)
    slow = _python(monkeypatch, model, 0.05, 1e-3, linear_solver=solver)
    assert fast.status == slow.status == "finished"
    for name in ("q", "u", "udot", "couplings", "newton_iterations", "drive_forces"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for k in ("strain", "dissipated"):
        np.testing.assert_array_equal(fast.energy[k], slow.energy[k], err_msg=k)


def test_modal_solver_holds_rigid_couplings_and_statics_takes_both() -> None:
    """Modal analysis holds a rigid coupling (docs/modal.md (MO7)): the free pair's one mode turns the wheels
    at the ratio, with no stiffness (ω² at round-off of J's scale); more modes than the one degree of freedom
    are refused. Statics holds it
    (docs/statics.md §2; its torque balance in tests/test_statics_constraints.py), and says that the pair
    turned by a torque with nothing to resist it has no equilibrium. An elastic coupling is a spring on g
    (C3): wheel b held by a joint spring k_s, a torque T on wheel a; the static equilibrium in closed form
    below, to the static solver's tolerance."""
    with pytest.raises(fm.SolverError, match="no static equilibrium"):
        static_equilibrium(gear_pair())
    with pytest.raises(fm.SolverError, match="2 modes of a model with 1 degrees of freedom"):
        natural_frequencies(gear_pair(), n_modes=2)
    f, shapes = natural_frequencies(gear_pair(), n_modes=1)
    assert shapes[1, 0] / shapes[0, 0] == pytest.approx(RATIO, rel=1e-12)
    assert f[0] <= 1e-6  # Hz: no stiffness against the turning
    ks, k = 40.0, 1e3
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    for n, x in (("g1", 0.0), ("g2", 0.4)):
        mb.add_node(n, position=(x, 0, 0))
        mb.add_body(n, n, mass=1.0, inertia=np.eye(3) * 0.3)
        mb.add_joint("j" + n[1], "revolute", "ground", n, axis=(0, 0, 1))
    mb.add_joint_force("j1", T0)
    mb.add_joint_spring("j2", ks)
    mb.add_coupling("mesh", "j1", "j2", ratio=RATIO, stiffness=k)
    st = static_equilibrium(mb.compile()).state
    # T + r f = 0 (on a), -f - k_s q_b = 0 (on b), f = k (q_b - r q_a): f = -T / r, q_b = T / (r k_s),
    # q_a = (q_b - f / k) / r
    f = -T0 / RATIO
    qb = T0 / (RATIO * ks)
    qa = (qb - f / k) / RATIO
    np.testing.assert_allclose(st.q, [qa, qb], rtol=1e-10)


def _two_wheels() -> fm.ModelBuilder:
    mb = fm.ModelBuilder()
    for n, x in (("a", 0.0), ("b", 1.0), ("c", 2.0)):
        mb.add_node(n, position=(x, 0, 0))
        mb.add_body(n, n, mass=1.0, inertia=np.eye(3))
    mb.add_joint("ja", "revolute", "ground", "a", axis=(0, 0, 1))
    mb.add_joint("jb", "revolute", "ground", "b", axis=(0, 0, 1))
    mb.add_joint("ball", "spherical", "ground", "c")
    return mb


@pytest.mark.parametrize("kwargs, words", [
    (dict(a="ja", b="ja.q", ratio=2.0), ["same coordinate 'ja.q'"]),
    (dict(a="ja", b="jb", ratio=0.0), ["ratio = 0", "nonzero ratio"]),
    (dict(a="ja", b="jb", ratio=float("inf")), ["ratio", "finite"]),
    (dict(a="ja", b="jb", ratio=float("nan")), ["ratio", "finite"]),
    (dict(a="ja", b="ball.wx", ratio=1.0), ["'ball.wx'", "ball rotation", "spherical"]),
    (dict(a="ja", b="ball", ratio=1.0), ["'ball'", "3 coordinates", "name the one"]),
    (dict(a="nope.q", b="jb", ratio=1.0), ["'nope.q'", "names no joint"]),
    (dict(a="ja.r0", b="jb", ratio=1.0), ["'ja.r0'", "has the coordinates ['ja.q']"]),
    (dict(a="ja", b="jb", ratio=1.0, stiffness=-5.0), ["stiffness", "positive"]),
    (dict(a="ja", b="jb", ratio=1.0, damping=3.0), ["damping = 3.0 needs a stiffness"]),
    (dict(a="ja", b="jb", ratio=1.0, stiffness=10.0, damping=-1.0), ["damping", ">= 0"]),
])
def test_bad_couplings_are_refused_with_a_clear_message(kwargs, words) -> None:
    mb = _two_wheels()
    with pytest.raises(fm.ModelError) as err:
        mb.add_coupling("gear", **kwargs)
    msg = str(err.value)
    assert "add_coupling: coupling 'gear'" in msg
    for w in words:
        assert w in msg, (w, msg)


def test_a_coupling_of_two_driven_coordinates_is_refused_when_compiled() -> None:
    mb = _two_wheels()
    mb.add_drive("ja", lambda t: 0.1 * t)
    mb.add_drive("jb", lambda t: 0.2 * t)
    mb.add_coupling("gear", "ja", "jb", ratio=2.0)
    with pytest.raises(fm.ModelError, match="coupling 'gear': both its coordinates 'ja.q' and 'jb.q' are driven"):
        mb.compile()
    with pytest.raises(fm.ModelError, match="duplicate coupling name 'gear'"):
        mb.add_coupling("gear", "ja", "jb", ratio=2.0)


def test_a_driven_wheel_drives_its_mate_and_the_drive_force_carries_the_mate() -> None:
    """Wheel a driven at q_a = ω t² / 2 (constant acceleration ω), b coupled: q̈_b = r ω, the drive torque
    J_a ω + r² J_b ω (the coupling's reaction r f = r² J_b ω on a)."""
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    for n, x, J in (("a", 0.0, JA), ("b", 0.4, JB)):
        mb.add_node(n, position=(x, 0, 0))
        mb.add_body(n, n, mass=1.0, inertia=np.eye(3) * J)
        mb.add_joint("j" + n, "revolute", "ground", n, axis=(0, 0, 1))
    w = 3.0
    mb.add_drive("ja", lambda t: 0.5 * w * t * t, lambda t: w * t, lambda t: w)
    mb.add_coupling("mesh", "ja", "jb", ratio=-RATIO)
    res = fm.simulate(mb.compile(), t_end=0.2, dt=1e-3)
    assert res.status == "finished"
    qb = res.coordinate("jb.q")
    np.testing.assert_allclose(qb, -RATIO * 0.5 * w * res.t**2, rtol=0, atol=1e-10)
    drive = res.drive_force("ja.q")
    np.testing.assert_allclose(drive, (JA + RATIO**2 * JB) * w, rtol=1e-6)


def test_outputs_by_name_survive_a_run_folder_and_a_saved_result(tmp_path) -> None:
    from flexmb.results.load import load

    res = fm.simulate(gear_pair(stiffness=1e3, damping=1.0), 0.02, 1e-3, out=tmp_path / "run")
    for again in (load(tmp_path / "run"), load(res.save(tmp_path / "r.npz") or tmp_path / "r.npz")):
        assert again.coupling_names == ("mesh",)
        np.testing.assert_array_equal(again.coupling("mesh"), res.coupling("mesh"))
        np.testing.assert_array_equal(again.coupling("mesh", "rate"), res.couplings[:, 0, 1])
    with pytest.raises(fm.ModelError, match="quantity = 'torque'"):
        res.coupling("mesh", "torque")
    # by name (flexmb.results.names): NAME.gap, NAME.rate, NAME.force
    for k, q in enumerate(("gap", "rate", "force")):
        np.testing.assert_array_equal(res.history(f"mesh.{q}"), res.couplings[:, 0, k])
    assert "mesh.force" in res.history_names()
    with pytest.raises(fm.ModelError, match="mesh.gap"):
        res.history("mesh")
