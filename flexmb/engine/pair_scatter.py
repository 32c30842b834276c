"""The iteration-matrix scatter of internal-pair elements over the joints of the tree path between
their two nodes (docs/spring_damper.md §7, eq. (S14)-(S16)).

An element whose loads on its nodes a and b are an internal pair (equal, opposite, on one line: a
spring-damper, ElementFamily.internal_pair) has a zero net wrench, so a coordinate that moves both of
its nodes alike (a joint from ground to their common ancestor) takes none of its generalized force,
and the element's tangent is assembled over the remaining coordinates only: per end, the coordinates
of the joints on that node's path from ground that are not on the other node's path (S15). The
coordinate lists of each element end replace the node's path lists of engine/iteration_matrix.py:
the scatter reads them per *end slot* 2e + s (element e, end s), while the rows of B_e stay those of
the end's node (its position x). For a spring-damper between a link and the next one of a chain
that leaves one joint's coordinates, instead of all the coordinates from ground: an O(1) block per
element where the full Jacobians scatter O(n²), and the block lies in that joint's own diagonal
block (S16).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from flexmb.engine.block_scatter import end_columns, scatter_block

__all__ = ["relative_lists", "pair_columns", "scatter_pairs"]


@njit(cache=True)
def _relative_lists(anc_ptr, anc_coord, nodes, ptr, coord):
    """The body of :func:`relative_lists`: ``ptr`` (2 n_el + 1) filled, ``coord`` (anc sizes) written
    from the start; returns the number of coordinates written."""
    t = 0
    ptr[0] = 0
    for e in range(nodes.shape[0]):
        a, b = nodes[e, 0], nodes[e, 1]
        la, lb = anc_ptr[a + 1] - anc_ptr[a], anc_ptr[b + 1] - anc_ptr[b]
        common = 0  # the root-first lists of two nodes share their common ancestor's path as a prefix
        while common < la and common < lb and anc_coord[anc_ptr[a] + common] == anc_coord[anc_ptr[b] + common]:
            common += 1
        for s in range(2):
            node = nodes[e, s]
            for j in range(anc_ptr[node] + common, anc_ptr[node + 1]):
                coord[t] = anc_coord[j]
                t += 1
            ptr[2 * e + s + 1] = t
    return t


def relative_lists(anc_ptr: np.ndarray, anc_coord: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per end slot 2e + s of the two-node elements ``nodes`` (n_el, 2) (ground as node N, whose list
    anc_ptr[N]:anc_ptr[N + 1] is empty) the coordinates of (S15): the end node's path coordinates
    (root first, ``anc_coord[anc_ptr[i]:anc_ptr[i + 1]]``) without those it shares with the other
    end's. Returns (ptr (2 n_el + 1,), coord): slot q's list is coord[ptr[q]:ptr[q + 1]]."""
    nodes = np.ascontiguousarray(nodes, dtype=np.int64)
    ptr = np.empty(2 * nodes.shape[0] + 1, dtype=np.int64)
    size = int((anc_ptr[nodes + 1] - anc_ptr[nodes]).sum())
    coord = np.empty(size, dtype=np.int64)
    t = _relative_lists(np.asarray(anc_ptr, dtype=np.int64), np.asarray(anc_coord, dtype=np.int64), nodes, ptr, coord)
    return ptr, coord[:t].copy()


@njit(cache=True)
def pair_columns(nodes, e, ptr, coord, S, x, Be, first):
    """B_e of element e over its relative coordinates (S15) into Be (12, max_ne): end s's columns
    first[s]:first[s + 1], B(node, k) = (S_v + S_w × x_node, S_w) in end s's rows, zero in the other
    end's (a coordinate of one end's list does not move the other end). Returns the number of columns
    ne. The same arithmetic per column as engine/block_scatter.py element_columns (end_columns)."""
    return end_columns(nodes, e, ptr, coord, S, x, Be, first, True)


@njit(cache=True)
def scatter_pairs(nodes, ptr, coord, pos_ptr, pos, S, x, blocks, max_ne, data):
    """data[pos] += B_eᵀ E_e B_e for every internal-pair element e over its relative coordinates
    (S16): :func:`pair_columns`, then engine/block_scatter.py scatter_block with blocks[e]."""
    m = nodes.shape[1]
    Be = np.zeros((6 * m, max(max_ne, 1)))
    H = np.empty((6 * m, max(max_ne, 1)))
    first = np.empty(m + 1, dtype=np.int64)
    none = np.empty(0)
    for e in range(nodes.shape[0]):
        ne = pair_columns(nodes, e, ptr, coord, S, x, Be, first)
        scatter_block(blocks[e], Be, H, first, m, ne, pos, pos_ptr[e], data, none, 0)
