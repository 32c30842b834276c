"""O(n) factorization and solve of the iteration matrix of a rigid tree, without forming M̄.

When no element couples two nodes (no element family with blocks: a tree of rigid bodies and
particles, with joint springs, dampers and bearing friction on the diagonal), the iteration
matrix has the composite form

    A_uv = S_uᵀ X_v S̃_v   (u on the path from joint(v) to ground, or in the same joint),
    A_vu = S_vᵀ X_v S̃_u,   X_v = Σ_{i in subtree(v)} D_i,                                  (1)

plus the diagonal, with S_k the spatial coordinate axes at the global origin
(engine/kinematics.py), D_i node-level 6×6 blocks and S̃ = S + 2γ' Ṡ. With γ' = 0 and D_i the
spatial node inertias I_i this is M̄ = Bᵀ M B exactly (the matrix CHOLMOD gets, Attia eq. 6.3).
In a time step (γ' > 0) it is the Newton tangent ∂r/∂u̇ = M̄ + γ' ∂r/∂u of the node masses'
inertia forces f_i = I_i a_i + V_i ×* I_i V_i (Featherstone 2008, eq. 2.67), nonsymmetric:
with ∂a_i/∂u_k = 2 Ṡ_k - V_i × S_k (k on the path of node i),

    ∂r/∂u = Bᵀ G B + 2 Bᵀ I Ḃ,   G_i = İ_i + F̄(I_i V_i),   İ = V ×* I - I V ×,           (2)

F̄(f) δ = δ ×* f; Bᵀ (I + γ'G)(B + 2γ' Ḃ) equals M̄ + γ' ∂r/∂u to O(γ'²), hence (1) with
D_i = I_i + γ' G_i. (Its symmetric part alone, γ' dM̄/dt by the Christoffel identity, is what a
symmetric factorization could take; its skew part is as large, and with M̄ + γ' dM̄/dt the 10-link
chain needed 4.9 Newton iterations per step instead of 4.4.)

The position dependence β' K̄ (inertia and weight moved with the configuration; relative to M̄ of
order β' (g/l + ω² + |u̇|), 1e-5 to 1e-3 at h = 1e-3 s) does not have the form (1); its product
with a vector is one more O(n) pass (position_tangent_times), so with it :meth:`TreeSolver.solve`
returns x = x₀ - A⁻¹ β' K̄ x₀, x₀ = A⁻¹ r, the solution with A + β' K̄ up to (A⁻¹ β' K̄)² x: Newton
then converges quadratically (the exact tangent by finite differences needs the same iterations).

The factorization eliminates the joints from the leaves to the root (Featherstone's
articulated-body recursion, eq. 7.37–7.44, generalized to (1)): per joint j with child node c
and its free coordinates, U = X^A_c S̃_j (6×n_j), W = S_jᵀ X^A_c (n_j×6), d_j = S_jᵀ X^A_c S̃_j +
diag_j, and the parent's articulated block gets X^A_c - U d_j⁻¹ W. Solving A x = r then takes
one sweep up (ρ_j = r_j - S_jᵀ p_c, p_parent += p_c + U d_j⁻¹ ρ_j) and one down (x_j = d_j⁻¹
(ρ_j - W ã_parent), ã_c = ã_parent + S̃_j x_j). Both are O(n) compiled loops; driven coordinates are
not unknowns (a joint whose coordinates are all driven passes X^A_c on whole). tests/
test_tree_solver.py checks the solves against CHOLMOD (γ' = 0) and against the dense matrix (1)
on random trees, and (2) against finite differences of the residual.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from flexmb.engine.iteration_matrix import spatial_node_blocks
from flexmb.engine.kinematics import Kinematics, TreePattern
from flexmb.engine.position_tangent import (  # re-exported: callers import them from here
    position_tangent_apply,
    position_tangent_setup,
    position_tangent_times,
)
from flexmb.engine.tree_data import TreeFactor, tangent_work
from flexmb.errors import SolverError

__all__ = ["TreeSolver", "node_tangent_blocks",
           # engine/position_tangent.py's, importable from here as before the split
           "position_tangent_apply", "position_tangent_setup", "position_tangent_times"]


class TreeSolver:
    """Factor of the iteration matrix (1) of a rigid tree on the unknown coordinates ``free``
    (module docstring), with the interface of :class:`flexmb.engine.linalg.SparseCholesky`
    where the integrator uses it: ``factorize_tree``, ``solve``, ``n_analyze`` (0: no symbolic
    analysis), ``n_factorize``, ``backend``."""

    backend = kind = "tree"
    pattern = None  # no sparse matrix is formed

    def __init__(self, tree: TreePattern, free: np.ndarray, n_u: int, coordinate_names: tuple[str, ...] = ()) -> None:
        self.tree = tree
        self.free = np.asarray(free, dtype=np.int64)
        self.n_u = n_u
        self.names = coordinate_names
        is_free = np.zeros(n_u, dtype=bool)
        is_free[self.free] = True
        # per joint, its free coordinates (ascending), in joint order
        coords = np.arange(n_u)
        joint = np.asarray(tree.coord_joint, dtype=np.int64)
        keep = is_free[coords]
        self.jf_coord = coords[keep].astype(np.int64)
        self.jf_ptr = np.searchsorted(joint[keep], np.arange(len(tree.joint_child) + 1)).astype(np.int64)
        self.loc = np.full(n_u, -1, dtype=np.int64)
        self.loc[self.free] = np.arange(self.free.size)
        N = tree.n_nodes
        nj = len(tree.joint_child)
        self.IA = np.zeros((N, 6, 6))
        self.U = np.zeros((n_u, 6))
        self.W = np.zeros((n_u, 6))
        self.St = np.zeros((n_u, 6))
        self.S = np.zeros((n_u, 6))
        self.Dinv = np.zeros((nj, 6, 6))
        self.coord_child = np.asarray(tree.coord_child, dtype=np.int64)
        self.factor = TreeFactor(self.jf_ptr, self.jf_coord, self.coord_child, self.IA, self.U, self.W, self.S, self.St,
                                 self.Dinv)  # the kernels' view of these arrays (engine/tree_data.py)
        self._position: tuple | None = None
        self._loaded: tuple | None = None
        self.n_analyze = 0
        self.n_factorize = 0

    def load(self, source, material_only: bool = False) -> None:
        """The kinematics, node masses, γ', diagonal and position tangent of the step's iterate
        (engine/linear_solver.py, MatrixSource.tree_terms) for :meth:`factorize`."""
        self._loaded = source.tree_terms()

    def factorize(self) -> None:
        """Factorize what :meth:`load` took (:meth:`factorize_tree`)."""
        self.factorize_tree(*self._loaded)

    def failed_pivot(self, exc: Exception) -> str:
        """The coordinate named by the SolverError of the factorization (its ``coordinate``)."""
        return repr(getattr(exc, "coordinate", None) or f"(not known: {exc})")

    def describe(self, n_free: int) -> str:
        """What it is, for ``flexmb info``."""
        return f"O(n) tree factorization of the rigid tree (engine/tree_solver.py), {n_free} unknowns"

    def twin(self) -> TreeSolver:
        """A new tree factor of the same tree and unknowns."""
        return TreeSolver(self.tree, self.free, self.n_u, self.names)

    def factorize_tree(self, kin: Kinematics, Mb: np.ndarray, gp: float, diag: np.ndarray,
                       position: tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None,
                       joint_blocks: np.ndarray | None = None) -> None:
        """Factor (1) at the kinematics ``kin`` with node mass blocks Mb (N, 6, 6), the velocity
        tangent scaled by ``gp`` = γ' (0: M̄ itself) and ``diag`` (on the free coordinates) added
        to the diagonal. Raises SolverError naming the coordinate whose pivot is not positive.
        ``position`` = (β', u, u̇, w, gravity), w (N, 6) the node wrenches at u̇
        (Evaluation.node_wrenches): :meth:`solve` then solves with (1) + β' K̄, the position tangent
        (:func:`position_tangent_times`), by one correction x = x₀ - A⁻¹ β' K̄ x₀ on x₀ = A⁻¹ r
        (β' K̄ is 1e-5 to 1e-3 of A: the error left is of its square). ``joint_blocks`` (n_u, 6) or None:
        per free coordinate a its entries with its joint's free coordinates, added to the pivot blocks
        (spring-dampers across one joint, engine/tree_pairs.py, docs/spring_damper.md (S17))."""
        t = self.tree
        self._position = None
        if position is not None and position[0] > 0.0:
            bp, u, udot, w, gravity = position
            N = Mb.shape[0]
            work = tangent_work(N)
            u = np.ascontiguousarray(u, dtype=float)
            udot = np.ascontiguousarray(udot, dtype=float)
            position_tangent_setup(t.joint_tree, kin.S, u, udot, Mb, kin.x, np.ascontiguousarray(w, dtype=float), work)
            self._position = (float(bp), kin.S, u, udot, work, np.asarray(gravity, dtype=float))
        dg = np.zeros(self.n_u)
        dg[self.free] = diag
        bad = _factor(t.joint_tree, self.factor, kin.S, kin.S if kin.Sdot is None else kin.Sdot,
                      float(gp) if kin.Sdot is not None else 0.0, Mb, kin.x, kin.Vs, dg,
                      _NO_BLOCKS if joint_blocks is None else joint_blocks)
        if bad >= 0:
            name = self.names[bad] if bad < len(self.names) else str(bad)
            exc = SolverError(f"iteration matrix is not positive definite at coordinate {name!r}", None)
            exc.coordinate = name
            raise exc
        self.n_factorize += 1

    def solve(self, r: np.ndarray) -> np.ndarray:
        """x with A x = r (both on the free coordinates) with the current factor; with the
        position tangent of :meth:`factorize_tree`, A = (1) + β' K̄ to second order in β' K̄."""
        if self._position is None:
            return self._solve_factor(r)
        bp, S, u, udot, work, gravity = self._position
        out = np.empty(self.free.size)
        _solve_position(self.tree.joint_tree, self.factor, S, u, udot, work, gravity, bp, self.free,
                        np.ascontiguousarray(r, dtype=float), out)
        return out

    def _solve_factor(self, r: np.ndarray) -> np.ndarray:
        """x with (1) x = r (both on the free coordinates) with the current factor."""
        t = self.tree
        rr = np.zeros(self.n_u)
        rr[self.free] = r
        x = np.zeros(self.n_u)
        _solve(t.joint_tree, self.factor, rr, x)
        return x[self.free]

    def dense(self) -> np.ndarray:
        """The factored matrix (1) itself on the free coordinates, column by column from solves of
        the inverse (tests only: O(n²) memory; without the position tangent)."""
        return np.linalg.inv(np.stack([self._solve_factor(e) for e in np.eye(self.free.size)], axis=1))


@njit(cache=True)
def node_tangent_blocks(Mb, x, Vs, gp, D):
    """D_i = I_i + gp G_i (module docstring, eq. 2) for every node: I_i the spatial inertia at the
    origin, G_i = İ_i + F̄(I_i V_i) the velocity derivative of the inertia force V ×* I V in the
    twist of the node (without the 2 I Ṡ part, which the shifted axes carry)."""
    spatial_node_blocks(Mb, x, D)
    if gp == 0.0:
        return
    N = Mb.shape[0]
    Vx = np.zeros((6, 6))
    T = np.empty((6, 6))
    f = np.empty(6)
    for i in range(N):
        v0, v1, v2, w0, w1, w2 = Vs[i, 0], Vs[i, 1], Vs[i, 2], Vs[i, 3], Vs[i, 4], Vs[i, 5]
        for b in (0, 3):
            Vx[b + 0, b + 1], Vx[b + 0, b + 2] = -w2, w1
            Vx[b + 1, b + 0], Vx[b + 1, b + 2] = w2, -w0
            Vx[b + 2, b + 0], Vx[b + 2, b + 1] = -w1, w0
        Vx[0, 4], Vx[0, 5] = -v2, v1
        Vx[1, 3], Vx[1, 5] = v2, -v0
        Vx[2, 3], Vx[2, 4] = -v1, v0
        for r in range(6):
            s = 0.0
            for c in range(6):
                s += D[i, r, c] * Vs[i, c]
            f[r] = s
        for r in range(6):  # I (V x)
            for c in range(6):
                s = 0.0
                for k in range(6):
                    s += D[i, r, k] * Vx[k, c]
                T[r, c] = s
        for r in range(6):  # İ = -(T + Tᵀ)
            for c in range(6):
                D[i, r, c] -= gp * (T[r, c] + T[c, r])
        # + F̄(f): F̄ = [[0, -[f_l]], [-[f_l], -[m]]] in (v, w) columns, (force, moment) rows
        fl0, fl1, fl2, m0, m1, m2 = f[0], f[1], f[2], f[3], f[4], f[5]
        for b0, b1, a0, a1, a2 in ((0, 3, fl0, fl1, fl2), (3, 0, fl0, fl1, fl2), (3, 3, m0, m1, m2)):
            # D[b0:b0+3, b1:b1+3] -= gp [a]
            D[i, b0 + 0, b1 + 1] += gp * a2
            D[i, b0 + 0, b1 + 2] -= gp * a1
            D[i, b0 + 1, b1 + 0] -= gp * a2
            D[i, b0 + 1, b1 + 2] += gp * a0
            D[i, b0 + 2, b1 + 0] += gp * a1
            D[i, b0 + 2, b1 + 1] -= gp * a0


#: no joint blocks (_factor's ``jblock`` with no rows)
_NO_BLOCKS = np.zeros((0, 6))


@njit(cache=True)
def _factor(tree, factor, S, Sd, gp, Mb, x, Vs, diag, jblock):
    """The elimination of the module docstring over the JointTree ``tree`` into the TreeFactor
    ``factor`` (engine/tree_data.py), for the axes S, their rates Sd (S̃ = S + 2γ' Ṡ, ``gp`` = γ'),
    the node mass blocks Mb, positions x, spatial velocities Vs and the diagonal ``diag`` (n_u);
    returns -1, or the coordinate whose pivot failed. ``jblock`` (n_u, 6), or no rows: added to the
    pivot blocks, d[t1, t2] += jblock[a_t1, t2] (engine/tree_pairs.py joint_blocks)."""
    parent, child = tree.parent, tree.child
    jf_ptr, jf_coord, IA, U, W, Sf, St, Dinv = (factor.jf_ptr, factor.jf_coord, factor.IA, factor.U, factor.W, factor.S,
                                                factor.St, factor.Dinv)
    N = Mb.shape[0]
    node_tangent_blocks(Mb, x, Vs, gp, IA)
    d = np.empty((6, 6))
    inv = np.empty((6, 6))
    for a in range(S.shape[0]):
        for r in range(6):
            Sf[a, r] = S[a, r]
            St[a, r] = S[a, r] + 2.0 * gp * Sd[a, r]
    for k in range(parent.size - 1, -1, -1):
        c = child[k]
        lo, hi = jf_ptr[k], jf_ptr[k + 1]
        n = hi - lo
        for t in range(n):
            a = jf_coord[lo + t]
            for r in range(6):
                su = 0.0
                sw = 0.0
                for q in range(6):
                    su += IA[c, r, q] * St[a, q]
                    sw += Sf[a, q] * IA[c, q, r]
                U[a, r] = su
                W[a, r] = sw
        for t1 in range(n):
            a = jf_coord[lo + t1]
            for t2 in range(n):
                b = jf_coord[lo + t2]
                s = 0.0
                for r in range(6):
                    s += W[a, r] * St[b, r]
                d[t1, t2] = s + (diag[a] if t1 == t2 else 0.0)
                if jblock.shape[0]:
                    d[t1, t2] += jblock[a, t2]
        # inverse of d by Gauss-Jordan without pivoting (d is near symmetric positive definite)
        for r in range(n):
            for c2 in range(n):
                inv[r, c2] = 1.0 if r == c2 else 0.0
        for t in range(n):
            piv = d[t, t]
            scale = 0.0
            for r in range(n):
                scale = max(scale, abs(d[r, r]))
            if not piv > 1e-14 * scale or not piv > 0.0:
                return jf_coord[lo + t]
            for c2 in range(n):
                d[t, c2] /= piv
                inv[t, c2] /= piv
            for r in range(n):
                if r != t:
                    fct = d[r, t]
                    if fct != 0.0:
                        for c2 in range(n):
                            d[r, c2] -= fct * d[t, c2]
                            inv[r, c2] -= fct * inv[t, c2]
        for r in range(n):
            for c2 in range(n):
                Dinv[k, r, c2] = inv[r, c2]
        p = parent[k]
        if p == N:
            continue
        # X^A_parent += X^A_c - U d⁻¹ W
        for r in range(6):
            for q in range(6):
                s = 0.0
                for t1 in range(n):
                    a = jf_coord[lo + t1]
                    for t2 in range(n):
                        s += U[a, r] * inv[t1, t2] * W[jf_coord[lo + t2], q]
                IA[p, r, q] += IA[c, r, q] - s
    return -1


@njit(cache=True, inline="always")
def _minus_projections(jf_coord, lo, n, base, M, v, node, rho):
    """rho[t] = base[a] - M[a] · v[node], a = jf_coord[lo + t], t < n: one joint in :func:`_solve`."""
    for t in range(n):
        a = jf_coord[lo + t]
        s = 0.0
        for q in range(6):
            s += M[a, q] * v[node, q]
        rho[t] = base[a] - s


@njit(cache=True, inline="always")
def _dinv_times(Dinv, k, n, rho, y):
    """y[:n] = Dinv[k] rho[:n]: joint k's pivot block inverse (of :func:`_factor`) times rho."""
    for t1 in range(n):
        s = 0.0
        for t2 in range(n):
            s += Dinv[k, t1, t2] * rho[t2]
        y[t1] = s


@njit(cache=True)
def _solve(tree, factor, r, x):
    """Solve (1) x = r (all coordinates) with the TreeFactor ``factor`` of _factor over the JointTree
    ``tree``: a sweep from the leaves (ρ, p), one from the root (x, ã)."""
    parent, child = tree.parent, tree.child
    jf_ptr, jf_coord, U, W, Sf, St, Dinv = factor.jf_ptr, factor.jf_coord, factor.U, factor.W, factor.S, factor.St, factor.Dinv
    N = factor.IA.shape[0]
    p = np.zeros((N + 1, 6))
    acc = np.zeros((N + 1, 6))
    rho = np.zeros(6)
    y = np.zeros(6)
    for k in range(parent.size - 1, -1, -1):
        c = child[k]
        lo, hi = jf_ptr[k], jf_ptr[k + 1]
        n = hi - lo
        _minus_projections(jf_coord, lo, n, r, Sf, p, c, rho)
        for t in range(n):
            x[jf_coord[lo + t]] = rho[t]  # kept for the sweep down
        _dinv_times(Dinv, k, n, rho, y)
        pk = parent[k]
        for q in range(6):
            s = p[c, q]
            for t in range(n):
                s += U[jf_coord[lo + t], q] * y[t]
            p[pk, q] += s
    for k in range(parent.size):
        c = child[k]
        pk = parent[k]
        lo, hi = jf_ptr[k], jf_ptr[k + 1]
        n = hi - lo
        _minus_projections(jf_coord, lo, n, x, W, acc, pk, rho)
        for q in range(6):
            acc[c, q] = acc[pk, q]
        _dinv_times(Dinv, k, n, rho, y)
        for t1 in range(n):
            a = jf_coord[lo + t1]
            s = y[t1]
            x[a] = s
            for q in range(6):
                acc[c, q] += St[a, q] * s


@njit(cache=True)
def _solve_position(tree, factor, S, u, udot, work, gravity, bp, free, r, out):
    """out = x₀ - A⁻¹ β' K̄ x₀, x₀ = A⁻¹ r (TreeSolver.solve with the position tangent), on the free
    coordinates: two solves with the TreeFactor ``factor`` of _factor and one position_tangent_apply
    with the TangentWork ``work`` set up at (S, u, u̇)."""
    n_u = S.shape[0]
    rr = np.zeros(n_u)
    for t in range(free.size):
        rr[free[t]] = r[t]
    x0 = np.zeros(n_u)
    _solve(tree, factor, rr, x0)
    kx = np.zeros(n_u)
    position_tangent_apply(tree, factor.coord_child, S, u, udot, work, gravity, x0, kx)
    for a in range(n_u):
        rr[a] = 0.0
    for t in range(free.size):
        rr[free[t]] = bp * kx[free[t]]
    x1 = np.zeros(n_u)
    _solve(tree, factor, rr, x1)
    for t in range(free.size):
        out[t] = x0[free[t]] - x1[free[t]]
