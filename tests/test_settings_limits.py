"""Settings that ask for too many steps or a tolerance below round-off (issue 33, flexmb/settings.py).

Before: ``tol=1e-300`` was accepted and crept (t = 0.007 of 0.5 s in a minute), ``--dt 1e-9``
started 2e9 steps without a word, ``rtol=1e-16`` was taken. Now more than 1e9 steps (or output
rows) are refused, more than 1e7 warned about with their number and cost, and ``tol`` below
TOL_MIN = (ε²/12)^(1/3), ``rtol`` below RTOL_MIN = 100 ε refused with a SettingsError naming the
setting and its value, in ``simulate``, in a case's settings and on the command line, before
anything is built or written.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from test_run_honesty import free_fall

import flexmb as fm
from flexmb.app.cli import EXIT_USAGE, main
from flexmb.errors import SettingsError
from flexmb.settings import RTOL_MIN, TOL_MIN, RunSettings
from flexmb.solvers.run_settings import StepsWarning

FOUR_BAR = Path(__file__).resolve().parent / "cases" / "four_bar.py"


def test_the_floors_are_the_round_off_they_are_derived_from():
    eps = np.finfo(float).eps
    assert TOL_MIN == pytest.approx((eps**2 / 12) ** (1 / 3), rel=1e-15) and 1.5e-11 < TOL_MIN < 1.7e-11
    assert RTOL_MIN == 100 * eps


@pytest.mark.parametrize(("kw", "said"), [
    ({"t_end": 2.0, "dt": 1e-9}, "dt = 1e-09 gives 2e+09 steps to t_end = 2.0 s, more than 1e+09 (5.56 h at 10 µs a step"),
    ({"t_end": 1.0, "dt": "auto", "dt_max": 1e-10}, "dt_max = 1e-10 gives at least 1e+10 steps to t_end = 1.0 s"),
    ({"t_end": 1.0, "dt": "auto", "output_dt": 1e-10}, "output_dt = 1e-10 gives 1e+10 output rows to t_end = 1.0 s"),
    ({"t_end": 0.5, "dt": "auto", "tol": 1e-300}, "tol = 1e-300 is below 1.6e-11, where the round-off of the steps"),
    ({"t_end": 0.5, "dt": "auto", "tol": 0.5 * TOL_MIN}, f"tol = {0.5 * TOL_MIN!r} is below 1.6e-11"),
    ({"t_end": 0.5, "dt": 1e-3, "rtol": 1e-16}, "rtol = 1e-16 is below 2.2e-14, a hundred ulps of the residual"),
], ids=["dt", "dt_max", "output_dt", "tol", "half_the_floor", "rtol"])
def test_settings_beyond_the_limits_are_refused_naming_them(kw, said, tmp_path):
    with pytest.raises(SettingsError) as e:
        fm.simulate(free_fall(), out=tmp_path / "run", **kw)
    assert said in str(e.value)
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_settings_at_the_limits_run():
    assert fm.simulate(free_fall(), 0.01, 1e-3, rtol=RTOL_MIN).status == "finished"
    assert fm.simulate(free_fall(), 0.01, "auto", tol=TOL_MIN).status == "finished"


def test_more_than_ten_million_steps_warn_with_their_number_and_cost():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = fm.simulate(free_fall(), 1.0, 5e-8, callback=lambda st, ev: "enough")  # one step, then stopped
        late = free_fall().initial_state()
        late.t = 0.9  # from there 2e6 steps: no warning
        fm.simulate(free_fall(), 1.0, 5e-8, state=late, callback=lambda st, ev: "enough")
    assert res.status == "stopped: enough"
    msgs = [str(x.message) for x in w if issubclass(x.category, StepsWarning)]
    assert msgs == ["simulate: dt = 5e-08 gives 2e+07 steps to t_end = 1.0 s, more than 1e+07: 3.33 min at 10 µs a step "
                    "(a small rigid tree), 5.56 h at 1 ms (a flexible model); give a larger dt, or dt='auto' "
                    "(error-controlled steps) unless the run needs them"]
    assert w[0].filename == __file__  # the warning points at the simulate call


def test_run_settings_refuse_them_too():
    with pytest.raises(SettingsError, match=r"dt = 1e-09 gives 2e\+09 steps to t_end = 2.0 s"):
        RunSettings(2.0, 1e-9)
    with pytest.raises(SettingsError, match=r"tol = 1e-300 is below 1.6e-11") as e:
        RunSettings(0.5, "auto", tol=1e-300)
    assert e.value.hint == "give tol >= 1.6e-11 (default 0.0001)"
    with pytest.raises(SettingsError, match=r"output_dt = 1e-10 gives 5e\+09 output rows"):
        RunSettings(0.5, "auto", output_dt=1e-10)
    assert RunSettings(0.5, "auto", tol=TOL_MIN).tol == TOL_MIN


@pytest.mark.parametrize(("args", "words"), [
    (["--dt", "auto", "--tol", "1e-300"], ["tol = 1e-300 is below 1.6e-11", "give tol >= 1.6e-11"]),
    (["--dt", "1e-9", "--t-end", "2"], ["dt = 1e-09 gives 2e+09 steps to t_end = 2.0 s", "give a larger dt"]),
], ids=["tol", "dt"])
def test_the_command_line_refuses_them_before_building(args, words, tmp_path, capsys):
    assert main(["run", str(FOUR_BAR), "--out", str(tmp_path / "run"), "-q", *args]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith("flexmb: error: ") and "Traceback" not in err
    assert all(w in err for w in words), err
    assert not (tmp_path / "run").exists()
