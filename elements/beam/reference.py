"""Test oracles of the beam: eq. (1)–(7) of :mod:`flexmb.elements.beam` as plain vectorised numpy
(readable executable maths, arrays ``(n, ...)`` over elements). The runtime uses the compiled
kernels (:mod:`flexmb.elements.beam.kernels`), which the tests compare with these. Never
imported by flexmb (tests/test_architecture.py says so).
"""

from __future__ import annotations

import numpy as np

from flexmb.elements.beam.exact import deformations
from flexmb.rotations import cross

__all__ = ["internal_forces", "elastic_forces", "mass_times", "kinetic_energy", "inertia_forces", "gravity_forces"]


def internal_forces(x1, R1, x2, R2, V, C1, C2, L0, Kl, alpha):
    """Node forces (n,12) = -(elastic + damping) on (F1, M1, F2, M2), strain energy (n,), local
    forces f_l (n,7), dissipated power (n,) and the matrices Bl (n,7,12)."""
    p, Bl, *_ = deformations(x1, R1, x2, R2, C1, C2, L0)
    return elastic_forces(p, Bl, V, Kl, alpha) + (Bl,)


def elastic_forces(p, Bl, V, Kl, alpha):
    """Elastic and damping node forces -Bl^T K_l (p + alpha p') (n,12), strain energy (n,), local
    forces K_l p (n,7) and dissipated power (n,), from precomputed deformations."""
    fl = np.einsum("nij,nj->ni", Kl, p)
    pdot = np.einsum("nij,nj->ni", Bl, V)
    fd = alpha[:, None] * np.einsum("nij,nj->ni", Kl, pdot)
    f = -np.einsum("nji,nj->ni", Bl, fl + fd)
    energy = 0.5 * np.einsum("ni,ni->n", p, fl)
    power = np.einsum("ni,ni->n", pdot, fd)
    return f, energy, fl, power


def _to_local(Rr, v):
    """Blockwise R_r^T v for node vectors v (n,12) -> (n,4,3)."""
    return np.einsum("nji,nkj->nki", Rr, v.reshape(-1, 4, 3))


def _to_global(Rr, vl):
    """Blockwise R_r vl for local block vectors (n,4,3) -> (n,12)."""
    return np.einsum("nij,nkj->nki", Rr, vl).reshape(-1, 12)


def mass_times(Rr, Ml, a) -> np.ndarray:
    """M a = R~ M_l R~^T a (n,12) for node accelerations a (n,12) (eq. 5)."""
    al = _to_local(Rr, a).reshape(-1, 12)
    return _to_global(Rr, np.einsum("nij,nj->ni", Ml, al).reshape(-1, 4, 3))


def kinetic_energy(Rr, Ml, V) -> np.ndarray:
    """T (n,) of eq. (5) for node twists V (n,12)."""
    vl = _to_local(Rr, V).reshape(-1, 12)
    return 0.5 * np.einsum("ni,nij,nj->n", vl, Ml, vl)


def inertia_forces(Rr, Wr, Ml, V) -> np.ndarray:
    """Velocity-dependent inertia node forces of eq. (6) (everything but M a), (n,12)."""
    Vb = V.reshape(-1, 4, 3)
    P = mass_times(Rr, Ml, V).reshape(-1, 4, 3)
    W = np.einsum("nij,njk,nk->ni", Rr, Wr, V)  # spin of the co-rotated frame, global
    WxV = cross(W[:, None, :], Vb)
    g = cross(W[:, None, :], P).reshape(-1, 12) - mass_times(Rr, Ml, WxV.reshape(-1, 12))
    g -= np.einsum("nij,njk,ni->nk", Rr, Wr, cross(P, Vb).sum(axis=1))
    g = g.reshape(-1, 4, 3)
    g[:, 1] -= cross(Vb[:, 1], P[:, 1])
    g[:, 3] -= cross(Vb[:, 3], P[:, 3])
    return g.reshape(-1, 12)


def gravity_forces(p, Bl, Rr, Wr, x1, x2, mass, L0, g) -> tuple[np.ndarray, np.ndarray]:
    """Weight of the elements as node forces (n,12) and potential energy (n,) of eq. (7)."""
    dl = (L0 / 12)[:, None] * np.stack([np.zeros_like(L0), p[:, 3] - p[:, 6], p[:, 5] - p[:, 2]], axis=1)
    c = np.einsum("nij,nj->ni", Rr, dl)
    mg = mass[:, None] * g[None, :]
    energy = -np.einsum("ni,ni->n", mg, 0.5 * (x1 + x2) + c)
    f = np.zeros((p.shape[0], 12))
    f[:, 0:3] = 0.5 * mg
    f[:, 6:9] = 0.5 * mg
    Wg = np.einsum("nij,njk->nik", Rr, Wr)
    f += np.einsum("nik,ni->nk", Wg, cross(c, mg))
    # d(d_l)/dX = D Bl with D picking (th1z - th2z, th2y - th1y) scaled by L0/12
    gl = np.einsum("nji,nj->ni", Rr, mg) * (L0 / 12)[:, None]
    f += gl[:, 1:2] * (Bl[:, 3] - Bl[:, 6]) + gl[:, 2:3] * (Bl[:, 5] - Bl[:, 2])
    return f, energy
