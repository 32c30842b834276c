"""
Passing a singular configuration: the monitor, σ_min, branches
==============================================================

A rigid closed loop is *singular* where its closure Jacobian loses rank: there the rigid model
cannot say how the mechanism moves on, and the force needed to move it is unbounded. flexmb cuts
the loop through an elastic link, so nothing in its equations is singular; what it can still do
is *watch* the rigid closure: σ_min, the smallest singular value of the rigid loop-closure
Jacobian over the undriven coordinates, is zero exactly at a singular configuration.

This tutorial drives the change-point four-bar of the demo (``cases/change_point_four_bar.py``,
Zahariev & Cuadrado) from rest in its folded configuration, where every link lies on one line,
through the next singular configuration, records σ_min along the run with a
``SingularityMonitor``, and shows the branch the mechanism takes.
"""

# %%
# The mechanism
# -------------
# Ground, crank, coupler and rocker all a = 1 m long. The crank (pivot O2 at the origin) starts
# along −x, the coupler runs from its pin A = (−1, 0) to B at the origin and the rocker from
# O4 = (1, 0) back to B: folded. The coupler is an aluminium beam of 4 elements with
# stiffness-proportional damping; the crank is driven from rest to 2 rad/s over 1 s.
import matplotlib.pyplot as plt
import numpy as np

import flexmb as fm
from flexmb.analysis.monitors import RigidClosure, SingularityMonitor

a, W, T, z = 1.0, 2.0, 1.0, (0, 0, 1.0)
rod = np.diag([0.0, a * a / 12, a * a / 12])  # 1 kg uniform rods


def crank(t):
    return W / 2 * (t - T / np.pi * np.sin(np.pi * t / T)) if np.real(t) < T else W * (t - T / 2) + 0 * t


def four_bar():
    """The folded four-bar, coupler elastic, crank driven."""
    mb = fm.ModelBuilder()  # a horizontal plane: no gravity
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, (-a / 2, 0, 0), rod)
    mb.add_node("rocker", (a, 0, 0))
    mb.add_body("rocker", "rocker", 1.0, (-a / 2, 0, 0), rod)
    mb.add_joint("O2", "revolute", "ground", "crank", axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=(a, 0, 0), axis=z)
    sec = fm.BeamSection(E=0.7e11, G=0.27e11, A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7, rho=3000)
    nodes = mb.add_flexible_link("coupler", (-a, 0, 0), (0, 0, 0), 4, sec, damping=1e-3)
    mb.add_joint("A", "revolute", "crank", nodes[0], point=(-a, 0, 0), axis=z)
    mb.add_joint("B", "revolute", "rocker", nodes[-1], point=(0, 0, 0), axis=z)
    mb.add_drive("O2", crank)
    return mb.compile()


model = four_bar()

# %%
# The rigid closure at the start: ``RigidClosure`` takes the coupler as the rigid two-force member
# ``|x_B − x_A| = a`` and gives its Jacobian over the undriven coordinates; its smallest singular value
# is zero to round-off in the folded configuration (for this mechanism ``σ_min = a |sin(ψ − φ)|``, ψ
# and φ the coupler's and rocker's angles).
closure = RigidClosure(model, links=["coupler"])
print(f"σ_min at the start: {closure.sigma_min(model.initial_state()):.1e} m "
      f"(singular values {closure.singular_values(model.initial_state())})")

# %%
# The run, watched
# ----------------
# ``SingularityMonitor`` is a ``simulate`` callback: after every step it records σ_min of the
# rigid closure (the coupler taken as the rigid two-force member ``|x_B − x_A| = a``) and the largest
# axial force in the link; given ``force_limit`` it would stop the run there with status
# ``stopped: ...``.
monitor = SingularityMonitor(model, links=["coupler"])
res = fm.simulate(model, t_end=2.6, dt=2e-3, rho_inf=0.8, callback=monitor)
t_s, sigma_s = monitor.next_singular()
print(f"status: {res.status}; σ_min rose from {monitor.sigma[0]:.1e} and fell to {sigma_s:.1e} at t = {t_s:.3f} s")

axial = np.abs(res.element_forces[:, :, 0]).max(axis=1)
fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
ax1.plot(monitor.t, monitor.sigma, color="tab:green")
ax1.set_ylabel("σ_min [m]")
ax1.set_title("σ_min of the rigid loop closure: zero at a singular configuration")
ax2.semilogy(res.t, np.maximum(axial, 1e-3))
ax2.set_ylabel("coupler |axial force| [N]")
ax2.set_xlabel("t [s]")
for ax in (ax1, ax2):
    ax.axvline(t_s, color="0.5", ls=":")
fig.tight_layout()

# %%
# The force that starts the mechanism is large but bounded by the coupler's elasticity, far below
# its elastic limit (0.2 % strain: 2e-3 E A = 5.6e4 N); at the second singular configuration,
# reached at constant crank speed, it stays at the inertia force of the coupler.
start = res.t < 0.5
print(f"largest coupler force during the start {axial[start].max():.0f} N, near t = {t_s:.2f} s "
      f"{axial[np.abs(res.t - t_s) < 0.1].max():.2f} N")

# %%
# Branches
# --------
# From the folded start the rigid four-bar could move on three branches: as a parallelogram, as an
# anti-parallelogram, or with B resting on O2 while the coupler turns with the crank. The elastic
# start chose one; the rocker's angle tells which: it stays at rest, so B stays on O2.
print(f"rocker angle: at most {np.abs(res.coordinate('O4.q')).max():.2e} rad from its start; "
      f"crank turned {res.coordinate('O2.q')[-1]:.2f} rad")

fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(res.t, res.coordinate("O4.q"), label="rocker")
ax.plot(res.t, res.coordinate("O2.q"), "k:", label="crank (driven)")
ax.set_xlabel("t [s]")
ax.set_ylabel("angle from the start [rad]")
ax.legend()
fig.tight_layout()

# %%
# At the second singular configuration (t ≈ 2.07 s, the crank pin A over O4), where coupler and
# rocker could turn together onto the parallelogram branch, the mechanism keeps its branch. The
# demo (``bash scripts/demo.sh``; the gallery's change-point four-bar) draws it, and its summary
# compares the forces with their physical bounds; without the coupler's damping
# (``--param damping=0``) the same run rings after the start.
plt.show()
