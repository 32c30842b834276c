"""The Newton iteration matrix S = M̄ + γ' C̄ + β' K̄ assembled straight into its fixed CSC pattern.

M̄'s node-block part comes from the composite inertias (Assembler.mbar); every two-node element e
(bushing or beam) adds B_eᵀ (β' K_e + γ' C_e + M_e) B_e, where B_e (12 × n_e) holds the rows of B
for the element's two nodes restricted to the n_e coordinates on their paths to ground (Issa &
Arczewski's π* pattern). The positions of every entry in S's data array are computed once per
topology; each assembly then runs one compiled pass over the elements and writes the values in
place: no sparse matrix products, and the same pattern CHOLMOD analysed (DESIGN §4).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = ["IterationMatrix"]


class IterationMatrix:
    """Scatter maps of S on the coordinates ``cols`` for one Assembler (built once per topology)."""

    def __init__(self, asm, cols: np.ndarray) -> None:
        m = asm.model
        cols = np.asarray(cols, dtype=np.int64)
        self.asm, self.cols = asm, cols
        P = asm.structural_pattern(cols)
        P.sort_indices()
        self.indices, self.indptr, self.shape = P.indices.astype(np.int32), P.indptr.astype(np.int32), P.shape
        n = cols.size
        keys = self.indices.astype(np.int64) + np.repeat(np.arange(n, dtype=np.int64), np.diff(self.indptr)) * n

        def position(rows: np.ndarray, cs: np.ndarray) -> np.ndarray:
            k = rows.astype(np.int64) + cs.astype(np.int64) * n
            pos = np.searchsorted(keys, k)
            assert np.all(keys[np.minimum(pos, keys.size - 1)] == k), "entry outside the structural pattern"
            return pos

        # M̄'s composite-inertia entries and the diagonal
        src, m_idx, m_ptr, _ = asm._free_pattern(cols)
        m_cols = np.repeat(np.arange(n), np.diff(m_ptr))
        self.mbar_src = src
        self.mbar_pos = position(m_idx, m_cols)
        self.diag_pos = position(np.arange(n), np.arange(n))
        # elements: coordinates on the paths of their nodes (ground: none) and S positions of all pairs
        loc = np.full(m.n_u, -1, dtype=np.int64)
        loc[cols] = np.arange(n)
        p = asm.pattern
        N = m.n_nodes
        self.anc_ptr = np.searchsorted(p.pair_node, np.arange(N + 2)).astype(np.int64)  # node N (ground): empty
        self.anc_ptr[N + 1] = self.anc_ptr[N]
        self.anc_coord = p.pair_coord.astype(np.int64)
        ia = np.concatenate([np.where(m.bushing_a < 0, N, m.bushing_a), m.beam_a]).astype(np.int64)
        ib = np.concatenate([m.bushing_b, m.beam_b]).astype(np.int64)
        self.el_a, self.el_b = ia, ib
        pos_ptr = [0]
        pos = []
        for a, b in zip(ia, ib):
            ce = np.concatenate([self.anc_coord[self.anc_ptr[a]:self.anc_ptr[a + 1]],
                                 self.anc_coord[self.anc_ptr[b]:self.anc_ptr[b + 1]]])
            r = np.repeat(loc[ce], ce.size)
            c = np.tile(loc[ce], ce.size)
            keep = (r >= 0) & (c >= 0)
            pe = np.full(r.size, -1, dtype=np.int64)
            if keep.any():
                pe[keep] = position(r[keep], c[keep])
            pos.append(pe)
            pos_ptr.append(pos_ptr[-1] + r.size)
        self.el_pos = np.concatenate(pos) if pos else np.zeros(0, dtype=np.int64)
        self.el_pos_ptr = np.array(pos_ptr, dtype=np.int64)
        sizes = np.diff(self.anc_ptr)
        self.max_ne = int(2 * sizes.max(initial=0))

    def assemble(self, ev, gp: float, bp: float, diag: np.ndarray, material_only: bool = False,
                 with_mass: bool = True) -> sp.csc_matrix:
        """S = M̄ + γ' C̄ + β' K̄ (``with_mass=False``: γ' C̄ + β' K̄ alone, the static tangent) plus
        ``diag`` on the diagonal, on the analysed pattern."""
        data = np.zeros(self.indices.size)
        if with_mass:
            data[self.mbar_pos] += self.asm._pair_values(ev)[self.mbar_src]
        data[self.diag_pos] += diag
        blocks = self.asm.element_blocks(ev, bp, gp, material_only, cm=1.0 if with_mass else 0.0)
        if blocks is not None:
            _scatter_elements(self.el_a, self.el_b, self.anc_ptr, self.anc_coord, self.el_pos_ptr, self.el_pos,
                              ev.kin.S, ev.kin.x, blocks, self.max_ne, data)
        return sp.csc_matrix((data, self.indices, self.indptr), shape=self.shape)


@njit(cache=True)
def _scatter_elements(el_a, el_b, anc_ptr, anc_coord, pos_ptr, pos, S, x, blocks, max_ne, data):
    """data[pos] += B_e^T E_e B_e for every element (module docstring)."""
    Be = np.zeros((12, max_ne))
    H = np.empty((12, max_ne))
    for e in range(el_a.size):
        ne = 0
        for side in range(2):
            node = el_a[e] if side == 0 else el_b[e]
            r0 = 6 * side
            for t in range(anc_ptr[node], anc_ptr[node + 1]):
                k = anc_coord[t]
                for i in range(12):
                    Be[i, ne] = 0.0
                # B(node, k) = (S_v + S_w x x_node, S_w)
                Be[r0 + 0, ne] = S[k, 0] + S[k, 4] * x[node, 2] - S[k, 5] * x[node, 1]
                Be[r0 + 1, ne] = S[k, 1] + S[k, 5] * x[node, 0] - S[k, 3] * x[node, 2]
                Be[r0 + 2, ne] = S[k, 2] + S[k, 3] * x[node, 1] - S[k, 4] * x[node, 0]
                Be[r0 + 3, ne] = S[k, 3]
                Be[r0 + 4, ne] = S[k, 4]
                Be[r0 + 5, ne] = S[k, 5]
                ne += 1
        na = anc_ptr[el_a[e] + 1] - anc_ptr[el_a[e]]
        E = blocks[e]
        for j in range(ne):
            r0 = 0 if j < na else 6
            for i in range(12):
                s = 0.0
                for q in range(6):
                    s += E[i, r0 + q] * Be[r0 + q, j]
                H[i, j] = s
        off = pos_ptr[e]
        for r in range(ne):
            r0 = 0 if r < na else 6
            for c in range(ne):
                p = pos[off + r * ne + c]
                if p >= 0:
                    s = 0.0
                    for q in range(6):
                        s += Be[r0 + q, r] * H[r0 + q, c]
                    data[p] += s
