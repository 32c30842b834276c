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

from pathlib import Path

import numpy as np

import flexmb as fm
from flexmb.app.casefile import import_file

DEFAULTS = dict(E=0.7e10, n_elements=4, alpha=2e-3, omega=2 * np.pi, T=0.5, k_rocker=5.0, c_rocker=0.5, load=-20.0,
                fail_at=-1.0, t_end=0.4, dt=2e-3, rho_inf=0.8)

# the mechanism itself is cases/four_bar_rigid_limit.py; this file adds the spring, the load and the failure
_base = import_file(Path(__file__).resolve().parents[2] / "cases" / "four_bar_rigid_limit.py")


def build(**params) -> fm.Model:
    """The four-bar with a beam coupler (section 4 cm², 2e-7 m⁴, 3000 kg/m³ of modulus E)."""
    p = {**DEFAULTS, **params}
    T, fail_at, n, E = p["T"], p["fail_at"], p["n_elements"], p["E"]
    if not E > 0:
        raise fm.ModelError(f"E = {float(E)!r} must be a positive Young's modulus [Pa].")
    mb, nodes = _base.builder(EA=E * 4e-4, EI=E * 2e-7, rho_A=1.2, n_elements=n, alpha=p["alpha"], omega=p["omega"], T=T)

    def force(t):
        if 0 <= fail_at <= t:
            return np.array([0.0, np.nan, 0.0])
        return np.array([0.0, p["load"] * min(1.0, t / T), 0.0])

    mb.add_joint_spring("O4", p["k_rocker"], p["c_rocker"])
    mb.add_load("push", nodes[n // 2], force=force)
    return mb.compile()


def postprocess(result, model, params: dict, out_dir) -> dict:
    """Largest axial force in the coupler and the energy balance drift."""
    return {"max_axial_force_N": float(np.abs(result.element_forces[:, :, 0]).max()),
            "energy_balance_drift_J": float(np.ptp(result.total_energy))}
