"""Four-bar linkage with a flexible beam coupler (test case for the CLI, export and energy tests).

A Grashof crank-rocker (crank a = 0.3 m, coupler b = 1 m, rocker c = 0.8 m, ground d = 1 m,
the geometry of tests/test_flexible_mechanisms.py) in the x–y plane under gravity. The crank
is driven from rest to a constant speed; the coupler is a beam of ``n_elements`` co-rotational
elements (aluminium-like section) with stiffness-proportional damping ``alpha``, so the loop
crank–coupler–rocker–ground closes through the beam. The rocker pivot has a rotational
spring–damper (``k_rocker``, ``c_rocker``) and a vertical force ``load`` acts on the coupler's
middle node, ramped in over ``T``. ``fail_at`` >= 0 makes that load NaN from this time on (to
test how a failed run is recorded).
"""

from __future__ import annotations

import numpy as np

import flexmb as fm

DEFAULTS = dict(E=0.7e10, n_elements=4, alpha=2e-3, omega=2 * np.pi, T=0.5, k_rocker=5.0, c_rocker=0.5, load=-20.0,
                fail_at=-1.0, t_end=0.4, dt=2e-3, rho_inf=0.8)
A_, B_, C_, D_, TH0 = 0.3, 1.0, 0.8, 1.0, 1.0


def _rocker_point(th2: float) -> tuple[np.ndarray, np.ndarray, float]:
    A = np.array([A_ * np.cos(th2), A_ * np.sin(th2)])
    D = np.array([D_, 0.0]) - A
    dist = np.linalg.norm(D)
    x = (B_**2 - C_**2 + dist**2) / (2 * dist)
    h = np.sqrt(B_**2 - x**2)
    e = D / dist
    B = A + x * e + h * np.array([-e[1], e[0]])
    return np.r_[A, 0.0], np.r_[B, 0.0], float(np.arctan2(B[1], B[0] - D_))


def build(**params) -> fm.Model:
    """The four-bar with a beam coupler."""
    p = {**DEFAULTS, **params}
    W, T, fail_at = p["omega"], p["T"], p["fail_at"]
    A, B, th4 = _rocker_point(TH0)
    z = (0, 0, 1.0)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, (A_ / 2 * np.cos(TH0), A_ / 2 * np.sin(TH0), 0), np.eye(3) * 1e-3)
    mb.add_node("rocker", (D_, 0, 0))
    mb.add_body("rocker", "rocker", 1.0, (C_ / 2 * np.cos(th4), C_ / 2 * np.sin(th4), 0), np.eye(3) * 1e-2)
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=(D_, 0, 0), axis=z)
    E = p["E"]
    sec = fm.BeamSection(E, E / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)
    n = p["n_elements"]
    nodes = mb.add_flexible_link("coupler", A, B, n, sec, damping=p["alpha"])
    mb.add_joint("A", "revolute", "crank", nodes[0], point=A, axis=z)
    mb.add_joint("B", "revolute", "rocker", nodes[-1], point=B, axis=z)

    def crank(t):
        if np.real(t) < T:
            return W / 2 * (t - T / np.pi * np.sin(np.pi * t / T))
        return W * (t - T / 2) + 0 * t

    def force(t):
        if 0 <= fail_at <= t:
            return np.array([0.0, np.nan, 0.0])
        return np.array([0.0, p["load"] * min(1.0, t / T), 0.0])

    mb.add_drive("O2", crank)
    mb.add_joint_spring("O4", p["k_rocker"], p["c_rocker"])
    mb.add_load("push", nodes[n // 2], force=force)
    return mb.compile()


def postprocess(result, model, params: dict, out_dir) -> dict:
    """Largest axial force in the coupler and the energy balance drift."""
    return {"max_axial_force_N": float(np.abs(result.element_forces[:, :, 0]).max()),
            "energy_balance_drift_J": float(np.ptp(result.total_energy))}
