"""A UR5 with a flexible upper arm on a point-to-point move.

The UR5 of example-robot-data (cases/robots/ur5/ur5_robot.urdf) imported by flexmb.from_urdf, its
upper arm made a beam by flexmb.make_flexible: an aluminium tube of 90 mm outside diameter (the
collision mesh of the upper arm is 100 mm across; the wall, 4 mm by default, is a choice: the URDF
does not say) from the shoulder joint along the link's axis to the elbow's height, 0.425 m; the elbow
hangs on its end 0.12 m aside, as on the robot. The link's 8.393 kg, centre of mass and inertia are
kept (the tube carries 1.24 kg, the rest sits on its ends). A 5 kg payload (the UR5's rated one) sits
on the tool flange. All six joints are driven along one rest-to-rest quintic from ``q_start`` to
``q_end`` in ``T_move`` seconds, then held. The tube has stiffness-proportional damping ``alpha``
(2 % of critical at the first mode; the summary gives it). The arm starts in its static equilibrium
under gravity (solved by flexmb.solvers.statics, given to the beam's nodes as the initial coordinates
of their free joints), so every vibration is the move's.

The summary: the joint torques of the flexible arm against the rigid UR5's on the same motion (the
rigid twin, built from the same URDF); the tool flange's deflection (flexible minus rigid position)
during the move; the residual vibration after the stop (its amplitude about the final static
deflection, its frequency from the zero crossings, its damping ratio from the decay of its peaks);
the first natural frequency of the arm at the final pose (flexmb.solvers.modal, joints held) against
the beam's own estimate: an Euler–Bernoulli cantilever (the tube clamped at the shoulder) carrying
the rest of the arm as a rigid body at its tip, 6 tip coordinates, K φ = ω² M φ with the tube's
consistent tip mass added.

Run:  flexmb run cases/flexible_arm.py [--param wall=0.002] [--param payload=0.0]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

import flexmb as fm
from flexmb.errors import URDFWarning

URDF = Path(__file__).resolve().parent / "robots" / "ur5" / "ur5_robot.urdf"
JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint", "wrist_3_joint")
TIP = "tool0"

DEFAULTS = dict(
    D=0.09, wall=0.004, E=70e9, G=26e9, rho=2700.0,  # the upper arm's tube: aluminium
    n_elements=4, alpha=2e-4, payload=5.0, flexible=True, shapes=True, animation=True,
    q_start=[0.0, -2.0, 1.6, -1.2, -1.5708, 0.0], q_end=[1.6, -1.0, 0.6, -1.2, -1.5708, 0.8], T_move=0.6,
    t_end=1.0, dt=2.5e-4, rho_inf=0.9,
)


def tube(p: dict) -> fm.BeamSection:
    """The upper arm's section: a tube of outside diameter D and wall thickness ``wall``."""
    ro, ri = p["D"] / 2, p["D"] / 2 - p["wall"]
    A, I = np.pi * (ro**2 - ri**2), np.pi / 4 * (ro**4 - ri**4)
    return fm.BeamSection(E=p["E"], G=p["G"], A=A, Iy=I, Iz=I, J=2 * I, rho=p["rho"])


def quintic(q0: float, q1: float, T: float):
    """Rest-to-rest move from q0 to q1 in T (s(τ) = 10τ³ − 15τ⁴ + 6τ⁵), then held: q, q', q''."""
    d = q1 - q0

    def tau(t):
        return min(max(t / T, 0.0), 1.0)

    def q(t):
        s = tau(t)
        return q0 + d * s**3 * (10 - 15 * s + 6 * s * s)

    def v(t):
        s = tau(t)
        return d * 30 * s * s * (1 - s) ** 2 / T if 0 < t < T else 0.0

    def a(t):
        s = tau(t)
        return d * 60 * s * (1 - s) * (1 - 2 * s) / T**2 if 0 < t < T else 0.0

    return q, v, a


def arm_builder(p: dict, held: dict | None = None) -> fm.ModelBuilder:
    """The UR5 builder: flexible upper arm (if ``flexible``), payload, drives. ``held``: initial
    coordinates (translation, rotation vector) of the beam's free nodes, given as explicit free
    joints ``<node>:free`` (the static start, :func:`build`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", URDFWarning)  # visuals, collisions, transmissions, gazebo: named in the docstring
        mb = fm.from_urdf(URDF, shapes="collision" if p["shapes"] else None)  # the meshes in cases/robots/ur5/meshes
    if p["flexible"]:
        mb.make_flexible("upper_arm_link", p["n_elements"], tube(p), end=(0, 0, 0.425), damping=p["alpha"])
        for node, q0 in (held or {}).items():
            mb.add_joint(f"{node}:free", "free", "ground", node, q0=q0)
    if p["payload"] > 0:
        r = 0.04  # a 5 kg steel cylinder-like mass 50 mm beyond the flange, on its axis
        mb.add_body("payload", TIP, p["payload"], (0, 0, 0.05), np.diag([1, 1, 0.5]) * p["payload"] * r * r / 2)
    for j, a, b in zip(JOINTS, p["q_start"], p["q_end"]):
        mb.add_drive(j, *quintic(a, b, p["T_move"]))
    return mb


def static_start(model: fm.Model) -> dict[str, np.ndarray]:
    """The beam's free nodes in the arm's static equilibrium at t = 0 (drives held): the initial
    coordinates (translation, rotation vector) of their free joints, by node."""
    from flexmb.rotations import logm
    from flexmb.solvers.initial import relaxed_start
    from flexmb.solvers.statics import static_equilibrium

    st = static_equilibrium(model, state=relaxed_start(model)[0]).state  # from the unstrained start
    out = {}
    for node in model.auto_free_nodes:
        k = model.joint_index(f"{node}:free")
        u0 = int(model.joint_u_start[k])
        out[node] = np.concatenate([st.q[model.u_to_q[u0:u0 + 3]], logm(st.balls[model.joint_ball[k]])])
    return out


def build(**params) -> fm.Model:
    """The UR5 (flexible upper arm unless ``flexible=False``), started in its static equilibrium."""
    p = {**DEFAULTS, **params}
    model = arm_builder(p).compile()
    if not p["flexible"]:
        return model
    return arm_builder(p, static_start(model)).compile()


def state_at(model: fm.Model, result, i: int):
    """The state of row ``i`` of ``result`` (the rows hold q and the node rotations, from which the
    free joints' balls follow: R = R0 ball for a free joint on ground)."""
    st = model.initial_state()
    st.t, st.q, st.u = float(result.t[i]), result.q[i, ~model.u_is_ball].copy(), result.u[i].copy()
    for k in np.flatnonzero(model.joint_ball >= 0):
        c = int(model.joint_child[k])
        st.balls[model.joint_ball[k]] = model.R0[c].T @ result.R[i, c]
    return st


def _kinematics(model: fm.Model, state):
    from flexmb.engine.kinematics import TreePattern, forward_kinematics

    kin = forward_kinematics(model, state, TreePattern(model))
    return kin.x + model.origin, kin.R


def _distal_nodes(model: fm.Model, p: dict) -> list[int]:
    """The nodes the tube carries at its tip: its last node and the links beyond the elbow (by the
    URDF's tree: flexmb's tree may hang the tip node on the forearm, whose group's root it is)."""
    robot = arm_builder({**p, "flexible": False, "payload": 0.0, "shapes": False}).robot
    links, stack = [], ["upper_arm_link"]
    while stack:
        parent = stack.pop()
        for j in robot.joints.values():
            if j.parent == parent:
                links.append(j.child)
                stack.append(j.child)
    return [model.node_index(n) for n in links + [f"upper_arm_link.{p['n_elements']}"]]


def cantilever_estimate(model: fm.Model, state, p: dict) -> float:
    """First natural frequency [Hz] of the tube as an Euler–Bernoulli cantilever clamped at the
    shoulder, with the rest of the arm (the bodies on its tip node and beyond: end body, forearm,
    wrists, payload) a rigid body on its tip: K φ = ω² (M_body + M_tube) φ on the tip's three
    displacements and three rotations in the tube's section axes; K the cantilever's tip stiffness,
    M_tube the tip block of the tube's consistent mass (one element), M_body the rigid body's spatial
    inertia about the tip."""
    import scipy.linalg as sla

    sec, L = tube(p), 0.425
    x, R = _kinematics(model, state)
    tip = model.node_index(f"upper_arm_link.{p['n_elements']}")
    T = R[tip]  # the tip node's axes are the tube's section axes (e1 along the tube)
    bodies = model.elements["body"]
    M = np.zeros((6, 6))
    for k in np.flatnonzero(np.isin(bodies.node, _distal_nodes(model, p))):
        n = int(bodies.node[k])
        r = T.T @ (x[n] + R[n] @ bodies.com[k] - x[tip])  # centre of mass from the tip, section axes
        Rl = T.T @ R[n]
        rx = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
        m = bodies.mass[k]
        M += np.block([[m * np.eye(3), -m * rx], [m * rx, Rl @ bodies.inertia[k] @ Rl.T - m * rx @ rx]])
    EI, mt = sec.E * sec.Iy, sec.rho * sec.A * L
    K = np.zeros((6, 6))
    K[0, 0], K[3, 3] = sec.E * sec.A / L, sec.G * sec.J / L
    for v, th, s in ((1, 5, -1.0), (2, 4, 1.0)):  # (v, θz) and (w, θy) of the tip, signs of the right-hand axes
        K[v, v], K[th, th], K[v, th] = 12 * EI / L**3, 4 * EI / L, s * 6 * EI / L**2
        K[th, v] = K[v, th]
        M[v, v] += 156 * mt / 420
        M[th, th] += 4 * mt * L**2 / 420 + sec.rho * sec.Iy * L * 4 / 30
        M[v, th] += s * 22 * mt * L / 420
        M[th, v] = M[v, th]
    M[0, 0] += mt / 3
    M[3, 3] += sec.rho * (sec.Iy + sec.Iz) * L / 3
    w2 = sla.eigh(K, M, eigvals_only=True)
    return float(np.sqrt(w2.min()) / (2 * np.pi))


def _crossing_frequency(t: np.ndarray, y: np.ndarray) -> float:
    """Frequency [Hz] from the zero crossings of ``y`` (NaN with fewer than three)."""
    i = np.flatnonzero(np.sign(y[:-1]) * np.sign(y[1:]) < 0)
    if i.size < 3:
        return float("nan")
    tc = t[i] - y[i] * (t[i + 1] - t[i]) / (y[i + 1] - y[i])
    return float((tc.size - 1) / 2 / (tc[-1] - tc[0]))


def _decay_ratio(t: np.ndarray, y: np.ndarray, f: float) -> float:
    """Damping ratio of a ringing ``y`` of frequency ``f``: the slope of log |peaks| over time (a
    least-squares fit) divided by 2π f (NaN with fewer than four peaks)."""
    i = 1 + np.flatnonzero((np.abs(y[1:-1]) > np.abs(y[:-2])) & (np.abs(y[1:-1]) >= np.abs(y[2:])))
    if i.size < 4:
        return float("nan")
    slope = np.polyfit(t[i], np.log(np.abs(y[i])), 1)[0]
    return float(-slope / (2 * np.pi * f))


def postprocess(result, model: fm.Model, params: dict, out_dir: Path) -> dict:
    """Rigid twin, torques, tip deflection, residual vibration, natural frequency; plots."""
    from flexmb.results.plots import plt
    from flexmb.solvers.modal import natural_frequencies
    from flexmb.solvers.simulate import simulate
    from flexmb.solvers.statics import static_equilibrium

    p = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not p["flexible"]:
        return {"max_torque_Nm": {j: float(np.abs(result.drive_force(f"{j}.q")).max()) for j in JOINTS}}
    rigid = build(**{**p, "flexible": False})
    twin = simulate(rigid, p["t_end"], p["dt"], output_every=1)  # all joints driven: inverse dynamics only
    keep = np.isin(np.round(twin.t / p["dt"]), np.round(result.t / p["dt"]))
    t = result.t
    tau_f = np.stack([result.drive_force(f"{j}.q") for j in JOINTS], 1)
    tau_r = np.stack([twin.drive_force(f"{j}.q") for j in JOINTS], 1)[keep]
    tip = result.node_position(TIP) + model.origin
    tip_r = twin.node_position(TIP)[keep] + rigid.origin
    d = tip - tip_r
    end = static_equilibrium(model, t=p["t_end"], state=state_at(model, result, len(t) - 1))
    x_end, _ = _kinematics(model, end.state)
    d_static = x_end[model.node_index(TIP)] - tip_r[-1]
    after = t >= p["T_move"]
    resid = d[after] - d_static
    u, s, vt = np.linalg.svd(resid - resid.mean(0), full_matrices=False)
    f_resid = _crossing_frequency(t[after], resid @ vt[0])
    zeta_resid = _decay_ratio(t[after], resid @ vt[0], f_resid)
    f_modal = natural_frequencies(model, end.state, n_modes=3)[0]
    f_est = cantilever_estimate(model, end.state, p)
    late = t >= t[-1] - 0.1
    fig, axs = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for k, j in enumerate(JOINTS[:3]):
        axs[0].plot(t, tau_r[:, k], "--", color=f"C{k}", label=f"{j} rigid")
        axs[0].plot(t, tau_f[:, k], color=f"C{k}", lw=0.8, label=f"{j} flexible")
    axs[0].set_ylabel("joint torque [N m]")
    axs[0].legend(fontsize=7)
    axs[1].plot(t, 1e3 * np.linalg.norm(d, axis=1))
    axs[1].set_ylabel("|tool flange deflection| [mm]")
    axs[2].plot(t[after], 1e3 * (resid @ vt[0]))
    axs[2].set_ylabel("residual vibration [mm]")
    axs[2].set_xlabel("t [s]")
    for ax in axs:
        ax.grid(True, alpha=0.3)
        ax.axvline(p["T_move"], color="k", lw=0.5)
    axs[0].set_title("UR5 with a flexible upper arm: point-to-point move")
    fig.tight_layout()
    fig.savefig(out_dir / "flexible_arm.png", dpi=120)
    plt.close(fig)
    if p["animation"]:  # the robot's shapes in 3-D (the URDF's collision meshes; the upper arm's follows the beam)
        from flexmb.results.animation import animate

        animate(result, out_dir / "animation.gif", view="3d", overwrite=True)
    return {
        "upper_arm_tube": f"aluminium, D = {p['D'] * 1e3:.0f} mm, wall {p['wall'] * 1e3:.1f} mm, {p['n_elements']} elements",
        "max_torque_rigid_Nm": {j: float(np.abs(tau_r[:, k]).max()) for k, j in enumerate(JOINTS)},
        "max_torque_flexible_Nm": {j: float(np.abs(tau_f[:, k]).max()) for k, j in enumerate(JOINTS)},
        "max_torque_difference_Nm": {j: float(np.abs(tau_f[:, k] - tau_r[:, k]).max()) for k, j in enumerate(JOINTS)},
        "tip_static_deflection_start_mm": float(1e3 * np.linalg.norm(d[0])),
        "tip_static_deflection_end_mm": float(1e3 * np.linalg.norm(d_static)),
        "tip_max_deflection_during_move_mm": float(1e3 * np.linalg.norm(d[~after], axis=1).max()),
        "residual_vibration_amplitude_after_stop_mm": float(1e3 * np.linalg.norm(resid, axis=1).max()),
        "residual_vibration_amplitude_last_100ms_mm": float(1e3 * np.linalg.norm(resid[late[after]], axis=1).max()),
        "residual_vibration_frequency_Hz": f_resid,
        "residual_vibration_damping_ratio": zeta_resid,
        "first_natural_frequency_Hz": float(f_modal[0]),
        "natural_frequencies_Hz": [float(f) for f in f_modal],
        "cantilever_estimate_Hz": f_est,
        "estimate_vs_modal": float(f_est / f_modal[0] - 1),
        "first_mode_damping_ratio": float(p["alpha"] * np.pi * f_modal[0]),
    }


if __name__ == "__main__":
    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
