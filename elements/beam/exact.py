"""The beam's numpy code that the runtime needs (vectorised over elements, arrays ``(n, ...)``):
local stiffness and consistent mass (compile), deformations and their derivative (eq. 1–4 of
:mod:`flexmb.elements.beam`), the exact consistent tangent (statics, modal analysis, the
relaxed start), the material-plus-string tangent, the global element mass (eq. 5) and the
section forces. The hot path of the time step is compiled: :mod:`flexmb.elements.beam.kernels`.
"""

from __future__ import annotations

import numpy as np

from flexmb.rotations import cross, expm, jl_inv, logm

__all__ = ["local_stiffness", "local_mass", "deformations", "section_forces", "global_mass", "tangent", "tangent_approx"]


def local_stiffness(L0, E, G, A, Iy, Iz, J, ky=None, kz=None) -> np.ndarray:
    """K_l (n,7,7) on (u, th1x, th1y, th1z, th2x, th2y, th2z); ky/kz: shear factors (None:
    Euler–Bernoulli). Bending about local z uses Iz (deflection along y), about y uses Iy."""
    n = np.size(L0)
    K = np.zeros((n, 7, 7))
    K[:, 0, 0] = E * A / L0
    gt = G * J / L0
    K[:, 1, 1] = K[:, 4, 4] = gt
    K[:, 1, 4] = K[:, 4, 1] = -gt
    for I, k, (a, b) in ((Iz, ky, (3, 6)), (Iy, kz, (2, 5))):
        phi = np.zeros(n) if k is None else 12 * E * I / (k * G * A * L0**2)
        c = E * I / (L0 * (1 + phi))
        K[:, a, a] = K[:, b, b] = c * (4 + phi)
        K[:, a, b] = K[:, b, a] = c * (2 - phi)
    return K


def deformations(x1, R1, x2, R2, C1, C2, L0):
    """Local deformations p_l (n,7) of eq. (2), their derivative Bl (n,7,12) of eq. (3)–(4), the
    co-rotated frame R_r (n,3,3) of eq. (1) and W_r (n,3,12): the co-rotated frame's spin in its own
    axes per unit node motion (x1, w1, x2, w2)."""
    d = x2 - x1
    l = np.linalg.norm(d, axis=-1)
    r1 = d / l[:, None]
    T1 = R1 @ C1
    T2 = R2 @ C2
    q1v, q2v = T1[:, :, 1], T2[:, :, 1]
    q = 0.5 * (q1v + q2v)
    r3 = cross(r1, q)
    r3 /= np.linalg.norm(r3, axis=-1)[:, None]
    r2 = cross(r3, r1)
    Rr = np.stack([r1, r2, r3], axis=-1)
    RrT = np.swapaxes(Rr, 1, 2)
    th1 = logm(RrT @ T1)
    th2 = logm(RrT @ T2)
    n = x1.shape[0]
    p = np.zeros((n, 7))
    p[:, 0] = l - L0
    p[:, 1:4] = th1
    p[:, 4:7] = th2
    # ---- derivative (3), (4): rows of d(w_r) in local components over v = (dx1, dw1, dx2, dw2)
    qa = np.einsum("ni,ni->n", r1, q)
    qb = np.einsum("ni,ni->n", r2, q)
    Wr = np.zeros((n, 3, 12))
    Wr[:, 1, 0:3] = r3 / l[:, None]
    Wr[:, 1, 6:9] = -r3 / l[:, None]
    Wr[:, 2, 0:3] = -r2 / l[:, None]
    Wr[:, 2, 6:9] = r2 / l[:, None]
    # r3 . dq = 1/2 (dw1 . (q1 x r3) + dw2 . (q2 x r3))
    Wr[:, 0] = (qa / qb)[:, None] * Wr[:, 1]
    Wr[:, 0, 3:6] += 0.5 * cross(q1v, r3) / qb[:, None]
    Wr[:, 0, 9:12] += 0.5 * cross(q2v, r3) / qb[:, None]
    Bl = np.zeros((n, 7, 12))
    Bl[:, 0, 0:3] = -r1
    Bl[:, 0, 6:9] = r1
    for i, (th, sl) in enumerate(((th1, slice(3, 6)), (th2, slice(9, 12)))):
        M = np.zeros((n, 3, 12))
        M[:, :, sl] = RrT
        Bl[:, 1 + 3 * i: 4 + 3 * i] = jl_inv(th) @ (M - Wr)
    return p, Bl, Rr, Wr


_T0 = np.array([[156, 0, 54, 0], [0, 0, 0, 0], [54, 0, 156, 0], [0, 0, 0, 0]], dtype=float)
_T1 = np.array([[0, 22, 0, -13], [22, 0, 13, 0], [0, 13, 0, -22], [-13, 0, -22, 0]], dtype=float)
_T2 = np.array([[0, 0, 0, 0], [0, 4, 0, -3], [0, 0, 0, 0], [0, -3, 0, 4]], dtype=float)
_R0 = np.array([[36, 0, -36, 0], [0, 0, 0, 0], [-36, 0, 36, 0], [0, 0, 0, 0]], dtype=float)
_R1 = np.array([[0, 3, 0, 3], [3, 0, -3, 0], [0, -3, 0, -3], [3, 0, -3, 0]], dtype=float)
_R2 = np.array([[0, 0, 0, 0], [0, 4, 0, -1], [0, 0, 0, 0], [0, -1, 0, 4]], dtype=float)


def local_mass(L0, rhoA, rhoIy, rhoIz) -> np.ndarray:
    """Consistent mass M_l (n,12,12) of eq. (5) on local (u1, th1, u2, th2): linear axial and
    torsional, cubic (Hermite) bending with Rayleigh rotary inertia (Przemieniecki §11).
    rhoA: mass per length; rhoIy, rhoIz: rotary inertia per length about the section axes."""
    L0, rhoA, rhoIy, rhoIz = np.broadcast_arrays(*(np.atleast_1d(np.asarray(a, dtype=float)) for a in (L0, rhoA, rhoIy, rhoIz)))
    n = L0.size
    M = np.zeros((n, 12, 12))
    m = rhoA * L0
    ip = (rhoIy + rhoIz) * L0
    for (i, j), c in (((0, 0), 2), ((0, 6), 1), ((6, 0), 1), ((6, 6), 2)):
        M[:, i, j] = m * c / 6
        M[:, i + 3, j + 3] = ip * c / 6
    # bending: translation v (y) with th_z (dv/ds = th_z); w (z) with th_y (dw/ds = -th_y); entries are
    # m/420 (T0 + s T1 L + T2 L^2) + rho I/(30 L) (R0 + s R1 L + R2 L^2), s = +1 (y) or -1 (z)
    for dofs, s, rI in (((1, 5, 7, 11), 1.0, rhoIz), ((2, 4, 8, 10), -1.0, rhoIy)):
        L = L0[:, None, None]
        H = (m / 420)[:, None, None] * (_T0 + s * _T1 * L + _T2 * L * L)
        H += (rI / (30 * L0))[:, None, None] * (_R0 + s * _R1 * L + _R2 * L * L)
        M[:, np.array(dofs)[:, None], np.array(dofs)[None, :]] = H
    return M


def global_mass(Rr, Ml) -> np.ndarray:
    """Element mass M = R~ M_l R~^T (n,12,12) in global node components (eq. 5)."""
    n = Rr.shape[0]
    M = Ml.reshape(n, 4, 3, 4, 3)
    M = np.einsum("nia,nkalb,njb->nkilj", Rr, M, Rr)
    return M.reshape(n, 12, 12)


def section_forces(fl: np.ndarray, L0: np.ndarray) -> np.ndarray:
    """Element outputs (n,6) from local forces: axial force N, shear forces Vy, Vz, torque T,
    bending moments My, Mz (mean of the two ends; shear from the end-moment gradient)."""
    My1, Mz1, My2, Mz2 = fl[:, 2], fl[:, 3], fl[:, 5], fl[:, 6]
    out = np.empty((fl.shape[0], 6))  # the columns written in place (an output row's: no stack of temporaries)
    out[:, 0] = fl[:, 0]
    np.divide(Mz1 + Mz2, L0, out=out[:, 1])
    np.divide(-(My1 + My2), L0, out=out[:, 2])
    out[:, 3] = fl[:, 4]
    np.multiply(0.5, My2 - My1, out=out[:, 4])
    np.multiply(0.5, Mz2 - Mz1, out=out[:, 5])
    return out


def tangent(x1, R1, x2, R2, C1, C2, L0, Kl, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Consistent stiffness (n,12,12) = -d(elastic node forces)/d(node motions) and its material
    part Bl^T K_l Bl. With f = Bl^T f_l the tangent is Bl^T K_l Bl + d(Bl^T)/dX f_l: the material part
    is analytic, the geometric part is the central difference of Bl(X)^T f_l with the local forces
    f_l frozen at X, along the 24 node motions of each element (all elements in one vectorised call;
    rotations along the retraction R <- expm(dw) R), symmetrised. Differencing only the geometric
    part keeps the truncation error proportional to the stress (zero at rest) instead of EA eps^2/L^3
    of the axial stiffness, which would swamp the bending stiffness of slender elements."""
    n = x1.shape[0]
    p0, Bl0, *_ = deformations(x1, R1, x2, R2, C1, C2, L0)
    fl0 = np.einsum("nij,nj->ni", Kl, p0)
    Km = np.swapaxes(Bl0, 1, 2) @ Kl @ Bl0
    steps = np.concatenate([np.eye(12), -np.eye(12)]) * eps  # (24, 12)
    X = np.repeat(steps[None], n, axis=0).reshape(-1, 12)  # element-major
    rep = lambda a: np.repeat(a, 24, axis=0)  # noqa: E731
    x1p = rep(x1) + X[:, 0:3]
    x2p = rep(x2) + X[:, 6:9]
    R1p = expm(X[:, 3:6]) @ rep(R1)
    R2p = expm(X[:, 9:12]) @ rep(R2)
    _, Bl, *_ = deformations(x1p, R1p, x2p, R2p, rep(C1), rep(C2), rep(L0))
    f = np.einsum("nji,nj->ni", Bl, rep(fl0)).reshape(n, 24, 12)
    Kg = ((f[:, :12] - f[:, 12:]) / (2 * eps)).transpose(0, 2, 1)
    K = Km + 0.5 * (Kg + np.swapaxes(Kg, 1, 2))
    return K, Km


def tangent_approx(x1, R1, x2, R2, C1, C2, L0, Kl) -> tuple[np.ndarray, np.ndarray]:
    """Material stiffness Bl^T K_l Bl plus the string (axial-force) geometric stiffness
    N/l [[P, -P], [-P, P]] on the translations, P = I - r1 r1^T: the dominant geometric term
    of slender links; analytic and cheap. Returns (K, K_material)."""
    p, Bl, Rr, _ = deformations(x1, R1, x2, R2, C1, C2, L0)
    Km = np.swapaxes(Bl, 1, 2) @ Kl @ Bl
    N = Kl[:, 0, 0] * p[:, 0]
    r1 = Rr[:, :, 0]
    l = L0 + p[:, 0]
    P = (N / l)[:, None, None] * (np.eye(3) - r1[:, :, None] * r1[:, None, :])
    K = Km.copy()
    K[:, 0:3, 0:3] += P
    K[:, 6:9, 6:9] += P
    K[:, 0:3, 6:9] -= P
    K[:, 6:9, 0:3] -= P
    return K, Km
