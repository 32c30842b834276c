"""
A pendulum and a chain: joint coordinates and the velocity transformation
=========================================================================

A model is nodes (6-DOF frames), bodies on them, and joints between them that form a tree from
ground. The unknowns are the tree's *joint coordinates* q and their rates u; the velocities of the
nodes follow from them, V = B(q) u (the velocity transformation, docs/equations_of_motion.md §2,
eq. (K6)). This tutorial builds a pendulum, checks its period, then a chain of rods, and shows the
path matrix and V = B u on the result.
"""

# %%
# A pendulum
# ----------
# One uniform rod of length L = 1 m and mass m = 1 kg on a revolute joint at its end. A node is
# placed at the pivot; the body's centre of mass is given relative to the node, in node axes,
# and its inertia tensor about the centre of mass. ``q0`` starts it 0.1 rad off.
import matplotlib.pyplot as plt
import numpy as np

import flexmb as fm

L, m, g = 1.0, 1.0, 9.81
rod = m * L**2 / 12 * np.diag([0.0, 1.0, 1.0])  # about the rod's centre [kg m²]

mb = fm.ModelBuilder(gravity=(0, -g, 0))
mb.add_node("pivot", position=(0, 0, 0))
mb.add_body("rod", "pivot", m, com=(0, -L / 2, 0), inertia=rod)  # the rod hangs down along -y
mb.add_joint("pin", "revolute", "ground", "pivot", axis=(0, 0, 1), q0=0.1)
pendulum = mb.compile()
print(fm.describe(pendulum))

# %%
# ``simulate`` integrates the equations of motion with the generalized-α method; here 4 s in steps
# of 1 ms. The period of small swings of a rod about its end is 2π √(2L / 3g).
res = fm.simulate(pendulum, t_end=4.0, dt=1e-3)
q = res.coordinate("pin.q")
up = np.flatnonzero((q[:-1] < 0) & (q[1:] >= 0))  # upward zero crossings
t_cross = res.t[up] - q[up] * (res.t[up + 1] - res.t[up]) / (q[up + 1] - q[up])
period = np.diff(t_cross).mean()
print(f"status: {res.status}; period {period:.5f} s, closed form (small swings) {2 * np.pi * np.sqrt(2 * L / (3 * g)):.5f} s")

fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(res.t, q)
ax.set_xlabel("t [s]")
ax.set_ylabel("pin.q [rad]")
ax.set_title("the pendulum's joint coordinate")
fig.tight_layout()

# %%
# A chain
# -------
# Five rods, each hanging from the previous one's end: each joint's parent is the previous node,
# so the joints form a path from ground, and there are five coordinates ``j0.q`` … ``j4.q``, the
# angles of each rod *relative to its parent*. Released from horizontal, it falls.
n = 5
mb = fm.ModelBuilder(gravity=(0, -g, 0))
parent = "ground"
for i in range(n):
    mb.add_node(f"n{i}", position=(i * L, 0, 0))
    mb.add_body(f"rod{i}", f"n{i}", m, com=(L / 2, 0, 0), inertia=rod)
    mb.add_joint(f"j{i}", "revolute", parent, f"n{i}", axis=(0, 0, 1))
    parent = f"n{i}"
chain = mb.compile()
print("coordinates:", chain.n_u, [f"j{i}.q" for i in range(n)])

# %%
# The secondary path matrix π* of Issa & Arczewski (``model.secondary_path_matrix()``, nodes ×
# joints) is nonzero where joint k lies on the path from ground to node i: the velocity of node i
# is the sum of the rates of the joints on its path, each turning about its own axis. That is the
# block pattern of B in V = B(q) u (docs/equations_of_motion.md §2): each node's row of blocks has
# one entry per joint on its path.
print((chain.secondary_path_matrix() != 0).astype(int))

# %%
# The result holds each node's twist (v, ω) at every output row (``res.twists``) and its position
# (``res.x``). V = B u is what flexmb computes the twists from; the node positions are integrated
# from them, so the numerical derivative of the last node's position agrees with its velocity.
res = fm.simulate(chain, t_end=1.0, dt=1e-3)
tip = chain.node_index("n4")
v_tip = res.twists[:, tip, :3]
v_fd = np.gradient(res.x[:, tip], res.t, axis=0)
print(f"status: {res.status}; |v - dx/dt| at most {np.abs(v_tip - v_fd)[5:-5].max():.2e} m/s "
      f"(central differences, dt = 1 ms), speeds up to {np.linalg.norm(v_tip, axis=1).max():.2f} m/s")
print(f"energy: balance T + V - W kept within {np.ptp(res.total_energy):.2e} J")

fig, ax = plt.subplots(figsize=(5, 4))
for k in range(0, len(res.t), 100):
    pts = np.vstack([[0, 0], res.x[k, :, :2]])
    tip_end = res.x[k, -1, :2] + L * res.R[k, -1][:2, 0]  # the last rod's far end: along its node's e1
    pts = np.vstack([pts, tip_end])
    ax.plot(pts[:, 0], pts[:, 1], "o-", color=plt.cm.viridis(k / len(res.t)), ms=3)
ax.set_aspect("equal")
ax.set_title("the falling chain every 0.1 s")
fig.tight_layout()
plt.show()
