"""The URDF import's rigid dynamics against Pinocchio (issue 37): the UR5 and the Panda of
example-robot-data (cases/robots/) imported by flexmb.from_urdf and by Pinocchio's own URDF parser.

* inverse dynamics: every coordinate driven along a random smooth motion; flexmb's drive forces at 20
  output rows equal Pinocchio's rnea (plus the URDF joint damping, which flexmb imports as joint
  dampers and Pinocchio keeps in model.damping);
* forward dynamics: 20 random states (q, u) and random joint torques; the accelerations flexmb's
  integrator starts from (M̄ u̇ = Q, row 0 of a run) equal Pinocchio's aba; fixed and free-floating
  bases;
* the parts: the mass matrix (crba), gravity (computeGeneralizedGravity) and the velocity terms
  (nonLinearEffects − gravity) from flexmb's assembly at 20 random states.

All to 1e-10 relative to the largest entry of Pinocchio's vector (matrix) at that state. Measured
(2026-11-28, pin 4.1.0): inverse dynamics, mass matrix and gravity within 1.6e-15, velocity terms
6.8e-14, accelerations 1.5e-12 (the free Panda, whose 15 g fingers make M̄ ill-conditioned); link
frames within 1.4e-15 m. The robots: the UR5 and the Panda, fixed and free-floating, and a test robot
with every joint kind Pinocchio reads the same way (tests/data/urdf/every_joint_kind.urdf: turned
inertial frames, unnormalised axes, a continuous joint, a fixed joint between moving ones, a branch).
A free base: Pinocchio's free-flyer velocity is (Rᵀ ẋ, ω) in the base axes, flexmb's
(ẋ global, ω in the base axes), so u_pin = T u with T = diag(Rᵀ, I), the acceleration's
linear part Rᵀ ẍ − ω × Rᵀ ẋ, the forces τ_flexmb = Tᵀ τ_pin and M̄ = Tᵀ M_pin T.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio", reason="the test extra: pip install 'flexmb[test]'")
pytest.importorskip("yourdfpy")

from flexmb.engine.assembly import Assembler  # noqa: E402
from flexmb.engine.kinematics import TreePattern, forward_kinematics  # noqa: E402
from flexmb.errors import URDFWarning  # noqa: E402
from flexmb.importers.urdf import from_urdf  # noqa: E402
from flexmb.rotations import expm  # noqa: E402
from flexmb.solvers.simulate import simulate  # noqa: E402

ROBOTS = Path(__file__).resolve().parent.parent / "cases" / "robots"
URDF = {"ur5": ROBOTS / "ur5" / "ur5_robot.urdf", "panda": ROBOTS / "panda" / "panda.urdf",
        "every_joint_kind": Path(__file__).resolve().parent / "data" / "urdf" / "every_joint_kind.urdf"}
ROBOTS_FIXED = ["ur5", "panda", "every_joint_kind"]
ROBOTS_BASES = [(r, b) for r in ROBOTS_FIXED for b in ("fixed", "free")]
N_STATES = 20
RTOL = 1e-10


def build(robot: str, base: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)
        mb = from_urdf(URDF[robot], base=base, mimic=False)  # Pinocchio's model keeps mimic joints independent
    pm = (pin.buildModelFromUrdf(str(URDF[robot]), pin.JointModelFreeFlyer()) if base == "free"
          else pin.buildModelFromUrdf(str(URDF[robot])))
    return mb, pm


class Layout:
    """Where each of Pinocchio's velocity coordinates is in flexmb's state (by joint name: the two
    order their joints differently), and how Pinocchio writes a joint's position (a continuous joint:
    cos, sin)."""

    def __init__(self, mb, model, pm) -> None:
        self.free = mb.robot.base == "free"
        self.u = np.empty(pm.nv, dtype=int)  # flexmb velocity index of Pinocchio's velocity coordinate
        self.joints = []  # (Pinocchio q index, nq, flexmb u index) of the moving URDF joints
        for jid in range(1, pm.njoints):
            name, jm = pm.names[jid], pm.joints[jid]
            if name == "root_joint":
                coords = [f"root_joint.{c}" for c in ("t0", "t1", "t2", "wx", "wy", "wz")]
            else:
                coords = list(mb.robot.joints[name].coordinates)
                self.joints.append((jm.idx_q, jm.nq, model.coordinate_names.index(coords[0]), mb.robot.joints[name]))
            self.u[jm.idx_v:jm.idx_v + jm.nv] = [model.coordinate_names.index(c) for c in coords]
        assert sorted(self.u) == sorted(model.coordinate_names.index(c) for c in mb.robot.coordinates())


def random_state(layout: Layout, model, pm, rng):
    """A random flexmb state (q, u, u̇) and the same state in Pinocchio's coordinates (q, v, a) with
    T, u_pin = T u (see the module docstring)."""
    idx, n = layout.u, pm.nv
    st = model.initial_state()
    u, ud = rng.uniform(-2, 2, n), rng.uniform(-5, 5, n)
    st.u[idx], st.udot[idx] = u, ud
    q = pin.neutral(pm)
    for iq, nq, k, j in layout.joints:
        x = rng.uniform(j.lower, j.upper) if j.type == "prismatic" else rng.uniform(-np.pi, np.pi)
        st.q[model.u_to_q[k]] = x
        q[iq:iq + nq] = x if nq == 1 else (np.cos(x), np.sin(x))
    T = np.eye(n)
    v, a = u.copy(), ud.copy()
    if layout.free:
        p, R = rng.uniform(-1, 1, 3), expm(rng.uniform(-2, 2, 3))
        st.q[model.u_to_q[idx[:3]]] = p
        st.balls[0] = R
        q[:7] = np.concatenate([p, pin.Quaternion(R).coeffs()])
        v[:3] = R.T @ u[:3]
        a[:3] = R.T @ ud[:3] - np.cross(u[3:6], R.T @ u[:3])
        T[:3, :3] = R.T
    return st, idx, q, v, a, T


def rel(x: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(x - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("robot,base", ROBOTS_BASES)
def test_every_link_frame_is_where_pinocchio_puts_it(robot, base):
    """Origins, axes and fixed joints: each link's node pose at random coordinates equals the pose of
    Pinocchio's frame of that link (its fixed links are frames on their moving parent)."""
    mb, pm = build(robot, base)
    model = mb.compile()
    layout, data = Layout(mb, model, pm), pm.createData()
    rng = np.random.default_rng(36)
    worst = 0.0
    for _ in range(N_STATES):
        st, _, q, _, _, _ = random_state(layout, model, pm, rng)
        kin = forward_kinematics(model, st, TreePattern(model))
        pin.framesForwardKinematics(pm, data, q)
        for link in mb.robot.links:
            oMf = data.oMf[pm.getFrameId(link, pin.FrameType.BODY)]
            i = model.node_index(link)
            worst = max(worst, np.abs(kin.x[i] + model.origin - oMf.translation).max(),
                        np.abs(kin.R[i] - oMf.rotation).max())
    assert worst <= 1e-14, worst  # metres and rotation-matrix entries, for robots about 1 m large


@pytest.mark.parametrize("robot", ROBOTS_FIXED)
def test_drive_forces_equal_rnea_along_a_random_motion(robot):
    mb, pm = build(robot, "fixed")
    rng = np.random.default_rng(37)
    traj = {}  # coordinate -> (c, A, w, phi): q = c + A sin(w t + phi), positions, speeds, accelerations all over
    for name in mb.robot.coordinates():
        j = mb.robot.joints[name[:-2]]
        c, A = ((0.5 * (j.lower + j.upper), 0.5 * (j.upper - j.lower)) if j.type == "prismatic"
                else (rng.uniform(-1, 1), rng.uniform(1.0, 2.5)))
        c, A, w, f = traj[name] = (c, A, rng.uniform(1.0, 3.0), rng.uniform(0, 2 * np.pi))
        mb.add_drive(j.name, lambda t, c=c, A=A, w=w, f=f: c + A * np.sin(w * t + f),
                     lambda t, A=A, w=w, f=f: A * w * np.cos(w * t + f),
                     lambda t, A=A, w=w, f=f: -A * w * w * np.sin(w * t + f))
    model = mb.compile()
    layout, data = Layout(mb, model, pm), pm.createData()
    res = simulate(model, t_end=(N_STATES - 1) * 0.1, dt=0.1)
    assert res.status == "finished" and len(res.t) == N_STATES
    driven = [model.coordinate_names[k] for k in model.driven]
    names = [model.coordinate_names[k] for k in layout.u]  # in Pinocchio's order
    worst = 0.0
    for i, t in enumerate(res.t):
        x = np.array([traj[n][0] + traj[n][1] * np.sin(traj[n][2] * t + traj[n][3]) for n in names])
        v = np.array([traj[n][1] * traj[n][2] * np.cos(traj[n][2] * t + traj[n][3]) for n in names])
        a = np.array([-traj[n][1] * traj[n][2] ** 2 * np.sin(traj[n][2] * t + traj[n][3]) for n in names])
        assert np.allclose(res.q[i, model.u_to_q[layout.u]], x, rtol=0, atol=1e-14)  # the drives' state
        q = pin.neutral(pm)
        for iq, nq, k, _ in layout.joints:
            xk = x[list(layout.u).index(k)]
            q[iq:iq + nq] = xk if nq == 1 else (np.cos(xk), np.sin(xk))
        tau = pin.rnea(pm, data, q, v, a) + pm.damping * v
        worst = max(worst, rel(res.drive_forces[i, [driven.index(n) for n in names]], tau))
    assert worst <= RTOL, worst


@pytest.mark.parametrize("robot,base", ROBOTS_BASES)
def test_initial_accelerations_equal_aba(robot, base):
    mb, pm = build(robot, base)
    torque = {}  # the joint torques of the current state by coordinate, read by the joint forces' functions
    for j in mb.robot.joints.values():
        for c in j.coordinates:
            torque[c] = 0.0
            mb.add_joint_force(j.name, lambda t, c=c: torque[c])
    model = mb.compile()
    data, layout = pm.createData(), Layout(mb, model, pm)
    names = [model.coordinate_names[k] for k in layout.u]  # in Pinocchio's order
    rng = np.random.default_rng(38)
    worst = 0.0
    for _ in range(N_STATES):
        st, idx, q, v, _, T = random_state(layout, model, pm, rng)
        tau = np.where([n.startswith("root_joint.") for n in names], 0.0, rng.uniform(-50, 50, pm.nv))  # base: none
        torque.update(zip(names, tau))
        res = simulate(model, t_end=1e-4, dt=1e-4, state=st)
        assert res.status == "finished"
        a_pin = pin.aba(pm, data, q, v, tau - pm.damping * v)
        udot = res.udot[0, idx]
        if layout.free:  # the base's linear acceleration: Pinocchio's d/dt(Rᵀ ẋ) from flexmb's ẍ
            R, u = st.balls[0], st.u[idx]
            udot[:3] = R.T @ udot[:3] - np.cross(u[3:6], R.T @ u[:3])
        worst = max(worst, rel(udot, a_pin))
    assert worst <= RTOL, worst


@pytest.mark.parametrize("robot,base", ROBOTS_BASES)
def test_mass_matrix_gravity_and_velocity_terms_equal_pinocchio(robot, base):
    mb, pm = build(robot, base)
    model = mb.compile()
    asm, data, layout = Assembler(model), pm.createData(), Layout(mb, model, pm)
    rng = np.random.default_rng(39)
    worst = {"inverse dynamics": 0.0, "mass matrix": 0.0, "gravity": 0.0, "velocity terms": 0.0}
    for _ in range(N_STATES):
        st, idx, q, v, a, T = random_state(layout, model, pm, rng)
        ev = asm.evaluate(st)
        tau = T.T @ (pin.rnea(pm, data, q, v, a) + pm.damping * v)
        worst["inverse dynamics"] = max(worst["inverse dynamics"], rel(ev.residual(st.udot)[idx], tau))
        M = T.T @ _sym(pin.crba(pm, data, q)) @ T
        worst["mass matrix"] = max(worst["mass matrix"], rel(asm.mbar(ev).toarray()[np.ix_(idx, idx)], M))
        g = T.T @ pin.computeGeneralizedGravity(pm, data, q)
        rest = st.copy()
        rest.u[:] = 0.0
        worst["gravity"] = max(worst["gravity"], rel(asm.evaluate(rest).residual(np.zeros(model.n_u))[idx], g))
        # velocity terms in flexmb's coordinates (u̇ = 0): Tᵀ(C v + D v + M_pin Ṫ u), Ṫ u = (−ω × Rᵀẋ, 0) of the base
        Tdu = np.zeros(pm.nv)
        if base == "free":
            Tdu[:3] = -np.cross(v[3:6], v[:3])
        c = T.T @ (pin.nonLinearEffects(pm, data, q, v) - pin.computeGeneralizedGravity(pm, data, q)
                   + _sym(pin.crba(pm, data, q)) @ Tdu + pm.damping * v)
        weightless = st.copy()
        weightless.udot[:] = 0.0
        r = asm.evaluate(weightless).residual(weightless.udot)[idx] - g
        worst["velocity terms"] = max(worst["velocity terms"], rel(r, c))
    assert max(worst.values()) <= RTOL, worst


def _sym(M: np.ndarray) -> np.ndarray:
    return np.triu(M) + np.triu(M, 1).T
