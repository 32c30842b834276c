"""Coulomb friction in the bearings of revolute joints (Zahariev & Cuadrado 2011, §1, §5:
"friction forces in the bearings for self-locking configurations are taken into account").

A revolute joint k with friction coefficient μ and pin radius r carries the friction torque

    τ_k = -μ r |F_⊥| tanh(u_k / ω_ε)                                                      (1)

on its coordinate: it opposes the relative rotation rate u_k, and its size is the classical
journal-bearing torque μ r |F_⊥| (the pin's friction circle has radius μ r; for small μ,
r sin(atan μ) ≈ μ r). F_⊥ is the part normal to the axis g of the joint's reaction force F: the
force that the parent exerts on the child's subtree (:meth:`flexmb.engine.assembly.Assembler.reactions`),
i.e. the subtree sum of the node wrenches w = M (B u̇ + ζ) + g - f (force part; a force along
the axis loads a thrust face, not the pin, and is left out).

Regularisation (document of the choice): sign(u) is replaced by tanh(u/ω_ε). Below |u| ~ ω_ε
the bearing acts as a viscous damper of coefficient μ r |F_⊥| / ω_ε, so a "stuck" joint creeps
at the speed ω_ε atanh(τ_demand / μ r |F_⊥|) instead of standing exactly still; the default
ω_ε = 1e-3 rad/s makes that creep negligible for mechanisms moving at ~1 rad/s while keeping the
equations smooth for Newton. tanh is smooth and odd, dissipative for every u (τ u ≤ 0), and its
slope at zero is finite.

Implicitness: F depends on the accelerations u̇ (the reactions carry inertia forces), so (1)
enters the residual of the equations of motion (flexmb.engine.assembly.Evaluation.residual) through
the same node wrenches w(u̇) whose subtree sums give B^T w. The Newton iteration matrix gets
only the friction's viscous part: writing (1) as τ = -c(u) u with the secant coefficient

    c = μ r |F_⊥| tanh(u/ω_ε)/u ≥ 0   (→ μ r |F_⊥|/ω_ε at rest)                              (2)

γ' c is added to the diagonal
(:meth:`JointFriction.damping_diag`, positive: S stays positive definite). The secant slope is
an upper bound of the tangent slope μ r |F_⊥| sech²(u/ω_ε)/ω_ε. A joint that slides at the
step's first iterate and sticks at its solution makes Newton cycle; the step halving gets
through it with a few halved steps, without any slope only with tens of times more (measured:
a light crank pushed at its dead centre, tests/test_case_bearing_friction_self_locking.py; the
tangent slope does as well there as the secant one). The price: where a joint slides
fast under a large load on a light body, the secant slope overestimates and the contraction is
slower (the integrator may halve the step). The dependence of |F_⊥| on u̇ is left out of the
matrix: Newton converges linearly, at a rate ~ μ r / (lever arm of the bodies' inertia), fast
for pins small compared with the links (measured: 2–5 iterations per step in the tests).

Power: Σ τ_k u_k ≤ 0; its negative is added to the dissipated energy (flexmb.solvers.simulate).

Compiled: (1) and (2) are evaluated by compiled kernels only (:func:`friction_loads`,
:func:`friction_secant`, :func:`friction_diag`), called alike by the Python evaluation
(:class:`JointFriction`, Evaluation.residual, Assembler.iteration_matrix) and by the compiled Newton
step of flexmb/solvers/element_step.py (its iterates' residual and S's diagonal), so a step with
friction is the same bit for bit on either path (tests/test_friction_compiled.py). The compiled
rigid-tree step (flexmb/solvers/tree_step.py) does not take friction yet: a rigid tree with friction
steps in Python; the whole-run call of flexmb/solvers/element_run.py neither (the recorder sums the
friction's power).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from flexmb.engine.kinematics import Kinematics, TreePattern
from flexmb.model import Model

__all__ = ["JointFriction", "friction_arrays", "friction_torques", "friction_loads", "friction_secant", "friction_diag"]


def friction_torques(F: np.ndarray, g: np.ndarray, u: np.ndarray, mu: np.ndarray, radius: np.ndarray,
                     omega_eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (1) for n joints at once: reaction forces F (n,3), unit axes g (n,3), rates u (n,):
    returns the friction torques (n,) and the radial loads |F_⊥| (n,)."""
    Fp = F - np.einsum("ni,ni->n", F, g)[:, None] * g
    load = np.linalg.norm(Fp, axis=1)
    return -mu * radius * load * np.tanh(u / omega_eps), load


@njit(cache=True)
def friction_loads(w, S, u, joints, law, cs, tau, load):
    """Eq. (1) of every friction joint for node wrenches ``w`` (N, 6), spatial axes ``S`` (n_u, 6) and
    rates ``u`` (n_u,): ``joints`` = (the joints' coordinates ``fu``, child nodes ``child``, the tree's
    ``preorder``, ``sub_first``, ``sub_last``), ``law`` = (mu, radius, omega_eps) per joint; the
    reactions' forces are subtree sums of w in the tree's preorder (a subtree is the range
    [sub_first, sub_last) of it: cumulative sums ``cs`` (N + 1, 3), one pass); writes the torques ``tau`` and the radial loads
    |F_⊥| ``load``. The one evaluation of (1): the Python evaluation (:meth:`JointFriction.torques`)
    and the compiled Newton step (flexmb/solvers/element_step.py) both call it, so both give the same
    torques bit for bit."""
    fu, child, preorder, sub_first, sub_last = joints
    mu, radius, omega_eps = law
    for j in range(3):
        cs[0, j] = 0.0
    for k in range(preorder.size):
        i = preorder[k]
        for j in range(3):
            cs[k + 1, j] = cs[k, j] + w[i, j]
    for n in range(fu.size):
        a, b = sub_last[child[n]], sub_first[child[n]]
        F0, F1, F2 = cs[a, 0] - cs[b, 0], cs[a, 1] - cs[b, 1], cs[a, 2] - cs[b, 2]
        g0, g1, g2 = S[fu[n], 3], S[fu[n], 4], S[fu[n], 5]
        d = F0 * g0 + F1 * g1 + F2 * g2  # the thrust part along the axis, left out
        p0, p1, p2 = F0 - d * g0, F1 - d * g1, F2 - d * g2
        load[n] = math.sqrt(p0 * p0 + p1 * p1 + p2 * p2)
        tau[n] = -mu[n] * radius[n] * load[n] * math.tanh(u[fu[n]] / omega_eps[n])


@njit(cache=True)
def friction_secant(u, fu, mu, radius, omega_eps, load, c):
    """The secant viscous coefficients c = μ r |F_⊥| tanh(u/ω_ε)/u ≥ 0 (eq. 2) of the
    friction joints (coordinates ``fu``) at rates ``u`` (n_u,) and radial loads ``load`` into ``c``;
    tanh(x)/x by its series 1 - x²/3 below |x| = 1e-6."""
    for n in range(fu.size):
        x = u[fu[n]] / omega_eps[n]
        s = 1.0 - x * x / 3 if abs(x) < 1e-6 else math.tanh(x) / x
        c[n] = mu[n] * radius[n] * load[n] / omega_eps[n] * s


@njit(cache=True)
def friction_diag(u, fu, fpos, mu, radius, omega_eps, load, c, gp, diag, out):
    """``diag`` + γ' c (eq. 2) on the free coordinates into ``out`` (``fpos``: each friction joint's position
    among them, -1 for a driven one): the iteration matrix's diagonal with the friction's viscous
    slope, as Assembler.iteration_matrix adds it (:meth:`JointFriction.damping_diag`)."""
    friction_secant(u, fu, mu, radius, omega_eps, load, c)
    for j in range(diag.size):
        out[j] = diag[j]
    for n in range(fu.size):
        if fpos[n] >= 0:
            out[fpos[n]] = diag[fpos[n]] + gp * c[n]


def friction_arrays(model: Model, pattern: TreePattern, free: np.ndarray) -> tuple:
    """The arrays of the compiled Newton step (flexmb/solvers/element_step.py) for :func:`friction_loads` and
    :func:`friction_diag`: (coordinates, child nodes, the tree's preorder, subtree starts and ends, μ, r, ω_ε,
    the coordinates' positions among the ``free`` ones (-1: driven), buffers for the torques, radial
    loads, secant slopes (n_friction,) and the cumulative sums (N + 1, 3)); empty without friction."""
    i64 = np.int64
    fu = np.asarray(model.friction_u, dtype=i64)
    where = np.full(model.n_u, -1, dtype=i64)
    where[free] = np.arange(free.size)
    nf = fu.size
    return (fu, np.asarray(model.joint_child, dtype=i64)[np.asarray(model.friction_joint, dtype=i64)],
            np.asarray(pattern.preorder, dtype=i64), np.asarray(pattern.sub_first, dtype=i64),
            np.asarray(pattern.sub_last, dtype=i64), np.asarray(model.friction_mu, dtype=float),
            np.asarray(model.friction_radius, dtype=float), np.asarray(model.friction_omega_eps, dtype=float), where[fu],
            np.empty(nf), np.empty(nf), np.empty(nf), np.empty((model.n_nodes + 1, 3)))


class JointFriction:
    """The bearing friction of one evaluated state: joints, axes, rates; :meth:`torques` for the
    node wrenches of given accelerations (cheap: one preorder cumulative sum of the forces)."""

    def __init__(self, model: Model, kin: Kinematics, pattern: TreePattern, u: np.ndarray) -> None:
        self.model = model
        self.u = np.asarray(model.friction_u)  # velocity coordinate of each friction joint
        self.child = np.asarray(model.joint_child)[model.friction_joint]
        self.axis = kin.S[self.u, 3:]  # unit rotation axes, global
        self.rate = np.asarray(u)[self.u]
        self._S, self._u_all = kin.S, np.asarray(u, dtype=float)
        self.pattern = pattern
        self.load: np.ndarray | None = None  # |F_⊥| of the last torques() call

    def reaction_forces(self, w: np.ndarray) -> np.ndarray:
        """Force part (n_friction, 3) of the joints' reactions for node wrenches w (N,6)."""
        p = self.pattern
        cs = np.concatenate([np.zeros((1, 3)), np.cumsum(w[p.preorder, :3], axis=0)])
        return cs[p.sub_last[self.child]] - cs[p.sub_first[self.child]]

    def torques(self, w: np.ndarray) -> np.ndarray:
        """Friction torques (n_friction,) on the joints' coordinates for node wrenches w (N,6)
        (:func:`friction_loads`)."""
        m, p = self.model, self.pattern
        n = self.u.size
        tau, self.load = np.empty(n), np.empty(n)
        joints = (self.u.astype(np.int64), self.child.astype(np.int64), p.preorder.astype(np.int64),
                  p.sub_first.astype(np.int64), p.sub_last.astype(np.int64))
        friction_loads(np.ascontiguousarray(w, dtype=float), self._S, self._u_all, joints,
                       (m.friction_mu, m.friction_radius, m.friction_omega_eps), np.empty((w.shape[0] + 1, 3)), tau, self.load)
        return tau

    def power(self, w: np.ndarray) -> float:
        """Power of the friction torques (≤ 0) for node wrenches w (summed in joint order)."""
        total = 0.0
        for t, r in zip(self.torques(w).tolist(), self.rate.tolist()):
            total += t * r
        return total

    def damping_diag(self, cols: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
        """Secant viscous coefficient c = μ r |F_⊥| tanh(u/ω_ε)/u ≥ 0 of eq. (2)
        with |F_⊥| from the last :meth:`torques` call (or from node wrenches w), on ``cols``
        (:func:`friction_secant`)."""
        m = self.model
        if w is not None or self.load is None:
            self.torques(np.zeros((m.n_nodes, 6)) if w is None else w)
        coef = np.empty(self.u.size)
        friction_secant(self._u_all, self.u.astype(np.int64), m.friction_mu, m.friction_radius, m.friction_omega_eps,
                        self.load, coef)
        c = np.zeros(m.n_u)
        np.add.at(c, self.u, coef)
        return c[np.asarray(cols)]
