"""
A four-bar closed three ways: bushing, rigid cut, flexible link
===============================================================

The joints of a model form a tree; a closed loop is closed by a *cut* that acts as an element:

* a **bushing** (``add_bushing``): a stiff 6×6 spring–damper in place of the loop's last joint;
* a **rigid cut** (``add_rigid_cut``): the joint held exactly by an augmented Lagrangian;
* a **flexible link** (``add_flexible_link``): a beam whose two ends are both jointed.

This tutorial closes the same Grashof crank-rocker all three ways, drives the crank, and compares
the rocker with the closed-form rigid four-bar; it shows the damping flexmb gives a cut by default
and the cut forces every result records.
"""

# %%
# The mechanism
# -------------
# Crank a = 0.3 m, coupler b = 1 m, rocker c = 0.8 m, ground d = 1 m, in the x–y plane under
# gravity, the crank starting at 1 rad. The closed form takes the triangle of the crank pin A, the
# rocker's pivot O4 and its pin B: its sides of lengths r (O4 to A), b (A to B) and c (O4 to B) give the angle ψ at O4
# between O4A and O4B (law of cosines), and the rocker's angle is that of O4A less ψ (the branch the
# mechanism starts on; eq. (F) of docs/loops.md).
import matplotlib.pyplot as plt
import numpy as np

import flexmb as fm

a, b, c, d, th0 = 0.3, 1.0, 0.8, 1.0, 1.0
z = (0, 0, 1.0)


def rocker_angle(th2):
    """Rigid four-bar: the rocker's angle at O4 (from +x, in (-π, π]) for crank angles th2 (closed form)."""
    ax, ay = a * np.cos(th2), a * np.sin(th2)
    r = np.hypot(ax - d, ay)
    psi = np.arccos((c**2 + r**2 - b**2) / (2 * c * r))
    th4 = np.arctan2(ay, ax - d) - psi
    return np.arctan2(np.sin(th4), np.cos(th4))


def pin_b(th2):
    """The rocker's pin B for crank angles th2."""
    th4 = rocker_angle(th2)
    return np.stack([d + c * np.cos(th4), c * np.sin(th4)], -1)


A0 = np.array([a * np.cos(th0), a * np.sin(th0), 0.0])
B0 = np.array([*pin_b(th0), 0.0])


def four_bar(cut):
    """The four-bar with its loop closed at B by ``cut``: "bushing", "rigid" or "flexible"."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, A0 / 2, np.eye(3) * 1e-3)
    mb.add_node("rocker", (d, 0, 0))
    mb.add_body("rocker", "rocker", 1.0, (B0 - [d, 0, 0]) / 2, np.eye(3) * 1e-2)
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=(d, 0, 0), axis=z)
    # the crank turns from rest to 2π rad/s over 0.5 s (a drive: a coordinate given as a function of time)
    mb.add_drive("O2", lambda t: np.pi * (t - 0.5 / np.pi * np.sin(2 * np.pi * t)) if np.real(t) < 0.5
                 else 2 * np.pi * (t - 0.25) + 0 * t)
    if cut == "flexible":  # an aluminium-like coupler, 4 elements, pinned at both ends
        sec = fm.BeamSection(E=7e10, G=2.7e10, A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7, rho=3000)
        nodes = mb.add_flexible_link("coupler", A0, B0, 4, sec)
        mb.add_joint("A", "revolute", "crank", nodes[0], point=A0, axis=z)
        mb.add_joint("B", "revolute", "rocker", nodes[-1], point=B0, axis=z)
        return mb.compile()
    mb.add_node("coupler", A0)  # a rigid coupler, pinned to the crank at A
    mb.add_body("coupler", "coupler", 1.2, (B0 - A0) / 2, np.eye(3) * 0.1)
    mb.add_joint("A", "revolute", "crank", "coupler", point=A0, axis=z)
    if cut == "bushing":  # the joint B replaced by a stiff bushing: free about z, 1e8 N/m, 1e6 N m/rad
        mb.add_bushing("B", "coupler", "rocker", stiffness=[1e8, 1e8, 1e8, 1e6, 1e6, 0], point=B0, free_rotation="z")
    else:
        mb.add_rigid_cut("B", "coupler", "rocker", point=B0, free_rotation="z")
    return mb.compile()


# %%
# ``describe`` lists every loop and where it is cut. Adding the joint B as a fourth joint is
# refused: it would close the loop in the tree.
bushing = four_bar("bushing")
print(fm.describe(bushing))

# %%
# Default damping
# ---------------
# A stiff undamped cut rings at its local frequency ω = √(k/m_eff), and its forces then depend
# on the time step. So a bushing that closes a loop and is given no ``damping`` gets one when the
# model is compiled: every local mode of the cut gets the damping ratio ζ = 0.5, from its
# stiffness and the effective mass it couples at the start (docs/cut_damping.md (D6)). A flexible
# link on a loop gets a stiffness-proportional damping α = 2ζ/ω_ax for its axial mode (D4).
# ``describe`` above lists it; with the time step it also gives ω·dt, and ``flexmb info CASE``
# prints the same for a case file (and warns where an undamped cut rings or a cut is too soft):
from flexmb.app.cut_table import cut_table  # noqa: E402

print("\n".join(cut_table(bushing, dt=2e-3)))

# %%
# Running the three
# -----------------
results = {}
for cut in ("bushing", "rigid", "flexible"):
    model = four_bar(cut)
    res = fm.simulate(model, t_end=1.0, dt=2e-3, rho_inf=0.8)
    th2 = th0 + res.coordinate("O2.q")
    th4 = rocker_angle(th0) + res.coordinate("O4.q")
    err = np.abs(th4 - rocker_angle(th2)).max()
    results[cut] = res
    print(f"{cut:9s} {res.status}: rocker within {err:.1e} rad of the rigid four-bar; "
          f"{res.stats['newton_iterations'] / len(res.t):.1f} Newton iterations per step")

# %%
# Which to choose: a **rigid cut** where the joint is rigid and the answer should not depend on a
# stiffness (it is held to 1e-10 of the model's size); a **bushing** where the joint is physically
# elastic (clearance, a rubber mount), and where a drive takes the loop through a singular
# configuration (no rigid model has bounded forces there: see the next tutorials); a **flexible
# link** where the link itself is elastic.
#
# Cut forces
# ----------
# Every result records what each cut exerts on its end b at the cut point: ``res.cut_force(name)``
# (rows: force, moment in the cut's axes; ``"global"`` for global axes). For the flexible link the
# coupler's section forces are ``res.element_force("coupler.e0")`` (axial force first).
fig, ax = plt.subplots(figsize=(7, 3.5))
for cut in ("bushing", "rigid"):
    res = results[cut]
    ax.plot(res.t, np.linalg.norm(res.cut_force("B", "global")[:, :3], axis=1), label=f"{cut}: |F| at B")
res = results["flexible"]
ax.plot(res.t, np.abs(res.element_force("coupler.e3")[:, 0]), "--", label="flexible: |axial force| near B")
ax.set_xlabel("t [s]")
ax.set_ylabel("force [N]")
ax.legend()
ax.set_title("what the loop's cut carries")
fig.tight_layout()
plt.show()
