"""The builder's force elements between points: the point-to-point spring-damper (the TSDA,
flexmb.elements.spring_damper, docs/spring_damper.md) and the linear actuator (a prescribed length,
flexmb.elements.actuator, or a force along the line; docs/actuator.md), part of
:class:`~flexmb.builder.model_builder.ModelBuilder`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder.record_tables import RecordTables
from flexmb.builder.records import ActuatorSpec, SpringDamperSpec, readonly
from flexmb.errors import ModelError

__all__ = ["ForceElements"]


class ForceElements(RecordTables):
    """``add_spring_damper`` and ``add_actuator`` of the model builder."""

    def add_spring_damper(
        self,
        name: str,
        node_a: str,
        node_b: str,
        stiffness: float = 0.0,
        damping: float = 0.0,
        rest_length: float | None = None,
        preload: float = 0.0,
        point_a: Sequence[float] | None = None,
        point_b: Sequence[float] | None = None,
        force_law: Callable[[float, float, float], float] | None = None,
        force_law_tangent: Callable[[float, float, float], tuple[float, float]] | None = None,
    ) -> str:
        """A spring-damper-actuator between a point of ``node_a`` (or a fixed point: ``"ground"``)
        and a point of ``node_b`` (the TSDA of the literature; Adams' SPRINGDAMPER, Chrono's
        ChLinkTSDA): the tension

            F = stiffness (l - rest_length) + damping l' + preload      [N, pulling the points together]

        along the line between the two points, l their distance and l' its rate
        (docs/spring_damper.md (S1)-(S6)). ``point_a`` / ``point_b``: the points, global, in the
        assembly configuration, each carried by its node from then on (default: the node's
        position; ground's default is the global origin). ``rest_length``: the unstretched length
        (default: the distance of the points at assembly, so the element starts unstrained but for
        ``preload``); ``stiffness`` [N/m] and ``damping`` [N s/m] are >= 0; ``preload`` [N] is a
        constant tension (a negative one pushes; with zero stiffness and damping the element is a
        constant-force actuator). ``force_law(l, l', t)``: instead of stiffness, damping, rest length
        and preload (which must then be left at their defaults), the tension [N] as a function of
        length, rate and time (docs/spring_damper.md (S12)); ``force_law_tangent(l, l', t)`` its
        partial derivatives (∂F/∂l, ∂F/∂l') for the iteration matrix, by default complex steps of
        the law (a law that does not take complex arguments: central differences), as for drives.
        A force law's power F l' is counted as work the element takes out (``dissipated``; it has no
        strain energy). Laws are compiled with numba into the compiled Newton step (one that numba
        does not compile keeps the loop in Python, ``flexmb info`` names it: docs/spring_damper.md §6). The
        linear element's strain energy ½ k (l - L0)² + F0 (l - L0) is in the run's
        ``strain`` energy, its power c l'² in ``dissipated``. A spring-damper between two parts of
        the tree closes a loop (``flexmb info`` lists it); its iteration-matrix blocks are
        symmetric positive semi-definite (docs/spring_damper.md (S8)).

        Refused: unknown nodes, a force law with stiffness, damping, rest length or preload, a tangent
        without a law, both ends on one node (its length could not change), negative or
        non-finite stiffness and damping, and points that coincide at assembly (the direction of the
        force is undefined there). A run in which the two points meet fails with a message naming
        the element (docs/spring_damper.md (S11)). Each result holds its length, rate and tension:
        ``Result.spring_damper(name)``."""
        who = f"add_spring_damper: spring-damper {name!r}"
        self._check_new_name(name, self._spring_dampers, "spring-damper", "add_spring_damper")
        for table, what in ((self._bushings, "bushing"), (self._rigid_cuts, "rigid cut"), (self._joints, "joint"),
                            (self._actuators, "actuator")):
            if name in table:  # loops and messages name a spring-damper, cut or joint alone
                raise ModelError(f"add_spring_damper: spring-damper name {name!r} is the name of a {what}; give the "
                                 "spring-damper a name of its own.")
        Pa, Pb, dist = self._line_ends(node_a, node_b, point_a, point_b, who, "spring-damper", "docs/spring_damper.md §4")
        k = args.number(stiffness, who, "stiffness", nonnegative=True)
        c = args.number(damping, who, "damping", nonnegative=True)
        f0 = args.number(preload, who, "preload")
        L0 = dist if rest_length is None else args.number(rest_length, who, "rest_length", nonnegative=True)
        if force_law_tangent is not None and force_law is None:
            raise ModelError(f"{who}: force_law_tangent without force_law; give the force law it differentiates.")
        for f, what in ((force_law, "force_law"), (force_law_tangent, "force_law_tangent")):
            if f is not None and not callable(f):
                raise ModelError(f"{who}: {what} = {f!r} is not callable; give a function f(length, rate, t).")
        if force_law is not None:
            if k or c or f0 or rest_length is not None:
                raise ModelError(f"{who}: force_law replaces stiffness, damping, rest_length and preload; leave those "
                                 "at their defaults (write the linear terms into the law).")
            args.finite_law(force_law(dist, 0.0, 0.0), who, f"force_law({dist:.6g}, 0.0, 0.0)", "N", "tension")
        self._spring_dampers[name] = SpringDamperSpec(name, node_a, node_b, readonly(Pa), readonly(Pb), k, c, L0, f0,
                                                      force_law, force_law_tangent)
        return name

    def add_actuator(
        self,
        name: str,
        node_a: str,
        node_b: str,
        point_a: Sequence[float] | None = None,
        point_b: Sequence[float] | None = None,
        length: Callable[[float], float] | float | None = None,
        velocity: Callable[[float], float] | None = None,
        acceleration: Callable[[float], float] | None = None,
        force: Callable[[float, float, float], float] | None = None,
    ) -> str:
        """A linear actuator (a hydraulic cylinder, an electric linear axis) between a point of
        ``node_a`` (or a fixed point: ``"ground"``) and a point of ``node_b``; the points as for
        :meth:`add_spring_damper` (global, at assembly, carried by their nodes; defaults: the node
        positions, ground's origin). Give exactly one of:

        ``length``: the prescribed distance L(t) [m] of the two points (a function of time, or a
        number: a locked cylinder), held exactly by an augmented Lagrangian like a rigid cut
        (flexmb.elements.actuator, docs/actuator.md (A1)-(A9)); ``velocity`` and ``acceleration``
        its derivatives L'(t), L''(t), by complex step when not given (as for :meth:`add_drive`).
        The actuator's force (the multiplier, tension positive) is recorded in every result, and its
        power -F l' is the drive work of the energy balance. A length the mechanism cannot reach (it
        locks, or the start cannot be assembled at L(0)) fails the run naming the actuator.

        ``force(t, l, l')``: the tension [N] (positive pulling the points together) as a function of
        time, the length and its rate: a spring-damper with that force law underneath
        (flexmb.elements.spring_damper (S12)), its power F l' counted as dissipated like a force
        law's; compiled with numba like one (flexmb/solvers/law_step.py).

        A rotary actuator, a prescribed joint angle, is :meth:`add_drive`. Refused: unknown nodes,
        node_b on ground, both ends on one node, coincident points, neither or both of length and
        force, velocity or acceleration without length, non-callable or non-finite functions, and a
        name used by a spring-damper, cut or joint. ``Result.actuator(name)``: length, rate and
        force per output row."""
        who = f"add_actuator: actuator {name!r}"
        self._check_new_name(name, self._actuators, "actuator", "add_actuator")
        for table, what in ((self._spring_dampers, "spring-damper"), (self._bushings, "bushing"),
                            (self._rigid_cuts, "rigid cut"), (self._joints, "joint")):
            if name in table:
                raise ModelError(f"{who}: the name is that of a {what}; give the actuator a name of its own.")
        Pa, Pb, dist = self._line_ends(node_a, node_b, point_a, point_b, who, "actuator", "docs/actuator.md §1")
        if (length is None) == (force is None):
            raise ModelError(f"{who}: give exactly one of length (a prescribed length L(t) [m]) and force (a tension "
                             f"f(t, l, l') [N]); got {'neither' if length is None else 'both'}.")
        if force is not None:
            if velocity is not None or acceleration is not None:
                raise ModelError(f"{who}: velocity and acceleration are the derivatives of a prescribed length; a force "
                                 "actuator takes force alone.")
            if not callable(force):
                raise ModelError(f"{who}: force = {force!r} is not callable; give a function f(t, length, rate) [N].")
            law = _ForceLaw(force)
            self._check_law(law, dist, who)
            self._spring_dampers[name] = SpringDamperSpec(name, node_a, node_b, readonly(Pa), readonly(Pb), 0.0, 0.0,
                                                          dist, 0.0, law, None, actuator=True)
            return name
        if not callable(length):
            L0 = args.number(length, who, "length", positive=True)
            length = lambda t, _L=L0: _L  # noqa: E731  (a locked cylinder)
        drive, vals = args.drive(((length, "length"), (velocity, "velocity"), (acceleration, "acceleration")), who,
                                 "length: L, L', L''")
        if vals[0] <= 0.0:
            raise ModelError(f"{who}: length(0) = {vals[0]:.6g} m; a prescribed length must be positive (the distance "
                             "of the two points).")
        self._actuators[name] = ActuatorSpec(name, node_a, node_b, readonly(Pa), readonly(Pb), drive)
        return name

    @staticmethod
    def _check_law(law: Callable[[float, float, float], float], dist: float, who: str) -> None:
        """Refuse a force law whose value at assembly (length ``dist``, rate 0, t = 0) is not one finite number."""
        try:
            value = law(dist, 0.0, 0.0)
            ok = np.isfinite(float(value))
        except (TypeError, ValueError) as exc:
            value, ok = exc, False
        if not ok:
            raise ModelError(f"{who}: force(0.0, {dist:.6g}, 0.0) = {value!r} is not a finite number [N]; the force "
                             "gives the tension as one float.")

    def _line_ends(self, node_a: str, node_b: str, point_a: Sequence[float] | None, point_b: Sequence[float] | None,
                   who: str, kind: str, page: str) -> tuple[np.ndarray, np.ndarray, float]:
        """Checked ends of a point-to-point element (spring-damper, actuator): the points p_a, p_b
        (global, at assembly; defaults: the node positions, ground's origin) and their distance.
        Refuses unknown nodes, node_b on ground, both ends on one node and coincident points."""
        args.node_name(node_a, who, "node_a")
        args.node_name(node_b, who, "node_b")
        if node_b == "ground":
            raise ModelError(f"{who}: node_b = 'ground': a {kind}'s end on ground is node_a; swap node_a and node_b.")
        if node_a != "ground":
            self._node_index(node_a, f"{who} node_a")
        self._node_index(node_b, f"{who} node_b")
        if node_a == node_b:
            raise ModelError(f"{who}: node_a and node_b are both node '{node_b}': the distance of two points of one node "
                             "cannot change; join points of two nodes (or of ground and a node).")
        xa = np.zeros(3) if node_a == "ground" else self._nodes[node_a].position
        Pa = xa.copy() if point_a is None else args.vector(point_a, 3, who, "point_a")
        Pb = self._nodes[node_b].position.copy() if point_b is None else args.vector(point_b, 3, who, "point_b")
        with np.errstate(over="ignore", invalid="ignore"):
            dist = float(np.linalg.norm(Pb - Pa))
        if not np.isfinite(dist):
            raise ModelError(f"{who}: the distance between point_a = {Pa.tolist()} and point_b = {Pb.tolist()} overflows; "
                             "give physical positions.")
        if dist <= 1e-12 * max(float(np.abs(Pa).max()), float(np.abs(Pb).max())):
            given = " (the default: the node positions)" if point_a is None and point_b is None else ""
            raise ModelError(f"{who}: point_a = {Pa.tolist()} and point_b = {Pb.tolist()}{given} coincide at assembly "
                             f"(distance {dist:.3g} m): the direction of the force is undefined there; give point_a and "
                             f"point_b apart ({page}).")
        return Pa, Pb, dist


class _ForceLaw:
    """A force actuator's f(t, l, l') as the spring-damper's force law F(l, l', t) (S12)."""

    def __init__(self, force: Callable[[float, float, float], float]) -> None:
        self.force = force

    def __call__(self, l: float, ldot: float, t: float) -> float:  # noqa: E741
        return self.force(t, l, ldot)
