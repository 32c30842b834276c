"""Four-bar with an elastic coupler against the closed-form rigid four-bar (rigid-limit case).

A Grashof crank-rocker in the x–y plane under gravity: crank a = 0.3 m, coupler b = 1 m,
rocker c = 0.8 m, ground d = 1 m, the crank starting at θ2 = 1 rad (the geometry of
tests/test_flexible_mechanisms.py). The crank is driven from rest to a constant speed
``omega`` over ``T`` (θ2 = 1 + ω/2 (t − T/π sin(πt/T)) for t < T, then ω (t − T/2)). Crank and
rocker are rigid bodies (1 kg each) on revolute joints; the coupler is a co-rotational beam of
``n_elements`` elements with axial stiffness ``EA``, bending stiffness ``EI`` (both planes),
mass ``rho_A`` per metre and stiffness-proportional damping ``alpha``, pinned to crank and
rocker, so the loop closes through the beam (no constraint equation).

A rigid coupler would put the rocker at the closed-form angle θ4(θ2): B is where the circles
|B − A| = b and |B − O4| = c meet on the branch of the assembly configuration (Freudenstein's
construction). The elastic coupler stretches and bends under the inertia and gravity loads,
so the rocker lags or leads by an error that vanishes like 1/EA as the coupler stiffens —
``cases/study_rigid_limit.py`` sweeps EA and measures that slope. The summary gives the
largest and RMS rocker-angle error against the closed form over the run (after the start).

Geometry and section are chosen for the study (no paper figure): EA = 2.8e7 N is an
aluminium-like 4 cm² section (E = 70 GPa), EI = 1.4e4 N m² its 2e-7 m⁴ bending stiffness.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import flexmb as fm

DEFAULTS = dict(EA=2.8e7, EI=1.4e4, rho_A=1.2, n_elements=4, alpha=2e-4, omega=2 * np.pi, T=0.5,
                t_end=0.8, dt=2e-3, rho_inf=0.8)
A_, B_, C_, D_, TH0 = 0.3, 1.0, 0.8, 1.0, 1.0


def rigid_rocker_angle(th2: np.ndarray) -> np.ndarray:
    """Closed-form rocker angle θ4 (from +x at O4) of the rigid four-bar for crank angles θ2."""
    th2 = np.asarray(th2, dtype=float)
    A = np.stack([A_ * np.cos(th2), A_ * np.sin(th2)], -1)
    D = np.array([D_, 0.0]) - A
    dist = np.linalg.norm(D, axis=-1)
    x = (B_**2 - C_**2 + dist**2) / (2 * dist)
    h = np.sqrt(B_**2 - x**2)
    e = D / dist[..., None]
    B = A + x[..., None] * e + h[..., None] * np.stack([-e[..., 1], e[..., 0]], -1)
    return np.arctan2(B[..., 1], B[..., 0] - D_)


def crank_increment(t, omega: float, T: float):
    """Crank angle increment: smooth start to constant speed ``omega`` at t = T."""
    if np.real(t) < T:
        return omega / 2 * (t - T / np.pi * np.sin(np.pi * t / T))
    return omega * (t - T / 2) + 0 * t


def builder(**params) -> tuple[fm.ModelBuilder, list[str]]:
    """The four-bar with the beam coupler, not yet compiled (for variants that add to it), and the
    coupler's node names."""
    p = {**DEFAULTS, **params}
    if not (p["EA"] > 0 and p["EI"] > 0 and p["rho_A"] > 0):
        raise fm.ModelError(f"EA = {p['EA']!r}, EI = {p['EI']!r}, rho_A = {p['rho_A']!r} must all be positive.")
    th4 = float(rigid_rocker_angle(TH0))
    A = np.array([A_ * np.cos(TH0), A_ * np.sin(TH0), 0.0])
    B = np.array([D_ + C_ * np.cos(th4), C_ * np.sin(th4), 0.0])
    z = (0, 0, 1.0)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, (A_ / 2 * np.cos(TH0), A_ / 2 * np.sin(TH0), 0), np.eye(3) * 1e-3)
    mb.add_node("rocker", (D_, 0, 0))
    mb.add_body("rocker", "rocker", 1.0, (C_ / 2 * np.cos(th4), C_ / 2 * np.sin(th4), 0), np.eye(3) * 1e-2)
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=(D_, 0, 0), axis=z)
    area, E = 4e-4, p["EA"] / 4e-4  # the section's area is nominal: EA, EI and rho_A are what count
    inertia = p["EI"] / E
    sec = fm.BeamSection(E, E / 2.6, area, inertia, inertia, 2 * inertia, p["rho_A"] / area)
    nodes = mb.add_flexible_link("coupler", A, B, p["n_elements"], sec, damping=p["alpha"])
    mb.add_joint("A", "revolute", "crank", nodes[0], point=A, axis=z)
    mb.add_joint("B", "revolute", "rocker", nodes[-1], point=B, axis=z)
    mb.add_drive("O2", lambda t: crank_increment(t, p["omega"], p["T"]))
    return mb, nodes


def build(**params) -> fm.Model:
    """The four-bar with the beam coupler."""
    return builder(**params)[0].compile()


def rocker_error(result) -> np.ndarray:
    """Rocker angle minus the rigid four-bar's closed form at the simulated crank angle."""
    th4_0 = float(rigid_rocker_angle(TH0))
    return th4_0 + result.coordinate("O4.q") - rigid_rocker_angle(TH0 + result.coordinate("O2.q"))


def postprocess(result, model, params: dict, out_dir: Path) -> dict:
    """Rocker angle against the closed-form rigid four-bar: plot and largest/RMS error."""
    from flexmb.results.plots import plt  # pyplot on the Agg backend

    err = rocker_error(result)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(result.t, err * 1e3)
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("θ4 − θ4 rigid [mrad]")
    ax.set_title(f"rocker angle against the rigid four-bar, EA = {params['EA']:.3g} N")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(Path(out_dir) / "rocker_error.png", dpi=120)
    plt.close(fig)
    return {"rocker_error_max_rad": float(np.abs(err).max()), "rocker_error_rms_rad": float(np.sqrt(np.mean(err**2))),
            "coupler_max_axial_force_N": float(np.abs(result.element_forces[:, :, 0]).max()),
            "energy_balance_drift_J": float(np.ptp(result.total_energy))}


if __name__ == "__main__":
    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
