"""Joint forces of the motion f(t, q, u) inside the compiled Newton step (docs/motion_forces.md §6).

The user's functions are compiled with numba (``numba.njit`` of the Python function) into one
function per model, :func:`compile_motion`, that writes every force's value and tangents
(docs/motion_forces.md (M1), (M2)) at a state: the tangents by the given ``tangent`` (compiled too),
the complex step (M4) or central differences (M5), as the force's Python reference
(:class:`flexmb.motion_forces.MotionForce`) takes them; a sampled force (M6) gives its held value.
The compiled step (flexmb/solvers/tree_step.py) calls it through a numba first-class function of
one fixed signature, so its own compiled (and cached) code serves every model; a model without
such forces passes :data:`NO_MOTION`'s function, which writes nothing. A function numba cannot
compile keeps the model in the Python Newton loop, and the reason names the force and numba's error.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numba import njit, types
from numba.core.errors import NumbaExperimentalFeatureWarning

from flexmb.model import Model

__all__ = ["MOTION_SIGNATURE", "compile_motion", "motion_inputs", "add_motion_forces", "add_motion_diag"]

#: combined(t, q, u, hold, out): out (3, n_mforce) = (f, k, c) of every force at (t, q, u); hold: the held values
MOTION_SIGNATURE = types.void(types.float64, types.float64[::1], types.float64[::1], types.float64[::1],
                              types.float64[:, ::1])

# numba warns, at every compile of a kernel taking a first-class function, that the feature is experimental: the
# kernels here and in tree_step.py take one by design (module docstring); the warning says nothing to a user
warnings.filterwarnings("ignore", message="First-class function type feature is experimental",
                        category=NumbaExperimentalFeatureWarning)

_CACHE: dict[tuple, tuple[Any, str]] = {}  # the compiled function (or None) and why not, per model's forces


def _no_motion(t, q, u, hold, out):  # the function of a model without forces of the motion
    return


def _njit(fn: Any, signature: Any = None) -> Any:
    """``fn`` compiled by numba (with ``signature``: now, and as a first-class function of that type)."""
    return njit(signature)(fn) if signature is not None else njit(fn)


NO_MOTION = _njit(_no_motion, MOTION_SIGNATURE)


def _block(i: int, qi: int, ui: int, mf: Any) -> list[str]:
    """The combined function's lines for force ``i`` on q[qi], u[ui]: the arithmetic of MotionForce.value
    and .tangent (docs/motion_forces.md (M2), (M4), (M5)); a sampled force's held value (M6)."""
    if mf.sampled:
        return [f"    out[0, {i}] = hold[{i}]", f"    out[1, {i}] = 0.0", f"    out[2, {i}] = 0.0"]
    lines = [f"    x = q[{qi}]", f"    v = u[{ui}]", f"    out[0, {i}] = f{i}(t, x, v)"]
    if mf.tangent_function is not None:
        return lines + [f"    a, b = g{i}(t, x, v)", f"    out[1, {i}] = -a", f"    out[2, {i}] = -b"]
    if mf.complex_step:
        return lines + [f"    out[1, {i}] = -(f{i}(t, complex(x, 1e-30), v).imag / 1e-30)",
                        f"    out[2, {i}] = -(f{i}(t, x, complex(v, 1e-30)).imag / 1e-30)"]
    return lines + ["    h = 6e-6 * max(1.0, abs(x))",
                    f"    out[1, {i}] = -((f{i}(t, x + h, v) - f{i}(t, x - h, v)) / (2.0 * h))",
                    "    h = 6e-6 * max(1.0, abs(v))",
                    f"    out[2, {i}] = -((f{i}(t, x, v + h) - f{i}(t, x, v - h)) / (2.0 * h))"]


def _compile(blocks: list[list[str]], scope: dict[str, Any]) -> Any:
    """The combined function of ``blocks``, compiled now (numba's errors raise here)."""
    ns = dict(scope)
    src = "def combined(t, q, u, hold, out):\n" + "\n".join(ln for b in blocks for ln in b) + "\n    return\n"
    exec(src, ns)  # noqa: S102 - generated from the model's indices; the user's functions are in scope by name
    return _njit(ns["combined"], MOTION_SIGNATURE)


def compile_motion(model: Model) -> tuple[Any, str]:
    """The model's combined function compiled with numba (MOTION_SIGNATURE) and ``""``, or None and why
    not: the first force whose function (or tangent) numba does not compile, with numba's error's first
    line. Kept per model's forces: compiling takes a fraction of a second per force."""
    if not model.mforce_u.size:
        return NO_MOTION, ""
    key = tuple(id(mf) for mf in model.mforce) + tuple(int(j) for j in model.mforce_u)
    if key in _CACHE:
        return _CACHE[key][:2]
    u_to_q = np.asarray(model.u_to_q)
    scope: dict[str, Any] = {}
    blocks = []
    out: tuple[Any, str] | None = None
    for i, (j, mf) in enumerate(zip(model.mforce_u, model.mforce)):
        blocks.append(_block(i, int(u_to_q[j]), int(j), mf))
        if mf.sampled:
            continue
        scope[f"f{i}"] = _njit(mf.force)
        if mf.tangent_function is not None:
            scope[f"g{i}"] = _njit(mf.tangent_function)
        try:
            _compile([blocks[-1]], scope)
        except Exception as exc:  # numba's typing and lowering errors: reported, the Python loop takes the model
            first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
            out = (None, f"joint force {mf.name!r} does not compile with numba ({type(exc).__name__}: {first})")
            break
    if out is None:
        out = (_compile(blocks, scope), "")
    _CACHE[key] = out + (model.mforce,)  # the forces kept: the ids of the key stay theirs
    return out


def motion_inputs(model: Model) -> tuple:
    """The tuple the compiled step takes for the forces of the motion (:func:`add_motion_forces`):
    ((function,), (3, n) int64 [u index, free flag, 0], hold (n,), out (3, n), time (1,)); the function
    None when numba does not compile the model's forces (:func:`compile_motion`)."""
    fn, _ = compile_motion(model)
    n = int(model.mforce_u.size)
    idx = np.zeros((3, n), dtype=np.int64)
    idx[0] = model.mforce_u
    idx[1] = np.isin(np.asarray(model.mforce_u), np.asarray(model.free_u))
    return ((fn if fn is not None else NO_MOTION,), idx, np.zeros(n), np.zeros((3, n)), np.zeros(1))


@njit(cache=True)
def add_motion_forces(motion, q, u, tau):
    """τ += f(t, q, u) of the forces of the motion (docs/motion_forces.md (M1)) at the time ``motion[4][0]``,
    their (f, k, c) left in ``motion[3]`` for :func:`add_motion_diag` (the Python step's Assembler.evaluate)."""
    fns, idx, hold, out, tm = motion
    if idx.shape[1] == 0:
        return
    fns[0](tm[0], q, u, hold, out)
    for i in range(idx.shape[1]):
        tau[idx[0, i]] = tau[idx[0, i]] + out[0, i]


@njit(cache=True)
def add_motion_diag(motion, gp, bp, dg):
    """dg += γ' c + β' k on the free coordinates with forces of the motion (docs/motion_forces.md (M3)), from
    the last :func:`add_motion_forces`; ``dg`` over all coordinates."""
    fns, idx, hold, out, tm = motion
    for i in range(idx.shape[1]):
        if idx[1, i]:
            dg[idx[0, i]] = dg[idx[0, i]] + (gp * out[2, i] + bp * out[1, i])
