"""Joint graph -> spanning forest rooted at ground; path matrices (Issa & Arczewski §2).

Nodes are the graph's vertices, joints its edges, ground is vertex 0 (not a row of the path
matrices). Every node reached by no joint gets a free joint to ground, so each node has
exactly one incoming tree edge. A joint whose two ends are already connected closes a loop;
loops are refused unless an elastic link cuts them (the message names the loop).
:func:`find_loops` lists the loops that elastic links (bushings, beams) close.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from flexmb.errors import LoopError

__all__ = ["GROUND", "Tree", "Loop", "build_tree", "find_loops", "path_matrix", "secondary_path_matrix"]

GROUND = -1


@dataclass(frozen=True)
class Tree:
    """A spanning forest. ``order[k]`` is the index (in the joint list) of tree edge k;
    ``parent[k]``/``child[k]`` its node indices (parent ``-1`` = ground), parents first;
    ``reversed[k]`` tells if the edge runs opposite to the user's parent -> child."""

    order: tuple[int, ...]
    parent: np.ndarray
    child: np.ndarray
    reversed: np.ndarray
    n_nodes: int

    @property
    def edge_of_node(self) -> np.ndarray:
        """Tree edge entering each node."""
        out = np.full(self.n_nodes, -1, dtype=int)
        out[self.child] = np.arange(len(self.child))
        return out

    def ancestors(self, edge: int) -> list[int]:
        """Tree edges from ``edge`` back to ground, ``edge`` first."""
        eon = self.edge_of_node
        path = [edge]
        while self.parent[path[-1]] != GROUND:
            path.append(int(eon[self.parent[path[-1]]]))
        return path


def build_tree(
    n_nodes: int,
    ends: list[tuple[int, int]],
    joint_names: list[str],
    node_names: list[str],
) -> Tree:
    """Spanning forest of the joint graph; ``ends[j] = (parent, child)`` with -1 = ground.

    Edges keep the user's declaration order where it already lists parents first.
    Raises LoopError naming the loop's joints and nodes for a joint that closes a loop.
    """
    adj: dict[int, list[int]] = {i: [] for i in range(-1, n_nodes)}
    for j, (a, b) in enumerate(ends):
        adj[a].append(j)
        adj[b].append(j)
    reached = {GROUND}
    via: dict[int, tuple[int, int]] = {}  # node -> (joint, parent node)
    used: set[int] = set()
    queue = deque([GROUND])
    while queue:
        n = queue.popleft()
        for j in adj[n]:
            if j in used:
                continue
            a, b = ends[j]
            other = b if a == n else a
            if other in reached:
                raise LoopError(_loop_message(j, n, other, via, ends, joint_names, node_names))
            used.add(j)
            reached.add(other)
            via[other] = (j, n)
            queue.append(other)
    # stable topological order following the declaration order
    edges = sorted(via.items(), key=lambda kv: kv[1][0])
    placed = {GROUND}
    order: list[tuple[int, int, int]] = []
    pending = list(edges)
    while pending:
        rest = []
        for node, (j, par) in pending:
            if par in placed:
                order.append((j, par, node))
                placed.add(node)
            else:
                rest.append((node, (j, par)))
        pending = rest
    return Tree(
        order=tuple(j for j, _, _ in order),
        parent=np.array([p for _, p, _ in order], dtype=int),
        child=np.array([c for _, _, c in order], dtype=int),
        reversed=np.array([ends[j][1] != c for j, _, c in order], dtype=bool),
        n_nodes=n_nodes,
    )


def _loop_message(j, n, other, via, ends, joint_names, node_names) -> str:
    def chain(x: int) -> list[int]:
        out = [x]
        while out[-1] != GROUND:
            out.append(via[out[-1]][1])
        return out

    ca, cb = chain(n), chain(other)
    common = next(x for x in ca if x in cb)
    na = ca[: ca.index(common) + 1]
    nb = cb[: cb.index(common)]
    loop_nodes = na + nb[::-1]
    loop_joints = [via[x][0] for x in ca[: ca.index(common)]] + [via[x][0] for x in cb[: cb.index(common)]] + [j]
    nm = lambda x: "ground" if x == GROUND else node_names[x]  # noqa: E731
    return (
        f"joint '{joint_names[j]}' closes a kinematic loop: joints "
        f"{[joint_names[k] for k in loop_joints]} through nodes {[nm(x) for x in loop_nodes]}. "
        "flexmb never closes loops with kinematic constraints: cut the loop through an elastic "
        "link, i.e. replace one of these joints by a stiff bushing or make one link of the loop "
        "a beam (a beam's end nodes may then be joined to the bodies)."
    )


def path_matrix(tree: Tree) -> np.ndarray:
    """Preliminary path matrix pi (nodes x tree edges): +1 if the edge leaves the node,
    -1 if it enters it (Issa & Arczewski §2)."""
    pi = np.zeros((tree.n_nodes, len(tree.order)), dtype=int)
    for k in range(len(tree.order)):
        pi[tree.child[k], k] = -1
        if tree.parent[k] != GROUND:
            pi[tree.parent[k], k] = 1
    return pi


def secondary_path_matrix(tree: Tree) -> np.ndarray:
    """Secondary path matrix pi*: entry (i, j) = -m if tree edge j lies on the path from
    ground to node i, m counting the edges from node i (its own entering edge is 1)."""
    ps = np.zeros((tree.n_nodes, len(tree.order)), dtype=int)
    eon = tree.edge_of_node
    for i in range(tree.n_nodes):
        for m, k in enumerate(tree.ancestors(int(eon[i])), start=1):
            ps[i, k] = -m
    return ps


@dataclass(frozen=True)
class Loop:
    """A closed loop of the mechanism and the elastic link(s) that cut it: ``cut`` labels the
    link that closes it, ``joints``, ``nodes`` and ``elements`` are the loop's members in order."""

    cut: str
    joints: tuple[str, ...]
    nodes: tuple[str, ...]
    elements: tuple[str, ...]


def find_loops(
    node_names: Sequence[str],
    joints: Sequence[tuple[str, int, int]],
    links: Sequence[tuple[str, str, int, int]],
) -> tuple[Loop, ...]:
    """Loops closed by elastic links. ``joints``: (name, parent, child) of the joints that
    constrain (free joints constrain nothing and are left out); ``links``: (name, label, a, b)
    of the elastic links in order (node indices, ``GROUND`` = -1). Adding the links one by one
    to the joint graph, a link whose ends are already connected closes a loop; the loop is the
    graph path between them."""
    adj: dict[int, list[tuple[int, str, str]]] = {}

    def link(a: int, b: int, name: str, kind: str) -> None:
        adj.setdefault(a, []).append((b, name, kind))
        adj.setdefault(b, []).append((a, name, kind))

    def path(a: int, b: int):
        prev: dict[int, tuple[int, str, str] | None] = {a: None}
        queue = deque([a])
        while queue:
            n = queue.popleft()
            if n == b:
                break
            for m, name, kind in adj.get(n, []):
                if m not in prev:
                    prev[m] = (n, name, kind)
                    queue.append(m)
        if b not in prev:
            return None
        nodes, edges = [b], []
        while prev[nodes[-1]] is not None:
            n, name, kind = prev[nodes[-1]]
            edges.append((name, kind))
            nodes.append(n)
        return nodes[::-1], edges[::-1]

    root: dict[int, int] = {}

    def find(i: int) -> int:
        root.setdefault(i, i)
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    for name, parent, child in joints:
        link(parent, child, name, "joint")
        root[find(parent)] = find(child)
    loops = []
    for name, label, a, b in links:
        ra, rb = find(a), find(b)
        found = path(a, b) if ra == rb else None  # search the graph only when a loop closes
        root[ra] = rb
        if found is not None:
            nodes, edges = found
            nm = ["ground" if x == GROUND else node_names[x] for x in nodes]
            loops.append(Loop(
                cut=label,
                joints=tuple(e for e, k in edges if k == "joint"),
                nodes=tuple(nm),
                elements=(name,) + tuple(e for e, k in edges if k == "element"),
            ))
        link(a, b, name, "element")
    return tuple(loops)
