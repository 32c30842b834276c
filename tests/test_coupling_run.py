"""Couplings in the whole-run call between output rows (flexmb/solvers/element_run.py with
flexmb/solvers/coupling_projection.py: their begin of step (C13), the rigid couplings' multipliers and
projections (C15) and the couplings' dissipation at the projected state inside the call) against the
same run step by step (their end of step in Python): every row, coupling output, the step history, the
energy balance and the counters equal bit for bit, for a rigid gear pair (the Newton factor), elastic
damped couplings on joints of every kind (no projection, their dissipation) and a rigid gear beside a
rigid cut and a prescribed-length actuator (the three families' projections in order, the projection
factor); `flexmb info` names the whole run for them."""

from __future__ import annotations

import numpy as np
import pytest
from test_actuator_compiled import four_bar_builder
from test_coupling import branched_model, gear_pair, rack_and_pinion
from test_element_run import _assert_same, _both
from test_run_path import WHOLE

import flexmb as fm
from flexmb.elements import FAMILIES
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.generalized_alpha import GeneralizedAlpha


def _geared() -> fm.Model:
    """The four-bar of tests/test_actuator_compiled.py (a rigid cut at B, a cylinder pushing the crank) with a
    flywheel on a revolute joint to ground geared to the crank's joint O (ratio -2.5: an external gear pair)."""
    mb = four_bar_builder()
    mb.add_node("fly", (-0.5, -1.0, 0.0))
    mb.add_body("fly", "fly", 0.5, (0.0, 0.0, 0.0), np.diag([0.01, 0.01, 0.02]))
    mb.add_joint("F", "revolute", "ground", "fly", axis=(0, 0, 1))
    mb.add_coupling("gear", "O", "F", ratio=-2.5)
    return mb.compile()


MODELS = {"gear_pair": gear_pair, "rack_and_pinion": rack_and_pinion, "elastic_couplings": branched_model,
          "geared_four_bar": _geared}


@pytest.mark.parametrize("name, solver, every", [("gear_pair", "dense", 7), ("gear_pair", "band", 1),
                                                 ("rack_and_pinion", "dense", 10), ("elastic_couplings", "auto", 5),
                                                 ("elastic_couplings", "band", 1), ("geared_four_bar", "dense", 10),
                                                 ("geared_four_bar", "band", 3)])
def test_coupling_runs_are_compiled_between_rows_bit_for_bit(monkeypatch, name, solver, every) -> None:
    """The whole-run call against the step-by-step run: rows, couplings' outputs, energies, steps, counters."""
    model = MODELS[name]()
    integ = GeneralizedAlpha(model, linear_solver=solver)
    assert ElementRun.refusal(integ) == ""
    assert WHOLE in integ.describe_solver(fixed_steps=True, callback=False)
    fast, slow, calls = _both(monkeypatch, model, 0.2, 1e-3, output_every=every, linear_solver=solver)
    assert fast.status == "finished"
    _assert_same(fast, slow)
    np.testing.assert_array_equal(fast.couplings, slow.couplings)
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)
    assert np.abs(fast.q - fast.q[0]).max() > 1e-4  # it moves


def test_the_rigid_gear_holds_its_ratio_in_the_compiled_run() -> None:
    """Not only the same bits: in the compiled run the geared four-bar's flywheel turns -2.5 times the crank (C1)
    within the coupling's closure tolerance (C14) at every row, and its velocities and accelerations satisfy the
    rows to the projection's own criterion 1e-14 (max |v| + 1) (C15)."""
    model = _geared()
    res = fm.simulate(model, 0.3, 1e-3, output_every=10)
    assert res.status == "finished" and res.stats["steps"] > 0
    data = model.elements["coupling"]
    prep = FAMILIES["coupling"].prepare(model, data)
    qa, qb, ua, ub = int(prep.qa[0]), int(prep.qb[0]), int(prep.ua[0]), int(prep.ub[0])
    assert np.abs(res.q[:, qa]).max() > 1e-3  # the crank turns
    gap = res.q[:, qb] - data.ratio[0] * res.q[:, qa] - data.offset[0]
    assert np.abs(gap).max() <= data.tol[0]
    for v in (res.u, res.udot):
        assert (np.abs(v[:, ub] - data.ratio[0] * v[:, ua]) <= 1e-14 * (np.abs(v).max(axis=1) + 1.0)).all()
