"""Sharma & Saha's two-link planar arm, driven.

Two uniform rods (masses m1, m2, lengths a1, a2) in the x–y plane, revolute joints about z,
gravity along -y. Both joint angles follow smooth rest-to-rest trajectories
θ1(t) = θ1_0 + Δ1 s(t), θ2(t) = θ2_0 + Δ2 s(t), s(t) = (1 - cos(π t / T)) / 2, and flexmb
computes the joint torques by inverse dynamics. The summary compares them with the
closed-form Lagrange equations whose inertia matrix is the paper's eq. (8)
(I_r θ̈ + C θ̇ + gravity = τ).

Run:  flexmb run cases/sharma_saha_arm.py [--out DIR] [--param T=1.5]   (results, ParaView files, plots)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import flexmb as fm
from flexmb.results.plots import plot_coordinates, plot_drive_forces

DEFAULTS = dict(m1=1.0, m2=1.0, a1=1.0, a2=0.8, g=9.81, theta1_0=-np.pi / 2, theta2_0=0.0,
                delta1=np.pi / 2, delta2=np.pi / 3, T=2.0, t_end=2.0, dt=1e-3, rho_inf=1.0)


def rod_inertia(m: float, a: float) -> np.ndarray:
    """Inertia of a thin uniform rod along the node x axis, about its centre of mass."""
    return np.diag([0.0, m * a * a / 12, m * a * a / 12])


def trajectories(p: dict):
    """Joint angle functions θ1(t), θ2(t) (they accept complex t for exact derivatives)."""
    s = lambda t: 0.5 * (1 - np.cos(np.pi * t / p["T"]))  # noqa: E731
    return (lambda t: p["theta1_0"] + p["delta1"] * s(t)), (lambda t: p["theta2_0"] + p["delta2"] * s(t))


def build(**params) -> fm.Model:
    """The driven two-link arm as a flexmb model."""
    p = {**DEFAULTS, **params}
    mb = fm.ModelBuilder(gravity=(0, -p["g"], 0))
    mb.add_node("shoulder", (0, 0, 0))
    mb.add_node("elbow", (p["a1"], 0, 0))
    mb.add_body("link1", "shoulder", p["m1"], (p["a1"] / 2, 0, 0), rod_inertia(p["m1"], p["a1"]))
    mb.add_body("link2", "elbow", p["m2"], (p["a2"] / 2, 0, 0), rod_inertia(p["m2"], p["a2"]))
    th1, th2 = trajectories(p)
    mb.add_joint("joint1", "revolute", "ground", "shoulder", point=(0, 0, 0), axis=(0, 0, 1), q0=th1(0.0))
    mb.add_joint("joint2", "revolute", "shoulder", "elbow", point=(p["a1"], 0, 0), axis=(0, 0, 1), q0=th2(0.0))
    mb.add_drive("joint1", th1)
    mb.add_drive("joint2", th2)
    return mb.compile()


def closed_form_torques(p: dict, th: np.ndarray, thd: np.ndarray, thdd: np.ndarray) -> np.ndarray:
    """Joint torques from eq. (8) plus the Coriolis and gravity terms of the Lagrange equations."""
    m1, m2, a1, a2, g = p["m1"], p["m2"], p["a1"], p["a2"], p["g"]
    t1, t2 = th[:, 0], th[:, 1]
    c2 = np.cos(t2)
    I11 = (m1 * a1**2 + m2 * a2**2) / 3 + m2 * a1**2 + m2 * a1 * a2 * c2
    I12 = m2 * a2**2 / 3 + 0.5 * m2 * a1 * a2 * c2
    I22 = m2 * a2**2 / 3 * np.ones_like(t2)
    h = 0.5 * m2 * a1 * a2 * np.sin(t2)
    g1 = (m1 * a1 / 2 + m2 * a1) * g * np.cos(t1) + m2 * a2 / 2 * g * np.cos(t1 + t2)
    g2 = m2 * a2 / 2 * g * np.cos(t1 + t2)
    tau1 = I11 * thdd[:, 0] + I12 * thdd[:, 1] - h * (2 * thd[:, 0] * thd[:, 1] + thd[:, 1] ** 2) + g1
    tau2 = I12 * thdd[:, 0] + I22 * thdd[:, 1] + h * thd[:, 0] ** 2 + g2
    return np.stack([tau1, tau2], axis=1)


def postprocess(result, model, params: dict, out_dir: Path) -> dict:
    """Joint-angle and torque plots; the torques compared with the closed-form Lagrange
    equations built on eq. (8), evaluated at the simulated angles, rates and accelerations."""
    p = {**DEFAULTS, **params}
    plot_coordinates(result, ["joint1.q", "joint2.q"], out_dir / "angles.png", "Sharma & Saha arm: joint angles")
    plot_drive_forces(result, out_dir / "torques.png", "joint torques by inverse dynamics")
    ref = closed_form_torques(p, result.q, result.u, result.udot)
    err = float(np.abs(result.drive_forces - ref).max() / np.abs(ref).max())
    return {
        "max_torque_joint1_Nm": float(np.abs(result.drive_forces[:, 0]).max()),
        "max_torque_joint2_Nm": float(np.abs(result.drive_forces[:, 1]).max()),
        "torque_vs_eq8_max_rel_error": err,
        "energy_balance_drift_J": float(np.ptp(result.total_energy)),
    }


if __name__ == "__main__":
    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
