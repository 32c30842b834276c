"""Quarter-car double-wishbone suspension over a road bump: wheel travel, damper and tyre forces.

Mechanism (x forward, y outward, z up; metres). The chassis (the sprung quarter mass) moves on a
vertical prismatic joint ``heave`` to ground. The lower and upper wishbones turn on revolute joints
``lower_pivot`` and ``upper_pivot`` about x on the chassis. The upright (knuckle, hub, brake,
wheel and tyre: the unsprung mass, its node at the wheel centre) is joined to the lower arm by the
ball joint ``lower_ball`` of the tree and to the upper arm by the rigid cut ``upper_ball``
(``add_rigid_cut(..., free_rotation="all")``: a ball joint that closes the loop chassis – lower arm –
upright – upper arm). A tie rod, a stiff spring-damper from the chassis to a steering arm 0.12 m
behind the axle, holds the upright's rotation about the two balls' axis (the steering, which the two
balls leave free); its line passes through the arms' instant centre, so its length does not change
with wheel travel to first order (no bump steer). Between the lower arm and the chassis, the
coil-over: the ``spring`` (a linear spring-damper element of stiffness ``k_spring``, preloaded) and
the ``damper`` beside it (a force law, below). The ``tyre`` is a spring-damper from the wheel
centre to the road point under it.

The moving road (a force law f(l, l', t)). The tyre's element runs from the road point A under the
wheel (fixed, at road level z = 0) to the wheel centre W. The road surface under the tyre rises by
z_r(t), so the tyre's own compressed length is l − z_r(t) and its rate l' − z_r'(t); the tension
(negative: the tyre pushes) is

    F_tyre(l, l', t) = min(k_tyre (l − z_r(t) − L_tyre) + c_tyre (l' − z_r'(t)), 0),

L_tyre the free length (the loaded radius plus the static deflection); the min lets the tyre lift
off the road (it never pulls), and its tangent (k_tyre, c_tyre) in contact, (0, 0) in the air is
given as ``force_law_tangent``. z_r is a cosine bump of
height ``bump_height`` and length ``bump_length`` met at ``speed`` from t = ``bump_start``. The
road's power enters through F_tyre l' (flexmb counts a force law's power F l' as work the element
takes out, so the energy balance T + V + U + D − W stays closed: docs/spring_damper.md §6).

The motion-dependent force: the damper's asymmetric characteristic (rebound stronger than bump,
as on road dampers)

    F_damper(l') = c_damper l' (1 + r tanh(l' / v_r)),   r = ``damper_asymmetry``, v_r = ``damper_knee``

(tension, l' > 0 extension = rebound): slope c_damper at rest, tending to (1 + r) c_damper in
rebound and (1 − r) c_damper in bump above |l'| ≈ v_r; with r = 0.5 the ratio is 3:1.

Numbers (a mid-size passenger car's front corner). Sprung quarter mass 350 kg, unsprung 35 kg
upright/wheel plus arms of 4 and 2 kg; a wheel rate of about 25 kN/m (body frequency 1.35 Hz), a
tyre of 200 kN/m (wheel hop about 12 Hz) and a body damping ratio of about 0.3: the ranges of
T. D. Gillespie, Fundamentals of Vehicle Dynamics (SAE, 1992), ch. 5 (ride: body 1–1.5 Hz, wheel hop
10–12 Hz, tyre rate about ten times the suspension rate, damping ratio 0.2–0.4) and of
W. F. Milliken, D. L. Milliken, Race Car Vehicle Dynamics (SAE, 1995), ch. 16 (motion ratios of
0.5–0.7 on double wishbones, rebound-to-bump damping 2–3). The hard points are chosen for a motion
ratio of about 0.70; the spring rate is the wheel rate over the motion ratio squared. The model
starts in its static equilibrium: the spring's and the tyre's preloads are computed from the
virtual work of gravity over the linkage's motion (:func:`static_preloads`).

Summary: wheel travel (the wheel centre's height relative to the chassis, from the static position),
chassis heave, damper and tyre forces (peaks), the static check (no motion before the bump), the
motion ratio and wheel rate at the design position, and the energy balance.
Test: tests/test_case_quarter_car.py (a linearised 2-DOF quarter car built independently).

Run:  flexmb run cases/quarter_car.py     or     python cases/quarter_car.py [--out DIR]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import flexmb as fm

DEFAULTS = dict(
    m_sprung=350.0, m_upright=35.0, m_lower_arm=4.0, m_upper_arm=2.0, g=9.81,
    k_spring=52.0e3, c_damper=4.0e3, damper_asymmetry=0.5, damper_knee=0.1,
    k_tyre=200.0e3, c_tyre=100.0, k_tie_rod=5.0e6, c_tie_rod=2.0e3,
    bump_height=0.04, bump_length=1.0, speed=10.0, bump_start=0.1,
    animation=True, t_end=1.5, dt=1e-3, rho_inf=0.8,
)

# hard points at the design (static) position, (y, z) in the x = 0 plane [m]
PIVOT_LOWER, BALL_LOWER = np.array([0.25, 0.20]), np.array([0.65, 0.16])
PIVOT_UPPER, BALL_UPPER = np.array([0.35, 0.50]), np.array([0.62, 0.52])
WHEEL = np.array([0.75, 0.30])  # wheel centre; the loaded radius puts the road at z = 0
SPRING_LOWER, SPRING_UPPER = np.array([0.55, 0.17]), np.array([0.48, 0.62])  # coil-over mounts (arm, chassis)
CHASSIS = np.array([0.0, 0.45])  # the chassis node (its centre of mass)
TIE_ROD_X = -0.12  # the tie rod's plane, behind the axle


def _rot(phi: float) -> np.ndarray:
    """Rotation by ``phi`` about +x, acting on (y, z)."""
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def _circles(c1: np.ndarray, r1: float, c2: np.ndarray, r2: float, near: np.ndarray) -> np.ndarray:
    """The intersection of two circles (centres c1, c2, radii r1, r2) nearest ``near``."""
    d = c2 - c1
    dist = float(np.hypot(*d))
    a = (r1**2 - r2**2 + dist**2) / (2 * dist)
    h = np.sqrt(max(r1**2 - a**2, 0.0))
    e = d / dist
    base = c1 + a * e
    cands = [base + h * np.array([-e[1], e[0]]), base - h * np.array([-e[1], e[0]])]
    return min(cands, key=lambda p: float(np.hypot(*(p - near))))


def linkage(theta: float) -> dict[str, np.ndarray]:
    """The planar linkage with the lower arm turned by ``theta`` [rad] about x from the design
    position (chassis fixed): the hard points (y, z) and the upright's rotation ``phi``."""
    R = _rot(theta)
    bl = PIVOT_LOWER + R @ (BALL_LOWER - PIVOT_LOWER)
    bu = _circles(PIVOT_UPPER, float(np.hypot(*(BALL_UPPER - PIVOT_UPPER))), bl,
                  float(np.hypot(*(BALL_UPPER - BALL_LOWER))), BALL_UPPER)
    d0, d = BALL_UPPER - BALL_LOWER, bu - bl
    phi = float(np.arctan2(d[1], d[0]) - np.arctan2(d0[1], d0[0]))
    return {"ball_lower": bl, "ball_upper": bu, "wheel": bl + _rot(phi) @ (WHEEL - BALL_LOWER),
            "spring_lower": PIVOT_LOWER + R @ (SPRING_LOWER - PIVOT_LOWER), "phi": np.array(phi)}


def instant_centre() -> np.ndarray:
    """Where the lines of the two arms meet (y, z): the upright's instant centre of rotation."""
    d1, d2 = BALL_LOWER - PIVOT_LOWER, BALL_UPPER - PIVOT_UPPER
    s = np.linalg.solve(np.column_stack([d1, -d2]), PIVOT_UPPER - PIVOT_LOWER)
    return PIVOT_LOWER + s[0] * d1


def tie_rod_points() -> tuple[np.ndarray, np.ndarray]:
    """The tie rod's chassis and upright ends (3-D): the upright end midway up between the balls,
    0.1 m inboard of the wheel centre, the chassis end on the line from it through the instant centre."""
    outer = np.array([WHEEL[0] - 0.1, 0.5 * (BALL_LOWER[1] + BALL_UPPER[1])])
    ic = instant_centre()
    inner = outer + 0.3 * (ic - outer) / np.hypot(*(ic - outer))
    return np.array([TIE_ROD_X, *inner]), np.array([TIE_ROD_X, *outer])


def _d(f, h: float = 1e-6) -> float:
    """Central difference of f(theta) at theta = 0."""
    return float((f(h) - f(-h)) / (2 * h))


def motion_ratio() -> float:
    """Coil-over length change per wheel-centre rise relative to the chassis (design position)."""
    spring = lambda th: np.hypot(*(SPRING_UPPER - linkage(th)["spring_lower"]))  # noqa: E731
    return -_d(spring) / _d(lambda th: linkage(th)["wheel"][1])


def static_preloads(p: dict) -> tuple[float, float]:
    """(spring compression, tyre compression) [N] that hold the design position under gravity:
    the tyre carries the whole weight; the virtual work over the lower arm's turn (chassis held)
    of the tyre, the spring and gravity on the arms and the upright vanishes."""
    g = p["g"]
    tyre = g * (p["m_sprung"] + p["m_upright"] + p["m_lower_arm"] + p["m_upper_arm"])
    dz_wheel = _d(lambda th: linkage(th)["wheel"][1])
    dz_lower = _d(lambda th: 0.5 * (PIVOT_LOWER + linkage(th)["ball_lower"])[1])
    dz_upper = _d(lambda th: 0.5 * (PIVOT_UPPER + linkage(th)["ball_upper"])[1])
    dl_spring = _d(lambda th: np.hypot(*(SPRING_UPPER - linkage(th)["spring_lower"])))
    work = tyre * dz_wheel - g * (p["m_upright"] * dz_wheel + p["m_lower_arm"] * dz_lower + p["m_upper_arm"] * dz_upper)
    return -work / dl_spring, tyre


def road(t, start, speed, length, height):
    """Road height under the tyre z_r(t) and its rate z_r'(t): a cosine bump of ``height`` and ``length``
    met at ``speed`` from t = ``start`` (module docstring). Arithmetic on numbers only: numba compiles it
    with the tyre's law, which then runs in the compiled Newton step (docs/spring_damper.md (S12))."""
    s = (t - start) * speed / length  # 0..1 over the bump
    if not 0.0 < s < 1.0:
        return 0.0, 0.0
    h, w = height, 2 * np.pi * speed / length
    return 0.5 * h * (1 - np.cos(2 * np.pi * s)), 0.5 * h * w * np.sin(2 * np.pi * s)


def _p3(yz: np.ndarray, x: float = 0.0) -> np.ndarray:
    return np.array([x, yz[0], yz[1]])


def _rod(m: float, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Inertia about its centre (global axes) of a uniform rod of mass m from a to b (y, z)."""
    d = _p3(b - a)
    L2 = float(d @ d)
    e = d / np.sqrt(L2)
    return m * L2 / 12 * (np.eye(3) - np.outer(e, e)) + 1e-6 * np.eye(3)


def build(**params) -> fm.Model:
    """The quarter car at its static design position (module docstring)."""
    p = {**DEFAULTS, **params}
    for k in ("m_sprung", "m_upright", "m_lower_arm", "m_upper_arm", "k_spring", "k_tyre", "speed", "bump_length"):
        if not p[k] > 0:
            raise fm.ModelError(f"quarter_car: {k} = {p[k]!r} must be positive.")
    if not 0 <= p["damper_asymmetry"] < 1 or not p["damper_knee"] > 0:
        raise fm.ModelError(f"quarter_car: damper_asymmetry = {p['damper_asymmetry']!r} must be in [0, 1) and "
                            f"damper_knee = {p['damper_knee']!r} positive.")
    spring_preload, tyre_preload = static_preloads(p)
    mb = fm.ModelBuilder(gravity=(0, 0, -p["g"]))
    mb.add_node("chassis", _p3(CHASSIS))
    mb.add_body("chassis", "chassis", p["m_sprung"], (0, 0, 0), np.diag([40.0, 40.0, 40.0]))
    mb.add_joint("heave", "prismatic", "ground", "chassis", axis=(0, 0, 1))
    x_axis = (1, 0, 0)
    # the lower arm's node at its pivot, the upper arm's at its ball (where the cut acts): drawn, each
    # arm then runs from its node to its other joint point
    for arm, pivot, ball, node, m in (("lower_arm", PIVOT_LOWER, BALL_LOWER, PIVOT_LOWER, p["m_lower_arm"]),
                                      ("upper_arm", PIVOT_UPPER, BALL_UPPER, BALL_UPPER, p["m_upper_arm"])):
        mb.add_node(arm, _p3(node))
        mb.add_body(arm, arm, m, _p3(0.5 * (ball + pivot) - node), _rod(m, pivot, ball))
        mb.add_joint(arm.split("_")[0] + "_pivot", "revolute", "chassis", arm, point=_p3(pivot), axis=x_axis)
    mb.add_node("upright", _p3(WHEEL))
    mb.add_body("upright", "upright", p["m_upright"], (0, 0, 0), np.diag([0.8, 1.2, 0.8]))
    mb.add_joint("lower_ball", "spherical", "lower_arm", "upright", point=_p3(BALL_LOWER))
    mb.add_rigid_cut("upper_ball", "upper_arm", "upright", point=_p3(BALL_UPPER), free_rotation="all")
    inner, outer = tie_rod_points()
    mb.add_spring_damper("tie_rod", "chassis", "upright", stiffness=p["k_tie_rod"], damping=p["c_tie_rod"],
                         point_a=inner, point_b=outer)
    l_spring = float(np.hypot(*(SPRING_UPPER - SPRING_LOWER)))
    mb.add_spring_damper("spring", "chassis", "lower_arm", stiffness=p["k_spring"],
                         rest_length=l_spring + spring_preload / p["k_spring"],
                         point_a=_p3(SPRING_UPPER), point_b=_p3(SPRING_LOWER))
    c, r, v_r = p["c_damper"], p["damper_asymmetry"], p["damper_knee"]
    mb.add_spring_damper("damper", "chassis", "lower_arm", point_a=_p3(SPRING_UPPER), point_b=_p3(SPRING_LOWER),
                         force_law=lambda l, ld, t: c * ld * (1 + r * np.tanh(ld / v_r)))
    k_t, c_t = p["k_tyre"], p["c_tyre"]
    free_length = WHEEL[1] + tyre_preload / k_t
    bump = (p["bump_start"], p["speed"], p["bump_length"], p["bump_height"])

    def tyre(l, ld, t):
        zr, zr_dot = road(t, *bump)
        return min(k_t * (l - zr - free_length) + c_t * (ld - zr_dot), 0.0)  # it pushes, or lifts off

    def tyre_tangent(l, ld, t):
        return (k_t, c_t) if tyre(l, ld, t) < 0 else (0.0, 0.0)

    mb.add_spring_damper("tyre", "ground", "upright", point_a=(0.0, WHEEL[0], 0.0), point_b=_p3(WHEEL),
                         force_law=tyre, force_law_tangent=tyre_tangent)
    return mb.compile()


def wheel_travel(result) -> np.ndarray:
    """Wheel-centre height relative to the chassis, from the design position [m] (positive: bump)."""
    z = result.node_position("upright")[:, 2] - result.node_position("chassis")[:, 2]
    return z - (WHEEL[1] - CHASSIS[1])


def postprocess(result, model, params: dict, out_dir: Path) -> dict:
    """Plots of the motion and the forces, the animation, and the summary (module docstring)."""
    from flexmb.results.plots import plt  # pyplot on the Agg backend

    p = {**DEFAULTS, **params}
    t = result.t
    travel, heave = wheel_travel(result), result.coordinate("heave")
    damper, tyre, spring = (result.history(f"{n}.force") for n in ("damper", "tyre", "spring"))
    zr = np.array([road(ti, p["bump_start"], p["speed"], p["bump_length"], p["bump_height"])[0] for ti in t])
    fig, axs = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
    axs[0].plot(t, 1e3 * zr, "k:", label="road z_r")
    axs[0].plot(t, 1e3 * heave, label="chassis heave")
    axs[0].plot(t, 1e3 * travel, label="wheel travel (wheel − chassis)")
    axs[0].set_ylabel("[mm]")
    axs[1].plot(t, -damper, label="damper (compression positive)")
    axs[1].plot(t, -spring, label="spring")
    axs[1].set_ylabel("coil-over force [N]")
    axs[2].plot(t, -tyre, label="tyre (compression)")
    axs[2].set_ylabel("tyre force [N]")
    axs[2].set_xlabel("time t [s]")
    for ax in axs:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    axs[0].set_title(f"quarter car over a {1e3 * p['bump_height']:.0f} mm bump at {3.6 * p['speed']:.0f} km/h")
    fig.tight_layout()
    fig.savefig(Path(out_dir) / "quarter_car.png", dpi=120)
    plt.close(fig)
    if p["animation"]:
        from flexmb.results.animation import animate

        animate(result, Path(out_dir) / "animation.gif", view="yz", overwrite=True)
    before = t < p["bump_start"]
    bal = result.total_energy
    scale = float(np.ptp(result.energy["kinetic"]) + np.ptp(result.energy["potential"]) + np.ptp(result.energy["strain"]))
    mr = motion_ratio()
    return {
        "motion_ratio": mr, "wheel_rate_N_per_m": p["k_spring"] * mr**2,
        "static_preloads_N": {"spring": static_preloads(p)[0], "tyre": static_preloads(p)[1]},
        "still_before_bump_m": float(np.abs(travel[before]).max() + np.abs(heave[before]).max()) if before.any() else 0.0,
        "wheel_travel_max_mm": float(1e3 * travel.max()), "wheel_travel_min_mm": float(1e3 * travel.min()),
        "chassis_heave_max_mm": float(1e3 * heave.max()),
        "damper_force_bump_max_N": float(-damper.min()), "damper_force_rebound_max_N": float(damper.max()),
        "tyre_force_max_N": float(-tyre.min()), "tyre_force_min_N": float(-tyre.max()) + 0.0,
        "tyre_airborne_s": float(np.sum(np.diff(t)[tyre[1:] >= 0])),
        "energy_balance_drift_J": float(np.ptp(bal)), "energy_moved_J": scale,
        "energy_balance_relative": float(np.ptp(bal) / scale) if scale > 0 else 0.0,
    }


if __name__ == "__main__":
    from flexmb.app.cli import main

    sys.exit(main(["run", __file__, *sys.argv[1:]]))
