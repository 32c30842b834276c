"""Two-node co-rotational 3-D beam (Crisfield 1990; Battini & Pacoste 2002), vectorised.

Reference: length L0, section frame E0 (e1 along the axis, e2, e3 the section's principal
axes) held by each node i through the constant offset C_i = R_i0^T E0, so the current nodal
section frames are T_i = R_i C_i. Co-rotated frame R_r = [r1 r2 r3]:

    r1 = (x2 - x1) / l,   q = (T1 e2 + T2 e2) / 2,   r3 = r1 x q / |r1 x q|,   r2 = r3 x r1    (1)

Local deformations p_l = (u, th1, th2): u = l - L0, th_i = log(R_r^T T_i)                    (2)

Their variations with respect to the node motions (dx_i, dw_i; dw a global spin):

    du = r1 . (dx2 - dx1)
    dw_r (local) = [ (q1/q2) a2 + r3.dq / q2,  -r3.(dx2-dx1)/l,  r2.(dx2-dx1)/l ]            (3)
        with a2 = -r3.(dx2-dx1)/l, q_k = r_k . q, dq = (dw1 x T1e2 + dw2 x T2e2)/2
    dth_i = J_l^-1(th_i) R_r^T (dw_i - dw_r)                                                  (4)

collected in p_l' = Bl v (Bl: 7x12). Strain energy U = 1/2 p_l^T K_l p_l with the small-strain
Euler–Bernoulli or Timoshenko stiffness K_l (axial EA/L0, torsion GJ/L0, bending
EI/(L0(1+Φ)) [[4+Φ, 2-Φ], [2-Φ, 4+Φ]] with Φ = 12 EI / (κ G A L0²), Φ = 0 for Euler–
Bernoulli). Internal nodal forces f = Bl^T K_l p_l (exact gradient: conservative and
objective, a rigid motion leaves p_l unchanged). Damping on the deformational velocities:
f_d = Bl^T (α K_l) Bl v (stiffness-proportional, Zahariev eq. 13).

Mass: consistent translational mass ρA L0/6 [[2I, I], [I, 2I]] (constant in global axes) and
nodal rotary inertia ρ L0/2 diag(Iy + Iz, Iy, Iz) in the section frame, with its gyroscopic
moment w x J w.
"""

from __future__ import annotations

import numpy as np

from flexmb.rotations import cross, logm, skew

__all__ = ["local_stiffness", "deformations", "internal_forces", "section_forces"]


def _jl_inv(phi: np.ndarray) -> np.ndarray:
    th = np.linalg.norm(phi, axis=-1)
    K = skew(phi)
    small = th < 1e-4
    ths = np.where(small, 1.0, th)
    c = np.where(small, 1.0 / 12.0 + th**2 / 720.0, 1.0 / ths**2 - (1 + np.cos(ths)) / (2 * ths * np.sin(ths)))
    return np.eye(3) - 0.5 * K + c[..., None, None] * (K @ K)


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
    """Local deformations p_l (n,7), their derivative Bl (n,7,12), and the co-rotated frame."""
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
        Bl[:, 1 + 3 * i: 4 + 3 * i] = _jl_inv(th) @ (M - Wr)
    return p, Bl, Rr


def internal_forces(x1, R1, x2, R2, V, C1, C2, L0, Kl, alpha):
    """Node forces (n,12) = -(elastic + damping) on (F1, M1, F2, M2), strain energy (n,), local
    forces f_l (n,7), dissipated power (n,) and the matrices Bl (n,7,12)."""
    p, Bl, _ = deformations(x1, R1, x2, R2, C1, C2, L0)
    fl = np.einsum("nij,nj->ni", Kl, p)
    pdot = np.einsum("nij,nj->ni", Bl, V)
    fd = alpha[:, None] * np.einsum("nij,nj->ni", Kl, pdot)
    f = -np.einsum("nji,nj->ni", Bl, fl + fd)
    energy = 0.5 * np.einsum("ni,ni->n", p, fl)
    power = np.einsum("ni,ni->n", pdot, fd)
    return f, energy, fl, power, Bl


def section_forces(fl: np.ndarray, L0: np.ndarray) -> np.ndarray:
    """Element outputs (n,6) from local forces: axial force N, shear forces Vy, Vz, torque T,
    bending moments My, Mz (mean of the two ends; shear from the end-moment gradient)."""
    N = fl[:, 0]
    T = fl[:, 4]
    My1, Mz1, My2, Mz2 = fl[:, 2], fl[:, 3], fl[:, 5], fl[:, 6]
    Vy = (Mz1 + Mz2) / L0
    Vz = -(My1 + My2) / L0
    return np.stack([N, Vy, Vz, T, 0.5 * (My2 - My1), 0.5 * (Mz2 - Mz1)], axis=1)


def tangent(x1, R1, x2, R2, C1, C2, L0, Kl, eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Stiffness (n,12,12) = -d(elastic node forces)/d(node motions) by central differences of
    the exact internal forces along the 24 node motions of each element (all elements in one
    vectorised call), symmetrised; and its material part Bl^T K_l Bl."""
    from flexmb.rotations import expm

    n = x1.shape[0]
    steps = np.concatenate([np.eye(12), -np.eye(12)]) * eps  # (24, 12)
    X = np.repeat(steps[None], n, axis=0).reshape(-1, 12)  # element-major
    rep = lambda a: np.repeat(a, 24, axis=0)  # noqa: E731
    x1p = rep(x1) + X[:, 0:3]
    x2p = rep(x2) + X[:, 6:9]
    R1p = expm(X[:, 3:6]) @ rep(R1)
    R2p = expm(X[:, 9:12]) @ rep(R2)
    p, Bl, _ = deformations(x1p, R1p, x2p, R2p, rep(C1), rep(C2), rep(L0))
    f = np.einsum("nji,nj->ni", Bl, np.einsum("nij,nj->ni", rep(Kl), p)).reshape(n, 24, 12)
    K = ((f[:, :12] - f[:, 12:]) / (2 * eps)).transpose(0, 2, 1)
    K = 0.5 * (K + np.swapaxes(K, 1, 2))
    _, Bl0, _ = deformations(x1, R1, x2, R2, C1, C2, L0)
    return K, np.swapaxes(Bl0, 1, 2) @ Kl @ Bl0


def tangent_approx(x1, R1, x2, R2, C1, C2, L0, Kl) -> tuple[np.ndarray, np.ndarray]:
    """Material stiffness Bl^T K_l Bl plus the string (axial-force) geometric stiffness
    N/l [[P, -P], [-P, P]] on the translations, P = I - r1 r1^T: the dominant geometric term
    of slender links; analytic and cheap. Returns (K, K_material)."""
    p, Bl, Rr = deformations(x1, R1, x2, R2, C1, C2, L0)
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
