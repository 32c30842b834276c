"""The builder's rotational spring-damper between two arbitrary nodes (flexmb.elements.rotational_spring_damper,
docs/rotational_spring_damper.md), part of :class:`~flexmb.builder.model_builder.ModelBuilder`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder.record_tables import RecordTables
from flexmb.builder.records import readonly
from flexmb.elements.rotational_spring_damper import RotationalSpringDamperSpec
from flexmb.errors import ModelError

__all__ = ["RotationalSpringDampers"]

_FAMILY = "rotational_spring_damper"


class RotationalSpringDampers(RecordTables):
    """``add_rotational_spring_damper`` of the model builder."""

    def add_rotational_spring_damper(
        self,
        name: str,
        node_a: str,
        node_b: str,
        axis: Sequence[float] | None = None,
        stiffness: float = 0.0,
        damping: float = 0.0,
        rest: float = 0.0,
        preload: float = 0.0,
        law: Callable[[float, float, float], float] | None = None,
        law_tangent: Callable[[float, float, float], tuple[float, float]] | None = None,
    ) -> str:
        """A rotational spring-damper between ``node_a`` (or ``"ground"``) and ``node_b``, any two nodes (they
        need no joint between them); it acts on them by moments only.

        With ``axis`` (3 numbers, global, in the assembly configuration; normalized; carried by node_a from
        then on): a torsion spring-damper about that axis, the torque

            T = stiffness (φ - rest) + damping φ' + preload      [N m]

        on the angle φ [rad] node_b has turned about the axis, relative to node_a, since assembly, and its rate
        φ' (docs/rotational_spring_damper.md (R1)-(R7)); ``rest`` [rad]: the unstrained angle (default 0: the
        assembly configuration); ``preload`` [N m] a constant torque. φ is taken on the branch within half a
        turn of ``rest`` (R3). ``law(φ, φ', t)``: instead of stiffness, damping, rest and preload (left at
        their defaults), the torque [N m] as a function of angle, rate and time (R15), with ``law_tangent(φ,
        φ', t) -> (∂T/∂φ, ∂T/∂φ')`` (default: complex steps of the law); its power T φ' counts as dissipated.

        Without ``axis``: an isotropic rotational spring-damper on the relative rotation vector ψ of node_b
        against node_a since assembly (the log map, three components): moments ∓(stiffness ψ + damping (ω_b -
        ω_a)) (R8)-(R10); rest, preload and law are refused there.

        On the same revolute joint the torsion element gives the motion of ``add_joint_spring`` (same
        stiffness, damping, rest). Strain energy ½ k (φ - rest)² + preload (φ - rest) (or ½ k |ψ|²) is in the
        run's ``strain`` energy, the damper's power in ``dissipated``. Each result holds angle, rate and
        torque with the spring-dampers: ``Result.spring_damper(name)``, ``name.angle``, ``name.rate``,
        ``name.torque`` (isotropic: |ψ|, its rate, |T|).

        Refused (ModelError naming the element): unknown nodes, the same node twice, a zero or non-finite
        axis, negative or non-finite stiffness and damping, a law with stiffness, damping, rest or preload,
        a tangent without a law, rest, preload or a law without an axis, a name already taken."""
        who = f"add_rotational_spring_damper: rotational spring-damper {name!r}"
        self._check_new_name(name, self._elements.get(_FAMILY, {}), "rotational spring-damper",
                             "add_rotational_spring_damper")
        for table, what in ((self._spring_dampers, "spring-damper or force actuator"), (self._bushings, "bushing"),
                            (self._rigid_cuts, "rigid cut"), (self._joints, "joint"), (self._actuators, "actuator")):
            if name in table:  # results and messages name the element alone (it shares the spring-dampers' rows)
                raise ModelError(f"{who}: the name is that of a {what}; give the rotational spring-damper a name of its own.")
        if node_b == "ground":
            raise ModelError(f"{who}: node_b is 'ground'; ground may be node_a only (swap the two ends, the moments "
                             "change sign with the angle).")
        if node_a != "ground":
            self._node_index(node_a, who)
        self._node_index(node_b, who)
        if node_a == node_b:
            raise ModelError(f"{who}: node_a and node_b are both {node_b!r}; a rotational spring-damper joins two "
                             "different nodes (or ground and a node).")
        k = args.number(stiffness, who, "stiffness", nonnegative=True)
        c = args.number(damping, who, "damping", nonnegative=True)
        phi0 = args.number(rest, who, "rest")
        t0 = args.number(preload, who, "preload")
        e = None
        if axis is not None:
            e = args.vector(axis, 3, who, "axis")
            if not np.linalg.norm(e) > 0.0:
                raise ModelError(f"{who}: axis = {e.tolist()} is the zero vector; give the direction of the spring's "
                                 "axis (global, at assembly), or no axis for the isotropic element.")
            e = readonly(e / np.linalg.norm(e))
        self._check_torque_law(who, e, k, c, phi0, t0, law, law_tangent)
        self._elements.setdefault(_FAMILY, {})[name] = RotationalSpringDamperSpec(name, node_a, node_b, e, k, c, phi0, t0,
                                                                                  law, law_tangent)
        return name

    @staticmethod
    def _check_torque_law(who: str, axis: np.ndarray | None, k: float, c: float, rest: float, preload: float,
                   law: Callable | None, tangent: Callable | None) -> None:
        """The refusals of add_rotational_spring_damper's law and of its isotropic element."""
        if tangent is not None and law is None:
            raise ModelError(f"{who}: law_tangent without law; give the torque law it differentiates.")
        for f, what in ((law, "law"), (tangent, "law_tangent")):
            if f is not None and not callable(f):
                raise ModelError(f"{who}: {what} = {f!r} is not callable; give a function f(angle, rate, t).")
        if axis is None and (law is not None or rest or preload):
            raise ModelError(f"{who}: rest, preload and law need an axis (the isotropic element has neither a rest "
                             "rotation nor a torque law); give axis=..., or leave them at their defaults.")
        if law is None:
            return
        if k or c or rest or preload:
            raise ModelError(f"{who}: law replaces stiffness, damping, rest and preload; leave those at their "
                             "defaults (write the linear terms into the law).")
        args.finite_law(law(0.0, 0.0, 0.0), who, "law(0.0, 0.0, 0.0)", "N m", "torque")
