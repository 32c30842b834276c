"""Run a model in time: generalized-α steps, outputs (poses, drive forces, joint reactions,
energy balance) recorded into a :class:`~flexmb.result.Result`."""

from __future__ import annotations

import math
import time as _time
from collections.abc import Callable

import numpy as np

from .errors import SolverError
from .integrators import GeneralizedAlpha
from .result import Result
from .rotations import logm
from .state import State

__all__ = ["simulate"]


class _Recorder:
    def __init__(self, model, integ: GeneralizedAlpha) -> None:
        self.m = model
        self.integ = integ
        keys = ("t", "q", "u", "udot", "x", "R", "jp", "tw", "drive", "react", "T", "V", "it", "ef", "ee")
        self.rows: dict[str, list] = {k: [] for k in keys}
        self.work = {"dissipated": [0.0], "drive_work": [0.0], "load_work": [0.0]}
        self._prev_power: tuple[float, float, float] | None = None

    def _q_out(self, st: State) -> np.ndarray:
        m = self.m
        q = np.zeros(m.n_u)
        q[~m.u_is_ball] = st.q
        if m.n_ball:
            q[m.u_is_ball] = logm(st.balls).reshape(-1)
        return q

    def record(self, st: State, ev, iterations: int, h: float) -> None:
        m, asm = self.m, self.integ.asm
        r = ev.residual(st.udot)
        drive = r[m.driven] if m.driven.size else np.zeros(0)
        T, V = asm.energies(ev, st)
        p_diss = float(np.sum(m.spring_c * st.u[m.spring_u] ** 2)) if m.spring_u.size else 0.0
        p_diss += ev.element_dissipation
        p_drive = float(np.dot(drive, st.u[m.driven])) if m.driven.size else 0.0
        p_load = float(np.sum(ev.loads * ev.kin.V))
        if m.jforce_u.size:  # applied joint forces work like loads
            p_load += float(np.dot([f(st.t) for f in m.jforce_f], st.u[m.jforce_u]))
        if self._prev_power is not None:
            for key, p, p0 in zip(("dissipated", "drive_work", "load_work"), (p_diss, p_drive, p_load), self._prev_power):
                self.work[key].append(self.work[key][-1] + 0.5 * h * (p + p0))
        self._prev_power = (p_diss, p_drive, p_load)
        R = self.rows
        R["t"].append(st.t)
        R["q"].append(self._q_out(st))
        R["u"].append(st.u.copy())
        R["udot"].append(st.udot.copy())
        R["x"].append(ev.kin.x)
        R["R"].append(ev.kin.R)
        R["jp"].append(ev.kin.joint_point)
        R["tw"].append(ev.kin.V)
        R["drive"].append(drive)
        R["react"].append(asm.reactions(ev, st.udot))
        R["T"].append(T)
        R["V"].append(V)
        R["it"].append(iterations)
        nb = len(m.beam_names)
        R["ef"].append(ev.beam_forces if nb else np.zeros((0, 6)))
        R["ee"].append(ev.beam_energy if nb else np.zeros(0))

    def result(self, status: str, stats: dict) -> Result:
        m, R = self.m, self.rows
        n = len(R["t"])
        energy = {"kinetic": np.array(R["T"]), "potential": np.array(R["V"])}
        for k, v in self.work.items():
            energy[k] = np.array(v[:n])
        return Result(
            t=np.array(R["t"]), q=np.array(R["q"]).reshape(n, m.n_u), u=np.array(R["u"]).reshape(n, m.n_u),
            udot=np.array(R["udot"]).reshape(n, m.n_u), x=np.array(R["x"]).reshape(n, m.n_nodes, 3),
            R=np.array(R["R"]).reshape(n, m.n_nodes, 3, 3), joint_points=np.array(R["jp"]).reshape(n, m.n_joints, 3),
            twists=np.array(R["tw"]).reshape(n, m.n_nodes, 6),
            drive_forces=np.array(R["drive"]).reshape(n, m.driven.size),
            reactions=np.array(R["react"]).reshape(n, m.n_joints, 6), energy=energy,
            newton_iterations=np.array(R["it"], dtype=int), coordinate_names=m.coordinate_names,
            node_names=m.node_names, joint_names=m.joint_names,
            driven_names=tuple(m.coordinate_names[k] for k in m.driven), status=status, stats=stats,
            element_forces=np.array(R["ef"]).reshape(n, len(m.beam_names), 6),
            element_energy=np.array(R["ee"]).reshape(n, len(m.beam_names)), element_names=m.beam_names,
        )


def simulate(
    model,
    t_end: float,
    dt: float,
    rho_inf: float = 0.9,
    output_every: int = 1,
    rtol: float = 1e-10,
    max_halvings: int = 10,
    state: State | None = None,
    raise_on_failure: bool = False,
    callback: Callable[[State, object], None] | None = None,
) -> Result:
    """Integrate ``model`` from its initial state (or ``state``) to ``t_end`` with step ``dt``.

    Records every ``output_every``-th step. On a Newton failure the steps computed so far are
    returned with ``status`` saying why (or the SolverError is raised if ``raise_on_failure``).
    ``result.stats`` holds wall time, steps, Newton iterations, factorizations, symbolic
    analyses and the time split (assembly, factorization, solve).
    """
    for v, what in ((t_end, "t_end"), (dt, "dt")):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{what} = {v!r} must be a positive finite number")
    wall0 = _time.perf_counter()
    integ = GeneralizedAlpha(model, rho_inf=rho_inf, rtol=rtol, max_halvings=max_halvings)
    st = model.initial_state() if state is None else state.copy()
    st, ev = integ.initial_acceleration(st)
    a = st.udot.copy()
    rec = _Recorder(model, integ)
    rec.record(st, ev, 0, dt)
    n_steps = int(round(t_end / dt))
    status = "finished"
    total_it = total_fac = 0
    for i in range(1, n_steps + 1):
        try:
            st, a, ev, info = integ.advance(st, a, dt)
        except SolverError as exc:
            status = f"failed: {exc}"
            if raise_on_failure:
                raise
            break
        total_it += info.iterations
        total_fac += info.factorizations
        if callback is not None:
            callback(st, ev)
        if i % output_every == 0 or i == n_steps:
            rec.record(st, ev, info.iterations, dt * (1 if not rec.rows["t"] else (st.t - rec.rows["t"][-1]) / dt))
    wall = _time.perf_counter() - wall0
    stats = {
        "wall_time": wall, "steps": float(i if n_steps else 0), "newton_iterations": float(total_it),
        "factorizations": float(integ.chol.n_factorize if integ.chol else 0),
        "symbolic_analyses": float(integ.chol.n_analyze if integ.chol else 0),
        "modified_newton_steps": float(integ.modified_newton),
        **{f"time_{k}": v for k, v in integ.timings.items()},
    }
    return rec.result(status, stats)
