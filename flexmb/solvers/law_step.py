"""Spring-damper force laws F(l, l', t) inside the compiled element step (docs/spring_damper.md (S12), (S13)).

Each law is compiled with numba (``numba.njit`` of the Python function, and of its given tangent) into
a C function of flexmb/solvers/motion_step.py's kind (MOTION_SIGNATURE, called through its intrinsic
``_call``): ``one(which, l, l', t, 0)`` is the law's value (which = 0), ∂F/∂l (1) or ∂F/∂l' (2) with the
arithmetic of the Python reference (flexmb.elements.spring_damper.law_value, law_tangent): the given
tangent, else the complex step of flexmb.timefunctions.derivative where numba types the law's value of
a complex argument as complex (falling back to its Richardson central differences where that value is
not finite, as the reference does), else those central differences. A force actuator's f(t, l, l')
(ModelBuilder.add_actuator(..., force=f)) is compiled with its own argument order. The compiled
iterate (:func:`spring_damper_laws_iterate`) evaluates the laws after the linear elements, in the
reference's order, into the tensions, the wrenches and the tangents k, c of the blocks. A law numba
does not compile keeps the model in the Python Newton loop, and the reason names the element.
"""

from __future__ import annotations

import cmath
import types as pytypes
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import cfunc, njit, types

from flexmb.elements.spring_damper import SpringDamperData, law_failure, law_tangent, law_value, too_short
from flexmb.elements.spring_damper_kernels import spring_damper_forces
from flexmb.errors import SolverError
from flexmb.model import Model
from flexmb.solvers.motion_step import MOTION_SIGNATURE, _call

__all__ = ["compile_torque_laws", "compile_laws", "law_refusal", "has_laws", "spring_arrays", "spring_outputs",
           "spring_damper_laws_iterate", "spring_failure", "SPRING_POWER", "SPRING_FLAGS"]

SPRING_POWER, SPRING_FLAGS = 8, 9  # positions in a step's spring-damper outputs (spring_outputs; FamilyOutputs.spring_damper)

#: per spring-damper data: (the laws' C functions' addresses (n_law,) or None, why not); compiled once
_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_C, _R = types.complex128, types.float64


def has_laws(model: Model) -> bool:
    """Whether the model has spring-dampers with a force law (force actuators included)."""
    sd = model.elements.get("spring_damper")
    return sd is not None and sd.laws is not None and bool(sd.laws.size)


def _complex_result(disp: Any, sig: tuple) -> bool:
    """Whether numba types ``disp`` at ``sig`` (one complex argument) with a complex value: the
    complex step then, else central differences (the reference's choice where f does not carry it)."""
    try:
        disp.compile(sig)
    except Exception:  # numba's typing errors (a comparison, min, math of a complex): central differences
        return False
    return isinstance(disp.overloads[sig].signature.return_type, types.Complex)


def _difference(z: str, call: str) -> list[str]:
    """The source of the complex step (if ``z``) and the Richardson central differences of
    flexmb.timefunctions.derivative in the argument ``x`` of the law ``call`` (with ``{}`` for it)."""
    out = []
    if z:
        out += [f"        z = {call.format('complex(x + 0.0, 1e-30)')}", "        if cmath.isfinite(z):",
                "            return z.imag / 1e-30"]
    return out + ["        h = 1e-3 * max(1.0, abs(x))", "        s = h / 2",
                  f"        d0 = ({call.format('x + h')} - {call.format('x - h')}) / (2 * h)",
                  f"        d1 = ({call.format('x + s')} - {call.format('x - s')}) / (2 * s)",
                  "        return (4 * d1 - d0) / 3"]


def _jit(fn: Any, done: dict) -> Any:
    """``fn`` compiled by numba, the plain Python functions it calls by a global or a closure's name (a
    helper, the law a tangent tests) compiled with it: numba calls compiled functions only."""
    if not isinstance(fn, pytypes.FunctionType):
        return njit(error_model="numpy")(fn)
    if fn in done:
        return done[fn]
    names = {n: v for n, v in fn.__globals__.items() if n in fn.__code__.co_names and isinstance(v, pytypes.FunctionType)}
    cells = fn.__closure__ or ()
    if any(isinstance(c.cell_contents, pytypes.FunctionType) for c in cells):
        cells = tuple(pytypes.CellType(_jit(c.cell_contents, done)) if isinstance(c.cell_contents, pytypes.FunctionType)
                      else c for c in cells)
    scope = {**fn.__globals__} if names else fn.__globals__
    done[fn] = njit(error_model="numpy")(pytypes.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                                                               cells or None))
    for n, v in names.items():  # numba reads them when it compiles (lazily, at the first call)
        scope[n] = _jit(v, done)
    return done[fn]


def _compile(data: SpringDamperData, e: int) -> Any:
    """Element ``e``'s C function (MOTION_SIGNATURE: which, l, l', t, unused), compiled now: numba's errors raise here."""
    law, tangent = data.law[e], data.law_tangent[e]
    actuator = bool(getattr(data, "actuator", ()) and data.actuator[e])
    done: dict = {}
    f = _jit(law.force if actuator else law, done)
    args = "(t, {l}, {v})" if actuator else "({l}, {v}, t)"
    ns: dict[str, Any] = {"f": f, "cmath": cmath}
    src = ["def one(which, l, v, t, held):", "    if which == 0:", "        return f" + args.format(l="l", v="v")]
    if tangent is not None:
        ns["g"] = _jit(tangent, done)
        src += ["    return g(l, v, t)[0] if which == 1 else g(l, v, t)[1]"]
    else:
        sig_l, sig_v = ((_R, _C, _R), (_R, _R, _C)) if actuator else ((_C, _R, _R), (_R, _C, _R))
        src += ["    if which == 1:", "        x = l"] + _difference("z" if _complex_result(f, sig_l) else "",
                                                             "f" + args.format(l="{}", v="v"))
        src += ["    else:", "        x = v"] + _difference("z" if _complex_result(f, sig_v) else "",
                                                          "f" + args.format(l="l", v="{}"))
    exec("\n".join(src) + "\n", ns)  # noqa: S102 - generated here; the user's functions are in its scope by name
    one = cfunc(MOTION_SIGNATURE, error_model="numpy")(ns["one"])
    if tangent is None:
        _check(data, e, one)
    return one


def _check(data: SpringDamperData, e: int, one: Any) -> None:
    """A ValueError where the compiled tangents of element ``e``'s law differ from the Python reference's
    (law_tangent) by more than round-off at sample states around its length at assembly: numba's complex
    power z**n (by polar form) does not carry the complex step where Python's (by products) does."""
    l0 = float(data.length0[e]) if hasattr(data, "length0") else 1.0  # a torque law: angles about 1 rad
    for l in (l0, 0.5 * l0, 0.9 * l0, 1.1 * l0, 2.0 * l0):
        for v in (0.0, 0.3 * l0, -0.3 * l0):
            try:
                ref = law_tangent(data, e, l, v, 0.0)
            except Exception:  # the law is not defined there (Python raises): nothing to compare
                continue
            got = (_value(one.address, 1, l, v), _value(one.address, 2, l, v))
            for r, g, what in zip(ref, got, ("l", "l'")):
                if np.isfinite(r) and not abs(g - r) <= 1e-8 * max(abs(r), abs(g)):
                    raise ValueError(f"its tangent dF/d{what} compiled is {g:.6g} where Python's is {r:.6g} (l = {l:.4g}, "
                                     f"l' = {v:.4g}): write powers of a complex step as products (x*x*x, not x**3) or "
                                     "give force_law_tangent")


@njit
def _value(addr, which, l, v):
    """The C function at ``addr`` at (l, l', t = 0): its value (which 0) or tangent (1, 2)."""
    return _call(addr, which, l, v, 0.0, 0.0)


def compile_laws(model: Model) -> tuple[np.ndarray | None, str]:
    """The addresses (n_law,) of the force laws' C functions in the order of ``laws`` and ``""``, or None
    and why not: the first element whose law (or tangent) numba does not compile, with numba's error's
    first line. Compiled once per model (the C functions are kept with the spring-dampers' data)."""
    sd = model.elements.get("spring_damper")
    if not has_laws(model):
        return np.zeros(0, dtype=np.int64), ""
    return _compiled_laws(sd, lambda e: ("force actuator {!r}: its force f(t, l, l')" if sd.actuator and sd.actuator[e]
                                         else "spring-damper {!r}: its force law").format(sd.names[e]))


def _compiled_laws(data: Any, what: Callable[[Any], str]) -> tuple[np.ndarray | None, str]:
    """The addresses of the C functions of the laws ``data.laws`` (compiled once per data and kept in
    _COMPILED) and ``""``, or None and why not: the first law numba does not compile, ``what(e)`` naming
    its element e, with the first line of numba's error."""
    if data not in _COMPILED:
        funcs, why = [], ""
        for e in data.laws:
            try:
                funcs.append(_compile(data, int(e)))
            except Exception as exc:  # numba's typing and lowering errors: reported, the Python loop takes the model
                lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.startswith("Failed in")]
                why = f"{what(e)} does not compile with numba ({type(exc).__name__}: {lines[0] if lines else ''})"
                break
        _COMPILED[data] = (None, why, ()) if why else (np.array([f.address for f in funcs], dtype=np.int64), "", funcs)
    addr, why, _ = _COMPILED[data]
    return addr, why


def compile_torque_laws(model: Model) -> tuple[np.ndarray | None, str]:
    """The addresses (n_law,) of the rotational spring-dampers' torque laws' C functions (the force laws'
    MOTION_SIGNATURE, with (φ, φ', t) for (l, l', t); docs/rotational_spring_damper.md (R15)) in the order of their
    ``laws`` and ``""``, or None and why not (the first law numba does not compile). Compiled once per model."""
    d = model.elements.get("rotational_spring_damper")
    if d is None or d.laws is None or not d.laws.size:
        return np.zeros(0, dtype=np.int64), ""
    return _compiled_laws(d, lambda e: f"rotational spring-damper {d.names[e]!r}: its torque law")


def law_refusal(model: Model) -> str:
    """Why the compiled element step refuses the model's force laws: the law numba does not compile, or ``""``."""
    return (compile_laws(model)[1] if has_laws(model) else "") or compile_torque_laws(model)[1]


def spring_arrays(model: Model, prep: tuple[np.ndarray, np.ndarray], time: np.ndarray) -> tuple:
    """The spring-dampers' arrays of the compiled iterates: (ia, ib, sa, sb, k, c, L0, F0, l_min, the laws'
    addresses (n_law,), their elements (n_law,), the time (1,): the step's, ``time``, set by step_motion)."""
    sd = model.elements["spring_damper"]
    addr = compile_laws(model)[0]
    laws = np.array(sd.laws if has_laws(model) and addr is not None else (), dtype=np.int64)  # writable: one signature
    return (*prep, sd.sa, sd.sb, sd.k, sd.c, sd.L0, sd.F0, sd.l_min,
            addr if addr is not None else np.zeros(0, dtype=np.int64), laws, time)


def spring_outputs(spring: tuple) -> tuple:
    """New arrays for a step's spring-damper iterates: (G, nv, ra, rb, l, l', F, energy, power, flags (2,): the
    failing element or -1 and 1 where its law's value is not finite, k, c: the blocks' tangents)."""
    ns = spring[0].size
    return (*(np.empty(s) for s in ((ns, 12), (ns, 3), (ns, 3), (ns, 3), ns, ns, ns, ns, ns)), np.zeros(2),
            np.array(spring[4], dtype=float), np.array(spring[5], dtype=float))


@njit(cache=True)
def spring_damper_laws_iterate(x, R, V, spring, out, w):
    """The spring-dampers of a compiled Newton iterate (SpringDampers.evaluate, same arithmetic): the linear
    elements (spring_damper_forces), then each force law at (l, l', t) into F, the power F l', the wrenches
    (S5) and the tangents k, c (S13). ``flags`` = (the first element below l_min (S11) or whose law is not
    finite, or -1; 1.0 for a law)."""
    ia, ib, sa, sb, k, c, L0, F0, lmin, addr, laws, tm = spring
    G, nv, ra, rb, l, ldot, F, energy, power, flags, kk, cc = out
    short = spring_damper_forces(x, R, V, spring, w, out)
    flags[0], flags[1] = float(short), 0.0
    if short >= 0:
        return
    t = tm[0]
    for i in range(laws.size):
        e = laws[i]
        f = _call(addr[i], 0, l[e], ldot[e], t, 0.0)
        if not np.isfinite(f):
            flags[0], flags[1] = float(e), 1.0
            return
        kk[e] = _call(addr[i], 1, l[e], ldot[e], t, 0.0)
        cc[e] = _call(addr[i], 2, l[e], ldot[e], t, 0.0)
        F[e] = f
        power[e] = f * ldot[e]
        for j in range(6):  # (S5); row N (ground) is discarded
            w[ia[e], j] += G[e, j] * f
        for j in range(6):
            w[ib[e], j] += G[e, 6 + j] * f


def spring_failure(data: SpringDamperData, out: tuple, t: float) -> SolverError:
    """The SolverError of a failed spring-damper iterate (``out`` of spring_damper_laws_iterate): the element
    shorter than its l_min (S11), or the law whose value is not finite, named as the Python step names them."""
    return law_failure(out[SPRING_FLAGS], lambda e: too_short(data, e, float(out[4][e]), t),
                       lambda e: law_value(data, e, float(out[4][e]), float(out[5][e]), t),
                       lambda e: f"spring-damper '{data.names[e]}': its force law compiled with numba is not finite at "
                       f"length {out[4][e]:.6g} m, rate {out[5][e]:.6g} m/s (docs/spring_damper.md (S12))", t)
