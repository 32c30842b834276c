"""Initial states that carry the elastic elements along with what holds them.

A model is built in its *assembly configuration* (all joint coordinates zero), where every beam
and bushing is unstrained. A joint's ``q0``/``u0`` (or a drive's q(0), q'(0)) then moves the
bodies beyond it, but not the *free FE nodes* — the nodes that no joint holds (beam interior and
tip nodes, nodes carried only by bushings), whose free joints to ground start at zero. Left
there, a beam hanging from a body turned by q0 = 0.2 rad starts stretched by the body's
motion (issue 11.10: 3.3e6 J of strain energy, 3.3e7 N of axial force in tests/test_initial.py's
steel beam; the run fails within a millisecond). :func:`relax_free_nodes` places them:

Held and relaxed coordinates. Every node either hangs from ground through user joints only
(*held*: its pose follows from the held coordinates q_c — all user-joint and driven coordinates)
or belongs to the subtree of an automatic free joint (a *cluster*, moved by that joint's six
coordinates). A cluster is relaxed when a chain of elements links it to a held node or to ground;
its free-joint coordinates q_f are the unknowns. In a floating group linked to nothing held, the
first cluster with joints inside (whose q0 can move its nodes) is held instead and the others
follow it; a group of free nodes without joints keeps its coordinates (no q0 can have moved it).

Positions. With no external loads (gravity, nodal loads and joint forces off: load factor 0) and
u = 0, the relaxed coordinates solve the static balance of the element forces

    r_f(q_f; q_c) = [B^T f_el(q)]_f = 0,        Newton:  K_ff Δq_f = -r_f                    (1)

(K: the elements' consistent tangent B^T K_e B, flexmb.solvers.statics). Predictor: each relaxed
cluster is first carried rigidly by the held node it is nearest to in the element graph (breadth
first from the held nodes), with that node's rigid displacement from its assembly pose:

    Q = R_c R0_c^T,   x_r = x_c + Q (X0_r - X0_c),   R_r = Q R0_r                              (2)

so a link hanging from one body is already unstrained (Newton then takes zero iterations); a link
between two bodies that moved differently is bent into its elastic equilibrium by (1). Where a
strain-free configuration exists (the user's assembly moved rigidly), (1) restores it.

Velocities. The free nodes take the velocities that make the elastic deformation rate
stationary: with the material stiffness K_m = Σ B_e^T G_e^T K_l G_e B_e (ṗ_l = G_e B_e u the local
deformation rates of the elements), u_f minimises the deformation-rate energy ½ u^T K_m u
(equivalently the dissipation of stiffness-proportional damping, Zahariev eq. 13):

    K_m,ff u_f = -K_m,fc u_c                                                                   (3)

A rigid motion has ṗ_l = 0, so a link carried by one body gets exactly that body's velocity
field v_i = v_c + ω_c × (x_i - x_c), ω_i = ω_c (the predictor (2) differentiated, used as the
start of (3)); a link between two bodies gets the quasi-static elastic interpolation.

Both linear solves are Jacobi-scaled, regularised by 1e-12 (relative) and refined, so directions
without stiffness (a rotation a spherical bushing leaves free) keep the predictor instead of
failing, and the others are solved to round-off.
A model whose held coordinates are all at the assembly configuration (q = 0, u = 0) is returned
unchanged, bit for bit.

Report. The start's strain energy is logged (logger ``flexmb``) and returned; where an element
stays strained — a loop that cannot close at the given q0, a relaxation that did not converge —
a :class:`StartWarning` names the element with the largest equivalent strain ε = sqrt(U / U_ref)
(beam: U_ref = EA L0 / 2, the energy of 100 % stretch; bushing: U_ref = k ℓ² / 2, k its largest
translational stiffness, ℓ the model's size, 1 m for a model of one node) when ε > ``warn_strain``
(default 1e-4, a tenth of the yield strain of steel: a cut pre-loaded by the forces of the motion,
flexmb.analysis.rigid.preloaded_state, stays far below it — 2e-6 in cases/bennett_linkage.py —
while the four-bar of tests/test_initial.py with its crank turned by 0.1 rad and its rocker not
reaches 0.027).
"""

from __future__ import annotations

import logging
import warnings
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from flexmb.analysis.monitors import RigidClosure
from flexmb.analysis.rigid import has_cuts
from flexmb.elements import FAMILIES, has_element_forces
from flexmb.elements.beam import BeamData
from flexmb.engine.assembly import Assembler
from flexmb.errors import ModelError, SolverError, StartWarning
from flexmb.model import Model
from flexmb.state import State

__all__ = ["StartReport", "StartWarning", "consistent_state", "relax_free_nodes", "relaxed_start"]

log = logging.getLogger("flexmb")



@dataclass
class StartReport:
    """What the start did: ``relaxed_nodes`` (names of the nodes placed by the relaxation),
    ``moved`` (positions relaxed), ``velocities`` (velocities relaxed), ``iterations`` (Newton
    iterations of eq. (1)), ``strain_energy`` [J] of the start, and the element with the largest
    equivalent strain (``worst_element``, ``worst_strain``)."""

    relaxed_nodes: tuple[str, ...] = ()
    moved: bool = False
    velocities: bool = False
    iterations: int = 0
    strain_energy: float = 0.0
    worst_element: str = ""
    worst_strain: float = 0.0
    notes: list[str] = field(default_factory=list)

    def as_meta(self) -> dict:
        """A JSON-ready summary (for a Result's meta)."""
        return {"relaxed_nodes": len(self.relaxed_nodes), "positions_relaxed": self.moved,
                "velocities_relaxed": self.velocities, "newton_iterations": self.iterations,
                "strain_energy": self.strain_energy, "worst_element": self.worst_element,
                "worst_equivalent_strain": self.worst_strain}


def _element_links(model: Model) -> list[tuple[int, int]]:
    """(a, b) node pairs (ground = N) joined by an element of a family with forces between nodes
    (bushings, beams, ...), in registry and element order."""
    N = model.n_nodes
    out = []
    for name, fam in FAMILIES.items():
        if fam.forces and not fam.node_mass and name in model.elements:
            nodes = fam.element_nodes(model.elements[name])
            nodes = np.where(nodes < 0, N, nodes)
            for row in nodes:
                out += [(int(row[i]), int(row[i + 1])) for i in range(len(row) - 1)]
    return out


class _Plan:
    """Which automatic free joints are relaxed, and the held node (or ground) carrying each."""

    def __init__(self, model: Model) -> None:
        N = model.n_nodes
        auto = {model.node_index(n) for n in model.auto_free_nodes}
        cluster = np.full(N, -1)
        for k in range(model.n_joints):  # tree order: parents first
            c, p = int(model.joint_child[k]), int(model.joint_parent[k])
            if c in auto and p < 0 and model.joint_kinds[k].name == "free":
                cluster[c] = k
            else:
                cluster[c] = -1 if p < 0 else cluster[p]
        adj: list[list[int]] = [[] for _ in range(N + 1)]  # node N: ground
        for a, b in _element_links(model):  # the elements joining two nodes, family by family
            adj[a].append(int(b))
            adj[b].append(int(a))
        members: dict[int, list[int]] = {}
        for i in range(N):
            if cluster[i] >= 0:
                members.setdefault(int(cluster[i]), []).append(i)
        carrier = np.full(N + 1, -2)
        held = [i for i in range(N) if cluster[i] < 0] + [N]
        carrier[held] = held
        joint_carrier: dict[int, int] = {}

        def spread(queue: deque) -> None:  # breadth first along the elements
            while queue:
                i = queue.popleft()
                for j in adj[i]:
                    if carrier[j] != -2:
                        continue
                    k = int(cluster[j])
                    joint_carrier[k] = int(carrier[i])
                    for m in members[k]:
                        carrier[m] = carrier[i]
                        queue.append(m)

        spread(deque(held))
        for k in sorted(members):  # a floating mechanism: its first cluster with joints inside is held
            if len(members[k]) > 1 and carrier[members[k][0]] == -2:
                carrier[members[k]] = members[k]
                spread(deque(members[k]))
        self.joints = np.array(sorted(joint_carrier), dtype=int)
        self.carrier = np.array([joint_carrier[k] for k in self.joints], dtype=int)
        u = [np.arange(model.joint_u_start[k], model.joint_u_start[k] + 6) for k in self.joints]
        self.coords = np.concatenate(u) if u else np.zeros(0, dtype=int)
        self.nodes = tuple(model.node_names[i] for k in self.joints for i in members[int(k)])


def relax_free_nodes(model: Model, state: State | None = None, warn_strain: float = 1e-4, max_iter: int = 30,
                     asm: Assembler | None = None, extra: np.ndarray | None = None) -> tuple[State, StartReport]:
    """``state`` (default: the model's initial state) with its free FE nodes placed by the
    relaxation of the module docstring (eq. (1)–(3)): positions by the static balance of the
    element forces with the held coordinates fixed, velocities by eq. (3); ``extra``: further
    coordinates to relax with them (the pins of beam-cut links, :func:`consistent_state`). Returns
    the state and a :class:`StartReport`; warns (:class:`StartWarning`) naming the most strained
    element when its equivalent strain exceeds ``warn_strain``."""
    st = model.initial_state() if state is None else state.copy()
    plan = _Plan(model)
    if extra is not None and len(extra):
        plan.coords = np.union1d(plan.coords, np.asarray(extra, dtype=int))
    rep = StartReport(relaxed_nodes=plan.nodes)
    has_elements = has_element_forces(model)
    at_assembly = (not np.any(st.q) and np.array_equal(st.balls, np.broadcast_to(np.eye(3), st.balls.shape)))
    if not has_elements or (at_assembly and not np.any(st.u)):
        return st, rep  # the assembly configuration at rest: unstrained by construction, nothing to carry
    asm = Assembler(model, exact_tangent=True) if asm is None else asm
    if plan.coords.size:
        st = _predict(model, asm, st, plan, positions=not at_assembly)
        if not at_assembly:
            st, rep.iterations = _relax_positions(model, asm, st, plan, max_iter, rep)
            rep.moved = True
        if np.any(st.u):
            st = _relax_velocities(model, asm, st, plan)
            rep.velocities = True
    _strain_report(model, asm, st, rep, warn_strain)
    return st, rep


def relaxed_start(model: Model) -> tuple[State, dict]:
    """The start :func:`flexmb.simulate` uses when it is given no state: the model's initial state
    with its free FE nodes relaxed (:func:`relax_free_nodes`), and a meta entry ``{"start": ...}``
    (:meth:`StartReport.as_meta`). Pass ``state=model.initial_state()`` to simulate to start from
    the unrelaxed state instead."""
    st, rep = relax_free_nodes(model)
    return st, {"start": rep.as_meta()}


# ----------------------------------------------------------------------------- steps

def _predict(model: Model, asm: Assembler, st: State, plan: _Plan, positions: bool) -> State:
    """Eq. (2): every relaxed cluster root carried rigidly by its carrier (pose and velocity)."""
    ev = asm.evaluate(st, load_factor=0.0)
    x, R, V = ev.kin.x, ev.kin.R, ev.kin.V
    X0, R0 = model.X0, model.R0
    out = st.copy()
    N = model.n_nodes
    for k, c in zip(plan.joints, plan.carrier):
        r = int(model.joint_child[k])
        if c == N:  # carried by ground: the assembly pose, at rest
            xr, Rr, vr, wr = X0[r], R0[r], np.zeros(3), np.zeros(3)
        else:
            Q = R[c] @ R0[c].T
            xr = x[c] + Q @ (X0[r] - X0[c])
            Rr = Q @ R0[r]
            wr = V[c, 3:]
            vr = V[c, :3] + np.cross(wr, xr - x[c])
        iq, iu, ib = model.joint_q_start[k], model.joint_u_start[k], model.joint_ball[k]
        if positions:  # free joint from ground: x = X0 + q_T, R = R0 ball (flexmb/engine/kinematics.py)
            out.q[iq:iq + 3] = xr - X0[r]
            out.balls[ib] = R0[r].T @ Rr
        out.u[iu:iu + 3] = vr
        out.u[iu + 3:iu + 6] = Rr.T @ wr  # ball velocities: angular velocity in the node's axes
    return out


def _solve_scaled(K: sp.spmatrix, rhs: np.ndarray) -> np.ndarray:
    """K x = rhs, Jacobi-scaled (A = S K S, S = diag(K)^-1/2) and regularised, A + 1e-12 I, then
    refined (x += (A + 1e-12 I)^-1 (b - A x) while that halves the residual): exact where K is
    stiff, the least change where it has (almost) no stiffness; coordinates without any get 0."""
    K = sp.csc_matrix(K)
    d = K.diagonal()
    live = d > 1e-14 * max(float(d.max(initial=0.0)), 1e-300)
    x = np.zeros(rhs.size)
    if not live.any():
        return x
    s = 1.0 / np.sqrt(d[live])
    A = sp.csc_matrix(sp.diags(s) @ K[live][:, live] @ sp.diags(s))
    try:
        lu = spla.splu(sp.csc_matrix(A + 1e-12 * sp.identity(A.shape[0])))
    except RuntimeError:  # exactly singular even so: report as non-finite
        return np.full(rhs.size, np.nan)
    b = s * rhs[live]
    y = lu.solve(b)
    res = float(np.linalg.norm(b - A @ y))
    for _ in range(4):
        if res <= 1e-15 * float(np.linalg.norm(b)):
            break
        y_new = y + lu.solve(b - A @ y)
        res_new = float(np.linalg.norm(b - A @ y_new))
        if not res_new < 0.5 * res:
            break
        y, res = y_new, res_new
    x[live] = s * y
    return x


def _relax_positions(model: Model, asm: Assembler, st: State, plan: _Plan, max_iter: int,
                     rep: StartReport) -> tuple[State, int]:
    """Eq. (1) by Newton from the predictor, at u = 0 and load factor 0."""
    f = plan.coords
    cur = st.copy()
    cur.u[:] = 0.0
    cur.udot[:] = 0.0
    zero = np.zeros(f.size)
    best, best_r, r0 = cur, np.inf, None
    for it in range(max_iter + 1):
        ev = asm.evaluate(cur, load_factor=0.0)
        r = ev.residual(cur.udot)[f]
        rmax = float(np.abs(r).max())
        if not np.isfinite(rmax):
            break
        if rmax < best_r:
            best, best_r = cur, rmax
        r0 = rmax if r0 is None else r0
        if rmax <= 1e-12 * r0 or rmax == 0.0:
            break
        if it == max_iter:
            rep.notes.append(f"relaxation did not converge in {max_iter} iterations (residual {rmax:.3e})")
            break
        K = asm.iteration_matrix(ev, f, 0.0, 1.0, zero, with_mass=False)
        dx = _solve_scaled(K, -r)
        if not np.all(np.isfinite(dx)):
            rep.notes.append("relaxation met a singular tangent")
            break
        dq = np.zeros(model.n_u)
        dq[f] = dx
        new = cur.retract(model, dq)
        if float(np.abs(dx).max()) <= 1e-14 * (1.0 + float(np.abs(cur.q).max(initial=0.0))):
            cur = new
            break
        cur = new
    out = best.copy()
    out.u[:] = st.u
    out.udot[:] = st.udot
    return out, it


def _relax_velocities(model: Model, asm: Assembler, st: State, plan: _Plan) -> State:
    """Eq. (3): K_m,ff u_f = -K_m,fc u_c, solved as a correction of the predicted u_f."""
    f = plan.coords
    ev = asm.evaluate(st, load_factor=0.0)
    Km = asm.element_matrix(ev, 1.0, 0.0, material_only=True, cm=0.0)
    w = (Km @ ev.twists(st.u).reshape(-1)).reshape(-1, 6)
    g = ev.project(w)[f]
    K = asm.iteration_matrix(ev, f, 0.0, 1.0, np.zeros(f.size), material_only=True, with_mass=False)
    out = st.copy()
    du = _solve_scaled(K, -g)
    if np.all(np.isfinite(du)):  # else keep the predictor (2)
        out.u[f] += du
    return out


def _strain_report(model: Model, asm: Assembler, st: State, rep: StartReport, warn_strain: float) -> None:
    """Strain energy of the start, equivalent strains per element, log and warning."""
    ev = asm.evaluate(st, load_factor=0.0)
    rep.strain_energy = float(ev.strain_energy)
    names, eps = [], []
    beams: BeamData = model.elements["beam"]
    if beams.n:
        Uref = 0.5 * beams.Kl[:, 0, 0] * beams.L0**2  # EA L0 / 2
        names += list(beams.names)
        eps += list(np.sqrt(np.maximum(asm.element_output(ev, "beam", "strain_energy"), 0.0) / Uref))
    for name, data in model.elements.items():  # the cut families' (ElementFamily.equivalent_strains)
        fam = FAMILIES.get(name)
        strains = fam.equivalent_strains(model, data, ev.kin) if fam is not None and fam.cut and data.n else None
        if strains is not None:
            names += list(data.names)
            eps += list(strains)
    if eps and max(eps) > 0:
        i = int(np.argmax(eps))
        rep.worst_element, rep.worst_strain = names[i], float(eps[i])
    log.info("start: %d free FE nodes relaxed (%d Newton iterations), strain energy %.3g J, largest equivalent "
             "strain %.3g in '%s'", len(rep.relaxed_nodes), rep.iterations, rep.strain_energy, rep.worst_strain,
             rep.worst_element)
    if rep.worst_strain > warn_strain:
        why = "; ".join(rep.notes) or "its loop cannot close at the given q0/drives, or the joints' q0 deform it"
        warnings.warn(
            f"the start strains element '{rep.worst_element}' (equivalent strain {rep.worst_strain:.3g}, strain energy "
            f"of the start {rep.strain_energy:.3g} J): the run starts loaded, not at rest ({why}). If that is not "
            "intended, give consistent joint coordinates (flexmb.solvers.initial.consistent_state).",
            StartWarning, stacklevel=3)


# ----------------------------------------------------------------------------- consistent starts

def consistent_state(model: Model, independent=None, state: State | None = None, tol: float = 1e-12, max_iter: int = 50,
                     relax: bool = True, rtol: float = 1e-9) -> State:
    """A start of a closed-loop mechanism whose cuts are unloaded: positions and velocities of all
    tree coordinates from the independent ones the user gives, by a position and velocity
    analysis of the rigid-equivalent loops (bushing cuts as in flexmb.analysis.rigid.RigidModel,
    beam-cut loops as the distance conditions of flexmb.analysis.monitors.RigidClosure), then the
    free FE nodes relaxed (:func:`relax_free_nodes`; with ``relax``).

    ``independent``: the coordinates the user gives — a mapping from a coordinate name
    (``model.coordinate_names``, e.g. ``"A.q"``) or the name of a one-coordinate joint (``"A"``) to a
    value q or a pair (q, u); or a list of names whose values are taken from ``state`` (default:
    the model's initial state, i.e. q0/u0). Driven coordinates are always held at their drive's
    values. With c(q) the closure residuals (link length changes, bushing deformations in their
    constrained directions), J = dc/du, H the held and D the other coordinates:

        positions:   Newton  J_D Δq_D = -c  (minimum-norm least squares), until |c| <= tol (1 + size) (1)
        velocities:  J_Z u_Z = -(J u)|_{u_Z = 0}                                                   (2)

    Z: the columns of J_D that are not zero (coordinates the loops involve; the others — a beam's
    interior nodes, a pendulum hanging off the mechanism — keep their values and the relaxation
    places the free FE nodes among them, with the pins of beam-cut links turned to their chords).
    (2) must determine u_Z: where J_Z loses column rank (smallest singular value below ``rtol``
    times the largest) the start is refused with a SolverError naming the undetermined
    coordinates: either the mechanism has more degrees of freedom than were given, or it is at a
    singular configuration (a change point, where the rigid loops can leave on more than one
    branch) — there, give one more coordinate (its velocity chooses the branch; e.g. crank and
    rocker of the folded change-point four-bar). Given values that cannot close the loops are
    refused the same way. Four-bar with a bushing cut, crank at 1.5 rad turning at 2 rad/s: the
    rocker's angle and speed equal the closed-form four-bar's to 1e-12 (tests/test_initial.py)."""
    st = model.initial_state() if state is None else state.copy()
    st.apply_drives(model, st.t)
    held = _hold_given(model, independent, st)
    closure, pins = _loop_closure(model)
    if closure is not None:
        D = np.flatnonzero(~held)
        st = _close_positions(model, closure, st, D, tol, max_iter)
        _close_velocities(model, closure, st, D, rtol)
    if relax:
        st, _ = relax_free_nodes(model, st, extra=pins)
    return st


def _hold_given(model: Model, independent, st: State) -> np.ndarray:
    """Which velocity coordinates are held (the driven ones and the ``independent`` ones of
    :func:`consistent_state`), the given values written into ``st``."""
    held = np.zeros(model.n_u, dtype=bool)
    held[model.driven] = True
    for k, q, u in _independent_values(model, independent, st):
        if held[k] and k in set(model.driven.tolist()):
            raise ModelError(f"consistent start: coordinate '{model.coordinate_names[k]}' is driven; its value comes from "
                             "the drive, do not give it as independent.")
        held[k] = True
        if q is not None:
            st.q[model.u_to_q[k]] = q
        if u is not None:
            st.u[k] = u
    return held


def _close_positions(model: Model, closure: RigidClosure, st: State, D: np.ndarray, tol: float,
                     max_iter: int) -> State:
    """``st`` with the loops closed by Newton's method on the coordinates D (:func:`consistent_state`
    eq. (1)); a SolverError if they do not close."""
    size = 1.0 + float(np.ptp(model.X0, axis=0).max(initial=0.0))
    for it in range(max_iter + 1):
        c, J = closure.closure(st)
        worst = int(np.argmax(np.abs(c))) if c.size else 0
        if not c.size or np.abs(c).max() <= tol * size:
            break
        dx = np.linalg.lstsq(J[:, D], -c, rcond=None)[0] if D.size else np.zeros(0)
        if it == max_iter or not np.all(np.isfinite(dx)) or np.abs(dx).max(initial=0.0) <= 1e-15 * size:
            raise SolverError(
                f"consistent start: the loops do not close with the given coordinates (largest residual "
                f"{abs(c[worst]):.3e} in '{closure.constraint_names[worst]}' after {it} iterations): the given "
                "values put the mechanism where it cannot be assembled; give values on a reachable configuration.",
                st.t)
        dq = np.zeros(model.n_u)
        dq[D] = dx
        st = st.retract(model, dq)
    return st


def _close_velocities(model: Model, closure: RigidClosure, st: State, D: np.ndarray, rtol: float) -> None:
    """Solve the loops' velocity condition for the coordinates Z of D they involve, in place in ``st.u``
    (:func:`consistent_state` eq. (2)); a SolverError where it does not determine them or the given
    velocities leave a rate."""
    c, J = closure.closure(st)
    norms = np.linalg.norm(J[:, D], axis=0)
    Z = D[norms > 1e-9 * max(float(norms.max(initial=0.0)), 1e-300)]
    u0 = st.u.copy()
    u0[Z] = 0.0
    b = -J @ u0
    if Z.size:
        U, s, Vt = np.linalg.svd(J[:, Z], full_matrices=True)
        rank = int(np.sum(s > rtol * s.max(initial=0.0)))
        if rank < Z.size:
            v = Vt[-1]
            moving = [model.coordinate_names[Z[i]] for i in np.argsort(-np.abs(v)) if abs(v[i]) > 0.1]
            raise SolverError(
                f"consistent start: the coordinates {moving} are not determined by the given ones (the rigid "
                f"closure Jacobian over {[model.coordinate_names[i] for i in Z]} has rank {rank} < {Z.size}; "
                f"singular values {np.array2string(s, precision=3)}). Either the mechanism has "
                f"{Z.size - rank} more degree(s) of freedom than were given, or it is at a singular configuration "
                "(a change point, where the rigid loops can leave on more than one branch). Give one of "
                f"{moving} as independent too (its velocity chooses the branch).", st.t)
        st.u[Z] = Vt[:rank].T @ ((U[:, :rank].T @ b) / s[:rank])
    res = J @ st.u
    scale = max(float(np.abs(J).max(initial=0.0) * np.abs(st.u).max(initial=0.0)), 1e-300)
    if np.abs(res).max(initial=0.0) > 1e-9 * scale:
        i = int(np.argmax(np.abs(res)))
        raise SolverError(
            f"consistent start: the given velocities do not close the loops (rate {res[i]:.3e} of "
            f"'{closure.constraint_names[i]}'): give fewer independent velocities, or values the loops allow.",
            st.t)


def _independent_values(model: Model, independent, st: State):
    """(u index, q or None, u or None) for every independent coordinate the user gives."""
    if independent is None:
        return []
    items = independent.items() if isinstance(independent, Mapping) else ((n, None) for n in independent)
    out = []
    for name, value in items:
        if not isinstance(name, str):
            raise ModelError(f"consistent start: independent coordinate {name!r} must be a name, e.g. "
                             f"{list(model.coordinate_names)[:4]}.")
        if name in model.coordinate_names:
            k = model.coordinate_names.index(name)
        elif name in model.joint_names and model.joint_kinds[model.joint_index(name)].n_u == 1:
            k = int(model.joint_u_start[model.joint_index(name)])
        else:
            raise ModelError(f"consistent start: '{name}' is no coordinate (nor a one-coordinate joint) of the model; "
                             f"coordinates: {list(model.coordinate_names)[:20]}.")
        if model.u_is_ball[k]:
            raise ModelError(f"consistent start: '{model.coordinate_names[k]}' is a ball rotation coordinate; give the "
                             "ball's state in `state` instead.")
        q = u = None
        if value is not None:
            pair = value if isinstance(value, (tuple, list, np.ndarray)) else (value,)
            if len(pair) not in (1, 2) or not all(isinstance(v, (int, float, np.floating)) and np.isfinite(v)
                                                  for v in pair):
                raise ModelError(f"consistent start: the value of '{name}' must be q or (q, u), finite numbers; got "
                                 f"{value!r}.")
            q = float(pair[0])
            u = float(pair[1]) if len(pair) == 2 else None
        out.append((k, q, u))
    return out


def _loop_closure(model: Model):
    """The rigid-equivalent closure of the model's loops (RigidClosure: the beam links that cut a
    loop, and the bushings) and the coordinates of the pins at those links' ends; (None, []) when
    no loop is cut and there is no bushing."""
    beams: BeamData = model.elements["beam"]
    index = {n: i for i, n in enumerate(beams.names)}
    links = list(dict.fromkeys(beams.link[index[e]] for lp in model.loops for e in lp.elements if e in index))
    if not links and not has_cuts(model):
        return None, []
    closure = RigidClosure(model, links=links, bushings=True)
    pins = []
    for a, b in closure.ends:
        for end in (a, b):
            for k in np.flatnonzero(np.asarray(model.joint_child) == end):
                pins.extend(range(int(model.joint_u_start[k]), int(model.joint_u_start[k]) + model.joint_kinds[k].n_u))
    return closure, np.array(pins, dtype=int)
