"""The ``flexmb`` command (issue 4): ``run`` writes the streamed result, ParaView files, plots
and the case's summary; ``info`` lists the loops and their cuts; bad input (case path,
parameter name, parameter value, existing output) gives one error line plus a hint and exit
code 2, without a traceback; a failed run exits 1, Ctrl-C 130. The exit codes are the ones
documented in flexmb/app/cli.py."""

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.app.cli import EXIT_INTERRUPTED, EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE, main

ROOT = Path(__file__).resolve().parents[1]
ARM = ROOT / "cases" / "sharma_saha_arm.py"
FOUR_BAR = ROOT / "tests" / "cases" / "four_bar.py"
FLEXMB = Path(sys.executable).parent / "flexmb"  # the console script of the installed package
PNG = b"\x89PNG\r\n\x1a\n"


def cli(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    assert FLEXMB.exists(), "the flexmb console script is not installed (pip install -e .)"
    return subprocess.run([str(FLEXMB), *args], capture_output=True, text=True, timeout=timeout, **kw)


def assert_one_line_error(err: str, *words: str) -> None:
    """stderr is 'flexmb: error: ...' (one line) plus at most one hint line, no traceback."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert "Traceback" not in err
    assert 1 <= len(lines) <= 2 and lines[0].startswith("flexmb: error: "), err
    assert len(lines) == 1 or lines[1].startswith("  hint: "), err
    for w in words:
        assert w in err, (w, err)


def test_run_writes_results_paraview_files_plots_and_summary(tmp_path):
    out = tmp_path / "arm"
    p = cli("run", str(ARM), "--t-end", "0.05", "--param", "m2=1.5", "--out", str(out))
    assert p.returncode == EXIT_OK, p.stderr
    assert "status: finished" in p.stdout and "torque_vs_eq8_max_rel_error" in p.stdout
    assert "steps/s" in p.stderr and "Newton" in p.stderr and "left" in p.stderr  # the progress bar
    res = fm.load(out)
    assert res.status == "finished" and len(res.t) == 51 and res.t[-1] == pytest.approx(0.05)
    assert res.meta["params"]["m2"] == 1.5 and res.meta["case_name"] == "sharma_saha_arm"
    pvd = out / "paraview" / "sharma_saha_arm.pvd"
    assert pvd.exists() and len(list((out / "paraview").glob("*.vtu"))) == 51
    for png in ("energy.png", "coordinates.png", "drive_forces.png", "angles.png", "torques.png"):
        assert (out / png).read_bytes()[:8] == PNG, png
    summary = json.loads((out / "summary.json").read_text())
    # the case's own check: inverse-dynamics torques equal the closed form built on eq. (8)
    assert summary["torque_vs_eq8_max_rel_error"] < 1e-10
    # a bad --param value is refused by the real process with exit code 2
    p = cli("run", str(ARM), "--param", "m2=heavy", "--out", str(tmp_path / "x"))
    assert p.returncode == EXIT_USAGE
    assert_one_line_error(p.stderr, "m2", "expected a number")
    assert not (tmp_path / "x").exists()


def test_info_lists_loops_cuts_tree_and_dofs(capsys):
    assert main(["info", str(FOUR_BAR), "--param", "n_elements=3"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "loops: 1" in out and "loop 1: cut at beam 'coupler'" in out
    assert "joints A, O2, O4, B" in out
    assert "degrees of freedom: 16 velocity coordinates = 15 unknown + 1 driven" in out  # 4 revolute + 2 free nodes
    assert "O2: revolute (driven) -> crank" in out and "3 beam element(s)" in out
    # the BLAS CHOLMOD loaded in this process (OpenBLAS or the reference BLAS, whichever the machine selects)
    from flexmb.engine.linalg import blas_info

    assert "linear solver: dense Cholesky" in out and "15 unknowns" in out  # a beam closes the loop: no rigid tree
    assert "each step's whole Newton loop in one compiled call" in out  # bodies and beams on the dense factor
    assert f"BLAS under CHOLMOD: {blas_info()}" in out


def test_info_names_the_tree_solver_and_the_compiled_step_of_a_rigid_tree(capsys):
    """The solver choice is shown: the floating Issa & Arczewski system is a rigid tree (compiled step); the
    driven arm has no unknowns."""
    assert main(["info", str(ROOT / "cases" / "issa_arczewski_systems.py"), "--param", "system=floating"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "linear solver: O(n) tree factorization of the rigid tree" in out
    assert "each step's Newton loop in one compiled call" in out
    assert "all steps between two output rows in one call" in out
    assert main(["info", str(ARM)]) == EXIT_OK
    assert "linear solver: none (every coordinate is driven" in capsys.readouterr().out


def test_info_of_a_case_without_rho_inf_names_the_band_factor_of_a_long_link(tmp_path, capsys):
    """A user's case file with no rho_inf in its DEFAULTS: `flexmb info` takes the run's default (as
    `run` does) instead of failing, and names the band factor a long flexible link takes."""
    case = tmp_path / "long_link.py"
    case.write_text(
        '"""A long flexible link."""\n'
        "import flexmb as fm\n"
        'DEFAULTS = {"t_end": 0.01, "dt": 1e-3}\n'
        "def build():\n"
        "    sec = fm.BeamSection(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)\n"
        "    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))\n"
        '    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), 30, sec)\n'
        '    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))\n'
        "    return mb.compile()\n")
    assert main(["info", str(case)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "rho_inf = 0.9" in out
    assert "linear solver: band Cholesky" in out and "181 unknowns, half-bandwidth 11" in out


def test_a_relative_out_folder_records_its_files_relative_to_it(tmp_path, monkeypatch, capsys):
    """`--out runs/x` (relative to the working directory, as scripts/demo.sh gives it): the manifest
    lists the files relative to the run folder, so a second `run --overwrite` replaces the run,
    exports, plots and animation included."""
    monkeypatch.chdir(tmp_path)
    args = ["run", str(FOUR_BAR), "--t-end", "0.01", "--out", "runs/x", "-q", "--overwrite"]
    assert main(args) == EXIT_OK
    assert main(["export", "runs/x", "--format", "xdmf"]) == EXIT_OK
    assert main(["plot", "runs/x", "energy"]) == EXIT_OK
    assert main(["animate", "runs/x"]) == EXIT_OK
    files = json.loads((tmp_path / "runs" / "x" / "manifest.json").read_text())["files"]
    assert {"summary.json", "energy.png", "paraview/four_bar.pvd", "paraview/four_bar.xdmf", "plots/energy.png",
            "animation.gif"} <= set(files)
    assert not [f for f in files if f.startswith("runs/")]
    assert main(args) == EXIT_OK, capsys.readouterr().err  # replaced: every file was flexmb's
    assert not (tmp_path / "runs" / "x" / "animation.gif").exists() and not (tmp_path / "runs" / "x" / "plots").exists()


@pytest.mark.parametrize("args, words", [
    (["run", "no/such/case.py"], ["case file 'no/such/case.py' not found"]),
    (["info", "no/such/case.py"], ["not found"]),
    (["run", str(FOUR_BAR), "--param", "stiffness=3"], ["unknown parameter 'stiffness'", "known parameters:", "alpha"]),
    (["run", str(FOUR_BAR), "--param", "E=soft"], ["'E' = 'soft'", "expected a number"]),
    (["run", str(FOUR_BAR), "--param", "n_elements=2.5"], ["expected an integer"]),
    (["run", str(FOUR_BAR), "--param", "E"], ["name=value"]),
    (["run", str(FOUR_BAR), "--param", "E=1e9)"], ["not a Python literal"]),
    (["run", str(FOUR_BAR), "--dt", "-1"], ["dt"]),
    (["run", str(FOUR_BAR), "--param", "rho_inf=2"], ["rho_inf"]),
    (["run", str(FOUR_BAR), "--param", "E=-1"], ["model error", "E = -1.0"]),
    (["run", str(FOUR_BAR), "--t-end", "abc"], ["invalid float value"]),
    (["export", "no/such/run"], ["does not exist"]),
    (["animate", "no/such/run"], ["does not exist"]),
    (["animate", "no/such/run", "--view", "top"], ["invalid choice: 'top'"]),
    (["frobnicate"], ["invalid choice"]),
    ([], ["required"]),
])
def test_bad_input_gives_one_line_and_exit_code_2(args, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == EXIT_USAGE
    err = capsys.readouterr().err
    assert_one_line_error(err, *words)
    assert not (tmp_path / "runs").exists()  # nothing written


def test_param_values_are_literals_never_code(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "pwned"
    code = main(["run", str(FOUR_BAR), "--param", f"E=__import__('os').system('touch {marker}')"])
    assert code == EXIT_USAGE and not marker.exists()
    assert_one_line_error(capsys.readouterr().err, "not a Python literal")


def test_output_directory_is_not_overwritten_unless_asked(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", str(FOUR_BAR), "--t-end", "0.002", "--out", str(out), "-q"]
    assert main(args) == EXIT_OK
    first = (out / "meta.json").read_text()
    assert main(args) == EXIT_USAGE
    assert_one_line_error(capsys.readouterr().err, "already exists", "--overwrite")
    assert (out / "meta.json").read_text() == first
    assert main(args + ["--overwrite"]) == EXIT_OK
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    assert main(["run", str(FOUR_BAR), "--out", str(mine), "--overwrite", "-q"]) == EXIT_USAGE
    assert_one_line_error(capsys.readouterr().err, "not a flexmb run directory")
    assert (mine / "thesis.tex").read_text() == "precious"


def test_failed_run_exits_1_and_keeps_its_steps(tmp_path, capsys):
    out = tmp_path / "fail"
    code = main(["run", str(FOUR_BAR), "--param", "fail_at=0.01", "--out", str(out), "-q"])
    assert code == EXIT_RUN_FAILED
    cap = capsys.readouterr()
    assert "status: failed: " in cap.out
    err = [ln for ln in cap.err.splitlines() if ln.startswith("flexmb: error")]
    assert len(err) == 1 and "run did not finish" in err[0] and "Traceback" not in cap.err
    res = fm.load(out)
    assert res.status.startswith("failed: ") and len(res.t) == 5 and res.t[-1] == pytest.approx(0.008)
    assert (out / "paraview" / "four_bar.pvd").exists() and (out / "energy.png").exists()


STIFF_PENDULUM = """'A pendulum released 1 rad from the rest of a joint spring far too stiff for dt.'
import numpy as np
import flexmb as fm
DEFAULTS = dict(t_end=0.05, dt=1e-3, rho_inf=0.8)
def build(**params):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("n1", position=(0, 0, 0))
    mb.add_body("rod", node="n1", mass=1.0, com=(0.5, 0, 0), inertia=np.diag([0, 1, 1]) / 12)
    mb.add_joint("pin", "revolute", parent="ground", child="n1", axis=(0, 0, 1), q0=-1.0)
    mb.add_joint_spring("pin", 1e10)
    return mb.compile()
"""


def test_flexmb_warnings_are_one_line_each_and_the_display_is_restored(tmp_path, capsys):
    """The energy warning of a run (flexmb/solvers/energy_check.py) as one 'flexmb: warning:' line,
    without Python's file and source line; Python's own display is back after main returns."""
    import warnings

    case = tmp_path / "stiff_pendulum.py"
    case.write_text(STIFF_PENDULUM)
    before = warnings.showwarning
    assert main(["run", str(case), "--out", str(tmp_path / "run"), "-q"]) == EXIT_OK
    assert warnings.showwarning is before
    cap = capsys.readouterr()
    assert "status: finished" in cap.out
    lines = cap.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flexmb: warning: simulate: the energy balance")
    assert "dt = 0.001 does not resolve a fast transient" in lines[0]
    assert "EnergyWarning" not in cap.err and ".py:" not in cap.err
    assert fm.load(tmp_path / "run").stats["energy_growth"] > 0.4 * fm.load(tmp_path / "run").stats["energy_scale"]


def test_export_and_plot_commands(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(FOUR_BAR), "--t-end", "0.01", "--out", str(out), "-q"]) == EXIT_OK
    assert main(["export", str(out), "--format", "xdmf"]) == EXIT_OK
    assert (out / "paraview" / "four_bar.xdmf").exists() and (out / "paraview" / "four_bar.h5").exists()
    assert main(["export", str(out), "--format", "xdmf"]) == EXIT_USAGE  # exists already
    assert main(["export", str(out), "--format", "xdmf", "--overwrite", "--every", "2"]) == EXIT_OK
    capsys.readouterr()
    assert main(["plot", str(out), "energy", "forces", "drives", "O4.q", "coupler.e1", "coupler.2"]) == EXIT_OK
    made = capsys.readouterr().out.split()
    names = sorted(Path(m).name for m in made)
    assert names == ["coordinates.png", "drive_forces.png", "element_forces.png", "element_forces_selected.png",
                     "energy.png", "nodes.png"]
    for m in made:
        assert Path(m).read_bytes()[:8] == PNG
    assert main(["plot", str(out), "O5.q"]) == EXIT_USAGE
    assert_one_line_error(capsys.readouterr().err, "unknown quantity 'O5.q'", "energy")


def test_ctrl_c_exits_130_and_closes_the_run(tmp_path):
    """SIGINT (what Ctrl-C sends) to a running `flexmb run`: exit code 130, the run directory
    loads with status 'interrupted' and the rows computed so far."""
    out = tmp_path / "long"
    # the child gets Ctrl-C's default disposition even where this test runs with SIGINT ignored (a job started
    # in the background by a shell): Python installs its KeyboardInterrupt handler only over SIG_DFL
    proc = subprocess.Popen([str(FLEXMB), "run", str(FOUR_BAR), "--t-end", "1000", "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    stepped = threading.Event()

    def read_stderr() -> None:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("t = "):  # the progress bar's first line: the first step is done
                stepped.set()
        stepped.set()  # the process ended: stop waiting

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert stepped.wait(timeout=900), "no step in 15 minutes"  # an event, the timeout guards a hang only
        assert proc.poll() is None, "".join(lines)
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(timeout=600)  # the pipe closes with the process; the timeout guards a hang only
    stderr = "".join(lines)
    assert proc.returncode == EXIT_INTERRUPTED, stderr
    assert "Traceback" not in stderr and "interrupted at t = " in stderr
    res = fm.load(out)
    assert res.status == "interrupted" and len(res.t) >= 2
    assert np.allclose(np.diff(res.t), 2e-3, rtol=1e-9)  # every step up to the interrupt, no gap


def test_help_everywhere(capsys):
    """The console script's --help (one process: the installed entry point), then every command's help in this
    process (argparse's exit 0 after printing it): each a usage line."""
    p = cli("--help")  # the default timeout only guards against a hang
    assert p.returncode == 0 and "usage: flexmb" in p.stdout and "exit codes" in p.stdout
    for command in ("run", "info", "export", "plot", "animate", "sweep"):
        with pytest.raises(SystemExit) as stop:
            main([command, "--help"])
        assert stop.value.code == 0 and f"usage: flexmb {command}" in capsys.readouterr().out, command
