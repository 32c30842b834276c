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
