"""Joint forces of the motion f(t, q, u) inside the compiled Newton step (docs/motion_forces.md §6).

Each force's function is compiled with numba (``numba.njit`` of the Python function) into a C
function, :func:`compile_motion`: ``one(which, t, q, u, held)`` is the force's value (which = 0) or
its tangent k or c (which = 1, 2; docs/motion_forces.md (M1), (M2)) at (t, q, u), by the given
``tangent`` (compiled too), the complex step (M4) or central differences (M5), with the arithmetic
of the force's Python reference (:class:`flexmb.motion_forces.MotionForce`); a sampled force (M6)
gives its held value. The compiled steps (flexmb/solvers/tree_step.py, element_step.py) take the C
functions' addresses as an integer array and call them through :func:`_call` (a numba intrinsic):
their own compiled and cached code serves every model, and the call costs what a model's arrays
cost (a first-class function argument would be typed in Python at every call, 60-300 µs). A model
without such forces passes none. A function numba cannot compile keeps the model in the Python
Newton loop, and the reason names the force and numba's error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from llvmlite import ir
from numba import cfunc, njit, types
from numba.extending import intrinsic

from flexmb.model import Model
from flexmb.motion_forces import HOLD_KEY
from flexmb.state import State

__all__ = ["MOTION_SIGNATURE", "compile_each", "compile_motion", "motion_inputs", "step_motion", "motion_evaluation",
           "add_motion_forces", "add_motion_diag", "with_motion_diag"]

#: The C signature of ``combined(i, which, t, q, u, held)``: force i's value (``which`` 0), stiffness (1) or
#: damping (2) at ``(t, q, u)``, with ``held`` its held value.
MOTION_SIGNATURE = types.float64(types.int64, types.float64, types.float64, types.float64, types.float64)


@intrinsic
def _call(typingctx, addr, which, t, x, v, held):
    """one(which, t, x, v, held) of the C function at address ``addr`` (MOTION_SIGNATURE)."""
    sig = types.float64(types.int64, types.int64, types.float64, types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.DoubleType(), [ir.IntType(64)] + [ir.DoubleType()] * 4)
        return builder.call(builder.inttoptr(args[0], fnty.as_pointer()), args[1:])

    return sig, codegen


def _source(mf: Any) -> str:
    """The C function's source for force ``mf``: the arithmetic of MotionForce.value and .tangent
    (docs/motion_forces.md (M2), (M4), (M5)); a sampled force's held value (M6)."""
    out = ["def one(which, t, x, v, held):"]
    if mf.sampled:
        return "\n".join(out + ["    return held if which == 0 else 0.0"]) + "\n"
    out += ["    if which == 0:", "        return f(t, x, v)"]
    if mf.tangent_function is not None:
        out += ["    return -g(t, x, v)[0] if which == 1 else -g(t, x, v)[1]"]
    elif mf.complex_step:
        out += ["    if which == 1:", "        return -(f(t, complex(x, 1e-30), v).imag / 1e-30)",
                "    return -(f(t, x, complex(v, 1e-30)).imag / 1e-30)"]
    else:
        out += ["    if which == 1:", "        h = 6e-6 * max(1.0, abs(x))",
                "        return -((f(t, x + h, v) - f(t, x - h, v)) / (2.0 * h))",
                "    h = 6e-6 * max(1.0, abs(v))",
                "    return -((f(t, x, v + h) - f(t, x, v - h)) / (2.0 * h))"]
    return "\n".join(out) + "\n"


def _compile(mf: Any) -> Any:
    """Force ``mf``'s C function (MOTION_SIGNATURE), compiled now: numba's errors raise here."""
    ns: dict[str, Any] = {}
    if not mf.sampled:
        ns["f"] = njit(error_model="numpy")(mf.force)
        if mf.tangent_function is not None:
            ns["g"] = njit(error_model="numpy")(mf.tangent_function)
    exec(_source(mf), ns)  # noqa: S102 - generated here; the user's functions are in its scope by name
    return cfunc(MOTION_SIGNATURE, error_model="numpy")(ns["one"])


def compile_each(items: Sequence[Any], names: Sequence[str], what: str,
                 compile_one: Callable[[Any], Any]) -> tuple[np.ndarray | None, str]:
    """The addresses (n,) of the C functions of ``items`` (user functions of the motion: joint forces here,
    node loads in flexmb/solvers/motion_load_step.py) and ``""``, or None and why not: the first item whose
    function numba does not compile, named ``<what> '<name>'`` with numba's error's first line. Each item
    keeps its C function, or that reason, in ``item.compiled`` (``compile_one(item)``, called once)."""
    for item, name in zip(items, names):
        if getattr(item, "compiled", None) is None:
            try:
                item.compiled = compile_one(item)
            except Exception as exc:  # numba's typing and lowering errors: reported, the Python loop takes the model
                first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
                item.compiled = f"{what} {name!r} does not compile with numba ({type(exc).__name__}: {first})"
        if isinstance(item.compiled, str):
            return None, item.compiled
    return np.array([item.compiled.address for item in items], dtype=np.int64), ""


def compile_motion(model: Model) -> tuple[np.ndarray | None, str]:
    """The addresses (n_mforce,) of the forces' C functions compiled with numba (MOTION_SIGNATURE) and ``""``,
    or None and why not: the first force whose function (or tangent) numba does not compile, with numba's
    error's first line (:func:`compile_each`). Each force keeps its C function (``MotionForce.compiled``), compiled once."""
    if not model.mforce_u.size:
        return None, ""
    return compile_each(model.mforce, [mf.name for mf in model.mforce], "joint force", _compile)


def motion_inputs(model: Model) -> tuple:
    """The tuple the compiled step takes for the forces of the motion (:func:`add_motion_forces`): (addresses
    (n,) of their C functions; (4, n) int64 [u index, q index, free flag, position among the free
    coordinates or -1]; held values (n,); out (3, n): (f, k, c) of the last evaluation; the time (1,))."""
    addr, _ = compile_motion(model)
    n = int(model.mforce_u.size) if addr is not None else 0
    idx = np.full((4, n), -1, dtype=np.int64)
    if n:
        mu, free = np.asarray(model.mforce_u), np.asarray(model.free_u)
        idx[0] = mu
        idx[1] = np.asarray(model.u_to_q)[mu]
        idx[2] = np.isin(mu, free)
        for i, j in enumerate(mu):
            idx[3, i] = int(np.flatnonzero(free == j)[0]) if idx[2, i] else -1
    return (addr if n else np.zeros(0, dtype=np.int64), idx, np.zeros(n), np.zeros((3, n)), np.zeros(1))


@njit(cache=True)
def add_motion_forces(motion, q, u, tau):
    """τ += f(t, q, u) of the forces of the motion (docs/motion_forces.md (M1)) at the time ``motion[4][0]``,
    their (f, k, c) left in ``motion[3]`` for :func:`add_motion_diag` (the Python step's Assembler.evaluate)."""
    addr, idx, hold, out, tm = motion
    t = tm[0]
    for i in range(idx.shape[1]):
        x, v = q[idx[1, i]], u[idx[0, i]]
        for which in range(3):
            out[which, i] = _call(addr[i], which, t, x, v, hold[i])
        tau[idx[0, i]] = tau[idx[0, i]] + out[0, i]


@njit(cache=True)
def add_motion_diag(motion, gp, bp, dg):
    """dg += γ' c + β' k on the free coordinates with forces of the motion (docs/motion_forces.md (M3)), from
    the last :func:`add_motion_forces`; ``dg`` over all coordinates."""
    addr, idx, hold, out, tm = motion
    for i in range(idx.shape[1]):
        if idx[2, i] > 0:
            dg[idx[0, i]] = dg[idx[0, i]] + (gp * out[2, i] + bp * out[1, i])


@njit(cache=True)
def with_motion_diag(motion, gp, bp, diag):
    """A copy of ``diag`` (over the free coordinates: the element step's) plus γ' c + β' k of the forces of the
    motion as :func:`add_motion_diag`."""
    addr, idx, hold, out, tm = motion
    dg = diag.copy()
    for i in range(idx.shape[1]):
        if idx[3, i] >= 0:
            dg[idx[3, i]] = dg[idx[3, i]] + (gp * out[2, i] + bp * out[1, i])
    return dg


def step_motion(motion: tuple, st: State, t1: float) -> None:
    """Set the compiled forces' inputs for a step from ``st`` ending at ``t1``: that time and the held
    values of the sampled forces at the step's start (docs/motion_forces.md (M6))."""
    motion[4][0] = t1
    hold = st.elements.get(HOLD_KEY) if st.elements else None
    if hold is not None and motion[2].size:
        motion[2][:] = hold[0]


def motion_evaluation(motion: tuple, n_u: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(f, k, c) over the coordinates of the last :func:`add_motion_forces`, as Assembler.evaluate gives them
    (``Evaluation.motion``); None without forces of the motion."""
    idx, out = motion[1], motion[3]
    if not idx.shape[1]:
        return None
    ev = (np.zeros(n_u), np.zeros(n_u), np.zeros(n_u))
    for r in range(3):
        ev[r][idx[0]] = out[r]
    return ev
