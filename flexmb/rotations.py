"""Rotation utilities on SO(3), vectorised over leading axes.

Conventions: a rotation matrix ``R`` maps node-frame components to global ones
(its columns are the node axes e1, e2, e3). ``expm`` / ``logm`` are the
exponential and logarithm maps of SO(3) (Rodrigues' formula).
"""

from __future__ import annotations

import numpy as np

__all__ = ["skew", "expm", "logm", "axis_angle", "cross"]


def skew(v: np.ndarray) -> np.ndarray:
    """Return the skew-symmetric matrix ``[v]x`` with ``[v]x w = v x w`` (last axis 3)."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape + (3,))
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out


def expm(phi: np.ndarray) -> np.ndarray:
    """Exponential map so(3) -> SO(3): rotation by the rotation vector ``phi``."""
    phi = np.asarray(phi, dtype=float)
    th2 = np.sum(phi * phi, axis=-1)
    th = np.sqrt(th2)
    small = th2 < 1e-12
    ths = np.where(small, 1.0, th)
    a = np.where(small, 1.0 - th2 / 6.0, np.sin(ths) / ths)
    b = np.where(small, 0.5 - th2 / 24.0, (1.0 - np.cos(ths)) / (ths * ths))
    K = skew(phi)
    eye = np.broadcast_to(np.eye(3), K.shape)
    return eye + a[..., None, None] * K + b[..., None, None] * (K @ K)


def logm(R: np.ndarray) -> np.ndarray:
    """Logarithm map SO(3) -> rotation vector (angle in [0, pi])."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R, axis1=-2, axis2=-1)
    c = np.clip(0.5 * (tr - 1.0), -1.0, 1.0)
    w = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], axis=-1)
    # atan2 keeps full precision for small angles (arccos of the trace loses half the digits)
    th = np.arctan2(0.5 * np.linalg.norm(w, axis=-1), c)
    s = np.sin(th)
    small = th < 1e-6
    near_pi = th > np.pi - 1e-4
    fac = np.where(small, 0.5 + th * th / 12.0, th / (2.0 * np.where(small, 1.0, s)))
    out = fac[..., None] * w
    if np.any(near_pi):
        # Near pi the antisymmetric part vanishes: use (R + R^T)/2 = c I + (1 - c) n n^T.
        Rp, thp, cp = R[near_pi], th[near_pi], c[near_pi]
        nn = (0.5 * (Rp + np.swapaxes(Rp, -1, -2)) - cp[:, None, None] * np.eye(3)) / (1.0 - cp)[:, None, None]
        k = np.argmax(np.diagonal(nn, axis1=-2, axis2=-1), axis=-1)
        n = nn[np.arange(len(k)), :, k]
        n /= np.linalg.norm(n, axis=-1, keepdims=True)
        sign = np.sign(np.sum(n * w[near_pi], axis=-1))
        sign[sign == 0] = 1.0
        out[near_pi] = (sign * thp)[:, None] * n
    return out


def axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotation about unit ``axis`` by ``angle`` (broadcast over leading axes)."""
    return expm(np.asarray(axis, dtype=float) * np.asarray(angle, dtype=float)[..., None])


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product over the last axis (broadcasting), without np.cross's overhead."""
    out = np.empty(a.shape if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape))
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    out[..., 0] = a1 * b2 - a2 * b1
    out[..., 1] = a2 * b0 - a0 * b2
    out[..., 2] = a0 * b1 - a1 * b0
    return out
