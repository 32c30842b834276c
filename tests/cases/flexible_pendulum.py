"""Flexible pendulum: a beam pinned at one end swinging under gravity (tiny case for the sweep tests).

A uniform aluminium-like beam of length ``length`` (``n_elements`` co-rotational elements,
stiffness-proportional damping ``alpha``) hangs from a revolute joint at the origin about z,
released at rest at ``theta0`` from the horizontal, with a point mass ``tip_mass`` on its
free end (a rigid body on the tip node). ``fail_at`` >= 0 makes a tip load NaN from this time
on, so Newton fails there (to test how a failed run is recorded); ``n_elements`` < 1 makes
build() raise (a bad parameter). Test hook: with the environment variable ``FLEXMB_TEST_HOLD``
set, build() of a run with ``theta0`` != 0 waits until the file it names exists (the killed-sweep
test kills the sweep while such a run is held, so which runs finished depends on events, not on
the machine's speed).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

import flexmb as fm

DEFAULTS = dict(length=1.0, E=0.7e9, n_elements=2, alpha=1e-3, theta0=0.0, tip_mass=0.5, fail_at=-1.0,
                t_end=0.04, dt=2e-3, rho_inf=0.8)


def build(**params) -> fm.Model:
    """The pinned beam with its tip mass."""
    p = {**DEFAULTS, **params}
    L, th, fail_at = p["length"], p["theta0"], p["fail_at"]
    hold = os.environ.get("FLEXMB_TEST_HOLD")
    if hold and th != 0:
        deadline = time.monotonic() + 900  # guards a hang only
        while not Path(hold).exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"held for 900 s: {hold} never appeared")
            time.sleep(0.02)
    tip = (L * np.cos(th), L * np.sin(th), 0.0)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("hub", (0, 0, 0))
    mb.add_body("hub", "hub", 0.1, (0, 0, 0), np.eye(3) * 1e-4)
    mb.add_joint("pin", "revolute", "ground", "hub", point=(0, 0, 0), axis=(0, 0, 1))
    E = p["E"]
    sec = fm.BeamSection(E, E / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)
    nodes = mb.add_flexible_link("beam", (0, 0, 0), tip, p["n_elements"], sec, node_a="hub", damping=p["alpha"])
    mb.add_body("tip", nodes[-1], p["tip_mass"], (0, 0, 0), np.eye(3) * 1e-6)

    def load(t):
        return np.array([0.0, np.nan if 0 <= fail_at <= t else 0.0, 0.0])

    mb.add_load("probe", nodes[-1], force=load)
    return mb.compile()


def postprocess(result, model, params: dict, out_dir) -> dict:
    """Pin angle at the end and the largest axial force in the beam."""
    return {"pin_angle_end_rad": float(result.coordinate("pin.q")[-1]),
            "max_axial_force_N": float(np.abs(result.element_forces[:, :, 0]).max())}
