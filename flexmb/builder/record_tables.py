"""The builder's record tables: what every ``add_*`` method fills, their read-only views, and the
look-ups every ``add_*`` method shares (new names, known nodes and joints, a joint's scalar
coordinates). :class:`RecordTables` is the base of the builder's parts (drives_and_loads.py,
loop_cuts.py, force_elements.py, flexible_links.py) and of :class:`~flexmb.builder.model_builder.ModelBuilder`, which
joins them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

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

__all__ = ["RecordTables"]


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
    @property
    def nodes(self) -> Mapping[str, NodeSpec]:
        """Nodes by name, in declaration order (the node index order of the Model)."""
        return MappingProxyType(self._nodes)

    @property
    def bodies(self) -> Mapping[str, BodySpec]:
        """Rigid bodies by name (particles of particle bodies included), in declaration order."""
        return MappingProxyType(self._bodies)

    @property
    def joints(self) -> Mapping[str, JointSpec]:
        """Joints by name, in declaration order."""
        return MappingProxyType(self._joints)

    @property
    def drives(self) -> Mapping[tuple[str, int], DriveSpec]:
        """Drives by (joint, dof)."""
        return MappingProxyType(self._drives)

    @property
    def springs(self) -> Mapping[tuple[str, int], SpringSpec]:
        """Joint springs by (joint, dof)."""
        return MappingProxyType(self._springs)

    @property
    def joint_forces(self) -> Mapping[tuple[str, int], JointForceSpec]:
        """Applied joint forces by (joint, dof)."""
        return MappingProxyType(self._joint_forces)

    @property
    def frictions(self) -> Mapping[str, FrictionSpec]:
        """Bearing frictions by joint."""
        return MappingProxyType(self._frictions)

    @property
    def loads(self) -> Mapping[str, LoadSpec]:
        """Nodal loads by name, in declaration order."""
        return MappingProxyType(self._loads)

    @property
    def bushings(self) -> Mapping[str, BushingSpec]:
        """Bushings by name, in declaration order."""
        return MappingProxyType(self._bushings)

    @property
    def rigid_cuts(self) -> Mapping[str, RigidCutSpec]:
        """Rigid-limit cuts by name, in declaration order."""
        return MappingProxyType(self._rigid_cuts)

    @property
    def spring_dampers(self) -> Mapping[str, SpringDamperSpec]:
        """Point-to-point spring-dampers by name, in declaration order."""
        return MappingProxyType(self._spring_dampers)

    @property
    def actuators(self) -> Mapping[str, ActuatorSpec]:
        """Prescribed-length actuators by name, in declaration order (force actuators are spring-dampers
        with a force law: :attr:`spring_dampers`)."""
        return MappingProxyType(self._actuators)

    @property
    def beams(self) -> Mapping[str, BeamSpec]:
        """Beam elements by name, in declaration order."""
        return MappingProxyType(self._beams)

    @property
    def particle_bodies(self) -> Mapping[str, ParticleBodySpec]:
        """Particle bodies by name, in declaration order."""
        return MappingProxyType(self._particle_bodies)

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
