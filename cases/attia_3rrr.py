"""Attia's planar 3-RRR platform manipulator from equivalent particles, loops cut by stiff bushings.

Source: H. A. Attia, "Point-joint coordinate formulation for the dynamic analysis of
generalised planar linkages", ANZIAM J. 46 (2005), §7, Figure 3, Table 1 and Figure 4.

Mechanism (Attia §7, Fig. 3): an end-effector platform constrained by three serial RR leg
trains, nine revolute joints in all, two independent loops, three degrees of freedom. Every
body is an equivalent particle model (flexmb.builder.particle_bodies): each rod has particles at its
two joint centres and its midpoint (Attia §2, rod remark; masses m/6, m/6, 2m/3), the
platform has primary particles at its three joint centres and a secondary particle at the
midpoint of the pair 3–5 (Attia: "a secondary particle at the middle of any pair of them").
Adjacent bodies share their joint-centre node and both put mass on it, as in Attia's 16×16
mass matrix. Numbering as in Attia's velocity transformation: ground pivot 1 – rod 1 –
joint 2 – rod 2 – platform vertex 3; platform vertex 4 – rod 4 – joint 6 – rod 5 – ground
pivot 7; platform vertex 5 – rod 6 – joint 8 – rod 7 – ground pivot 9. Attia cuts the loops
at the revolute joints 7 and 9 (eq. 6.8 with the cut-joint constraints r_7 − c_1 = 0,
r_9 − c_2 = 0); here the cuts are stiff revolute bushings to ground at 7 and 9 (flexmb closes
loops through elastic links only), so the seven tree coordinates are Attia's
θ = [θ1, θ2,1, θ3,2, θ4,3, θ5,4, θ6,3, θ7,6], and as the cut stiffness grows the motion
converges to the rigid mechanism's (the postprocess reports how).

Loading (Attia §7): from rest, gravity plus a 10 N horizontal force at the platform centre
(distributed over the platform's particles with Attia's α, eq. 3.2).

Parameters from the paper (Table 1): rods 1.0 kg, J = 0.333333 kg m²; platform 3.0 kg,
J = 1.0 kg m². The paper gives no lengths and no figure coordinates in its text; chosen here:

* the inertias are read as centroidal moments of uniform bodies. Then a rod of 1 kg with
  m L²/12 = 0.333333 kg m² is L = 2 m long, and a uniform equilateral triangular plate of
  3 kg with m s²/12 = 1.0 kg m² has side s = 2 m: both of Table 1's numbers come out exact
  with one length, 2 m, which is why this reading is taken (a reading about the rod's end,
  m L²/3, gives L = 1 m but no round platform size). Centres of mass at the rods' midpoints
  and the platform's centroid;
* the platform's joints are its vertices; the base pivots 1, 7, 9 form an equilateral
  triangle around the platform, each pivot on the ray from the platform centre through its
  leg's vertex, at the distance that makes each leg's elbow a right angle in the assembly
  configuration (pivot–vertex distance L√2, far from the straight-leg and folded-leg
  singularities); the three elbows are on the same (counter-clockwise) side, so the
  mechanism has 120° symmetry; pivot 1 is at the top (θ = 90°), 7 and 9 at 210° and 330°;
* gravity along −y in the mechanism's plane (x–y), the force along +x.

With these platform proportions Attia's particle choice gives the two platform particles at
the ends of the midpoint pair negative masses (−0.5 kg each; 1.0 kg at the third vertex,
3.0 kg at the midpoint): still exactly equivalent (flexmb warns and checks that the
generalized mass matrix stays positive definite).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

import flexmb as fm
from flexmb.elements.particles import NegativeParticleMassWarning

DEFAULTS: dict = dict(
    rod_mass=1.0,  # kg (Table 1)
    rod_inertia=0.333333,  # kg m², about the centre of mass (Table 1)
    platform_mass=3.0,  # kg (Table 1)
    platform_inertia=1.0,  # kg m², about the centre of mass (Table 1)
    rod_length=2.0,  # m, from m L²/12 = J (chosen reading, see docstring)
    platform_side=2.0,  # m, from m s²/12 = J for an equilateral plate
    elbow_angle=90.0,  # deg, leg elbow angle in the assembly configuration (chosen)
    force=10.0,  # N, horizontal, at the platform centre (Attia §7)
    g=9.81,  # m/s²
    cut_stiffness=1e7,  # N/m, in-plane stiffness of the cut bushings at 7 and 9 (rotation about z free)
    cut_damping=1e-4,  # s: bushing damping = cut_damping * cut_stiffness (stiffness-proportional)
    study_decades=2,  # postprocess: rerun with cut_stiffness / 10, / 100 … to show convergence (0: skip)
    t_end=2.0,
    dt=1e-3,
    rho_inf=0.8,
    output_every=1,
)


def geometry(p: dict) -> dict[str, np.ndarray]:
    """Points 1–9 of Fig. 3 and the platform centre in the assembly configuration."""
    L, s = p["rod_length"], p["platform_side"]
    Rp = s / np.sqrt(3.0)
    D = 2 * L * np.sin(np.radians(p["elbow_angle"]) / 2)  # pivot-vertex distance for that elbow angle
    h = np.sqrt(L * L - D * D / 4)
    pts: dict[str, np.ndarray] = {"c": np.zeros(3)}
    # (pivot, elbow, vertex) per leg, in Attia's numbers
    for ang, (piv, elb, ver) in zip((90.0, 210.0, 330.0), ((1, 2, 3), (7, 6, 4), (9, 8, 5))):
        u = np.array([np.cos(np.radians(ang)), np.sin(np.radians(ang)), 0.0])
        w = np.array([-u[1], u[0], 0.0])
        V = Rp * u
        P = (Rp + D) * u
        pts[str(ver)], pts[str(piv)] = V, P
        pts[str(elb)] = (V + P) / 2 + h * w
    return pts


def build(**params) -> fm.Model:
    """The manipulator as particle bodies on joint-centre nodes, cut at 7 and 9 by bushings."""
    p = {**DEFAULTS, **params}
    X = geometry(p)
    z = (0.0, 0.0, 1.0)
    mb = fm.ModelBuilder(gravity=(0.0, -p["g"], 0.0))
    for k in range(1, 10):
        mb.add_node(f"n{k}", X[str(k)])
    # the tree (Attia's open chains after cutting 7 and 9); every joint centre is a node
    for name, parent, child in (("J1", "ground", "n1"), ("J2", "n1", "n2"), ("J3", "n2", "n3"), ("J4", "n3", "n4"),
                                ("J6", "n4", "n6"), ("J5", "n3", "n5"), ("J8", "n5", "n8")):
        mb.add_joint(name, "revolute", parent, child, axis=z)
    mb.add_joint("tip7", "fixed", "n6", "n7")
    mb.add_joint("tip9", "fixed", "n8", "n9")
    mb.add_node("centre", X["c"])
    mb.add_joint("centre", "fixed", "n3", "centre")
    m, J = p["rod_mass"], p["rod_inertia"]
    for name, a, b in (("rod1", 1, 2), ("rod2", 2, 3), ("rod4", 4, 6), ("rod5", 6, 7), ("rod6", 5, 8), ("rod7", 8, 9)):
        ref = f"n{a}"
        com = (X[str(a)] + X[str(b)]) / 2 - X[ref[1:]]
        mb.add_particle_body(name, ref, m, com, J, [f"n{a}", f"n{b}"], kind="rod")
    with warnings.catch_warnings():  # the platform's negative particle masses are expected (docstring)
        warnings.simplefilter("ignore", NegativeParticleMassWarning)
        mb.add_particle_body("platform", "n3", p["platform_mass"], X["c"] - X["3"], p["platform_inertia"],
                             ["n3", "n4", "n5"], kind="planar")
    mb.add_particle_load("push", "platform", force=(p["force"], 0.0, 0.0), point=X["c"] - X["3"])
    k = p["cut_stiffness"]
    c = p["cut_damping"] * k
    for node in ("n7", "n9"):  # in-plane cuts: Attia's two scalar cut equations r - c = 0 per joint
        mb.add_bushing(f"cut{node[1:]}", "ground", node, stiffness=[k, k, 0, 0, 0, 0], damping=[c, c, 0, 0, 0, 0],
                       point=X[node[1:]], free_rotation="z")
    return mb.compile()


def platform_centre(result) -> np.ndarray:
    """Platform-centre trajectory (nt, 2) in the plane."""
    return result.node_position("centre")[:, :2]


def companions(params: dict) -> dict[str, dict]:
    """The runs with the cuts 10, 100 … times softer (flexmb starts them on a spare core while
    this run runs)."""
    p = {**DEFAULTS, **params}
    return {f"softer{d}": {"cut_stiffness": p["cut_stiffness"] / 10**d} for d in range(1, int(p["study_decades"]) + 1)}


def postprocess(result, model, params: dict, out_dir: Path, companions: dict | None = None) -> dict:
    """Plot the platform-centre trajectory (Attia Fig. 4) and the convergence with the cut
    stiffness: the run is repeated with the cuts 10, 100 … times softer (from ``companions`` when
    flexmb ran them, else here) and each trajectory compared with this one; the differences fall
    about tenfold per decade (error ~ 1/k)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from flexmb.analysis.rigid import RigidModel
    from flexmb.rotations import expm
    from flexmb.solvers.simulate import simulate
    from flexmb.state import State

    p = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    xy = platform_centre(result)
    summary: dict = {
        "status": result.status,
        "platform_centre_start_m": f"({xy[0, 0]:.4f}, {xy[0, 1]:.4f})",
        "platform_centre_end_m": f"({xy[-1, 0]:.4f}, {xy[-1, 1]:.4f})",
        "platform_drop_m": float(xy[0, 1] - xy[:, 1].min()),
        "platform_x_range_m": float(np.ptp(xy[:, 0])),
        "energy_balance_drift_J": float(np.ptp(result.total_energy)),
        "cut_stiffness": float(p["cut_stiffness"]),
        "platform_particle_masses_kg": ", ".join(
            f"{m:.6g}" for m in model.elements["particle_body"].masses[model.elements["particle_body"].names.index("platform")]),
    }
    # how close the rigid mechanism comes to a singular configuration along the run:
    # smallest singular value of the rigid cut-joint Jacobian (Attia's C of eq. 6.6)
    rm = RigidModel(model)
    idx = np.arange(0, len(result.t), max(1, len(result.t) // 200))
    sig = [rm.sigma_min(State(result.t[i], result.q[i][~model.u_is_ball], expm(result.q[i][model.u_is_ball].reshape(-1, 3)),
                              result.u[i], result.udot[i])) for i in idx]
    summary["rigid_cut_jacobian_sigma_min"] = float(min(sig))
    summary["rigid_cut_jacobian_sigma_min_at_s"] = float(result.t[idx[int(np.argmin(sig))]])
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.5))
    prev = None
    for d in range(1, int(p["study_decades"]) + 1):
        k = p["cut_stiffness"] / 10**d
        if companions and f"softer{d}" in companions:
            res = companions[f"softer{d}"].result
        else:
            res = simulate(build(**{**p, "cut_stiffness": k}), p["t_end"], p["dt"], rho_inf=p["rho_inf"],
                           output_every=p.get("output_every", 1))
        if res.status != "finished" or len(res.t) != len(result.t):
            summary[f"deviation_k={k:.0e}"] = f"run {res.status}"
            continue
        dev = np.linalg.norm(platform_centre(res) - xy, axis=1)
        summary[f"deviation_k={k:.0e}_m"] = float(dev.max())
        if prev is not None and dev.max() > 0:
            summary[f"deviation_ratio_k={k:.0e}_to_k={k * 10:.0e}"] = float(dev.max() / prev)
        prev = dev.max()
        ax[0].plot(platform_centre(res)[:, 0], platform_centre(res)[:, 1], "--", lw=1, label=f"k = {k:.0e}")
        ax[1].semilogy(res.t[1:], dev[1:], lw=1, label=f"|x(k={k:.0e}) - x(k={p['cut_stiffness']:.0e})|")
    ax[0].plot(xy[:, 0], xy[:, 1], "k-", lw=1.2, label=f"k = {p['cut_stiffness']:.0e} N/m", zorder=0)
    ax[0].plot(xy[0, 0], xy[0, 1], "go", label="start (rest)")
    ax[0].set(xlabel="x [m]", ylabel="y [m]", title="platform-centre trajectory (cf. Attia Fig. 4)", aspect="equal")
    ax[0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax[1].set(xlabel="t [s]", ylabel="deviation [m]", title="convergence with the cut stiffness")
    if int(p["study_decades"]):
        ax[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "platform_trajectory.png", dpi=130)
    plt.close(fig)
    summary["plot"] = str(out_dir / "platform_trajectory.png")
    return summary


if __name__ == "__main__":  # standalone: the same as `flexmb run <this file> [options]`
    import sys

    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
