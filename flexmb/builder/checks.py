"""Checks that need the compiled model and run the engine on it (kinematics, assembly,
CHOLMOD): ModelBuilder.compile() calls :func:`check_model` once the Model exists (as MuJoCo's
compiler calls ``mj_setConst`` once mjModel and mjData exist). The builder stands above the
engine; the Model type does not.

Masses (:func:`check_masses`): the solvers start by solving M̄ u' = Q on the free
coordinates, so M̄ (Bᵀ M B at the initial state, with bodies, beam masses and particles)
must be finite and positive definite. A coordinate that moves no mass — a node without a body
or beam, a zero-inertia body on a spherical joint, two coaxial revolute joints through a
massless node — is named with its joint and node instead of failing later in CHOLMOD.

Particle bodies (Attia; builder/particle_bodies.py): a particle set is dynamically equivalent
to its body only if every particle's node moves with the body, checked on the rows of B at the
initial and at a random state; planar and rod models that can turn out of their plane are
warned about, and negative particle masses that make M̄ indefinite are refused.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import scipy.sparse as sp

from flexmb.elements import FAMILIES
from flexmb.elements import particles as pk
from flexmb.elements.particle_body import ParticleBodyData
from flexmb.engine.assembly import Assembler
from flexmb.engine.kinematics import TreePattern, forward_kinematics
from flexmb.engine.linalg import SparseCholesky
from flexmb.errors import ModelError, SolverError
from flexmb.model import Model
from flexmb.rotations import expm, skew
from flexmb.state import State

__all__ = ["check_model", "check_masses", "check_particle_bodies"]

#: a joint's block of M̄ whose smallest eigenvalue is below this fraction of its largest is singular
MASSLESS_RTOL = 1e-13
#: above this many free coordinates a singular M̄ is not diagonalised to find the massless motion
DENSE_LIMIT = 3000
#: up to this many free coordinates M̄'s spectrum (diagonally scaled) decides, not a Cholesky attempt,
#: which round-off lets pass on a massless motion of several joints (a body-less node whose rotation
#: a spherical joint below it undoes)
SPECTRUM_LIMIT = 400
#: standard gravity [m/s²]: a gravity beyond it is blamed for an overflow that it alone causes
G_STANDARD = 9.80665


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def check_model(model: Model, require_mass: bool = True) -> None:
    """All checks of a freshly compiled model (ModelBuilder.compile calls it): particle
    bodies first (their messages are the more specific), then the masses (finite always,
    positive definite M̄ if ``require_mass``)."""
    if model.elements["particle_body"].n:
        check_particle_bodies(model)
    check_masses(model, require_mass)


# ---------------------------------------------------------------------- masses
def _node_label(model: Model, node: int) -> str:
    """"node 'n' (bodies ['a', 'b'], beam elements ['e1'])" for messages: the elements of every
    element family on the node ("no body" if no body is)."""
    what = []
    for name, fam in FAMILIES.items():
        if name in model.elements:
            on = fam.node_roles(model, model.elements[name]).get(node, [])
            if on:
                what.append(f"{'bodies' if name == 'body' else fam.plural} {on[:5]}")
            elif name == "body":
                what.append("no body")
    return f"node '{model.node_names[node]}' ({', '.join(what)})"


def _joint_of(model: Model, u: int) -> int:
    return int(np.searchsorted(model.joint_u_start, u, side="right") - 1)


def check_masses(model: Model, require_mass: bool = True) -> None:
    """Refuse a model whose generalized mass matrix M̄ on the free coordinates at the initial
    state is not finite or (``require_mass``) not positive definite, naming the node
    (non-finite masses) or the coordinate, its joint and node (a motion that moves no mass)."""
    free = model.free_u
    asm = Assembler(model)
    ev = asm.evaluate(model.initial_state())
    bad = ~np.isfinite(ev.Mb).all(axis=(1, 2))
    if bad.any():
        n = int(np.argmax(bad))
        raise ModelError(f"compile: {_node_label(model, n)}: its mass or inertia at the start is not finite "
                         "(overflow); give the bodies on it physical masses, centres of mass and inertias.")
    bad = ~np.isfinite(ev.bias).all(axis=1)
    if bad.any():
        n = int(np.argmax(bad))
        if _gravity_overflows(model, lambda a, e: bool(np.isfinite(e.bias[n]).all())):
            raise ModelError(f"compile: gravity = {model.gravity.tolist()} (ModelBuilder(gravity=...)): the weight of "
                             f"{_node_label(model, n)} overflows (is not a finite number); give a physical gravity.")
        st = model.initial_state()
        k = int(np.argmax(np.abs(st.u))) if model.n_u else -1
        fast = (f"; the fastest coordinate is '{model.coordinate_names[k]}' with velocity {st.u[k]:.3g} at t = 0"
                if k >= 0 else "")
        loads = [ld.name for ld in model.loads if ld.node == n]
        raise ModelError(f"compile: {_node_label(model, n)}: the forces on it at the start (weight, loads "
                         f"{loads[:5]}, velocity terms) are not finite (overflow){fast}. Give physical initial "
                         "velocities (u0, drive velocities), loads and masses.")
    _check_start_forces(model, ev)
    _check_start_energy(model, asm, ev)
    if not free.size:
        return
    M = asm.mbar(ev, free).tocsc()
    if not np.all(np.isfinite(M.data)):
        col = int(np.searchsorted(M.indptr, np.flatnonzero(~np.isfinite(M.data))[0], side="right") - 1)
        u = int(free[col])
        j = _joint_of(model, u)
        raise ModelError(f"compile: the generalized mass of coordinate '{model.coordinate_names[u]}' (joint "
                         f"'{model.joint_names[j]}', {_node_label(model, int(model.joint_child[j]))}) is not finite "
                         "(overflow): the masses it moves are too large or too far away; give physical values.")
    if not require_mass:
        return
    found = _singular_joint_block(model, M, free)
    if found is None and free.size <= SPECTRUM_LIMIT:
        found = _scaled_null_motions(model, M, free)
        if found is None:
            return
    if found is None:
        try:
            SparseCholesky(M).factorize(M)
            return
        except SolverError:
            found = _null_motion(M, free)
    raise ModelError(_massless_message(model, found))


def _gravity_overflows(model: Model, finite) -> bool:
    """Whether gravity's magnitude causes an overflow: gravity is beyond the standard G_STANDARD,
    and ``finite(asm, ev)`` holds for the start evaluated with gravity of magnitude G_STANDARD in
    its direction (where it does not, positions, masses or loads overflow with any gravity)."""
    g = model.gravity
    big = float(np.abs(g).max(initial=0.0))
    if big == 0.0 or math.hypot(*(g / big)) * big <= G_STANDARD:
        return False
    unit = g / big
    tame = dataclasses.replace(model, gravity=G_STANDARD * unit / np.linalg.norm(unit))
    asm = Assembler(tame)
    with np.errstate(all="ignore"):
        return finite(asm, asm.evaluate(tame.initial_state()))


def _check_start_forces(model: Model, ev) -> None:
    """Refuse a model whose generalized forces at the start (eq. (1) at u' = 0 on the free
    coordinates) overflow, naming the first such coordinate, its joint and node, and gravity where
    its magnitude is the cause (finite node forces whose projection overflows: weight times a lever
    arm)."""
    st = model.initial_state()
    udot = st.udot.copy()
    udot[model.free_u] = 0.0
    with np.errstate(all="ignore"):
        r = ev.residual(udot)
    bad = ~np.isfinite(r)
    if not bad.any():
        return
    u = int(np.argmax(bad))
    j = _joint_of(model, u)
    child = int(model.joint_child[j])
    where = (f"the generalized force on coordinate '{model.coordinate_names[u]}' (joint '{model.joint_names[j]}', "
             f"{_node_label(model, child)} at {model.X0[child].tolist()}) at the start")
    if _gravity_overflows(model, lambda a, e: bool(np.isfinite(e.residual(udot)).all())):
        raise ModelError(f"compile: gravity = {model.gravity.tolist()} (ModelBuilder(gravity=...)): {where} overflows "
                         "(the weights of the bodies it moves, times their lever arms and summed, exceed floating point); "
                         "give a physical gravity.")
    raise ModelError(f"compile: {where} is not finite (overflow): the weights, loads and joint forces it sums, times "
                     "their lever arms, exceed floating point; give physical node positions, masses, loads and initial "
                     "velocities.")


def _check_start_energy(model: Model, asm: Assembler, ev) -> None:
    """Refuse a model whose kinetic or potential energy at the start overflows (the run's energy
    balance would fail at t = 0 naming only the energy): naming gravity where its magnitude is the
    cause (weights whose potential, m g·x summed, exceeds floating point), else the joint springs or
    nodes whose energy overflows."""
    st = model.initial_state()
    with np.errstate(all="ignore"):
        T, V = asm.energies(ev, st)
    if np.isfinite(T) and np.isfinite(V):
        return
    which = "kinetic" if not np.isfinite(T) else "potential"
    if _gravity_overflows(model, lambda a, e: bool(np.isfinite(a.energies(e, st)).all())):
        raise ModelError(f"compile: gravity = {model.gravity.tolist()} (ModelBuilder(gravity=...)): the potential "
                         "energy of the weights at the start (m g·x summed over the bodies) overflows (is not a finite "
                         "number); give a physical gravity.")
    with np.errstate(all="ignore"):
        springs = [model.joint_names[_joint_of(model, int(u))]
                   for u, k, r in zip(model.spring_u, model.spring_k, model.spring_rest)
                   if not np.isfinite(k * (st.q[model.u_to_q[u]] - r) ** 2)]
        node_T = 0.5 * np.einsum("ni,nij,nj->n", ev.kin.V, ev.Mb, ev.kin.V)
        gx = ev.kin.x @ model.gravity
        node_V = np.where(np.isfinite(gx), ev.Mb[:, 0, 0] * gx, np.inf)  # a node's weight's potential, about
    if springs:
        where = f"the joint springs of joints {springs[:5]} (stiffness times (q - rest)² overflows)"
    elif not np.all(np.isfinite(node_T)):
        where = _node_label(model, int(np.argmax(~np.isfinite(node_T))))
    elif not np.all(np.isfinite(node_V)):
        n = int(np.argmax(~np.isfinite(node_V)))
        where = f"the weight of {_node_label(model, n)} at {ev.kin.x[n].tolist()}"
    else:
        where = "the model's elements (stiffness, strain or weight of the beams and bushings)"
    raise ModelError(f"compile: the {which} energy at the start is not finite (overflow), first in {where}; give physical "
                     "values (node positions, stiffness, rest positions, masses, initial velocities).")


def _singular_joint_block(model: Model, M: sp.spmatrix, free: np.ndarray) -> np.ndarray | None:
    """Motions of one joint's free coordinates that move no mass (a basis of the null space of
    M̄ restricted to them, as rows in u coordinates), or None. A singular principal block makes
    M̄ singular, so this finds the common cases without factorizing M̄."""
    joint = np.searchsorted(model.joint_u_start, free, side="right") - 1
    starts = np.flatnonzero(np.r_[True, joint[1:] != joint[:-1]])
    sizes = np.diff(np.r_[starts, free.size])
    Mr = M.tocsr()
    for s in np.unique(sizes):
        first = starts[sizes == s]
        idx = first[:, None] + np.arange(s)  # (nj, s) columns of each joint's block
        rows = np.repeat(idx, s, axis=1).ravel()
        cols = np.tile(idx, (1, s)).ravel()
        blocks = np.asarray(Mr[rows, cols]).reshape(-1, s, s)
        lam, vec = np.linalg.eigh(blocks)
        null = lam <= MASSLESS_RTOL * np.maximum(lam[:, -1:], 0.0)
        if null[:, 0].any():
            k = int(np.argmax(null[:, 0]))
            basis = np.zeros((int(null[k].sum()), model.n_u))
            basis[:, free[idx[k]]] = vec[k][:, null[k]].T
            return basis
    return None


def _scaled_null_motions(model: Model, M: sp.spmatrix, free: np.ndarray) -> np.ndarray | None:
    """Motions that move no mass (rows in u coordinates), or None: the eigenvectors of M̄ scaled to
    unit diagonal, D^-1/2 M̄ D^-1/2, whose eigenvalues are below MASSLESS_RTOL times the largest
    (the scaling makes the test blind to how heavy each coordinate is, and sees only dependence)."""
    A = M.toarray()
    d = np.diag(A).copy()
    if np.any(d <= 0):
        basis = np.zeros((1, model.n_u))
        basis[0, free[int(np.argmin(d))]] = 1.0
        return basis
    sc = 1.0 / np.sqrt(d)
    lam, vec = np.linalg.eigh(sc[:, None] * A * sc[None, :])
    null = lam <= MASSLESS_RTOL * lam[-1]
    if not null.any():
        return None
    v = sc[:, None] * vec[:, null]
    basis = np.zeros((int(null.sum()), model.n_u))
    basis[:, free] = (v / np.linalg.norm(v, axis=0)).T
    return basis


def _null_motion(M: sp.spmatrix, free: np.ndarray) -> np.ndarray | None:
    """The motion of smallest mass (eigenvector of M̄'s smallest eigenvalue, as a row in u
    coordinates), or None for models too large to diagonalise."""
    if free.size > DENSE_LIMIT:
        return None
    lam, vec = np.linalg.eigh(M.toarray())
    v = np.zeros((1, int(free.max()) + 1))
    v[0, free] = vec[:, 0]
    return v


def _massless_message(model: Model, basis: np.ndarray | None) -> str:
    """Name the coordinates, joints and nodes of the massless motions ``basis`` (rows)."""
    hint = ("Give the node a body with mass and a full inertia tensor (add_body), put it on a beam, or hold the "
            "motion (a joint without that coordinate, or a drive).")
    if basis is None:
        return ("compile: the generalized mass matrix M̄ is not positive definite: some motion moves no mass (a "
                "node without a body or beam, a body without inertia on a spherical joint). " + hint)
    weight = np.abs(basis).max(axis=0)
    main = np.flatnonzero(weight >= 0.2 * weight.max())
    joints = list(dict.fromkeys(_joint_of(model, int(i)) for i in main))
    coords = ", ".join(f"'{model.coordinate_names[i]}'" for i in main)
    nodes = "; ".join(_node_label(model, int(model.joint_child[j])) for j in joints)
    if len(joints) == 1:
        j = joints[0]
        u0 = int(model.joint_u_start[j])
        ball = [i for i in range(u0, u0 + model.joint_kinds[j].n_u) if model.u_is_ball[i]]
        about = ""
        if ball and basis.shape[0] == 1 and np.linalg.norm(basis[0, ball]) > 0.9:
            axis = basis[0, ball] / np.linalg.norm(basis[0, ball])
            child = model.node_names[int(model.joint_child[j])]
            about = f" (the rotation about the axis {(np.round(axis, 6) + 0.0).tolist()} of node '{child}')"
        return (f"compile: joint '{model.joint_names[j]}' ({model.joint_kinds[j].name}): coordinate"
                f"{'s' if main.size > 1 else ''} {coords} move{'' if main.size > 1 else 's'} no mass{about}: {nodes} "
                "and the nodes beyond it have no mass or no inertia for that motion, so the mass matrix M̄ is singular "
                "and no acceleration follows from the forces. " + hint)
    return (f"compile: a motion of joints {', '.join(repr(model.joint_names[j]) for j in joints)} (coordinates {coords} "
            f"together) moves no mass, so the mass matrix M̄ is singular; the nodes it moves: {nodes}. " + hint)


# ---------------------------------------------------------------------- particle bodies
def check_particle_bodies(model: Model, seed: int = 12345) -> None:
    """Refuse particles on nodes that do not move with their body; warn about planar bodies
    that can turn out of their plane; refuse negative masses that make M̄ indefinite."""
    pat = TreePattern(model)
    st0 = model.initial_state()
    rng = np.random.default_rng(seed)
    st1 = st0.copy()
    st1.q = st0.q + 0.5 * rng.standard_normal(st0.q.shape)
    if model.n_ball:
        st1.balls = st0.balls @ expm(0.5 * rng.standard_normal((model.n_ball, 3)))
    scale = max(1.0, float(np.abs(model.X0).max(initial=0.0)))
    pb: ParticleBodyData = model.elements["particle_body"]
    out_of_plane = []
    for st in (st0, st1):
        kin = forward_kinematics(model, State(st.t, st.q, st.balls, st.u, st.udot), pat)
        B = kin.B().tocsr()
        for b, name in enumerate(pb.names):
            r = int(pb.reference[b])
            nodes = np.array(pb.nodes[b])
            Vr = B[6 * r: 6 * r + 3].toarray()
            W = B[6 * r + 3: 6 * r + 6].toarray()
            for k, p in enumerate(nodes):
                Vp = B[6 * p: 6 * p + 3].toarray()
                d = kin.x[p] - kin.x[r]
                err = np.abs(Vp - (Vr - skew(d) @ W))
                if err.size and err.max() > 1e-8 * scale:
                    col = int(np.argmax(err.max(axis=0)))
                    raise ModelError(
                        f"particle body '{name}': particle {k + 1} is on node '{model.node_names[p]}', which does not "
                        f"move with the body (reference node '{model.node_names[r]}'): coordinate "
                        f"'{model.coordinate_names[col]}' moves it differently from the body's point there. Put the "
                        "particle on a node fixed to the body (the reference node, a node joined to it by a fixed joint, "
                        "or the centre node of a revolute/spherical joint of the body).")
            if st is st0 and pb.planar[b] and W.size:
                Xp = kin.x[nodes]
                if pb.kinds[b] == "rod":
                    e = Xp[1] - Xp[0]
                    e /= np.linalg.norm(e)
                    leak = np.abs(e @ W).max()
                    what = "about the rod's axis (the rod's particles have no inertia about it)"
                else:
                    n = _plane_normal(Xp)
                    if n is None:
                        continue
                    leak = np.abs(W - np.outer(n, n @ W)).max()
                    what = "out of its plane (the planar particles reproduce only the polar moment about the normal)"
                if leak > 1e-8:
                    out_of_plane.append((b, what))
    for b, what in out_of_plane:
        warnings.warn(f"particle body '{pb.names[b]}' can rotate {what}; its motion is then not that "
                      "of the rigid body it replaces. Use kind='spatial' for bodies that move in space.", stacklevel=3)
    _check_definiteness(model, st0, [b for b, _ in out_of_plane])


def _plane_normal(X: np.ndarray) -> np.ndarray | None:
    d = X - X.mean(axis=0)
    _, s, vt = np.linalg.svd(d)
    return vt[2] if s[1] > 1e-12 * max(s[0], 1e-300) else None


def _check_definiteness(model: Model, st0: State, candidates: list[int]) -> None:
    """Among bodies that can rotate out of their plane, those whose negative masses give the
    particles an indefinite inertia can make M̄ indefinite: test M̄ at the initial state."""
    bad = []
    pb: ParticleBodyData = model.elements["particle_body"]
    kin = forward_kinematics(model, st0, TreePattern(model)) if candidates else None
    for b in candidates:
        m = np.array(pb.masses[b])
        if m.min() >= 0:
            continue
        _, _, Jp = pk.particle_properties(m[None], kin.x[np.array(pb.nodes[b])][None])
        ev = np.linalg.eigvalsh(Jp[0])
        if ev.min() < -1e-12 * np.abs(ev).max():
            bad.append((b, ev))
    if not bad:
        return
    asm = Assembler(model)
    ev = asm.evaluate(st0)
    M = asm.mbar(ev, model.free_u)
    if M.shape[0] > 3000:  # large models: a Cholesky attempt instead of the spectrum
        try:
            SparseCholesky(M).factorize(M)
            return
        except SolverError:
            lam = np.array([-np.inf])
    else:
        lam = np.linalg.eigvalsh(M.toarray())
    if lam.size and lam.min() < -1e-10 * np.abs(lam[np.isfinite(lam)]).max(initial=1.0):
        b, evp = bad[0]
        name = pb.names[b]
        neg = [f"'{model.node_names[n]}' ({_fmt(mm)} kg)" for n, mm in zip(pb.nodes[b], pb.masses[b]) if mm < 0]
        raise ModelError(
            f"particle body '{name}': its negative particle masses at nodes {', '.join(neg)} give the particles an "
            f"indefinite inertia (principal moments {[_fmt(e) for e in evp]}), and the model lets the body rotate about "
            f"such an axis: the generalized mass matrix is indefinite (eigenvalue {_fmt(lam.min())}). Move the primary "
            "particles (about one radius of gyration from the centre of mass) so that all masses are positive, "
            "or use kind='spatial'.")
