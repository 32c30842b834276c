"""Node loads of the motion, ``f(t, x, R, v, w)`` (``ModelBuilder.add_load`` with such a function): the
``"motion_load"`` element family. Its equations, (M8)-(M15), are in docs/motion_forces.md §7; the loads'
values and tangents are flexmb/motion_loads.py (:class:`~flexmb.motion_loads.NodeMotionLoad`).

One node per element. ``evaluate`` calls each load at its node's global position, rotation, velocity
and angular velocity (M8), subtracts the wrench from the node's (the residual's sense: applied loads
are subtracted) and keeps its tangent; their power F·V is load work
(:attr:`FamilyEvaluation.load_power`). ``blocks`` gives the symmetric part of ck K + cc C, K = -∂F/∂(x, θ),
C = -∂F/∂(v, w) (M12). A sampled load (``period``, (M15)) gives the value held in
``State.elements["motion_load_hold"]`` (flexmb.motion_loads.sample_loads) and no tangent. This is the Python
reference; the compiled element step compiles the loads' functions with numba and does the same arithmetic
(flexmb/solvers/motion_load_step.py, docs/motion_forces.md §8, (M17)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements.family import ElementData, ElementFamily, FamilyEvaluation, NodeTable, Output, frozen_arrays, listing
from flexmb.errors import SolverError
from flexmb.motion_loads import LOAD_HOLD_KEY

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import MotionLoadSpec
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["MotionLoadData", "MotionLoadEvaluation", "MotionLoads", "FAMILY"]


@dataclass(frozen=True, eq=False)
class MotionLoadData(ElementData):
    """Compiled node loads of the motion (``Model.elements["motion_load"]``), docs/motion_forces.md (M8)."""

    node: np.ndarray  # node index each load acts on                                            (n_el)
    load: tuple = ()  # per element its flexmb.motion_loads.NodeMotionLoad (function and tangent) (n_el)


@dataclass
class MotionLoadEvaluation(FamilyEvaluation):
    """The loads at one state: the wrenches ``F`` (n_el, 6) [force, moment about the node origin],
    global axes (M8), and their tangents ``K`` = -∂F/∂(x, θ), ``C`` = -∂F/∂(v, w) (n_el, 6, 6) (M12)."""

    F: np.ndarray | None = None
    K: np.ndarray | None = None
    C: np.ndarray | None = None
    sampled_at: np.ndarray | None = None  # the time of the state each F was computed from (M15)     (n_el)


class MotionLoads(ElementFamily):
    """The ``"motion_load"`` family (module docstring)."""

    name = "motion_load"
    label = "load of the motion"
    plural = "loads of the motion"
    has_blocks = True
    loads = True
    outputs = (Output("wrench", ("fx", "fy", "fz", "mx", "my", "mz", "sampled_at"),
                      "force [N] and moment about the node origin [N m], global axes (docs/motion_forces.md (M8)), and "
                      "the time of the state it was computed from (a sampled load's sample, (M15))",
                      field="motion_loads", names_field="motion_load_names"),)

    def compile(self, records: Sequence[MotionLoadSpec], nodes: NodeTable) -> MotionLoadData:
        """The node index of each load; its NodeMotionLoad checked at the node's pose at assembly."""
        node = np.array([nodes.index(r.node, f"load of the motion '{r.name}'") for r in records], dtype=np.int64)
        return MotionLoadData(**frozen_arrays(dict(names=tuple(r.name for r in records), node=node,
                                                   load=tuple(r.load for r in records))))

    def element_nodes(self, data: MotionLoadData) -> np.ndarray:
        return np.asarray(data.node, dtype=np.int64).reshape(-1, 1)

    def dissipates(self, data: MotionLoadData) -> bool:
        """False: the loads' power is load work, not dissipation."""
        return False

    def evaluate(self, model: Model, data: MotionLoadData, prep: Any, state: State, kin: Kinematics, load_factor: float,
                 Mb: np.ndarray, w: np.ndarray) -> MotionLoadEvaluation:
        """Every load (M8) at its node's state into ``w`` (subtracted) with its tangent (M9)-(M11), scaled by
        ``load_factor`` (a sampled load: its held value, no tangent, (M15)); a SolverError names a load whose
        value or tangent is not finite."""
        n = data.n
        F, K, C = np.zeros((n, 6)), np.zeros((n, 6, 6)), np.zeros((n, 6, 6))
        power = 0.0
        hold = state.elements.get(LOAD_HOLD_KEY) if state.elements else None
        at = np.full(n, float(state.t))
        for e, i in enumerate(data.node):
            ld = data.load[e]
            if ld.sampled and hold is not None:  # the value held from the step's start, no tangent (M15)
                F[e], at[e] = load_factor * hold[e, :6], hold[e, 13]
                w[i] -= F[e]
                power += float(F[e] @ kin.V[i])
                continue
            args = (kin.x[i] + model.origin, kin.R[i], kin.V[i, :3], kin.V[i, 3:])  # global: origin-invariant
            F[e] = load_factor * ld.value(state.t, *args)
            T = load_factor * ld.tangent(state.t, *args)
            if not (np.all(np.isfinite(F[e])) and np.all(np.isfinite(T))):
                raise SolverError(f"t = {state.t:.6g}: load of the motion '{data.names[e]}' on node "
                                  f"'{model.node_names[i]}' gives {F[e].tolist()} (or a tangent) that is not finite "
                                  "(docs/motion_forces.md (M8))", state.t, hint="give a load finite over the motion")
            K[e], C[e] = -T[:, :6], -T[:, 6:]
            w[i] -= F[e]
            power += float(F[e] @ kin.V[i])
        return MotionLoadEvaluation(load_power=power, F=F, K=K, C=C, sampled_at=at)

    def blocks(self, model: Model, data: MotionLoadData, prep: Any, fe: MotionLoadEvaluation, kin: Kinematics,
               ck: float, cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """The symmetric part of ck K + cc C per load (M12); no mass."""
        E = ck * fe.K + cc * fe.C
        return 0.5 * (E + np.transpose(E, (0, 2, 1)))

    def output(self, model: Model, data: MotionLoadData, fe: MotionLoadEvaluation | None, name: str) -> np.ndarray:
        """``wrench``: (n_el, 7) force and moment (M8) and the time of the state they were computed from (M15)."""
        if name != "wrench":
            return super().output(model, data, fe, name)
        return np.zeros((0, 7)) if fe is None else np.concatenate([fe.F, fe.sampled_at[:, None]], axis=1)

    def describe(self, model: Model, data: MotionLoadData, limit: int) -> list[str]:
        def how(ld: Any) -> str:
            if ld.tangent_function is not None:
                return "given"
            return "by complex step" if ld.complex_step else "by central differences"

        rows = [f"  {name}: on node '{model.node_names[i]}', {'force and moment' if ld.n_out == 6 else 'force'} "
                f"f(t, x, R, v, w), tangent {how(ld)}" for name, i, ld in zip(data.names, data.node, data.load)]
        return ["loads of the motion (node loads f(t, x, R, v, w), docs/motion_forces.md §7):"] + listing(rows, limit)


#: the registered instance (flexmb.elements.FAMILIES["motion_load"])
FAMILY = MotionLoads()
