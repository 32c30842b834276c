"""Sharma & Saha eq. (8): generalized inertia matrix of the two-link planar arm of uniform rods.

Link i is a uniform rod of mass m_i and length a_i; joint 1 (ground -> link 1) and joint 2
(link 1 -> link 2) are revolute about the plane normal, theta_2 is the relative angle. In the
relative coordinates (theta_1, theta_2) the generalized inertia matrix is (eq. 8)

    I_r = [[(m1 a1^2 + m2 a2^2)/3 + m2 a1^2 + m2 a1 a2 cos th2,   m2 a2^2/3 + m2 a1 a2 cos th2 / 2],
           [m2 a2^2/3 + m2 a1 a2 cos th2 / 2,                      m2 a2^2/3                      ]]

independent of theta_1. flexmb's M̄ = BᵀMB (Assembler.mbar) must equal it to round-off for any
configuration, masses and lengths, and for any orientation of the arm's plane in space. Each
rod sits on a node at its proximal joint, along the node x axis: CoM (a/2, 0, 0), inertia about
the CoM diag(0, m a²/12, m a²/12) in node axes.
"""

import numpy as np
import pytest

import flexmb as fm
from flexmb.engine.assembly import Assembler
from flexmb.engine.reference import mbar_via_B
from flexmb.rotations import expm

N_CASES = 100


def sharma_saha_eq8(m1: float, m2: float, a1: float, a2: float, th2: float) -> np.ndarray:
    """Eq. (8) of Sharma & Saha, verbatim."""
    c2 = np.cos(th2)
    i11 = (m1 * a1**2 + m2 * a2**2) / 3 + m2 * a1**2 + m2 * a1 * a2 * c2
    i12 = m2 * a2**2 / 3 + 0.5 * m2 * a1 * a2 * c2
    i22 = m2 * a2**2 / 3
    return np.array([[i11, i12], [i12, i22]])


def two_link_arm(m1, m2, a1, a2, th1, th2, Q=None, origin=(0.0, 0.0, 0.0)) -> fm.Model:
    """The arm in its assembly configuration (both rods along Q e_x), moved to (th1, th2) by q0.

    Q rotates the whole arm (its plane normal is Q e_z); origin is the position of joint 1.
    """
    Q = np.eye(3) if Q is None else Q
    o = np.asarray(origin, dtype=float)
    ex, ez = Q[:, 0], Q[:, 2]
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("n1", position=o, rotation=Q)
    mb.add_node("n2", position=o + a1 * ex, rotation=Q)
    mb.add_body("rod1", node="n1", mass=m1, com=(a1 / 2, 0, 0), inertia=np.diag([0.0, m1 * a1**2 / 12, m1 * a1**2 / 12]))
    mb.add_body("rod2", node="n2", mass=m2, com=(a2 / 2, 0, 0), inertia=np.diag([0.0, m2 * a2**2 / 12, m2 * a2**2 / 12]))
    mb.add_joint("j1", "revolute", parent="ground", child="n1", point=o, axis=ez, q0=th1)
    mb.add_joint("j2", "revolute", parent="n1", child="n2", point=o + a1 * ex, axis=ez, q0=th2)
    return mb.compile()


def random_cases(seed: int):
    rng = np.random.default_rng(seed)
    for _ in range(N_CASES):
        m1, m2 = rng.uniform(0.1, 10.0, size=2)
        a1, a2 = rng.uniform(0.1, 3.0, size=2)
        th1, th2 = rng.uniform(-np.pi, np.pi, size=2)
        yield m1, m2, a1, a2, th1, th2, rng


def mbar_dense(model: fm.Model) -> np.ndarray:
    asm = Assembler(model)
    ev = asm.evaluate(model.initial_state())
    M = asm.mbar(ev).toarray()
    # coordinates in the order (theta_1, theta_2) regardless of how flexmb orders them
    idx = [model.coordinate_index("j1"), model.coordinate_index("j2")]
    return M[np.ix_(idx, idx)]


def rel_err(A: np.ndarray, ref: np.ndarray) -> float:
    return float(np.abs(A - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("plane", ["xy", "random"])
def test_mbar_equals_sharma_saha_eq8(plane):
    for m1, m2, a1, a2, th1, th2, rng in random_cases(seed=8 if plane == "xy" else 9):
        if plane == "xy":
            model = two_link_arm(m1, m2, a1, a2, th1, th2)
        else:  # same arm, plane and base placed arbitrarily in space: M̄ must not change
            model = two_link_arm(m1, m2, a1, a2, th1, th2, Q=expm(rng.normal(size=3)), origin=rng.normal(size=3))
        assert model.n_u == 2
        M = mbar_dense(model)
        ref = sharma_saha_eq8(m1, m2, a1, a2, th2)
        assert rel_err(M, ref) <= 1e-12, (m1, m2, a1, a2, th1, th2, M, ref)


def test_mbar_symmetric_positive_definite():
    for m1, m2, a1, a2, th1, th2, _ in random_cases(seed=10):
        M = mbar_dense(two_link_arm(m1, m2, a1, a2, th1, th2))
        scale = np.abs(M).max()
        assert np.abs(M - M.T).max() <= 1e-15 * scale
        lam = np.linalg.eigvalsh(0.5 * (M + M.T))
        # det I_r = (m2 a2^2/3)(m1 a1^2/3) + m2^2 a1^2 a2^2 (1/3 - cos^2(th2)/4) > 0 for every th2, so
        # both eigenvalues are positive by a margin far above round-off for these parameters.
        assert lam.min() > 1e-10 * scale
        np.linalg.cholesky(M)  # raises LinAlgError if not positive definite


def test_mbar_independent_of_theta1_and_matches_BtMB():
    """Eq. (8) has no theta_1; and the composite-body M̄ equals the explicit product BᵀMB."""
    rng = np.random.default_rng(11)
    m1, m2, a1, a2, th2 = 2.0, 1.5, 1.2, 0.7, 0.4
    ref = sharma_saha_eq8(m1, m2, a1, a2, th2)
    for th1 in rng.uniform(-np.pi, np.pi, size=10):
        model = two_link_arm(m1, m2, a1, a2, th1, th2)
        asm = Assembler(model)
        ev = asm.evaluate(model.initial_state())
        assert rel_err(asm.mbar(ev).toarray(), ref) <= 1e-12
        assert rel_err(mbar_via_B(asm, ev).toarray(), ref) <= 1e-12
