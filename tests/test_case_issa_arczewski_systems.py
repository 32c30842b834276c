"""Issa & Arczewski: path matrices, the velocity-transformation matrix and joint constraints
for the grounded system of Fig. 1/3 and the floating system of Fig. 2/4.

Grounded system (Fig. 1, 3): bodies 1..4, joints R1 (ground -> 1), R2 (1 -> 2), P3 (2 -> 3),
R5 (3 -> 4). Basic points 1..6: points 1, 2, 4, 5 are the reference points of bodies 1, 2, 3, 4
(flexmb nodes), R1 sits at point 1, R2 at point 2, the prismatic guide of P3 starts at point 3 on
body 2 and runs along u3 to point 4, R5 sits at point 5 on body 3, point 6 is the tip of body 4.

Floating system (Fig. 2, 4): bodies 1..5, body 1 floating (an explicit free joint F1 from
ground), R2 (1 -> 2) at point 2, R3 (2 -> 3) at point 3, P4 (3 -> 4) along u4 from point 4 to
point 5 (body 4's reference point; point 6 is on body 4), R7 (1 -> 5) at point 7, point 8 on body 5.

The geometry is genuinely spatial: no two joint axes are parallel and the node frames are
rotated arbitrarily. Nodes and joints are declared in the paper's order, so flexmb's path
matrices must be the printed pi_1, pi_1*, pi_2, pi_2*.

B (6N x n_u) is checked three ways: its block pattern is that of eqs. (4.9)/(4.13) (block (i, j)
nonzero exactly where pi*[i, j] < 0); its blocks are the Table 1 blocks written for node twists;
and it is the derivative of the node poses with respect to the generalized coordinates (central
finite differences). Then a dynamic run is checked against the joints' constraint equations,
evaluated from the node poses alone, and the case (cases/issa_arczewski_systems.py, which holds
the builders used here) is run shortened: its printed π, π* must be the paper's and its run must
keep the joints and the energy.
"""

import re

import numpy as np
import pytest
from conftest import load_case

from flexmb.engine.assembly import Assembler
from flexmb.rotations import logm
from flexmb.solvers.simulate import simulate

# the systems are built by the case (cases/issa_arczewski_systems.py); the references below
# are typed from the paper, independently of it
ia = load_case("issa_arczewski_systems")
System, grounded_system, floating_system = ia.System, ia.grounded_system, ia.floating_system

PI1 = np.array([[-1, 1, 0, 0], [0, -1, 1, 0], [0, 0, -1, 1], [0, 0, 0, -1]])
PI1_STAR = np.array([[-1, 0, 0, 0], [-2, -1, 0, 0], [-3, -2, -1, 0], [-4, -3, -2, -1]])
PI2 = np.array([[-1, 1, 0, 0, 1], [0, -1, 1, 0, 0], [0, 0, -1, 1, 0], [0, 0, 0, -1, 0], [0, 0, 0, 0, -1]])
PI2_STAR = np.array([[-1, 0, 0, 0, 0], [-2, -1, 0, 0, 0], [-3, -2, -1, 0, 0], [-4, -3, -2, -1, 0], [-2, 0, 0, 0, -1]])


SYSTEMS = {"grounded": (grounded_system, PI1, PI1_STAR), "floating": (floating_system, PI2, PI2_STAR)}


# ---------------------------------------------------------------------------- path matrices
@pytest.mark.parametrize("which", SYSTEMS)
def test_path_matrices_are_the_printed_ones(which):
    build, pi, pi_star = SYSTEMS[which]
    s = build()
    m = s.model
    # paper order: rows = bodies 1..N, columns = joints in the order of Fig. 1 / Fig. 2
    assert m.node_names == tuple(s.X0)
    assert m.joint_names == tuple(j["name"] for j in s.joints)
    assert m.auto_free_nodes == ()
    np.testing.assert_array_equal(m.path_matrix(), pi)
    np.testing.assert_array_equal(m.secondary_path_matrix(), pi_star)


# ---------------------------------------------------------------------------- B: pattern and blocks
def evaluate(s: System, state=None):
    asm = Assembler(s.model)
    ev = asm.evaluate(s.model.initial_state() if state is None else state)
    return ev, ev.B.toarray()


def block(B, m, i, j):
    s0, n = int(m.joint_u_start[j]), m.joint_kinds[j].n_u
    return B[6 * i:6 * i + 6, s0:s0 + n]


@pytest.mark.parametrize("which", SYSTEMS)
def test_B_block_pattern_is_that_of_eq_4_9_and_4_13(which):
    """Block (node i, joint j) of B is nonzero exactly where pi*[i, j] < 0.

    Eqs. (4.9)/(4.13) are written for node twists here: rows (v_i, w_i) of node i. A prismatic
    column only translates its subtree, so its angular rows are zero (Table 1: [u_j; 0]), while
    its linear rows are the axis u_j. Likewise the three translation columns of the floating block
    [I, -D_i1; 0, -U_1] have zero angular rows. Every revolute and floating-rotation column has
    nonzero angular rows.
    """
    build, _, pi_star = SYSTEMS[which]
    s = build()
    m = s.model
    _, B = evaluate(s)
    assert B.shape == (6 * m.n_nodes, m.n_u)
    for i in range(m.n_nodes):
        for j in range(m.n_joints):
            blk = block(B, m, i, j)
            if pi_star[i, j] == 0:
                assert np.all(blk == 0.0), (i, j, blk)
                continue
            # nonzero: every column of the block (each coordinate of joint j) moves node i
            assert np.all(np.linalg.norm(blk, axis=0) > 1e-3), (i, j, blk)
            kind = m.joint_kinds[j].name
            if kind == "prismatic":
                assert np.all(blk[3:] == 0.0)
                assert np.linalg.norm(blk[:3]) == pytest.approx(1.0, abs=1e-14)
            elif kind == "free":  # Table 1 floating block [I, -D_i1; 0, -U_1]: translations do not turn
                assert np.all(blk[3:, :3] == 0.0)
                assert np.all(np.linalg.norm(blk[3:, 3:], axis=0) > 0.5)
            else:
                assert np.all(np.linalg.norm(blk[3:], axis=0) > 0.5)


def current_joint_geometry(s: System, x, R, jn):
    """Joint point and axis now, carried by the parent node from the assembly configuration."""
    jd = s.joints[jn]
    if jd["parent"] == "ground":
        xp, Rp, xp0, Rp0 = np.zeros(3), np.eye(3), np.zeros(3), np.eye(3)
    else:
        ip = s.model.node_index(jd["parent"])
        xp, Rp, xp0, Rp0 = x[ip], R[ip], s.X0[jd["parent"]], s.R0[jd["parent"]]
    P0 = jd["point"] if jd["point"] is not None else s.X0[jd["child"]]
    P = xp + Rp @ (Rp0.T @ (P0 - xp0))
    a = None if jd["axis"] is None else Rp @ (Rp0.T @ jd["axis"])
    return P, a


def skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


@pytest.mark.parametrize("which", SYSTEMS)
def test_B_blocks_are_table_1_blocks(which):
    """Table 1 in twist form, with d_ij = r_i - r_j from joint j's point to node i and D_ij = [d_ij]x:
    revolute [-D_ij u_j; u_j], prismatic [u_j; 0], floating [I, -D_i1 R_1; 0, R_1] (free-joint
    translations along the global axes, ball rates = body-1 angular velocity in body-1 axes)."""
    build, _, pi_star = SYSTEMS[which]
    s = build()
    m = s.model
    ev, B = evaluate(s)
    x, R = ev.kin.x, ev.kin.R
    worst = 0.0
    for j, jd in enumerate(s.joints):
        assert m.joint_names[j] == jd["name"]
        P, a = current_joint_geometry(s, x, R, j)
        if jd["kind"] == "free":  # the ball turns about the floating body's node, which translates
            P = x[m.node_index(jd["child"])]
        for i in np.flatnonzero(pi_star[:, j] < 0):
            D = skew(x[i] - P)
            if jd["kind"] == "revolute":
                ref = np.concatenate([-D @ a, a])[:, None]
            elif jd["kind"] == "prismatic":
                ref = np.concatenate([a, np.zeros(3)])[:, None]
            else:  # free: node 1 is its own joint point (d_11 = 0)
                R1 = R[m.node_index(jd["child"])]
                ref = np.block([[np.eye(3), -D @ R1], [np.zeros((3, 3)), R1]])
            worst = max(worst, np.abs(block(B, m, i, j) - ref).max())
    assert worst <= 1e-12


def node_poses(s: System, state):
    ev = Assembler(s.model).evaluate(state)
    return ev.kin.x.copy(), ev.kin.R.copy()


@pytest.mark.parametrize("which", SYSTEMS)
def test_B_is_derivative_of_node_poses(which):
    """Column k of B = d(node poses)/dq_k: linear rows against (x(+) - x(-)) / 2 eps, angular rows
    against the global rotation vector from R(-) to R(+), R(-) logm(R(-)^T R(+)) / 2 eps (logm gives
    it in node axes; R(-) maps it to global). Ball coordinates are perturbed on SO(3) through
    State.retract, i.e. R_ball expm(eps e_k), the same right-trivialized increment as their rates.

    Error budget: central-difference truncation ~ eps^2 = 1e-10 and round-off ~ 1e-16 / eps = 1e-11
    relative, so 1e-6 leaves a wide margin while a wrong column is off by O(1)."""
    build, _, _ = SYSTEMS[which]
    s = build()
    m = s.model
    st = m.initial_state()
    _, B = evaluate(s, st)
    eps = 1e-5
    fd = np.zeros_like(B)
    for k in range(m.n_u):
        dq = np.zeros(m.n_u)
        dq[k] = eps
        xp, Rp = node_poses(s, st.retract(m, dq))
        xm, Rm = node_poses(s, st.retract(m, -dq))
        lin = (xp - xm) / (2 * eps)
        ang = np.einsum("nij,nj->ni", Rm, logm(np.swapaxes(Rm, 1, 2) @ Rp)) / (2 * eps)
        fd[:, k] = np.concatenate([lin, ang], axis=1).ravel()
    assert np.abs(fd - B).max() <= 1e-6 * np.abs(B).max()


# ---------------------------------------------------------------------------- dynamics: constraints
def body_vectors(s: System, jd):
    """Joint point and axis as body-fixed vectors of parent and child (assembly configuration)."""
    P0 = jd["point"] if jd["point"] is not None else s.X0[jd["child"]]
    out = {}
    for side in ("parent", "child"):
        nm = jd[side]
        if nm == "ground":
            x0, R0 = np.zeros(3), np.eye(3)
        else:
            x0, R0 = s.X0[nm], s.R0[nm]
        out[side] = (R0.T @ (P0 - x0), None if jd["axis"] is None else R0.T @ jd["axis"], R0)
    return out


def pose_series(s: System, res, nm):
    nt = res.t.size
    if nm == "ground":
        return np.zeros((nt, 3)), np.broadcast_to(np.eye(3), (nt, 3, 3))
    i = s.model.node_index(nm)
    return res.x[:, i], res.R[:, i]


@pytest.mark.parametrize("which", SYSTEMS)
def test_simulation_keeps_joint_constraints(which):
    """0.5 s under gravity from nonzero coordinates and rates; every recorded pose satisfies the
    joints' constraint equations, evaluated from the node poses with body-fixed vectors taken in
    the assembly configuration (nothing from flexmb's joint kinematics):

    revolute:  x_p + R_p s_p = x_c + R_c s_c  and  R_p a_p = R_c a_c;
    prismatic: R_p^T R_c = R_p0^T R_c0 (no relative rotation) and the joint-point separation
               (x_c + R_c s_c) - (x_p + R_p s_p) is parallel to R_p a_p.

    Joint coordinates satisfy these identically, so the only violation is floating-point round-off
    in composing poses along the tree (~1e-15 per operation with O(1) lengths); 1e-9 is therefore a
    pure round-off bound, far below any genuine drift.
    """
    build, _, _ = SYSTEMS[which]
    s = build()
    res = simulate(s.model, t_end=0.5, dt=1e-3)
    assert res.status == "finished"
    assert res.t[-1] == pytest.approx(0.5)
    assert res.t.size == 501
    # the mechanism really moved: every coordinate changed noticeably
    assert np.all(np.abs(res.q[-1] - res.q[0]) > 1e-2)
    tol = 1e-9
    slide = []
    for jd in s.joints:
        if jd["kind"] == "free":
            continue
        bv = body_vectors(s, jd)
        sp, ap, Rp0 = bv["parent"]
        sc, ac, Rc0 = bv["child"]
        xp, Rp = pose_series(s, res, jd["parent"])
        xc, Rc = pose_series(s, res, jd["child"])
        Pp = xp + np.einsum("tij,j->ti", Rp, sp)
        Pc = xc + np.einsum("tij,j->ti", Rc, sc)
        axp = np.einsum("tij,j->ti", Rp, ap)
        axc = np.einsum("tij,j->ti", Rc, ac)
        if jd["kind"] == "revolute":
            assert np.abs(Pp - Pc).max() <= tol, jd["name"]
            assert np.abs(axp - axc).max() <= tol, jd["name"]
        else:
            rel = np.swapaxes(Rp, 1, 2) @ Rc
            assert np.abs(rel - Rp0.T @ Rc0).max() <= tol, jd["name"]
            d = Pc - Pp
            perp = d - np.einsum("ti,ti->t", d, axp)[:, None] * axp
            assert np.abs(perp).max() <= tol, jd["name"]
            slide.append(np.abs(d).max())
    assert slide and max(slide) > 1e-2  # the prismatic joint actually slid


# ---------------------------------------------------------------------------- the case, shortened
def parse_matrix(text: str) -> np.ndarray:
    """Rows of integers from the case's printed '[[a b] [c d]]'."""
    rows = re.findall(r"\[([-\d ]+)\]", text)
    return np.array([[int(v) for v in r.split()] for r in rows])


@pytest.mark.parametrize("which", SYSTEMS)
def test_case_prints_the_papers_path_matrices_and_keeps_the_joints(which, tmp_path):
    _, pi, pi_star = SYSTEMS[which]
    p = {**ia.DEFAULTS, "system": which, "t_end": 0.3}
    model = ia.build(**p)
    res = simulate(model, p["t_end"], p["dt"], rho_inf=p["rho_inf"])
    assert res.status == "finished"
    s = ia.postprocess(res, model, p, tmp_path)
    label = "1" if which == "grounded" else "2"
    np.testing.assert_array_equal(parse_matrix(s[f"pi_{label}"]), pi)
    np.testing.assert_array_equal(parse_matrix(s[f"pi_{label}*"]), pi_star)
    assert s["path_matrices_equal_paper"] is True
    assert (tmp_path / "path_matrices.txt").read_text().count("pi_") == 2
    # joint constraints from node poses: round-off only (see test_simulation_keeps_joint_constraints)
    assert s["joint_constraint_violation_max"] < 1e-9
    # no dissipation (rho_inf = 1, no dampers): energy kept to the step's O(h^2) error
    assert s["kinetic_energy_max_J"] > 1.0
    assert s["energy_drift_J"] < 1e-4 * s["kinetic_energy_max_J"]
    for f in ("joint_coordinates.png", "energy.png"):
        assert (tmp_path / f).stat().st_size > 1000
