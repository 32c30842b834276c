"""Natural frequencies of models without rigid constraints with the full static tangent (flexmb/solvers/modal.py,
flexmb/solvers/constraint_stiffness.py ``static_tangent``; docs/modal.md §3, (MO9)-(MO12)), each against a hand
computation:

* a compound pendulum hanging at its static equilibrium: ω² = m g d / I_O (gravity's stiffness alone: the
  assembled tangent has none); a point mass: ω² = g / ℓ;
* an inverted pendulum held up by a joint spring k: ω² = (k − m g d) / I_O, negative (unstable) below
  k = m g d;
* a lever held against gravity by a preloaded spring-damper whose points are off the nodes' origins: ω² =
  V''(θ) / I_O from the hand linearisation V'' = k l'² + F l'' + m g y_c'' at the equilibrium V' = 0; the same
  100 m off the origin and scaled to 1 cm and 100 m (k as 1/s: ω² as 1/s);
* the four-bar of tests/test_modal_constraints.py closed by a bushing of k = 1e6, 1e7, 1e8 N/m: its frequency
  tends to the rigid cut's hand value 3.349756 Hz as 1/k (ratio 10 per decade; the assembled tangent was
  0.8 % high);
* the grouped differences against the column-by-column ones on a pendulum of beam elements with a tip body
  under gravity, and the sparse eigensolver against the dense one.

Tolerances: the central differences of (MO10), step h = 1e-6 rad (or 1e-6 of the model's size), are exact to
a truncation of order h² ≈ 1e-12 and a round-off of order ε / h ≈ 2e-10 of the force scale over the stiffness
scale; 1e-9 relative covers both (a frequency's relative error is half its ω²'s).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_modal_constraints import four_bar, hand_frequency

import flexmb as fm
from flexmb.engine.assembly import Assembler
from flexmb.solvers import constraint_stiffness as cs
from flexmb.solvers import modal
from flexmb.solvers.constraint_stiffness import static_tangent
from flexmb.solvers.modal import elastic_modes, natural_frequencies
from flexmb.solvers.statics import static_equilibrium

G0 = 9.81
Z = (0.0, 0.0, 1.0)
TOL = 1e-9


def omega2(f: float) -> float:
    return float((2 * np.pi * f) ** 2)


def pendulum(m: float, com, Izz: float, origin=(0.0, 0.0, 0.0), k: float = 0.0) -> fm.Model:
    """A body on a pin about z at ``origin``: centre of mass ``com`` from the pin (the body's node there, so the
    model spans pin and centre: its model frame is near them, docs/model_frame.md), central inertia Izz about z
    (a full tensor, so the other axes are not special), a joint spring k about the assembly angle."""
    o = np.asarray(origin, dtype=float)
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    mb.add_node("n", position=o + np.asarray(com, dtype=float))
    off = np.array([[0.02, 0.005, 0.002], [0.005, 0.015, 0.001], [0.002, 0.001, 0.0]])  # I_zz stays the one about the pin
    inertia = Izz * np.eye(3) + off if Izz else np.zeros((3, 3))
    mb.add_body("rod", "n", m, (0.0, 0.0, 0.0), inertia)
    mb.add_joint("pin", "revolute", "ground", "n", point=o, axis=Z)
    if k:
        mb.add_joint_spring("pin", k)
    return mb.compile()


@pytest.mark.parametrize("origin", [(0.0, 0.0, 0.0), (100.0, -40.0, 7.0)])
def test_a_compound_pendulum_swings_at_m_g_d_over_its_inertia_about_the_pin(origin) -> None:
    """The centre of mass starts beside the pin (not hanging): the static equilibrium turns it below the pin,
    and there ω² = m g d / I_O, I_O = I_zz + m d² (d in the plane of the swing: the centre's z offset is along
    the pin)."""
    m, com, Izz = 2.5, (0.2, -0.5, 0.1), 0.07
    model = pendulum(m, com, Izz, origin)
    eq = static_equilibrium(model)
    d2 = com[0] ** 2 + com[1] ** 2
    assert eq.state.q[0] == pytest.approx(np.arctan2(com[0], -com[1]) * -1.0, abs=1e-9)
    f, shapes = natural_frequencies(model, eq.state, n_modes=1)
    assert omega2(f[0]) == pytest.approx(m * G0 * np.sqrt(d2) / (Izz + m * d2), rel=TOL)
    assert shapes[0, 0] ** 2 * (Izz + m * d2) == pytest.approx(1.0, rel=1e-12)  # mass-normalized


def test_a_point_mass_pendulum_swings_at_g_over_l() -> None:
    ell = 0.8
    model = pendulum(1.3, (0.0, -ell, 0.0), 0.0)
    f, _ = natural_frequencies(model, n_modes=1)
    assert omega2(f[0]) == pytest.approx(G0 / ell, rel=TOL)


@pytest.mark.parametrize("k_over_mgd", [3.0, 0.5])
def test_an_inverted_pendulum_on_a_joint_spring(k_over_mgd: float) -> None:
    """Upright at its assembly angle (an equilibrium at any k): ω² = (k − m g d) / I_O, the weight's moment a
    negative stiffness; below k = m g d the equilibrium is unstable (ω² < 0, the frequency reported 0)."""
    m, d, Izz = 1.7, 0.45, 0.02
    k = k_over_mgd * m * G0 * d
    model = pendulum(m, (0.0, d, 0.0), Izz, k=k)
    expected = (k - m * G0 * d) / (Izz + m * d * d)
    w2, _ = elastic_modes(model, Assembler(model, exact_tangent=True), None, 1)
    assert w2[0] == pytest.approx(expected, rel=TOL)
    f, _ = natural_frequencies(model, n_modes=1)
    assert f[0] == (pytest.approx(np.sqrt(expected) / (2 * np.pi), rel=TOL) if expected > 0 else 0.0)


# a lever on a pin at O, held against gravity by a spring-damper from a ground anchor to a point off the lever's
# line (per unit scale; k times 1/s, the preload a force)
LEVER = dict(m=1.5, com=np.array([0.6, 0.0]), Izz=0.04, p=np.array([0.4, 0.05]), anchor=np.array([0.6, 0.5]),
             k=200.0, stretch=0.1, preload=15.0)


def lever(scale: float = 1.0, origin=(0.0, 0.0, 0.0)) -> fm.Model:
    p, s = LEVER, float(scale)
    o = np.asarray(origin, dtype=float)
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    c = s * np.append(p["com"], 0.0)
    mb.add_node("lever", o + c)  # at the centre of mass (the model spans pin and lever: docs/model_frame.md)
    mb.add_body("lever", "lever", p["m"], (0.0, 0.0, 0.0), p["Izz"] * s * s * np.diag([1.0, 1.0, 1.0]))
    mb.add_joint("O", "revolute", "ground", "lever", point=o, axis=Z)
    a, b = o + s * np.append(p["anchor"], 0.0), o + s * np.append(p["p"], 0.0)
    mb.add_spring_damper("spring", "ground", "lever", stiffness=p["k"] / s, damping=3.0,
                         rest_length=float(np.linalg.norm(b - a)) - s * p["stretch"], preload=p["preload"],
                         point_a=a, point_b=b)
    return mb.compile()


def lever_hand(th: float, scale: float = 1.0) -> tuple[float, float, float]:
    """(V'(θ), V''(θ), F l'') of the lever turned by θ from assembly: V = ½ k (l − L0)² + F0 (l − L0) + m g y_c,
    Δ = R(θ) p − a, l = |Δ|, n = Δ / l; with p' = J p, p'' = −p (J the quarter turn),
    l' = n·p',  l'' = (|p'|² − (n·p')²) / l + n·p'',  V' = F l' + m g y_c',  V'' = k l'² + F l'' + m g y_c''."""
    P, s = LEVER, float(scale)
    c, sn = np.cos(th), np.sin(th)
    R = np.array([[c, -sn], [sn, c]])
    J = np.array([[0.0, -1.0], [1.0, 0.0]])
    p, a, rc = R @ (s * P["p"]), s * P["anchor"], R @ (s * P["com"])
    L0 = np.linalg.norm(s * P["p"] - a) - s * P["stretch"]
    k = P["k"] / s
    D = p - a
    ell = np.linalg.norm(D)
    n = D / ell
    dp = J @ p
    l1 = n @ dp
    l2 = (dp @ dp - l1 * l1) / ell - n @ p
    F = k * (ell - L0) + P["preload"]
    mg = P["m"] * G0
    return F * l1 + mg * (J @ rc)[1], k * l1 * l1 + F * l2 - mg * rc[1], F * l2


def lever_frequency(scale: float = 1.0) -> tuple[float, float, float]:
    """The hand equilibrium angle (Newton on V'), ω² = V'' / I_O there, and F l'' / V''."""
    th = 0.0
    for _ in range(50):
        V1, V2, _ = lever_hand(th, scale)
        th -= V1 / V2
        if abs(V1) < 1e-15 * LEVER["m"] * G0 * scale:
            break
    _, V2, geo = lever_hand(th, scale)
    Io = scale * scale * (LEVER["Izz"] + LEVER["m"] * LEVER["com"] @ LEVER["com"])
    return th, V2 / Io, geo / V2


@pytest.mark.parametrize("scale, origin", [(1.0, (0.0, 0.0, 0.0)), (1.0, (100.0, -40.0, 7.0)),
                                           (0.01, (0.0, 0.0, 0.0)), (100.0, (0.0, 0.0, 0.0))])
def test_a_preloaded_spring_damper_lever_against_its_hand_linearisation(scale: float, origin) -> None:
    """The spring-damper's tension F turns with the lever (F l''), and its point is off the node's origin (the
    lever term of docs/spring_damper.md (S7)): both in the full tangent. 100 m off the origin the same, and
    scaled by s (k / s) ω² times 1/s."""
    th, w2, geo = lever_frequency(scale)
    assert abs(geo) > 0.2  # the preload's geometric stiffness is a large part of V''
    model = lever(scale, origin)
    eq = static_equilibrium(model)
    assert eq.state.q[0] == pytest.approx(th, abs=1e-9)
    f, _ = natural_frequencies(model, eq.state, n_modes=1)
    assert omega2(f[0]) == pytest.approx(w2, rel=TOL)
    _, w2_unit, _ = lever_frequency(1.0)
    assert omega2(f[0]) * scale == pytest.approx(w2_unit, rel=TOL)


def test_bushings_approach_the_rigid_cut_four_bar_as_one_over_k() -> None:
    """The four-bar of tests/test_modal_constraints.py (crank spring, rocker torque, gravity) closed by a
    bushing of k = 1e6, 1e7, 1e8 N/m, linearised by ``natural_frequencies``' own path (no rigid constraint):
    below the rigid cut's hand frequency by 1/k (ratios 10); the assembled tangent's 0.8 % offset (the
    bushing's preload and gravity's stiffness) is gone. At the equilibrium the tangent is symmetric, the
    Hessian of the potential, to the differences' accuracy."""
    _, f_rigid = hand_frequency()
    assert f_rigid == pytest.approx(3.349756, abs=1e-6)
    diffs = []
    for k in (1e6, 1e7, 1e8):
        model = four_bar("bushing", k).compile()
        eq = static_equilibrium(model)
        f, _ = natural_frequencies(model, eq.state, n_modes=1)
        diffs.append(f_rigid - f[0])
        st = eq.state.copy()
        K = static_tangent(model, Assembler(model, exact_tangent=True), st, model.free_u).K.toarray()
        assert np.abs(K - K.T).max() <= TOL * np.abs(K).max()
    assert diffs[0] > 1e-5 * f_rigid
    assert 0.0 < diffs[-1] < 1e-6 * f_rigid
    for a, b in zip(diffs, diffs[1:]):
        assert a / b == pytest.approx(10.0, rel=0.02)


def beam_pendulum() -> fm.Model:
    """A 1 m steel strip of 6 beam elements on a pin at its top, a 2 kg body at its bottom, swinging in 3-D
    (the strip's nodes are free: six coordinates each), started bent sideways by gravity's component."""
    mb = fm.ModelBuilder(gravity=(0.3, -G0, 0.5))
    sec = fm.BeamSection(E=2.1e11, G=8e10, A=1e-4, Iy=2e-9, Iz=8e-10, J=1e-9, rho=7800)
    nodes = mb.add_flexible_link("strip", (0.0, 0.0, 0.0), (0.0, -1.0, 0.0), 6, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], point=(0.0, 0.0, 0.0), axis=Z)
    mb.add_body("weight", nodes[-1], 2.0, (0.05, -0.02, 0.0), 1e-3 * np.eye(3))
    return mb.compile()


def test_grouped_differences_equal_the_column_by_column_ones() -> None:
    """(MO10): the columns differenced together have disjoint rows, so each entry is that of its own column's
    difference up to round-off (ε / h of the force scale); far fewer residual pairs than columns. The beams'
    wrenches are held (their consistent tangent is assembled): the same differences column by column."""
    model = beam_pendulum()
    eq = static_equilibrium(model)
    asm = Assembler(model, exact_tangent=True)
    free = model.free_u
    tan = static_tangent(model, asm, eq.state, free)
    assert not tan.dense and tan.check < cs.CHECK_TOL
    assert tan.groups < free.size / 2
    held = cs._Held(model, asm, eq.state, 1.0)
    h = np.where(model.rotation_u[free], cs.FD_STEP, cs.FD_STEP * model.size)
    dense = np.column_stack([cs._difference(model, held, eq.state, free, np.array([j]), h[j:j + 1]) / h[j]
                             for j in range(free.size)]) + held.assembled(free).toarray()
    assert np.abs(tan.K.toarray() - dense).max() <= TOL * np.abs(dense).max()


def test_the_sparse_eigensolver_agrees_with_the_dense_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """(MO12): eigsh in shift-invert against the dense solve, to the dense solve's own accuracy: ε times the
    spread of the spectrum, λ_max / λ_min (about 1e9 here: the strip's axial modes against its swing)."""
    model = beam_pendulum()
    st = static_equilibrium(model).state
    f_dense, s_dense = natural_frequencies(model, st, n_modes=4)
    w2_all, _ = elastic_modes(model, Assembler(model, exact_tangent=True), st, model.free_u.size)
    monkeypatch.setattr(modal, "DENSE_LIMIT", 0)
    f_sparse, s_sparse = natural_frequencies(model, st, n_modes=4)
    np.testing.assert_allclose(f_sparse, f_dense, rtol=np.finfo(float).eps * w2_all[-1] / w2_all[0])
    assert f_dense[0] > 0.1  # the swing, with gravity's stiffness


def test_more_modes_than_coordinates_are_refused() -> None:
    with pytest.raises(fm.SolverError, match="asked for 2 modes of a model with 1 free coordinates"):
        natural_frequencies(pendulum(1.0, (0.0, -1.0, 0.0), 0.1), n_modes=2)
