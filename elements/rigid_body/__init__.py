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
from numba import njit

__all__ = ["potential_energy", "kinetic_energy", "accumulate"]


def potential_energy(x: np.ndarray, R: np.ndarray, mass: np.ndarray, com: np.ndarray, g: np.ndarray) -> float:
    """Gravitational potential energy  -sum m g . x_com."""
    xc = x + np.einsum("bij,bj->bi", R, com)
    return float(-np.sum(mass * (xc @ g)))


def kinetic_energy(Mb: np.ndarray, V: np.ndarray) -> float:
    """Kinetic energy 1/2 sum V^T M V from mass blocks (n,6,6) and node twists (n,6)."""
    return float(0.5 * np.einsum("bi,bij,bj->", V, Mb, V))


@njit(cache=True)
def accumulate(node, R, w, mass, com, inertia, g, load_factor, Mb, bias):
    """Compiled pass over all bodies: adds eq. (1) to the node mass blocks Mb (N,6,6) and the
    gyroscopic force (2) minus load_factor times the weight to the node wrenches bias (N,6).
    R (N,3,3), w (N,3): rotations and angular velocities of the nodes."""
    cg = np.empty(3)
    Jg = np.empty((3, 3))
    T = np.empty((3, 3))
    wc = np.empty(3)
    wwc = np.empty(3)
    Jw = np.empty(3)
    for k in range(node.size):
        i = node[k]
        m = mass[k]
        for r in range(3):
            cg[r] = R[i, r, 0] * com[k, 0] + R[i, r, 1] * com[k, 1] + R[i, r, 2] * com[k, 2]
        for r in range(3):
            for c in range(3):
                T[r, c] = inertia[k, r, 0] * R[i, c, 0] + inertia[k, r, 1] * R[i, c, 1] + inertia[k, r, 2] * R[i, c, 2]
        for r in range(3):
            for c in range(3):
                Jg[r, c] = R[i, r, 0] * T[0, c] + R[i, r, 1] * T[1, c] + R[i, r, 2] * T[2, c]
        # mass blocks: [[m I, -m [c]x], [m [c]x, Jg - m [c]x [c]x]];  [c]x[c]x = c c^T - |c|^2 I
        c2 = cg[0] * cg[0] + cg[1] * cg[1] + cg[2] * cg[2]
        for r in range(3):
            Mb[i, r, r] += m
            for c in range(3):
                Mb[i, 3 + r, 3 + c] += Jg[r, c] - m * (cg[r] * cg[c] - (c2 if r == c else 0.0))
        Mb[i, 0, 4] += m * cg[2]
        Mb[i, 0, 5] -= m * cg[1]
        Mb[i, 1, 3] -= m * cg[2]
        Mb[i, 1, 5] += m * cg[0]
        Mb[i, 2, 3] += m * cg[1]
        Mb[i, 2, 4] -= m * cg[0]
        Mb[i, 4, 0] += m * cg[2]
        Mb[i, 5, 0] -= m * cg[1]
        Mb[i, 3, 1] -= m * cg[2]
        Mb[i, 5, 1] += m * cg[0]
        Mb[i, 3, 2] += m * cg[1]
        Mb[i, 4, 2] -= m * cg[0]
        # gyroscopic (2) and weight
        w0, w1, w2 = w[i, 0], w[i, 1], w[i, 2]
        wc[0], wc[1], wc[2] = w1 * cg[2] - w2 * cg[1], w2 * cg[0] - w0 * cg[2], w0 * cg[1] - w1 * cg[0]
        wwc[0], wwc[1], wwc[2] = w1 * wc[2] - w2 * wc[1], w2 * wc[0] - w0 * wc[2], w0 * wc[1] - w1 * wc[0]
        for r in range(3):
            Jw[r] = Jg[r, 0] * w0 + Jg[r, 1] * w1 + Jg[r, 2] * w2
        f0, f1, f2 = load_factor * m * g[0], load_factor * m * g[1], load_factor * m * g[2]
        bias[i, 0] += m * wwc[0] - f0
        bias[i, 1] += m * wwc[1] - f1
        bias[i, 2] += m * wwc[2] - f2
        bias[i, 3] += m * (cg[1] * wwc[2] - cg[2] * wwc[1]) + w1 * Jw[2] - w2 * Jw[1] - (cg[1] * f2 - cg[2] * f1)
        bias[i, 4] += m * (cg[2] * wwc[0] - cg[0] * wwc[2]) + w2 * Jw[0] - w0 * Jw[2] - (cg[2] * f0 - cg[0] * f2)
        bias[i, 5] += m * (cg[0] * wwc[1] - cg[1] * wwc[0]) + w0 * Jw[1] - w1 * Jw[0] - (cg[0] * f1 - cg[1] * f0)
