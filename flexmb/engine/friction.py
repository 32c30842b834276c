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
c = μ r |F_⊥| tanh(u/ω_ε)/u ≥ 0 (→ μ r |F_⊥|/ω_ε at rest), γ' c is added to the diagonal
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
"""

from __future__ import annotations

import numpy as np

from flexmb.engine.kinematics import Kinematics, TreePattern
from flexmb.model import Model

__all__ = ["JointFriction", "friction_torques"]


def friction_torques(F: np.ndarray, g: np.ndarray, u: np.ndarray, mu: np.ndarray, radius: np.ndarray,
                     omega_eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (1) for n joints at once: reaction forces F (n,3), unit axes g (n,3), rates u (n,):
    returns the friction torques (n,) and the radial loads |F_⊥| (n,)."""
    Fp = F - np.einsum("ni,ni->n", F, g)[:, None] * g
    load = np.linalg.norm(Fp, axis=1)
    return -mu * radius * load * np.tanh(u / omega_eps), load


class JointFriction:
    """The bearing friction of one evaluated state: joints, axes, rates; :meth:`torques` for the
    node wrenches of given accelerations (cheap: one preorder cumulative sum of the forces)."""

    def __init__(self, model: Model, kin: Kinematics, pattern: TreePattern, u: np.ndarray) -> None:
        self.model = model
        self.u = np.asarray(model.friction_u)  # velocity coordinate of each friction joint
        self.child = np.asarray(model.joint_child)[model.friction_joint]
        self.axis = kin.S[self.u, 3:]  # unit rotation axes, global
        self.rate = np.asarray(u)[self.u]
        self.pattern = pattern
        self.load: np.ndarray | None = None  # |F_⊥| of the last torques() call

    def reaction_forces(self, w: np.ndarray) -> np.ndarray:
        """Force part (n_friction, 3) of the joints' reactions for node wrenches w (N,6)."""
        p = self.pattern
        cs = np.concatenate([np.zeros((1, 3)), np.cumsum(w[p.preorder, :3], axis=0)])
        return cs[p.sub_last[self.child]] - cs[p.sub_first[self.child]]

    def torques(self, w: np.ndarray) -> np.ndarray:
        """Friction torques (n_friction,) on the joints' coordinates for node wrenches w (N,6)."""
        m = self.model
        tau, self.load = friction_torques(self.reaction_forces(w), self.axis, self.rate, m.friction_mu,
                                          m.friction_radius, m.friction_omega_eps)
        return tau

    def power(self, w: np.ndarray) -> float:
        """Power of the friction torques (≤ 0) for node wrenches w."""
        return float(np.dot(self.torques(w), self.rate))

    def damping_diag(self, cols: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
        """Secant viscous coefficient c = μ r |F_⊥| tanh(u/ω_ε)/u ≥ 0 of eq. (1) (module docstring)
        with |F_⊥| from the last :meth:`torques` call (or from node wrenches w), on ``cols``."""
        m = self.model
        if w is not None or self.load is None:
            self.torques(np.zeros((m.n_nodes, 6)) if w is None else w)
        x = self.rate / m.friction_omega_eps
        small = np.abs(x) < 1e-6
        secant = np.where(small, 1.0 - x * x / 3, np.tanh(x) / np.where(small, 1.0, x))  # tanh(x)/x
        c = np.zeros(m.n_u)
        np.add.at(c, self.u, m.friction_mu * m.friction_radius * self.load / m.friction_omega_eps * secant)
        return c[np.asarray(cols)]
