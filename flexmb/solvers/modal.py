"""Linearised analysis: natural frequencies and mode shapes about a state (an equilibrium, or
the current state of a run) from the generalized eigenproblem K̄ φ = ω² M̄ φ on the free
coordinates (scipy eigsh, shift-invert about 0). K̄ is the elements' assembled stiffness
B^T K B plus the joint springs; gravity's and the loads' stiffness on rigid bodies are not
included (state so in results about loaded rigid mechanisms)."""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

from flexmb.elements.actuator import refuse_actuators
from flexmb.elements.coupling import refuse_rigid_couplings
from flexmb.elements.rigid_cut import refuse_rigid_cuts
from flexmb.engine.assembly import Assembler
from flexmb.errors import SolverError
from flexmb.model import Model
from flexmb.state import State

__all__ = ["natural_frequencies"]


def natural_frequencies(model: Model, state: State | None = None, n_modes: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_modes`` lowest natural frequencies [Hz] and mode shapes (n_u, n_modes; rows of
    driven coordinates are zero) about ``state`` (default: the initial state). A model with a rigid
    cut or a rigid coupling is refused (ModelError: it has no stiffness outside the time integrator)."""
    refuse_rigid_cuts(model, "natural_frequencies")
    refuse_actuators(model, "natural_frequencies")
    refuse_rigid_couplings(model, "natural_frequencies")
    asm = Assembler(model, exact_tangent=True)
    st = model.initial_state() if state is None else state.copy()
    free = model.free_u
    if n_modes >= free.size:
        raise SolverError(f"natural_frequencies: asked for {n_modes} modes of a model with {free.size} free coordinates.")
    ev = asm.evaluate(st)
    M = asm.mbar(ev, free)
    K = asm.iteration_matrix(ev, free, 0.0, 1.0, asm.stiffness_damping_diag(free)[0], with_mass=False)
    w2, phi = spla.eigsh(K.tocsc(), k=n_modes, M=M.tocsc(), sigma=-1e-6 * abs(K.diagonal()).max(), which="LM")
    order = np.argsort(w2)
    w2, phi = w2[order], phi[:, order]
    shapes = np.zeros((model.n_u, n_modes))
    shapes[free] = phi
    return np.sqrt(np.clip(w2, 0, None)) / (2 * np.pi), shapes
