"""cases/excavator.py (issue 34, item 7): a 20 t excavator front (rigid boom and bucket, the stick a
steel box beam, the bucket's four-bar closed by a rigid cut, three cylinders) on a digging cycle.

* statics: held still in two poses, the cylinders' forces of the static equilibrium (flexmb.solvers.statics,
  the cylinders and the linkage's rigid cut held by their multipliers, docs/statics.md §2) against a
  hand check by virtual work on the rigid mechanism, Jᵀ F = −∂V/∂θ, with J = ∂l/∂θ and ∂V/∂θ central
  differences of the case's geometry and of the weights listed here; the tolerance is what the stick's
  compliance can change: the forces' sensitivity to the joint angles times the angles the stick's
  bending (M L / EI) can turn (the cylinders are rigid prescribed-length actuators: no sag of their own);
  a run from the case's static start begins with the same forces (docs/actuator.md (A9) at rest);
* held still, the stick's bending moments against the statics of the part beyond each section, to
  the same compliance;
* the linkage's σ_min: eq. (2)'s Jacobian against its closed-form determinant;
* the cycle from the command line, with its postprocess: finished, energy balance (the cylinders'
  work is the actuators' drive work), the strokes on L(t) to the actuators' closure tolerance
  (1e-10 times the model's size, docs/actuator.md §2), σ_min at the start and the curled end those of
  the rigid geometry.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
from conftest import load_case

from flexmb.app.cli import EXIT_OK, main
from flexmb.solvers.simulate import simulate
from flexmb.solvers.statics import static_equilibrium

case = load_case("excavator")
P = case.DEFAULTS
G = 9.81


def hand_forces(angles, h: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """The cylinder tensions holding the rigid mechanism still in ``angles`` by virtual work, and the
    cylinder lengths' Jacobian J = ∂l/∂θ; the weights listed here from the parameters."""
    sec = case.stick_section(P)
    beam = P["rho"] * sec.A * P["stick_length"]
    nose = 0.12 * P["stick_mass"]
    head = P["stick_mass"] - beam - nose

    def lengths_and_potential(a):
        g = case.geometry(P, a)
        parts = [(P["boom_mass"], g["boom_com"]), (beam, 0.5 * (g["B"] + g["C"])), (head, g["stick_head_com"]),
                 (nose, g["C"]), (P["side_link_mass"], 0.5 * (g["E"] + g["D"])),
                 (P["h_link_mass"], 0.5 * (g["D"] + g["F"])), (P["bucket_mass"], g["bucket_com"])]
        lengths = [np.linalg.norm(g[f"P{i}"] - g[f"A{i}"]) for i in (1, 2, 3)]
        return np.array(lengths), G * sum(m * c[1] for m, c in parts)

    J, Q = np.zeros((3, 3)), np.zeros(3)
    for j in range(3):
        e = np.eye(3)[j] * h
        (lp, vp), (lm, vm) = lengths_and_potential(angles + e), lengths_and_potential(angles - e)
        J[:, j], Q[j] = (lp - lm) / (2 * h), -(vp - vm) / (2 * h)  # Q: gravity's generalized forces
    # virtual work: the tensions F do −F·δl, gravity Q·δθ: Jᵀ F = Q
    return np.linalg.solve(J.T, Q), J


HELD = (0, 2)


@pytest.fixture(scope="module")
def held():
    """The front held still in the poses HELD: its static equilibrium (docs/statics.md §2) and a short run
    started from the case's static start (build's default ``start="static"``)."""
    out = {}
    for pose in HELD:
        model = case.build(hold=pose)
        out[pose] = (model, static_equilibrium(model), simulate(model, 0.02, 5e-3, rho_inf=0.5))
    return out


def compliance_angle(F_hand: np.ndarray, J: np.ndarray) -> float:
    """What the compliance can turn the joints by [rad]: the stroke error δl through J
    (|δθ| <= |δl| / σ_min(J)), δl the actuators' closure tolerance (1e-10 times the model's size,
    docs/actuator.md §2: the cylinders are rigid), and the stick's end rotation (:func:`stick_end_rotation`)."""
    return closure_tolerance() / np.linalg.svd(J, compute_uv=False)[-1] + stick_end_rotation()


@functools.cache
def closure_tolerance() -> float:
    """The actuators' closure tolerance [m]: 1e-10 times the model's size (docs/actuator.md §2)."""
    return 1e-10 * case.build().size


@pytest.mark.parametrize("pose", HELD)
def test_held_pose_cylinder_forces_match_virtual_work(pose, held):
    angles = np.radians(P["poses"][pose])
    F_hand, J = hand_forces(angles)
    # the case's statics (eq. (3)) is the same, and so is its rigid inverse dynamics (eq. (4)) held still
    assert np.allclose(case.static_cylinder_forces(P, angles), F_hand, rtol=1e-6, atol=1e-6 * np.abs(F_hand).max())
    rigid = case.rigid_cylinder_forces({**P, "hold": pose}, np.array([0.5]))[0]
    assert np.allclose(rigid, F_hand, rtol=1e-6, atol=1e-6 * np.abs(F_hand).max())
    model, static, res = held[pose]
    F_run = np.array([static.actuator_forces[c] for c in case.CYLINDERS])
    assert static.closure <= 1.0  # the cylinders at L and the linkage closed, to their tolerances
    # the run from the static start begins at rest with these forces (Gauss's principle, docs/actuator.md (A9)),
    # to the static solve's residual (1e-10 of the force scale) over the cylinders' levers: 1e-8 relative
    assert res.status == "finished"
    F = case.cylinder_forces(res)
    np.testing.assert_allclose([F[c][0] for c in case.CYLINDERS], F_run, rtol=1e-8)
    # the tolerance: the forces' sensitivity to the angles, ∂F/∂θ (central differences of the hand
    # check), times the angles the compliance can turn
    h = 1e-4
    dF = np.column_stack([(hand_forces(angles + h * e)[0] - hand_forces(angles - h * e)[0]) / (2 * h) for e in np.eye(3)])
    tol = 2 * np.abs(dF).sum(axis=1) * compliance_angle(F_hand, J)
    assert np.all(np.abs(F_run - F_hand) < tol), (F_run, F_hand, tol)
    # and the check is sharp: the tolerance is a small part of the forces
    assert tol.max() < 0.02 * np.abs(F_hand).max()


@pytest.mark.parametrize("pose", HELD)
def test_held_pose_stick_bending_moment_matches_statics(pose, held):
    """The bending moment of the stick's elements (the mean of their end moments) against the statics
    of the part beyond each end: the beam beyond it, the nose, side link, H-link and bucket weights and
    the bucket cylinder's force on D (the run's tension), moments about the section's point."""
    angles = np.radians(P["poses"][pose])
    g = case.geometry(P, angles)
    model, static, res = held[pose]
    F3 = static.actuator_forces["bucket_cylinder"]
    sec, n = case.stick_section(P), int(P["n_elements"])
    w = G * P["rho"] * sec.A  # the beam's weight per length
    nose = 0.12 * P["stick_mass"]
    L, e1 = P["stick_length"], (g["C"] - g["B"]) / P["stick_length"]
    cross = lambda r, f: r[0] * f[1] - r[1] * f[0]  # noqa: E731
    down = np.array([0.0, -1.0])

    def moment(s: float) -> tuple[float, float]:
        """The moment about the stick's point at s of what acts beyond it, and Σ|f||r| (its scale)."""
        Ps = g["B"] + s * e1
        forces = [(w * (L - s) * down, Ps + (L - s) / 2 * e1), (nose * G * down, g["C"]),
                  (P["side_link_mass"] * G * down, (g["E"] + g["D"]) / 2),
                  (P["h_link_mass"] * G * down, (g["D"] + g["F"]) / 2), (P["bucket_mass"] * G * down, g["bucket_com"]),
                  (F3 * (g["A3"] - g["D"]) / np.linalg.norm(g["A3"] - g["D"]), g["D"])]  # tension pulls D to A3
        return (sum(cross(r - Ps, f) for f, r in forces),
                sum(np.linalg.norm(f) * np.linalg.norm(r - Ps) for f, r in forces))

    Le = L / n
    Mz = res.element_forces[0, :, 5]  # the static state: the run's first row
    F_hand, J = hand_forces(angles)
    hand, tols = [], []
    for k in range(1, n):  # the elements beyond the head (the head's node carries the cylinder's base)
        (m0, s0), (m1, s1) = moment(k * Le), moment((k + 1) * Le)
        hand.append((m0 + m1) / 2)
        tols.append(2 * max(s0, s1) * compliance_angle(F_hand, J))
    # e3 of the stick's sections is the global z (add_flexible_link's default z_hint): the signs agree too
    assert np.all(np.abs(Mz[1:] - np.array(hand)) < tols), (Mz[1:], hand, tols)
    assert max(tols) < 0.05 * np.abs(hand).max()  # and the check is sharp


@pytest.mark.parametrize("pose", HELD)
def test_held_pose_stick_stress_matches_statics(pose, held):
    """The summary's largest normal stress in the stick (case.stick_stress: |N|/A plus the bending stress of the
    larger end moment at the box's outer fibre) against the statics of the part beyond each section, as in
    test_held_pose_stick_bending_moment_matches_statics: the end moments m(s) and the axial force N(s) = −Σ f · e1 of
    what acts beyond s, the stress |N|/A + max(|m(s0)|, |m(s1)|) (depth/2)/I_z of each element past the head; the
    tolerance that of the moments and forces under the compliance, through the same section moduli."""
    from types import SimpleNamespace

    angles = np.radians(P["poses"][pose])
    g = case.geometry(P, angles)
    model, static, res = held[pose]
    F3 = static.actuator_forces["bucket_cylinder"]
    sec, n = case.stick_section(P), int(P["n_elements"])
    w = G * P["rho"] * sec.A
    nose = 0.12 * P["stick_mass"]
    L, e1 = P["stick_length"], (g["C"] - g["B"]) / P["stick_length"]
    cross = lambda r, f: r[0] * f[1] - r[1] * f[0]  # noqa: E731
    down = np.array([0.0, -1.0])

    def beyond(s: float) -> tuple[float, float, float]:
        """Moment about the stick's point at s, axial force and Σ|f|, Σ|f||r| of what acts beyond s."""
        Ps = g["B"] + s * e1
        forces = [(w * (L - s) * down, Ps + (L - s) / 2 * e1), (nose * G * down, g["C"]),
                  (P["side_link_mass"] * G * down, (g["E"] + g["D"]) / 2),
                  (P["h_link_mass"] * G * down, (g["D"] + g["F"]) / 2), (P["bucket_mass"] * G * down, g["bucket_com"]),
                  (F3 * (g["A3"] - g["D"]) / np.linalg.norm(g["A3"] - g["D"]), g["D"])]
        return (sum(cross(r - Ps, f) for f, r in forces), -sum(f @ e1 for f, _ in forces),
                sum(np.linalg.norm(f) for f, _ in forces), sum(np.linalg.norm(f) * np.linalg.norm(r - Ps) for f, r in forces))

    Le, c = L / n, P["depth"] / 2
    angle = compliance_angle(*hand_forces(angles))
    hand, tols = [], []
    for k in range(1, n):
        (m0, N0, f0, s0), (m1, N1, f1, s1) = beyond(k * Le), beyond((k + 1) * Le)
        hand.append(abs(N0 + N1) / 2 / sec.A + max(abs(m0), abs(m1)) * c / sec.Iz)
        tols.append(2 * (max(f0, f1) / sec.A + max(s0, s1) * c / sec.Iz) * angle)
    stress = case.stick_stress(model, SimpleNamespace(element_forces=res.element_forces[:1, 1:]), P)[0]
    assert abs(stress - max(hand)) < max(tols), (stress, hand, tols)
    assert max(tols) < 0.05 * max(hand)  # the check is sharp
    assert case.stick_stress(model, res, P)[0] >= stress  # the summary's value: the head's element too


def test_linkage_sigma_against_its_determinant():
    """Eq. (2): |det J| = |ED| sin(cylinder, side link) · |DF| |CF| sin(DFC); σ_min → 0 at the toggle."""
    rng = np.random.default_rng(7)
    for _ in range(20):
        A3, E, D, F, C = rng.normal(size=(5, 2))
        s = case.linkage_sigma(A3, E, D, F, C)
        n = (D - A3) / np.linalg.norm(D - A3)
        ed = D - E
        det = abs(n[0] * ed[1] - n[1] * ed[0]) * abs((F - D)[0] * (F - C)[1] - (F - D)[1] * (F - C)[0])
        assert np.prod(s) == pytest.approx(det, rel=1e-10)
        # and the two angles the summary reports are the two sines' angles
        dead, dfc = np.radians(case.linkage_angles(A3, E, D, F, C))
        lengths = np.linalg.norm(D - E) * np.linalg.norm(F - D) * np.linalg.norm(F - C)
        assert np.prod(s) == pytest.approx(lengths * np.sin(dead) * np.sin(dfc), rel=1e-8)
    # H-link and bucket link in line (D, F, C collinear): singular
    g = case.geometry(P, np.zeros(3))
    F_ = g["C"] + 0.4 * (g["D"] - g["C"]) / np.linalg.norm(g["D"] - g["C"])
    assert case.linkage_sigma(g["A3"], g["E"], g["D"], F_, g["C"])[-1] < 1e-12


@pytest.fixture(scope="module")
def cycle(tmp_path_factory):
    out = tmp_path_factory.mktemp("excavator") / "run"
    code = main(["run", str(case.__file__), "--out", str(out), "--dt", "0.005", "-q", "--param", "animation=False"])
    return code, out, json.loads((out / "summary.json").read_text())


def test_cycle_runs_from_the_command_line(cycle):
    code, out, s = cycle
    assert code == EXIT_OK
    s = s.get("summary", s)
    assert s["status"] == "finished"
    assert (out / "cylinder_forces.png").is_file() and (out / "paraview" / "excavator.pvd").is_file()
    # the energy balance closes (the cylinders' work, the load's, gravity's against kinetic and strain)
    assert s["energy_balance_relative"] < 1e-4
    # the cylinders' work is the drive work: the recorder's trapezoid of the actuators' power −F l' over
    # the steps, which are the rows here, is the rows' ∫ −F l' dt but for the order of summation
    assert s["output_rows"] == s["steps"] + 1
    assert s["cylinders_work_kJ"] == pytest.approx(s["cylinders_work_rows_kJ"], rel=1e3 * np.finfo(float).eps)
    # the cylinders are rigid: their lengths are L(t) to the actuators' closure tolerance
    tol_l = closure_tolerance()
    assert s["closure_tolerance_m"] == pytest.approx(tol_l, rel=1e-12)
    for c in case.CYLINDERS:
        assert s[f"{c}_stroke_error_max_m"] <= tol_l, (c, s[f"{c}_stroke_error_max_m"], tol_l)
    # σ_min of the linkage: the rigid geometry's at the start and in the curled end pose, within what the
    # compliance can change: the largest stroke error through the lengths' Jacobian, and the stick's
    # bending, which moves the bucket cylinder's base A3 (on the stick's head) against the linkage (on
    # its nose; σ is that of the five points' relative positions: the joints' angles alone do not change
    # it): δA3 <= φ |A3 − C| + δ, the nose's rotation φ = M L / EI and deflection δ = M L² / 2EI under the
    # bound M of :func:`stick_end_rotation`, with the linkage closed again at the cylinder's length
    err = max(s[f"{c}_stroke_error_max_m"] for c in case.CYLINDERS)
    for pose, key in ((0, "linkage_sigma_min_start_m"), (-1, "linkage_sigma_min_m")):
        angles = np.radians(P["poses"][pose])
        J = hand_forces(angles)[1]
        h = 1e-5
        ds = np.array([(sigma_min(angles + h * e) - sigma_min(angles - h * e)) / (2 * h) for e in np.eye(3)])
        g = case.geometry(P, angles)
        phi = stick_end_rotation()
        shift = phi * np.linalg.norm(g["A3"] - g["C"]) + phi * P["stick_length"] / 2
        dA = np.array([(sigma_min(angles, h * e) - sigma_min(angles, -h * e)) / (2 * h) for e in np.eye(2)])
        tol = 2 * (np.abs(ds).sum() * err / np.linalg.svd(J, compute_uv=False)[-1] + np.abs(dA).sum() * shift)
        assert abs(s[key] - sigma_min(angles)) < tol, (key, s[key], sigma_min(angles), tol)
        if pose == 0:  # sharp at the start; near the dead point σ turns fast with A3 (|∂σ/∂A3| ~ 1.8 against
            assert tol < 0.05 * sigma_min(angles)  # 0.38 at the start) and the bound M is loose: not there
    assert s["linkage_sigma_min_m"] < 0.2 * s["linkage_sigma_min_start_m"]
    # the machine of the data sheet could run this cycle: each cylinder moves within its stroke and pushes no harder
    # than its full bore at the circuit's pressure (the pull, on the rod side's smaller area, is not in the sheet)
    for c in case.CYLINDERS:
        bore, stroke, count = case.DATA_SHEET[c]
        assert s[f"{c}_stroke_mm"] < 1e3 * stroke, (c, s[f"{c}_stroke_mm"])
        assert s[f"{c}_push_max_kN"] < 1e-3 * count * np.pi * bore**2 / 4 * case.DATA_SHEET["pressure"], c


def sigma_min(angles, shift_a3=(0.0, 0.0)) -> float:
    """σ_min of eq. (2) for the rigid mechanism in ``angles``; with the bucket cylinder's base A3
    moved by ``shift_a3`` (x, y) [m] against the linkage, the bucket linkage closed again at the
    cylinder's length (the bucket link's angle by Newton)."""
    g = case.geometry(P, angles)
    dA = np.asarray(shift_a3, float)
    if dA.any():
        A3, L3, th = g["A3"] + dA, np.linalg.norm(g["D"] - g["A3"]), np.array(angles, float)
        gap = lambda x: np.linalg.norm(case.geometry(P, np.array([th[0], th[1], x]))["D"] - A3) - L3  # noqa: E731
        for _ in range(30):
            r = gap(th[2])
            if abs(r) < 1e-14:
                break
            th[2] -= r / ((gap(th[2] + 1e-7) - gap(th[2] - 1e-7)) / 2e-7)
        g = {**case.geometry(P, th), "A3": A3}
    return float(case.linkage_sigma(g["A3"], g["E"], g["D"], g["F"], g["C"])[-1])


def stick_end_rotation() -> float:
    """The stick's end rotation [rad] under the largest bending moment its end loads can give,
    M L / EI with M <= g (bucket + links + stick) (stick + bucket reach)."""
    m_end = P["bucket_mass"] + P["side_link_mass"] + P["h_link_mass"] + P["stick_mass"]
    M = G * m_end * (P["stick_length"] + P["bucket_tip"])
    return M * P["stick_length"] / (P["E"] * case.stick_section(P).Iz)


def test_bad_input_is_refused():
    import flexmb as fm

    with pytest.raises(fm.ModelError, match="hold = 7"):
        case.build(hold=7)
    with pytest.raises(fm.ModelError, match="3 times for 4 poses"):
        case.build(times=[0.0, 1.0, 2.0])
    with pytest.raises(fm.ModelError, match="bucket linkage does not close"):
        case.build(h_link=0.05)
    with pytest.raises(fm.ModelError, match="stick_mass"):
        case.build(stick_mass=300.0)
