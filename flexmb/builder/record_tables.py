"""The builder's record tables: what every ``add_*`` method fills, their read-only views, and the
look-ups every ``add_*`` method shares (new names, known nodes and joints, a joint's scalar
coordinates). :class:`RecordTables` is the base of the builder's parts (drives_and_loads.py,
loop_cuts.py, force_elements.py, flexible_links.py) and of :class:`~flexmb.builder.model_builder.ModelBuilder`, which
joins them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Generic, TypeVar

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder import planar as planar_module
from flexmb.builder.records import (
    ActuatorSpec,
    BeamSpec,
    BodySpec,
    BushingSpec,
    DriveSpec,
    FrictionSpec,
    JointForceSpec,
    JointSpec,
    LoadSpec,
    NodeSpec,
    ParticleBodySpec,
    RigidCutSpec,
    SpringDamperSpec,
    SpringSpec,
)
from flexmb.errors import ModelError

__all__ = ["RecordTables", "RecordView"]

K = TypeVar("K")
V = TypeVar("V")


class RecordView(Generic[K, V]):
    """A read-only view of one of the builder's record tables: the attribute ``<name>`` of a
    :class:`RecordTables` is its table ``_<name>`` (a dict of records by key ``K``) seen through a
    MappingProxyType. ``doc`` says what the table holds."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self.table = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.table = "_" + name

    def __get__(self, obj: Any, objtype: type | None = None) -> Mapping[K, V]:
        if obj is None:  # on the class: the view itself (its doc)
            return self  # type: ignore[return-value]
        return MappingProxyType(getattr(obj, self.table))

    def __set__(self, obj: Any, value: Any) -> None:  # read-only, as a property without setter
        raise AttributeError(f"ModelBuilder.{self.table[1:]} is read-only: records are added by the add_* methods")


class RecordTables:
    """The records the builder has stored so far, by kind and name, readable (not changeable)
    through :attr:`nodes`, :attr:`bodies`, :attr:`joints` and alike, and the checks of names,
    nodes, joints and coordinates that the ``add_*`` methods share."""

    def __init__(self, gravity: Sequence[float] = (0.0, 0.0, 0.0), planar: Any = None) -> None:
        self._nodes: dict[str, NodeSpec] = {}
        self._node_index_of: dict[str, int] = {}
        self._bodies: dict[str, BodySpec] = {}
        self._joints: dict[str, JointSpec] = {}
        self._drives: dict[tuple[str, int], DriveSpec] = {}
        self._springs: dict[tuple[str, int], SpringSpec] = {}
        self._joint_forces: dict[tuple[str, int], JointForceSpec] = {}
        self._frictions: dict[str, FrictionSpec] = {}
        self._loads: dict[str, LoadSpec] = {}
        self._bushings: dict[str, BushingSpec] = {}
        self._rigid_cuts: dict[str, RigidCutSpec] = {}
        self._spring_dampers: dict[str, SpringDamperSpec] = {}
        self._actuators: dict[str, ActuatorSpec] = {}
        self._beams: dict[str, BeamSpec] = {}
        self._particle_bodies: dict[str, ParticleBodySpec] = {}
        self._elements: dict[str, dict[str, Any]] = {}  # records of further element families, by family and name
        self.gravity = args.vector(gravity, 3, "ModelBuilder()", "gravity")
        self._planar = planar_module.plane_normal(planar, "ModelBuilder()", "planar")

    @property
    def planar(self) -> np.ndarray | None:
        """The unit normal (3,) of a planar model's plane (``ModelBuilder(planar=...)``, docs/planar.md
        (P1)), or None for a spatial model. Every cut of a planar model holds only its in-plane
        directions unless given ``plane=`` itself."""
        return None if self._planar is None else self._planar.copy()

    # ------------------------------------------------------------------ the records (read-only views)
    nodes = RecordView[str, NodeSpec]("Nodes by name, in declaration order (the node index order of the Model).")
    bodies = RecordView[str, BodySpec]("Rigid bodies by name (particles of particle bodies included), in declaration order.")
    joints = RecordView[str, JointSpec]("Joints by name, in declaration order.")
    drives = RecordView[tuple[str, int], DriveSpec]("Drives by (joint, dof).")
    springs = RecordView[tuple[str, int], SpringSpec]("Joint springs by (joint, dof).")
    joint_forces = RecordView[tuple[str, int], JointForceSpec]("Applied joint forces by (joint, dof).")
    frictions = RecordView[str, FrictionSpec]("Bearing frictions by joint.")
    loads = RecordView[str, LoadSpec]("Nodal loads by name, in declaration order.")
    bushings = RecordView[str, BushingSpec]("Bushings by name, in declaration order.")
    rigid_cuts = RecordView[str, RigidCutSpec]("Rigid-limit cuts by name, in declaration order.")
    spring_dampers = RecordView[str, SpringDamperSpec]("Point-to-point spring-dampers by name, in declaration order.")
    actuators = RecordView[str, ActuatorSpec]("Prescribed-length actuators by name, in declaration order (force actuators are "
                                              "spring-dampers with a force law: :attr:`spring_dampers`).")
    beams = RecordView[str, BeamSpec]("Beam elements by name, in declaration order.")
    particle_bodies = RecordView[str, ParticleBodySpec]("Particle bodies by name, in declaration order.")

    @property
    def elements(self) -> Mapping[str, Mapping[str, Any]]:
        """Records added by :meth:`add_element`, by element family and element name."""
        return MappingProxyType({k: MappingProxyType(v) for k, v in self._elements.items()})

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _check_new_name(name: str, table: Mapping[str, Any], what: str, call: str) -> None:
        if not isinstance(name, str) or not name:
            raise ModelError(f"{call}: {what} name {name!r} must be a non-empty string.")
        if name == "ground":
            raise ModelError(f"{call}: {what} name 'ground' is reserved for the fixed frame.")
        if name in table:
            raise ModelError(f"{call}: duplicate {what} name '{name}': every {what} needs its own name.")

    def _node_index(self, name: str, who: str) -> int:
        if not isinstance(name, str) or name not in self._nodes:
            raise ModelError(f"{who}: unknown node {name!r}. Known nodes: {list(self._nodes)[:20]}.")
        return self._node_index_of[name]

    def _joint(self, name: str, who: str) -> JointSpec:
        if not isinstance(name, str) or name not in self._joints:
            raise ModelError(f"{who}: unknown joint {name!r}. Known joints: {list(self._joints)[:20]}.")
        return self._joints[name]

    @staticmethod
    def _check_dof(jt: JointSpec, dof: Any, who: str) -> int:
        dof = args.integer(dof, who, "dof")
        if not 0 <= dof < jt.kind.n_scalar:
            raise ModelError(
                f"{who}: dof {dof} is not a scalar coordinate of joint '{jt.name}', a {jt.kind.name} "
                f"joint (it has {jt.kind.n_scalar}; ball rotations cannot be driven or sprung)."
            )
        return dof
