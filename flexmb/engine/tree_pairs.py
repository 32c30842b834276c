"""Spring-dampers across one joint on the O(n) tree factor (docs/spring_damper.md §7, eq. (S17)).

An internal-pair element whose two nodes are a joint's parent (or ground) and child has, over its
relative coordinates (S15), exactly that joint's coordinates: its block B_rᵀ E B_r of (S16) lies in
the joint's own diagonal block of the iteration matrix, as a joint spring's does, and the matrix
keeps the composite form (1) of engine/tree_solver.py plus per-joint blocks, which the tree
factorization adds to its pivot blocks d_j. :func:`joint_pairs` finds whether every spring-damper of a
model is such an element (the chain of links with spring-dampers between neighbours);
:func:`joint_blocks` forms the joint blocks from the elements' 12×12 blocks (S8). The Python step
(TreeSolver through the integrator's tree terms, engine/assembly.py Assembler.tree_joint_blocks) and the compiled tree step
(flexmb/solvers/tree_step.py) call the same kernels, so they agree bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from flexmb.elements.spring_damper_kernels import TIME_STEP, spring_damper_blocks, spring_damper_forces

if TYPE_CHECKING:  # type hints only
    from flexmb.model import Model

__all__ = ["JointPairs", "joint_pairs", "joint_blocks", "pair_forces", "pair_matrix", "pair_arrays", "NO_PAIRS"]


@dataclass(frozen=True)
class JointPairs:
    """The spring-dampers of a model, each across one joint (S17): per element the node ``child`` whose
    joint it crosses, ``end`` (0: the element's end a is that node, 1: end b) and the ``joint``, (n_el,)."""

    child: np.ndarray
    end: np.ndarray
    joint: np.ndarray


def joint_pairs(model: Model, families: tuple) -> tuple[JointPairs | None, str]:
    """(JointPairs, "") when the model's only families with blocks (``families``: the assembly's
    ``with_blocks``, (family, data, prep)) are spring-dampers that each join a joint's child to its
    parent node or, for a joint on ground, to ground; else (None, why not)."""
    names = [f.name for f, _, _ in families]
    if names != ["spring_damper"]:
        return None, f"element famil{'y' if len(names) == 1 else 'ies'} {', '.join(map(repr, names))} with blocks"
    _, d, _ = families[0]
    N = model.n_nodes
    joint_of = np.full(N, -1, dtype=np.int64)
    joint_of[np.asarray(model.joint_child, dtype=np.int64)] = np.arange(model.n_joints)
    parent = np.where(np.asarray(model.joint_parent) < 0, N, model.joint_parent).astype(np.int64)
    a = np.where(np.asarray(d.a) < 0, N, d.a).astype(np.int64)
    b = np.asarray(d.b, dtype=np.int64)
    child, end, joint = np.empty(d.n, np.int64), np.empty(d.n, np.int64), np.empty(d.n, np.int64)
    for e in range(d.n):
        jb = joint_of[b[e]]
        ja = joint_of[a[e]] if a[e] < N else -1
        if jb >= 0 and parent[jb] == a[e]:
            child[e], end[e], joint[e] = b[e], 1, jb
        elif ja >= 0 and parent[ja] == b[e]:
            child[e], end[e], joint[e] = a[e], 0, ja
        else:
            return None, (f"spring-damper '{d.names[e]}' joins two nodes that no single joint joins (its tangent "
                          "couples the joints of the path between them: docs/spring_damper.md (S17))")
    if d.laws is not None and d.laws.size:
        return None, "spring-damper force laws are not compiled on the tree factor"
    return JointPairs(child, end, joint), ""


#: JointPairs of a model without spring-dampers (the compiled tree step's empty arrays)
NO_PAIRS = JointPairs(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


@njit(cache=True)
def joint_blocks(child, end, joint, jf_ptr, jf_coord, S, x, E, out):
    """out (n_u, 6): per free coordinate a of joint k, out[a, t] the entry of (S16) between a and the
    joint's t-th free coordinate (jf_coord[jf_ptr[k] + t]), summed over the elements across k: B_rᵀ E B_r
    with B_r's columns B(child, a) = (S_v + S_w × x_child, S_w) in the child end's rows (as
    engine/pair_scatter.py pair_columns) and E the element's 12×12 block E[e] (S8). ``out`` is zeroed
    first."""
    out[:] = 0.0
    col = np.empty((6, 6))
    for e in range(child.size):
        c, k, r0 = child[e], joint[e], 6 * end[e]
        lo, n = jf_ptr[k], jf_ptr[k + 1] - jf_ptr[k]
        for t in range(n):
            a = jf_coord[lo + t]
            col[t, 0] = S[a, 0] + (S[a, 4] * x[c, 2] - S[a, 5] * x[c, 1])
            col[t, 1] = S[a, 1] + (S[a, 5] * x[c, 0] - S[a, 3] * x[c, 2])
            col[t, 2] = S[a, 2] + (S[a, 3] * x[c, 1] - S[a, 4] * x[c, 0])
            col[t, 3], col[t, 4], col[t, 5] = S[a, 3], S[a, 4], S[a, 5]
        for t1 in range(n):
            a = jf_coord[lo + t1]
            for t2 in range(n):
                s = 0.0
                for i in range(6):
                    h = 0.0
                    for j in range(6):
                        h += E[e, r0 + i, r0 + j] * col[t2, j]
                    s += col[t1, i] * h
                out[a, t2] += s


@njit(cache=True)
def pair_forces(x, R, V, pairs, w) -> int:
    """The spring-dampers' forces (S1)-(S6) into the node wrenches w (N + 1, 6), their outputs into the
    buffers of ``pairs`` (pair_arrays' tuple); the first element shorter than its l_min (S11), or -1."""
    if pairs[0][0].size == 0:
        return -1
    return spring_damper_forces(x, R, V, pairs[0], w, pairs[2])


@njit(cache=True)
def pair_matrix(pairs, jf_ptr, jf_coord, S, x, ck, cc, out) -> None:
    """out (n_u, 6): the joint blocks (S17) of the spring-dampers at the iterate pair_forces evaluated,
    with (S8)'s blocks for ck = β', cc = γ' (:func:`joint_blocks`); zero without spring-dampers."""
    child, end, joint = pairs[1]
    G, nv, ra, rb, l, ldot, F, energy, power = pairs[2]
    E = pairs[3]
    if child.size == 0:
        return
    k, c = pairs[0][4], pairs[0][5]
    spring_damper_blocks(G, nv, ra, rb, l, F, k, c, ck, cc, TIME_STEP, E)
    joint_blocks(child, end, joint, jf_ptr, jf_coord, S, x, E, out)


def pair_arrays(model: Model, prep: tuple[np.ndarray, np.ndarray] | None, jp: JointPairs) -> tuple:
    """The compiled tree step's spring-damper tuple: (the elements' constants (ends with ground as N,
    points, k, c, L0, F0, l_min), (child, end, joint) of ``jp``, the buffers of an iterate (G, nv, ra, rb,
    l, l', F, energy, power), the blocks (n_el, 12, 12), the joint blocks (n_u, 6)); ``prep`` the
    family's prepared ends, None without spring-dampers."""
    i64 = np.int64
    if prep is None:
        consts = (np.zeros(0, i64), np.zeros(0, i64), np.zeros((0, 3)), np.zeros((0, 3)), *(np.zeros(0) for _ in range(5)))
    else:
        d = model.elements["spring_damper"]
        consts = (np.array(prep[0], dtype=i64), np.array(prep[1], dtype=i64),
                  *(np.array(v, dtype=float) for v in (d.sa, d.sb, d.k, d.c, d.L0, d.F0, d.l_min)))
    n = consts[0].size
    buffers = (np.zeros((n, 12)), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3)), *(np.zeros(n) for _ in range(5)))
    return (consts, (jp.child, jp.end, jp.joint), buffers, np.zeros((n, 12, 12)), np.zeros((model.n_u, 6)))
