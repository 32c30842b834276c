"""The study scripts of cases/ (issue 7): the rigid-limit study, run end to end on a short
grid, measures the 1/EA law (slope -1 on log-log axes) and writes its plot and study.json; the
six-link study says why it cannot run (missing case, missing parameter, missing link elements)
instead of failing, and (issue 13) applies the case's monitor like `flexmb run`."""

import json

import numpy as np
from conftest import load_case

import flexmb as fm
from flexmb.app.cli import main
from flexmb.app.study import read_table
from flexmb.results.plots import plt

rigid_limit = load_case("study_rigid_limit")
six_link = load_case("study_six_link_damping")


def test_rigid_limit_study_measures_slope_minus_one(tmp_path, capsys):
    out = tmp_path / "rl"
    code = rigid_limit.main(["--out", str(out), "--ea", "1e5,1e6,1e7", "--fit", "1e5:1e7", "--t-end", "0.2",
                             "--workers", "0"])
    assert code == 0
    study = json.loads((out / "study.json").read_text())
    assert abs(study["slope"] + 1) < 0.02  # compliance error ~ 1/EA
    # the fit is the least-squares line through the table's points, recomputed here
    ea, err = np.array(study["EA_N"]), np.array(study["rocker_error_max_rad"])
    assert study["slope"] == np.polyfit(np.log10(ea), np.log10(err), 1)[0]
    assert (out / "rocker_error_vs_EA.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "fitted slope" in capsys.readouterr().out


def test_six_link_study_explains_why_it_cannot_run(tmp_path, capsys):
    assert six_link.main(["--case", str(tmp_path / "missing.py"), "--out", str(tmp_path / "s")]) == 0
    assert "skipped" in capsys.readouterr().err and not (tmp_path / "s").exists()
    case = tmp_path / "no_damping.py"
    case.write_text('"""A case without damping."""\nDEFAULTS = dict(t_end=1.0, dt=0.1)\ndef build(**p):\n    return None\n')
    assert "has no 'damping' parameter" in six_link.why_not_ready(case)
    case = tmp_path / "other_links.py"
    case.write_text('"""A case whose beams are not links 3 and 5."""\nimport flexmb as fm\n'
                    "DEFAULTS = dict(damping=0.0, t_end=1.0, dt=0.1)\n"
                    "def build(**p):\n    mb = fm.ModelBuilder()\n"
                    "    sec = fm.BeamSection(1e9, 4e8, 1e-4, 1e-8, 1e-8, 2e-8, 1000.0)\n"
                    "    mb.add_flexible_link('arm', (0, 0, 0), (1, 0, 0), 2, sec)\n    return mb.compile()\n")
    reason = six_link.why_not_ready(case)
    assert "link3.e*" in reason and "link5.e*" in reason and "arm" in reason
    plt.close("all")


def test_six_link_study_runs_on_the_six_link_case(tmp_path):
    """With the real case: undamped and damped links over the first 0.3 s (leaving the singular
    start excites the links' axial vibration); stiffness-proportional damping removes part of
    it, so the peak force of each link is lower with damping."""
    assert not six_link.why_not_ready(six_link.CASE)  # empty: nothing missing
    out = tmp_path / "six"
    assert six_link.main(["--out", str(out), "--damping", "0,0.004", "--t-end", "0.3", "--workers", "0"]) == 0
    study = json.loads((out / "study.json").read_text())
    assert study["damping"] == [0.0, 0.004]
    for link in ("link3", "link5"):
        undamped, damped = study[f"peak_N_{link}"]
        assert 0 < damped < undamped
    plt.close("all")


def test_six_link_study_applies_the_case_monitor_and_records_the_stop(tmp_path, capsys):
    """The sweep runs the six-link case through the same pipeline as `flexmb run`, monitor
    included: with the elastic limit lowered to 2e-5 · EA = 560 N the SingularityMonitor stops
    each run when a link force passes it (before, sweeps never called the monitor and ran on to
    t_end). The stop is recorded as status 'stopped' with the monitor's reason, is no failure
    (exit code 0), and the run equals `flexmb run` of the same parameters bit for bit."""
    out = tmp_path / "six"
    code = six_link.main(["--out", str(out), "--damping", "0,0.004", "--t-end", "0.3", "--param", "yield_strain=2e-5",
                          "--workers", "0"])
    assert code == 0
    tab = read_table(out / "summary.csv")
    assert tab["status"] == ["stopped", "stopped"]
    limit = 2e-5 * 0.7e11 * 4e-4  # yield strain × E × A of the links: 560 N
    for k in range(2):
        reason = tab["reason"][k]
        assert "exceeds the limit 560 N" in reason and "lines of links 2, 3 and 5 meet" in reason
        assert tab["final_time_s"][k] < 0.3  # stopped well before t_end
        assert max(tab["peak_N[link3.e*]"][k], tab["peak_N[link5.e*]"][k]) > limit
        res = fm.load(out / f"run_{k:04d}")
        assert res.status == f"stopped: {reason}"
        F = np.abs(res.element_forces[:, :, 0]).max(axis=1)
        assert F[-1] > limit and F[:-1].max() <= limit  # the stop is at the first output row past the limit
    study = json.loads((out / "study.json").read_text())
    assert study["status"] == ["stopped", "stopped"]
    assert "2 stopped by the case's monitor" in capsys.readouterr().out
    # the same run by the command line: the same stop, the same numbers
    cli_out = tmp_path / "cli"
    assert main(["run", str(six_link.CASE), "--t-end", "0.3", "--param", "yield_strain=2e-5", "--param", "damping=0.0",
                 "--out", str(cli_out), "-q"]) == 0
    a, b = fm.load(cli_out), fm.load(out / "run_0000")
    assert a.status == b.status
    for k in ("t", "q", "u", "x", "element_forces", "reactions"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    plt.close("all")
