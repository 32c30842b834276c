"""Issue 3, item 7: a change-point four-bar (ground = crank = coupler = rocker) started from rest
exactly in its singular configuration, crank driven, coupler elastic (cases/change_point_four_bar.py).

The rigid model is singular at the start (its loop-closure Jacobian vanishes, checked by hand
here) and demands an unbounded force to start moving; the elastic model runs through the start
and through the next singular configuration (crank pin over O4) without Newton failure.

Bounds on the coupler's axial force, from physics rather than from the output:
* constant crank speed W: whichever rigid branch the mechanism follows (parallelogram, anti-
  parallelogram, or B at rest on O2 with the coupler turning about it), every point of the
  coupler moves on a circle of radius at most a with speed at most aW, so its acceleration is at
  most aW² and the force any section of the coupler carries is at most the coupler's whole
  inertia force m_c a W² (the rocker, undriven and with no weight in the plane, adds no torque);
* the start, where the rigid force is unbounded: the link must stay elastic, strain < 0.2 %
  (aluminium's yield strain), i.e. |N| < 0.002 EA.
Damping is what keeps the first bound: the same run without damping exceeds it several times
(the coupler's elastic vibration excited at the start and at the passage is not removed).
"""

import numpy as np
import pytest
from conftest import load_case

from flexmb.solvers.simulate import simulate

case = load_case("change_point_four_bar")
P = case.DEFAULTS


@pytest.fixture(scope="module")
def runs():
    out = {}
    for alpha in (P["damping"], 0.0):
        model = case.build(damping=alpha)
        out[alpha] = (model, simulate(model, P["t_end"], P["dt"], rho_inf=P["rho_inf"]))
    return out


def test_start_is_a_singular_configuration_of_the_rigid_mechanism():
    model = case.build()
    x0 = np.array(model.X0)
    assert abs(case.closure_jacobian_det(model, x0, P["a"])) < 1e-12
    # and away from it the Jacobian is regular (same formula, a generic configuration)
    x = x0.copy()
    x[model.node_index("coupler.0")] = (-P["a"] * np.cos(0.5), P["a"] * np.sin(0.5), 0.0)
    assert abs(case.closure_jacobian_det(model, x, P["a"])) > 0.1


def test_runs_through_the_singular_configurations(runs):
    model, res = runs[P["damping"]]
    assert res.status == "finished"
    theta = res.coordinate("O2.q")
    # the crank pin A passes over O4 (θ = π: the next singular configuration) and beyond
    assert theta[-1] > np.pi + 0.5
    # the loop stays closed through the elastic coupler: its chord changes by no more than the
    # axial-force bounds allow (elongation N a / EA)
    A = res.node_position("coupler.0")
    B = res.node_position(model.node_names[-1])
    dl = np.abs(np.linalg.norm(B - A, axis=1) - P["a"])
    b, k = case.bounds(P), P["E"] * P["A"] / P["a"]
    start = res.t < P["T"] + 0.2
    assert dl[start].max() < b["elastic_limit_N"] / k
    assert dl[~start].max() < b["constant_speed_N"] / k


def test_damped_axial_force_stays_within_physical_bounds(runs):
    _, res = runs[P["damping"]]
    b = case.bounds(P)
    N = np.abs(res.element_forces[:, :, 0]).max(axis=1)
    start = res.t < P["T"] + 0.2
    assert N[start].max() < b["elastic_limit_N"]
    assert N[~start].max() < b["constant_speed_N"]


def test_without_damping_the_elastic_vibration_breaks_the_bound(runs):
    _, res = runs[0.0]
    assert res.status == "finished"
    N = np.abs(res.element_forces[:, :, 0]).max(axis=1)
    assert N[res.t >= P["T"] + 0.2].max() > 2 * case.bounds(P)["constant_speed_N"]


def test_sigma_min_history_is_the_hand_closure_determinant(runs):
    """σ_min of the rigid closure (RigidClosure: the coupler's distance condition) equals
    |a² sin(ψ - φ)| / a, the hand formula of the loop closure, at every output row."""
    model, res = runs[P["damping"]]
    sigma = case.sigma_history(model, res)
    hand = np.array([abs(case.closure_jacobian_det(model, x, P["a"])) / P["a"] for x in res.x])
    np.testing.assert_allclose(sigma, hand, rtol=1e-9, atol=1e-12)


def test_summary_tells_what_happened_at_each_singular_configuration(runs, tmp_path):
    """The demo's summary: the start and the crossing at θ = π (crank pin A over O4, reached by the
    drive law at t* = T/2 + π/W), each with σ_min there, the coupler force against its physical
    bound and 'passed'; the branch taken (B stays on O2); both plots written."""
    model, res = runs[P["damping"]]
    s = case.postprocess(res, model, {}, tmp_path)
    assert s["singular_configurations"] == 2
    t_star = P["T"] / 2 + np.pi / P["W"]
    assert s["singular_1_t_s"] == 0.0 and s["singular_1_sigma_min"] < 1e-12
    assert abs(s["singular_2_t_s"] - t_star) <= P["dt"]  # the output row nearest the crossing
    # σ_min grows at most like a W |t - t*| from the crossing: the nearest row is within dt/2 of it
    assert s["singular_2_sigma_min"] <= P["a"] * P["W"] * P["dt"] / 2 * 1.01
    assert abs(s["singular_2_crank_angle_rad"] - np.pi) <= P["W"] * P["dt"] / 2 * 1.01
    b = case.bounds(P)
    assert s["singular_1_force_bound_N"] == b["elastic_limit_N"] and s["singular_2_force_bound_N"] == b["constant_speed_N"]
    for k in (1, 2):
        assert 0 < s[f"singular_{k}_peak_axial_force_N"] < s[f"singular_{k}_force_bound_N"]
        assert s[f"singular_{k}_passed"] is True
        assert f"t = {s[f'singular_{k}_t_s']:.3f} s" in s[f"singular_{k}"] and "Passed" in s[f"singular_{k}"]
    assert "crank pin A over the rocker's pivot O4" in s["singular_2"]
    assert s["branch"].startswith("B stayed on O2") and np.abs(res.coordinate("O4.q")).max() < 0.01
    assert s["outcome"].startswith("finished") and "2 passed" in s["outcome"]
    for png in ("cut_force.png", "sigma_min.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_singular_passages_on_a_hand_made_history():
    t = np.linspace(0.0, 3.0, 301)
    sigma = np.abs(np.sin(t * np.pi / 2))  # zero at t = 0 and t = 2, largest 1
    ps = case.singular_passages(t, sigma)
    assert [p["i"] for p in ps] == [0, 200] and all(p["passed"] for p in ps)
    # the stretches where sigma < 0.1: |sin| < 0.1 within 2 asin(0.1)/pi = 0.0638 of the zeros
    assert t[ps[1]["i0"]] == pytest.approx(2 - 0.0638, abs=0.01) and t[ps[1]["i1"]] == pytest.approx(2 + 0.0638, abs=0.01)
    ended = case.singular_passages(t[:201], sigma[:201])  # the run ends at the second one: not passed
    assert [p["passed"] for p in ended] == [True, False]
