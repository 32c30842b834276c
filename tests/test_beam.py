"""Co-rotational beam element: statics against closed forms, linearised frequencies,
objectivity, exact variations, and bad input (issue 3, items 1–4 and 9 so far)."""

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements.beam.exact import deformations, local_stiffness
from flexmb.elements.beam.reference import internal_forces
from flexmb.rotations import expm
from flexmb.solvers.modal import natural_frequencies
from flexmb.solvers.statics import static_equilibrium

E, G, A, I, L, RHO = 2.1e11, 8e10, 1e-3, 1e-7, 1.0, 7800.0


def cantilever(n, section=None, load=None, moment=None):
    sec = section or fm.BeamSection(E, G, A, I, I, 2 * I, RHO)
    mb = fm.ModelBuilder()
    nodes = mb.add_flexible_link("b", (0, 0, 0), (L, 0, 0), n, sec)
    mb.add_joint("clamp", "fixed", "ground", nodes[0])
    if load is not None or moment is not None:
        mb.add_load("tip", nodes[-1], force=load if load is not None else (0, 0, 0),
                    moment=moment if moment is not None else (0, 0, 0))
    return mb.compile(), nodes


def tip_position(model, nodes, st):
    return st.node_position(nodes[-1])


def test_cantilever_tip_deflection_euler_bernoulli_and_timoshenko():
    P = 10.0  # small: deflection/L ~ 1.6e-4, geometric nonlinearity ~1e-8
    m, nodes = cantilever(8, load=(0, -P, 0))
    d = -tip_position(m, nodes, static_equilibrium(m, load_steps=1))[1]
    assert d == pytest.approx(P * L**3 / (3 * E * I), rel=1e-3)
    kappa = 5 / 6
    sec = fm.BeamSection(E, G, A, I, I, 2 * I, RHO, ky=kappa, kz=kappa)
    m, nodes = cantilever(8, section=sec, load=(0, -P, 0))
    d = -tip_position(m, nodes, static_equilibrium(m, load_steps=1))[1]
    assert d == pytest.approx(P * L**3 / (3 * E * I) + P * L / (kappa * G * A), rel=1e-3)


def rollup_error(n):
    m, nodes = cantilever(n, moment=(0, 0, 2 * np.pi * E * I / L))
    x = static_equilibrium(m, load_steps=8).x
    R = L / (2 * np.pi)
    s = np.linspace(0, L, n + 1)
    exact = np.stack([R * np.sin(s / R), R * (1 - np.cos(s / R)), 0 * s], 1)
    got = x[[m.node_index(k) for k in nodes]]
    return np.linalg.norm(got[-1]), np.abs(got - exact).max()


def test_rollup_into_a_full_circle_converges():
    tip8, err8 = rollup_error(8)
    tip16, err16 = rollup_error(16)
    tip32, err32 = rollup_error(32)
    assert tip16 < 1e-3 * L
    # node positions against the exact circle: second order in the element size
    assert err16 < 0.35 * err8 and err32 < 0.35 * err16


def test_rollup_finds_its_own_load_steps():
    """Issue 12.5: the 16-element cantilever rolled into a full circle by its end moment
    M = 2 pi EI / L needs load steps; one or two fixed steps fail (Newton stalls for 50
    iterations), load_steps="auto" (the default) finds them from one requested step: the whole
    load and half of it fail, then quarter steps converge. The tip returns to the clamp (for a
    pure moment every element bends to the same arc, so the polygon of nodes closes exactly)."""
    m, nodes = cantilever(16, moment=(0, 0, 2 * np.pi * E * I / L))
    for n in (1, 2):
        with pytest.raises(fm.SolverError, match="did not converge.*Use more load_steps"):
            static_equilibrium(m, load_steps=n)
    res = static_equilibrium(m)
    assert np.linalg.norm(res.node_position(nodes[-1])) < 1e-12 * L
    assert np.abs(res.R[m.node_index(nodes[-1])] - np.eye(3)).max() < 1e-9  # turned by 2 pi
    assert res.rejected == (1.0, 0.5)
    assert np.array_equal(res.load_factors, [0.25, 0.5, 0.75, 1.0])
    assert res.iterations.shape == (4,) and np.all(res.iterations > 4) and res.total_iterations == res.iterations.sum()
    assert res.residual < 1e-10 * 2 * np.pi * E * I / L
    # the same equilibrium as four fixed steps
    fixed = static_equilibrium(m, load_steps=4)
    assert np.abs(fixed.x - res.x).max() < 1e-12


def bending_frequency_errors(n: int, I: float) -> np.ndarray:
    """Relative errors of the first three bending frequencies of an n-element cantilever of
    second moment I against the Euler–Bernoulli closed form (beta L = 1.8751, 4.6941, 7.8548)."""
    sec = fm.BeamSection(E, G, A, I, I, 2 * I, RHO)
    m, _ = cantilever(n, section=sec)
    f, _ = natural_frequencies(m, n_modes=8)
    fb = np.unique(np.round(f, 6))[:3]  # y and z bending coincide (Iy = Iz)
    exact = np.array([1.8751041, 4.6940911, 7.8547574]) ** 2 * np.sqrt(E * I / (RHO * A * L**4)) / (2 * np.pi)
    return fb / exact - 1


def test_cantilever_bending_frequencies():
    """Slender section (L/r = 1000) so that the rotary inertia the element carries shifts the
    frequencies by < 4e-5 and the Euler–Bernoulli closed form is the reference."""
    err16 = bending_frequency_errors(16, 1e-9)
    assert np.abs(err16).max() < 5e-3
    # cubic (Hermite) consistent mass and stiffness: the third frequency converges at fourth
    # order (a linear-interpolation mass would give second order: 4x per halving)
    err4, err8 = bending_frequency_errors(4, 1e-9), bending_frequency_errors(8, 1e-9)
    assert abs(err8[2]) < abs(err4[2]) / 8 and abs(err16[2]) < abs(err8[2]) / 8


def test_rotary_inertia_lowers_frequencies_of_a_stocky_cantilever():
    """L/r = 100: the element's rotary inertia lowers the bending frequencies by Rayleigh's
    first-order correction  dω/ω = -r²/2 ∫φ'² / ∫φ²  computed here from the analytic cantilever
    mode shapes φ = cosh βx - cos βx - σ (sinh βx - sin βx)."""
    I = 1e-7
    err = bending_frequency_errors(32, I)
    x = np.linspace(0.0, L, 20001)
    shift = []
    for bl in (1.8751041, 4.6940911, 7.8547574):
        b = bl / L
        s = (np.cosh(bl) + np.cos(bl)) / (np.sinh(bl) + np.sin(bl))
        phi = np.cosh(b * x) - np.cos(b * x) - s * (np.sinh(b * x) - np.sin(b * x))
        dphi = b * (np.sinh(b * x) + np.sin(b * x) - s * (np.cosh(b * x) - np.cos(b * x)))
        shift.append(-0.5 * (I / A) * np.trapezoid(dphi**2, x) / np.trapezoid(phi**2, x))
    assert np.all(err < 0)
    assert np.allclose(err, shift, rtol=0.02)


def random_element(rng, n=6):
    x1 = rng.normal(size=(n, 3))
    x2 = x1 + rng.normal(size=(n, 3))
    R1, R2 = expm(0.4 * rng.normal(size=(n, 3))), expm(0.4 * rng.normal(size=(n, 3)))
    C1, C2 = expm(0.3 * rng.normal(size=(n, 3))), expm(0.3 * rng.normal(size=(n, 3)))
    L0 = np.linalg.norm(x2 - x1, axis=1) * rng.uniform(0.9, 1.1, n)
    Kl = local_stiffness(L0, E, G, A, I, 2 * I, 3 * I)
    return x1, R1, x2, R2, C1, C2, L0, Kl


def test_internal_forces_are_objective():
    rng = np.random.default_rng(3)
    x1, R1, x2, R2, C1, C2, L0, Kl = random_element(rng)
    z = np.zeros((len(L0), 12))
    f, *_ = internal_forces(x1, R1, x2, R2, z, C1, C2, L0, Kl, np.zeros(len(L0)))
    for _ in range(5):
        Q, c = expm(rng.normal(size=3) * 2.0), rng.normal(size=3) * 10
        g, *_ = internal_forces(x1 @ Q.T + c, Q @ R1, x2 @ Q.T + c, Q @ R2, z, C1, C2, L0, Kl, np.zeros(len(L0)))
        rotated = np.concatenate([f[:, 0:3] @ Q.T, f[:, 3:6] @ Q.T, f[:, 6:9] @ Q.T, f[:, 9:12] @ Q.T], axis=1)
        assert np.abs(g - rotated).max() <= 1e-10 * np.abs(f).max()


def test_undeformed_beam_in_any_rigid_pose_has_no_internal_force():
    rng = np.random.default_rng(4)
    n = 5
    x1 = rng.normal(size=(n, 3))
    E0 = expm(rng.normal(size=(n, 3)))
    L0 = rng.uniform(0.5, 2, n)
    x2 = x1 + L0[:, None] * E0[:, :, 0]
    Rn1, Rn2 = expm(rng.normal(size=(n, 3))), expm(rng.normal(size=(n, 3)))  # node frames, arbitrary
    C1, C2 = np.swapaxes(Rn1, 1, 2) @ E0, np.swapaxes(Rn2, 1, 2) @ E0
    Kl = local_stiffness(L0, E, G, A, I, 2 * I, 3 * I)
    Q, c = expm(rng.normal(size=3) * 3), rng.normal(size=3)
    f, energy, *_ = internal_forces(x1 @ Q.T + c, Q @ Rn1, x2 @ Q.T + c, Q @ Rn2, np.zeros((n, 12)), C1, C2, L0, Kl,
                                    np.zeros(n))
    assert np.abs(f).max() < 1e-12 * E * A and np.abs(energy).max() < 1e-20 * E * A


def test_variations_match_finite_differences():
    rng = np.random.default_rng(5)
    x1, R1, x2, R2, C1, C2, L0, _ = random_element(rng)
    n = len(L0)
    _, Bl, *_ = deformations(x1, R1, x2, R2, C1, C2, L0)
    eps = 1e-5  # central differences: truncation ~eps^2, round-off ~1e-16/eps
    for j in range(12):
        X = np.zeros(12)
        X[j] = eps

        def at(s, X=X):
            Y = s * X
            return deformations(x1 + Y[:3], expm(np.tile(Y[3:6], (n, 1))) @ R1, x2 + Y[6:9],
                                expm(np.tile(Y[9:], (n, 1))) @ R2, C1, C2, L0)[0]

        assert np.abs((at(1) - at(-1)) / (2 * eps) - Bl[:, :, j]).max() < 1e-8


@pytest.mark.parametrize("field", ["E", "G", "A", "Iy", "Iz", "J", "rho"])
@pytest.mark.parametrize("value", [0.0, -1.0, float("nan")])
def test_bad_section_property_is_named(field, value):
    kw = dict(E=E, G=G, A=A, Iy=I, Iz=I, J=2 * I, rho=RHO)
    kw[field] = value
    with pytest.raises(fm.ModelError, match=field):
        fm.BeamSection(**kw)


def test_zero_length_beam_and_coincident_points_are_refused():
    sec = fm.BeamSection(E, G, A, I, I, 2 * I, RHO)
    mb = fm.ModelBuilder()
    mb.add_node("p", (0, 0, 0))
    mb.add_node("q", (0, 0, 0))
    with pytest.raises(fm.ModelError, match="el7"):
        mb.add_beam("el7", "p", "q", sec)
    with pytest.raises(fm.ModelError, match="arm3"):
        mb.add_flexible_link("arm3", (1, 1, 1), (1, 1, 1), 4, sec)


def test_first_frequency_from_free_vibration_time_history():
    """Release the cantilever from its static deflection under a tip load and measure the
    period of the tip motion (no damping, rho_inf = 1): within 1 % of the analytic f1."""
    from flexmb.solvers.simulate import simulate

    n = 8
    loaded, nodes = cantilever(n, load=(0, -1.0, 0))
    st = static_equilibrium(loaded, load_steps=1).state
    free, _ = cantilever(n)
    f1 = 1.8751**2 * np.sqrt(E * I / (RHO * A * L**4)) / (2 * np.pi)
    res = simulate(free, 3.2 / f1, 1 / (f1 * 200), rho_inf=1.0, state=st)
    y = res.node_position(nodes[-1])[:, 1]
    up = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0))
    tc = res.t[up] - y[up] * (res.t[up + 1] - res.t[up]) / (y[up + 1] - y[up])
    assert len(tc) >= 2
    assert 1 / np.diff(tc).mean() == pytest.approx(f1, rel=1e-2)
