"""A double pendulum of two uniform rods, released from the horizontal (the getting-started example)."""

import numpy as np

import flexmb as fm

DEFAULTS = dict(length=1.0, mass=1.0, t_end=3.0, dt=1e-3)  # parameters, then the run settings [m, kg, s]


def build(length=1.0, mass=1.0):
    rod = mass * length**2 / 12 * np.diag([0.0, 1.0, 1.0])  # inertia about the rod's centre, node axes [kg m²]
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("a", position=(0, 0, 0))  # a node is a 6-DOF frame
    mb.add_node("b", position=(length, 0, 0))
    mb.add_body("rod1", "a", mass, com=(length / 2, 0, 0), inertia=rod)
    mb.add_body("rod2", "b", mass, com=(length / 2, 0, 0), inertia=rod)
    mb.add_joint("shoulder", "revolute", "ground", "a", axis=(0, 0, 1))
    mb.add_joint("elbow", "revolute", "a", "b", point=(length, 0, 0), axis=(0, 0, 1))
    return mb.compile()  # immutable Model; bad input raises fm.ModelError naming the offender


if __name__ == "__main__":
    res = fm.simulate(build(), t_end=3.0, dt=1e-3)
    energy = res.total_energy
    print(res.status, "elbow angle at 3 s:", round(float(res.coordinate("elbow.q")[-1]), 4), "rad")
    print("energy balance kept to", f"{np.ptp(energy) / np.abs(res.energy['kinetic']).max():.1e}", "of the motion's")
