"""The model builder: ``add_*`` calls check their input and store records (builder/records.py);
:meth:`ModelBuilder.compile` hands them to the compiler (builder/compile.py) and then runs the
checks that need the compiled model (builder/checks.py).

Everything is given in the *assembly configuration* (all joint coordinates zero), in global
coordinates: node positions and orientations, joint points and axes. Initial joint
coordinates ``q0`` and velocities ``u0`` then move the mechanism from there.

The builder is assembled from parts, one module each, that share its record tables
(builder/record_tables.py): drives, springs, joint forces, friction and loads
(builder/drives_and_loads.py), bushings and rigid cuts (builder/loop_cuts.py), spring-dampers
(builder/force_elements.py), beams and flexible links (builder/flexible_links.py), couplings between
coordinates (builder/couplings.py); nodes, bodies,
joints, particle bodies, further element families and the compile step are here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder import checks, cut_defaults, particle_bodies, planar
from flexmb.builder.compile import compile as compile_model
from flexmb.builder.couplings import CoordinateCouplings
from flexmb.builder.drives_and_loads import DrivesAndLoads
from flexmb.builder.flexible_links import FlexibleLinks
from flexmb.builder.force_elements import ForceElements
from flexmb.builder.loop_cuts import LoopCuts
from flexmb.builder.records import BeamSection, BodySpec, JointSpec, NodeSpec, readonly
from flexmb.builder.rotational_springs import RotationalSpringDampers
from flexmb.elements import FAMILIES, ElementFamily
from flexmb.errors import ModelError
from flexmb.joints import JOINT_KINDS
from flexmb.model import Model

__all__ = ["ModelBuilder", "BeamSection"]


def _coordinates(value: Any, n: int, who: str, what: str) -> np.ndarray:
    """Initial coordinates or velocities of a joint: None (zeros), a number (n = 1) or n numbers."""
    if value is None:
        return np.zeros(n)
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) != 0:
        arr = args.array(value, ((n,), (1,)), who, what, f"{n} number(s)")
    else:
        arr = np.array([args.number(value, who, what)])
    if arr.shape != (n,):
        raise ModelError(f"{who}: {what} needs {n} values, got {arr.size}.")
    return arr


class ModelBuilder(DrivesAndLoads, LoopCuts, ForceElements, FlexibleLinks, CoordinateCouplings, RotationalSpringDampers):
    """Collects nodes, bodies, joints, drives and loads; :meth:`compile` checks them and
    returns an immutable :class:`~flexmb.model.Model`. The records stored so far can be read
    (not changed) through :attr:`nodes`, :attr:`bodies`, :attr:`joints` and alike.

    Example::

        mb = ModelBuilder(gravity=(0, -9.81, 0))
        mb.add_node("tip", position=(1, 0, 0))
        mb.add_body("rod", node="tip", mass=1.0, com=(-0.5, 0, 0), inertia=np.diag([0, 1, 1]) / 12)
        mb.add_joint("pin", "revolute", parent="ground", child="tip", point=(0, 0, 0), axis=(0, 0, 1))
        model = mb.compile()

    ``gravity``: the gravitational acceleration (3 numbers, global). ``planar``: None (a spatial
    model), or the plane a planar model moves in, ``"xy"``, ``"yz"``, ``"zx"`` or its normal vector
    (docs/planar.md): every loop cut then holds only its in-plane directions (``plane=`` of
    :meth:`add_bushing` and :meth:`add_rigid_cut`), and :meth:`compile` refuses what would move
    the model out of its plane (a joint other than revolute about the normal, prismatic in the
    plane or fixed; a node with no joint path to ground; gravity or a load out of the plane),
    naming it.
    """

    # ------------------------------------------------------------------ nodes, bodies
    def add_node(self, name: str, position: Sequence[float], rotation: Any = None) -> str:
        """Add a node (6-DOF frame) at ``position`` with orientation ``rotation`` (3x3, columns
        = node axes in global coordinates; identity by default)."""
        who = f"add_node: node {name!r}"
        self._check_new_name(name, self._nodes, "node", "add_node")
        x = args.vector(position, 3, who, "position")
        R = np.eye(3) if rotation is None else args.rotation(rotation, who, "rotation")
        self._node_index_of[name] = len(self._nodes)
        self._nodes[name] = NodeSpec(name, readonly(x), readonly(R))
        return name

    def add_body(self, name: str, node: str, mass: float, com: Sequence[float] = (0.0, 0.0, 0.0), inertia: Any = None
                 ) -> str:
        """Add a rigid body on ``node``: ``mass``, centre of mass ``com`` (node axes, relative to
        the node) and ``inertia`` tensor about the centre of mass in node axes (3x3)."""
        who = f"add_body: body {name!r}"
        self._check_new_name(name, self._bodies, "body", "add_body")
        self._node_index(node, who)
        mass = args.number(mass, who, "mass", positive=True)
        c = args.vector(com, 3, who, "com")
        J = np.zeros((3, 3)) if inertia is None else args.matrix3(inertia, who, "inertia")
        if np.abs(J - J.T).max() > 1e-12 * max(1.0, np.abs(J).max()):
            raise ModelError(f"{who}: inertia tensor is not symmetric: {J.tolist()}.")
        ev = np.linalg.eigvalsh(J)
        tol = 1e-12 * max(1.0, ev.max())
        if not np.all(np.isfinite(ev)):
            raise ModelError(f"{who}: the principal moments of the inertia tensor overflow; give physical values.")
        if ev.min() < -tol:
            raise ModelError(f"{who}: inertia tensor is not positive semi-definite (principal moments {ev.tolist()}).")
        if ev[0] + ev[1] < ev[2] - tol:
            raise ModelError(
                f"{who}: principal moments {ev.tolist()} violate the triangle inequality "
                "(J1 + J2 >= J3); no physical body has them."
            )
        self._bodies[name] = BodySpec(name, node, float(mass), readonly(c), readonly(J))
        return name

    # ------------------------------------------------------------------ joints
    def add_joint(
        self,
        name: str,
        kind: str,
        parent: str,
        child: str,
        point: Sequence[float] | None = None,
        axis: Sequence[float] | None = None,
        axes: Sequence[Sequence[float]] | None = None,
        q0: Sequence[float] | float | None = None,
        u0: Sequence[float] | float | None = None,
    ) -> str:
        """Add a joint of ``kind`` (fixed, revolute, prismatic, cylindrical, universal,
        spherical, free) from ``parent`` (a node or ``"ground"``) to ``child``.

        ``point`` (default: the child node) and ``axis``/``axes`` are global, in the assembly
        configuration. Universal joints take two axes (first fixed in the parent, second in the
        child). ``q0``/``u0`` are the initial coordinates and velocities; a ball's (spherical,
        free) three coordinates are a rotation vector and the child's body angular velocity
        relative to the parent.
        """
        who = f"add_joint: joint {name!r}"
        self._check_new_name(name, self._joints, "joint", "add_joint")
        if not isinstance(kind, str) or kind not in JOINT_KINDS:
            raise ModelError(f"{who}: unknown kind {kind!r}; use one of {sorted(JOINT_KINDS)}.")
        jk = JOINT_KINDS[kind]
        args.node_name(parent, who, "parent")
        args.node_name(child, who, "child")
        if parent != "ground":
            self._node_index(parent, f"{who} parent")
        if child == "ground":
            raise ModelError(f"{who}: ground cannot be a child; give ground as the parent.")
        self._node_index(child, f"{who} child")
        if parent == child:
            raise ModelError(f"{who}: parent and child are the same node '{child}'.")
        if axes is None:
            given = []
        elif not isinstance(axes, (list, tuple, np.ndarray)):
            raise ModelError(f"{who}: axes = {axes!r} must be a list of axes (each 3 numbers).")
        else:
            given = list(axes)
        if axis is not None:
            given = [axis] + given
        if kind in ("free", "spherical", "fixed"):
            if given:
                raise ModelError(f"{who}: a {kind} joint takes no axis.")
        elif len(given) != jk.n_axes:
            raise ModelError(f"{who}: a {kind} joint needs {jk.n_axes} axis/axes, got {len(given)}.")
        ax = [args.unit(a, who, f"axis {i + 1}") for i, a in enumerate(given)]
        if kind == "universal" and abs(ax[0] @ ax[1]) > 1 - 1e-9:
            raise ModelError(f"{who}: the two universal-joint axes are parallel.")
        pt = None if point is None else args.vector(point, 3, who, "point")
        q0a = _coordinates(q0, jk.n_u, who, "q0")
        u0a = _coordinates(u0, jk.n_u, who, "u0")
        self._joints[name] = JointSpec(name, jk, parent, child, None if pt is None else readonly(pt),
                                       tuple(readonly(a) for a in ax), readonly(q0a), readonly(u0a))
        return name

    # ------------------------------------------------------------------ particle bodies
    def add_particle_body(
        self,
        name: str,
        reference_node: str,
        mass: float,
        com: Sequence[float] = (0.0, 0.0, 0.0),
        inertia: Any = None,
        particle_nodes: Sequence[str | Sequence[float]] = (),
        kind: str = "planar",
        midpoint_nodes: Sequence[str] | None = None,
        plane_normal: Sequence[float] | None = None,
    ) -> tuple[str, ...]:
        """A rigid body described by dynamically equivalent particles on nodes (Attia §2;
        kernels in flexmb.elements.particles, glue in flexmb.builder.particle_bodies).

        ``mass``, ``com`` and ``inertia`` as in :meth:`add_body`: centre of mass in the axes of
        ``reference_node`` relative to it, inertia about the centre of mass in those axes (for
        ``planar``/``rod`` also a scalar: the moment about the plane normal / about an axis
        normal to the rod, through the centre of mass). ``particle_nodes``: the primary
        particles, each a node name (its position now is the particle's place) or a global
        point (a node fixed to the reference node is created there). ``kind``:

        * ``"planar"``: 3 primaries; a 4th particle at the midpoint of 1 and 3; masses from
          Attia's 4×4 system (eq. 2.1): mass, centre of mass (in the plane), polar moment;
        * ``"rod"``: the 2 end particles and their midpoint: mass, centre of mass (on the line),
          transverse moment;
        * ``"spatial"``: 4 non-coplanar primaries and 6 midpoints of the pairs (1,2), (1,3),
          (1,4), (2,3), (2,4), (3,4): mass, centre of mass, all six inertia components;
        * ``"general"``: any particles, spatial conditions, or planar ones if ``plane_normal``
          is given; least-norm masses, refused when no exact solution exists.

        Midpoint particles go on ``midpoint_nodes`` if given (nodes at the midpoints), else on
        new nodes ``<name>.m13`` … fixed to the reference node. Each particle becomes a point
        mass ``<name>.p<k>`` on its node, so bodies sharing a joint node both add mass to it.
        Singular placements and non-physical inertias raise ModelError; negative particle
        masses warn (NegativeParticleMassWarning). :meth:`compile` refuses particles on nodes
        that do not move with the body. Returns the particle node names (primaries first)."""
        self._check_new_name(name, self._particle_bodies, "particle body", "add_particle_body")
        spec = particle_bodies.add_particle_body(self, name, reference_node, mass, com, inertia, particle_nodes, kind,
                                                 midpoint_nodes, plane_normal)
        for k, (node, m) in enumerate(zip(spec.nodes, spec.masses)):  # the particles: point masses
            self._bodies[f"{name}.p{k + 1}"] = BodySpec(f"{name}.p{k + 1}", node, m, readonly(np.zeros(3)),
                                                        readonly(np.zeros((3, 3))))
        self._particle_bodies[name] = spec
        return spec.nodes

    def add_particle_load(
        self,
        name: str,
        body: str,
        force: Any = None,
        point: Sequence[float] | None = None,
        couple: Any = None,
        follower: bool = False,
    ) -> tuple[str, ...]:
        """A force at ``point`` of particle body ``body`` and/or a couple on it, distributed over
        the body's primary particles as nodal loads (Attia §3): the force with the α of eq.
        (3.2) (same resultant and moment about any point; ``point`` in the reference node's
        axes relative to it, default the reference node), the couple as least-norm particle
        forces with zero resultant. ``force``/``couple``: 3-vectors or functions of time.
        The force is global unless ``follower``; the couple is always in the reference node's
        axes (body-fixed: a couple fixed in space would need orientation-dependent particle
        forces — apply it with :meth:`add_load` on the reference node). Returns the load names."""
        return particle_bodies.add_particle_load(self, name, body, force, point, couple, follower)

    # ------------------------------------------------------------------ element families
    def add_element(self, family: str, record: Any) -> str:
        """Add one element of a registered element family (flexmb.elements.FAMILIES) that has no
        ``add_*`` method of its own: ``record`` is the family's frozen record (a dataclass with a
        ``name``, node names and parameters), read back by the family's compile. Node names are
        checked here when the record has ``node_a``/``node_b``/``nodes``; the family checks the
        rest. Returns the element's name."""
        who = f"add_element: {family!r} element"
        if family not in FAMILIES:
            raise ModelError(f"{who}: no element family {family!r} is registered (flexmb.elements.register); known: "
                             f"{list(FAMILIES)}.")
        if type(FAMILIES[family]).records is not ElementFamily.records:
            raise ModelError(f"{who}: this family reads its records from a builder method of its own (add_body, "
                             "add_particle_body, add_bushing, add_beam, ...): use that.")
        name = getattr(record, "name", None)
        table = self._elements.setdefault(family, {})
        self._check_new_name(name, table, f"{family} element", "add_element")
        nodes = [getattr(record, k) for k in ("node_a", "node_b") if hasattr(record, k)] + list(getattr(record, "nodes", ()))
        for n in nodes:
            if n != "ground":
                self._node_index(n, f"add_element: {family} element '{name}'")
        table[name] = record
        return name

    # ------------------------------------------------------------------ compile
    def compile(self, require_mass: bool = True) -> Model:
        """Check the description, build the spanning tree and return an immutable Model
        (builder/compile.py), then run the checks that need it (builder/checks.py).

        A coordinate that moves no mass (a node without a body or beam, a zero-inertia body on
        a spherical joint, a revolute joint turning a point mass about itself) is refused,
        naming the coordinate, its joint and node: the solvers start from M̄ u' = Q and need M̄
        positive definite. ``require_mass=False`` skips that test, for models used for
        kinematics or statics only (simulate then fails on them); masses that overflow are
        refused either way. Then the compiler chooses what the user left to it for the loop cuts
        (flexmb.builder.cut_defaults: the damping of bushings and loop-closing beams given
        ``damping=None``, the effective masses, the rigid cuts' penalty scale), from the model at
        its start; ``flexmb info`` lists them."""
        if not self._nodes:
            raise ModelError("the model has no nodes; add_node() first.")
        args.flag(require_mass, "compile", "require_mass")
        model = compile_model(self)
        # nothing moves out of a planar model's plane (docs/planar.md §3)
        planar.check_planar_model(self.planar, self.joints.values(), self.gravity, model)
        checks.check_model(model, require_mass=require_mass)
        return cut_defaults.finish(model)  # the cuts' default damping and effective masses (issue 12.1)
