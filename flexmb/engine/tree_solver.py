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
from flexmb.engine.spatial_cross import _fx_add, _mx
from flexmb.errors import SolverError

__all__ = ["TreeSolver", "node_tangent_blocks"]


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
            I, IV, IA, A, F = np.empty((N, 6, 6)), np.empty((N, 6)), np.empty((N, 6)), np.empty((N + 1, 6)), np.empty((N + 1, 6))
            u = np.ascontiguousarray(u, dtype=float)
            udot = np.ascontiguousarray(udot, dtype=float)
            position_tangent_setup(t.joint_parent_ext, t.joint_child, t.uT, t.uR, t.uB, kin.S, u, udot, Mb, kin.x,
                                   np.ascontiguousarray(w, dtype=float), I, IV, IA, A, F)
            self._position = (float(bp), kin.S, u, udot, I, IV, IA, A, F, np.asarray(gravity, dtype=float))
        dg = np.zeros(self.n_u)
        dg[self.free] = diag
        bad = _factor(t.joint_parent_ext, t.joint_child, self.jf_ptr, self.jf_coord, kin.S,
                      kin.S if kin.Sdot is None else kin.Sdot, float(gp) if kin.Sdot is not None else 0.0, Mb, kin.x,
                      kin.Vs, dg, self.IA, self.U, self.W, self.S, self.St, self.Dinv,
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
        bp, S, u, udot, I, IV, IA, A, F, gravity = self._position
        t = self.tree
        out = np.empty(self.free.size)
        _solve_position(t.joint_parent_ext, t.joint_child, self.jf_ptr, self.jf_coord, self.U, self.W, self.S, self.St,
                        self.Dinv, t.n_nodes, t.uT, t.uR, t.uB, self.coord_child, S, u, udot, I, IV, IA, A, F, gravity, bp,
                        self.free, np.ascontiguousarray(r, dtype=float), out)
        return out

    def _solve_factor(self, r: np.ndarray) -> np.ndarray:
        """x with (1) x = r (both on the free coordinates) with the current factor."""
        t = self.tree
        rr = np.zeros(self.n_u)
        rr[self.free] = r
        x = np.zeros(self.n_u)
        _solve(t.joint_parent_ext, t.joint_child, self.jf_ptr, self.jf_coord, self.U, self.W, self.S, self.St, self.Dinv,
               rr, x, t.n_nodes)
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
def _factor(parent, child, jf_ptr, jf_coord, S, Sd, gp, Mb, x, Vs, diag, IA, U, W, Sf, St, Dinv, jblock):
    """The elimination of the module docstring; returns -1, or the coordinate whose pivot failed.
    ``jblock`` (n_u, 6), or no rows: added to the pivot blocks, d[t1, t2] += jblock[a_t1, t2]
    (engine/tree_pairs.py joint_blocks)."""
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
def _solve(parent, child, jf_ptr, jf_coord, U, W, Sf, St, Dinv, r, x, n_nodes):
    """Solve with the factor of _factor: a sweep from the leaves (ρ, p), one from the root (x, ã)."""
    N = n_nodes
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


# ---------------------------------------------------------------------------- position tangent (β' K̄)

# rows of the scratch array Z of the position tangent's recursions
_E, _V, _DV, _DA, _EP, _VP, _DVP, _EB, _T1, _T2, _T3, _T4, _A = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12


@njit(cache=True, inline="always")
def _coord_step(kk, S, u, udot, Z, ie, iv, idv, dS):
    """One coordinate kk of position_tangent_apply: its axis' displacement dS = ε_frame × S_kk and
    the variation of its acceleration terms S u̇ + V_bias × S u into Z[_DA] (ε_frame = Z[ie],
    V_bias = Z[iv], δV_bias = Z[idv])."""
    _mx(Z, ie, S, kk, dS, kk)
    _mx(Z, idv, S, kk, Z, _T2)  # δV_bias × S
    _mx(Z, iv, dS, kk, Z, _T3)  # V_bias × δS
    uk, ak = u[kk], udot[kk]
    for i in range(6):
        Z[_DA, i] += dS[kk, i] * ak + (Z[_T2, i] + Z[_T3, i]) * uk


@njit(cache=True, inline="always")
def _advance(kk, S, u, xd, dS, Z):
    """The frame after axis kk: ε += S xd, V += S u, δV += δS u (rows _E, _V, _DV of Z)."""
    for i in range(6):
        Z[_E, i] += S[kk, i] * xd[kk]
        Z[_V, i] += S[kk, i] * u[kk]
        Z[_DV, i] += dS[kk, i] * u[kk]


@njit(cache=True)
def position_tangent_setup(parent, child, uT, uR, uB, S, u, udot, Mb, x, w, I, IV, IA, A, F):
    """What position_tangent_apply needs at one state, once per factorization: the spatial inertias
    I (N,6,6) at the origin, the spatial accelerations A (N+1,6) (row N: ground), I V and I A
    (N,6), and F (N+1,6) the subtree sums of the node wrenches w (N,6, at the node origins) moved to
    the origin."""
    nj = parent.size
    N = Mb.shape[0]
    spatial_node_blocks(Mb, x, I)
    V = np.zeros((N + 1, 6))
    Z = np.zeros((13, 6))
    for i in range(6):
        A[N, i] = 0.0
    for k in range(nj):
        p = parent[k]
        c = child[k]
        for i in range(6):
            Z[_V, i], Z[_A, i], Z[_VP, i] = V[p, i], A[p, i], V[p, i]
        for m in range(3):  # translations: bias velocity of the parent
            kk = uT[k, m]
            if kk >= 0:
                _mx(Z, _VP, S, kk, Z, _T1)
                for i in range(6):
                    Z[_A, i] += S[kk, i] * udot[kk] + Z[_T1, i] * u[kk]
                    Z[_V, i] += S[kk, i] * u[kk]
        for m in range(2):
            kk = uR[k, m]
            if kk >= 0:
                _mx(Z, _V, S, kk, Z, _T1)
                for i in range(6):
                    Z[_A, i] += S[kk, i] * udot[kk] + Z[_T1, i] * u[kk]
                    Z[_V, i] += S[kk, i] * u[kk]
        if uB[k, 0] >= 0:
            for i in range(6):
                Z[_VP, i] = Z[_V, i]
            for m in range(3):
                kk = uB[k, m]
                _mx(Z, _VP, S, kk, Z, _T1)
                for i in range(6):
                    Z[_A, i] += S[kk, i] * udot[kk] + Z[_T1, i] * u[kk]
                    Z[_V, i] += S[kk, i] * u[kk]
        for i in range(6):
            V[c, i], A[c, i] = Z[_V, i], Z[_A, i]
    for i in range(N):
        for r in range(6):
            s1 = 0.0
            s2 = 0.0
            for q in range(6):
                s1 += I[i, r, q] * V[i, q]
                s2 += I[i, r, q] * A[i, q]
            IV[i, r] = s1
            IA[i, r] = s2
        F[i, 0], F[i, 1], F[i, 2] = w[i, 0], w[i, 1], w[i, 2]
        F[i, 3] = w[i, 3] + x[i, 1] * w[i, 2] - x[i, 2] * w[i, 1]
        F[i, 4] = w[i, 4] + x[i, 2] * w[i, 0] - x[i, 0] * w[i, 2]
        F[i, 5] = w[i, 5] + x[i, 0] * w[i, 1] - x[i, 1] * w[i, 0]
    for r in range(6):
        F[N, r] = 0.0
    for k in range(nj - 1, -1, -1):
        p = parent[k]
        if p != N:
            for r in range(6):
                F[p, r] += F[child[k], r]


@njit(cache=True)
def position_tangent_apply(parent, child, uT, uR, uB, coord_child, S, u, udot, I, IV, IA, A, F, gravity, xd, out):
    """out = K̄ xd from the quantities of position_tangent_setup (see position_tangent_times)."""
    nj = parent.size
    N = I.shape[0]
    n_u = S.shape[0]
    eps = np.zeros((N + 1, 6))
    V = np.zeros((N + 1, 6))
    dV = np.zeros((N + 1, 6))
    dA = np.zeros((N + 1, 6))
    dS = np.empty((n_u, 6))
    Z = np.zeros((13, 6))
    for k in range(nj):
        p = parent[k]
        c = child[k]
        for i in range(6):
            Z[_E, i], Z[_V, i], Z[_DV, i], Z[_DA, i] = eps[p, i], V[p, i], dV[p, i], dA[p, i]
            Z[_EP, i], Z[_VP, i], Z[_DVP, i] = eps[p, i], V[p, i], dV[p, i]
        for m in range(3):  # translations: frame and bias velocity of the parent
            kk = uT[k, m]
            if kk >= 0:
                _coord_step(kk, S, u, udot, Z, _EP, _VP, _DVP, dS)
        for m in range(3):
            kk = uT[k, m]
            if kk >= 0:
                _advance(kk, S, u, xd, dS, Z)
        for m in range(2):  # rotations: each carried by the frame after the axes before it
            kk = uR[k, m]
            if kk >= 0:
                _coord_step(kk, S, u, udot, Z, _E, _V, _DV, dS)
                _advance(kk, S, u, xd, dS, Z)
        if uB[k, 0] >= 0:  # ball: axes fixed in the child (frame after the ball), bias velocity before it
            for i in range(6):
                Z[_EB, i] = Z[_E, i]
            for m in range(3):
                kk = uB[k, m]
                for i in range(6):
                    Z[_EB, i] += S[kk, i] * xd[kk]
            for m in range(3):
                _coord_step(uB[k, m], S, u, udot, Z, _EB, _V, _DV, dS)
            for m in range(3):
                _advance(uB[k, m], S, u, xd, dS, Z)
            for i in range(6):
                Z[_E, i] = Z[_EB, i]
        for i in range(6):
            eps[c, i], V[c, i], dV[c, i], dA[c, i] = Z[_E, i], Z[_V, i], Z[_DV, i], Z[_DA, i]
    # per node δf = δI A + I δA + δV ×* I V + V ×* (δI V + I δV) - δ weight, δI y = ε ×* (I y) - I (ε × y)
    dF = np.zeros((N + 1, 6))
    for i in range(N):
        _mx(eps, i, A, i, Z, _T1)  # ε × A
        _mx(eps, i, V, i, Z, _T2)  # ε × V
        for r in range(6):
            Z[_T1, r] = dA[i, r] - Z[_T1, r]  # z1 = δA - ε × A
            Z[_T2, r] = dV[i, r] - Z[_T2, r]  # z2 = δV - ε × V
        for r in range(6):
            s1 = 0.0
            s2 = 0.0
            for q in range(6):
                s1 += I[i, r, q] * Z[_T1, q]
                s2 += I[i, r, q] * Z[_T2, q]
            dF[i, r] = s1
            Z[_T3, r] = s2  # y = I z2, then + ε ×* I V
        _fx_add(eps, i, IA, i, dF, i)
        _fx_add(eps, i, IV, i, Z, _T3)
        _fx_add(dV, i, IV, i, dF, i)
        _fx_add(V, i, Z, _T3, dF, i)
        # weight m g at the centre of mass c: its moment (m c) × g varies by (m v_ε + ω_ε × m c) × g
        m = I[i, 0, 0]
        mc0, mc1, mc2 = I[i, 1, 5], I[i, 2, 3], I[i, 0, 4]
        w0, w1, w2 = eps[i, 3], eps[i, 4], eps[i, 5]
        d0 = m * eps[i, 0] + (w1 * mc2 - w2 * mc1)
        d1 = m * eps[i, 1] + (w2 * mc0 - w0 * mc2)
        d2 = m * eps[i, 2] + (w0 * mc1 - w1 * mc0)
        dF[i, 3] -= d1 * gravity[2] - d2 * gravity[1]
        dF[i, 4] -= d2 * gravity[0] - d0 * gravity[2]
        dF[i, 5] -= d0 * gravity[1] - d1 * gravity[0]
    for k in range(nj - 1, -1, -1):
        p = parent[k]
        if p != N:
            for r in range(6):
                dF[p, r] += dF[child[k], r]
    for kk in range(n_u):
        c = coord_child[kk]
        s = 0.0
        for r in range(6):
            s += dS[kk, r] * F[c, r] + S[kk, r] * dF[c, r]
        out[kk] = s


def position_tangent_times(parent, child, uT, uR, uB, coord_child, S, u, udot, Mb, x, w, gravity, xd, out):
    """out = K̄ xd: the derivative of the node masses' residual Bᵀ f (f_i = I_i A_i + V_i ×* I_i V_i
    - weight_i, spatial at the origin; Featherstone 2008, eq. 2.67) with respect to the coordinates
    in the direction xd, at fixed u and u̇. A variation δq moves each node's frame by ε (the path
    sum of S δq), every axis k by δS_k = ε_frame(k) × S_k (frame(k): the parent for translations,
    the frame after the axes before it for rotations, the child for the three ball axes), the
    inertias by δI v = ε ×* (I v) - I (ε × v), and the velocities and accelerations through the
    axes, while gravity keeps its direction; then δr_a = δS_aᵀ F_a + S_aᵀ δF_a with F the subtree
    sums of f. Mb (N,6,6), x (N,3): node mass blocks and positions; w (N,6): the node wrenches at
    the node origins (Evaluation.node_wrenches) at u̇. One pass down the tree and one up, O(n)
    (position_tangent_setup, then position_tangent_apply); tests/test_tree_solver.py checks it
    against central differences of the residual."""
    N = Mb.shape[0]
    I, IV, IA = np.empty((N, 6, 6)), np.empty((N, 6)), np.empty((N, 6))
    A, F = np.empty((N + 1, 6)), np.empty((N + 1, 6))
    position_tangent_setup(parent, child, uT, uR, uB, S, u, udot, Mb, x, w, I, IV, IA, A, F)
    position_tangent_apply(parent, child, uT, uR, uB, coord_child, S, u, udot, I, IV, IA, A, F, gravity, xd, out)


@njit(cache=True)
def _solve_position(parent, child, jf_ptr, jf_coord, U, W, Sf, St, Dinv, n_nodes, uT, uR, uB, coord_child, S, u, udot,
                    I, IV, IA, A, F, gravity, bp, free, r, out):
    """out = x₀ - A⁻¹ β' K̄ x₀, x₀ = A⁻¹ r (TreeSolver.solve with the position tangent), on the free
    coordinates: two solves with the factor of _factor and one position_tangent_times."""
    n_u = S.shape[0]
    rr = np.zeros(n_u)
    for t in range(free.size):
        rr[free[t]] = r[t]
    x0 = np.zeros(n_u)
    _solve(parent, child, jf_ptr, jf_coord, U, W, Sf, St, Dinv, rr, x0, n_nodes)
    kx = np.zeros(n_u)
    position_tangent_apply(parent, child, uT, uR, uB, coord_child, S, u, udot, I, IV, IA, A, F, gravity, x0, kx)
    for a in range(n_u):
        rr[a] = 0.0
    for t in range(free.size):
        rr[free[t]] = bp * kx[free[t]]
    x1 = np.zeros(n_u)
    _solve(parent, child, jf_ptr, jf_coord, U, W, Sf, St, Dinv, rr, x1, n_nodes)
    for t in range(free.size):
        out[t] = x0[free[t]] - x1[free[t]]
