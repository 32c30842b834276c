"""The compiled model: immutable flat arrays over nodes, tree joints, coordinates and elements.

A :class:`Model` is data only (MuJoCo's ``mjModel``): it is made by
:func:`flexmb.builder.compile.compile` from a :class:`flexmb.ModelBuilder` and read by every
stage of the engine; nothing mutates it (its arrays are read-only). Each field below carries
one comment: its meaning, then its shape. Sizes: ``n_nodes`` nodes, ``n_joints`` tree joints
(ordered parents first), ``n_u`` velocity coordinates, ``n_q`` scalar position coordinates,
``n_ball`` ball rotations, and per kind ``n_load``, ``n_driven``, ``n_spring``, ``n_jforce``, ``n_mforce``,
``n_friction``. Rigid bodies, particle bodies, bushings and beams are element families
(flexmb.elements): each family's arrays are one frozen, documented dataclass in
``Model.elements[name]`` (e.g. ``model.elements["beam"].L0``, shape (n_el)).

Everything "at assembly" refers to the configuration in which the model was described (all
joint coordinates zero); the initial state then follows from ``q0``, ``balls0`` and ``u0``.

Positions are held in the *model frame*: global axes, origin at ``origin`` (global; zero for a
model described near the global origin, flexmb.builder.compile.model_origin). The engine computes
there, so its round-off is that of the model's own size wherever the model lies (docs/model_frame.md);
results (``Result.x``, joint points, statics) are global again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

import numpy as np

from flexmb.element_data import ElementData
from flexmb.errors import ModelError
from flexmb.joints import JointKind
from flexmb.motion_functions import MotionForce
from flexmb.state import State
from flexmb.timefunctions import ScalarDrive
from flexmb.topology import Loop, Tree, path_matrix, secondary_path_matrix

__all__ = ["Model", "NodalLoad"]


@dataclass(frozen=True)
class NodalLoad:
    """Force and moment on node ``node`` as functions of time (3-vectors); ``follower`` loads
    are given in the node frame (or in the frame of node ``axes_node`` if >= 0) and turn with
    it, fixed loads are global."""

    name: str
    node: int
    force: Callable[[float], np.ndarray]
    moment: Callable[[float], np.ndarray]
    follower: bool
    axes_node: int = -1


#: Model.start_holds of a model without sampled forces or loads
_NO_HOLDS: Mapping[str, np.ndarray] = MappingProxyType({})


@dataclass(frozen=True)
class Model:
    """Immutable compiled model: flat arrays over nodes, tree joints and coordinates, and the
    arrays of every element family in ``elements`` (one comment per field: meaning, shape).

    Tree joints are ordered parents first. Velocity coordinates ``u`` (length ``n_u``) are
    the joints' coordinates in that order; scalar coordinates ``q`` (length ``n_q``) omit the
    balls, whose rotations are kept as matrices (``n_ball`` of them). Node index -1 is ground.
    """

    # ------------------------------------------------------------------ nodes
    node_names: tuple[str, ...]  # node names, in declaration order                        (n_nodes)
    X0: np.ndarray  # node positions at assembly, model frame (global minus origin)       (n_nodes x 3)
    R0: np.ndarray  # node orientations at assembly: columns = node axes, global           (n_nodes x 3 x 3)
    origin: np.ndarray  # origin of the model frame, global (zero near the global origin)     (3)
    gravity: np.ndarray  # gravitational acceleration, global                             (3)
    auto_free_nodes: tuple[str, ...]  # first node of each group with no joint path to ground: a free joint added (n_auto)
    # ------------------------------------------------------------------ tree joints
    tree: Tree  # spanning forest of the joint graph (topology.Tree); tree edge k = tree joint k
    joint_names: tuple[str, ...]  # tree joint names; added free joints are '<node>:free'     (n_joints)
    joint_kinds: tuple[JointKind, ...]  # kind (coordinate layout) of each tree joint        (n_joints)
    joint_parent: np.ndarray  # parent node index in tree direction, -1 = ground           (n_joints)
    joint_child: np.ndarray  # child node index in tree direction                          (n_joints)
    joint_point: np.ndarray  # joint point rel. to the parent node, parent axes (model frame for ground) (n_joints x 3)
    joint_axes: np.ndarray  # row i: axis i in parent axes (sign flipped if reversed; free: identity) (n_joints x 3 x 3)
    joint_child_offset: np.ndarray  # child origin - joint point at assembly, parent axes  (n_joints x 3)
    joint_child_rot: np.ndarray  # R_parent^T R_child at assembly                         (n_joints x 3 x 3)
    joint_u_start: np.ndarray  # index of the joint's first velocity coordinate in u       (n_joints)
    joint_q_start: np.ndarray  # index of the joint's first scalar coordinate in q        (n_joints)
    joint_ball: np.ndarray  # index of the joint's ball in balls, -1 if none              (n_joints)
    # ------------------------------------------------------------------ coordinates
    coordinate_names: tuple[str, ...]  # '<joint>.q', '<joint>.t0'/'.r1', '<joint>.wx'...   (n_u)
    u_is_ball: np.ndarray  # True for the three velocity coordinates of a ball (bool)     (n_u)
    u_to_q: np.ndarray  # index in q of each velocity coordinate, -1 for ball coordinates (n_u)
    q0: np.ndarray  # initial scalar coordinates (joints' q0)                             (n_q)
    balls0: np.ndarray  # initial ball rotations expm(q0 rotation vector)                 (n_ball x 3 x 3)
    u0: np.ndarray  # initial velocities (joints' u0)                                    (n_u)
    # ------------------------------------------------------------------ loads, drives, joint springs and forces
    loads: tuple[NodalLoad, ...]  # nodal forces and moments                               (n_load)
    driven: np.ndarray  # driven velocity coordinates (indices in u), ascending           (n_driven)
    drives: tuple[ScalarDrive, ...]  # q, q', q'' of t of each driven coordinate           (n_driven)
    spring_u: np.ndarray  # coordinate (index in u) of each joint spring, ascending        (n_spring)
    spring_k: np.ndarray  # its stiffness [N/m or N m/rad]                               (n_spring)
    spring_c: np.ndarray  # its damping [N s/m or N m s/rad]                             (n_spring)
    spring_rest: np.ndarray  # its rest coordinate                                        (n_spring)
    jforce_u: np.ndarray  # coordinate (index in u) of each applied joint force, ascending (n_jforce)
    jforce_f: tuple[Callable[[float], float], ...]  # the force (or torque) as a function of time (n_jforce)
    mforce_u: np.ndarray  # coordinate (index in u) of each joint force of the motion f(t, q, u), ascending (n_mforce)
    mforce: tuple[MotionForce, ...]  # those forces with their tangents (flexmb/motion_forces.py)    (n_mforce)
    # ------------------------------------------------------------------ bearing friction (engine/friction.py)
    friction_joint: np.ndarray  # tree joint index of each revolute joint with friction   (n_friction)
    friction_u: np.ndarray  # its coordinate (index in u)                                 (n_friction)
    friction_mu: np.ndarray  # friction coefficient                                       (n_friction)
    friction_radius: np.ndarray  # pin radius [m]                                         (n_friction)
    friction_omega_eps: np.ndarray  # regularisation of sign(q') [rad/s]                  (n_friction)
    # ------------------------------------------------------------------ element families (flexmb.elements)
    elements: Mapping[str, ElementData]  # compiled arrays of each element family by name, FAMILIES order (n_family)
    # ------------------------------------------------------------------ loops
    loops: tuple[Loop, ...]  # loops closed by bushings and beams, with their cut (topology.Loop) (n_loop)
    # ------------------------------------------------------------------ planar models (docs/planar.md)
    plane_normal: np.ndarray | None = None  # unit normal of a planar model's plane, global; None: spatial   (3)
    # ------------------------------------------------------------------ held samples at the initial state
    # the sampled joint forces' and node loads' first samples (docs/motion_forces.md (M6), (M15)), taken by the
    # compiler, which stands above the motion modules and the kinematics they read (flexmb/builder/compile.py)
    start_holds: Mapping[str, np.ndarray] = field(default_factory=lambda: _NO_HOLDS)  # State.elements[key] at t = 0 (n_hold)

    # -------------------------------------------------------------- sizes
    @property
    def n_nodes(self) -> int:
        """Number of nodes (6-DOF frames)."""
        return len(self.node_names)

    @property
    def n_joints(self) -> int:
        """Number of tree joints (user joints plus the free joints of free nodes)."""
        return len(self.joint_names)

    @property
    def n_u(self) -> int:
        """Number of velocity coordinates (driven ones included)."""
        return int(self.u_is_ball.size)

    @property
    def n_q(self) -> int:
        """Number of scalar (vector-space) position coordinates; ball rotations are kept apart."""
        return int(self.q0.size)

    @property
    def n_ball(self) -> int:
        """Number of ball rotations (spherical and free joints), each an SO(3) matrix."""
        return int(self.balls0.shape[0])

    @cached_property
    def size(self) -> float:
        """The model's size [m]: the largest extent of its nodes at assembly along a global axis
        (1.0 where all nodes coincide). Translation-invariant; the length scale of its
        tolerances (a rotation coordinate's lever in the time step's Newton tests)."""
        size = float(np.ptp(self.X0, axis=0).max(initial=0.0)) if self.n_nodes else 0.0
        return size if size > 0.0 and np.isfinite(size) else 1.0

    @cached_property
    def rotation_u(self) -> np.ndarray:
        """True for the velocity coordinates that are rotations (revolute, the angles of universal and
        cylindrical joints, balls), False for translations (bool, n_u)."""
        rot = np.zeros(self.n_u, dtype=bool)
        for k, kind in enumerate(self.joint_kinds):
            i = int(self.joint_u_start[k])
            for comp, _ in kind.components:
                n = 3 if comp == "B" else 1
                rot[i:i + n] = comp != "T"
                i += n
        return rot

    @property
    def free_u(self) -> np.ndarray:
        """Velocity coordinates that are unknowns (not driven)."""
        mask = np.ones(self.n_u, dtype=bool)
        mask[self.driven] = False
        return np.flatnonzero(mask)

    # -------------------------------------------------------------- topology
    def path_matrix(self) -> np.ndarray:
        """Preliminary path matrix pi (nodes x tree joints), Issa & Arczewski §2."""
        return path_matrix(self.tree)

    def secondary_path_matrix(self) -> np.ndarray:
        """Secondary path matrix pi* (nodes x tree joints), Issa & Arczewski §2."""
        return secondary_path_matrix(self.tree)

    # -------------------------------------------------------------- name -> index
    @cached_property
    def _joint_lookup(self) -> dict[str, int]:
        """joint name -> index (built once: a model of 10000 nodes asks for each)"""
        return _first_index(self.joint_names)

    @cached_property
    def _node_lookup(self) -> dict[str, int]:
        """node name -> index (built once)"""
        return _first_index(self.node_names)

    def joint_index(self, name: str) -> int:
        """Index of the tree joint called ``name``."""
        try:
            return self._joint_lookup[name]
        except (KeyError, TypeError):
            raise ModelError(f"unknown joint '{name}'. Known joints: {list(self.joint_names)[:20]}.") from None

    def node_index(self, name: str) -> int:
        """Index of the node called ``name``."""
        try:
            return self._node_lookup[name]
        except (KeyError, TypeError):
            raise ModelError(f"unknown node '{name}'. Known nodes: {list(self.node_names)[:20]}.") from None

    def coordinate_index(self, joint: str, dof: int = 0) -> int:
        """Index in ``u`` of coordinate ``dof`` of ``joint``."""
        j = self.joint_index(joint)
        if not 0 <= dof < self.joint_kinds[j].n_u:
            raise ModelError(f"joint '{joint}' has no coordinate {dof}.")
        return int(self.joint_u_start[j] + dof)

    # -------------------------------------------------------------- state
    def initial_state(self) -> State:
        """The state at t = 0 from the joints' q0 and u0 (drives override their coordinates), with
        the internal state of the element families that keep one (ElementData.initial_state)."""
        elements = {name: s0 for name, data in self.elements.items() if (s0 := data.initial_state()) is not None}
        st = State(0.0, self.q0.copy(), self.balls0.copy(), self.u0.copy(), np.zeros(self.n_u), elements)
        st.apply_drives(self, 0.0)
        for key, held in self.start_holds.items():  # the sampled forces' and loads' first samples (M6), (M15)
            st.elements[key] = held.copy()
        return st


def _first_index(names: tuple[str, ...]) -> dict[str, int]:
    """name -> index of its first occurrence (what ``tuple.index`` gives), in one pass."""
    out: dict[str, int] = {}
    for i, n in enumerate(names):
        out.setdefault(n, i)
    return out
