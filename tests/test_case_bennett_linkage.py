"""The Bennett linkage case (cases/bennett_linkage.py), shortened: joint 1 turns by 0.6 rad in 0.5 s.

Checks, each computed here:
* the geometry: the four joint axes taken from the compiled model have Bennett's proportions
  (opposite common normals equal in length and twist, a/sin α = b/sin β, no offsets along the
  axes) — or, in the violated model, do not;
* mobility: Grübler's count is -2; the four joint screws are linearly dependent (rank 3,
  mobility 1) only with Bennett's proportions (rank 4 otherwise);
* exact proportions: the linkage moves with small elastic forces, equal to the forces that
  gravity and inertia need on the rigid motion, distributed by the cut's stiffness (the loop is
  overconstrained: equilibrium alone leaves them open), and the drive torque equals the rigid
  inverse dynamics' (which is unique);
* violated proportions: the linkage locks and the cut force is stiffness × geometric misfit,
  the misfit found here by minimising the cut's elastic energy over θ2, θ3 with the
  Denavit–Hartenberg chain written out in this file.
"""

import numpy as np
import pytest
from conftest import load_case
from scipy.optimize import least_squares

from flexmb.analysis.rigid import RigidModel, rigid_inverse_dynamics
from flexmb.engine.assembly import Assembler
from flexmb.solvers.simulate import simulate

bl = load_case("bennett_linkage")

P = {**bl.DEFAULTS, "T": 0.5, "sweep": 0.6, "t_end": 0.5}
VIOL = {**P, "violation": np.radians(5.0)}
A_LEN, ALPHA, BETA = P["a"], P["alpha"], P["beta"]
B_LEN = A_LEN * np.sin(BETA) / np.sin(ALPHA)


@pytest.fixture(scope="module")
def runs():
    out = {}
    for label, p in (("exact", P), ("violated", VIOL)):
        m = bl.build(**p)
        r = simulate(m, p["t_end"], p["dt"], rho_inf=p["rho_inf"])
        assert r.status == "finished"
        out[label] = (m, r)
    return out


# ----------------------------------------------------------------------------- geometry
def axis_lines(model):
    """(point, unit direction) of joints 1..4 in the assembly configuration, from the model."""
    lines = []
    for i in range(3):
        R = model.R0[model.node_index(f"link{i + 1}")]
        lines.append((model.X0[model.node_index(f"link{i + 1}")], R[:, 2]))
    lines.append((model.elements["bushing"].sa[0], model.elements["bushing"].Ea[0][:, 2]))  # ground side: global
    return lines


def common_normal(l1, l2):
    """Length, twist angle and the feet (on l1, on l2) of the common normal of two skew lines."""
    (p1, u1), (p2, u2) = l1, l2
    n = np.cross(u1, u2)
    n /= np.linalg.norm(n)
    dist = abs((p2 - p1) @ n)
    # feet: p1 + s u1 and p2 + t u2 with the connecting vector along n
    M = np.array([[u1 @ u1, -u1 @ u2], [u1 @ u2, -u2 @ u2]])
    s, t = np.linalg.solve(M, [(p2 - p1) @ u1, (p2 - p1) @ u2])
    twist = np.arccos(np.clip(abs(u1 @ u2), -1, 1))
    return dist, twist, p1 + s * u1, p2 + t * u2


def proportions(model):
    L = axis_lines(model)
    links = [common_normal(L[i], L[(i + 1) % 4]) for i in range(4)]
    # offset along axis i between the feet of the normals of links i-1 and i
    offsets = [np.linalg.norm(links[i][2] - links[i - 1][3]) for i in range(4)]
    return [x[0] for x in links], [x[1] for x in links], offsets


def test_exact_model_has_bennett_proportions_and_violated_does_not():
    lengths, twists, offsets = proportions(bl.build(**P))
    np.testing.assert_allclose(lengths, [A_LEN, B_LEN, A_LEN, B_LEN], rtol=1e-12)
    # twists up to the sense of the axes (|cos|): 30° and 60°
    np.testing.assert_allclose(twists, [ALPHA, BETA, ALPHA, BETA], atol=1e-12)
    assert lengths[0] / np.sin(twists[0]) == pytest.approx(lengths[1] / np.sin(twists[1]), rel=1e-12)
    assert max(offsets) < 1e-12
    lengths, twists, offsets = proportions(bl.build(**VIOL))
    ratio = [lengths[i] / np.sin(twists[i]) for i in range(4)]
    assert np.ptp(ratio) > 0.05 * np.mean(ratio)  # a/sin α = b/sin β broken
    assert max(offsets) > 1e-3 or abs(lengths[3] - lengths[1]) > 1e-3  # the ground link no longer matches


def screw_rank(model):
    S = np.array([np.concatenate([u, np.cross(p, u)]) for p, u in axis_lines(model)])
    s = np.linalg.svd(S, compute_uv=False)
    return int(np.sum(s > 1e-9 * s[0])), s


def test_mobility_one_only_with_bennett_proportions():
    n_links, n_revolute = 4, 4  # the ground counts as a link
    assert 6 * (n_links - 1) - 5 * n_revolute == -2  # Grübler: a structure
    rank, s = screw_rank(bl.build(**P))
    assert rank == 3 and s[3] < 1e-12  # the four screws are dependent: one loop freedom
    rank, s = screw_rank(bl.build(**VIOL))
    assert rank == 4 and s[3] > 1e-3  # independent: no motion
    # the case's own report agrees
    assert bl.mobility(bl.build(**P))[0] == 1
    assert bl.mobility(bl.build(**VIOL))[0] == 0


# ----------------------------------------------------------------------------- runs
def cut_deformation(model, res):
    """Cut deformation (nt, 5) from the node poses, written out here: translation of link 3's
    attachment point from the ground's, in the cut axes A; bending A^T (a_z x b_z)."""
    x4, A = model.elements["bushing"].sa[0], model.elements["bushing"].Ea[0]
    n = model.node_index("link3")
    X0, R0 = model.X0[n], model.R0[n]
    Rrel = res.R[:, n] @ R0.T
    pb = res.x[:, n] + np.einsum("tij,j->ti", Rrel, x4 - X0)
    bz = np.einsum("tij,j->ti", Rrel, A[:, 2])
    trans = (pb - x4) @ A
    bend = np.cross(A[:, 2], bz) @ A
    return np.concatenate([trans, bend[:, :2]], axis=1)


def K5(model):
    return np.diag(model.elements["bushing"].K[0])[:5]


def test_exact_linkage_moves_with_the_forces_gravity_and_inertia_need(runs):
    model, res = runs["exact"]
    d = cut_deformation(model, res)
    f = d * K5(model)
    # the cut's damping C = zeta K adds zeta K ddot: the cut carries K (d + zeta ddot) in all
    ft = (d + P["damping_ratio"] * np.gradient(d, res.t, axis=0)) * K5(model)
    th1 = res.coordinate("J1.q")
    assert th1[-1] == pytest.approx(P["sweep"], rel=1e-12)  # it moved through the whole sweep
    # stiffness-distributed rigid estimate, computed here: on the rigid motion, the residual of the
    # free rows r_f (inertia minus gravity) is balanced by the cut: J_f^T K d = -r_f with the
    # compatible deformation d = J_f dq  =>  d = -J_f (J_f^T K J_f)^-1 r_f
    rm, asm = RigidModel(model), Assembler(model)
    Kc = K5(model)
    free = model.free_u
    st = model.initial_state()
    idx = np.arange(0, res.t.size, 25)
    worst = 0.0
    for k in idx:
        st.t = float(res.t[k])
        st.apply_drives(model, st.t)
        st = rm.solve_motion(rm.solve_positions(st))
        r = asm.evaluate(st, elastic_cuts=False).residual(st.udot)[free]
        _, J = rm.closure(st)
        Jf = J[:, free]
        dk = -Jf @ np.linalg.solve(Jf.T @ (Kc[:, None] * Jf), r)
        worst = max(worst, np.abs(ft[k] - Kc * dk).max())
    fmax = np.linalg.norm(f[:, :3], axis=1).max()
    assert 1.0 < fmax < 50.0  # newtons: the order of the links' weight (3 x 9.81 N)
    # (with C = zeta K the same distribution holds for the total cut force K (d + zeta ddot)).
    # Left over: the integrator's O(h^2) error in the accelerations, hence in the inertia loads
    # (measured 0.036, 0.0087, 0.0020 N at h = 2, 1, 0.5 ms); the least-norm cut forces of the
    # rigid inverse dynamics, a wrong distribution, differ from these by newtons
    assert worst < 1e-2 * fmax
    # the drive torque is unique: equal to the rigid inverse dynamics'
    rig = rigid_inverse_dynamics(model, res.t[idx])
    np.testing.assert_allclose(res.drive_forces[idx, 0], rig.drive_forces[:, 0], atol=1e-4 * np.abs(rig.drive_forces).max())


def dh_chain(th, alpha1):
    """Joint-4 frame (origin, axes) of the chain ground -> links 1..3, Denavit–Hartenberg
    Rz(θ_i) Tx(a_i) Rx(α_i), written out here."""
    def rz(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])

    def rx(t):
        c, s = np.cos(t), np.sin(t)
        return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])

    x, R = np.zeros(3), np.eye(3)
    for t, a, al in zip(th, (A_LEN, B_LEN, A_LEN), (alpha1, BETA, alpha1)):
        Rl = R @ rz(t)
        x, R = x + a * Rl[:, 0], Rl @ rx(al)
    return x, R


def test_violated_linkage_locks_with_stiffness_times_misfit(runs):
    model, res = runs["violated"]
    f = cut_deformation(model, res) * K5(model)
    Kc = K5(model)
    alpha1 = ALPHA + VIOL["violation"]
    th1_0 = VIOL["theta1_0"]
    Kb = np.sin((BETA + ALPHA) / 2) / np.sin((BETA - ALPHA) / 2)
    th0 = np.array([th1_0, 2 * np.arctan(Kb / np.tan(th1_0 / 2)), -th1_0])  # start angles (Bennett's)
    x4, A = dh_chain(th0, alpha1)  # where the ground holds joint 4

    def misfit(th):
        x, R = dh_chain(th, alpha1)
        return np.concatenate([A.T @ (x - x4), (A.T @ np.cross(A[:, 2], R[:, 2]))[:2]])

    worst = 0.0
    fmax = 0.0
    q = np.zeros(2)
    for k in range(0, res.t.size, 25):
        th1 = th1_0 + res.coordinate("J1.q")[k]
        sol = least_squares(lambda y, th1=th1: np.sqrt(Kc) * misfit(np.array([th1, *(th0[1:] + y)])), q,
                            xtol=1e-14, ftol=1e-14)
        q = sol.x
        f_hand = Kc * misfit(np.array([th1, *(th0[1:] + q)]))
        worst = max(worst, np.abs(f[k] - f_hand).max())
        fmax = max(fmax, np.linalg.norm(f_hand[:3]))
        # the free joints sit where the cut's energy is least
        np.testing.assert_allclose([res.coordinate("J2.q")[k], res.coordinate("J3.q")[k]], q, atol=1e-3)
    assert fmax > 1e3  # locked: kilonewtons where the exact linkage needs newtons
    # what separates the sim from the pure misfit: the gravity and inertia loads, of the order of
    # the links' weight 3 m g = 29 N (measured 9.7 N of 63 kN)
    assert worst < 3 * VIOL["mass"] * VIOL["g"]
    # and the drive has to force it: its torque is far above the exact linkage's
    assert np.abs(res.drive_forces).max() > 100 * np.abs(runs["exact"][1].drive_forces).max()
