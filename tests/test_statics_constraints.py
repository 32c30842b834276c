"""Statics with rigid cuts, prescribed-length actuators and rigid couplings (flexmb/solvers/statics.py,
flexmb/solvers/statics_constraints.py; docs/statics.md §2), each against a hand computation:

* a boom on a pivot held by a prescribed-length cylinder against gravity: the cylinder's force against
  the moment balance about the pivot, the pose against the cylinder's length (law of cosines); the same
  at 1 cm and 100 m and 100 m away from the origin;
* a four-bar closed by a rigid cut, held by a torsion spring on its crank under gravity: the crank angle
  against the zero of the virtual work of the rigid linkage (closed-form loop kinematics), the cut force
  against the free-body balances of the rocker and the coupler; the same loop closed by a stiff bushing
  approaches it as 1/k;
* a gear pair (rigid coupling, ratio 3) under a torque against a joint spring: the torque balance.

Tolerances: the static solve stops at a residual of 1e-10 of the force scale and a closure of 1e-10 of
the model's size (docs/statics.md (ST7)); the forces are checked to 1e-8 relative (a hundred times
that), poses to 1e-9 rad (the closure over the lever arms, times ten).
"""

from __future__ import annotations

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements.rigid_cut_kernels import KAPPA
from flexmb.solvers import statics
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.modal import natural_frequencies
from flexmb.solvers.statics import static_equilibrium

G0 = 9.81
Z = (0.0, 0.0, 1.0)

# ------------------------------------------------------------------------------------- the boom
M, LB = 10.0, 2.0  # boom mass [kg], length [m]; centre of mass at LB / 2
A = np.array([0.5, -1.0, 0.0])  # the cylinder's ground point relative to the pivot [m]
B = np.array([1.5, 0.0, 0.0])  # its boom point at θ = 0 [m]


def boom(length: float, scale: float = 1.0, origin=(0.0, 0.0, 0.0)) -> fm.Model:
    """The boom (a uniform rod, every length times ``scale``) on a pivot about z at ``origin``, gravity
    -y, held by the cylinder 'cyl' of prescribed length ``length`` from origin + A to the boom's B."""
    o = np.asarray(origin, dtype=float)
    s = float(scale)
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    mb.add_node("boom", o)
    mb.add_body("boom", "boom", M, (s * LB / 2, 0.0, 0.0), np.diag([1e-3, 1.0, 1.0]) * M * (s * LB) ** 2 / 12)
    mb.add_joint("pivot", "revolute", "ground", "boom", point=o, axis=Z)
    mb.add_actuator("cyl", "ground", "boom", point_a=o + s * A, point_b=o + s * B, length=length)
    return mb.compile()


def boom_hand(length: float, scale: float = 1.0) -> tuple[float, float]:
    """The boom's angle θ at which |B(θ) − A| = length (law of cosines, the branch through θ = 0), and the
    cylinder's tension F holding it: the moment balance about the pivot, m g (L_B/2) cos θ + F (r_B × n)_z
    = 0 with n the unit vector from A to B (a pushing cylinder: F < 0)."""
    a, b = scale * A[:2], np.linalg.norm(scale * B)
    # |b e(θ) − a|² = b² + |a|² − 2 b a·e(θ) = L²:  a·e(θ) = |a| cos(θ − φ_a)
    phi_a = np.arctan2(a[1], a[0])
    c = (b * b + a @ a - length * length) / (2 * b * np.linalg.norm(a))
    th = phi_a + np.arccos(c)  # φ_a < 0: the branch near θ = 0
    pb = b * np.array([np.cos(th), np.sin(th)])
    n = (pb - a) / np.linalg.norm(pb - a)
    lever = pb[0] * n[1] - pb[1] * n[0]
    return float(th), float(-M * G0 * scale * LB / 2 * np.cos(th) / lever)


L0 = float(np.linalg.norm(B - A))


@pytest.mark.parametrize("length", [L0, L0 + 0.2, L0 - 0.15])
def test_a_cylinder_holds_the_boom_with_the_moment_balance(length: float) -> None:
    th, F = boom_hand(length)
    res = static_equilibrium(boom(length))
    assert res.state.q[0] == pytest.approx(th, abs=1e-9)
    assert res.actuator_forces["cyl"] == pytest.approx(F, rel=1e-8)
    assert res.closure <= 1.0 and res.multiplier_updates.max() <= 3  # (ST5): a few updates, not a slow crawl
    # the time integrator started there stays at rest, its force the static one but for its penalty's
    # round-off, 16 ε ℓ κ m_ref / β' (docs/actuator.md §4; m_ref = J / (r_B × n)_z², ℓ the points' size)
    dt = 1e-3
    run = fm.simulate(boom(length), 0.02, dt, state=res.state)
    assert run.status == "finished"
    assert np.abs(run.q[:, 0] - th).max() <= 1e-9
    ga = GeneralizedAlpha(boom(length))
    bp = ga.beta * dt * dt * (1 - ga.af) / (1 - ga.am)
    m_ref = M * LB**2 / 3 / (M * G0 * LB / 2 * np.cos(th) / F) ** 2
    noise = 16 * np.finfo(float).eps * KAPPA * m_ref / bp * max(np.linalg.norm(A), np.linalg.norm(B))
    assert np.abs(run.actuator("cyl")[:, 2] - F).max() <= noise


def test_the_cylinder_is_held_at_its_length_at_the_time_asked() -> None:
    """A stroke L(t) = L0 + 0.1 t: statics at t = 2 holds the cylinder at L(2) = L0 + 0.2 (docs/statics.md §2)."""
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    mb.add_node("boom", (0.0, 0.0, 0.0))
    mb.add_body("boom", "boom", M, (LB / 2, 0.0, 0.0), np.diag([1e-3, 1.0, 1.0]) * M * LB**2 / 12)
    mb.add_joint("pivot", "revolute", "ground", "boom", axis=Z)
    mb.add_actuator("cyl", "ground", "boom", point_a=A, point_b=B, length=lambda t: L0 + 0.1 * t)
    th, F = boom_hand(L0 + 0.2)
    res = static_equilibrium(mb.compile(), t=2.0)
    assert res.state.q[0] == pytest.approx(th, abs=1e-9)
    assert res.actuator_forces["cyl"] == pytest.approx(F, rel=1e-8)


@pytest.mark.parametrize("scale, origin", [(0.01, (0.0, 0.0, 0.0)), (100.0, (0.0, 0.0, 0.0)),
                                           (1.0, (100.0, -40.0, 7.0))])
def test_the_boom_is_held_alike_at_every_size_and_place(scale: float, origin) -> None:
    """The boom scaled to 1 cm and to 100 m (same mass: the same force, the same angle), and moved 100 m
    off the origin: the closure tolerance and the penalty follow the model (docs/statics.md (ST6))."""
    length = scale * (L0 + 0.2)
    th, F = boom_hand(length, scale)
    assert F == pytest.approx(boom_hand(L0 + 0.2)[1], rel=1e-12)  # the hand check itself is scale-free
    res = static_equilibrium(boom(length, scale, origin))
    assert res.state.q[0] == pytest.approx(th, abs=1e-9)
    assert res.actuator_forces["cyl"] == pytest.approx(F, rel=1e-8)


# ---------------------------------------------------------------------------------- the four-bar
FB = dict(a=0.3, b=1.0, c=0.8, d=1.0, ma=0.5, mb=1.2, mc=0.9, k=40.0, rest=np.radians(60.0))


def four_bar_points(th: float) -> tuple[np.ndarray, np.ndarray, float]:
    """The rigid four-bar at crank angle θ: A (crank tip), B (coupler–rocker pin, the branch above the
    ground line) and the rocker angle ψ; O = (0, 0), D = (d, 0)."""
    p = FB
    Apt = p["a"] * np.array([np.cos(th), np.sin(th)])
    D = np.array([p["d"], 0.0])
    e = D - Apt
    L = np.linalg.norm(e)
    # B on the circles (A, b) and (D, c), left of A -> D
    x = (p["b"] ** 2 - p["c"] ** 2 + L * L) / (2 * L)
    h = np.sqrt(p["b"] ** 2 - x * x)
    Bpt = Apt + x * e / L + h * np.array([-e[1], e[0]]) / L
    return Apt, Bpt, float(np.arctan2(Bpt[1], Bpt[0] - p["d"]))


def four_bar_virtual_work(th: float) -> float:
    """δW/δθ of the spring and the weights on the rigid linkage: −k (θ − θ_rest) − g Σ m ∂y_c/∂θ, the
    centres' rates by the loop's velocity relation (B − A)·(Ḃ − Ȧ) = 0 with Ḃ = ψ̇ ẑ × (B − D)."""
    p = FB
    Apt, Bpt, psi = four_bar_points(th)
    dA = p["a"] * np.array([-np.sin(th), np.cos(th)])
    rB = Bpt - np.array([p["d"], 0.0])
    tB = np.array([-rB[1], rB[0]])
    dpsi = ((Bpt - Apt) @ dA) / ((Bpt - Apt) @ tB)
    dB = dpsi * tB
    dy = p["ma"] * dA[1] / 2 + p["mb"] * (dA[1] + dB[1]) / 2 + p["mc"] * dB[1] / 2
    return -p["k"] * (th - p["rest"]) - G0 * dy


def four_bar_hand() -> tuple[float, np.ndarray]:
    """The crank angle where the virtual work vanishes (Newton, secant derivative) and the force (2,) the
    coupler exerts on the rocker at B there: the rocker's moments about D and the coupler's about A,
        (B − D) × F − (c/2) e_ψ × m_c g ŷ = 0,    −(B − A) × F − (B − A)/2 × m_b g ŷ = 0."""
    th = FB["rest"]
    for _ in range(50):
        f = four_bar_virtual_work(th)
        if abs(f) < 1e-13:
            break
        th -= f / ((four_bar_virtual_work(th + 1e-7) - four_bar_virtual_work(th - 1e-7)) / 2e-7)
    Apt, Bpt, psi = four_bar_points(th)
    rD, rA = Bpt - np.array([FB["d"], 0.0]), Bpt - Apt
    cross = lambda r, f: r[0] * f[1] - r[1] * f[0]  # noqa: E731
    w = lambda m: np.array([0.0, -m * G0])  # noqa: E731
    # rows: r × F = r_x F_y − r_y F_x
    Mx = np.array([[-rD[1], rD[0]], [rA[1], -rA[0]]])
    rhs = np.array([-cross(rD / 2, w(FB["mc"])), -cross(rA / 2, w(FB["mb"]))])
    return th, np.linalg.solve(Mx, rhs)


def four_bar(cut: str = "rigid", k: float = 0.0) -> fm.Model:
    """The four-bar at its crank angle θ = 0 (assembled closed), rods of masses ma, mb, mc as uniform
    rods, a torsion spring k (rest θ_rest) on the crank, gravity −y; the loop cut at B between the
    coupler (end a) and the rocker (end b) by a rigid cut (free rotation z) or a bushing of stiffness k
    (translations; k L² on the tilts)."""
    p = FB
    Apt, Bpt, psi = four_bar_points(0.0)
    xyz = lambda v: (float(v[0]), float(v[1]), 0.0)  # noqa: E731
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))

    def rod(name: str, node, start, end, m: float) -> None:
        mb.add_node(node, xyz(start))
        e = np.r_[end - start, 0.0]
        L = np.linalg.norm(e)
        mb.add_body(name, node, m, xyz((end - start) / 2), m * L * L / 12 * (np.eye(3) - np.outer(e, e) / (L * L)))

    D = np.array([p["d"], 0.0])
    rod("crank", "crank", np.zeros(2), Apt, p["ma"])
    rod("coupler", "coupler", Apt, Bpt, p["mb"])
    rod("rocker", "rocker", D, Bpt, p["mc"])
    mb.add_joint("O", "revolute", "ground", "crank", point=(0, 0, 0), axis=Z)
    mb.add_joint("A", "revolute", "crank", "coupler", point=xyz(Apt), axis=Z)
    mb.add_joint("D", "revolute", "ground", "rocker", point=xyz(D), axis=Z)
    mb.add_joint_spring("O", p["k"], rest=p["rest"])
    if cut == "rigid":
        mb.add_rigid_cut("B", "coupler", "rocker", point=xyz(Bpt), free_rotation="z")
    else:
        mb.add_bushing("B", "coupler", "rocker", stiffness=[k, k, k, k, k, 0.0], point=xyz(Bpt), free_rotation="z")
    return mb.compile()


@pytest.mark.parametrize("tangent", ["differences", "assembled"])
def test_a_four_bar_closed_by_a_rigid_cut_against_virtual_work(tangent: str, monkeypatch) -> None:
    """With either tangent of docs/statics.md §2: central differences (up to 64 free coordinates) or the
    assembled one with the penalty blocks (larger models; here forced), the same equilibrium."""
    if tangent == "assembled":
        monkeypatch.setattr(statics, "FD_TANGENT_LIMIT", 0)
    th, F = four_bar_hand()
    res = static_equilibrium(four_bar())
    assert res.state.q[0] == pytest.approx(th, abs=1e-9)
    Fg = res.cut_forces_global["B"]
    scale = G0 * (FB["ma"] + FB["mb"] + FB["mc"])
    np.testing.assert_allclose(Fg[:2], F, rtol=0, atol=1e-8 * scale)
    assert np.abs(Fg[[2, 3, 4, 5]]).max() <= 1e-8 * scale * FB["b"]  # planar: no force out of the plane


def test_a_stiff_bushing_approaches_the_rigid_cut_as_one_over_k() -> None:
    """Closed by a bushing of stiffness k instead, the crank angle differs from the rigid cut's by the
    bushing's deflection, F / k through the linkage: ten times the stiffness, a tenth of the difference."""
    rigid = static_equilibrium(four_bar()).state.q[0]
    d = [abs(static_equilibrium(four_bar("bushing", k)).state.q[0] - rigid) for k in (1e5, 1e6, 1e7)]
    assert d[0] > 1e-6  # the bushing's sag is well above the solver's tolerances
    for a, b in zip(d, d[1:]):
        assert a / b == pytest.approx(10.0, rel=0.02)


# ---------------------------------------------------------------------------------- the gear pair
RATIO, T0, KS = 3.0, 2.0, 40.0


def gear_pair(origin=(0.0, 0.0, 0.0)) -> fm.Model:
    """Two wheels on revolute joints about z, the rigid coupling q_b = 3 q_a, a torque T0 on wheel a and
    a joint spring KS on wheel b, no gravity."""
    o = np.asarray(origin, dtype=float)
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    for n, x in (("g1", 0.0), ("g2", 0.4)):
        mb.add_node(n, position=o + (x, 0.0, 0.0))
        mb.add_body(n, n, mass=1.0, inertia=np.eye(3) * 0.3)
        mb.add_joint("j" + n[1], "revolute", "ground", n, point=o + (x, 0.0, 0.0), axis=Z)
    mb.add_joint_force("j1", T0)
    mb.add_joint_spring("j2", KS)
    mb.add_coupling("mesh", "j1", "j2", ratio=RATIO)
    return mb.compile()


@pytest.mark.parametrize("origin", [(0.0, 0.0, 0.0), (100.0, -40.0, 7.0)])
def test_a_rigid_gear_pair_balances_the_torque(origin) -> None:
    """docs/coupling.md (C2): T + r f = 0 on wheel a, −f − k_s q_b = 0 on wheel b: f = −T/r, q_b = T/(r k_s),
    q_a = q_b / r (the coupling closed)."""
    res = static_equilibrium(gear_pair(origin))
    f = res.coupling_forces["mesh"]
    assert f == pytest.approx(-T0 / RATIO, rel=1e-8)
    qa, qb = res.state.q
    assert qb == pytest.approx(T0 / (RATIO * KS), rel=1e-8)
    assert qb - RATIO * qa == pytest.approx(0.0, abs=1e-10)
    assert T0 + RATIO * f == pytest.approx(0.0, abs=1e-8 * T0)


def test_what_statics_cannot_do_is_said() -> None:
    """An actuator whose length the boom cannot reach fails naming it; modal analysis of the boom held by
    it finds no degree of freedom (docs/modal.md (MO7)) and says so naming it."""
    with pytest.raises(fm.SolverError, match="actuator 'cyl'"):
        static_equilibrium(boom(5.0))
    with pytest.raises(fm.SolverError, match="natural_frequencies: the constraints .actuator 'cyl'.*no degree"):
        natural_frequencies(boom(L0), n_modes=1)
