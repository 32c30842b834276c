"""A 20 t hydraulic excavator front on a digging cycle: boom, flexible arm, bucket linkage, three cylinders.

The front of a hydraulic excavator of the 20 t class in its plane of motion (x forward, y up, every
pin about z; the upper structure fixed to the ground, the slew held still): the boom and the bucket
rigid bodies, the arm (stick) a steel box-section beam of ``n_elements`` co-rotational elements, the
bucket turned by a four-bar linkage (the arm, the side link, the H-link and the bucket) whose loop is
closed at the H-link–bucket pin by a rigid cut (flexmb's ``add_rigid_cut``: the links are forgings,
rigid next to everything else, and the cut keeps their geometry exact, so σ_min of the linkage below
is that of the mechanism that runs). Three hydraulic cylinders (boom, arm, bucket) act between their
mounting points; their strokes are prescribed, smooth (rest-to-rest quintics between the poses of a
digging cycle: reach out, dig, curl and lift), under gravity and a digging force on the bucket's
teeth. The bucket ends the cycle fully curled, near the singular configurations of its linkage: the
bucket cylinder comes within 13° of the side link's line (at 0° its length no longer turns the
bucket: its dead point) and the H-link within 34° of folding onto the bucket link. A bushing could
close the loop too, but its stiffness would be a guess that adds a stiff mode; the rigid cut runs
with about 3.3 Newton iterations per step through the whole cycle.

Source and estimates. The lengths are those of Caterpillar's data sheet "320 Hydraulic Excavator,
Technical Specifications" (Caterpillar Inc., the Tier 4 Final editions of 2017-2019): reach boom 5.7 m,
reach stick R2.9 (2.9 m), operating weight 22 500 kg with a 1.19 m³ bucket. The same sheet gives the
cylinders (:data:`DATA_SHEET`): boom cylinders of 120 mm bore and 1260 mm stroke (two of them, as on every
machine of this class), the stick's 140 mm
and 1504 mm, the bucket's 120 mm and 1104 mm, at most 35 MPa in the circuit (38 MPa in lift mode): the
cycle below uses 671, 527 and 593 mm of those strokes, and its largest pushes (241, 313 and 142 kN) stay
below what the full bores give at 35 MPa (792, 539 and 396 kN; tests/test_case_excavator.py checks both).
Everything a data sheet does not give is estimated from the usual
proportions of such machines and said here: the boom foot 2.0 m above the ground, the pin positions
of the cylinders and of the bucket linkage (:data:`DEFAULTS` ``points``), the masses (boom 1850 kg,
stick 1000 kg of which the box beam carries its own 537 kg and the rest sits on its ends, side link
60 kg, H-link 90 kg, bucket 850 kg: a 1 m³ general-purpose bucket), the inertias (slender bodies and
radii of gyration), the box section of the stick (550 mm deep, 320 mm wide, 14 mm plate; steel), the
digging force (a smooth pulse of ``dig_force`` = 40 kN, against the teeth's motion). The cylinders'
own masses (some 0.6 t together) are left out, as are the soil in the bucket and the hydraulics.

The cylinders. Each is made by one function, :func:`_cylinder`, and read by one, :func:`cylinder_history`.
A cylinder is a rigid prescribed-length actuator (flexmb's ``add_actuator(..., length=L)``,
docs/actuator.md): the distance l of its mounting points is held to its prescribed length,

    Φ = l − L(t) = 0                                                                          (1)

by an augmented-Lagrangian constraint (docs/actuator.md (A3)-(A7)), with L'(t) and L''(t) given in
closed form (the quintics' derivatives) for the projections after each step (A8). Its force is the
constraint's multiplier, positive in tension (pulling its mounting points together; a pushing
cylinder has a negative tension), and its power −F l' is the drive work of the energy balance.

The start. The machine starts at rest in its static equilibrium (``start="static"``, the default:
:func:`static_start`, flexmb.solvers.statics with the cylinders at L(0) and the linkage's cut held by
their multipliers, docs/statics.md §2): the stick bent under what hangs on it, the cylinders carrying
the static forces (the boom cylinder pushing 172.7 kN), given to the joints as their initial
coordinates; the run's start (A9) finds those forces again, to 1.3e-9 relative. That is the start a user wants of
a machine that stands still before it moves. ``start="assembly"`` starts as assembled, with the stick
unbent: what hangs on it is not carried yet at t = 0, so the forces start below the static ones (the
boom cylinder's 77 kN against 173 kN) and the stick rings into its load in its first bending mode
(some 20 Hz), damped by its own damping alone. From the static start the boom and arm cylinders
follow the rigid inverse dynamics to 0.44 kN RMS (4.8 and 3.3 kN from the assembly start); the bucket
cylinder's 6.1 kN RMS is the stick's ringing after the curl, where the linkage nears its singular
configurations (6.1 kN from either start). The strokes
follow L(t) to the actuator's closure tolerance, 1e-10 times the model's size (docs/actuator.md §2);
the cylinders' compliance (the oil, the hoses) is left out with their masses. In the cycle's run
(dt = 2 ms): largest push 241 kN (boom), 313 kN (arm), 142 kN (bucket), pulls up to 58, 62 and 52 kN;
the cylinders' work 146.9 kJ against the digging load's 94.0 kJ and gravity's +52.9 kJ; the stick's
largest stress 43.6 MPa; σ_min of the linkage 0.232 m at the start, 0.0376 m curled.

The summary: the cylinder forces over the cycle (largest push and pull of each; against the rigid
mechanism's inverse dynamics on the same strokes, :func:`rigid_cylinder_forces`, eq. (4)), the energy balance
(the work of the cylinders, the digging load and gravity against the kinetic and strain energy), the
largest normal stress in the stick (:func:`stick_stress`), σ_min of the bucket linkage
(:func:`linkage_sigma`: the smallest singular value of its closure Jacobian with the bucket cylinder's
length as the input, eq. (2)) at the start and its smallest along the cycle (when, and how near the
singular configuration); the plot ``cylinder_forces.png`` (forces, the stick's stress and σ_min over
time) and the animation ``animation.gif`` (``animation=False``: none). A parameter ``hold`` (a pose's
index in ``poses``) builds the machine still in that pose with its strokes held and no digging force:
the static check of tests/test_case_excavator.py (its static equilibrium against virtual work).

Run:  flexmb run cases/excavator.py [--param dig_force=0.0] [--param hold=2]
"""

from __future__ import annotations

import sys
from bisect import bisect_right
from pathlib import Path

import numpy as np

import flexmb as fm

Z = (0.0, 0.0, 1.0)
CYLINDERS = ("boom_cylinder", "arm_cylinder", "bucket_cylinder")
#: The data sheet's cylinders (module docstring): bore [m], stroke [m] and how many act together, and the circuit's
#: largest pressure [Pa] outside lift mode; the model's one boom cylinder stands for the pair.
DATA_SHEET = {"boom_cylinder": (0.120, 1.260, 2), "arm_cylinder": (0.140, 1.504, 1), "bucket_cylinder": (0.120, 1.104, 1),
              "pressure": 35e6}

DEFAULTS = dict(
    boom_length=5.7, stick_length=2.9, foot=[0.0, 2.0],
    boom_elevation_deg=25.0, stick_direction_deg=-70.0, bucket_link_deg=90.0,
    # the pins, estimated: boom points in (along the foot–tip chord, normal to it, up), stick points in
    # (along B→C from the boom–stick pin B, normal to it, away from the machine at the start)
    points=dict(boom_cylinder_base=[0.45, 1.05],  # on the upper structure: global (x, y)
                boom_cylinder_rod=[2.35, 0.2], arm_cylinder_base=[2.9, 1.25],
                arm_cylinder_rod=[-0.6, 0.0], bucket_cylinder_base=[0.3, 0.4], side_link_pivot=[2.55, 0.12]),
    side_link=0.55, h_link=0.50, bucket_link=0.38, bucket_tip=1.45, bucket_tip_deg=-80.0,
    boom_mass=1850.0, stick_mass=1000.0, side_link_mass=60.0, h_link_mass=90.0, bucket_mass=850.0,
    depth=0.55, width=0.32, plate=0.014, E=2.1e11, G=8.1e10, rho=7850.0, n_elements=4, alpha=3e-4,
    # the digging cycle: relative joint angles [deg] (boom, stick on boom, bucket link on stick) at the poses' times
    poses=[[0.0, 0.0, 0.0], [-4.0, -10.0, -15.0], [-18.0, -35.0, -45.0], [25.0, -55.0, -140.0]],
    times=[0.0, 1.0, 2.5, 4.0],
    dig_force=4e4, dig_start=0.8, dig_end=2.8, dig_deg=-15.0,
    hold=-1, start="static", animation=True,
    t_end=4.5, dt=2e-3, rho_inf=0.8,
)


def _rot(a: float) -> np.ndarray:
    """The plane rotation by ``a`` [rad]."""
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s], [s, c]])


def _unit(a: float) -> np.ndarray:
    """The plane unit vector at angle ``a`` [rad]."""
    return np.array([np.cos(a), np.sin(a)])


def _circles(P: np.ndarray, r1: float, Q: np.ndarray, r2: float) -> np.ndarray:
    """The intersection of the circles (P, r1) and (Q, r2) to the left of P→Q."""
    d = Q - P
    L = float(np.linalg.norm(d))
    a = (r1 * r1 - r2 * r2 + L * L) / (2 * L)
    h2 = r1 * r1 - a * a
    if h2 < 0:
        raise fm.ModelError(f"excavator: the bucket linkage does not close (side link {r1} m, H-link {r2} m, "
                            f"pivot to bucket pin {L:.3f} m); give a pose within the linkage's range.")
    e = d / L
    return P + a * e + np.sqrt(h2) * np.array([-e[1], e[0]])


def geometry(p: dict, angles) -> dict[str, np.ndarray]:
    """The front's points (x, y) [m] for the relative joint angles ``angles`` [rad] (boom, stick on
    boom, bucket link on stick; all zero: the start pose of :data:`DEFAULTS`): the pins O (boom foot),
    B (boom–stick), C (stick–bucket), E (side link on the stick), D (cylinder rod on the side link and
    H-link), F (H-link on the bucket), the bucket's teeth W, the cylinders' ends and the centres of mass.
    The rigid mechanism: the stick straight from B to C; D closes the four-bar E–D–F–C (eq. (2))."""
    a1, a2, a3 = (float(a) for a in angles)
    pt = {k: np.asarray(v, float) for k, v in p["points"].items()}
    O = np.asarray(p["foot"], float)
    th1 = np.radians(p["boom_elevation_deg"]) + a1
    Rb = _rot(th1)
    B = O + Rb @ [p["boom_length"], 0.0]
    th2 = np.radians(p["stick_direction_deg"] - p["boom_elevation_deg"]) + th1 + a2
    Rs = _rot(th2)  # stick axes: along B→C, normal (away from the machine at the start)
    C = B + Rs @ [p["stick_length"], 0.0]
    E = B + Rs @ pt["side_link_pivot"]
    phi = np.radians(p["bucket_link_deg"]) + a3
    F = C + Rs @ (p["bucket_link"] * _unit(phi))
    D = _circles(E, p["side_link"], F, p["h_link"])
    W = C + Rs @ (p["bucket_tip"] * _unit(phi + np.radians(p["bucket_tip_deg"])))
    g = {"O": O, "B": B, "C": C, "E": E, "D": D, "F": F, "W": W,
         "A1": np.asarray(pt["boom_cylinder_base"], float), "P1": O + Rb @ pt["boom_cylinder_rod"],
         "A2": O + Rb @ pt["arm_cylinder_base"], "P2": B + Rs @ pt["arm_cylinder_rod"],
         "A3": B + Rs @ pt["bucket_cylinder_base"], "P3": D,
         "boom_com": O + Rb @ [0.46 * p["boom_length"], 0.35], "stick_head_com": B + Rs @ [-0.15, 0.1],
         "bucket_com": C + Rs @ (0.6 * _unit(phi + np.radians(p["bucket_tip_deg"]) / 2))}
    return g


def cylinder_lengths(g: dict) -> np.ndarray:
    """The lengths [m] of the boom, arm and bucket cylinders in the geometry ``g`` (:func:`geometry`)."""
    return np.array([np.linalg.norm(g[f"P{i}"] - g[f"A{i}"]) for i in (1, 2, 3)])


def linkage_sigma(A3, E, D, F, C) -> np.ndarray:
    """The singular values [m] (largest first) of the bucket linkage's closure Jacobian: the loop
    E–D–F closing on the bucket's F about C, and the bucket cylinder's length |D − A3|, against the
    side link's angle, the H-link's angle and the bucket's angle (all absolute, about z),

        J = [ ẑ×(D − E)       ẑ×(F − D)   −ẑ×(F − C) ]      (the closure, 2 rows)
            [ n·ẑ×(D − E)        0            0       ]      (the cylinder, n = (D − A3)/|D − A3|)     (2)

    in the plane (x, y). With the cylinder's length prescribed the rigid linkage's motion is fixed
    where J is regular; σ_min = 0 where it is singular: the H-link and the bucket link aligned, or
    the cylinder along the side link (its stroke's end: the length no longer turns the bucket)."""
    perp = lambda r: np.array([-r[1], r[0]])  # noqa: E731  ẑ × r in the plane
    A3, E, D, F, C = (np.asarray(v, float)[:2] for v in (A3, E, D, F, C))
    n = (D - A3) / np.linalg.norm(D - A3)
    J = np.zeros((3, 3))
    J[:2, 0], J[:2, 1], J[:2, 2] = perp(D - E), perp(F - D), -perp(F - C)
    J[2, 0] = n @ perp(D - E)
    return np.linalg.svd(J, compute_uv=False)


def quintic_path(times, values):
    """Rest-to-rest quintics (s(τ) = 10τ³ − 15τ⁴ + 6τ⁵) through ``values`` at ``times``, held
    before the first and after the last: the functions v(t), v'(t) and v''(t)."""
    times = [float(t) for t in times]
    T, V = np.asarray(times), np.asarray(values, float)

    def seg(t):
        k = min(max(bisect_right(times, t) - 1, 0), T.size - 2)
        h = T[k + 1] - T[k]
        s = min(max((t - T[k]) / h, 0.0), 1.0)
        return k, h, s

    def v(t):
        k, h, s = seg(t)
        return V[k] + (V[k + 1] - V[k]) * s**3 * (10 - 15 * s + 6 * s * s)

    def vd(t):
        k, h, s = seg(t)
        return (V[k + 1] - V[k]) * 30 * s * s * (1 - s) ** 2 / h

    def vdd(t):
        k, h, s = seg(t)
        return (V[k + 1] - V[k]) * 60 * s * (1 - s) * (1 - 2 * s) / (h * h)

    return v, vd, vdd


def strokes(p: dict) -> dict[str, tuple]:
    """The prescribed length L(t), its rate L'(t) and its acceleration L''(t) of each cylinder: the
    lengths of the rigid mechanism in the poses of the cycle, joined by rest-to-rest quintics; with
    ``hold`` >= 0 the lengths of that pose, constant."""
    if p["hold"] >= 0:
        L = cylinder_lengths(geometry(p, np.radians(p["poses"][p["hold"]])))
        return {c: ((lambda t, v=v: v), (lambda t: 0.0), (lambda t: 0.0)) for c, v in zip(CYLINDERS, L)}
    L = np.array([cylinder_lengths(geometry(p, np.radians(a))) for a in p["poses"]])
    return {c: quintic_path(p["times"], L[:, i]) for i, c in enumerate(CYLINDERS)}


def _cylinder(b: fm.ModelBuilder, name: str, node_a: str, node_b: str, point_a, point_b, stroke: tuple) -> str:
    """A hydraulic cylinder between ``point_a`` of ``node_a`` and ``point_b`` of ``node_b`` following
    ``stroke`` = (L(t), L'(t), L''(t)): a rigid prescribed-length actuator, eq. (1) (docs/actuator.md;
    its force the multiplier, tension positive)."""
    L, Ld, Ldd = stroke
    return b.add_actuator(name, node_a, node_b, point_a=point_a, point_b=point_b, length=L, velocity=Ld,
                          acceleration=Ldd)


def cylinder_history(result, name: str) -> np.ndarray:
    """The cylinder ``name``'s length [m], its rate [m/s] and its tension [N] (positive pulling its
    ends together, negative pushing) over the rows of ``result``, (nt, 3): the one place the case reads
    its cylinders (:func:`_cylinder` the one place it makes them)."""
    return result.actuator(name)


def cylinder_forces(result) -> dict[str, np.ndarray]:
    """Each cylinder's force [N] over the rows of ``result``: its tension (positive pulling its ends
    together, negative pushing)."""
    return {c: cylinder_history(result, c)[:, 2] for c in CYLINDERS}


def stick_section(p: dict) -> fm.BeamSection:
    """The stick's welded box: ``depth`` in the plane of motion, ``width`` across, walls ``plate``
    thick; torsion constant of a thin-walled closed section, 4 A_m² t / (perimeter of the mid-line)."""
    h, w, t = p["depth"], p["width"], p["plate"]
    A = h * w - (h - 2 * t) * (w - 2 * t)
    I_in = (w * h**3 - (w - 2 * t) * (h - 2 * t) ** 3) / 12  # bending in the plane, about z
    I_out = (h * w**3 - (h - 2 * t) * (w - 2 * t) ** 3) / 12
    J = 4 * ((h - t) * (w - t)) ** 2 * t / (2 * (h - t + w - t))
    return fm.BeamSection(E=p["E"], G=p["G"], A=A, Iy=I_out, Iz=I_in, J=J, rho=p["rho"])


def _xyz(v) -> tuple:
    """A plane point (x, y) as the 3-D point (x, y, 0)."""
    return (float(v[0]), float(v[1]), 0.0)


def _body(b: fm.ModelBuilder, name: str, node: str, node_at, node_axes: np.ndarray, mass: float, com,
          gyration: float) -> None:
    """A rigid body on ``node`` (at ``node_at``, axes ``node_axes``) with its centre of mass at the
    global point ``com`` and the moment of inertia m ``gyration``² about every axis through it (only the
    one about z acts: every pin is about z)."""
    r = node_axes.T @ (np.array(_xyz(com)) - np.array(_xyz(node_at)))
    b.add_body(name, node, mass, r, np.eye(3) * mass * gyration**2)


def stick_masses(p: dict) -> dict[str, float]:
    """The stick's mass [kg] split: its box beam (``stick_length`` of :func:`stick_section`), the nose
    (12 %: the bucket pin's bosses, at C) and the head (the rest: the boom pin's bosses and the tail)."""
    sec = stick_section(p)
    beam = sec.rho * sec.A * p["stick_length"]
    nose = 0.12 * p["stick_mass"]
    head = p["stick_mass"] - beam - nose
    if head <= 0:
        raise fm.ModelError(f"excavator: stick_mass = {p['stick_mass']} kg is less than its box beam ({beam:.0f} kg) "
                            "and bosses; give a heavier stick or a lighter section.")
    return {"beam": beam, "nose": nose, "head": head}


def _angle(v: np.ndarray) -> float:
    """The angle [rad] of the plane vector ``v`` from the x axis."""
    return float(np.arctan2(v[1], v[0]))


def parts(p: dict, g: dict) -> dict[str, tuple[float, np.ndarray, float, float]]:
    """Every part of the rigid mechanism in the geometry ``g``: (mass [kg], centre of mass (x, y),
    radius of gyration about it [m], angle of the part [rad]). The stick is its box beam (a uniform
    rod from B to C), its head and its nose (:func:`stick_masses`); the gyration radii are estimates."""
    m = stick_masses(p)
    stick = _angle(g["C"] - g["B"])
    return {"boom": (p["boom_mass"], g["boom_com"], 0.3 * p["boom_length"], _angle(g["B"] - g["O"])),
            "stick_beam": (m["beam"], (g["B"] + g["C"]) / 2, p["stick_length"] / np.sqrt(12), stick),
            "stick_head": (m["head"], g["stick_head_com"], 0.35, stick), "stick_nose": (m["nose"], g["C"], 0.2, stick),
            "side_link": (p["side_link_mass"], (g["E"] + g["D"]) / 2, p["side_link"] / 3.5, _angle(g["D"] - g["E"])),
            "h_link": (p["h_link_mass"], (g["D"] + g["F"]) / 2, p["h_link"] / 3.5, _angle(g["F"] - g["D"])),
            "bucket": (p["bucket_mass"], g["bucket_com"], 0.55, _angle(g["W"] - g["C"]))}


def weight_centres(p: dict, g: dict) -> list[tuple[float, np.ndarray]]:
    """(mass [kg], centre of mass (x, y)) of every part of the rigid mechanism in the geometry ``g``."""
    return [(m, c) for m, c, _, _ in parts(p, g).values()]


def static_cylinder_forces(p: dict, angles, h: float = 1e-6) -> np.ndarray:
    """The cylinders' tensions [N] that hold the rigid mechanism still against gravity in the pose
    ``angles`` [rad]: by virtual work, Jᵀ F = −∂V/∂θ (3)
    with J = ∂l/∂θ the cylinder lengths' Jacobian and V = Σ m g y the potential of the weights, both
    by central differences of :func:`geometry` (step ``h`` rad). The hand check of the held poses
    (tests/test_case_excavator.py)."""
    a = np.asarray(angles, float)

    def lv(x):
        g = geometry(p, x)
        return cylinder_lengths(g), sum(m * 9.81 * c[1] for m, c in weight_centres(p, g))

    J, dV = np.zeros((3, 3)), np.zeros(3)
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        (lp, vp), (lm, vm) = lv(a + e), lv(a - e)
        J[:, j], dV[j] = (lp - lm) / (2 * h), (vp - vm) / (2 * h)
    return -np.linalg.solve(J.T, dV)


def _jacobians(p: dict, th: np.ndarray, h: float = 1e-6) -> tuple[np.ndarray, dict, np.ndarray]:
    """At the angles ``th``: J = ∂l/∂θ (3×3), the parts' ∂(centre of mass)/∂θ (2×3) and ∂(angle)/∂θ
    (3,) by name, and ∂W/∂θ of the teeth (2×3), all by central differences of :func:`geometry`."""
    J, dc, dW = np.zeros((3, 3)), {}, np.zeros((2, 3))
    for j in range(3):
        e = np.eye(3)[j] * h
        gp, gm = geometry(p, th + e), geometry(p, th - e)
        J[:, j] = (cylinder_lengths(gp) - cylinder_lengths(gm)) / (2 * h)
        dW[:, j] = (gp["W"] - gm["W"]) / (2 * h)
        pp, pm = parts(p, gp), parts(p, gm)
        for k in pp:
            c, a = dc.setdefault(k, (np.zeros((2, 3)), np.zeros(3)))
            c[:, j] = (pp[k][1] - pm[k][1]) / (2 * h)
            a[j] = np.angle(np.exp(1j * (pp[k][3] - pm[k][3]))) / (2 * h)
    return J, dc, dW


def joint_angles(p: dict, L: np.ndarray, th: np.ndarray) -> np.ndarray:
    """The rigid mechanism's joint angles [rad] at which the cylinders have the lengths ``L``: Newton
    from ``th`` on l(θ) = L."""
    for _ in range(20):
        r = cylinder_lengths(geometry(p, th)) - L
        if np.abs(r).max() < 1e-12:
            break
        th = th - np.linalg.solve(_jacobians(p, th)[0], r)
    return th


def rigid_cylinder_forces(p: dict, times: np.ndarray, h: float = 1e-3) -> np.ndarray:
    """The cylinder tensions [N] of the rigid mechanism on the prescribed strokes at ``times`` (its
    inverse dynamics: the check of the flexible run): the angles θ(t) by :func:`joint_angles`, the
    parts' accelerations by central differences in time (step ``h``), then by virtual power

        Jᵀ F = Σ_parts [ m (g_vec − a)·∂c/∂θ − m ρ² φ'' ∂φ/∂θ ] + f_dig·∂W/∂θ                      (4)

    (ρ the radius of gyration, φ the part's angle, g_vec gravity, f_dig the digging force on the teeth)."""
    L, gvec, dig = strokes(p), np.array([0.0, -9.81]), digging_force(p)
    th, out = np.zeros(3), []

    def state(t, th0):
        th1 = joint_angles(p, np.array([L[c][0](t) for c in CYLINDERS]), th0)
        return th1, parts(p, geometry(p, th1))

    for t in times:
        th, now = state(t, th)
        before, after = state(t - h, th)[1], state(t + h, th)[1]
        J, dc, dW = _jacobians(p, th)
        Q = dW.T @ (dig(t)[:2] if p["hold"] < 0 else np.zeros(2))
        for k, (m, c, rho, phi) in now.items():
            a = (after[k][1] - 2 * c + before[k][1]) / h**2
            alpha = (np.angle(np.exp(1j * (after[k][3] - phi))) - np.angle(np.exp(1j * (phi - before[k][3])))) / h**2
            Q += m * (gvec - a) @ dc[k][0] - m * rho**2 * alpha * dc[k][1]
        out.append(np.linalg.solve(J.T, Q))
    return np.array(out)


def static_coordinates(model: fm.Model, state) -> dict[str, float | np.ndarray]:
    """Every joint's coordinates in ``state`` by joint name: a revolute joint's angle, a free joint's
    (translation, rotation vector) (the stick's interior nodes): the q0 of :func:`build`'s static start."""
    from flexmb.rotations import logm

    out: dict[str, float | np.ndarray] = {}
    for k, name in enumerate(model.joint_names):
        u0 = int(model.joint_u_start[k])
        if model.joint_ball[k] >= 0:
            out[name] = np.concatenate([state.q[model.u_to_q[u0:u0 + 3]], logm(state.balls[model.joint_ball[k]])])
        elif len(model.joint_kinds[k].components) == 1:
            out[name] = float(state.q[model.u_to_q[u0]])
    return out


def static_start(model: fm.Model) -> tuple[dict[str, float | np.ndarray], object]:
    """The front at rest under gravity at t = 0, its cylinders at L(0) and the bucket linkage closed
    (flexmb.solvers.statics: the actuators and the rigid cut held by their multipliers, docs/statics.md §2):
    the joints' coordinates there (:func:`static_coordinates`) and the static result (its cylinder forces)."""
    from flexmb.solvers.statics import static_equilibrium

    res = static_equilibrium(model)
    return static_coordinates(model, res.state), res


def build(**params) -> fm.Model:
    """The excavator front in the start pose of the cycle (or, with ``hold`` >= 0, still in that pose), at
    rest in its static equilibrium (``start="static"``, the default: :func:`static_start`) or as assembled,
    the stick unbent (``start="assembly"``)."""
    p = {**DEFAULTS, **params}
    hold = int(p["hold"])
    if not -1 <= hold < len(p["poses"]):
        raise fm.ModelError(f"excavator: hold = {hold} must be -1 (the cycle) or a pose index below {len(p['poses'])}.")
    if len(p["times"]) != len(p["poses"]):
        raise fm.ModelError(f"excavator: {len(p['times'])} times for {len(p['poses'])} poses; give one time per pose.")
    if p["start"] not in ("static", "assembly"):
        raise fm.ModelError(f"excavator: start = {p['start']!r} must be 'static' (at rest in equilibrium) or "
                            "'assembly' (as assembled, the stick unbent).")
    model = _build(p)
    return model if p["start"] == "assembly" else _build(p, static_start(model)[0])


def _build(p: dict, q0: dict | None = None) -> fm.Model:
    """The model of :func:`build`; ``q0``: the joints' initial coordinates by name (the static start)."""
    q0 = q0 or {}
    hold = int(p["hold"])
    g = geometry(p, np.radians(p["poses"][max(hold, 0)]))
    sec = stick_section(p)
    b = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    eye, pa = np.eye(3), parts(p, g)
    b.add_node("boom", _xyz(g["O"]))
    _body(b, "boom", "boom", g["O"], eye, *pa["boom"][:3])
    b.add_joint("boom_foot", "revolute", "ground", "boom", point=_xyz(g["O"]), axis=Z, q0=q0.get("boom_foot", 0.0))
    stick = b.add_flexible_link("stick", _xyz(g["B"]), _xyz(g["C"]), int(p["n_elements"]), sec, damping=p["alpha"])
    b.add_joint("stick_pin", "revolute", "boom", stick[0], point=_xyz(g["B"]), axis=Z, q0=q0.get("stick_pin", 0.0))
    for node in stick[1:]:  # the static start: the interior nodes' free joints with their coordinates
        if f"{node}:free" in q0:
            b.add_joint(f"{node}:free", "free", "ground", node, q0=q0[f"{node}:free"])
    e1 = np.array(_xyz(g["C"] - g["B"])) / p["stick_length"]
    axes = np.column_stack([e1, np.cross(Z, e1), Z])  # the beam nodes' axes (add_flexible_link's section frame)
    _body(b, "stick_head", stick[0], g["B"], axes, *pa["stick_head"][:3])
    _body(b, "stick_nose", stick[-1], g["C"], axes, *pa["stick_nose"][:3])
    b.add_node("side_link", _xyz(g["D"]))
    _body(b, "side_link", "side_link", g["D"], eye, *pa["side_link"][:3])
    b.add_joint("side_link_pin", "revolute", stick[-1], "side_link", point=_xyz(g["E"]), axis=Z,
                q0=q0.get("side_link_pin", 0.0))
    b.add_node("h_link", _xyz(g["F"]))
    _body(b, "h_link", "h_link", g["F"], eye, *pa["h_link"][:3])
    b.add_joint("h_link_pin", "revolute", "side_link", "h_link", point=_xyz(g["D"]), axis=Z, q0=q0.get("h_link_pin", 0.0))
    b.add_node("bucket", _xyz(g["W"]))  # the bucket's node at its teeth, where the digging force acts
    _body(b, "bucket", "bucket", g["W"], eye, *pa["bucket"][:3])
    b.add_joint("bucket_pin", "revolute", stick[-1], "bucket", point=_xyz(g["C"]), axis=Z, q0=q0.get("bucket_pin", 0.0))
    b.add_rigid_cut("bucket_link_pin", "h_link", "bucket", point=_xyz(g["F"]), free_rotation="z")
    L = strokes(p)
    ends = (("ground", "boom", "A1", "P1"), ("boom", stick[0], "A2", "P2"), (stick[0], "side_link", "A3", "P3"))
    for c, (node_a, node_b, at_a, at_b) in zip(CYLINDERS, ends):
        _cylinder(b, c, node_a, node_b, _xyz(g[at_a]), _xyz(g[at_b]), L[c])
    if hold < 0 and p["dig_force"] != 0:
        b.add_load("digging", "bucket", force=digging_force(p))
    return b.compile()


def digging_force(p: dict):
    """The soil's force on the teeth [N, global 3-vector] over time: a smooth pulse (sin²) of peak
    ``dig_force`` from ``dig_start`` to ``dig_end``, at ``dig_deg`` from the x axis (forward and down:
    against the teeth drawn back toward the machine)."""
    t0, t1, F = p["dig_start"], p["dig_end"], p["dig_force"]
    d = np.array([np.cos(np.radians(p["dig_deg"])), np.sin(np.radians(p["dig_deg"])), 0.0])

    def force(t):
        s = np.sin(np.pi * (t - t0) / (t1 - t0)) ** 2 if t0 < t < t1 else 0.0
        return F * s * d

    return force


def linkage_points(model: fm.Model, result, p: dict) -> dict[str, np.ndarray]:
    """The bucket linkage's points A3, E, D, F, C over the rows of ``result`` (model frame, (nt, 3)):
    D and F are the side link's and the H-link's nodes, C the stick's last node; E and A3 are carried
    by the stick's end nodes (their offsets at assembly turned with the nodes)."""
    g0 = geometry(p, np.radians(p["poses"][max(int(p["hold"]), 0)]))
    x, R = result.x, result.R
    head = model.node_index("stick.0")
    end = model.node_index(f"stick.{int(p['n_elements'])}")
    out = {"D": x[:, model.node_index("side_link")], "F": x[:, model.node_index("h_link")], "C": x[:, end]}
    for name, n, at in (("E", end, "C"), ("A3", head, "B")):
        r0 = model.R0[n].T @ np.array(_xyz(g0[name] - g0[at]))  # the offset in the node's axes
        out[name] = x[:, n] + np.einsum("tij,j->ti", R[:, n], r0)
    return out


def linkage_angles(A3, E, D, F, C) -> tuple[float, float]:
    """How far the bucket linkage is from its two singular configurations [deg]: the angle between the
    bucket cylinder's line and the side link's (0: the cylinder at its dead point) and the angle D–F–C
    between the H-link and the bucket link (0 or 180: folded or stretched in line), eq. (2)."""
    u = lambda v: np.asarray(v, float)[:2] / np.linalg.norm(np.asarray(v, float)[:2])  # noqa: E731
    dead = np.degrees(np.arccos(min(1.0, abs(u(D - A3) @ u(D - E)))))
    return float(dead), float(np.degrees(np.arccos(np.clip(u(D - F) @ u(C - F), -1.0, 1.0))))


def sigma_history(model: fm.Model, result, p: dict) -> np.ndarray:
    """σ_min and σ_max [m] of the bucket linkage's Jacobian (2) at every row of ``result`` ((nt, 2))."""
    pts = linkage_points(model, result, p)
    s = np.array([linkage_sigma(*(pts[k][i] for k in ("A3", "E", "D", "F", "C"))) for i in range(result.t.size)])
    return np.column_stack([s[:, -1], s[:, 0]])


def stick_stress(model: fm.Model, result, p: dict) -> np.ndarray:
    """The largest normal stress [Pa] in the stick's box over its elements at every row: |N|/A plus the
    bending stresses of the moments at the elements' ends (the output's mean moment plus half the
    element's length times its shear) at the box's outer fibres."""
    sec = stick_section(p)
    F = result.element_forces  # N, Vy, Vz, T, My, Mz per element (elements/beam: co-rotated axes)
    Le = p["stick_length"] / int(p["n_elements"])
    Mz = np.abs(F[..., 5]) + np.abs(F[..., 1]) * Le / 2
    My = np.abs(F[..., 4]) + np.abs(F[..., 2]) * Le / 2
    sigma = np.abs(F[..., 0]) / sec.A + Mz * p["depth"] / 2 / sec.Iz + My * p["width"] / 2 / sec.Iy
    return sigma.max(axis=1)


def _work(F: np.ndarray, rate: np.ndarray, t: np.ndarray) -> float:
    """The work [J] a cylinder of tension F does on the machine over the rows: ∫ −F l' dt (trapezoid)."""
    P = -F * rate
    return float(np.sum((P[1:] + P[:-1]) / 2 * np.diff(t)))


def postprocess(result, model: fm.Model, params: dict, out_dir: Path) -> dict:
    """Cylinder forces, stroke errors (against the actuators' closure tolerance, 1e-10 times the
    model's size), energy balance, the stick's stress, σ_min of the bucket linkage; the plot
    ``cylinder_forces.png`` (forces, stress, σ_min)."""
    from flexmb.results.plots import plt

    p = {**DEFAULTS, **params}
    out_dir = Path(out_dir)
    t = result.t
    F = cylinder_forces(result)
    L = strokes(p)
    s: dict = {}
    for c in CYLINDERS:
        l, rate = cylinder_history(result, c)[:, :2].T
        err = l - np.array([L[c][0](ti) for ti in t])
        s[f"{c}_push_max_kN"] = float(-F[c].min() / 1e3)
        s[f"{c}_pull_max_kN"] = float(max(F[c].max(), 0.0) / 1e3)  # 0: it never pulled
        s[f"{c}_stroke_mm"] = float(1e3 * (l.max() - l.min()))
        s[f"{c}_stroke_error_max_m"] = float(np.abs(err).max())
        s[f"{c}_work_kJ"] = _work(F[c], rate, t) / 1e3
    every = max(1, int(round(0.01 / max(float(np.median(np.diff(t))), 1e-12)))) if t.size > 1 else 1
    t_r = t[::every]  # the rigid mechanism's inverse dynamics (eq. (4)) every 10 ms
    F_r = rigid_cylinder_forces(p, t_r)
    for i, c in enumerate(CYLINDERS):
        d = F[c][::every] - F_r[:, i]
        k = int(np.argmax(np.abs(d)))
        s[f"{c}_vs_rigid"] = (f"differs from the rigid mechanism's inverse dynamics by {np.sqrt(np.mean(d * d)) / 1e3:.3g} kN "
                              f"RMS, at most {abs(d[k]) / 1e3:.3g} kN (t = {t_r[k]:.2f} s), against its peak "
                              f"{np.abs(F_r[:, i]).max() / 1e3:.4g} kN")
        s[f"{c}_vs_rigid_rms_kN"] = float(np.sqrt(np.mean(d * d)) / 1e3)
    s["closure_tolerance_m"] = 1e-10 * float(model.size)  # the actuators' (docs/actuator.md §2)
    e = result.energy
    W_cyl = float(e["drive_work"][-1])  # the cylinders' work: the actuators' drive work (the case has no other drive)
    s["cylinders_work_kJ"] = W_cyl / 1e3
    s["cylinders_work_rows_kJ"] = sum(s[f"{c}_work_kJ"] for c in CYLINDERS)  # the same from the rows, ∫ −F l' dt
    balance = result.total_energy - result.total_energy[0]
    dV = e["potential"] - e["potential"][0]
    scale = max(abs(W_cyl), float(np.abs(dV).max()), float(np.abs(e["load_work"]).max()), 1.0)
    s["energy"] = (f"cylinders' work (drive work) {W_cyl / 1e3:.4g} kJ, digging load's work "
                   f"{e['load_work'][-1] / 1e3:.4g} kJ, potential energy {dV[-1] / 1e3:+.4g} kJ, kinetic "
                   f"{e['kinetic'][-1] / 1e3:.3g} kJ and strain {e['strain'][-1] / 1e3:.3g} kJ at the end, dissipated "
                   f"by the stick's damping and the cut {e['dissipated'][-1] / 1e3:.3g} kJ; balance closes to "
                   f"{np.abs(balance).max():.3g} J ({np.abs(balance).max() / scale:.2g} of the largest flow)")
    s["energy_balance_relative"] = float(np.abs(balance).max() / scale)
    stress = stick_stress(model, result, p)
    k = int(np.argmax(stress))
    s["stick_stress_max_MPa"] = float(stress[k] / 1e6)
    s["stick_stress_max_t_s"] = float(t[k])
    sig = sigma_history(model, result, p)
    i = int(np.argmin(sig[:, 0]))
    s["linkage_sigma_min_start_m"] = float(sig[0, 0])
    s["linkage_sigma_min_m"] = float(sig[i, 0])
    s["linkage_sigma_min_t_s"] = float(t[i])
    s["linkage_sigma_ratio_min"] = float(sig[i, 0] / sig[i, 1])
    pts = linkage_points(model, result, p)
    dead, dfc = linkage_angles(*(pts[k][i] for k in ("A3", "E", "D", "F", "C")))
    s["linkage_cylinder_to_side_link_deg"], s["linkage_h_link_to_bucket_link_deg"] = dead, dfc
    s["linkage"] = (f"σ_min of the bucket linkage (eq. (2)) {sig[0, 0]:.3g} m at the start, smallest "
                    f"{sig[i, 0]:.3g} m at t = {t[i]:.3f} s ({100 * sig[i, 0] / sig[i, 1]:.2g} % of σ_max there, "
                    f"{100 * sig[i, 0] / sig[0, 0]:.2g} % of its start value): the bucket fully curled, near the "
                    f"linkage's singular configurations, the cylinder {dead:.3g}° off the side link's line (its "
                    f"dead point at 0°), the H-link {dfc:.3g}° from folding onto the bucket link")
    s["newton_iterations_per_step"] = float(np.mean(result.newton_iterations[1:]))
    s["status"] = result.status

    fig, axs = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    for i, c in enumerate(CYLINDERS):
        axs[0].plot(t, F[c] / 1e3, color=f"C{i}", label=c.replace("_", " "))
        axs[0].plot(t_r, F_r[:, i] / 1e3, "--", color=f"C{i}", lw=0.8, label="rigid, inverse dynamics" if i == 2 else None)
    axs[0].set_ylabel("cylinder tension [kN] (< 0: push)")
    axs[0].legend(fontsize="small")
    axs[1].plot(t, stress / 1e6, color="tab:red")
    axs[1].set_ylabel("stick: largest normal stress [MPa]")
    axs[2].plot(t, 1e3 * sig[:, 0], color="tab:green")
    axs[2].set_ylabel("bucket linkage σ_min [mm]")
    axs[2].set_xlabel("t [s]")
    for ax in axs:
        ax.grid(True, alpha=0.3)
    axs[0].set_title("excavator digging cycle")
    fig.tight_layout()
    fig.savefig(out_dir / "cylinder_forces.png", dpi=120)
    plt.close(fig)
    if p["animation"]:
        from flexmb.results.animation import animate

        animate(result, out_dir / "animation.gif", view="xy", overwrite=True)
    return s


if __name__ == "__main__":  # standalone: the same as `flexmb run <this file> [options]`
    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
