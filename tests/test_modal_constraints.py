"""Natural frequencies of mechanisms held by rigid cuts, prescribed-length actuators and rigid couplings
(flexmb/solvers/modal.py, flexmb/solvers/constraint_stiffness.py; docs/modal.md), and the static Newton of
large constrained models with the constraint forces' and the weights' stiffness (docs/statics.md (ST10)):

* a four-bar closed by a rigid cut, a torsion spring on its crank, a torque on its rocker and gravity, at
  its static equilibrium: the frequency against the one-degree-of-freedom linearisation derived by hand
  from the loop's closed-form velocity and acceleration relations (generalized mass and V'');
  the same 100 m off the origin and scaled to 1 cm and 100 m (frequencies as 1/√scale);
* closed by bushings of stiffness k = 1e6, 1e7, 1e8 instead: the lowest frequency approaches the rigid
  cut's as 1/k;
* a gear pair held by a rigid coupling, a spring on one shaft: ω² = k / (J_a + r² J_b);
* a pendulum held by a prescribed-length actuator has no degree of freedom (refused by name); a rod
  hanging from it swings at ω² = 3g / (2ℓ);
* 22 such four-bars side by side (66 free coordinates: statics' assembled tangent, the modes' grouped one):
  the same equilibrium and frequency as one, Newton converging quadratically.

Tolerances: the hand frequency to 1e-6 relative (the brief's bound; the central differences of the
tangent, step 1e-6, are accurate to about 1e-10 of the force scale), poses to 1e-9 rad (the static solve's
closure tolerance over the lever arms, times ten).
"""

from __future__ import annotations

import numpy as np
import pytest

import flexmb as fm
from flexmb.solvers.modal import constrained_modes, natural_frequencies
from flexmb.solvers.statics import FD_TANGENT_LIMIT, static_equilibrium

G0 = 9.81
Z = (0.0, 0.0, 1.0)
# crank a, coupler b, rocker c, ground d [m]; rod masses [kg]; crank spring [N m/rad per m of scale], rest angle;
# torque on the rocker [N m per m of scale]
FB = dict(a=0.3, b=1.0, c=0.8, d=1.0, ma=0.5, mb=1.2, mc=0.9, k=40.0, rest=np.radians(60.0), torque=1.5)


def _e(x: float) -> complex:
    return complex(np.cos(x), np.sin(x))


def _real_pair(z1: complex, z2: complex, rhs: complex) -> np.ndarray:
    """Real x, y with x z1 + y z2 = rhs."""
    return np.linalg.solve(np.array([[z1.real, z2.real], [z1.imag, z2.imag]]), [rhs.real, rhs.imag])


def loop(th: float) -> tuple[float, float]:
    """The coupler's and the rocker's angles φ, ψ at crank angle θ (unit lengths' four-bar of FB, the branch
    above the ground line): a e^{iθ} + b e^{iφ} = d + c e^{iψ}."""
    p = FB
    A = p["a"] * _e(th)
    e = p["d"] - A
    L = abs(e)
    x = (p["b"] ** 2 - p["c"] ** 2 + L * L) / (2 * L)
    B = A + (x + 1j * np.sqrt(p["b"] ** 2 - x * x)) * e / L
    return float(np.angle(B - A)), float(np.angle(B - p["d"]))


def hand(th: float, gravity: bool = True) -> tuple[float, float, float]:
    """(V'(θ), V''(θ), m(θ)) of the rigid four-bar, per unit scale: V = ½k(θ − θ_r)² − T ψ + g Σ m y_c,
    m = Σ m |ṙ_c|² + J_c φ̇² per θ̇². Differentiating the loop closure once and twice,
        a e^{iθ} + b φ' e^{iφ} − c ψ' e^{iψ} = 0,
        i b φ'' e^{iφ} − i c ψ'' e^{iψ} = a e^{iθ} + b φ'² e^{iφ} − c ψ'² e^{iψ},
    the centres' rates r' = i ρ α' e^{iα} and accelerations r'' = (i α'' − α'²) ρ e^{iα} per crank rate."""
    p = FB
    a, b, c = p["a"], p["b"], p["c"]
    phi, psi = loop(th)
    dphi, dpsi = _real_pair(b * _e(phi), -c * _e(psi), -a * _e(th))
    ddphi, ddpsi = _real_pair(1j * b * _e(phi), -1j * c * _e(psi),
                              a * _e(th) + b * dphi**2 * _e(phi) - c * dpsi**2 * _e(psi))
    v = [0.5j * a * _e(th), 1j * a * _e(th) + 0.5j * b * dphi * _e(phi), 0.5j * c * dpsi * _e(psi)]
    acc = [-0.5 * a * _e(th), -a * _e(th) + (1j * ddphi - dphi**2) * b / 2 * _e(phi),
           (1j * ddpsi - dpsi**2) * c / 2 * _e(psi)]
    masses = (p["ma"], p["mb"], p["mc"])
    rates = (1.0, dphi, dpsi)
    g = G0 if gravity else 0.0
    m = sum(mi * (abs(vi) ** 2 + L * L / 12 * w * w) for mi, vi, L, w in zip(masses, v, (a, b, c), rates))
    V1 = p["k"] * (th - p["rest"]) - p["torque"] * dpsi + g * sum(mi * vi.imag for mi, vi in zip(masses, v))
    V2 = p["k"] - p["torque"] * ddpsi + g * sum(mi * ai.imag for mi, ai in zip(masses, acc))
    return V1, V2, m


def hand_frequency(gravity: bool = True, scale: float = 1.0) -> tuple[float, float]:
    """The crank angle where V' = 0 (Newton on the hand V', V'') and the frequency √(V''/m) / 2π there; in
    the model scaled by s (k and T times s, inertias times s²): V'' times s, m times s², f times 1/√s."""
    th = FB["rest"]
    for _ in range(50):
        V1, V2, _m = hand(th, gravity)
        th -= V1 / V2
        if abs(V1) < 1e-14 * FB["k"]:
            break
    _, V2, m = hand(th, gravity)
    return th, float(np.sqrt(V2 / m) / (2 * np.pi) / np.sqrt(scale))


def four_bar(cut: str = "rigid", k: float = 0.0, gravity: bool = True, scale: float = 1.0, origin=(0.0, 0.0, 0.0),
             offset_z: float = 0.0, mb: fm.ModelBuilder | None = None, tag: str = "") -> fm.ModelBuilder:
    """The four-bar of FB at θ = 0 (assembled closed), every length times ``scale``, at ``origin`` (+ z
    ``offset_z``), rods as uniform bars, spring on the crank, torque on the rocker, gravity −y; the loop cut
    at B by a rigid cut (free rotation z) or a bushing of stiffness k (its tilts k (scale · 1 m)²). Adds to
    ``mb`` (names suffixed by ``tag``) when given."""
    p = FB
    s = float(scale)
    o = np.asarray(origin, dtype=float) + (0.0, 0.0, offset_z)
    phi, psi = loop(0.0)
    A = s * np.array([p["a"], 0.0, 0.0])
    D = s * np.array([p["d"], 0.0, 0.0])
    B = D + s * p["c"] * np.array([np.cos(psi), np.sin(psi), 0.0])
    mb = mb or fm.ModelBuilder(gravity=(0.0, -G0 if gravity else 0.0, 0.0))

    def rod(name: str, start: np.ndarray, end: np.ndarray, m: float) -> None:
        e = end - start
        L = np.linalg.norm(e)
        mb.add_node(name + tag, o + start)
        mb.add_body(name + tag, name + tag, m, e / 2, m * L * L / 12 * (np.eye(3) - np.outer(e, e) / (L * L)))

    rod("crank", np.zeros(3), A, p["ma"])
    rod("coupler", A, B, p["mb"])
    rod("rocker", D, B, p["mc"])
    mb.add_joint("O" + tag, "revolute", "ground", "crank" + tag, point=o, axis=Z)
    mb.add_joint("A" + tag, "revolute", "crank" + tag, "coupler" + tag, point=o + A, axis=Z)
    mb.add_joint("D" + tag, "revolute", "ground", "rocker" + tag, point=o + D, axis=Z)
    mb.add_joint_spring("O" + tag, p["k"] * s, rest=p["rest"])
    mb.add_joint_force("D" + tag, p["torque"] * s)
    if cut == "rigid":
        mb.add_rigid_cut("B" + tag, "coupler" + tag, "rocker" + tag, point=o + B, free_rotation="z")
    else:
        kr = k * s * s
        mb.add_bushing("B" + tag, "coupler" + tag, "rocker" + tag, stiffness=[k, k, k, kr, kr, 0.0], point=o + B,
                       free_rotation="z")
    return mb


def test_a_four_bar_closed_by_a_rigid_cut_swings_at_its_hand_frequency() -> None:
    """docs/modal.md (MO5)-(MO8) against the hand linearisation: the rigid cut's geometric stiffness (MO3)
    and gravity's are both in it (left out, the frequency would be off by percents: checked below)."""
    th, f_hand = hand_frequency()
    model = four_bar().compile()
    eq = static_equilibrium(model)
    assert eq.state.q[0] == pytest.approx(th, abs=1e-9)
    res = constrained_modes(model, eq.state, n_modes=1)
    assert res.frequencies[0] == pytest.approx(f_hand, rel=1e-6)
    assert res.dof == 1 and res.constraint_rows == 2 and res.tangent == "differences"
    assert res.imbalance < 1e-9  # an equilibrium: the multipliers balance the forces
    # the multipliers are the cut's force (in the residual's sense: the negative of the force on end b)
    np.testing.assert_allclose(res.multipliers["rigid_cut"][0, :2], -eq.cut_forces["B"][:2], rtol=1e-7)
    # the mode: the crank, coupler and rocker rates of the loop (φ' − 1 relative to the crank, ψ')
    phi, psi = loop(th)
    dphi, dpsi = _real_pair(FB["b"] * _e(phi), -FB["c"] * _e(psi), -FB["a"] * _e(th))
    mode = res.shapes[:, 0] / res.shapes[0, 0]
    np.testing.assert_allclose(mode, [1.0, dphi - 1.0, dpsi], rtol=1e-6)
    # the rigid linkage's gravity stiffness and the cut's geometric stiffness are not small here
    _, V2, m = hand(th)
    assert abs(V2 / FB["k"] - 1.0) > 0.05
    # natural_frequencies gives the same
    assert natural_frequencies(model, eq.state, n_modes=1)[0][0] == res.frequencies[0]


@pytest.mark.parametrize("scale, origin", [(1.0, (100.0, -40.0, 7.0)), (0.01, (0.0, 0.0, 0.0)),
                                           (100.0, (0.0, 0.0, 0.0))])
def test_the_frequency_is_the_same_anywhere_and_scales_as_one_over_root_size(scale: float, origin) -> None:
    """100 m off the origin: the same frequency; lengths times s (springs and torques times s, the same
    masses): V'' times s, the generalized mass times s², f times 1/√s."""
    th, f_hand = hand_frequency(scale=scale)
    model = four_bar(scale=scale, origin=origin).compile()
    eq = static_equilibrium(model)
    assert eq.state.q[0] == pytest.approx(th, abs=1e-9)
    assert constrained_modes(model, eq.state, n_modes=1).frequencies[0] == pytest.approx(f_hand, rel=1e-6)


def test_stiff_bushings_approach_the_rigid_cut_as_one_over_k() -> None:
    """Closed by a bushing of stiffness k instead, its lowest frequency tends to the rigid cut's: the
    bushing's compliance adds 1/k to the loop's, ten times the stiffness, a tenth of the difference. The
    bushing models are linearised by :func:`constrained_modes` too (no rows: the central-difference tangent
    of (MO6), with the preloaded bushing's geometric stiffness and gravity's, as ``natural_frequencies``'
    own path for them: docs/modal.md §3, tests/test_modal.py)."""
    th, f_hand = hand_frequency()
    rigid = four_bar().compile()
    f_rigid = natural_frequencies(rigid, static_equilibrium(rigid).state, n_modes=1)[0][0]
    assert f_rigid == pytest.approx(f_hand, rel=1e-6)
    diffs = []
    for k in (1e6, 1e7, 1e8):
        m = four_bar("bushing", k).compile()
        res = constrained_modes(m, static_equilibrium(m).state, n_modes=1)
        assert res.constraint_rows == 0 and res.tangent == "differences"
        diffs.append(f_rigid - res.frequencies[0])  # the compliance lowers it
    assert diffs[0] > 1e-7 * f_rigid  # the bushing's compliance is seen well above the tolerances
    for a, b in zip(diffs, diffs[1:]):
        assert a / b == pytest.approx(10.0, rel=0.02)


@pytest.mark.parametrize("origin", [(0.0, 0.0, 0.0), (100.0, -40.0, 7.0)])
def test_a_gear_pair_swings_with_the_reflected_inertia(origin) -> None:
    """A rigid coupling q_b = r q_a, a spring k on shaft a and a torque on shaft b: ω² = k / (J_a + r² J_b),
    the mode q_b = r q_a (docs/coupling.md (C1))."""
    r, k, Ja, Jb = -2.5, 30.0, 0.2, 0.07
    o = np.asarray(origin, dtype=float)
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    for n, x, J in (("a", 0.0, Ja), ("b", 0.4, Jb)):
        mb.add_node(n, position=o + (x, 0.0, 0.0))
        mb.add_body(n, n, mass=1.0, inertia=np.diag([0.1, 0.1, J]))
        mb.add_joint("j" + n, "revolute", "ground", n, point=o + (x, 0.0, 0.0), axis=Z)
    mb.add_joint_spring("ja", k)
    mb.add_joint_force("jb", 0.7)
    mb.add_coupling("mesh", "ja", "jb", ratio=r)
    model = mb.compile()
    eq = static_equilibrium(model)
    res = constrained_modes(model, eq.state, n_modes=1)
    assert res.omega2[0] == pytest.approx(k / (Ja + r * r * Jb), rel=1e-9)
    assert res.shapes[1, 0] / res.shapes[0, 0] == pytest.approx(r, rel=1e-12)


def _boom(hanging: bool) -> fm.Model:
    """A 2 m, 10 kg boom on a pivot held at an angle by a cylinder of prescribed length; ``hanging``: with a
    1.5 m, 3 kg rod hanging from its tip on a pin."""
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    mb.add_node("boom", (0.0, 0.0, 0.0))
    mb.add_body("boom", "boom", 10.0, (1.0, 0.0, 0.0), np.diag([1e-3, 1.0, 1.0]) * 10.0 * 4.0 / 12)
    mb.add_joint("pivot", "revolute", "ground", "boom", axis=Z)
    mb.add_actuator("cyl", "ground", "boom", point_a=(0.5, -1.0, 0.0), point_b=(1.5, 0.0, 0.0), length=1.3)
    if hanging:
        mb.add_node("rod", (2.0, 0.0, 0.0))
        mb.add_body("rod", "rod", 3.0, (0.0, -0.75, 0.0), np.diag([1.0, 1e-3, 1.0]) * 3.0 * 1.5**2 / 12)
        mb.add_joint("pin", "revolute", "boom", "rod", point=(2.0, 0.0, 0.0), axis=Z)
    return mb.compile()


def test_a_pendulum_held_by_a_cylinder_has_no_modes_and_a_rod_hanging_from_it_swings() -> None:
    """The boom's one coordinate is fixed by the cylinder's length: no degree of freedom, refused naming the
    actuator. A rod hanging from its tip (the boom held, the pin free) swings as a compound pendulum,
    ω² = m g (ℓ/2) / (m ℓ²/3) = 3 g / (2 ℓ): gravity's stiffness is in the linearisation."""
    with pytest.raises(fm.SolverError, match="actuator 'cyl'.*no degree of freedom"):
        natural_frequencies(_boom(False), n_modes=1)
    model = _boom(True)
    eq = static_equilibrium(model)
    res = constrained_modes(model, eq.state, n_modes=1)
    assert res.dof == 1
    assert res.omega2[0] == pytest.approx(3 * G0 / (2 * 1.5), rel=1e-6)
    assert abs(res.shapes[0, 0]) <= 1e-12 * abs(res.shapes[1, 0])  # the boom does not move
    with pytest.raises(fm.SolverError, match="2 modes of a model with 1 degrees of freedom"):
        constrained_modes(model, eq.state, n_modes=2)


N_LOOPS = 22  # 66 free coordinates: above FD_TANGENT_LIMIT


def test_many_four_bars_converge_quadratically_to_the_small_models_equilibrium() -> None:
    """N_LOOPS four-bars side by side in parallel planes (statics: the assembled tangent with the cuts' geometric
    stiffness and the weights', docs/statics.md (ST10); modes: the grouped differences, docs/modal.md (MO10)):
    each at the crank angle of one alone (the central-difference tangent), its N_LOOPS frequencies that of
    one alone, and the last
    iterates of each Newton solve converging quadratically: r_{k+1} ≤ C r_k² / F (F the force scale)."""
    mb = None
    for i in range(N_LOOPS):
        mb = four_bar(offset_z=0.5 * i, mb=mb, tag=f"_{i}")
    model = mb.compile()
    assert model.free_u.size == 3 * N_LOOPS > FD_TANGENT_LIMIT
    th, f_hand = hand_frequency()
    eq = static_equilibrium(model)
    small = static_equilibrium(four_bar().compile())
    np.testing.assert_allclose(eq.state.q[0::3], small.state.q[0], rtol=0, atol=1e-9)
    assert small.state.q[0] == pytest.approx(th, abs=1e-9)
    F = G0 * (FB["ma"] + FB["mb"] + FB["mc"])
    floor = 1e-8 * F  # round-off of the residual's sums, well above its 1e-10 test
    checked = 0
    for h in eq.newton_residuals:
        for a, b in zip(h, h[1:]):
            if b > floor and a < 0.5 * F:  # near the solution, above round-off
                assert b <= 100.0 * a * a / F, h  # (without (ST10): 1.1e-4 -> 5.9e-6, a rate of 0.05)
                checked += 1
    assert checked >= 2
    res = constrained_modes(model, eq.state, n_modes=N_LOOPS)
    assert res.tangent == "grouped" and res.dof == N_LOOPS
    np.testing.assert_allclose(res.frequencies, f_hand, rtol=1e-6)
