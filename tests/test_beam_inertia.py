"""Consistent mass of the co-rotational beam (flexmb.elements.beam eq. 5–7): the inertia forces are
the Lagrange equations of the kinetic energy (power identity), the weight is consistent with
the inertia (a freely falling beam stays undeformed), and the mass is exact for rigid motions."""

import numpy as np

import flexmb as fm
from flexmb.elements.beam import exact, reference
from flexmb.rotations import expm
from flexmb.solvers.simulate import simulate

E, G, A, I, RHO = 7e10, 2.7e10, 4e-4, 2e-7, 3000.0


def element(rng, n=5):
    """Random deformed elements: node positions, rotations, section offsets, lengths, masses."""
    L0 = rng.uniform(0.3, 2.0, n)
    E0 = expm(rng.normal(size=(n, 3)))
    x1 = rng.normal(size=(n, 3))
    x2 = x1 + L0[:, None] * E0[:, :, 0] * rng.uniform(0.97, 1.03, (n, 1)) + 0.05 * rng.normal(size=(n, 3))
    R1 = expm(0.2 * rng.normal(size=(n, 3))) @ E0
    R2 = expm(0.2 * rng.normal(size=(n, 3))) @ E0
    C = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()  # section frame = node frame at assembly
    Ml = exact.local_mass(L0, RHO * A * np.ones(n), RHO * I * np.ones(n), 2 * RHO * I * np.ones(n))
    return x1, R1, x2, R2, C, L0, Ml


def kinetic(x1, R1, x2, R2, C, L0, Ml, V):
    _, _, Rr, _ = exact.deformations(x1, R1, x2, R2, C, C, L0)
    return reference.kinetic_energy(Rr, Ml, V)


def test_inertia_forces_deliver_the_rate_of_kinetic_energy():
    """Along x_i(t) = x_i + v_i t + a_i t²/2, R_i(t) = expm(w_i t) R_i (constant spatial angular
    velocities, different at the two nodes so the element deforms): dT/dt = V·(M A + g_v)."""
    rng = np.random.default_rng(11)
    x1, R1, x2, R2, C, L0, Ml = element(rng)
    n = len(L0)
    V = rng.normal(size=(n, 12))
    Acc = np.zeros((n, 12))
    Acc[:, 0:3] = rng.normal(size=(n, 3))
    Acc[:, 6:9] = rng.normal(size=(n, 3))

    def T(t):
        Vt = V.copy()
        Vt[:, 0:3] += t * Acc[:, 0:3]
        Vt[:, 6:9] += t * Acc[:, 6:9]
        return kinetic(x1 + V[:, 0:3] * t + Acc[:, 0:3] * t * t / 2, expm(V[:, 3:6] * t) @ R1,
                       x2 + V[:, 6:9] * t + Acc[:, 6:9] * t * t / 2, expm(V[:, 9:12] * t) @ R2, C, L0, Ml, Vt)

    h = 1e-5
    dTdt = (T(h) - T(-h)) / (2 * h) - (T(2 * h) - T(-2 * h) - 2 * (T(h) - T(-h))) / (12 * h)  # 4th order
    _, _, Rr, Wr = exact.deformations(x1, R1, x2, R2, C, C, L0)
    power = np.einsum("ni,ni->n", V, reference.mass_times(Rr, Ml, Acc) + reference.inertia_forces(Rr, Wr, Ml, V))
    assert np.abs(power - dTdt).max() < 1e-7 * np.abs(dTdt).max()
    # the velocity terms matter: without them the identity fails by far more
    assert np.abs(np.einsum("ni,ni->n", V, reference.mass_times(Rr, Ml, Acc)) - dTdt).max() > 1e-3 * np.abs(dTdt).max()


def test_mass_is_exact_for_rigid_motion():
    """Rigid motion of an undeformed element (twist of a rigid body about x1): the kinetic energy
    is that of the rigid bar, 1/2 m |v_c|² + 1/2 w·J_c w with J_c of a uniform bar with section
    rotary inertia."""
    rng = np.random.default_rng(3)
    n = 4
    L0 = rng.uniform(0.5, 2.0, n)
    R = expm(rng.normal(size=(n, 3)))
    x1 = rng.normal(size=(n, 3))
    x2 = x1 + L0[:, None] * R[:, :, 0]
    v, w = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    V = np.concatenate([v, w, v + np.cross(w, x2 - x1), w], axis=1)
    Iy, Iz = I, 2 * I
    Ml = exact.local_mass(L0, RHO * A * np.ones(n), RHO * Iy * np.ones(n), RHO * Iz * np.ones(n))
    got = kinetic(x1, R, x2, R, np.broadcast_to(np.eye(3), (n, 3, 3)), L0, Ml, V)
    m = RHO * A * L0
    vc = v + np.cross(w, 0.5 * (x2 - x1))
    Jl = np.zeros((n, 3, 3))
    Jl[:, 0, 0] = RHO * (Iy + Iz) * L0
    Jl[:, 1, 1] = m * L0**2 / 12 + RHO * Iy * L0
    Jl[:, 2, 2] = m * L0**2 / 12 + RHO * Iz * L0
    Jg = R @ Jl @ np.swapaxes(R, 1, 2)
    rigid_bar = 0.5 * m * np.sum(vc * vc, 1) + 0.5 * np.einsum("ni,nij,nj->n", w, Jg, w)
    assert np.allclose(got, rigid_bar, rtol=1e-12)


def test_freely_falling_beam_stays_undeformed():
    """A beam with no joints (all nodes free) in an oblique pose, released under gravity: every
    node falls with g and no strain develops (the weight equals the inertia of the rigid fall)."""
    g = np.array([0.3, -9.81, 1.2])
    mb = fm.ModelBuilder(gravity=g)
    sec = fm.BeamSection(E, G, A, I, 2 * I, 3 * I, RHO)
    nodes = mb.add_flexible_link("b", (0.1, 0.2, -0.3), (1.2, 1.1, 0.4), 6, sec)
    m = mb.compile()
    res = simulate(m, 0.2, 1e-3, rho_inf=1.0)
    assert res.status == "finished"
    t = res.t[-1]
    for nd in nodes:
        x = res.node_position(nd)
        assert np.allclose(x[-1] - x[0], 0.5 * g * t * t, atol=1e-9)
    assert np.abs(res.element_energy).max() < 1e-12 * RHO * A * 1.6 * 9.81
