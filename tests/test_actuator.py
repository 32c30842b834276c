"""Linear actuators (ModelBuilder.add_actuator; elements/actuator.py, docs/actuator.md), each test
against a closed form or an independent computation, on a boom hinged to ground and lifted by a
cylinder from a ground point A to a boom point B:

* a locked cylinder holds the boom: its force is the static moment balance, computed by hand, also
  with the model 100 m away from the origin;
* a prescribed stroke L(t) turns the boom by the closed-form angle of the triangle (pivot, A, B);
* the cylinder force over that motion is the inverse dynamics J θ'' + m g c cos θ = -F (r_B × n)_z;
* the energy balance closes with the actuator's work (drive work);
* Ġ V (A8) against the second difference of the length along a screw motion in space;
* a force actuator is the spring-damper with the same force law, bit for bit;
* a length beyond reach fails naming the actuator; bad input is refused naming it;
* a cylinder driving a four-bar closed by a rigid cut starts on both constraints;
* the Newton path: the model takes the compiled Newton loop and says so.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements import actuator_kernels as kernels
from flexmb.elements.rigid_cut_kernels import KAPPA
from flexmb.results.drawing import cell_kinds, frames, lines
from flexmb.rotations import expm_into
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.modal import natural_frequencies

G0 = 9.81
M, LB = 10.0, 2.0  # boom mass [kg] and length [m], centre of mass at LB / 2 from the pivot
A = np.array([0.5, -1.0, 0.0])  # the cylinder's ground point, relative to the pivot
B = np.array([1.5, 0.0, 0.0])  # its boom point at θ = 0, relative to the pivot
L0 = float(np.linalg.norm(B - A))
J = M * LB**2 / 3  # the boom's inertia about the pivot
EPS = float(np.finfo(float).eps)


def boom(length=None, force=None, origin=(0.0, 0.0, 0.0), **kw) -> fm.Model:
    """The boom (a uniform rod) on a revolute joint about z at ``origin``, gravity -y, and the cylinder
    'cyl' from origin + A (ground) to origin + B (boom)."""
    o = np.asarray(origin, dtype=float)
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    mb.add_node("boom", o)
    mb.add_body("boom", "boom", M, (LB / 2, 0.0, 0.0), np.diag([1e-3, M * LB**2 / 12, M * LB**2 / 12]))
    mb.add_joint("pivot", "revolute", "ground", "boom", point=o, axis=(0, 0, 1))
    mb.add_actuator("cyl", "ground", "boom", point_a=o + A, point_b=o + B, length=length, force=force, **kw)
    return mb.compile()


def lever(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(r_B × n)_z, the moment about the pivot of a unit tension's pull on B reversed (n from A to B),
    and the cylinder length, at boom angles θ."""
    rb = np.linalg.norm(B)
    Bt = np.stack([rb * np.cos(theta), rb * np.sin(theta)], axis=-1)
    d = Bt - A[:2]
    length = np.linalg.norm(d, axis=-1)
    return (Bt[..., 0] * d[..., 1] - Bt[..., 1] * d[..., 0]) / length, length


def test_a_locked_cylinder_holds_the_boom_with_the_static_moment_balance() -> None:
    """Boom horizontal, cylinder locked at its assembly length: the boom stays at rest and the cylinder
    force balances the weight's moment, -F (r_B × n)_z = m g (L_B / 2) (a push: F < 0), to 1e-8
    relative (the multiplier is exact to round-off at rest); the same 100 m away from the origin."""
    k, _ = lever(np.array(0.0))
    F_hand = -M * G0 * (LB / 2) / float(k)
    for origin in ((0.0, 0.0, 0.0), (100.0, -40.0, 7.0)):
        res = fm.simulate(boom(L0, origin=origin), 0.05, 1e-3)
        assert res.status == "finished"
        l, ldot, F = res.actuator("cyl").T
        np.testing.assert_allclose(F, F_hand, rtol=1e-8, atol=0)
        assert np.abs(l - L0).max() <= 1e-10 * 3 * LB  # the closure tolerance, 1e-10 x the model's size
        assert np.abs(res.q).max() <= 1e-10 * 3 * LB / float(k)


def _stroke():
    """L(t) = L0 + 0.3 sin 2t and its derivatives."""
    return (lambda t: L0 + 0.3 * np.sin(2 * t)), (lambda t: 0.6 * np.cos(2 * t)), (lambda t: -1.2 * np.sin(2 * t))


def _triangle(t: np.ndarray):
    """The exact boom angle θ(t) and its derivatives for the stroke: the triangle pivot-A-B has sides
    |A|, |B| and L, so cos γ = (|A|² + |B|² - L²) / (2 |A| |B|) with θ = atan2(A_y, A_x) + γ, and
    γ' = L L' / (|A||B| sin γ), γ'' = ((L'² + L L'') sin γ - L L' cos γ γ') / (|A||B| sin² γ)."""
    Lf, dLf, ddLf = _stroke()
    a, b = np.linalg.norm(A), np.linalg.norm(B)
    L, dL, ddL = Lf(t), dLf(t), ddLf(t)
    gam = np.arccos((a * a + b * b - L * L) / (2 * a * b))
    g1 = L * dL / (a * b * np.sin(gam))
    g2 = ((dL**2 + L * ddL) * np.sin(gam) - L * dL * np.cos(gam) * g1) / (a * b * np.sin(gam) ** 2)
    return math.atan2(A[1], A[0]) + gam, g1, g2


@pytest.fixture(scope="module")
def stroke_run():
    h = 1e-3
    Lf, dLf, ddLf = _stroke()
    model = boom(Lf, velocity=dLf, acceleration=ddLf)
    return model, h, fm.simulate(model, 1.0, h, output_every=10)


def test_a_prescribed_stroke_turns_the_boom_by_the_triangle(stroke_run) -> None:
    """θ(t), θ'(t), θ''(t) of the run against the triangle's closed form: the length is held to its
    tolerance τ = 1e-10 x the model's size, so θ to τ / min |dL/dθ| (= |(r_B × n)_z|); the rate and
    acceleration are projected onto L', L'' (A8), exact to round-off of the projection (1e-12 of their
    size)."""
    model, h, res = stroke_run
    assert res.status == "finished"
    th, th1, th2 = _triangle(res.t)
    k, _ = lever(th)
    tol = 1e-10 * model.size
    assert np.abs(res.q[:, 0] - th).max() <= tol / np.abs(k).min()
    assert np.abs(res.u[:, 0] - th1).max() <= 1e-12 * np.abs(th1).max()
    assert np.abs(res.udot[:, 0] - th2).max() <= 1e-10 * np.abs(th2).max()
    np.testing.assert_allclose(res.actuator("cyl", "length"), _stroke()[0](res.t), rtol=0, atol=tol)
    np.testing.assert_allclose(res.actuator("cyl", "rate"), _stroke()[1](res.t), rtol=0, atol=1e-12)


def test_the_cylinder_force_is_the_inverse_dynamics_of_the_motion(stroke_run) -> None:
    """J θ'' + m g (L_B/2) cos θ = -F (r_B × n)_z with the exact θ(t), computed here. The multiplier
    carries the closure's round-off amplified by the penalty (docs/rigid_cut.md (N1)): 16 eps ℓ α with
    α = κ m_ref / β', m_ref = J / (r_B × n)_z² the cylinder's effective mass at the start and ℓ the
    largest coordinate of its points; measured about a sixth of that (6e-6 relative at h = 1e-3)."""
    model, h, res = stroke_run
    th, _, th2 = _triangle(res.t)
    k, _ = lever(th)
    F_id = -(J * th2 + M * G0 * (LB / 2) * np.cos(th)) / k
    integ = GeneralizedAlpha(model)
    bp = integ.beta * h * h * (1 - integ.af) / (1 - integ.am)
    m_ref = J / float(lever(np.array(0.0))[0]) ** 2
    ell = float(max(np.abs(A).max(), np.abs(B).max()))
    bound = 16 * EPS * ell * KAPPA * m_ref / bp
    err = np.abs(res.actuator("cyl", "force") - F_id)
    assert err.max() <= bound, (err.max(), bound)
    assert bound <= 1e-4 * np.abs(F_id).max()  # the bound is a meaningful check at this step


def test_the_energy_balance_closes_with_the_actuators_work(stroke_run) -> None:
    """Kinetic + potential + strain + dissipated - drive work - load work is constant, the actuator's
    power -F l' being drive work; the work integral is trapezoidal, O((ω h)²) of its size with ω = 2
    rad/s the stroke's frequency; the drive work is the sizable share of the balance."""
    model, h, res = stroke_run
    work = np.abs(res.energy["drive_work"]).max()
    assert work > 10 * res.energy["kinetic"].max()
    drift = np.abs(res.total_energy - res.total_energy[0]).max()
    assert drift <= (2.0 * h) ** 2 * work, (drift, work)


def _moved(x, R, v, s):
    """A node pose moved along the screw of twist v (6) for the time s: x + s v[:3], expm(s ω) R."""
    Q = np.empty((3, 3))
    expm_into(s * np.asarray(v[3:], dtype=float), Q)
    return x + s * v[:3], Q @ R


def test_the_velocity_product_is_the_second_derivative_of_the_length() -> None:
    """Along constant node twists V (node accelerations zero), l'' = Ġ V (A8): against the central
    second difference of l(s) computed from the moved points (step 1e-4: error about 1e-7 relative)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3))
    R = np.stack([np.linalg.qr(rng.normal(size=(3, 3)))[0] for _ in range(2)])
    R[np.linalg.det(R) < 0] *= -1
    V = rng.normal(size=(2, 6))
    sa, sb = rng.normal(size=(1, 3)), rng.normal(size=(1, 3))
    ia, ib = np.array([0]), np.array([1])

    def length(s: float) -> float:
        (xa, Ra), (xb, Rb) = _moved(x[0], R[0], V[0], s), _moved(x[1], R[1], V[1], s)
        return float(np.linalg.norm(xb + Rb @ sb[0] - xa - Ra @ sa[0]))

    n = 1
    G, nv, ra, rb = np.empty((n, 12)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
    l, ldot, ell = np.empty(n), np.empty(n), np.empty(n)
    phi, alpha, lam, force = (np.empty((n, 6)) for _ in range(4))
    st = np.zeros((n, kernels.N_STATE))
    st[:, 8] = -1.0
    kernels.actuator_forces(x, R, V, (ia, ib, sa, sb), np.ones(n), np.zeros(n), st, np.zeros((3, 6)), (G, nv, ra, rb, l, ldot),
                            (phi, alpha, lam, force, ell))
    out = np.empty(n)
    kernels.velocity_product(V, ia, ib, nv, ra, rb, l, out)
    e = 1e-4
    fd = (length(e) - 2 * length(0.0) + length(-e)) / e**2
    assert abs(out[0] - fd) <= 1e-6 * max(1.0, abs(fd)), (out[0], fd)
    assert abs(ldot[0] - (length(e) - length(-e)) / (2 * e)) <= 1e-7 * max(1.0, abs(ldot[0]))


def test_a_force_actuator_is_the_spring_damper_with_the_same_law() -> None:
    """force = f(t, l, l') is the spring-damper with the force law F(l, l', t) = f(t, l, l'): the same
    run bit for bit, and Result.actuator is Result.spring_damper of it."""
    def law(t, l, ldot):
        return 400.0 * (l - L0) + 30.0 * ldot - 50.0 * (1 + 0.5 * np.sin(3 * t))

    act = fm.simulate(boom(force=law), 0.3, 1e-3, output_every=10)
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    mb.add_node("boom", (0.0, 0.0, 0.0))
    mb.add_body("boom", "boom", M, (LB / 2, 0.0, 0.0), np.diag([1e-3, M * LB**2 / 12, M * LB**2 / 12]))
    mb.add_joint("pivot", "revolute", "ground", "boom", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_spring_damper("cyl", "ground", "boom", point_a=A, point_b=B, force_law=lambda l, v, t: law(t, l, v))
    sd = fm.simulate(mb.compile(), 0.3, 1e-3, output_every=10)
    assert act.status == sd.status == "finished"
    assert np.abs(act.q).max() > 0.01  # it moves
    np.testing.assert_array_equal(act.q, sd.q)
    np.testing.assert_array_equal(act.actuator("cyl"), sd.spring_damper("cyl"))
    np.testing.assert_array_equal(act.energy["dissipated"], sd.energy["dissipated"])
    from flexmb.app.describe import describe
    assert "cyl: ground" in describe(boom(force=law)) and "force actuator" in describe(boom(force=law))


def test_a_length_beyond_reach_fails_naming_the_actuator() -> None:
    """The longest the cylinder can be is |A| + |B| (the boom in line with A): a stroke past it stops the
    run with a message naming 'cyl'; a start length beyond it is refused at the start, naming it."""
    res = fm.simulate(boom(lambda t: L0 + 2.0 * t), 1.0, 1e-3, output_every=50)
    assert res.status.startswith("failed") and "actuator 'cyl'" in res.status
    assert res.t[-1] <= (np.linalg.norm(A) + np.linalg.norm(B) - L0) / 2.0 + 1e-3
    with pytest.raises(fm.FlexmbError, match="actuator 'cyl' cannot be brought to its length"):
        fm.simulate(boom(3.0), 0.01, 1e-3)


@pytest.mark.parametrize("kw, match", [
    (dict(), "exactly one of length"),
    (dict(length=1.0, force=lambda t, l, v: 0.0), "exactly one of length"),
    (dict(force=lambda t, l, v: 0.0, velocity=lambda t: 0.0), "velocity and acceleration"),
    (dict(force=3.0), "force = 3.0 is not callable"),
    (dict(force=lambda t, l, v: math.nan), "not a finite number"),
    (dict(length=-1.0), "length"),
    (dict(length=lambda t: math.nan), "length"),
    (dict(length=1.0, point_b=(0.5, -1.0, 0.0)), "coincide"),
])
def test_bad_input_is_refused_naming_the_actuator(kw, match) -> None:
    mb = fm.ModelBuilder()
    mb.add_node("boom", (0.0, 0.0, 0.0))
    mb.add_body("boom", "boom", 1.0, (1.0, 0.0, 0.0), np.eye(3))
    mb.add_joint("pivot", "revolute", "ground", "boom", axis=(0, 0, 1))
    kw = {"point_a": A, "point_b": B, **kw}
    with pytest.raises(fm.ModelError, match=match) as info:
        mb.add_actuator("cyl", "ground", "boom", **kw)
    assert "add_actuator: actuator 'cyl'" in str(info.value)


def test_names_ends_and_solvers_are_checked() -> None:
    mb = fm.ModelBuilder()
    mb.add_node("boom", (1.0, 0.0, 0.0))
    mb.add_body("boom", "boom", 1.0, (1.0, 0.0, 0.0), np.eye(3))
    mb.add_joint("pivot", "revolute", "ground", "boom", point=(0, 0, 0), axis=(0, 0, 1))
    with pytest.raises(fm.ModelError, match="node_b = 'ground'"):
        mb.add_actuator("cyl", "boom", "ground", length=1.0)
    with pytest.raises(fm.ModelError, match="unknown node 'nowhere'"):
        mb.add_actuator("cyl", "ground", "nowhere", length=1.0)
    with pytest.raises(fm.ModelError, match="name of its own"):
        mb.add_actuator("pivot", "ground", "boom", length=1.0)
    mb.add_actuator("cyl", "ground", "boom", point_a=(0.0, -1.0, 0.0), length=math.sqrt(2.0))
    with pytest.raises(fm.ModelError, match="duplicate actuator name 'cyl'"):
        mb.add_actuator("cyl", "ground", "boom", point_a=(0.0, -1.0, 0.0), length=1.0)
    with pytest.raises(fm.ModelError, match="actuator"):
        mb.add_spring_damper("cyl", "ground", "boom", point_a=(0.0, 1.0, 0.0), stiffness=1.0)
    # the boom's one coordinate held at its length: no degree of freedom left for modes (docs/modal.md (MO7))
    with pytest.raises(fm.SolverError, match="actuator 'cyl'.*no degree of freedom"):
        natural_frequencies(mb.compile(), n_modes=1)


def test_the_newton_path_outputs_drawing_and_info_name_the_actuator(stroke_run) -> None:
    """The family is compiled: the model takes the compiled Newton loop and describe_solver says so
    (tests/test_actuator_compiled.py: bit for bit with the Python step); the drawing has one 'actuator'
    cell from A to B carrying its force; flexmb info lists the actuator."""
    model, _, res = stroke_run
    assert "whole Newton loop in one compiled call" in GeneralizedAlpha(model).describe_solver()
    cells, kind, _ = lines(res.drawing)
    on = kind == cell_kinds().index("actuator")
    assert on.sum() == 1
    row, _, pts, _, cdata = next(iter(frames(res, res.drawing)))  # the cell from A to B, its force as cell data
    np.testing.assert_allclose(pts[cells[on][0]], [A, B], rtol=0, atol=1e-12)
    assert cdata["spring_damper_force"][on][0] == res.actuator("cyl", "force")[row]
    from flexmb.app.describe import describe
    text = describe(model)
    assert "cyl: ground" in text and "prescribed length" in text
    with pytest.raises(fm.ModelError, match="actuator"):
        res.actuator("nothing")


def test_a_cylinder_on_a_rigid_loop_starts_on_both_constraints() -> None:
    """A four-bar closed by a rigid cut at B, its crank pushed by a cylinder whose stroke starts moving
    (L'(0) = 0.2 m/s) from rest: the start projects the velocities onto the cylinder's rate and the
    cut's closure together (docs/actuator.md (A9)), so at the first row the two points B of coupler and
    rocker move alike (to 1e-12 of the speeds) while the cylinder's rate is L'(0); along the run the cut
    stays closed and the length is L(t) to their tolerances."""
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    O, A_, B_, C = np.zeros(3), np.array([0.0, 1.0, 0.0]), np.array([2.0, 1.2, 0.0]), np.array([2.0, 0.0, 0.0])
    links = (("crank", O, 1.0, (0, 0.5, 0)), ("coupler", A_, 2.0, (1.0, 0.1, 0)), ("rocker", C, 1.0, (0, 0.6, 0)))
    for name, at, m, com in links:
        mb.add_node(name, at)
        mb.add_body(name, name, m, com, np.eye(3) * 0.1)
    mb.add_joint("O", "revolute", "ground", "crank", axis=(0, 0, 1))
    mb.add_joint("A", "revolute", "crank", "coupler", axis=(0, 0, 1))
    mb.add_joint("C", "revolute", "ground", "rocker", axis=(0, 0, 1))
    mb.add_rigid_cut("B", "coupler", "rocker", point=B_, free_rotation="z")
    P, Q = np.array([-1.0, -0.5, 0.0]), np.array([0.0, 0.5, 0.0])
    Lc = float(np.linalg.norm(Q - P))
    mb.add_actuator("cyl", "ground", "crank", point_a=P, point_b=Q, length=lambda t: Lc + 0.1 * np.sin(2 * t))
    model = mb.compile()
    res = fm.simulate(model, 0.2, 1e-3, output_every=20)
    assert res.status == "finished"
    i_c, i_r = model.node_names.index("coupler"), model.node_names.index("rocker")

    def velocity_at_B(i: int, s: np.ndarray) -> np.ndarray:
        V, R = res.twists[0, i], res.R[0, i]
        return V[:3] + np.cross(V[3:], R @ s)

    vc, vr = velocity_at_B(i_c, B_ - A_), velocity_at_B(i_r, B_ - C)
    assert np.linalg.norm(vc) > 0.01  # the loop moves
    assert np.abs(vc - vr).max() <= 1e-12 * np.abs(vc).max()
    assert abs(res.actuator("cyl", "rate")[0] - 0.2) <= 1e-12
    tol = 1e-10 * model.size
    assert np.abs(res.actuator("cyl", "length") - Lc - 0.1 * np.sin(2 * res.t)).max() <= tol
    pc = res.x[:, i_c] + np.einsum("nij,j->ni", res.R[:, i_c], B_ - A_)
    pr = res.x[:, i_r] + np.einsum("nij,j->ni", res.R[:, i_r], B_ - C)
    assert np.abs(pc - pr).max() <= tol


def test_flexmb_animate_draws_the_cylinder(stroke_run, tmp_path) -> None:
    """``flexmb animate`` (issue 34 item 1: the elements in the animation): the actuator's cell in its own style
    (orange, solid, wider than a spring-damper's), its ground end not drawn as a centre of mass; the GIF is written."""
    from flexmb.results.animation import _point_groups, _style, animate

    _, _, res = stroke_run
    kind_no = cell_kinds().index("actuator")
    assert _style(kind_no)[:4] == ("actuator", "tab:orange", 3.0, "solid")
    cells, kind, _ = lines(res.drawing)
    n_points = len(next(iter(frames(res, res.drawing)))[2])
    groups = _point_groups(res.drawing, res, n_points, cells, kind)
    assert not set(groups["com"]) & set(cells[kind == kind_no].ravel())
    assert animate(res, tmp_path / "boom.gif").stat().st_size > 0


def test_the_actuators_quantities_by_name(stroke_run) -> None:
    """``cyl.length``, ``cyl.rate``, ``cyl.force`` (issue 34 item 6: the new elements' length, rate and force by name)
    are Result.actuator's columns, in ``Result.history`` and in a sweep's ``--output`` columns; a bare name asks
    for a suffix."""
    from flexmb.app.table import named_outputs

    _, _, res = stroke_run
    for k, quantity in enumerate(("length", "rate", "force")):
        np.testing.assert_array_equal(res.history(f"cyl.{quantity}"), res.actuator("cyl")[:, k])
    out = named_outputs(res, None, {}, ["final:cyl.force", "peak:cyl.rate"])
    assert out["cyl.force"] == res.actuator("cyl", "force")[-1]
    assert out["peak[cyl.rate]"] == np.abs(res.actuator("cyl", "rate")).max()
    with pytest.raises(fm.ModelError, match="suffix"):
        res.history("cyl")
