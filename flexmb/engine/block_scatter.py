"""The compiled scatter of one element's block into the iteration matrix's values: the columns B_e
of an element over its nodes' path coordinates and data[pos] += B_eᵀ E_e B_e
(docs/equations_of_motion.md §5). The kernels below the patterns of engine/iteration_matrix.py (which
re-exports them) and of engine/pair_scatter.py, so that both read them without importing each other.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["twist_column", "coordinate_columns", "element_columns", "end_columns", "scatter_block", "add_values"]


@njit(cache=True, inline="always")
def twist_column(Be, r0, ne, S, k, x, node):
    """Column ne of B_e in the rows r0:r0 + 6 of ``node``: coordinate k's twist (S_v + S_w × x_node,
    S_w) at the node's position (docs/equations_of_motion.md §5). The cross product is formed
    before it is added to S_v (element_columns)."""
    Be[r0 + 0, ne] = S[k, 0] + (S[k, 4] * x[node, 2] - S[k, 5] * x[node, 1])
    Be[r0 + 1, ne] = S[k, 1] + (S[k, 5] * x[node, 0] - S[k, 3] * x[node, 2])
    Be[r0 + 2, ne] = S[k, 2] + (S[k, 3] * x[node, 1] - S[k, 4] * x[node, 0])
    Be[r0 + 3, ne] = S[k, 3]
    Be[r0 + 4, ne] = S[k, 4]
    Be[r0 + 5, ne] = S[k, 5]


@njit(cache=True, inline="always")
def coordinate_columns(Be, k6, r0, ne, coord, lo, hi, S, x, node):
    """The columns ne, ne + 1, ... of B_e (k6 rows) for the coordinates coord[lo:hi]: each coordinate's
    :func:`twist_column` in ``node``'s rows r0:r0 + 6, zero in the other rows. Returns the next column."""
    for t in range(lo, hi):
        k = coord[t]
        for i in range(k6):
            Be[i, ne] = 0.0
        twist_column(Be, r0, ne, S, k, x, node)
        ne += 1
    return ne


@njit(cache=True)
def element_columns(nodes, e, anc_ptr, anc_coord, S, x, Be, first):
    """B_e of element e (module docstring) into Be (6m, max_ne), its columns grouped node by node,
    B(node, k) = (S_v + S_w x x_node, S_w), node sd's columns first[sd]:first[sd + 1]. Returns the
    number of columns ne. The cross product is formed before it is added to S_v: for an axis
    through the node itself (S_v = x × S_w, kinematics._axis_row) the two then cancel exactly, so a
    free node's block is [[I, 0], [0, R]] without round-off (scatter_block's fast path)."""
    return end_columns(nodes, e, anc_ptr, anc_coord, S, x, Be, first, False)


@njit(cache=True, inline="always")
def end_columns(nodes, e, ptr, coord, S, x, Be, first, per_end):
    """The columns of B_e, end by end, into Be (6m, max_ne): end sd's columns first[sd]:first[sd + 1] are
    those (:func:`coordinate_columns`) of the coordinates coord[ptr[i]:ptr[i + 1]], with i its node
    (``per_end`` False: the node's ancestor list, :func:`element_columns`) or m e + sd (True: one list per
    element end, engine/pair_scatter.py pair_columns). Returns the number of columns ne."""
    m = nodes.shape[1]
    k6 = 6 * m
    ne = 0
    for sd in range(m):
        first[sd] = ne
        node = nodes[e, sd]
        i = m * e + sd if per_end else node
        ne = coordinate_columns(Be, k6, 6 * sd, ne, coord, ptr[i], ptr[i + 1], S, x, node)
    first[m] = ne
    return ne


@njit(cache=True, inline="always")
def _free_node_block(Be, r0, f0, nc):
    """Whether the columns f0:f0 + nc of B_e (rows r0:r0 + 6, its node's) are those of a free node,
    [[I, 0], [0, R]] exactly (six coordinates: three translations along the global axes, then
    three rotations about the node's axes R)."""
    if nc != 6:
        return False
    for a in range(3):
        for b in range(6):
            if Be[r0 + a, f0 + b] != (1.0 if a == b else 0.0):
                return False
        for b in range(3):
            if Be[r0 + 3 + a, f0 + b] != 0.0:
                return False
    return True


@njit(cache=True)
def scatter_block(E, Be, H, first, m, ne, pos, off, data, values, skip):
    """data[pos[off + r ne + c]] += (B_eᵀ E B_e)[r, c] for one element (pos < 0: left out), with B_e
    from :func:`element_columns`: H = E B_e node block by node block, then B_eᵀ H. A free node's
    block [[I, 0], [0, R]] (:func:`_free_node_block`) is applied without its zero and unit
    products: for finite E these add ±0 to sums started at +0 and multiply by 1, so every value is
    the dense products' bit for bit (the remaining products in the same order). With ``values``
    of the size of ``pos`` (else empty) each product is stored at values[off + r ne + c] instead of added
    (elements on several threads; :func:`add_values` adds them in element order). ``skip``: bit
    sr·m + sc set where the node block (sr, sc) has no position (ElementScatter.lower_only): H's
    rows of node sr in node sc's columns, which only that block reads, are not formed (nor need
    E's block (sr, sc))."""
    store = values.size > 0
    k6 = 6 * m
    free = 0  # bit sd: node sd's block is a free node's (tested once, used by both passes)
    for sd in range(m):
        r0 = 6 * sd
        f0 = first[sd]
        if _free_node_block(Be, r0, f0, first[sd + 1] - f0):
            free |= 1 << sd
            for sr in range(m):
                if (skip >> (sr * m + sd)) & 1:
                    continue
                for i in range(6 * sr, 6 * sr + 6):
                    for t in range(3):
                        H[i, f0 + t] = 0.0 + E[i, r0 + t]
                    for t in range(3):
                        j = f0 + 3 + t
                        H[i, j] = (((0.0 + E[i, r0 + 3] * Be[r0 + 3, j]) + E[i, r0 + 4] * Be[r0 + 4, j])
                                   + E[i, r0 + 5] * Be[r0 + 5, j])
            continue
        for j in range(f0, first[sd + 1]):
            for i in range(k6):
                if (skip >> ((i // 6) * m + sd)) & 1:
                    continue
                s = 0.0
                for q in range(6):
                    s += E[i, r0 + q] * Be[r0 + q, j]
                H[i, j] = s
    for sd in range(m):
        r0 = 6 * sd
        f0 = first[sd]
        if free & (1 << sd):
            for t in range(3):
                o = off + (f0 + t) * ne
                for c in range(ne):
                    p = pos[o + c]
                    if p >= 0:
                        if store:
                            values[o + c] = 0.0 + H[r0 + t, c]
                        else:
                            data[p] += 0.0 + H[r0 + t, c]
            for t in range(3):
                r = f0 + 3 + t
                b3, b4, b5 = Be[r0 + 3, r], Be[r0 + 4, r], Be[r0 + 5, r]
                o = off + r * ne
                for c in range(ne):
                    p = pos[o + c]
                    if p >= 0:
                        v = ((0.0 + b3 * H[r0 + 3, c]) + b4 * H[r0 + 4, c]) + b5 * H[r0 + 5, c]
                        if store:
                            values[o + c] = v
                        else:
                            data[p] += v
            continue
        for r in range(f0, first[sd + 1]):
            o = off + r * ne
            for c in range(ne):
                p = pos[o + c]
                if p >= 0:
                    s = 0.0
                    for q in range(6):
                        s += Be[r0 + q, r] * H[r0 + q, c]
                    if store:
                        values[o + c] = s
                    else:
                        data[p] += s


@njit(cache=True)
def add_values(pos, values, data):
    """data[pos[t]] += values[t] for t ascending (pos < 0: left out): the products that
    :func:`scatter_block` stored, added in the order it would have added them."""
    for t in range(pos.size):
        p = pos[t]
        if p >= 0:
            data[p] += values[t]


@njit(cache=True)
def _scatter_elements(nodes, anc_ptr, anc_coord, pos_ptr, pos, S, x, blocks, max_ne, data):
    """data[pos] += B_e^T E_e B_e for every element e with nodes ``nodes[e]`` and block E_e =
    blocks[e] (module docstring; element_columns, scatter_block)."""
    m = nodes.shape[1]
    k6 = 6 * m
    Be = np.zeros((k6, max_ne))
    H = np.empty((k6, max_ne))
    first = np.empty(m + 1, dtype=np.int64)
    none = np.empty(0)
    for e in range(nodes.shape[0]):
        ne = element_columns(nodes, e, anc_ptr, anc_coord, S, x, Be, first)
        scatter_block(blocks[e], Be, H, first, m, ne, pos, pos_ptr[e], data, none, 0)
