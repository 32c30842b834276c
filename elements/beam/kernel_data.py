"""The named structures the compiled beam kernels take (elements/beam/residual_kernels.py,
elements/beam/matrix_kernels.py) instead of two dozen positional arrays: what belongs together in
the model, in the motion, in the residual's results and in the iteration matrix's weights and
scatter maps is one argument each. They are typed named tuples of arrays: numba passes them as one
value and reads a field as it reads a positional argument (when they replaced the positional
arrays, every seed case's results stayed the same bit for bit, and the falling link's time per
step stayed within 5 % at 10, 100 and 1000 elements), and a Python caller names what it passes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from flexmb.elements.beam.residual_kernels import mass_pattern

__all__ = ["BeamArrays", "BeamResults", "MatrixWeights", "NodeMotion", "ScatterMaps", "beam_arrays", "beam_results",
           "scatter_maps"]


class BeamArrays(NamedTuple):
    """The beams' model arrays (BeamData's, for n elements) as the kernels read them."""

    a: np.ndarray  # first node of each element (int64)                                   (n)
    b: np.ndarray  # second node of each element (int64)                                  (n)
    C1: np.ndarray  # section axes in node a's axes at assembly                          (n x 3 x 3)
    C2: np.ndarray  # section axes in node b's axes at assembly                          (n x 3 x 3)
    L0: np.ndarray  # length at assembly [m]                                              (n)
    Kl: np.ndarray  # local stiffness on the deformations p (eq. 4)                       (n x 7 x 7)
    alpha: np.ndarray  # stiffness-proportional damping coefficient [s]                    (n)
    Ml: np.ndarray  # local consistent mass (eq. 5)                                        (n x 12 x 12)
    nz_r: np.ndarray  # rows of Ml's shared nonzero pattern (mass_pattern)                 (nnz)
    nz_c: np.ndarray  # columns of that pattern                                             (nnz)
    mass: np.ndarray  # mass per length [kg/m]                                              (n)
    Mnz: np.ndarray  # Ml's values at the pattern                                          (n x nnz)


class NodeMotion(NamedTuple):
    """The node motion a residual pass reads (flexmb.engine.kinematics.Kinematics' fields)."""

    x: np.ndarray  # node positions, model frame                                          (N x 3)
    R: np.ndarray  # node orientations                                                    (N x 3 x 3)
    V: np.ndarray  # node twists (velocity, angular velocity; global)                     (N x 6)
    zeta: np.ndarray  # the velocity terms of the node accelerations (B' u)               (N x 6)


class BeamResults(NamedTuple):
    """What a residual pass writes per element, and what the element matrices read of it."""

    frames: np.ndarray  # co-rotated frames Rr (eq. 1)                                     (n x 3 x 3)
    local_forces: np.ndarray  # K_l p                                                      (n x 7)
    energies: np.ndarray  # strain energy, dissipated power, kinetic energy, weight potential (n x 4)
    p: np.ndarray  # local deformations (eq. 2)                                            (n x 7)
    Bl: np.ndarray  # their derivative in the node twists (eq. 3-4)                         (n x 7 x 12)
    chord: np.ndarray  # chord length [m]                                                  (n)


class MatrixWeights(NamedTuple):
    """The weights of an iteration matrix ck K + cc C + cm M, and whether K keeps its geometric part."""

    ck: float
    cc: float
    cm: float
    material_only: bool


class ScatterMaps(NamedTuple):
    """Where the element products B_eᵀ E B_e go in the iteration matrix's values: the arrays of
    flexmb.engine.iteration_matrix.ElementScatter (element_columns, scatter_block)."""

    nodes: np.ndarray  # the element's nodes                                               (n x 2)
    anc_ptr: np.ndarray  # each node's ancestor coordinates: pointers into anc_coord          (N + 1)
    anc_coord: np.ndarray  # the coordinates                                                  (nnz_anc)
    pos_ptr: np.ndarray  # each element's positions: pointers into pos                       (n + 1)
    pos: np.ndarray  # the positions in the values (-1: not stored)                          (nnz_pos)
    max_ne: int  # the most columns an element's B_e has
    skip: np.ndarray  # per element, node blocks not formed (bits); empty: all formed         (n or 0)


def beam_arrays(data) -> BeamArrays:
    """The kernels' BeamArrays of a family's BeamData (``data``: a, b, C1, C2, L0, Kl, alpha, Ml, mass)."""
    Mnz, nz_r, nz_c = mass_pattern(data.Ml)
    i64 = np.int64
    return BeamArrays(np.asarray(data.a, dtype=i64), np.asarray(data.b, dtype=i64), data.C1, data.C2, data.L0, data.Kl,
                      data.alpha, data.Ml, nz_r, nz_c, data.mass, Mnz)


def beam_results(n: int) -> BeamResults:
    """Empty BeamResults for ``n`` elements."""
    return BeamResults(np.empty((n, 3, 3)), np.empty((n, 7)), np.empty((n, 4)), np.empty((n, 7)), np.empty((n, 7, 12)),
                       np.empty(n))


def scatter_maps(scatter) -> ScatterMaps:
    """The ScatterMaps of an ElementScatter (flexmb.engine.iteration_matrix)."""
    return ScatterMaps(scatter.nodes, scatter.anc_ptr, scatter.anc_coord, scatter.pos_ptr, scatter.pos, int(scatter.max_ne),
                       scatter.skip)
