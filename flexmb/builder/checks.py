"""Checks that need the compiled model and run the engine on it (kinematics, assembly,
CHOLMOD): ModelBuilder.compile() calls :func:`check_model` once the Model exists (as MuJoCo's
compiler calls ``mj_setConst`` once mjModel and mjData exist). The builder stands above the
engine; the Model type does not.

Particle bodies (Attia; builder/particle_bodies.py): a particle set is dynamically equivalent
to its body only if every particle's node moves with the body, checked on the rows of B at the
initial and at a random state; planar and rod models that can turn out of their plane are
warned about, and negative particle masses that make M̄ indefinite are refused.
"""

from __future__ import annotations

import warnings

import numpy as np

from flexmb.elements import particles as pk
from flexmb.engine.assembly import Assembler
from flexmb.engine.kinematics import TreePattern, forward_kinematics
from flexmb.engine.linalg import SparseCholesky
from flexmb.errors import ModelError, SolverError
from flexmb.model import Model
from flexmb.rotations import expm, skew
from flexmb.state import State

__all__ = ["check_model", "check_particle_bodies"]


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def check_model(model: Model) -> None:
    """All checks of a freshly compiled model (ModelBuilder.compile calls it)."""
    if model.particle_body_names:
        check_particle_bodies(model)


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
    out_of_plane = []
    for st in (st0, st1):
        kin = forward_kinematics(model, State(st.t, st.q, st.balls, st.u, st.udot), pat)
        B = kin.B().tocsr()
        for b, name in enumerate(model.particle_body_names):
            r = int(model.particle_body_reference[b])
            nodes = np.array(model.particle_body_nodes[b])
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
            if st is st0 and model.particle_body_planar[b] and W.size:
                Xp = kin.x[nodes]
                if model.particle_body_kinds[b] == "rod":
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
        warnings.warn(f"particle body '{model.particle_body_names[b]}' can rotate {what}; its motion is then not that "
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
    kin = forward_kinematics(model, st0, TreePattern(model)) if candidates else None
    for b in candidates:
        m = np.array(model.particle_body_masses[b])
        if m.min() >= 0:
            continue
        _, _, Jp = pk.particle_properties(m[None], kin.x[np.array(model.particle_body_nodes[b])][None])
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
        name = model.particle_body_names[b]
        neg = [f"'{model.node_names[n]}' ({_fmt(mm)} kg)" for n, mm in zip(model.particle_body_nodes[b],
                                                                           model.particle_body_masses[b]) if mm < 0]
        raise ModelError(
            f"particle body '{name}': its negative particle masses at nodes {', '.join(neg)} give the particles an "
            f"indefinite inertia (principal moments {[_fmt(e) for e in evp]}), and the model lets the body rotate about "
            f"such an axis: the generalized mass matrix is indefinite (eigenvalue {_fmt(lam.min())}). Move the primary "
            "particles (about one radius of gyration from the centre of mass) so that all masses are positive, "
            "or use kind='spatial'.")
