"""The Newton iteration matrix S = M̄ + γ' C̄ + β' K̄ assembled straight into its fixed CSC pattern,
and the pattern maps it needs: this module owns every index structure of M̄ and S.

M̄'s node-mass part (rigid bodies, particles) comes from the composite-rigid-body algorithm: with
I_i the spatial inertia of node i at the global origin and I^C_j its sum over the subtree of joint
j, M̄_ab = S_aᵀ I^C_j(a) S_b for every coordinate b on the path from joint(a) to ground
(:class:`MassPairs`; equal to Bᵀ M B, checked in the tests). Every element e of a family adds
B_eᵀ (β' K_e + γ' C_e + M_e) B_e, where B_e (6m × n_e) holds the rows of B for the element's m
nodes restricted to the n_e coordinates on their paths to ground (Issa & Arczewski's π* pattern;
a node on ground has none). The positions of every entry in S's data array are computed once per
topology and coordinate set (:class:`IterationMatrix`); each assembly then runs one compiled pass
per element family over its (n_el, 6m, 6m) blocks and writes the values in place: no sparse
matrix products, and the same pattern CHOLMOD analysed (docs/equations_of_motion.md §5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from numba import njit

from flexmb.engine.block_scatter import (  # re-exported: the steps and element kernels import them from here
    _scatter_elements,
    add_values,
    element_columns,
    scatter_block,
)
from flexmb.engine.pair_scatter import relative_lists, scatter_pairs

if TYPE_CHECKING:  # type hints only: element kernels import this module's compiled scatter (no import cycle)
    from flexmb.engine.kinematics import Kinematics, TreePattern

__all__ = ["MassPairs", "MassPattern", "IterationMatrix", "IterationMatrices", "ElementScatter", "ThreadPlan", "element_columns",
           "scatter_block", "add_values"]


def _ragged_range(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + c) over (s, c) in zip(starts, counts), without a loop."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    offsets = np.cumsum(counts) - counts
    return np.arange(total, dtype=np.int64) - np.repeat(offsets - np.asarray(starts, dtype=np.int64), counts)


def _key(cols: np.ndarray) -> bytes:
    """Cache key of a coordinate set."""
    return np.ascontiguousarray(cols, dtype=np.int64).tobytes()


class MassPattern:
    """M̄'s node-mass part on a coordinate set ``cols`` in CSC form: the pair (MassPairs) each stored
    entry takes its value from (``source``), ``indices``, ``indptr`` and the diagonal's positions."""

    def __init__(self, pairs: MassPairs, cols: np.ndarray, coord_joint: np.ndarray, n_u: int) -> None:
        loc = np.full(n_u, -1)
        loc[cols] = np.arange(cols.size)
        pa, pb = pairs.pa, pairs.pb
        keep = (loc[pa] >= 0) & (loc[pb] >= 0)
        src = np.flatnonzero(keep)
        off = src[pa[src] != pb[src]]
        same_joint = coord_joint[pa[off]] == coord_joint[pb[off]]
        mirror = off[~same_joint]  # pairs with a strict ancestor appear once: mirror them
        rows = np.concatenate([loc[pa[src]], loc[pb[mirror]]])
        colsx = np.concatenate([loc[pb[src]], loc[pa[mirror]]])
        source = np.concatenate([src, mirror])
        order = np.lexsort((rows, colsx))
        self.source = source[order]
        self.indices = rows[order].astype(np.int32)
        self.indptr = np.searchsorted(colsx[order], np.arange(cols.size + 1)).astype(np.int32)
        self.diag_pos = np.flatnonzero(self.indices == np.repeat(np.arange(cols.size), np.diff(self.indptr)))
        self.shape = (cols.size, cols.size)


class MassPairs:
    """The coordinate pairs (a, b), b on the path from joint(a) to ground, of M̄'s node-mass part
    (module docstring): ``pa``, ``pb`` (n_pairs,), a ordered ascending, b root first. Built once
    per model without a loop over coordinates."""

    def __init__(self, tree: TreePattern, n_u: int) -> None:
        self.tree = tree
        self.n_u = n_u
        N = tree.n_nodes
        anc_ptr = np.searchsorted(tree.pair_node, np.arange(N + 1))  # pairs of node i: anc_ptr[i]:anc_ptr[i+1]
        child = np.asarray(tree.coord_child, dtype=np.int64)
        lo = anc_ptr[child]
        counts = anc_ptr[child + 1] - lo
        self.pa = np.repeat(np.arange(n_u), counts)
        self.pb = np.asarray(tree.pair_coord, dtype=np.int64)[_ragged_range(lo, counts)]
        self._patterns: dict[bytes, MassPattern] = {}

    def values(self, Mb: np.ndarray, kin: Kinematics) -> np.ndarray:
        """M̄_ab of every pair for node mass blocks Mb (N, 6, 6), compiled."""
        t = self.tree
        out = np.empty(self.pa.size)
        _composite_pairs(Mb, kin.x, t.joint_parent_ext, t.joint_child, t.coord_start, t.coord_count, kin.S, self.pa,
                         self.pb, out)
        return out

    def pattern(self, cols: np.ndarray) -> MassPattern:
        """The CSC pattern of M̄'s node-mass part on ``cols`` (built once per coordinate set)."""
        key = _key(cols)
        if key not in self._patterns:
            self._patterns[key] = MassPattern(self, np.asarray(cols), self.tree.coord_joint, self.n_u)
        return self._patterns[key]

    def mbar(self, Mb: np.ndarray, kin: Kinematics, cols: np.ndarray, diag: np.ndarray | None = None) -> sp.csc_matrix:
        """M̄'s node-mass part on ``cols`` (plus ``diag`` on its diagonal) as a CSC matrix."""
        p = self.pattern(cols)
        data = self.values(Mb, kin)[p.source]
        if diag is not None:
            data[p.diag_pos] += diag
        return sp.csc_matrix((data, p.indices, p.indptr), shape=p.shape)


@dataclass(frozen=True)
class ThreadPlan:
    """An element family's threaded scatter (:meth:`ElementScatter.thread_plan`) for ``threads``
    slices: per element the offset ``doff`` (-1: every product added by its thread) into ``dmap``,
    which maps the element's products, row-major, to a slot of the stored ones (-1: added by the
    thread), slots numbered in element order."""

    threads: int
    doff: np.ndarray
    dmap: np.ndarray


@dataclass(frozen=True)
class ElementScatter:
    """Where the blocks of one element family go in S's values (module docstring): ``nodes`` (n_el, m)
    (ground as N), the coordinates on each node's path to ground (``anc_coord[anc_ptr[i]:anc_ptr[i + 1]]``),
    and per element e the value positions of its ne × ne coordinate pairs, row-major,
    ``pos[pos_ptr[e]:pos_ptr[e + 1]]`` (-1: not in S; int32 unless S has 2**31 values or more); ``max_ne``
    a bound on ne. A fused element kernel calls :func:`element_columns` and :func:`scatter_block` per
    element with these arrays.
    ``skip`` (n_el,) or empty: per element, bit sr·m + sc set where the node block (sr, sc) of
    B_eᵀ E_e B_e has no position in S, so E_e's block (sr, sc) is not needed (:meth:`lower_only`).
    ``pairs``: an internal-pair family's scatter (ElementFamily.internal_pair, engine/pair_scatter.py):
    ``anc_ptr``, ``anc_coord`` then hold per end slot 2e + s the element end's relative coordinates
    (docs/spring_damper.md (S15)) instead of per node its path; the blocks go through scatter_pairs."""

    nodes: np.ndarray
    anc_ptr: np.ndarray
    anc_coord: np.ndarray
    pos_ptr: np.ndarray
    pos: np.ndarray
    max_ne: int
    skip: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pairs: bool = False

    def slots(self) -> np.ndarray:
        """What indexes ``anc_ptr`` per element end: the nodes, or for ``pairs`` the end slots 2e + s."""
        n, m = self.nodes.shape
        return np.arange(n * m, dtype=np.int64).reshape(n, m) if self.pairs else self.nodes

    def lower_only(self, indices: np.ndarray, indptr: np.ndarray) -> ElementScatter:
        """The same scatter into S's lower triangle only (row >= column of the CSC pattern (indices,
        indptr)): the part CHOLMOD and the dense factor read (the compiled element step,
        flexmb/solvers/element_step.py). The upper triangle's positions become -1 and the node
        blocks of an element left without any position are marked in ``skip``: for a chain of free
        nodes the element's block (first node's rows, second node's columns), a quarter of the
        products. The entries formed are the same sums as before, bit for bit."""
        col = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
        pos = self.pos.copy()
        have = pos >= 0
        pos[have & (np.asarray(indices, dtype=np.int64)[np.maximum(pos, 0)] < col[np.maximum(pos, 0)])] = -1
        skip = np.zeros(self.nodes.shape[0], dtype=np.int64)
        _skipped_blocks(self.slots(), self.anc_ptr, self.pos_ptr, pos, skip)
        return ElementScatter(self.nodes, self.anc_ptr, self.anc_coord, self.pos_ptr, pos, self.max_ne, skip, self.pairs)

    def thread_plan(self, threads: int) -> ThreadPlan:
        """Which products each element's thread may add to S's values itself when the elements are
        split into ``threads`` contiguous slices, one per thread (as the beams' threaded passes split
        them, c n // threads to (c + 1) n // threads): those at a position no element of an earlier
        slice has. The others (at the seams between slices, where two slices' elements share a
        node) are stored and added after the threads, in element order: every position then gets
        its products in element order, the sums of one thread bit for bit (elements/beam/kernels.py,
        add_element_matrices)."""
        n = self.nodes.shape[0]
        counts = np.diff(self.pos_ptr)
        starts = np.array([c * n // threads for c in range(threads)], dtype=np.int64)
        entry_slice = np.repeat(np.searchsorted(starts, np.arange(n), side="right") - 1, counts)
        have = self.pos >= 0
        first = np.full(int(self.pos.max(initial=-1)) + 1, threads, dtype=np.int64)
        np.minimum.at(first, self.pos[have], entry_slice[have])
        stored = np.zeros(self.pos.size, dtype=bool)
        stored[have] = entry_slice[have] > first[self.pos[have]]
        elems = np.unique(np.repeat(np.arange(n), counts)[stored])
        doff = np.full(n, -1, dtype=np.int64)
        entries = (np.concatenate([np.arange(self.pos_ptr[e], self.pos_ptr[e + 1]) for e in elems]) if elems.size
                   else np.zeros(0, dtype=np.int64))
        doff[elems] = np.concatenate([[0], np.cumsum(counts[elems])[:-1]]) if elems.size else doff[elems]
        dmap = np.full(entries.size, -1, dtype=np.int64)
        dmap[stored[entries]] = np.arange(int(stored.sum()), dtype=np.int64)
        return ThreadPlan(threads, doff, dmap)

    def add(self, kin: Kinematics, blocks: np.ndarray, data: np.ndarray) -> None:
        """data += B_eᵀ E_e B_e for the blocks E (n_el, 6m, 6m), compiled."""
        if self.pairs:  # over the relative coordinates (engine/pair_scatter.py)
            scatter_pairs(self.nodes, self.anc_ptr, self.anc_coord, self.pos_ptr, self.pos, kin.S, kin.x, blocks, self.max_ne,
                          data)
            return
        _scatter_elements(self.nodes, self.anc_ptr, self.anc_coord, self.pos_ptr, self.pos, kin.S, kin.x, blocks,
                          self.max_ne, data)


class IterationMatrix:
    """Structural pattern of S on the coordinates ``cols`` and the scatter maps of its parts:
    M̄'s pairs, the diagonal and, per element family, the positions of B_eᵀ E_e B_e (module
    docstring). ``element_nodes``: one (n_el, m) array of node indices per family giving blocks
    (-1: ground), in the order their blocks are passed to :meth:`assemble`; ``internal``: per family
    whether it is an internal-pair family (ElementFamily.internal_pair), its blocks then over the
    relative coordinates of its elements (docs/spring_damper.md (S15), :class:`ElementScatter` ``pairs``)."""

    def __init__(self, pairs: MassPairs, element_nodes: Sequence[np.ndarray], cols: np.ndarray,
                 internal: Sequence[bool] = ()) -> None:
        tree = pairs.tree
        cols = np.asarray(cols, dtype=np.int64)
        self.cols = cols
        n = cols.size
        N = tree.n_nodes
        loc = np.full(pairs.n_u, -1, dtype=np.int64)
        loc[cols] = np.arange(n)
        mp = pairs.pattern(cols)
        m_cols = np.repeat(np.arange(n), np.diff(mp.indptr))
        self.anc_ptr = np.searchsorted(tree.pair_node, np.arange(N + 2)).astype(np.int64)  # node N (ground): empty
        self.anc_ptr[N + 1] = self.anc_ptr[N]
        self.anc_coord = np.asarray(tree.pair_coord, dtype=np.int64)
        # every (row, col) of every element's coordinate pairs, element by element, row-major
        groups = []
        internal = tuple(internal) + (False,) * (len(element_nodes) - len(internal))
        for nodes, rel in zip(element_nodes, internal):
            nodes = np.asarray(nodes, dtype=np.int64)
            nodes = np.where(nodes < 0, N, nodes)
            lists = self._lists(nodes, rel)
            anc_ptr, anc_coord, slots = lists
            lo = anc_ptr[slots]
            counts = anc_ptr[slots + 1] - lo  # (n_el, m)
            ce = anc_coord[_ragged_range(lo.ravel(), counts.ravel())]
            ne = counts.sum(axis=1)
            ce_ptr = np.concatenate([[0], np.cumsum(ne)])
            sq = ne * ne
            pos_ptr = np.concatenate([[0], np.cumsum(sq)]).astype(np.int64)
            e_of = np.repeat(np.arange(nodes.shape[0]), sq)
            t = np.arange(int(pos_ptr[-1]), dtype=np.int64) - pos_ptr[e_of]
            ne_e = ne[e_of]
            r = loc[ce[ce_ptr[e_of] + t // ne_e]]
            c = loc[ce[ce_ptr[e_of] + t % ne_e]]
            keep = (r >= 0) & (c >= 0)
            groups.append((nodes, pos_ptr, r, c, keep, int(nodes.shape[1] * counts.max(initial=0)), lists, rel))
        # the structural pattern: M̄'s entries united with every element's coordinate pairs
        keys = [mp.indices.astype(np.int64) + m_cols.astype(np.int64) * n]
        keys += [r[keep] + c[keep] * n for _, _, r, c, keep, _, _, _ in groups]
        keys = np.sort(np.concatenate(keys))
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
        self.indices = (keys % n).astype(np.int32)
        self.indptr = np.searchsorted(keys // n, np.arange(n + 1)).astype(np.int32)
        self.shape = (n, n)

        def position(rows: np.ndarray, cs: np.ndarray) -> np.ndarray:
            k = rows.astype(np.int64) + cs.astype(np.int64) * n
            pos = np.searchsorted(keys, k)
            assert np.all(keys[np.minimum(pos, keys.size - 1)] == k), "entry outside the structural pattern"
            return pos

        self.mbar_src = mp.source
        self.mbar_pos = position(mp.indices, m_cols)
        self.diag_pos = position(np.arange(n), np.arange(n))
        self.groups: list[ElementScatter] = []
        # positions in int32 where they fit: half the bytes the matrix passes read per element entry
        pos_type = np.int32 if keys.size < 2**31 else np.int64
        for nodes, pos_ptr, r, c, keep, max_ne, (anc_ptr, anc_coord, _), rel in groups:
            pos = np.full(r.size, -1, dtype=pos_type)
            pos[keep] = position(r[keep], c[keep])
            self.groups.append(ElementScatter(nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne, pairs=rel))

    def _lists(self, nodes: np.ndarray, internal: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(anc_ptr, anc_coord, slots) of a family's elements ``nodes`` (ground as N): the nodes' paths and
        the nodes themselves, or for an internal-pair family the relative lists of its end slots (S15)."""
        if not internal:
            return self.anc_ptr, self.anc_coord, nodes
        ptr, coord = relative_lists(self.anc_ptr, self.anc_coord, nodes)
        return ptr, coord, np.arange(nodes.size, dtype=np.int64).reshape(nodes.shape)

    @property
    def pattern(self) -> sp.csc_matrix:
        """The structural pattern (all ones), the matrix CHOLMOD analyses."""
        return sp.csc_matrix((np.ones(self.indices.size), self.indices, self.indptr), shape=self.shape)

    def assemble(self, pairs: MassPairs, Mb: np.ndarray, kin: Kinematics,
                 blocks: Sequence[np.ndarray | Callable[[ElementScatter, Kinematics, np.ndarray], None] | None], diag: np.ndarray,
                 with_mass: bool = True, out: np.ndarray | None = None) -> sp.csc_matrix | np.ndarray:
        """S = M̄ + Σ_families Bᵀ E B + diag on the analysed pattern: M̄'s node-mass part from the
        node mass blocks Mb (N, 6, 6) (left out if not ``with_mass``), ``blocks`` per family of
        ``element_nodes`` one (n_el, 6m, 6m) array, None (nothing) or a function (scatter, kin,
        data) that adds its Bᵀ E B into the values itself (a fused kernel: :class:`ElementScatter`),
        ``diag`` (n,) on the diagonal.
        With ``out`` (nnz,), S's values are written into it in the pattern's order and ``out`` is
        returned (the persistent matrix of :class:`flexmb.engine.linalg.SparseCholesky`: no new
        sparse matrix per factorization); otherwise a new CSC matrix."""
        if out is None:
            data = np.zeros(self.indices.size)
        else:
            data = out
            data.fill(0.0)
        if with_mass:
            data[self.mbar_pos] += pairs.values(Mb, kin)[self.mbar_src]
        data[self.diag_pos] += diag
        for scatter, E in zip(self.groups, blocks):
            if callable(E):
                E(scatter, kin, data)
            elif E is not None and len(E):
                scatter.add(kin, E, data)
        if out is not None:
            return out
        return sp.csc_matrix((data, self.indices, self.indptr), shape=self.shape)


class IterationMatrices:
    """The :class:`IterationMatrix` of every coordinate set asked for, built on first use (a
    solver asks for its unknowns; statics, the relaxed start and the rigid analysis for others)."""

    def __init__(self, pairs: MassPairs, element_nodes: Sequence[np.ndarray], internal: Sequence[bool] = ()) -> None:
        self.pairs = pairs
        self.element_nodes = tuple(element_nodes)
        self.internal = tuple(internal)  # per family: internal pair (IterationMatrix)
        self._cache: dict[bytes, IterationMatrix] = {}

    def get(self, cols: np.ndarray) -> IterationMatrix:
        """The iteration matrix maps on ``cols``."""
        key = _key(cols)
        if key not in self._cache:
            self._cache[key] = IterationMatrix(self.pairs, self.element_nodes, cols, self.internal)
        return self._cache[key]


# ---------------------------------------------------------------------------- compiled kernels

@njit(cache=True)
def spatial_node_blocks(Mb, x, D):
    """D_i = X_iᵀ M_i X_i: the node mass blocks Mb (N, 6, 6) moved to the global origin as spatial
    inertias (X_i = [[I, -[x_i]], [0, I]]); nodes without mass: 0. The products skip X's zero
    entries and keep the order of the others (the same sums as the dense products)."""
    N = Mb.shape[0]
    T = np.empty((6, 6))
    for i in range(N):
        nz = False
        for r in range(6):
            for c in range(6):
                if Mb[i, r, c] != 0.0:
                    nz = True
        if not nz:
            for r in range(6):
                for c in range(6):
                    D[i, r, c] = 0.0
            continue
        x0, x1, x2 = x[i, 0], x[i, 1], x[i, 2]
        # column 3: X[1,3] = -x2, X[2,3] = x1; column 4: X[0,4] = x2, X[2,4] = -x0; column 5: X[0,5] = -x1, X[1,5] = x0
        for r in range(6):  # T = M X
            for c in range(3):
                T[r, c] = 0.0 + Mb[i, r, c]
            T[r, 3] = ((0.0 + Mb[i, r, 1] * -x2) + Mb[i, r, 2] * x1) + Mb[i, r, 3]
            T[r, 4] = ((0.0 + Mb[i, r, 0] * x2) + Mb[i, r, 2] * -x0) + Mb[i, r, 4]
            T[r, 5] = ((0.0 + Mb[i, r, 0] * -x1) + Mb[i, r, 1] * x0) + Mb[i, r, 5]
        for c in range(6):  # D = Xᵀ T
            for r in range(3):
                D[i, r, c] = 0.0 + T[r, c]
            D[i, 3, c] = ((0.0 + -x2 * T[1, c]) + x1 * T[2, c]) + T[3, c]
            D[i, 4, c] = ((0.0 + x2 * T[0, c]) + -x0 * T[2, c]) + T[4, c]
            D[i, 5, c] = ((0.0 + -x1 * T[0, c]) + x0 * T[1, c]) + T[5, c]


@njit(cache=True)
def _composite_pairs(Mb, x, parent, child, coord_start, coord_count, S, pa, pb, out):
    """Composite spatial inertias at the origin (spatial_node_blocks) summed over subtrees, then
    out_p = S_paᵀ I^C S_pb (the composite-rigid-body algorithm)."""
    N = Mb.shape[0]
    IC = np.empty((N, 6, 6))
    spatial_node_blocks(Mb, x, IC)
    for k in range(parent.size - 1, -1, -1):
        if parent[k] != N:
            IC[parent[k]] += IC[child[k]]
    n_u = S.shape[0]
    F = np.empty((n_u, 6))
    for k in range(parent.size):
        c = child[k]
        for a in range(coord_start[k], coord_start[k] + coord_count[k]):
            for r in range(6):
                s = 0.0
                for q in range(6):
                    s += IC[c, r, q] * S[a, q]
                F[a, r] = s
    for t in range(pa.size):
        s = 0.0
        for r in range(6):
            s += F[pa[t], r] * S[pb[t], r]
        out[t] = s


@njit(cache=True)
def _skipped_blocks(nodes, anc_ptr, pos_ptr, pos, skip):
    """skip[e]: bit sr·m + sc for every node block (sr ≠ sc, both with coordinates) of element e
    whose positions are all -1 (ElementScatter.lower_only)."""
    m = nodes.shape[1]
    first = np.empty(m + 1, dtype=np.int64)
    for e in range(nodes.shape[0]):
        ne = 0
        for sd in range(m):
            first[sd] = ne
            ne += anc_ptr[nodes[e, sd] + 1] - anc_ptr[nodes[e, sd]]
        first[m] = ne
        bits = 0
        for sr in range(m):
            for sc in range(m):
                if sr == sc or first[sr + 1] == first[sr] or first[sc + 1] == first[sc]:
                    continue
                none = True
                for r in range(first[sr], first[sr + 1]):
                    for c in range(first[sc], first[sc + 1]):
                        if pos[pos_ptr[e] + r * ne + c] >= 0:
                            none = False
                if none:
                    bits |= 1 << (sr * m + sc)
        skip[e] = bits
