"""Change-point four-bar started from rest in its singular configuration, elastic coupler (Zahariev & Cuadrado Fig. 3, 5, 6).

Ground, crank, coupler and rocker all have length a (a change-point mechanism). The crank
(O2 at the origin) starts pointing along -x, so its pin A is at (-a, 0); the coupler runs from A
to B at the origin and the rocker from O4 = (a, 0) back to B: all links collinear, the folded
singular configuration. There the rigid loop-closure Jacobian with respect to the coupler and
rocker angles, a² sin(ψ - φ), vanishes: the rigid model cannot say which of its three branches
(parallelogram, anti-parallelogram, or B resting on O2 while the coupler turns with the crank)
the mechanism takes, and the force it needs to start along any of them grows like 1/t².

flexmb cuts the loop through the coupler, a beam of ``n_elements`` co-rotational elements with
the section of Zahariev's flexible links (E = 0.7e11 Pa, ρ = 3000 kg/m³, A = 4e-4 m²,
I = 2e-7 m⁴) and stiffness-proportional damping α (Zahariev eq. 13). Crank and rocker are rigid
uniform rods of 1 kg. The mechanism moves in a horizontal plane (gravity off: its weight is
carried by the bearings). The crank is driven from rest, θ(t) = W/2 (t - T/π sin(πt/T)) for
t < T, then at constant speed W, through the next singular configuration (crank pin A passing
over O4 at θ = π) and on.

Where the paper is silent (link lengths, masses, drive law, plane of motion) the choices above
are ours: equal links make the mechanism change-point, the smooth start gives θ̈(0) = 0.
With α = 1e-3 s the coupler's axial modes are overdamped and its first bending mode
(ω ≈ π² √(EI/ρA)/a² ≈ 1.1e3 rad/s) has damping ratio α ω / 2 ≈ 0.5.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import flexmb as fm

DEFAULTS = dict(
    a=1.0, crank_mass=1.0, rocker_mass=1.0, E=0.7e11, rho=3000.0, A=4e-4, I=2e-7, n_elements=4, damping=1e-3,
    W=2.0, T=1.0, t_end=2.6, dt=2e-3, rho_inf=0.8,
)


def crank_angle(p: dict):
    """Crank angle increment θ(t): smooth start to speed W at T (θ̈(0) = 0), then constant speed."""
    W, T = p["W"], p["T"]

    def theta(t):
        if np.real(t) < T:
            return W / 2 * (t - T / np.pi * np.sin(np.pi * t / T))
        return W * (t - T / 2) + 0 * t

    return theta


def build(**params) -> fm.Model:
    """The four-bar in its folded singular configuration, coupler elastic, crank driven."""
    p = {**DEFAULTS, **params}
    a, z = p["a"], (0.0, 0.0, 1.0)
    rod = lambda m: np.diag([0.0, m * a * a / 12, m * a * a / 12])  # noqa: E731
    mb = fm.ModelBuilder()
    mb.add_node("crank", (0.0, 0.0, 0.0))
    mb.add_body("crank", "crank", p["crank_mass"], (-a / 2, 0.0, 0.0), rod(p["crank_mass"]))
    mb.add_node("rocker", (a, 0.0, 0.0))
    mb.add_body("rocker", "rocker", p["rocker_mass"], (-a / 2, 0.0, 0.0), rod(p["rocker_mass"]))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0.0, 0.0, 0.0), axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=(a, 0.0, 0.0), axis=z)
    sec = fm.BeamSection(p["E"], p["E"] / 2.6, p["A"], p["I"], p["I"], 2 * p["I"], p["rho"])
    nodes = mb.add_flexible_link("coupler", (-a, 0.0, 0.0), (0.0, 0.0, 0.0), int(p["n_elements"]), sec,
                                 damping=p["damping"])
    mb.add_joint("A", "revolute", "crank", nodes[0], point=(-a, 0.0, 0.0), axis=z)
    mb.add_joint("B", "revolute", "rocker", nodes[-1], point=(0.0, 0.0, 0.0), axis=z)
    mb.add_drive("O2", crank_angle(p))
    return mb.compile()


def closure_jacobian_det(model: fm.Model, x: np.ndarray, a: float) -> float:
    """a² sin(ψ - φ): determinant of the rigid loop closure A + a e(ψ) = O4 + a e(φ) with respect to
    the coupler angle ψ and rocker angle φ, for node positions x (N,3) of one state."""
    A = x[model.node_index("coupler.0")]
    B = x[model.node_index(model.node_names[-1])]
    O4 = np.array([a, 0.0, 0.0])
    psi = np.arctan2(*(B - A)[1::-1])
    phi = np.arctan2(*(B - O4)[1::-1])
    return float(a * a * np.sin(psi - phi))


def bounds(p: dict) -> dict:
    """Physical bounds on the coupler's axial force (see tests/test_case_change_point_four_bar.py):
    at constant crank speed every point of the coupler, on any rigid branch, has acceleration at
    most a W², so the coupler carries at most its whole inertia force m_c a W²; during the start
    (rigid force unbounded) the link must stay elastic: strain below 0.2 % (aluminium's yield)."""
    m_c = p["rho"] * p["A"] * p["a"]
    return {"constant_speed_N": m_c * p["a"] * p["W"] ** 2, "elastic_limit_N": 2e-3 * p["E"] * p["A"]}


def postprocess(result, model, params: dict, out_dir: Path) -> dict:
    """Plots of the crank and rocker angles and the coupler's axial forces; a summary with the
    peak forces against their physical bounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = {**DEFAULTS, **params}
    N = result.element_forces[:, :, 0]
    b = bounds(p)
    start = result.t < p["T"] + 0.2
    fig, ax = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    ax[0].plot(result.t, result.coordinate("O2.q"), label="crank θ")
    ax[0].plot(result.t, result.coordinate("O4.q"), label="rocker φ")
    ax[0].set_ylabel("angle increment [rad]")
    ax[0].legend()
    ax[1].plot(result.t, N)
    ax[1].axhline(b["constant_speed_N"], color="k", ls="--", lw=0.8)
    ax[1].axhline(-b["constant_speed_N"], color="k", ls="--", lw=0.8, label="m_c a W² (constant speed bound)")
    ax[1].set_yscale("symlog", linthresh=1.0)
    ax[1].set_ylabel("axial force per element [N]")
    ax[1].set_xlabel("time t [s]")
    ax[1].legend()
    fig.suptitle("change-point four-bar through its singular configurations")
    fig.tight_layout()
    fig.savefig(Path(out_dir) / "four_bar_forces.png", dpi=120)
    plt.close(fig)
    return {
        "rigid_closure_det_at_start": closure_jacobian_det(model, result.x[0], p["a"]),
        "crank_angle_reached_rad": float(result.coordinate("O2.q")[-1]),
        "max_axial_force_start_N": float(np.abs(N[start]).max()),
        "elastic_limit_N": b["elastic_limit_N"],
        "max_axial_force_constant_speed_N": float(np.abs(N[~start]).max(initial=0.0)),
        "constant_speed_bound_N": b["constant_speed_N"],
    }


if __name__ == "__main__":  # standalone: the same as `flexmb run <this file> [options]`
    import sys

    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
