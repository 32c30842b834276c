"""The models with loads of the motion f(t, x, R, v, w) and follower loads (docs/motion_forces.md §8) that
tests/test_motion_load_compiled.py checks (the compiled steps against the Python Newton loop, bit for bit) and
benchmarks/motion_load_compiled.py times: one copy, so that the benchmark measures the models the tests check.
Builders only (no runs here)."""

from __future__ import annotations

import numpy as np

import flexmb as fm

__all__ = ["G", "SECTION", "KP", "KD", "KR", "drag_pendulum", "pd_body", "follower_beam", "follower_pendulum"]

G = 9.81
#: the steel strip of :func:`follower_beam` [SI]
SECTION = fm.BeamSection(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)
#: the gains of :func:`pd_body`: position [N/m], velocity [N s/m], angular velocity [N m s/rad]
KP, KD, KR = 400.0, 6.0, 0.05


def drag_pendulum(c: float = 0.8) -> fm.Model:
    """A rod (1 kg, 1 m) on a pin, released horizontal, with a small body (0.2 kg) on a second pin at its tip; the
    tip node under the quadratic drag -c s v, s = sqrt(|v|² + 1e-12) (smooth at rest)."""
    mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
    mb.add_node("rod", position=(0.0, 0.0, 0.0))
    mb.add_body("rod", node="rod", mass=1.0, com=(0.5, 0.0, 0.0), inertia=np.diag([1e-4, 1 / 12, 1 / 12]))
    mb.add_joint("pin", "revolute", "ground", "rod", axis=(0.0, 0.0, 1.0))
    mb.add_node("tip", position=(1.0, 0.0, 0.0))
    mb.add_body("tip", node="tip", mass=0.2, com=(0.0, 0.0, 0.0), inertia=np.eye(3) * 1e-4)
    mb.add_joint("wrist", "revolute", "rod", "tip", point=(1.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), q0=0.3)

    def drag(t, x, R, v, w):
        return -c * np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + 1e-12) * v

    mb.add_load("drag", "tip", drag)
    return mb.compile()


def pd_body(period: float | None = None) -> fm.Model:
    """A body (0.5 kg) on a free joint held by a PD controller on its node to a target moving in time, with a
    rotational damper: f = -kp (x - x*(t)) - kd v, m = -kr w (6 outputs); sampled every ``period`` [s] if given."""
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, -G))
    mb.add_node("b", position=(0.2, 0.1, 1.0))
    mb.add_body("b", node="b", mass=0.5, com=(0.02, 0.0, 0.0), inertia=np.diag([2e-3, 3e-3, 4e-3]))
    mb.add_joint("j", "free", "ground", "b", u0=(0.3, -0.2, 0.1, 1.0, -2.0, 0.5))

    def pd(t, x, R, v, w):
        target = np.array([0.2 + 0.1 * np.sin(3.0 * t), 0.1, 1.0 - 0.05 * t])
        f = -KP * (x - target) - KD * v
        return np.concatenate((f, -KR * w))

    mb.add_load("pd", "b", pd, period=period)
    return mb.compile()


def follower_beam() -> fm.Model:
    """A damped steel strip on a pin with a joint spring, its tip carrying a follower force and moment (node axes),
    a fixed force on its middle node."""
    mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), 4, SECTION, damping=1e-4)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    mb.add_joint_spring("pin", stiffness=2.0, damping=0.01)
    mb.add_load("push", nodes[-1], force=lambda t: np.array([0.0, -0.3 * (1.0 + np.sin(4.0 * t)), 0.05]),
                moment=(0.0, 0.0, 0.002), follower=True)
    mb.add_load("fixed", nodes[2], force=(0.0, 0.0, -0.1))
    return mb.compile()


def follower_pendulum() -> fm.Model:
    """A rigid double pendulum (a rigid tree) whose second link carries a follower force in its own axes."""
    mb = fm.ModelBuilder(gravity=(0.0, -G, 0.0))
    for k, name in enumerate(("a", "b")):
        mb.add_node(name, position=(0.5 * k, 0.0, 0.0))
        mb.add_body(name, node=name, mass=1.0, com=(0.25, 0.0, 0.0), inertia=np.diag([1e-3, 0.02, 0.02]))
    mb.add_joint("j1", "revolute", "ground", "a", axis=(0.0, 0.0, 1.0))
    mb.add_joint("j2", "revolute", "a", "b", point=(0.5, 0.0, 0.0), axis=(0.0, 0.0, 1.0), q0=0.4)
    mb.add_load("thrust", "b", force=lambda t: np.array([0.0, 2.0 + np.cos(2.0 * t), 0.0]), follower=True)
    return mb.compile()
