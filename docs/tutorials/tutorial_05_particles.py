"""
Particle bodies: Attia's equivalent particles
=============================================

A rigid body can be given as dynamically equivalent point masses on nodes instead of a mass,
centre of mass and 6×6 inertia (Attia, "Point-joint coordinate formulation for the dynamic
analysis of generalised planar linkages", 2005, §2–3). The particles sit where the body meets
the rest of the mechanism — joint centres, the nodes where a flexible link attaches — and their
masses are chosen so that the particles have the body's mass, centre of mass and inertia. This
tutorial swings the same rod and the same plate once as ordinary bodies and once as particle
bodies, and shows that the motions agree.
"""

# %%
# A rod
# -----
# A uniform rod, 1 m, 1 kg, on a revolute joint at one end: ``kind="rod"`` puts particles on its
# two ends and its midpoint, with masses m/6, m/6 and 2m/3 (the same mass, centre and moment of
# inertia about any axis normal to the rod). The far end is given as a point: flexmb creates a
# node there, fixed to the reference node.
import matplotlib.pyplot as plt
import numpy as np

import flexmb as fm

L, m = 1.0, 1.0


def pendulum(particles):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("pivot", (0, 0, 0))
    if particles:
        mb.add_particle_body("rod", "pivot", m, com=(L / 2, 0, 0), inertia=m * L**2 / 12,
                             particle_nodes=["pivot", (L, 0, 0)], kind="rod")
    else:
        mb.add_body("rod", "pivot", m, com=(L / 2, 0, 0), inertia=m * L**2 / 12 * np.diag([0, 1, 1]))
    mb.add_joint("pin", "revolute", "ground", "pivot", axis=(0, 0, 1))
    return mb.compile()


rod_p = pendulum(True)
pb = rod_p.elements["particle_body"]
print("particle body", pb.names[0], "on nodes", [rod_p.node_names[i] for i in pb.nodes[0]],
      "with masses", np.round(pb.masses[0], 6), "kg")
res_b = fm.simulate(pendulum(False), t_end=2.0, dt=1e-3)
res_p = fm.simulate(rod_p, t_end=2.0, dt=1e-3)
print(f"rod: largest difference of the joint angle {np.abs(res_b.coordinate('pin.q') - res_p.coordinate('pin.q')).max():.1e} rad")

# %%
# A plate
# -------
# A triangular plate (mass 3 kg) on a revolute joint at one corner, swinging in its plane:
# ``kind="planar"`` takes three primary particles and a fourth at the midpoint of the first and
# the third, with masses from Attia's 4×4 system (eq. 2.1): the mass, the centre of mass in the
# plane and the polar moment. The same plate as an ordinary body needs its centre of mass and its
# inertia tensor; for the particle body only the polar moment counts (a planar model is exact
# for motion in its plane; ``compile`` warns if the body could turn out of it).
P = np.array([[0.0, 0.0, 0.0], [0.6, -0.2, 0.0], [0.2, -0.7, 0.0]])  # corners; the pivot at the first
mass = 3.0
com = P.mean(axis=0)
# inertia of a uniform triangle about its centroid (in-plane moments, polar moment)
Q = P - com
J = mass / 12 * sum(np.outer(q, q) for q in Q) + mass / 12 * np.outer(Q.sum(0), Q.sum(0))
Jt = np.trace(J) * np.eye(3) - J  # the inertia tensor from the second moments
J_polar = Jt[2, 2]


def plate(particles):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("corner", (0, 0, 0))
    if particles:
        mb.add_particle_body("plate", "corner", mass, com=com, inertia=J_polar,
                             particle_nodes=["corner", tuple(P[1]), tuple(P[2])], kind="planar")
    else:
        mb.add_body("plate", "corner", mass, com=com, inertia=Jt)
    mb.add_joint("pin", "revolute", "ground", "corner", axis=(0, 0, 1), q0=0.6)
    return mb.compile()


# %%
# The corners of a uniform triangle are close to its centroid for its size: two of the four
# particle masses come out negative. flexmb warns (``NegativeParticleMassWarning``, with where to
# place the primaries for positive masses); the particle set is still dynamically equivalent, and
# ``compile`` checks that the mass matrix stays positive definite.
import warnings  # noqa: E402

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    plate_p = plate(True)
print(type(caught[0].message).__name__, ":", str(caught[0].message).split(". ")[0])
res_b = fm.simulate(plate(False), t_end=2.0, dt=1e-3)
res_p = fm.simulate(plate_p, t_end=2.0, dt=1e-3)
diff = np.abs(res_b.coordinate("pin.q") - res_p.coordinate("pin.q")).max()
print(f"plate: largest difference of the joint angle {diff:.1e} rad; particle masses "
      f"{np.round(plate_p.elements['particle_body'].masses[0], 4)} kg")

fig, ax = plt.subplots(figsize=(7, 3))
for res, style, label in ((res_b, "-", "rigid body"), (res_p, "--", "particle body")):
    ax.plot(res.t, res.coordinate("pin.q"), style, label=label)
ax.set(xlabel="t [s]", ylabel="pin.q [rad]", title="the plate swinging: two descriptions, one motion")
ax.legend()
fig.tight_layout()

# %%
# Loads on a particle body (``add_particle_load``) are distributed over its primary particles with
# Attia's α (eq. 3.2): the same resultant and moment about any point. ``cases/attia_3rrr.py``
# builds Attia's 3-RRR platform this way, its loops cut by stiff bushings.
plt.show()
