"""Rigid body on a node: 6x6 node-level mass matrix, gyroscopic and gravity forces.

A body with mass m, centre of mass c (node axes) and inertia J_c about its centre of mass
(node axes) on a node with rotation R has, with c_g = R c and J_g = R J_c R^T, the node-level
Newton–Euler inertia about the node origin (twist ordering (v, w)):

    M = [[m I,        -m [c_g]x              ],
         [m [c_g]x,    J_g - m [c_g]x [c_g]x ]]                                   (1)

and the velocity-dependent (gyroscopic) force

    g = ( m w x (w x c_g),  m c_g x (w x (w x c_g)) + w x J_g w ).                  (2)

Gravity acts at the centre of mass: f = (m g, c_g x m g); potential energy -m g . x_com.
"""

from __future__ import annotations

import numpy as np

from flexmb.rotations import cross, skew

__all__ = ["mass_blocks", "gyroscopic", "gravity_wrench", "potential_energy", "kinetic_energy"]


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


def potential_energy(x: np.ndarray, R: np.ndarray, mass: np.ndarray, com: np.ndarray, g: np.ndarray) -> float:
    """Gravitational potential energy  -sum m g . x_com."""
    xc = x + np.einsum("bij,bj->bi", R, com)
    return float(-np.sum(mass * (xc @ g)))


def kinetic_energy(Mb: np.ndarray, V: np.ndarray) -> float:
    """Kinetic energy 1/2 sum V^T M V from mass blocks (n,6,6) and node twists (n,6)."""
    return float(0.5 * np.einsum("bi,bij,bj->", V, Mb, V))
