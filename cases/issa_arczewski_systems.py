"""Issa & Arczewski's grounded and floating tree systems: path matrices π, π* and a free motion under gravity.

Source: S. M. Issa, K. P. Arczewski, "Kinematics and dynamics of multibody system based on
natural and joint coordinates using velocity transformations", J. Theor. Appl. Mech. (1998),
§2 and §4, Fig. 1–4, eqs. (4.9), (4.13), Table 1.

Grounded system (Fig. 1, 3; ``system="grounded"``): bodies 1..4, joints R1 (ground -> 1),
R2 (1 -> 2), P3 (2 -> 3), R5 (3 -> 4). Basic points 1..6: points 1, 2, 4, 5 are the reference
points of bodies 1, 2, 3, 4 (flexmb nodes), R1 sits at point 1, R2 at point 2, the prismatic
guide of P3 starts at point 3 on body 2 and runs along u3 to point 4, R5 sits at point 5 on
body 3, point 6 is the tip of body 4.

Floating system (Fig. 2, 4; ``system="floating"``): bodies 1..5, body 1 floating (an
explicit free joint F1 from ground, the paper's edge from node 0), R2 (1 -> 2) at point 2,
R3 (2 -> 3) at point 3, P4 (3 -> 4) along u4 from point 4 to point 5 (body 4's reference
point; point 6 is on body 4), R7 (1 -> 5) at point 7, point 8 on body 5.

Geometry chosen (the paper draws the systems but gives no numbers): basic points, axes,
masses and inertias below are ours; the geometry is genuinely spatial — no two joint axes are
parallel and the node frames are rotated arbitrarily — so no coincidence can hide an error.
Nodes and joints are declared in the paper's order, so flexmb's path matrices must be the
printed π1, π1*, π2, π2* (§2). Each body's centre of mass lies midway between its basic points
(body 1 of the floating system: at its reference point, the paper's d_ij are measured from the
floating body's centre of mass).

The paper shows no motion; the run is a free motion under gravity from nonzero coordinates and
rates (no drives, no dissipation with ρ∞ = 1; the prismatic joints have no stops, so their
sliders are flung outward), and the summary reports what must hold: the
printed path matrices, the joint constraint equations evaluated from the node poses alone,
and the energy balance.

Run:  flexmb run cases/issa_arczewski_systems.py     or     python cases/issa_arczewski_systems.py --param system=floating
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import flexmb as fm
from flexmb.rotations import expm

# the paper's printed matrices (§2)
PI1 = np.array([[-1, 1, 0, 0], [0, -1, 1, 0], [0, 0, -1, 1], [0, 0, 0, -1]])
PI1_STAR = np.array([[-1, 0, 0, 0], [-2, -1, 0, 0], [-3, -2, -1, 0], [-4, -3, -2, -1]])
PI2 = np.array([[-1, 1, 0, 0, 1], [0, -1, 1, 0, 0], [0, 0, -1, 1, 0], [0, 0, 0, -1, 0], [0, 0, 0, 0, -1]])
PI2_STAR = np.array([[-1, 0, 0, 0, 0], [-2, -1, 0, 0, 0], [-3, -2, -1, 0, 0], [-4, -3, -2, -1, 0], [-2, 0, 0, 0, -1]])
PAPER = {"grounded": (PI1, PI1_STAR), "floating": (PI2, PI2_STAR)}

DEFAULTS = dict(
    system="grounded", gravity=(0.0, 0.0, -9.81),
    grounded_q0=(0.4, -0.7, 0.15, 1.1), grounded_u0=(0.8, -1.2, 0.5, 2.0),
    floating_q_free=(0.1, -0.2, 0.3, 0.5, -0.4, 0.9), floating_u_free=(0.3, 1.0, 2.0, 0.5, -0.7, 0.9),
    floating_q0=(0.6, -0.5, 0.1, 0.8), floating_u0=(1.5, -1.0, 0.4, -2.0),
    t_end=2.0, dt=1e-3, rho_inf=1.0, output_every=1,
)


def unit(v) -> np.ndarray:
    """v / |v|."""
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


class System:
    """A model plus the assembly-configuration data that independent checks need: node
    positions X0 and rotations R0, and every joint's kind, parent, child, point and axis."""

    def __init__(self, gravity=(0.0, 0.0, -9.81)) -> None:
        self.mb = fm.ModelBuilder(gravity=gravity)
        self.X0: dict[str, np.ndarray] = {}
        self.R0: dict[str, np.ndarray] = {}
        self.joints: list[dict] = []  # name, kind, parent, child, point, axis
        self.model: fm.Model | None = None

    def node(self, name, x, R, mass, com_global, inertia_diag) -> None:
        """A node at x with axes R carrying a body of ``mass`` whose CoM is at ``com_global``."""
        x = np.asarray(x, dtype=float)
        self.X0[name], self.R0[name] = x, R
        self.mb.add_node(name, position=x, rotation=R)
        com = R.T @ (np.asarray(com_global, dtype=float) - x)  # node axes
        self.mb.add_body(f"body{name}", node=name, mass=mass, com=com, inertia=np.diag(inertia_diag))

    def joint(self, name, kind, parent, child, point=None, axis=None, q0=None, u0=None) -> None:
        """A joint, recorded for the checks as well as added to the model."""
        kw = {}
        if axis is not None:
            kw["axis"] = axis
        if point is not None:
            kw["point"] = point
        self.mb.add_joint(name, kind, parent, child, q0=q0, u0=u0, **kw)
        self.joints.append(dict(name=name, kind=kind, parent=parent, child=child,
                                point=None if point is None else np.asarray(point, float),
                                axis=None if axis is None else unit(axis)))

    def compile(self) -> System:
        self.model = self.mb.compile()
        return self


def frames(seed: int, n: int) -> list[np.ndarray]:
    """n arbitrary rotation matrices (reproducible)."""
    rng = np.random.default_rng(seed)
    return [expm(rng.normal(size=3)) for _ in range(n)]


def grounded_system(q0=(0.4, -0.7, 0.15, 1.1), u0=(0.8, -1.2, 0.5, 2.0), gravity=(0.0, 0.0, -9.81)) -> System:
    """Fig. 1/3. Basic points p1..p6; axes u1, u2, u5 and the prismatic direction u3."""
    p = {1: (0.0, 0.0, 0.0), 2: (0.9, 0.3, 0.2), 3: (1.2, 0.8, 0.5), 4: (1.5, 1.3, 0.8), 5: (1.9, 1.5, 1.3), 6: (2.5, 1.3, 1.9)}
    p = {k: np.array(v) for k, v in p.items()}
    u1 = unit((0.0, 0.2, 1.0))
    u2 = unit((1.0, -0.5, 0.3))
    u3 = unit(p[4] - p[3])
    u5 = unit((0.2, 1.0, -0.6))
    Rs = frames(1, 4)
    s = System(gravity)
    # nodes = reference points 1, 2, 4, 5 of bodies 1..4; CoMs between consecutive basic points
    s.node("1", p[1], Rs[0], 2.0, 0.5 * (p[1] + p[2]), (0.02, 0.15, 0.16))
    s.node("2", p[2], Rs[1], 1.5, 0.5 * (p[2] + p[3]), (0.05, 0.08, 0.10))
    s.node("3", p[4], Rs[2], 1.0, 0.5 * (p[4] + p[5]), (0.03, 0.04, 0.05))
    s.node("4", p[5], Rs[3], 0.8, 0.5 * (p[5] + p[6]), (0.01, 0.06, 0.065))
    s.joint("R1", "revolute", "ground", "1", point=p[1], axis=u1, q0=q0[0], u0=u0[0])
    s.joint("R2", "revolute", "1", "2", point=p[2], axis=u2, q0=q0[1], u0=u0[1])
    s.joint("P3", "prismatic", "2", "3", point=p[3], axis=u3, q0=q0[2], u0=u0[2])
    s.joint("R5", "revolute", "3", "4", point=p[5], axis=u5, q0=q0[3], u0=u0[3])
    return s.compile()


def floating_system(q_free=(0.1, -0.2, 0.3, 0.5, -0.4, 0.9), u_free=(0.3, 1.0, 2.0, 0.5, -0.7, 0.9),
                    q0=(0.6, -0.5, 0.1, 0.8), u0=(1.5, -1.0, 0.4, -2.0), gravity=(0.0, 0.0, -9.81)) -> System:
    """Fig. 2/4. Basic points p1..p8; axes u2, u3, u7, prismatic direction u4."""
    p = {1: (0.0, 0.0, 1.0), 2: (0.6, 0.2, 1.1), 3: (1.1, 0.6, 1.3), 4: (1.4, 1.0, 1.2), 5: (1.7, 1.5, 1.0),
         6: (2.2, 1.7, 1.2), 7: (-0.5, 0.3, 0.8), 8: (-1.0, 0.9, 0.5)}
    p = {k: np.array(v) for k, v in p.items()}
    u2 = unit((0.3, -0.4, 1.0))
    u3 = unit((1.0, 0.6, 0.2))
    u4 = unit(p[5] - p[4])
    u7 = unit((-0.2, 1.0, 0.7))
    Rs = frames(2, 5)
    s = System(gravity)
    # body 1's reference point 1 is its centre of mass (Issa & Arczewski: d_ij from the floating body's CoM)
    s.node("1", p[1], Rs[0], 3.0, p[1], (0.2, 0.25, 0.3))
    s.node("2", p[2], Rs[1], 1.2, 0.5 * (p[2] + p[3]), (0.02, 0.05, 0.06))
    s.node("3", p[3], Rs[2], 1.0, 0.5 * (p[3] + p[4]), (0.03, 0.03, 0.05))
    s.node("4", p[5], Rs[3], 0.7, 0.5 * (p[5] + p[6]), (0.01, 0.04, 0.045))
    s.node("5", p[7], Rs[4], 0.9, 0.5 * (p[7] + p[8]), (0.02, 0.05, 0.05))
    s.joint("F1", "free", "ground", "1", q0=q_free, u0=u_free)
    s.joint("R2", "revolute", "1", "2", point=p[2], axis=u2, q0=q0[0], u0=u0[0])
    s.joint("R3", "revolute", "2", "3", point=p[3], axis=u3, q0=q0[1], u0=u0[1])
    s.joint("P4", "prismatic", "3", "4", point=p[4], axis=u4, q0=q0[2], u0=u0[2])
    s.joint("R7", "revolute", "1", "5", point=p[7], axis=u7, q0=q0[3], u0=u0[3])
    return s.compile()


def system(**params) -> System:
    """The chosen system (``params["system"]``) with its data for the checks."""
    p = {**DEFAULTS, **params}
    if p["system"] == "grounded":
        return grounded_system(p["grounded_q0"], p["grounded_u0"], p["gravity"])
    if p["system"] == "floating":
        return floating_system(p["floating_q_free"], p["floating_u_free"], p["floating_q0"], p["floating_u0"], p["gravity"])
    raise fm.ModelError(f"Issa & Arczewski case: system {p['system']!r} must be 'grounded' or 'floating'.")


def build(**params) -> fm.Model:
    """The grounded (Fig. 1) or floating (Fig. 2) system as a flexmb model."""
    return system(**params).model


def constraint_violation(s: System, res) -> dict[str, float]:
    """Largest violation of every joint's constraint equations over the run, evaluated from the
    recorded node poses with body-fixed joint points and axes taken in the assembly
    configuration: revolute — joint points coincide and axes agree; prismatic — no relative
    rotation and the joint-point separation stays along the axis."""
    out = {}
    nt = res.t.size

    def pose(nm):
        if nm == "ground":
            return np.zeros((nt, 3)), np.broadcast_to(np.eye(3), (nt, 3, 3))
        i = s.model.node_index(nm)
        return res.x[:, i], res.R[:, i]

    def local(nm, P0, a0):
        x0, R0 = (np.zeros(3), np.eye(3)) if nm == "ground" else (s.X0[nm], s.R0[nm])
        return R0.T @ (P0 - x0), None if a0 is None else R0.T @ a0, R0

    for jd in s.joints:
        if jd["kind"] == "free":
            continue
        P0 = jd["point"] if jd["point"] is not None else s.X0[jd["child"]]
        sp, ap, Rp0 = local(jd["parent"], P0, jd["axis"])
        sc, ac, Rc0 = local(jd["child"], P0, jd["axis"])
        (xp, Rp), (xc, Rc) = pose(jd["parent"]), pose(jd["child"])
        Pp = xp + np.einsum("tij,j->ti", Rp, sp)
        Pc = xc + np.einsum("tij,j->ti", Rc, sc)
        axp = np.einsum("tij,j->ti", Rp, ap)
        if jd["kind"] == "revolute":
            axc = np.einsum("tij,j->ti", Rc, ac)
            out[jd["name"]] = float(max(np.abs(Pp - Pc).max(), np.abs(axp - axc).max()))
        else:
            rel = np.swapaxes(Rp, 1, 2) @ Rc
            d = Pc - Pp
            perp = d - np.einsum("ti,ti->t", d, axp)[:, None] * axp
            out[jd["name"]] = float(max(np.abs(rel - Rp0.T @ Rc0).max(), np.abs(perp).max()))
    return out


def matrix_text(a: np.ndarray) -> str:
    """A matrix as one line of rows, e.g. [[-1 1] [0 -1]]."""
    return "[" + " ".join("[" + " ".join(f"{int(v)}" for v in row) + "]" for row in a) + "]"


def postprocess(result, model: fm.Model, params: dict, out_dir: Path) -> dict:
    """Path matrices against the paper's printed ones, joint constraints and energy balance of
    the run, plots of the joint coordinates and of the energy."""
    from flexmb.results.plots import plot_coordinates, plot_energy

    p = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    s = system(**p)
    pi, pi_star = model.path_matrix(), model.secondary_path_matrix()
    ref, ref_star = PAPER[p["system"]]
    label = "1" if p["system"] == "grounded" else "2"
    (out_dir / "path_matrices.txt").write_text(
        f"Issa & Arczewski, {p['system']} system (Fig. {label}); rows = bodies {list(model.node_names)}, "
        f"columns = joints {list(model.joint_names)}\npi_{label} =\n{pi}\npi_{label}* =\n{pi_star}\n")
    names = [n for n in model.coordinate_names if not n.startswith("F1.")]
    plot_coordinates(result, names, out_dir / "joint_coordinates.png", f"Issa & Arczewski {p['system']} system")
    plot_energy(result, out_dir / "energy.png", "energy balance (free motion under gravity)")
    viol = constraint_violation(s, result)
    same = bool(pi.shape == ref.shape and np.array_equal(pi, ref) and np.array_equal(pi_star, ref_star))
    return {
        "system": p["system"],
        f"pi_{label}": matrix_text(pi),
        f"pi_{label}*": matrix_text(pi_star),
        "path_matrices_equal_paper": same,
        "joint_constraint_violation_max": max(viol.values()),
        "energy_drift_J": float(np.ptp(result.total_energy)),
        "kinetic_energy_max_J": float(result.energy["kinetic"].max()),
        "vs_paper": ("π and π* are the matrices printed in §2 exactly" if same else "π, π* DIFFER from §2")
        + "; the paper shows no motion, the run is checked by its joint constraints and energy balance.",
    }


if __name__ == "__main__":  # standalone: the same as `flexmb run <this file> [options]`
    import sys

    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
