"""The IFToMM benchmark A02, the N-four-bar mechanism, as a flexmb model: one builder for the cut tests
(tests/cut_mechanisms.py re-exports it) and the benchmarks that time it (benchmarks/peer_loops.py,
loop_memory.py), so that the benchmarks run the model the tests check. Builders only (no runs here)."""

from __future__ import annotations

import numpy as np

import flexmb as fm

__all__ = ["rod_inertia", "n_four_bar"]

Z = (0.0, 0.0, 1.0)


def rod_inertia(m: float, length: float, e) -> np.ndarray:
    """Inertia of a uniform rod of mass m and length ``length`` along the unit vector e, about its centre."""
    e = np.asarray(e, float) / np.linalg.norm(e)
    return m * length**2 / 12 * (np.eye(3) - np.outer(e, e))


def n_four_bar(N: int, cut: str = "rigid", x0: float = 0.0, scale: float = 1.0, k: float = 1e9,
               g: float = 9.81, theta0: float = np.pi / 2, planar: bool = False) -> fm.Model:
    """The IFToMM benchmark A02, the N-four-bar mechanism: N parallelogram windows side by side in the
    x-y plane, 2N + 1 uniform rods of length L = ``scale`` and mass ``scale``³ kg (Froude-similar copies
    for scale != 1), gravity -y. Cranks i = 0..N turn about z at (x0 + i L, 0), upright at the start;
    coupler j = 1..N lies on top of window j from the tip of crank j-1, and window j is cut where coupler
    j meets crank j's tip: ``cut`` "rigid" (add_rigid_cut) or "elastic" (a revolute bushing of stiffness
    k, k L² on the tilts, default damping). B0, crank 0's tip, starts with x-velocity √scale m/s (1 m/s
    at scale 1): every crank turns at -1/√scale rad/s and the couplers translate. The rods are
    horizontal, where the mechanism gains N degrees of freedom, whenever the cranks' angle is kπ.
    ``theta0``: the cranks' angle from +x at the start (upright, π/2, as in Exudyn's IFToMM example; the
    x-velocity of B0 sets the cranks' rate -√scale/(L sin θ0)). Crank i's node is at its pivot, coupler
    j's at B_{j-1}. ``planar``: a planar model (``ModelBuilder(planar="xy")``, docs/planar.md): every cut
    holds only its in-plane translations (the bushings' tz and tilt stiffness are dropped)."""
    L, m = scale, scale**3
    w = 1.0 / (np.sqrt(scale) * np.sin(theta0))
    e = np.array([np.cos(theta0), np.sin(theta0), 0.0])
    mb = fm.ModelBuilder(gravity=(0.0, -g, 0.0), planar="xy" if planar else None)
    for i in range(N + 1):
        O = np.array([x0 + i * L, 0.0, 0.0])
        mb.add_node(f"crank{i}", O)
        mb.add_body(f"crank{i}", f"crank{i}", m, L / 2 * e, rod_inertia(m, L, e))
        mb.add_joint(f"O{i}", "revolute", "ground", f"crank{i}", point=O, axis=Z, u0=-w)
    for j in range(1, N + 1):
        P = np.array([x0 + (j - 1) * L, 0.0, 0.0]) + L * e
        mb.add_node(f"coupler{j}", P)
        mb.add_body(f"coupler{j}", f"coupler{j}", m, (L / 2, 0.0, 0.0), rod_inertia(m, L, (1, 0, 0)))
        mb.add_joint(f"A{j}", "revolute", f"crank{j - 1}", f"coupler{j}", point=P, axis=Z, u0=w)
    for j in range(1, N + 1):
        P = np.array([x0 + j * L, 0.0, 0.0]) + L * e
        if cut == "rigid":
            mb.add_rigid_cut(f"cut{j}", f"coupler{j}", f"crank{j}", point=P, free_rotation="z")
        else:
            mb.add_bushing(f"cut{j}", f"coupler{j}", f"crank{j}", stiffness=[k, k, k, k * L**2, k * L**2, 0.0], point=P,
                           free_rotation="z")
    return mb.compile()
