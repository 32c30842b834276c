"""Mechanisms with cut loops and their exact rigid solutions, shared by the cut tests (issue 12;
each checked against its closed form or exact solution, given below).

* :func:`chain`: N parallelogram loops side by side (docs/loops.md §1), crank 0 driven through a singular
  configuration (all links horizontal) every 0.25 s; exact rigid tip position (P).
* :func:`grashof`: the crank-rocker (a, b, c, d) = (0.3, 1.0, 0.8, 1.0) m, crank driven from rest; closed-form
  rocker angle (F).
* :func:`rhombus`: the four-bar with all links 1 m, folded (crank along -x) — its singular configuration.
* :func:`bricard`: Bricard's orthogonal 6R linkage (Grübler 0, mobility 1; docs/loops.md §3).
* :func:`slider_crank`: an in-line slider-crank whose loop is cut at the wrist pin (rod - slider).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import flexmb as fm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from n_four_bar_model import n_four_bar, rod_inertia  # noqa: E402, F401 - the A02 model the benchmarks time too

Z = (0.0, 0.0, 1.0)


def ramp(theta_s: float, W: float, T: float):
    """Drive from rest: θ = θ_s + W/2 (t - T/π sin(πt/T)) for t < T, θ_s + W (t - T/2) after; (q, q', q'')."""
    def q(t):
        t = float(np.real(t))
        return theta_s + (W / 2 * (t - T / np.pi * np.sin(np.pi * t / T)) if t < T else W * (t - T / 2))

    def qd(t):
        t = float(np.real(t))
        return W / 2 * (1 - np.cos(np.pi * t / T)) if t < T else W

    def qdd(t):
        t = float(np.real(t))
        return W / 2 * np.pi / T * np.sin(np.pi * t / T) if t < T else 0.0

    return q, qd, qdd


# ------------------------------------------------------------------------------------------ the chain
CHAIN = dict(N=4, L=1.0, r=0.4, m=1.0, g=9.81, theta_s=np.pi / 2, W=4 * np.pi, T=0.25)


def chain(k: float = 1e9, damping=None, **over) -> tuple[fm.Model, dict]:
    """The multi-loop parallelogram chain of docs/loops.md §1: ground pivots O_i = (i L, 0, 0), cranks of length r
    about z (1 kg rods; node at the tip), couplers of length L joining crank tips j-1 and j (node at the
    start pin), loop j cut where coupler j meets crank j's tip by a revolute bushing (free rotation z;
    stiffness k on the translations, k L² on the two tilts), gravity -y. Crank 0 is driven from θ_s = π/2
    (cranks vertical) by :func:`ramp` (W = 4π rad/s, T = 0.25 s): all links are horizontal (singular)
    whenever θ = kπ, first at t = 0.25 s, then every 0.25 s. ``damping``: the bushings' (None: the
    compiler's default)."""
    p = {**CHAIN, **over}
    N, L, r, m = p["N"], p["L"], p["r"], p["m"]
    e = np.array([np.cos(p["theta_s"]), np.sin(p["theta_s"]), 0.0])
    mb = fm.ModelBuilder(gravity=(0.0, -p["g"], 0.0))
    tips = [np.array([i * L, 0.0, 0.0]) + r * e for i in range(N + 1)]
    for i in range(N + 1):
        mb.add_node(f"crank{i}", tips[i])
        mb.add_body(f"crank{i}", f"crank{i}", m, -r / 2 * e, rod_inertia(m, r, e))
        mb.add_joint(f"O{i}", "revolute", "ground", f"crank{i}", point=(i * L, 0.0, 0.0), axis=Z)
    for j in range(1, N + 1):
        mb.add_node(f"coupler{j}", tips[j - 1])
        mb.add_body(f"coupler{j}", f"coupler{j}", m, (L / 2, 0.0, 0.0), rod_inertia(m, L, (1, 0, 0)))
        mb.add_joint(f"A{j}", "revolute", f"crank{j - 1}", f"coupler{j}", point=tips[j - 1], axis=Z)
    for j in range(1, N + 1):
        mb.add_bushing(f"cut{j}", f"coupler{j}", f"crank{j}", stiffness=[k, k, k, k * L**2, k * L**2, 0.0],
                       damping=damping, point=tips[j], free_rotation="z")
    q, qd, qdd = ramp(0.0, p["W"], p["T"])
    mb.add_drive("O0", q, qd, qdd)
    return mb.compile(), p


def chain_exact_tip(t: np.ndarray, p: dict) -> np.ndarray:
    """(P): the rigid position of crank N's tip, (N L + r cos θ, r sin θ, 0), θ = θ_s + drive."""
    q = ramp(p["theta_s"], p["W"], p["T"])[0]
    th = np.array([q(ti) for ti in np.atleast_1d(t)])
    return np.stack([p["N"] * p["L"] + p["r"] * np.cos(th), p["r"] * np.sin(th), 0 * th], -1)


def chain_passages(t_end: float, p: dict) -> int:
    """Number of singular configurations (θ = kπ) passed up to t_end."""
    q = ramp(p["theta_s"], p["W"], p["T"])[0]
    return int(np.floor(q(t_end) / np.pi) - np.floor(p["theta_s"] / np.pi))


# ------------------------------------------------------------------------------------------ four-bars
GRASHOF = (0.3, 1.0, 0.8, 1.0)  # crank a, coupler b, rocker c, ground d [m]


def rocker_angle(th2, a=0.3, b=1.0, c=0.8, d=1.0, sign=-1):
    """(F): θ4 = atan2(A_y, A_x - d) + s acos((c² + e² - b²)/(2 c e)), A = a(cos θ2, sin θ2), e = |A - O4|;
    s = -1: the branch with B above the ground line at θ2 = 1 rad."""
    Ax, Ay = a * np.cos(th2), a * np.sin(th2)
    e = np.hypot(Ax - d, Ay)
    return np.arctan2(Ay, Ax - d) + sign * np.arccos(np.clip((c**2 + e**2 - b**2) / (2 * c * e), -1, 1))


def four_bar(cut: str = "rigid", th0: float = 1.0, drive=None, dims=GRASHOF, g: float = 9.81, k: float = 1e6,
             damping=None, tolerance: float = 1e-10, gravity_axis: int = 1) -> fm.Model:
    """A four-bar of uniform 1 kg rods in the x-y plane: crank O2 = (0, 0) -> A (joint O2), coupler A -> B
    (joint A on the crank), rocker O4 = (d, 0) -> B (joint O4); the loop cut at B between coupler (node_a)
    and rocker (node_b): ``cut`` "rigid" (add_rigid_cut, free rotation z) or "elastic" (a revolute bushing
    of stiffness k, ``damping``). Assembled at crank angle ``th0`` on the branch of (F) (B above the ground
    line), or folded for the rhombus (all lengths 1, th0 = π: A = (-1, 0), B = (0, 0)). ``drive``: (q, q',
    q'') of the crank's angle increment, or None (undriven). Gravity g along -y."""
    a, b, c, d = dims
    A = np.array([a * np.cos(th0), a * np.sin(th0), 0.0])
    if np.allclose(dims, 1.0) and abs(th0 - np.pi) < 1e-12:
        B = np.zeros(3)  # folded rhombus: B on O2
    else:
        th4 = rocker_angle(th0, a, b, c, d)
        B = np.array([d + c * np.cos(th4), c * np.sin(th4), 0.0])
    O4 = np.array([d, 0.0, 0.0])
    gv = np.zeros(3)
    gv[gravity_axis] = -g
    mb = fm.ModelBuilder(gravity=gv)
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, A / 2, rod_inertia(1.0, a, A))
    mb.add_node("coupler", A)
    mb.add_body("coupler", "coupler", 1.0, (B - A) / 2, rod_inertia(1.0, b, B - A))
    mb.add_node("rocker", O4)
    mb.add_body("rocker", "rocker", 1.0, (B - O4) / 2, rod_inertia(1.0, c, B - O4))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=Z)
    mb.add_joint("A", "revolute", "crank", "coupler", point=A, axis=Z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=O4, axis=Z)
    if cut == "rigid":
        mb.add_rigid_cut("B", "coupler", "rocker", point=B, free_rotation="z", tolerance=tolerance)
    else:
        mb.add_bushing("B", "coupler", "rocker", stiffness=[k] * 5 + [0.0], damping=damping, point=B, free_rotation="z")
    if drive is not None:
        mb.add_drive("O2", *drive)
    return mb.compile()


# ------------------------------------------------------------------------------------------ Bricard
BRICARD_A = 0.3  # link length [m]
_V = BRICARD_A * np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1], [0, 0, 1]], float)
_Z = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]], float)


def bricard(cut: str = "rigid", drive=None, g: float = 9.81, u0: float = 0.0, tolerance: float = 1e-10,
            k: float = 1e8, kr: float = 1e6) -> fm.Model:
    """Bricard's orthogonal 6R linkage (DH: a_i = 0.3 m, d_i = 0, α = (90, 90, 90, -90, -90, -90)°; docs/loops.md
    §3): assembled on six edges of a cube, V0 -> V1 -> ... -> V5 -> V0, joint i+1 at V_i with its axis
    normal to both adjacent edges. Ground = the link V5 -> V0; tree of five revolute joints J1..J5 (J1:
    ground -> link1 at V0); joint 6 at V5 is the cut (link5 -> ground), ``cut`` "rigid" (add_rigid_cut,
    free rotation about the joint axis: five held rows of rank 4, one redundant) or "elastic" (a revolute
    bushing, k on translations, kr on the tilts). Links: 1 kg rods along their edge. ``drive`` on J1 or
    undriven (then ``u0`` is J1's initial rate; the others follow from the start's velocity projection)."""
    gv = np.array([0.0, 0.0, -g])
    mb = fm.ModelBuilder(gravity=gv)
    for i in range(5):
        p, q = _V[i], _V[i + 1]
        ex = (q - p) / np.linalg.norm(q - p)
        ez = _Z[i]
        R = np.column_stack([ex, np.cross(ez, ex), ez])
        mb.add_node(f"link{i + 1}", p, R)
        L = float(np.linalg.norm(q - p))
        mb.add_body(f"link{i + 1}", f"link{i + 1}", 1.0, (L / 2, 0, 0), np.diag([0, L**2 / 12, L**2 / 12]))
        parent = "ground" if i == 0 else f"link{i}"
        mb.add_joint(f"J{i + 1}", "revolute", parent, f"link{i + 1}", point=p, axis=ez, u0=u0 if i == 0 else 0.0)
    ex6 = (_V[0] - _V[5]) / np.linalg.norm(_V[0] - _V[5])
    E6 = np.column_stack([ex6, np.cross(_Z[5], ex6), _Z[5]])
    if cut == "rigid":
        mb.add_rigid_cut("J6", "ground", "link5", point=_V[5], axes=E6, free_rotation="z", tolerance=tolerance)
    else:
        mb.add_bushing("J6", "ground", "link5", stiffness=[k, k, k, kr, kr, 0.0], point=_V[5], axes=E6, free_rotation="z")
    if drive is not None:
        mb.add_drive("J1", *drive)
    return mb.compile()


def bricard_relation(th1: np.ndarray, th2: np.ndarray) -> np.ndarray:
    """docs/loops.md (B3) in joint-coordinate increments from the assembly angles (-90°, 90°, ...): cos θ1 + cos θ2 +
    cos θ1 cos θ2 = 0 with θ1 = -π/2 + q1, θ2 = π/2 + q2."""
    t1, t2 = -np.pi / 2 + th1, np.pi / 2 + th2
    return np.cos(t1) + np.cos(t2) + np.cos(t1) * np.cos(t2)


# ------------------------------------------------------------------------------------------ slider-crank
def slider_crank(cut: str = "elastic", theta: float = 0.6, r: float = 0.2, ell: float = 0.6, P: float = 100.0,
                 k: float = 1e8, drive=None, g: float = 0.0) -> tuple[fm.Model, dict]:
    """In-line slider-crank in the x-y plane: crank O = (0, 0) -> A (1 kg rod, joint O about z, driven:
    held at ``theta`` unless ``drive``), connecting rod A -> B (1 kg rod, joint A on the crank), slider
    (2 kg) on a prismatic joint along x at B; the loop cut at the wrist pin B between rod (node_a) and
    slider (node_b): ``cut`` "elastic" (a revolute bushing, stiffness k, default damping) or "rigid". A
    force -P x on the slider (pushing it towards the crank), gravity g along -y. Returns the model and
    the geometry (A, B, rod direction e = (B - A)/ell)."""
    A = np.array([r * np.cos(theta), r * np.sin(theta), 0.0])
    B = np.array([A[0] + np.sqrt(ell**2 - A[1] ** 2), 0.0, 0.0])
    e = (B - A) / ell
    mb = fm.ModelBuilder(gravity=(0.0, -g, 0.0))
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, A / 2, rod_inertia(1.0, r, A))
    mb.add_node("rod", A)
    mb.add_body("rod", "rod", 1.0, (B - A) / 2, rod_inertia(1.0, ell, e))
    mb.add_node("slider", B)
    mb.add_body("slider", "slider", 2.0, (0, 0, 0), np.eye(3) * 0.01)
    mb.add_joint("O", "revolute", "ground", "crank", point=(0, 0, 0), axis=Z)
    mb.add_joint("A", "revolute", "crank", "rod", point=A, axis=Z)
    mb.add_joint("S", "prismatic", "ground", "slider", axis=(1, 0, 0))
    if cut == "rigid":
        mb.add_rigid_cut("wrist", "rod", "slider", point=B, free_rotation="z")
    else:
        mb.add_bushing("wrist", "rod", "slider", stiffness=[k, k, k, k, k, 0.0], point=B, free_rotation="z")
    mb.add_load("push", "slider", force=(-P, 0.0, 0.0))
    if drive is None:
        mb.add_drive("O", lambda t: 0.0 * t, lambda t: 0.0 * t, lambda t: 0.0 * t)
    else:
        mb.add_drive("O", *drive)
    return mb.compile(), dict(A=A, B=B, e=e, r=r, ell=ell, P=P, theta=theta)


# ------------------------------------------------------------------------------------------ IFToMM A02
def n_four_bar_angle(N: int, t: np.ndarray, scale: float = 1.0, g: float = 9.81, theta0: float = np.pi / 2) -> np.ndarray:
    """The exact crank angle θ(t) of :func:`n_four_bar` (from +x, θ(0) = θ0): the one-degree-of-freedom
    motion of the parallelogram branch, (N+1)/3 m L² θ'' + N m L² θ'' = -((N+1)/2 + N) m g L cos θ, solved
    by an 8th-order Runge-Kutta to 1e-12 (independent of flexmb)."""
    from scipy.integrate import solve_ivp

    inertia = (N + 1) / 3 + N
    c = ((N + 1) / 2 + N) * g / scale
    t = np.asarray(t, dtype=float)
    sol = solve_ivp(lambda _, y: [y[1], -c * np.cos(y[0]) / inertia], (0.0, float(t[-1])),
                    [theta0, -1.0 / (np.sqrt(scale) * np.sin(theta0))], t_eval=t, rtol=1e-12, atol=1e-13,
                    method="DOP853")
    return sol.y[0]
