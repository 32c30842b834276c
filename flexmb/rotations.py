"""SO(3): the one home of flexmb's rotation maths, in two forms.

* numpy, vectorised over leading axes: :func:`skew`, :func:`expm`, :func:`logm`,
  :func:`jl_inv`, :func:`axis_angle`, :func:`cross`;
* compiled (numba ``@njit``), one vector or matrix at a time written into ``out``, for the
  kernels: :func:`skew_into`, :func:`expm_into`, :func:`logm_into`, :func:`jl_inv_into`,
  :func:`axis_angle_into`, :func:`cross_into`, :func:`matmul3_into`.

Conventions: a rotation matrix ``R`` maps node-frame components to global ones
(its columns are the node axes e1, e2, e3). ``expm`` / ``logm`` are the
exponential and logarithm maps of SO(3) (Rodrigues' formula).

Below ``SMALL_ANGLE`` (0.03 rad: a beam element's own rotations, nearly always) ``logm`` and
``jl_inv`` take their trigonometric factors from Taylor series, θ/(2 sin θ) as asin(s)/(2 s) of
s = sin θ and 1/θ² - (1 + cos θ)/(2 θ sin θ) = 1/12 + θ²/720 + θ⁴/30240 + θ⁶/1209600: the first
term left out is below 2e-17 of the sum there (round-off), and the kernels call no atan2, sin or
cos for them (two of each per beam element and evaluation before; the closed form of J_l⁻¹'s factor
also cancels to about 1e-12 there). So does ``expm`` (a node's rotation increment in a step, nearly
always): sin θ/θ = 1 - θ²/6 + θ⁴/120 - θ⁶/5040 and (1 - cos θ)/θ² = 1/2 - θ²/24 + θ⁴/720 - θ⁶/40320,
the first terms left out below 2e-18 of the sums (:func:`expm_factors`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["skew", "expm", "logm", "jl_inv", "axis_angle", "cross", "skew_into", "expm_into", "expm_factors", "logm_into",
           "jl_inv_into", "axis_angle_into", "cross_into", "matmul3_into", "SMALL_ANGLE"]

SMALL_ANGLE = 0.03  # below: logm's and jl_inv's factors from their Taylor series (module docstring)


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
    small = th2 < SMALL_ANGLE * SMALL_ANGLE  # sin θ/θ and (1 - cos θ)/θ² by their series (module docstring)
    ths = np.where(small, 1.0, th)
    a = np.where(small, 1.0 + th2 * (-1.0 / 6.0 + th2 * (1.0 / 120.0 + th2 * (-1.0 / 5040.0))), np.sin(ths) / ths)
    b = np.where(small, 0.5 + th2 * (-1.0 / 24.0 + th2 * (1.0 / 720.0 + th2 * (-1.0 / 40320.0))),
                 (1.0 - np.cos(ths)) / (ths * ths))
    K = skew(phi)
    eye = np.broadcast_to(np.eye(3), K.shape)
    return eye + a[..., None, None] * K + b[..., None, None] * (K @ K)


def logm(R: np.ndarray) -> np.ndarray:
    """Logarithm map SO(3) -> rotation vector (angle in [0, pi])."""
    R = np.asarray(R, dtype=float)
    tr = np.trace(R, axis1=-2, axis2=-1)
    c = np.clip(0.5 * (tr - 1.0), -1.0, 1.0)
    w = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], axis=-1)
    sn = 0.5 * np.sqrt(w[..., 0] * w[..., 0] + w[..., 1] * w[..., 1] + w[..., 2] * w[..., 2])  # sin θ
    # atan2 keeps full precision for small angles (arccos of the trace loses half the digits)
    th = np.arctan2(sn, c)
    s = np.sin(th)
    small = (c > 0.0) & (sn < SMALL_ANGLE)  # θ/(2 sin θ) = asin(s)/(2 s), its series (module docstring)
    near_pi = th > np.pi - 1e-4
    s2 = sn * sn
    series = 0.5 * (1.0 + s2 * (1.0 / 6.0 + s2 * (3.0 / 40.0 + s2 * (5.0 / 112.0 + s2 * (35.0 / 1152.0)))))
    fac = np.where(small, series, th / (2.0 * np.where(small, 1.0, s)))
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


def jl_inv(phi: np.ndarray) -> np.ndarray:
    """Inverse left Jacobian of SO(3), J_l⁻¹(φ) = I - [φ]x/2 + c(θ) [φ]x² with
    c = 1/θ² - (1 + cos θ)/(2 θ sin θ) (its series below SMALL_ANGLE: module docstring), vectorised
    over leading axes: the variation of φ = log(R) under a global spin dw of R is J_l⁻¹(φ) dw."""
    phi = np.asarray(phi, dtype=float)
    th2 = phi[..., 0] * phi[..., 0] + phi[..., 1] * phi[..., 1] + phi[..., 2] * phi[..., 2]
    th = np.sqrt(th2)
    K = skew(phi)
    small = th2 < SMALL_ANGLE * SMALL_ANGLE
    ths = np.where(small, 1.0, th)
    series = 1.0 / 12.0 + th2 * (1.0 / 720.0 + th2 * (1.0 / 30240.0 + th2 * (1.0 / 1209600.0)))
    c = np.where(small, series, 1.0 / ths**2 - (1 + np.cos(ths)) / (2 * ths * np.sin(ths)))
    return np.eye(3) - 0.5 * K + c[..., None, None] * (K @ K)


# ---------------------------------------------------------------------------- compiled (numba) versions
# One 3-vector or 3x3 matrix at a time, written into ``out`` (no allocation): the building blocks of
# the compiled kernels (elements/*/kernels.py, engine/kinematics.py). Each computes what its numpy
# namesake above computes (tests/test_rotations.py compares them).

@njit(cache=True)
def cross_into(a, b, out):
    """out = a x b (3-vectors; out distinct from a and b)."""
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def skew_into(v, out):
    """out (3,3) = [v]x."""
    out[0, 0], out[0, 1], out[0, 2] = 0.0, -v[2], v[1]
    out[1, 0], out[1, 1], out[1, 2] = v[2], 0.0, -v[0]
    out[2, 0], out[2, 1], out[2, 2] = -v[1], v[0], 0.0


@njit(cache=True)
def matmul3_into(A, B, out):
    """out (3,3) = A B (out distinct from A and B)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = A[i, 0] * B[0, j] + A[i, 1] * B[1, j] + A[i, 2] * B[2, j]


@njit(cache=True)
def axis_angle_into(a0, a1, a2, th, out):
    """out (3,3): rotation by angle th about the unit axis (a0, a1, a2) (Rodrigues)."""
    s, c = np.sin(th), np.cos(th)
    v = 1.0 - c
    out[0, 0] = c + a0 * a0 * v
    out[0, 1] = a0 * a1 * v - a2 * s
    out[0, 2] = a0 * a2 * v + a1 * s
    out[1, 0] = a1 * a0 * v + a2 * s
    out[1, 1] = c + a1 * a1 * v
    out[1, 2] = a1 * a2 * v - a0 * s
    out[2, 0] = a2 * a0 * v - a1 * s
    out[2, 1] = a2 * a1 * v + a0 * s
    out[2, 2] = c + a2 * a2 * v


@njit(cache=True, inline="always")
def expm_factors(th2):
    """(sin θ/θ, (1 - cos θ)/θ²) of θ² = ``th2``, Rodrigues' factors of :func:`expm`: below
    SMALL_ANGLE by their Taylor series (module docstring), with no sqrt, sin or cos."""
    if th2 < SMALL_ANGLE * SMALL_ANGLE:
        return (1.0 + th2 * (-1.0 / 6.0 + th2 * (1.0 / 120.0 + th2 * (-1.0 / 5040.0))),
                0.5 + th2 * (-1.0 / 24.0 + th2 * (1.0 / 720.0 + th2 * (-1.0 / 40320.0))))
    th = np.sqrt(th2)
    return np.sin(th) / th, (1.0 - np.cos(th)) / (th * th)


@njit(cache=True)
def expm_into(phi, out):
    """out (3,3) = expm([phi]x) (Rodrigues, the factors of :func:`expm_factors`)."""
    th2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]
    a, b = expm_factors(th2)
    p0, p1, p2 = phi[0], phi[1], phi[2]
    # [phi]x [phi]x = phi phi^T - th2 I
    out[0, 0] = 1.0 + b * (p0 * p0 - th2)
    out[1, 1] = 1.0 + b * (p1 * p1 - th2)
    out[2, 2] = 1.0 + b * (p2 * p2 - th2)
    out[0, 1] = -a * p2 + b * p0 * p1
    out[1, 0] = a * p2 + b * p0 * p1
    out[0, 2] = a * p1 + b * p0 * p2
    out[2, 0] = -a * p1 + b * p0 * p2
    out[1, 2] = -a * p0 + b * p1 * p2
    out[2, 1] = a * p0 + b * p1 * p2


@njit(cache=True)
def logm_into(M, out):
    """Rotation vector (angle in [0, π]) of the rotation matrix M (3,3) into out (3): the
    formulas of :func:`logm` (the series below SMALL_ANGLE, atan2 of the antisymmetric part
    above; the symmetric part near π)."""
    w0 = M[2, 1] - M[1, 2]
    w1 = M[0, 2] - M[2, 0]
    w2 = M[1, 0] - M[0, 1]
    c = 0.5 * (M[0, 0] + M[1, 1] + M[2, 2] - 1.0)
    c = min(1.0, max(-1.0, c))
    sn = 0.5 * np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
    if c > 0.0 and sn < SMALL_ANGLE:  # θ/(2 sin θ) = asin(s)/(2 s) by its series (module docstring)
        s2 = sn * sn
        f = 0.5 * (1.0 + s2 * (1.0 / 6.0 + s2 * (3.0 / 40.0 + s2 * (5.0 / 112.0 + s2 * (35.0 / 1152.0)))))
        out[0], out[1], out[2] = f * w0, f * w1, f * w2
        return
    th = np.arctan2(sn, c)
    if th < np.pi - 1e-4:
        f = th / (2.0 * np.sin(th))
        out[0], out[1], out[2] = f * w0, f * w1, f * w2
    else:  # near pi: axis from the symmetric part (R + R^T)/2 = c I + (1 - c) n n^T
        best, k = -1.0, 0
        for i in range(3):
            if M[i, i] > best:
                best, k = M[i, i], i
        for i in range(3):
            out[i] = (0.5 * (M[i, k] + M[k, i]) - (c if i == k else 0.0)) / (1.0 - c)
        nn = np.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2])
        s = out[0] * w0 + out[1] * w1 + out[2] * w2
        f = (-th if s < 0 else th) / nn
        for i in range(3):
            out[i] *= f


@njit(cache=True)
def jl_inv_into(phi, out):
    """out (3,3) = J_l⁻¹(phi), the formula of :func:`jl_inv`."""
    th2 = phi[0] * phi[0] + phi[1] * phi[1] + phi[2] * phi[2]
    if th2 < SMALL_ANGLE * SMALL_ANGLE:  # the series (module docstring)
        c = 1.0 / 12.0 + th2 * (1.0 / 720.0 + th2 * (1.0 / 30240.0 + th2 * (1.0 / 1209600.0)))
    else:
        th = np.sqrt(th2)
        c = 1.0 / th2 - (1.0 + np.cos(th)) / (2.0 * th * np.sin(th))
    # K = [phi]x, K K = phi phi^T - |phi|^2 I
    p0, p1, p2 = phi[0], phi[1], phi[2]
    out[0, 0] = 1.0 + c * (p0 * p0 - th2)
    out[1, 1] = 1.0 + c * (p1 * p1 - th2)
    out[2, 2] = 1.0 + c * (p2 * p2 - th2)
    out[0, 1] = 0.5 * p2 + c * p0 * p1
    out[1, 0] = -0.5 * p2 + c * p0 * p1
    out[0, 2] = -0.5 * p1 + c * p0 * p2
    out[2, 0] = 0.5 * p1 + c * p0 * p2
    out[1, 2] = 0.5 * p0 + c * p1 * p2
    out[2, 1] = -0.5 * p0 + c * p1 * p2
