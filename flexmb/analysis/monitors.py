"""Monitors along a run: where would the *rigid* mechanism be singular?

flexmb closes loops through elastic links, so it runs through configurations where the rigid
mechanism's loop-closure Jacobian loses rank (Zahariev & Cuadrado 2011, §2: "for the case of
singular configurations ... the Jacobian matrix is singular"). This module computes that
Jacobian for the rigid equivalent of a model whose loops are cut through flexible links (beams)
and/or bushings, and its smallest singular value along a run, so the user sees where the rigid
model would fail.

Rigid equivalent of a flexible link (derivation). Make the beam rigid: its two end frames a, b
keep their assembly pose relative to each other, six conditions. In flexmb's tree each end
node hangs on its own joint (the pin that joins the link to a body or to ground), and the
interior nodes are free nodes that no other element touches. Take a link *pinned at both ends
in a plane* (revolute joints with parallel axes, normal to the link) or ball-jointed at both
ends in space. Of the six conditions,

* the out-of-plane ones (translation along the pin axes, rotations about the two in-plane
  axes) are satisfied identically by planar motion: their rows of the Jacobian vanish for every
  planar coordinate, so keeping them would make every planar mechanism look singular (it is
  overconstrained in the spatial count, Zahariev §2, Fig. 1a) and they are dropped;
* the transverse translation and the in-plane rotation involve the end nodes' own pin angles
  (the link's angle at its first pin, its angle relative to the body at its second), which
  appear in no other condition: each row has a private column, so they can never make the
  Jacobian lose rank; they only say that the link's angle follows its chord;
* what remains is the distance condition c = |x_b - x_a| - L0 (L0: the assembly distance):
  a two-force member. Its row is J = e^T (v_b - v_a) / u with e the unit chord, i.e. the
  generalized force B^T w of a unit pair of opposite forces along the chord (virtual work),
  computed here by :meth:`flexmb.engine.assembly.Evaluation.project`.

So for pinned (or ball-jointed) links the rigid equivalent is exactly the distance constraint,
and the smallest singular value of the distance-constraint Jacobian over the undriven
coordinates vanishes exactly where the rigid mechanism is singular (its left null vector is
the self-stress of the rigid links: forces the links could carry with no load, which is why the
elastic forces grow without bound there when the drive pushes on). Links whose ends are clamped
to a body, or pinned by non-parallel axes, keep more of the six conditions; they are refused
with a message (use a stiff bushing cut, whose constrained directions flexmb.analysis.rigid handles).
Bushing cuts are included as in :class:`flexmb.analysis.rigid.RigidModel` (its constrained directions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numba import njit
from scipy.linalg.lapack import dgesdd

from flexmb.analysis.rigid import RigidModel, has_cuts
from flexmb.elements.beam import BeamData
from flexmb.engine.assembly import Assembler, Evaluation
from flexmb.engine.kinematics import _project_node, forward_kinematics
from flexmb.errors import ModelError
from flexmb.model import Model
from flexmb.rotations import expm
from flexmb.state import State

__all__ = ["RigidClosure", "SingularityMonitor", "flexible_link_ends", "next_singular", "state_from_result"]


def flexible_link_ends(model: Model) -> dict[str, tuple[int, int]]:
    """End nodes (a, b) of every flexible link (beams grouped by their ``link``): the two nodes
    that only one element of the link touches."""
    out: dict[str, tuple[int, int]] = {}
    beams: BeamData = model.elements["beam"]
    links = np.asarray(beams.link)
    for name in dict.fromkeys(beams.link):
        sel = links == name
        nodes, counts = np.unique(np.concatenate([beams.a[sel], beams.b[sel]]), return_counts=True)
        ends = nodes[counts == 1]
        if ends.size != 2:
            raise ModelError(f"flexible link '{name}': its elements do not form one open chain (end nodes "
                             f"{[model.node_names[i] for i in ends]}); the rigid equivalent needs a chain of beams.")
        first = int(beams.a[sel][0])
        a, b = (int(ends[0]), int(ends[1])) if ends[0] == first else (int(ends[1]), int(ends[0]))
        out[name] = (a, b)
    return out


def _global_axis(model: Model, k: int) -> np.ndarray:
    p = model.joint_parent[k]
    R = np.eye(3) if p < 0 else model.R0[p]
    return R @ model.joint_axes[k, 0]


class RigidClosure:
    """Loop-closure constraints of the rigid-equivalent mechanism: the distance condition of
    every flexible link (module docstring) and the constrained directions of every bushing.

    ``links``: names of the flexible links to make rigid (default: all); ``bushings``: include
    the bushing cuts (default: if the model has any). Raises ModelError for a link that is not a
    two-force member (both ends pinned by revolute joints with parallel axes normal to the link,
    or by spherical joints)."""

    def __init__(self, model: Model, links: Sequence[str] | None = None, bushings: bool = True) -> None:
        self.model = model
        self.asm = Assembler(model)
        ends = flexible_link_ends(model)
        names = list(ends) if links is None else list(links)
        for n in names:
            if n not in ends:
                raise ModelError(f"rigid closure: '{n}' is not a flexible link of the model; links: {list(ends)}.")
        self.link_names = tuple(names)
        self.ends = np.array([ends[n] for n in names], dtype=int).reshape(-1, 2)
        self.L0 = np.linalg.norm(model.X0[self.ends[:, 1]] - model.X0[self.ends[:, 0]], axis=1)
        for n, (a, b) in zip(self.link_names, self.ends):
            self._check_two_force(n, a, b)
        self.rigid = None
        if bushings and has_cuts(model):
            self.rigid = RigidModel(model)
        self.constraint_names = tuple(f"{n}.distance" for n in self.link_names) + (
            self.rigid.cut_names if self.rigid is not None else ())
        if not self.constraint_names:
            raise ModelError("rigid closure: the model has no flexible link and no bushing: no loop is cut.")
        self.free = model.free_u
        self._w = np.zeros((model.n_nodes, 6))  # the unit force pair of one link (zero elsewhere)

    def _check_two_force(self, name: str, a: int, b: int) -> None:
        m = self.model
        chord = m.X0[b] - m.X0[a]
        chord = chord / np.linalg.norm(chord)
        axes = []
        for end in (a, b):
            js = [k for k in range(m.n_joints) if m.joint_child[k] == end or m.joint_parent[k] == end]
            kinds = [m.joint_kinds[k].name for k in js]
            if len(js) != 1 or kinds[0] not in ("revolute", "spherical"):
                raise ModelError(
                    f"flexible link '{name}': end node '{m.node_names[end]}' is not pinned (its joints: {kinds}); its "
                    "rigid equivalent is more than the distance condition: join each end by one revolute or spherical "
                    "joint, or cut the loop by a bushing.")
            if kinds[0] == "revolute":
                axes.append(_global_axis(m, js[0]))
        if len(axes) == 1 or (len(axes) == 2 and (abs(abs(axes[0] @ axes[1]) - 1) > 1e-9
                                                  or max(abs(axes[0] @ chord), abs(axes[1] @ chord)) > 1e-9)):
            raise ModelError(f"flexible link '{name}': its pins are not parallel revolute axes normal to the link "
                             "(nor two spherical joints), so it is no two-force member and the distance condition "
                             "alone does not make it rigid; cut the loop by a bushing instead.")

    def closure(self, st: State, ev: Evaluation | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Constraint values c (n_c,) — link length changes [m], then bushing deformations — and
        the Jacobian J = dc/du (n_c, n_u)."""
        kin = forward_kinematics(self.model, st, self.asm.pattern) if ev is None else ev.kin  # positions only
        t = kin.pattern
        n = self.ends.shape[0]
        c, J = np.empty(n), np.empty((n, self.model.n_u))
        _link_closure(self.ends, self.L0, t.joint_parent_ext, t.joint_child, t.coord_start, t.coord_count, kin.S, kin.x,
                      self._w, np.empty_like(self._w), c, J)
        if self.rigid is not None:
            cb, Jb = self.rigid.closure(st)
            c, J = np.concatenate([c, cb]), np.vstack([J, Jb])
        return c, J

    def singular_values(self, st: State, ev: Evaluation | None = None) -> np.ndarray:
        """Singular values of the closure Jacobian over the undriven coordinates, largest first."""
        _, J = self.closure(st, ev)
        Jf = J[:, self.free]
        if Jf.size:  # LAPACK's dgesdd straight: numpy's svd costs more than the small SVD itself
            _, s, _, info = dgesdd(Jf, compute_uv=0)
            if info == 0:
                return s
        return np.linalg.svd(Jf, compute_uv=False)

    def sigma_min(self, st: State, ev: Evaluation | None = None) -> float:
        """Smallest singular value of the closure Jacobian over the undriven coordinates: zero
        where the rigid mechanism is singular."""
        s = self.singular_values(st, ev)
        return float(s[-1]) if s.size else float("inf")  # largest first


@njit(cache=True)
def _link_closure(ends, L0, parent, child, coord_start, coord_count, S, x, w, W, c, J):
    """The flexible links' rows of :meth:`RigidClosure.closure` in one pass: per link (a, b) its
    length change c = |x_b - x_a| - L0 and its Jacobian row, Bᵀ of a unit force pair along the chord
    (-e at a, e at b; Evaluation.project). w: the zero node wrenches (N, 6), left zero; W: work."""
    for k in range(ends.shape[0]):
        a, b = ends[k, 0], ends[k, 1]
        d0, d1, d2 = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
        L = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        w[a, 0], w[a, 1], w[a, 2] = -d0 / L, -d1 / L, -d2 / L
        w[b, 0], w[b, 1], w[b, 2] = d0 / L, d1 / L, d2 / L
        _project_node(parent, child, coord_start, coord_count, S, w, x, W, J[k])
        for i in range(3):
            w[a, i] = 0.0
            w[b, i] = 0.0
        c[k] = L - L0[k]


class SingularityMonitor:
    """A ``simulate(..., callback=monitor)`` callback: records the rigid closure Jacobian's
    smallest singular value every ``every`` steps (``t``, ``sigma`` lists) and the largest
    axial force in the monitored flexible links, and stops the run (returns the reason, which
    becomes the status ``stopped: <reason>``) when that force exceeds ``force_limit`` [N] —
    e.g. the links' elastic limit, which the stiff forces of a mechanism driven into a singular
    configuration exceed (Zahariev & Cuadrado §4: "the stiff forces become extremely high ...").
    ``label`` names the singular configuration in the message."""

    def __init__(self, model: Model, every: int = 1, force_limit: float | None = None, links: Sequence[str] | None = None,
                 label: str = "a singular configuration of the rigid mechanism") -> None:
        if not (isinstance(every, (int, np.integer)) and every >= 1):
            raise ModelError(f"singularity monitor: every = {every!r} must be a positive integer.")
        if force_limit is not None and not (np.isfinite(force_limit) and force_limit > 0):
            raise ModelError(f"singularity monitor: force_limit = {force_limit!r} must be a positive number.")
        self.closure = RigidClosure(model, links)
        self.every, self.force_limit, self.label = int(every), force_limit, label
        links_of = np.asarray(model.elements["beam"].link)
        self._elements = [np.flatnonzero(links_of == n) for n in self.closure.link_names]
        self.t: list[float] = []
        self.sigma: list[float] = []
        self.max_force: list[float] = []
        self._calls = 0

    def next_singular(self, rise: float = 0.5) -> tuple[float, float]:
        """(time, value) of the smallest recorded sigma_min after sigma_min first rose above
        ``rise`` times its largest value: the singular configuration reached after leaving the
        start (a run may start in one). NaN if it never rose."""
        return next_singular(np.array(self.t), np.array(self.sigma), rise)

    def __call__(self, st: State, ev: Evaluation) -> str | None:
        self._calls += 1
        if self._calls % self.every:
            return None
        self.t.append(st.t)
        self.sigma.append(self.closure.sigma_min(st, ev))
        if "beam" not in ev.elements or not self._elements:
            return None
        fe = ev.elements["beam"]  # the axial force N is the first local force (section_forces' first column)
        axial = np.abs(fe.local_forces[:, 0])
        N = [float(axial[el].max()) for el in self._elements]
        k = int(np.argmax(N))
        self.max_force.append(N[k])
        if self.force_limit is not None and N[k] > self.force_limit:
            t_min, s_min = self.next_singular()
            return (f"t = {st.t:.6g} s: axial force {N[k]:.3g} N in flexible link '{self.closure.link_names[k]}' "
                    f"exceeds the limit {self.force_limit:.3g} N at {self.label}: smallest singular value of the rigid "
                    f"loop-closure Jacobian {self.sigma[-1]:.3g} (largest along the run {max(self.sigma):.3g}, "
                    f"smallest since leaving the start {s_min:.3g} at t = {t_min:.6g} s)")
        return None


def next_singular(t: np.ndarray, sigma: np.ndarray, rise: float = 0.5) -> tuple[float, float]:
    """(time, value) of the smallest ``sigma`` after it first rose above ``rise`` × its maximum
    (see :meth:`SingularityMonitor.next_singular`); NaN if it never did."""
    t, sigma = np.asarray(t, dtype=float), np.asarray(sigma, dtype=float)
    if not sigma.size:
        return float("nan"), float("nan")
    risen = np.flatnonzero(sigma > rise * sigma.max())
    if not risen.size or risen[0] == 0 and sigma[0] >= sigma.max():
        return float("nan"), float("nan")
    k = risen[0] + int(np.argmin(sigma[risen[0]:]))
    return float(t[k]), float(sigma[k])


def state_from_result(model: Model, result, i: int) -> State:
    """The State of output row ``i`` of ``result`` (balls from their rotation vectors)."""
    q = np.asarray(result.q[i])
    st = State(float(result.t[i]), q[~model.u_is_ball].copy(), np.zeros((model.n_ball, 3, 3)),
               np.asarray(result.u[i]).copy(), np.asarray(result.udot[i]).copy())
    if model.n_ball:
        st.balls = expm(q[model.u_is_ball].reshape(-1, 3))
    return st
