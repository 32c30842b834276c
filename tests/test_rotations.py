"""flexmb/rotations.py, the one SO(3) module: its compiled (numba) functions compute what their
numpy namesakes compute, on random vectors and rotations (small angles, near π and generic), and
the maps are consistent with each other (expm ∘ logm, J_l⁻¹ as the derivative of logm)."""

import numpy as np

from flexmb import rotations as rot

ROUNDOFF = 8 * np.finfo(float).eps  # a few units in the last place of numbers of order one


def _vectors(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dirs = rng.normal(size=(40, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    angles = np.concatenate([[0.0, 1e-9, 1e-7, 5e-5, 2e-4], rng.uniform(0.01, 3.0, 30), np.pi - np.array([1e-6, 1e-5, 5e-5,
                                                                                                           1e-3, 0.0])])
    return dirs * angles[:, None]


def test_compiled_maps_equal_the_numpy_maps():
    phis = _vectors()
    R = rot.expm(phis)
    out3, out33 = np.empty(3), np.empty((3, 3))
    for phi, Ri in zip(phis, R):
        rot.expm_into(phi, out33)
        assert np.abs(out33 - Ri).max() <= ROUNDOFF
        rot.skew_into(phi, out33)
        assert np.array_equal(out33, rot.skew(phi))
        rot.jl_inv_into(phi, out33)
        assert np.abs(out33 - rot.jl_inv(phi)).max() <= ROUNDOFF * max(1.0, np.abs(out33).max())
        rot.logm_into(Ri, out3)
        assert np.abs(out3 - rot.logm(Ri)).max() <= ROUNDOFF
        th = np.linalg.norm(phi)
        axis = phi / th if th > 0 else np.array([0.0, 0.0, 1.0])
        rot.axis_angle_into(*axis, th, out33)
        assert np.abs(out33 - rot.axis_angle(axis, th)).max() <= ROUNDOFF
    a, b = np.random.default_rng(1).normal(size=(2, 3))
    rot.cross_into(a, b, out3)
    assert np.array_equal(out3, rot.cross(a, b))
    A, B = np.random.default_rng(2).normal(size=(2, 3, 3))
    rot.matmul3_into(A, B, out33)
    assert np.abs(out33 - A @ B).max() <= ROUNDOFF * np.abs(A @ B).max()


def test_logm_inverts_expm_and_jl_inv_is_its_derivative():
    phis = _vectors(3)
    phis = phis[np.linalg.norm(phis, axis=1) < 3.0]  # away from π, where log has its branch cut
    assert np.abs(rot.logm(rot.expm(phis)) - phis).max() <= 1e-12
    # d log(expm(eps w) R) / d eps at 0 = J_l^-1(log R) w (a global spin w)
    eps = 1e-6
    w = np.random.default_rng(4).normal(size=phis.shape)
    R = rot.expm(phis)
    fd = (rot.logm(rot.expm(eps * w) @ R) - rot.logm(rot.expm(-eps * w) @ R)) / (2 * eps)
    assert np.abs(fd - np.einsum("nij,nj->ni", rot.jl_inv(phis), w)).max() <= 1e-8


def test_the_small_angle_series_give_the_closed_forms_to_round_off():
    """Below SMALL_ANGLE logm and jl_inv take θ/(2 sin θ) and J_l⁻¹'s factor from Taylor series
    (flexmb/rotations.py): numpy and compiled, they equal the closed forms evaluated in extended
    precision (np.longdouble) to round-off, on both sides of the switch (a wrong coefficient of
    the series shows as 1e-9 or more at 0.03 rad)."""
    L = np.longdouble
    rng = np.random.default_rng(3)
    th = np.concatenate([np.geomspace(1e-8, 0.2, 50), rot.SMALL_ANGLE * np.array([1 - 1e-9, 1 + 1e-9])])
    dirs = rng.normal(size=(th.size, 3))
    phis = dirs / np.linalg.norm(dirs, axis=1)[:, None] * th[:, None]
    out3, out33 = np.empty(3), np.empty((3, 3))
    for phi in phis:
        p = phi.astype(L)
        t = np.sqrt(np.sum(p * p))
        c = L(1) / (t * t) - (L(1) + np.cos(t)) / (L(2) * t * np.sin(t))
        K = rot.skew(phi).astype(L)
        want = (np.eye(3, dtype=L) - K / L(2) + c * (K @ K)).astype(float)
        rot.jl_inv_into(phi, out33)
        assert np.abs(rot.jl_inv(phi) - want).max() <= ROUNDOFF
        assert np.abs(out33 - want).max() <= ROUNDOFF
        R = rot.expm(phi)
        Rl = R.astype(L)
        w = np.array([Rl[2, 1] - Rl[1, 2], Rl[0, 2] - Rl[2, 0], Rl[1, 0] - Rl[0, 1]])
        sn = np.sqrt(np.sum(w * w)) / L(2)
        tl = np.arctan2(sn, (np.trace(Rl) - L(1)) / L(2))
        want = (tl / (L(2) * np.sin(tl)) * w).astype(float)
        rot.logm_into(R, out3)
        assert np.abs(rot.logm(R) - want).max() <= ROUNDOFF * np.abs(want).max()
        assert np.abs(out3 - want).max() <= ROUNDOFF * np.abs(want).max()


def test_expm_small_angle_series_give_rodrigues_to_round_off():
    """Below SMALL_ANGLE expm takes sin θ/θ and (1 - cos θ)/θ² from Taylor series (numpy, compiled
    and the balls' retraction of flexmb/state.py): each equals Rodrigues' formula evaluated in
    extended precision (np.longdouble) to round-off, on both sides of the switch (a 1 % change of
    the coefficient before the last, or the last term left out, shows as more than round-off at
    0.03 rad)."""
    from flexmb.state import _retract_balls

    L = np.longdouble
    rng = np.random.default_rng(4)
    th = np.concatenate([np.geomspace(1e-9, 0.2, 50), rot.SMALL_ANGLE * np.array([1 - 1e-9, 1 + 1e-9])])
    dirs = rng.normal(size=(th.size, 3))
    phis = dirs / np.linalg.norm(dirs, axis=1)[:, None] * th[:, None]
    out33 = np.empty((3, 3))
    balls = np.empty((phis.shape[0], 3, 3))
    _retract_balls(np.broadcast_to(np.eye(3), balls.shape).copy(), phis, balls)
    for k, phi in enumerate(phis):
        p = phi.astype(L)
        t = np.sqrt(np.sum(p * p))
        K = rot.skew(phi).astype(L)
        b_ref = L(2) * np.sin(t / L(2)) ** 2 / (t * t)  # (1 - cos θ)/θ² without cancellation
        want = (np.eye(3, dtype=L) + np.sin(t) / t * K + b_ref * (K @ K)).astype(float)
        rot.expm_into(phi, out33)
        assert np.abs(rot.expm(phi) - want).max() <= ROUNDOFF
        assert np.abs(out33 - want).max() <= ROUNDOFF
        assert np.abs(balls[k] - want).max() <= ROUNDOFF
        a, b = rot.expm_factors(float(np.sum(phi * phi)))
        if th[k] >= rot.SMALL_ANGLE:  # above, (1 - cos θ)/θ² cancels (~1e-13 at 0.04 rad; times θ² in the matrix)
            continue
        assert abs(a - float(np.sin(t) / t)) <= ROUNDOFF and abs(b - float(b_ref)) <= ROUNDOFF
