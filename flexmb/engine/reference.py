"""Test oracles of the assembly: M̄ and the iteration matrix S by explicit sparse products with
the velocity-transformation matrix B (slow, plain, independent of the composite-inertia pairs
and of the compiled in-place scatter of flexmb/engine/iteration_matrix.py, which the tests
compare with these). Never imported by flexmb (tests/test_architecture.py says so).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from flexmb.engine.assembly import Assembler, Evaluation, motion_diag

__all__ = ["node_mass_matrix", "mbar_via_B", "iteration_matrix_via_B"]


def node_mass_matrix(Mb: np.ndarray) -> sp.csr_matrix:
    """Block-diagonal node mass matrix (6N x 6N) of the node mass blocks Mb (N, 6, 6)."""
    N = Mb.shape[0]
    blk = np.arange(N)[:, None, None] * 6
    rows = (blk + np.arange(6)[None, :, None] + np.zeros((1, 1, 6), dtype=int)).ravel()
    cols = (blk + np.arange(6)[None, None, :] + np.zeros((1, 6, 1), dtype=int)).ravel()
    return sp.csr_matrix((Mb.ravel(), (rows, cols)), shape=(6 * N, 6 * N))


def mbar_via_B(asm: Assembler, ev: Evaluation) -> sp.csc_matrix:
    """M̄ = Bᵀ (M_nodes + M_elements) B by sparse products."""
    B = ev.B
    M = node_mass_matrix(ev.Mb)
    E = asm.element_matrix(ev, 0.0, 0.0, cm=1.0)
    if E is not None:
        M = M + E
    return sp.csc_matrix(B.T @ (M @ B))


def iteration_matrix_via_B(asm: Assembler, ev: Evaluation, cols: np.ndarray, gp: float, bp: float, diag: np.ndarray,
                           material_only: bool = False, with_mass: bool = True) -> sp.csc_matrix:
    """S = M̄ + Bᵀ (β' K + γ' C + M_elements) B + diag on the coordinates ``cols``, by sparse
    products (``with_mass=False``: without M̄ and the element masses, the static tangent)."""
    B = ev.B[:, cols]
    if ev.friction is not None:
        diag = diag + gp * ev.friction.damping_diag(cols)
    if ev.motion is not None:
        diag = diag + motion_diag(ev.motion, cols, gp, bp)
    S = sp.diags(diag, format="csc")
    if with_mass:
        S = S + sp.csc_matrix(B.T @ (node_mass_matrix(ev.Mb) @ B))
    E = asm.element_matrix(ev, bp, gp, material_only, cm=1.0 if with_mass else 0.0)
    if E is not None:
        S = S + sp.csc_matrix(B.T @ (E @ B))
    return sp.csc_matrix(S)
