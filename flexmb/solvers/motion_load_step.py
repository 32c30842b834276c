"""Node loads of the motion f(t, x, R, v, w) and follower loads inside the compiled steps (docs/motion_forces.md §8).

A load of the motion (elements/motion_load.py, flexmb/motion_loads.py) is a user's Python function. As for the
joint forces of the motion (flexmb/solvers/motion_step.py), :func:`compile_node_loads` compiles it with numba into a
C function ``one(which, t, inp, out)`` of the node's state ``inp`` = (x, R row by row, v, w) (18 numbers): which = 0
writes the wrench (6) into ``out[0:6]``, which = 1 the tangent ∂(force, moment)/∂(x, θ, v, w) (6 x 12, row by row)
into ``out[6:78]``, with the arithmetic of :class:`flexmb.motion_loads.NodeMotionLoad`: the given ``tangent``
(compiled too), the complex step (M10; a column that is not finite by central differences, as the reference) or
central differences (M11), eq. (M17). The compiled element step calls these functions through their addresses
(:func:`node_loads_iterate`), subtracts the wrenches from the node wrenches after the other families (the registry
puts the family last), and scatters the symmetric part of β' K + γ' C (M12) into the iteration matrix after the
other families' blocks (:func:`node_load_blocks`), so a step is the same bit for bit as the Python family's (where
numba's arithmetic of the user's function is numpy's: (M18)). A sampled load (M15) gives its held value, no tangent.

Follower loads (``add_load(..., follower=True)``: a force and moment in the axes of a node, functions of time) are
turned by the node's rotation at every iterate (:func:`follower_wrenches`, eq. (M19)) inside the tree's evaluation
(flexmb/solvers/tree_step.py ``_evaluate``), so the compiled tree step and the compiled element step both take
them; as in the Python evaluation (elements/loads.py) they carry no tangent.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.extending import intrinsic

from flexmb.engine.iteration_matrix import _scatter_elements
from flexmb.errors import SolverError
from flexmb.model import Model
from flexmb.motion_loads import LOAD_HOLD_KEY
from flexmb.solvers.motion_step import compile_each
from flexmb.state import State

__all__ = ["LOAD_SIGNATURE", "compile_node_loads", "node_load_refusal", "node_load_inputs", "follower_inputs",
           "step_node_loads", "node_loads_iterate", "node_load_blocks", "node_load_matrix", "follower_wrenches",
           "node_load_evaluation", "node_load_check", "node_load_failure"]

#: one(which, t, inp, out): a load's wrench (which 0) or tangent (1) at the node state inp (18,) into out (78,)
LOAD_SIGNATURE = types.float64(types.int64, types.float64, types.CPointer(types.float64), types.CPointer(types.float64))
_CS = 1e-30  # the complex step (M10), flexmb.motion_loads._CS
N_IN, N_OUT = 18, 78


@intrinsic
def _call_load(typingctx, addr, which, t, inp, out):
    """one(which, t, inp, out) of the C function at address ``addr`` (LOAD_SIGNATURE), on the arrays' data."""
    sig = types.float64(types.int64, types.int64, types.float64, inp, out)

    def codegen(context, builder, signature, args):
        dptr = ir.DoubleType().as_pointer()
        a_in = context.make_array(signature.args[3])(context, builder, args[3])
        a_out = context.make_array(signature.args[4])(context, builder, args[4])
        fnty = ir.FunctionType(ir.DoubleType(), [ir.IntType(64), ir.DoubleType(), dptr, dptr])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        return builder.call(fn, [args[1], args[2], builder.bitcast(a_in.data, dptr), builder.bitcast(a_out.data, dptr)])

    return sig, codegen


@njit
def _sr(R, j, a, b):
    """([e_j]× R)[a, b] (M9): the rows of R a rotation about axis j moves, with the product's signs."""
    if j == 0:
        return 0.0 if a == 0 else (-R[2, b] if a == 1 else R[1, b])
    if j == 1:
        return R[2, b] if a == 0 else (0.0 if a == 1 else -R[0, b])
    return -R[1, b] if a == 0 else (R[0, b] if a == 1 else 0.0)


@njit
def _value(f, n_out, t, x, R, v, w, o):
    """The wrench (M8) into o[0:6] (NodeMotionLoad.value: the moment zero for a force alone)."""
    r = np.asarray(f(t, x, R, v, w)).ravel()
    for j in range(6):
        o[j] = 0.0
    for j in range(n_out):
        o[j] = r[j].real


@njit
def _fd_column(f, n_out, t, x, R, v, w, k, o):
    """Column k of the tangent by central differences (M11) into o[6 + 12 r + k] (NodeMotionLoad.tangent)."""
    blk, j = k // 3, k % 3
    if blk == 1:
        h = 6e-6 * 1.0
    else:
        arg = x if blk == 0 else (v if blk == 2 else w)
        h = 6e-6 * max(1.0, float(np.abs(arg).max()))
    vals = np.zeros((2, n_out))
    for s in range(2):
        d = h if s == 0 else -h
        xp, Rp, vp, wp = x.copy(), R.copy(), v.copy(), w.copy()
        if blk == 0:
            xp[j] += d
        elif blk == 1:
            for a in range(3):
                for b in range(3):
                    Rp[a, b] = R[a, b] + d * _sr(R, j, a, b)
        elif blk == 2:
            vp[j] += d
        else:
            wp[j] += d
        r = np.asarray(f(t, xp, Rp, vp, wp)).ravel()
        for m in range(n_out):
            vals[s, m] = r[m].real
    for m in range(n_out):
        o[6 + 12 * m + k] = (vals[0, m] - vals[1, m]) / (2 * h)


@njit
def _tangent_fd(f, n_out, t, x, R, v, w, o):
    """The tangent (M9) by central differences (M11) into o[6:78] (rows n_out.. zero)."""
    o[6:] = 0.0
    for k in range(12):
        _fd_column(f, n_out, t, x, R, v, w, k, o)


@njit
def _tangent_cs(f, n_out, t, x, R, v, w, o):
    """The tangent (M9) by the complex step (M10) into o[6:78]; a column whose value is not finite by central
    differences (NodeMotionLoad._complex_column gives None)."""
    o[6:] = 0.0
    for k in range(12):
        blk, j = k // 3, k % 3
        xc, Rc, vc, wc = x.astype(np.complex128), R.astype(np.complex128), v.astype(np.complex128), w.astype(np.complex128)
        if blk == 0:
            xc[j] = complex(x[j], _CS)
        elif blk == 1:
            for a in range(3):
                for b in range(3):
                    Rc[a, b] = complex(R[a, b], _CS * _sr(R, j, a, b))
        elif blk == 2:
            vc[j] = complex(v[j], _CS)
        else:
            wc[j] = complex(w[j], _CS)
        r = np.asarray(f(t, xc, Rc, vc, wc)).ravel()
        ok = True
        for m in range(r.size):
            ok = ok and np.isfinite(r[m].real) and np.isfinite(r[m].imag)
        if not ok:
            _fd_column(f, n_out, t, x, R, v, w, k, o)
            continue
        for m in range(n_out):
            o[6 + 12 * m + k] = r[m].imag / _CS


@njit
def _tangent_given(g, n_out, t, x, R, v, w, o):
    """The given tangent(t, x, R, v, w) (n_out, 12) into o[6:78]."""
    o[6:] = 0.0
    r = np.asarray(g(t, x, R, v, w)).ravel()
    for m in range(n_out * 12):
        o[6 + m] = float(r[m])


_TANGENT = {"given": "_tangent_given(g", "cs": "_tangent_cs(f", "fd": "_tangent_fd(f"}


def _mode(ld: Any, fj: Any) -> str:
    """How the compiled load forms its tangent: ``given``, ``cs`` (the complex step, where the reference takes it and
    the function compiles for complex input and returns complex values) or ``fd`` (central differences)."""
    if ld.tangent_function is not None:
        return "given"
    if not ld.complex_step:
        return "fd"
    z = np.zeros(3, dtype=complex)
    try:
        val = np.asarray(fj(0.0, z + 0.1, np.eye(3, dtype=complex), z, z))
    except Exception:  # numba's typing error for complex input: the reference's complex step fails there too
        return "fd"
    return "cs" if np.iscomplexobj(val) else "fd"


def _compile(ld: Any) -> Any:
    """Load ``ld``'s C function (LOAD_SIGNATURE), compiled now: numba's errors raise here."""
    ns: dict[str, Any] = {"carray": carray, "np": np, "_value": _value, "_tangent_given": _tangent_given,
                          "_tangent_cs": _tangent_cs, "_tangent_fd": _tangent_fd}
    ns["f"] = fj = njit(error_model="numpy")(ld.force)
    x, z = np.zeros(3), np.zeros(3)
    fj(0.0, x, np.eye(3), z, z)  # typing errors of the real function raise here, named
    if ld.tangent_function is not None:
        ns["g"] = njit(error_model="numpy")(ld.tangent_function)
    src = ("def one(which, t, inp, out):\n"
           f"    a = carray(inp, ({N_IN},))\n    o = carray(out, ({N_OUT},))\n"
           "    x, R, v, w = a[0:3].copy(), a[3:12].copy().reshape((3, 3)), a[12:15].copy(), a[15:18].copy()\n"
           f"    if which == 0:\n        _value(f, {ld.n_out}, t, x, R, v, w, o)\n"
           f"    else:\n        {_TANGENT[_mode(ld, fj)]}, {ld.n_out}, t, x, R, v, w, o)\n    return 0.0\n")
    exec(src, ns)  # noqa: S102 - generated here; the user's functions are in its scope by name
    return cfunc(LOAD_SIGNATURE, error_model="numpy")(ns["one"])


def compile_node_loads(model: Model) -> tuple[np.ndarray | None, str]:
    """The addresses (n_el,) of the loads of the motion's C functions (LOAD_SIGNATURE) and ``""``, or None and why
    not: the first load whose function (or tangent) numba does not compile, with numba's error's first line. Each
    load keeps its C function (``NodeMotionLoad.compiled``), compiled once."""
    data = model.elements.get("motion_load")
    if data is None or not data.n:
        return np.zeros(0, dtype=np.int64), ""
    return compile_each(data.load, data.names, "load of the motion", _compile)


def node_load_refusal(model: Model) -> str:
    """Why the compiled steps do not take ``model``'s loads of the motion (a function numba does not compile), or ""."""
    return compile_node_loads(model)[1]


def node_load_inputs(model: Model) -> tuple:
    """The tuple the compiled element step takes for the loads of the motion (:func:`node_loads_iterate`): (addresses
    (n,), nodes (n,), sampled (n,) flags, held wrenches (n, 6), the model's origin (3,), the step's time (1,), the
    node state (18,) and C output (78,) buffers, F (n, 6), K and C (n, 6, 6), flags (2,): [the load not finite or -1,
    the holds given]); empty arrays without loads of the motion or where one does not compile."""
    addr, _ = compile_node_loads(model)
    data = model.elements.get("motion_load")
    n = int(data.n) if data is not None and addr is not None else 0
    # a copy: the model's node array is read-only, numba would type it apart from the empty array of a model without
    # these loads and compile every kernel of the step once more for it (minutes at the first run)
    node = np.array(data.node, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
    sampled = np.array([ld.sampled for ld in data.load] if n else [], dtype=np.int64)
    return (addr if n else np.zeros(0, dtype=np.int64), node, sampled, np.zeros((n, 6)),
            np.asarray(model.origin, dtype=float).copy(), np.zeros(1), np.zeros(N_IN), np.zeros(N_OUT), np.zeros((n, 6)),
            np.zeros((n, 6, 6)), np.zeros((n, 6, 6)), np.array([-1.0, 0.0]))


def follower_inputs(model: Model) -> tuple:
    """The tuple :func:`follower_wrenches` takes: (nodes (n_l,), the node whose axes turn each load or -1 for a fixed
    one (n_l,), the loads' values (n_l, 6) at the step's time (:func:`step_node_loads`)), over every nodal load in
    order; empty where no load is a follower (the step's nodal loads then stay those of CompiledStep.inputs)."""
    loads = model.loads if any(ld.follower for ld in model.loads) else ()
    node = np.array([ld.node for ld in loads], dtype=np.int64)
    axes = np.array([(ld.node if ld.axes_node < 0 else ld.axes_node) if ld.follower else -1 for ld in loads], dtype=np.int64)
    return node, axes, np.zeros((len(loads), 6))


def step_node_loads(fl: tuple, ml: tuple, model: Model, st: State, t1: float) -> None:
    """Set the follower loads' values (``fl``) and the loads of the motion's time and holds (``ml``) for a step from
    ``st`` ending at ``t1``: the loads' force and moment at t1 (elements/loads.py); the sampled loads' held wrenches
    of the step's start (docs/motion_forces.md (M15))."""
    if fl[0].size:
        for k, ld in enumerate(model.loads):
            fl[2][k, :3] = np.asarray(ld.force(t1), dtype=float)
            fl[2][k, 3:] = np.asarray(ld.moment(t1), dtype=float)
    if ml[0].size:
        ml[5][0] = t1
        hold = st.elements.get(LOAD_HOLD_KEY) if st.elements else None
        ml[11][1] = 0.0 if hold is None else 1.0
        if hold is not None:
            ml[3][:] = hold[:, :6]


@njit(cache=True)
def follower_wrenches(fl, R, loads):
    """The nodal loads (N, 6) at the rotations R, rebuilt from zero in the loads' order as nodal_wrenches sums them:
    a fixed load's global values, a follower's turned by its node's rotation, each row R[a] · f (M19). Nothing where
    no load is a follower (``fl`` empty)."""
    node, axes, vals = fl
    if node.size == 0:
        return
    loads[:] = 0.0
    for m in range(node.size):
        i, k = node[m], axes[m]
        if k < 0:
            for j in range(6):
                loads[i, j] += vals[m, j]
            continue
        for part in range(2):
            o = 3 * part
            for a in range(3):
                loads[i, o + a] += R[k, a, 0] * vals[m, o] + R[k, a, 1] * vals[m, o + 1] + R[k, a, 2] * vals[m, o + 2]


@njit(cache=True)
def node_loads_iterate(ml, x, R, V, wfull) -> bool:
    """The loads of the motion of an iterate (MotionLoads.evaluate, same arithmetic): each load's wrench F (M8) and
    tangents K, C (M12) at its node's global state, or a sampled load's held wrench (M15), subtracted from ``wfull``;
    True (``ml[11][0]`` the load) where a wrench or tangent is not finite: the iterate fails."""
    addr, node, sampled, hold, origin, tm, inp, buf, F, K, C, flags = ml
    t = tm[0]
    flags[0] = -1.0
    for e in range(node.size):
        i = node[e]
        if sampled[e] and flags[1] > 0.0:
            for j in range(6):
                F[e, j] = 1.0 * hold[e, j]
                for c in range(6):
                    K[e, j, c] = 0.0
                    C[e, j, c] = 0.0
        else:
            for j in range(3):
                inp[j] = x[i, j] + origin[j]
                inp[12 + j] = V[i, j]
                inp[15 + j] = V[i, 3 + j]
                for c in range(3):
                    inp[3 + 3 * j + c] = R[i, j, c]
            _call_load(addr[e], 0, t, inp, buf)
            _call_load(addr[e], 1, t, inp, buf)
            for j in range(N_OUT):
                if not np.isfinite(buf[j]):
                    flags[0] = e
                    return True
            for j in range(6):
                F[e, j] = 1.0 * buf[j]
                for c in range(6):
                    K[e, j, c] = -(1.0 * buf[6 + 12 * j + c])
                    C[e, j, c] = -(1.0 * buf[12 + 12 * j + c])
        for j in range(6):
            wfull[i, j] -= F[e, j]
    return False


@njit(cache=True)
def node_load_blocks(ml, ck, cc, blocks):
    """The symmetric part of ck K + cc C of every load (M12) into ``blocks`` (n, 6, 6) (MotionLoads.blocks)."""
    K, C = ml[9], ml[10]
    E = np.empty((6, 6))
    for e in range(K.shape[0]):
        for a in range(6):
            for b in range(6):
                E[a, b] = ck * K[e, a, b] + cc * C[e, a, b]
        for a in range(6):
            for b in range(6):
                blocks[e, a, b] = 0.5 * (E[a, b] + E[b, a])


@njit(cache=True)
def node_load_matrix(ml, maps, blocks, ck, cc, S, x, data):
    """The loads' blocks (:func:`node_load_blocks`) scattered into S's values ``data`` (``maps``: the scatter maps
    of the family's elements, ElementScatter.lower_only; ``blocks`` (n, 6, 6) a buffer), after the other families."""
    node_load_blocks(ml, ck, cc, blocks)
    nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne = maps
    _scatter_elements(nodes, anc_ptr, anc_coord, pos_ptr, pos, S, x, blocks, max_ne, data)


def node_load_evaluation(ml: tuple, model: Model, V: np.ndarray, st: State) -> Any:
    """The MotionLoadEvaluation of the last :func:`node_loads_iterate` (its arrays copied), its load power F·V and
    the time each wrench was computed from (MotionLoads.evaluate)."""
    from flexmb.elements.motion_load import MotionLoadEvaluation  # the element library stands beside the solvers

    F, K, C = ml[8].copy(), ml[9].copy(), ml[10].copy()
    hold = st.elements.get(LOAD_HOLD_KEY) if st.elements else None
    at = np.full(F.shape[0], float(ml[5][0]))
    power = 0.0
    for e, i in enumerate(ml[1]):
        if ml[2][e] and hold is not None:
            at[e] = hold[e, 13]
        power += float(F[e] @ V[i])
    return MotionLoadEvaluation(load_power=power, F=F, K=K, C=C, sampled_at=at)


def node_load_check(ml: tuple, model: Model, t: float) -> None:
    """Raise the SolverError of a load whose wrench or tangent was not finite at the last iterate
    (:func:`node_loads_iterate` flagged it; MotionLoads.evaluate's message); nothing otherwise."""
    if ml[0].size and ml[11][0] >= 0.0:
        raise node_load_failure(ml, model, t)


def node_load_failure(ml: tuple, model: Model, t: float) -> SolverError:
    """The SolverError of a load whose wrench or tangent is not finite (MotionLoads.evaluate's)."""
    data = model.elements["motion_load"]
    e = int(ml[11][0])
    return SolverError(f"t = {t:.6g}: load of the motion '{data.names[e]}' on node '{model.node_names[data.node[e]]}' "
                       f"gives {ml[7][:6].tolist()} (or a tangent) that is not finite (docs/motion_forces.md (M8))", t,
                       hint="give a load finite over the motion")
