"""The builder's joint inputs and loads: drives (rheonomic coordinates), joint springs, applied
joint forces, bearing friction and nodal loads (part of :class:`~flexmb.builder.model_builder.ModelBuilder`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder.record_tables import RecordTables
from flexmb.builder.records import DriveSpec, FrictionSpec, JointForceSpec, LoadSpec, MotionLoadSpec, SpringSpec
from flexmb.errors import ModelError
from flexmb.motion_forces import MotionForce, force_arity
from flexmb.motion_loads import NODE_ARGS, NodeMotionLoad, load_arity

__all__ = ["DrivesAndLoads"]


class DrivesAndLoads(RecordTables):
    """``add_drive``, ``add_joint_spring``, ``add_joint_force``, ``add_joint_friction`` and
    ``add_load`` of the model builder."""

    def add_drive(
        self,
        joint: str,
        position: Callable[[float], float],
        velocity: Callable[[float], float] | None = None,
        acceleration: Callable[[float], float] | None = None,
        dof: int = 0,
    ) -> None:
        """Drive coordinate ``dof`` of ``joint`` (rheonomic): ``q(t) = position(t)``. Without
        ``velocity``/``acceleration`` the derivatives are computed (complex step). Each function
        takes the time and returns one number."""
        who = f"add_drive: drive of joint {joint!r}"
        jt = self._joint(joint, who)
        dof = self._check_dof(jt, dof, who)
        if (joint, dof) in self._drives:
            raise ModelError(f"{who}: coordinate {dof} of joint '{joint}' is already driven; drive it once.")
        d, _ = args.drive(((position, "position"), (velocity, "velocity"), (acceleration, "acceleration")), who,
                          "q, q', q''")
        self._drives[(joint, dof)] = DriveSpec(joint, dof, d)

    def add_joint_spring(
        self, joint: str, stiffness: float, damping: float = 0.0, rest: float = 0.0, dof: int = 0
    ) -> None:
        """Linear spring and damper on coordinate ``dof`` of ``joint``:
        ``tau = -stiffness (q - rest) - damping q'``. One per coordinate: a second on the same
        coordinate is refused (give the sum of the stiffnesses and dampings once)."""
        who = f"add_joint_spring: joint spring on {joint!r}"
        jt = self._joint(joint, who)
        dof = self._check_dof(jt, dof, who)
        if (joint, dof) in self._springs:
            raise ModelError(f"{who}: coordinate {dof} of joint '{joint}' already has a joint spring; give one spring "
                             "per coordinate (with the summed stiffness and damping).")
        k = args.number(stiffness, who, "stiffness", nonnegative=True)
        c = args.number(damping, who, "damping", nonnegative=True)
        r = args.number(rest, who, "rest")
        self._springs[(joint, dof)] = SpringSpec(joint, dof, k, c, r)

    def add_joint_force(
        self,
        joint: str,
        force: float | Callable[..., float],
        dof: int = 0,
        tangent: Callable[[float, float, float], tuple[float, float]] | None = None,
        period: float | None = None,
    ) -> None:
        """Applied generalized force on coordinate ``dof`` of ``joint`` (a force along a prismatic
        axis, a torque about a revolute axis): a number, a function of time ``force(t)``, or a
        function of the motion ``force(t, q, u)`` (q the coordinate, u its rate), told apart by the
        number of required positional parameters (docs/motion_forces.md). It enters tau of eq. (1)
        like a joint spring, and its work is reported as load work. On a driven coordinate the drive
        force is then what the actuator adds to it.

        For ``force(t, q, u)``: ``tangent(t, q, u) -> (df_dq, df_du)`` gives its tangents for the
        iteration matrix (docs/motion_forces.md (M3)); without it they are computed (complex step,
        else central differences: (M4), (M5)). ``period`` [s] makes it a sampled controller: computed
        from the state at t = 0, period, 2 period ... and held in between (M6)."""
        who = f"add_joint_force: joint force on {joint!r}"
        jt = self._joint(joint, who)
        dof = self._check_dof(jt, dof, who)
        if (joint, dof) in self._joint_forces:
            raise ModelError(f"{who}: coordinate {dof} of joint '{joint}' already has one; give their sum once.")
        arity = force_arity(force, who) if callable(force) else 0
        if arity != 3 and (tangent is not None or period is not None):
            raise ModelError(f"{who}: tangent and period are for a force of the motion force(t, q, u); "
                             f"this force is {'a function of time' if arity else 'a number'}.")
        if arity == 3:
            if tangent is not None and not callable(tangent):
                raise ModelError(f"{who}: tangent = {tangent!r} must be a function (t, q, u) -> (df_dq, df_du).")
            if period is not None:
                period = args.number(period, who, "period", positive=True)
            mf = MotionForce(f"{joint}[{dof}]", force, tangent, period)
            mf.check(who, 0.0, 0.0, 0.0)
            self._joint_forces[(joint, dof)] = JointForceSpec(joint, dof, _constant(0.0), mf)
            return
        if callable(force):
            f = args.time_function(force, (), who, "force")
        else:
            f = _constant(args.number(force, who, "force"))
        self._joint_forces[(joint, dof)] = JointForceSpec(joint, dof, f)

    def add_joint_friction(self, joint: str, mu: float, pin_radius: float, omega_eps: float = 1e-3) -> None:
        """Coulomb friction in the bearing of revolute ``joint`` (Zahariev & Cuadrado §1, §5): the
        torque -mu pin_radius |F_perp| tanh(q'/omega_eps) on its coordinate, F_perp the joint's
        reaction force normal to the axis (implicit in the accelerations); ``omega_eps`` [rad/s]
        regularises sign(q') near rest (flexmb/engine/friction.py, eq. 1, explains the choice)."""
        who = f"add_joint_friction: joint friction on {joint!r}"
        jt = self._joint(joint, who)
        if jt.kind.name != "revolute":
            raise ModelError(f"{who}: only revolute joints have a bearing model here "
                             f"(it is {jt.kind.name}); give a revolute joint.")
        if joint in self._frictions:
            raise ModelError(f"{who}: joint '{joint}' already has friction; give it once.")
        mu = args.number(mu, who, "mu", nonnegative=True)
        r = args.number(pin_radius, who, "pin_radius", positive=True)
        eps = args.number(omega_eps, who, "omega_eps", positive=True)
        self._frictions[joint] = FrictionSpec(joint, mu, r, eps)

    def add_load(
        self,
        name: str,
        node: str,
        force: Any = (0.0, 0.0, 0.0),
        moment: Any = (0.0, 0.0, 0.0),
        follower: bool = False,
        axes_node: str | None = None,
        tangent: Callable[..., Any] | None = None,
        period: float | None = None,
    ) -> str:
        """Nodal force and moment (constant 3-vectors or functions of time returning them);
        ``follower=True`` gives them in node axes so they turn with the node, or in the axes of
        ``axes_node`` when given (a load that turns with another node, e.g. a body's reference).

        A load of the motion: ``force(t, x, R, v, w)`` (five required positional parameters) of the
        node's global position x (3), rotation matrix R (3, 3, columns the node axes), velocity v (3)
        and angular velocity w (3, global axes), returning the force (3) or the force and the moment
        about the node origin (6), global axes (docs/motion_forces.md (M8)); ``moment``, ``follower``
        and ``axes_node`` are then not given. ``tangent(t, x, R, v, w)`` returns its derivatives
        ((3 or 6) x 12) by (x, θ, v, w) (M9); without it they are computed (complex step, else central
        differences: (M10), (M11)). ``period`` [s] makes it sampled: computed from the node's state at
        t = 0, period, 2 period ... and held in between (M15). The compiled Newton step compiles it with numba
        (docs/motion_forces.md §8)."""
        who = f"add_load: load {name!r}"
        self._check_new_name(name, self._loads, "load", "add_load")
        self._check_new_name(name, self._elements.get("motion_load", {}), "load", "add_load")
        self._node_index(node, who)
        arity = load_arity(force)
        if arity == len(NODE_ARGS):
            self._add_motion_load(name, node, force, moment, follower, axes_node, tangent, period, who)
            return name
        if arity is not None and arity > 1:
            raise ModelError(f"{who}: force takes {arity} required positional arguments; give a function of time "
                             "force(t) or a load of the motion force(t, x, R, v, w) (docs/motion_forces.md (M8)).")
        if tangent is not None or period is not None:
            raise ModelError(f"{who}: tangent and period are for a load of the motion force(t, x, R, v, w); this force is "
                             f"{'a function of time' if callable(force) else 'constant'}.")
        if load_arity(moment) == len(NODE_ARGS):
            raise ModelError(f"{who}: moment is a function of the motion; give force(t, x, R, v, w) returning the "
                             "force and the moment (6 numbers) instead (docs/motion_forces.md (M8)).")
        follower = args.flag(follower, who, "follower")
        if axes_node is not None:
            self._node_index(axes_node, f"{who} axes_node")
            if not follower:
                raise ModelError(f"{who}: axes_node is for follower loads; give follower=True or no axes_node.")
        f = args.time_function(force, (3,), who, "force")
        m = args.time_function(moment, (3,), who, "moment")
        self._loads[name] = LoadSpec(name, node, f, m, follower, axes_node)
        return name

    def _add_motion_load(self, name: str, node: str, force: Callable[..., Any], moment: Any, follower: Any,
                         axes_node: Any, tangent: Any, period: Any, who: str) -> None:
        """The load of the motion of :meth:`add_load`, checked at the node's pose at assembly."""
        if follower or axes_node is not None:
            raise ModelError(f"{who}: a load of the motion force(t, x, R, v, w) is in global axes (it reads R for its "
                             "own); give no follower or axes_node.")
        if callable(moment) or np.any(np.asarray(moment, dtype=float) != 0.0):
            raise ModelError(f"{who}: a load of the motion returns its moment with its force (6 numbers); give no "
                             f"moment (got {moment!r}).")
        if tangent is not None and not callable(tangent):
            raise ModelError(f"{who}: tangent = {tangent!r} must be a function (t, x, R, v, w) -> (3 or 6, 12) array.")
        if period is not None:
            period = args.number(period, who, "period", positive=True)
        spec = self._nodes[node]
        load = NodeMotionLoad(name, force, tangent, period)
        load.check(who, np.asarray(spec.position, dtype=float), np.asarray(spec.rotation, dtype=float))
        self._elements.setdefault("motion_load", {})[name] = MotionLoadSpec(name, node, load)


def _constant(value: float) -> Callable[[float], float]:
    """The function of time that always returns ``value``."""

    def f(t: float) -> float:
        return value

    return f
