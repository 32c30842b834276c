"""Test oracles of the rigid body: eq. (1)–(2) of :mod:`flexmb.elements.rigid_body` as plain
vectorised numpy over bodies. The runtime uses the compiled pass ``rigid_body.accumulate``, which
tests/test_beam_compiled.py compares with these. Never imported by flexmb
(tests/test_architecture.py says so).
"""

from __future__ import annotations

import numpy as np

from flexmb.rotations import cross, skew

__all__ = ["mass_blocks", "gyroscopic", "gravity_wrench"]


def _cg_Jg(R: np.ndarray, com: np.ndarray, inertia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cg = np.einsum("bij,bj->bi", R, com)
    Jg = R @ inertia @ np.swapaxes(R, -1, -2)
    return cg, Jg


def mass_blocks(R: np.ndarray, mass: np.ndarray, com: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """Eq. (1) for all bodies: R (n,3,3) of each body's node -> (n,6,6)."""
    cg, Jg = _cg_Jg(R, com, inertia)
    C = skew(cg)
    m = mass[:, None, None]
    out = np.zeros((len(mass), 6, 6))
    out[:, :3, :3] = m * np.eye(3)
    out[:, :3, 3:] = -m * C
    out[:, 3:, :3] = m * C
    out[:, 3:, 3:] = Jg - m * (C @ C)
    return out


def gyroscopic(R: np.ndarray, w: np.ndarray, mass: np.ndarray, com: np.ndarray, inertia: np.ndarray) -> np.ndarray:
    """Eq. (2): velocity-dependent inertia force (n,6) for node angular velocities w (n,3)."""
    cg, Jg = _cg_Jg(R, com, inertia)
    wwc = cross(w, cross(w, cg))
    lin = mass[:, None] * wwc
    ang = mass[:, None] * cross(cg, wwc) + cross(w, np.einsum("bij,bj->bi", Jg, w))
    return np.concatenate([lin, ang], axis=1)


def gravity_wrench(R: np.ndarray, mass: np.ndarray, com: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Gravity force at the centre of mass as a node wrench (n,6) about the node origin."""
    cg = np.einsum("bij,bj->bi", R, com)
    f = mass[:, None] * g[None, :]
    return np.concatenate([f, cross(cg, f)], axis=1)
