"""The builder's force elements between points: the point-to-point spring-damper (the TSDA,
flexmb.elements.spring_damper, docs/spring_damper.md), part of
:class:`~flexmb.builder.model_builder.ModelBuilder`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder.record_tables import RecordTables
from flexmb.builder.records import SpringDamperSpec, readonly
from flexmb.errors import ModelError

__all__ = ["ForceElements"]


class ForceElements(RecordTables):
    """``add_spring_damper`` of the model builder."""

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
        strain energy), and its model takes the Newton loop in Python (a Python function). The
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
        for table, what in ((self._bushings, "bushing"), (self._rigid_cuts, "rigid cut"), (self._joints, "joint")):
            if name in table:  # loops and messages name a spring-damper, cut or joint alone
                raise ModelError(f"add_spring_damper: spring-damper name {name!r} is the name of a {what}; give the "
                                 "spring-damper a name of its own.")
        args.node_name(node_a, who, "node_a")
        args.node_name(node_b, who, "node_b")
        if node_b == "ground":
            raise ModelError(f"{who}: node_b = 'ground': a spring-damper's end on ground is node_a; swap node_a and node_b.")
        if node_a != "ground":
            self._node_index(node_a, f"{who} node_a")
        self._node_index(node_b, f"{who} node_b")
        if node_a == node_b:
            raise ModelError(f"{who}: node_a and node_b are both node '{node_b}': the distance of two points of one node "
                             "cannot change; join points of two nodes (or of ground and a node).")
        k = args.number(stiffness, who, "stiffness", nonnegative=True)
        c = args.number(damping, who, "damping", nonnegative=True)
        f0 = args.number(preload, who, "preload")
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
                             "point_b apart "
                             "(docs/spring_damper.md §4).")
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
            value = force_law(dist, 0.0, 0.0)
            try:
                ok = np.isfinite(float(value))
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ModelError(f"{who}: force_law({dist:.6g}, 0.0, 0.0) = {value!r} is not a finite number [N]; the "
                                 "law gives the tension as one float.")
        self._spring_dampers[name] = SpringDamperSpec(name, node_a, node_b, readonly(Pa), readonly(Pb), k, c, L0, f0,
                                                      force_law, force_law_tangent)
        return name
