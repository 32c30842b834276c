"""Equivalent particle models of rigid bodies (Attia 2005, §2–3): kernels.

A rigid body is replaced by point masses ("particles") at chosen points that move with it.
The particle set is dynamically equivalent when it has the body's mass, centre of mass and
inertia; the particle masses then follow from a *linear* system once the positions are
chosen (Attia §2):

* **planar** (eq. 2.1a–c and the 4×4 matrix form after it): three primary particles placed
  by the user, the fourth at the midpoint of particles 1 and 3; rows 1, ξ, η, ξ² + η²;
  right-hand side m, m ξ_G, m η_G, J_O (polar moment about the frame origin O);
* **rod** (Attia §2, last remark, and eq. 4.4b): two end particles and their midpoint;
  rows 1, s, s²; right-hand side m, m s_G, J_t + m s_G² (J_t: moment about an axis normal to
  the rod through the centre of mass);
* **spatial** (Attia §2, last paragraph): four primary particles, not coplanar, and six at
  the midpoints of the primary pairs (1,2), (1,3), (1,4), (2,3), (2,4), (3,4); rows 1, x, y,
  z, x², y², z², xy, yz, zx; right-hand side m, m c, and the six second moments
  E_O = E_G + m c cᵀ with E_G = ½ tr(J_G) I − J_G (J_G: inertia tensor about the centre of
  mass). The ten points are the nodes of a quadratic tetrahedron, so the 10×10 system is
  regular exactly when the primaries are not coplanar;
* **general**: any user-chosen set, planar or spatial conditions, solved in the least-norm
  sense (min Σ m_i²) when the conditions can be met exactly.

Forces and couples (Attia §3): a force f at a point P of the body becomes particle forces
f_i = α_i f with Σ α_i = 1, Σ α_i r_i = r_P (eq. 3.1–3.2): the resultant and the moment
about any point are those of f at P. The α are affine coordinates of P and therefore do not
change as the body moves. A couple C becomes particle forces with zero resultant and moment
C; here the least-norm such forces (for a rod: ± C × e / d at its ends, Attia's f = m_c/d).

All kernels work on stacks of bodies (leading axis ``nb``); positions are made dimensionless
(centred on the particles' centroid and divided by their RMS radius) before solving, so the
singularity tests are scale-free.
"""

from __future__ import annotations

import numpy as np

from flexmb.rotations import skew

__all__ = [
    "SPATIAL_PAIRS", "planar_system", "planar_rhs", "rod_system", "rod_rhs", "spatial_system", "spatial_rhs",
    "solve_masses", "particle_properties", "force_distribution", "couple_distribution", "NegativeParticleMassWarning",
]

#: primary pairs whose midpoints carry the six secondary particles of the spatial model
SPATIAL_PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


class NegativeParticleMassWarning(UserWarning):
    """A particle body has particles of negative mass (still dynamically equivalent)."""


# ---------------------------------------------------------------------- mass systems
def planar_system(xi: np.ndarray) -> np.ndarray:
    """Attia's 4×4 matrix after eq. (2.1) (any number of particles): rows 1, ξ_i, η_i,
    ξ_i² + η_i² for in-plane coordinates ``xi`` (nb, n, 2) -> (nb, 4, n)."""
    xi = np.asarray(xi, dtype=float)
    return np.stack([np.ones(xi.shape[:-1]), xi[..., 0], xi[..., 1], np.einsum("...i,...i->...", xi, xi)], axis=-2)


def planar_rhs(mass: np.ndarray, com: np.ndarray, J: np.ndarray) -> np.ndarray:
    """Right-hand side of eq. (2.1a–c): m, m ξ_G, m η_G and the polar moment about the frame
    origin J_O = J + m |c|² for the polar moment J about the centre of mass (nb,) and the
    in-plane centre of mass ``com`` (nb, 2) -> (nb, 4)."""
    mass, com, J = np.asarray(mass, float), np.asarray(com, float), np.asarray(J, float)
    return np.concatenate([mass[:, None], mass[:, None] * com, (J + mass * np.einsum("bi,bi->b", com, com))[:, None]], axis=1)


def rod_system(s: np.ndarray) -> np.ndarray:
    """Rod version of eq. (2.1): rows 1, s_i, s_i² for coordinates ``s`` (nb, n) along the rod."""
    s = np.asarray(s, dtype=float)
    return np.stack([np.ones_like(s), s, s * s], axis=-2)


def rod_rhs(mass: np.ndarray, s_com: np.ndarray, J: np.ndarray) -> np.ndarray:
    """m, m s_G, J + m s_G² for the transverse moment J about the centre of mass -> (nb, 3)."""
    mass, s_com, J = np.asarray(mass, float), np.asarray(s_com, float), np.asarray(J, float)
    return np.stack([mass, mass * s_com, J + mass * s_com**2], axis=1)


def spatial_system(r: np.ndarray) -> np.ndarray:
    """The 10×n matrix of the spatial conditions (Attia §2): rows 1, x, y, z, x², y², z², xy,
    yz, zx of the particle positions ``r`` (nb, n, 3) -> (nb, 10, n)."""
    r = np.asarray(r, dtype=float)
    x, y, z = r[..., 0], r[..., 1], r[..., 2]
    return np.stack([np.ones_like(x), x, y, z, x * x, y * y, z * z, x * y, y * z, z * x], axis=-2)


def spatial_rhs(mass: np.ndarray, com: np.ndarray, J: np.ndarray) -> np.ndarray:
    """m, m c and the second moments E_O = ½ tr(J) I − J + m c cᵀ (xx, yy, zz, xy, yz, zx)
    for the inertia tensor J about the centre of mass (nb, 3, 3) -> (nb, 10)."""
    mass, com, J = np.asarray(mass, float), np.asarray(com, float), np.asarray(J, float)
    E = 0.5 * np.trace(J, axis1=1, axis2=2)[:, None, None] * np.eye(3) - J
    E = E + mass[:, None, None] * np.einsum("bi,bj->bij", com, com)
    return np.concatenate([mass[:, None], mass[:, None] * com, E[:, [0, 1, 2, 0, 1, 2], [0, 1, 2, 1, 2, 0]]], axis=1)


def solve_masses(A: np.ndarray, b: np.ndarray, rtol: float = 1e-10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least-norm particle masses of A m = b for stacks A (nb, k, n), b (nb, k).

    Returns (masses (nb, n), rcond (nb,), residual (nb,)): rcond = σ_min/σ_max of A (0 for a
    singular square system; for n > k the smallest of the k singular values), residual =
    |A m − b| / |b|. For a square regular system this is the unique solution of Attia's
    system; with more particles than conditions it is the solution of least Σ m_i²; the
    caller refuses a system whose residual is not at round-off level (no exact solution)."""
    A, b = np.asarray(A, float), np.asarray(b, float)
    sv = np.linalg.svd(A, compute_uv=False)
    rcond = sv[:, -1] / sv[:, 0] if A.shape[1] <= A.shape[2] else np.zeros(len(A))
    m = np.einsum("bij,bj->bi", np.linalg.pinv(A, rcond=rtol), b)
    res = np.linalg.norm(np.einsum("bij,bj->bi", A, m) - b, axis=1) / np.maximum(np.linalg.norm(b, axis=1), 1e-300)
    return m, rcond, res


def particle_properties(masses: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mass (nb,), centre of mass (nb, 3) and inertia tensor about the centre of mass
    (nb, 3, 3) of particle sets (masses (nb, n), positions (nb, n, 3)): the quantities a
    dynamically equivalent set must reproduce."""
    masses, r = np.asarray(masses, float), np.asarray(r, float)
    m = masses.sum(axis=1)
    c = np.einsum("bi,bij->bj", masses, r) / m[:, None]
    d = r - c[:, None, :]
    E = np.einsum("bi,bij,bik->bjk", masses, d, d)
    J = np.trace(E, axis1=1, axis2=2)[:, None, None] * np.eye(3) - E
    return m, c, J


# ---------------------------------------------------------------------- loads
def _normalised(r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Positions centred on their centroid and divided by their RMS radius (>0)."""
    c = r.mean(axis=1)
    d = r - c[:, None, :]
    L = np.sqrt(np.einsum("bij,bij->b", d, d) / r.shape[1])
    L = np.where(L > 0, L, 1.0)
    return d / L[:, None, None], c, L


def force_distribution(r: np.ndarray, point: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distribution parameters α (Attia eq. 3.1–3.2) of a force at ``point`` (nb, 3) over the
    primary particles at ``r`` (nb, k, 3): Σ α_i = 1 and Σ α_i r_i = r_P, least-norm when k
    exceeds the dimension of the particles' affine hull (3 planar, 2 rod, 4 spatial are
    Attia's square systems). Returns (α (nb, k), miss (nb,)): miss = distance of the point
    from the particles' affine hull relative to their size (the force cannot be distributed
    exactly unless it is at round-off level)."""
    r, point = np.asarray(r, float), np.asarray(point, float)
    d, c, L = _normalised(r)
    p = (point - c) / L[:, None]
    A = np.concatenate([np.ones((len(r), 1, r.shape[1])), np.swapaxes(d, 1, 2)], axis=1)  # (nb, 4, k)
    b = np.concatenate([np.ones((len(r), 1)), p], axis=1)
    alpha = np.einsum("bij,bj->bi", np.linalg.pinv(A, rcond=1e-10), b)
    miss = np.linalg.norm(np.einsum("bij,bj->bi", A, alpha) - b, axis=1)
    return alpha, miss


def couple_distribution(r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-norm particle forces of a couple (Attia §3): f_i = G_i C with Σ f_i = 0 and
    Σ r_i × f_i = C, for primaries at ``r`` (nb, k, 3). Returns (G (nb, k, 3, 3), P (nb, 3, 3)):
    P C is the part of a couple C that the particles can carry (all of it for three or more
    non-collinear particles; the part normal to the line for a rod)."""
    r = np.asarray(r, float)
    nb, k = r.shape[:2]
    d, _, L = _normalised(r)
    K = np.zeros((nb, 6, 3 * k))
    K[:, :3] = np.tile(np.eye(3), (1, 1, k))
    K[:, 3:] = skew(d).transpose(0, 2, 1, 3).reshape(nb, 3, 3 * k)
    Kp = np.linalg.pinv(K, rcond=1e-10)  # (nb, 3k, 6)
    G = Kp[:, :, 3:].reshape(nb, k, 3, 3) / L[:, None, None, None]
    P = np.einsum("bij,bjk->bik", K, Kp)[:, 3:, 3:]
    return G, P
