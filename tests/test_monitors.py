"""flexmb.analysis.monitors: the rigid-equivalent loop closure of beam-cut loops, its smallest singular
value along a run, and monitors that stop a run (simulate callbacks, case files' ``monitor``).

Hand check: in a four-bar whose coupler A–B is a pinned beam, the rigid coupler is the distance
condition |B - A| = b; with the crank driven, the only undriven coordinate it involves is the
rocker angle, and its Jacobian entry is e · (ẑ × (B - O4)) = ((B - O4) × e)_z, e = (B - A)/b:
the rocker length times the sine of the transmission angle. The interior beam nodes and the
beam's own pin angles add zero columns, so σ_min = |(B - O4) × e|, zero when coupler and rocker
are collinear (change-point four-bar at its start).
"""

import json

import numpy as np
import pytest
from conftest import load_case

import flexmb as fm
from flexmb.analysis.monitors import RigidClosure, SingularityMonitor, state_from_result
from flexmb.app.cli import EXIT_OK, main
from flexmb.solvers.simulate import simulate

four_bar = load_case("change_point_four_bar")


def crank_rocker():
    """The crank-rocker of cases/four_bar_rigid_limit.py with a stiff beam coupler."""
    return load_case("four_bar_rigid_limit").build(EA=2.8e7, EI=1.4e4, rho_A=1.2)


def sigma_by_hand(model, x):
    A = x[model.node_index("coupler.0")]
    B = x[model.node_index(model.node_names[-1])]
    O4 = model.X0[model.node_index("rocker")]
    e = (B - A) / np.linalg.norm(B - A)
    return abs(np.cross(B - O4, e)[2])


def test_distance_condition_jacobian_matches_the_hand_formula():
    m = crank_rocker()
    rc = RigidClosure(m)
    assert rc.constraint_names == ("coupler.distance",)
    st = m.initial_state()
    c, J = rc.closure(st)
    assert abs(c[0]) < 1e-12  # the assembly closes
    assert rc.sigma_min(st) == pytest.approx(sigma_by_hand(m, np.asarray(m.X0)), rel=1e-12)
    # along a run too (the coupler stretches slightly: same formula on the current positions)
    res = simulate(m, 0.2, 2e-3, rho_inf=0.8)
    for i in (50, 100):
        s = state_from_result(m, res, i)
        np.testing.assert_allclose(rc.asm.evaluate(s).kin.x, res.x[i], atol=1e-12)  # the state round-trips
        assert rc.sigma_min(s) == pytest.approx(sigma_by_hand(m, res.x[i]), rel=1e-9)
    # the Jacobian is the derivative of c: finite difference along the rocker coordinate
    k = m.coordinate_index("O4")
    d = np.zeros(m.n_u)
    d[k] = 1e-7
    cp, _ = rc.closure(st.retract(m, d))
    cm, _ = rc.closure(st.retract(m, -d))
    assert (cp[0] - cm[0]) / 2e-7 == pytest.approx(J[0, k], rel=1e-6)


def test_change_point_four_bar_starts_singular():
    m = four_bar.build()
    rc = RigidClosure(m)
    assert rc.sigma_min(m.initial_state()) < 1e-12
    assert four_bar.closure_jacobian_det(m, np.asarray(m.X0), 1.0) == pytest.approx(0.0, abs=1e-12)


def test_links_that_are_not_two_force_members_are_refused():
    sec = fm.BeamSection(1e9, 4e8, 1e-4, 1e-8, 1e-8, 2e-8, 1000.0)
    mb = fm.ModelBuilder()
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, (0.5, 0, 0))
    mb.add_joint("O", "revolute", "ground", "crank", axis=(0, 0, 1))
    nodes = mb.add_flexible_link("arm", (1, 0, 0), (2, 0, 0), 2, sec)
    mb.add_joint("A", "fixed", "crank", nodes[0], point=(1, 0, 0))  # clamped to the crank
    mb.add_joint("B", "revolute", "ground", nodes[-1], point=(2, 0, 0), axis=(0, 0, 1))
    with pytest.raises(fm.ModelError, match="flexible link 'arm': end node 'arm.0' is not pinned"):
        RigidClosure(mb.compile())
    mb2 = fm.ModelBuilder()
    nodes = mb2.add_flexible_link("arm", (0, 0, 0), (1, 0, 0), 1, sec)
    mb2.add_joint("A", "revolute", "ground", nodes[0], axis=(0, 0, 1))
    mb2.add_joint("B", "revolute", "ground", nodes[-1], point=(1, 0, 0), axis=(0, 1, 0))  # skew pins
    with pytest.raises(fm.ModelError, match="no two-force member"):
        RigidClosure(mb2.compile())
    with pytest.raises(fm.ModelError, match="'nope' is not a flexible link"):
        RigidClosure(crank_rocker(), links=["nope"])


def test_monitor_stops_the_run_with_its_reason_and_records_the_last_step():
    m = crank_rocker()
    mon = SingularityMonitor(m, force_limit=1e-3, label="test configuration")  # any force stops it
    res = simulate(m, 0.2, 2e-3, rho_inf=0.8, output_every=10, callback=mon)
    assert res.status.startswith("stopped: t = ") and "exceeds the limit 0.001 N at test configuration" in res.status
    assert res.t[-1] == pytest.approx(mon.t[-1]) and res.t[-1] < 0.2  # the stopping step is the last row
    assert mon.max_force[-1] > 1e-3 and all(f <= 1e-3 for f in mon.max_force[:-1])
    with pytest.raises(fm.ModelError, match="force_limit"):
        SingularityMonitor(m, force_limit=-1.0)


CASE = '''"""A test case whose monitor stops the run."""
import numpy as np
import flexmb as fm

DEFAULTS = dict(t_end=1.0, dt=1e-3, rho_inf=0.9, stop_at=0.01)


def build(**p):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n", (0, 0, 0))
    mb.add_body("rod", "n", 1.0, (0.5, 0, 0), np.diag([0, 1, 1]) / 12)
    mb.add_joint("pin", "revolute", "ground", "n", axis=(0, 0, 1))
    return mb.compile()


def monitor(model, params):
    return lambda st, ev: f"reached t = {st.t:.3f}" if st.t >= params["stop_at"] - 1e-12 else None


def postprocess(result, model, params, out_dir):
    return {"postprocessed_rows": int(result.t.size)}
'''


def test_cli_runs_a_case_monitor_and_treats_its_stop_as_success(tmp_path, capsys):
    path = tmp_path / "stopping.py"
    path.write_text(CASE)
    out = tmp_path / "run"
    assert main(["run", str(path), "--out", str(out), "-q"]) == EXIT_OK
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped: reached t = 0.010"
    assert summary["postprocessed_rows"] == 11  # the postprocess ran on the rows up to the stop
    assert fm.load(out).status == summary["status"]
