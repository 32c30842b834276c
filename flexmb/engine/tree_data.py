"""The named structures the compiled tree kernels take (engine/kinematics.py, engine/tree_solver.py,
solvers/tree_step.py, solvers/tree_run.py) instead of two dozen positional arrays, grouped as the
model and the engine group them: the joint tree (its topology, axes, offsets and coordinate
ranges), the kinematics a forward pass writes, a step's state, the drives' values at a step's end,
the coordinates' maps and diagonals, and the tree factorization's arrays with the position
tangent's work arrays. They are typed named tuples of arrays, as the beam kernels' are
(elements/beam/kernel_data.py; docs/architecture.md P6): numba passes one as one value and reads a
field as it reads a positional argument, and a Python caller names what it passes. Each is built
once per model or per run, never per step. The fields keep the order of the tuples they replaced,
so a kernel that still indexes them (``tree[13]``, ``kin[4]``) reads the same array.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Coordinates", "DriveValues", "JointTree", "KinematicsArrays", "StepInputs", "StepModel", "StepState",
           "TangentWork", "TreeFactor", "TreeOutputs", "TreeSolverArrays", "tangent_work"]


class JointTree(NamedTuple):
    """The joint tree as the forward pass and the tree passes read it (n_j joints, N nodes, n_u
    coordinates; a slot of -1: no such component)."""

    parent: np.ndarray  # parent node of each joint, N for ground (int64)                      (n_j)
    child: np.ndarray  # child node of each joint (int64)                                       (n_j)
    jpoint: np.ndarray  # joint point in the parent's axes at assembly                          (n_j x 3)
    axT: np.ndarray  # translation axes in the parent's axes                                    (n_j x 3 x 3)
    axR: np.ndarray  # rotation axes (the second turned by the first)                           (n_j x 2 x 3)
    qT: np.ndarray  # position coordinate of each translation (-1: none)                        (n_j x 3)
    qR: np.ndarray  # position coordinate of each rotation                                      (n_j x 2)
    uT: np.ndarray  # velocity coordinate of each translation                                   (n_j x 3)
    uR: np.ndarray  # velocity coordinate of each rotation                                      (n_j x 2)
    uB: np.ndarray  # velocity coordinates of a ball                                            (n_j x 3)
    ball: np.ndarray  # the joint's ball (row of the state's balls; -1: none)                  (n_j)
    C: np.ndarray  # the child's axes in the joint's axes at assembly (joint_child_rot)        (n_j x 3 x 3)
    coff: np.ndarray  # the child's origin from the joint point, child axes (joint_child_offset) (n_j x 3)
    coord_start: np.ndarray  # each joint's first velocity coordinate                          (n_j)
    coord_count: np.ndarray  # its number of velocity coordinates                              (n_j)


class KinematicsArrays(NamedTuple):
    """What a forward pass writes (engine/kinematics.py, Kinematics' fields; Sd with no rows: the axes'
    rates not formed)."""

    x: np.ndarray  # node positions                                                             (N x 3)
    R: np.ndarray  # node orientations                                                          (N x 3 x 3)
    Vs: np.ndarray  # spatial velocity of each node's frame (at the origin)                    (N x 6)
    As: np.ndarray  # its bias acceleration                                                     (N x 6)
    S: np.ndarray  # coordinate axes at the origin                                              (n_u x 6)
    Sd: np.ndarray  # their rates Ṡ                                                             (n_u x 6 or 0 x 6)
    P: np.ndarray  # joint points                                                               (n_j x 3)
    V: np.ndarray  # node twists (node-origin velocity, angular velocity)                      (N x 6)
    zeta: np.ndarray  # velocity-product accelerations B' u                                    (N x 6)


class StepState(NamedTuple):
    """A step's state as the compiled steps read (start) or write (end) it."""

    q: np.ndarray  # scalar position coordinates                                                (n_q)
    balls: np.ndarray  # ball rotations                                                         (n_ball x 3 x 3)
    u: np.ndarray  # velocities                                                                 (n_u)
    udot: np.ndarray  # accelerations                                                           (n_u)
    a: np.ndarray  # generalized-α pseudo-accelerations                                         (n_u)


class DriveValues(NamedTuple):
    """The drives' values at a step's end (their rows of CompiledStep.inputs)."""

    driven: np.ndarray  # driven velocity coordinates (int64)                                   (n_d)
    q: np.ndarray  # their positions                                                            (n_d)
    u: np.ndarray  # velocities                                                                 (n_d)
    udot: np.ndarray  # accelerations                                                           (n_d)


class Coordinates(NamedTuple):
    """The maps between the coordinates and the joint springs' diagonals on the free ones."""

    u_to_q: np.ndarray  # position coordinate of each velocity coordinate                       (n_u)
    scalar_u: np.ndarray  # velocity coordinates that are not a ball's, ascending               (n_q)
    ball_u: np.ndarray  # the balls' velocity coordinates, three per ball                      (3 n_ball)
    free: np.ndarray  # the unknowns                                                            (n_f)
    c_diag: np.ndarray  # the joint dampers' C̄ on them                                         (n_f)
    k_diag: np.ndarray  # the joint springs' K̄ on them                                         (n_f)


class TreeFactor(NamedTuple):
    """The O(n) tree factorization's index and factor arrays (engine/tree_solver.py, TreeSolver)."""

    jf_ptr: np.ndarray  # per joint, pointers into jf_coord                                     (n_j + 1)
    jf_coord: np.ndarray  # the joints' free coordinates                                        (n_f)
    coord_child: np.ndarray  # child node of each coordinate's joint                            (n_u)
    IA: np.ndarray  # articulated inertias                                                      (N x 6 x 6)
    U: np.ndarray  # IA S per coordinate                                                        (n_u x 6)
    W: np.ndarray  # the factor's columns                                                       (n_u x 6)
    S: np.ndarray  # the axes the factor was formed with                                        (n_u x 6)
    St: np.ndarray  # the tangent's axes                                                        (n_u x 6)
    Dinv: np.ndarray  # inverse pivot blocks per joint                                          (n_j x 6 x 6)


class TangentWork(NamedTuple):
    """The position tangent's arrays, written once per factorization (position_tangent_setup)."""

    I: np.ndarray  # noqa: E741  spatial inertias at the nodes                                   (N x 6 x 6)
    IV: np.ndarray  # inertia times the nodes' spatial velocities                              (N x 6)
    IA: np.ndarray  # inertia times their spatial accelerations                                 (N x 6)
    A: np.ndarray  # spatial accelerations per node, ground last                                (N+1 x 6)
    F: np.ndarray  # subtree forces per node, ground last                                       (N+1 x 6)


class TreeSolverArrays(NamedTuple):
    """The compiled tree step's factorization: the factor, the position tangent's work arrays and the
    spring-dampers across single joints (engine/tree_pairs.py pair_arrays' tuple; no elements without them)."""

    factor: TreeFactor
    tangent: TangentWork
    pairs: tuple


def tangent_work(n_nodes: int) -> TangentWork:
    """New (uninitialised) position-tangent work arrays for ``n_nodes`` nodes."""
    N = n_nodes
    return TangentWork(np.empty((N, 6, 6)), np.empty((N, 6)), np.empty((N, 6)), np.empty((N + 1, 6)), np.empty((N + 1, 6)))


class StepModel(NamedTuple):
    """The model's constant arrays a compiled step reads (flexmb.solvers.tree_step.CompiledStep)."""

    tree: JointTree
    bodies: tuple  # the rigid bodies' (node, mass, com, inertia)
    gravity: np.ndarray  # (3)
    springs: tuple  # the joint springs' (u, q, k, rest, c), the motion's joint forces, the follower loads
    jforce_u: np.ndarray  # coordinates of the applied joint forces                            (n_jf)
    coords: Coordinates


class StepInputs(NamedTuple):
    """What depends on time only, at a step's end (CompiledStep.inputs)."""

    jforce_val: np.ndarray  # the applied joint forces                                          (n_jf)
    loads: np.ndarray  # the nodal loads                                                        (N x 6)
    drives: DriveValues


class TreeOutputs(NamedTuple):
    """What an evaluation of a compiled step writes besides the kinematics."""

    Mb: np.ndarray  # node mass blocks                                                          (N x 6 x 6)
    wfull: np.ndarray  # node wrenches (bias), a last row for ground                             (N+1 x 6)
    tau: np.ndarray  # joint forces τ                                                           (n_u)
    rfull: np.ndarray  # eq. (1) on every coordinate                                            (n_u)
