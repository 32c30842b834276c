"""Quantities of a result by name (docs/results_by_name.md (N1)-(N3)): a coordinate's rate and
acceleration (``"pin.u"``, ``"pin.udot"``), a spring-damper's length, rate and force
(``"sd.length"`` ...), through ``Result.coordinate``/``rate``/``acceleration``/``history``, in
``flexmb plot`` and in sweep ``--output`` columns.

The model: a compound pendulum (uniform rod, revolute ``pin`` about z at one end, gravity -y) with
a spring-damper ``sd`` from a fixed point above the pivot to the rod's tip. Checked:

* the rates against central differences of the recorded angle, the accelerations against central
  differences of the recorded rates; the central difference's own error is h²/6 · max|x⃛| and
  generalized-α's q-u consistency is second order in h as well, so the bound is a multiple of
  (ω h)² times the quantity's scale (ω: the pendulum's fastest angular frequency, from its
  stiffness about the pivot);
* the accelerations against the equation of motion written here independently
  (I θ̈ = moment of gravity + moment of the spring-damper), to Newton's tolerance;
* the spring-damper's length against the distance of its points (from the node position), its
  rate against the length's central difference, its force against k (l - L0) + c l̇;
* names: a one-coordinate joint's name for its coordinate, errors listing close matches.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import flexmb as fm
from flexmb.app.cli import main
from flexmb.app.cli_common import EXIT_OK, EXIT_USAGE
from flexmb.app.table import named_outputs
from flexmb.errors import ModelError
from flexmb.solvers.simulate import simulate

G, L, M = 9.81, 1.0, 1.0
K_SD, C_SD = 40.0, 0.5  # the spring-damper: stiffness N/m, damping N s/m
ANCHOR = np.array([0.0, 0.6, 0.0])  # the spring-damper's fixed end, above the pivot
THETA0 = -0.3  # start angle from +x (rod below the horizontal)
DT = 1e-3

CASE_SOURCE = '''
import numpy as np
import flexmb as fm
DEFAULTS = dict(theta0=-0.3, t_end=0.2, dt=2e-3)
def build(**params):
    p = {**DEFAULTS, **params}
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("rod", (0, 0, 0))
    mb.add_body("rod", "rod", 1.0, (0.5, 0, 0), np.diag([0.0, 1 / 12, 1 / 12]))
    mb.add_joint("pin", "revolute", "ground", "rod", point=(0, 0, 0), axis=(0, 0, 1), q0=p["theta0"])
    mb.add_spring_damper("sd", "ground", "rod", stiffness=40.0, damping=0.5, rest_length=0.9,
                         point_a=(0, 0.6, 0), point_b=(1.0, 0, 0))
    return mb.compile()
'''


def pendulum() -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0, -G, 0))
    mb.add_node("rod", (0, 0, 0))
    mb.add_body("rod", "rod", M, (L / 2, 0, 0), np.diag([0.0, M * L**2 / 12, M * L**2 / 12]))
    mb.add_joint("pin", "revolute", "ground", "rod", point=(0, 0, 0), axis=(0, 0, 1), q0=THETA0)
    # points are given in the assembly configuration (q = 0): the tip is then at (L, 0, 0)
    mb.add_spring_damper("sd", "ground", "rod", stiffness=K_SD, damping=C_SD, rest_length=0.9,
                         point_a=ANCHOR, point_b=(L, 0.0, 0.0))
    return mb.compile()


@pytest.fixture(scope="module")
def run():
    res = simulate(pendulum(), t_end=0.6, dt=DT, rho_inf=0.9)
    assert res.status == "finished"
    return res


def _omega() -> float:
    """Largest angular frequency of the pendulum: (gravity + spring stiffness about the pivot) / I."""
    return float(np.sqrt((M * G * L / 2 + K_SD * L**2) / (M * L**2 / 3)))


def _central(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (y[2:] - y[:-2]) / (t[2:] - t[:-2])


def test_rates_and_accelerations_are_the_derivatives_of_the_recorded_motion(run):
    t, q, u, a = run.t, run.coordinate("pin.q"), run.coordinate("pin.u"), run.coordinate("pin.udot")
    assert np.array_equal(u, run.rate("pin")) and np.array_equal(a, run.acceleration("pin.q"))
    assert np.array_equal(u, run.u[:, 0]) and np.array_equal(a, run.udot[:, 0])
    wh2 = (_omega() * DT) ** 2  # 1.8e-4
    e_u = np.abs(_central(t, q) - u[1:-1]).max()
    e_a = np.abs(_central(t, u) - a[1:-1]).max()
    print(f"rate vs central difference of q: {e_u:.3g} rad/s (scale {np.abs(u).max():.3g}); "
          f"acceleration vs difference of u: {e_a:.3g} (scale {np.abs(a).max():.3g}); (ωh)² = {wh2:.2g}")
    assert e_u < wh2 * np.abs(u).max()
    assert e_a < wh2 * np.abs(a).max()


def test_accelerations_satisfy_the_equation_of_motion(run):
    """I θ̈ = -m g (L/2) cos θ + (r_tip × f_sd)_z, f_sd = -F n (the tension pulls the tip towards the anchor)."""
    th, w, a = run.coordinate("pin"), run.coordinate("pin.u"), run.coordinate("pin.udot")
    tip = L * np.stack([np.cos(th), np.sin(th)], axis=1)
    d = tip - ANCHOR[:2]
    length = np.linalg.norm(d, axis=1)
    n = d / length[:, None]
    rate = np.einsum("ij,ij->i", n, L * w[:, None] * np.stack([-np.sin(th), np.cos(th)], axis=1))
    F = K_SD * (length - 0.9) + C_SD * rate
    moment = -M * G * L / 2 * np.cos(th) - F * (tip[:, 0] * n[:, 1] - tip[:, 1] * n[:, 0])
    scale = M * G * L / 2 + K_SD * L * 0.3  # the moments' size
    err = np.abs(M * L**2 / 3 * a - moment).max()
    print(f"equation of motion residual {err:.3g} N m of {scale:.3g}")
    assert err < 1e-8 * scale  # Newton's tolerance (rtol 1e-10) on the residual
    assert np.allclose(run.history("sd.length"), length, rtol=1e-12, atol=0)
    assert np.allclose(run.history("sd.rate"), rate, rtol=0, atol=1e-12 * L * np.abs(w).max())
    assert np.allclose(run.history("sd.force"), F, rtol=0, atol=1e-10 * scale)


def test_spring_damper_quantities_by_name(run):
    for k, quantity in enumerate(("length", "rate", "force")):
        assert np.array_equal(run.history(f"sd.{quantity}"), run.spring_damper("sd")[:, k])
    e = np.abs(_central(run.t, run.history("sd.length")) - run.history("sd.rate")[1:-1]).max()
    assert e < (_omega() * DT) ** 2 * np.abs(run.history("sd.rate")).max()


def test_names_and_errors(run):
    names = run.history_names()
    assert {"pin.q", "pin.q.u", "pin.q.udot", "pin", "pin.u", "pin.udot", "sd.length", "sd.rate", "sd.force"} <= set(names)
    assert np.array_equal(run.coordinate("pin.q.u"), run.coordinate("pin.u"))
    assert np.array_equal(run.history("pin"), run.coordinate("pin.q"))
    with pytest.raises(ModelError, match=r"unknown result quantity 'pin\.v'.*did you mean 'pin\.u'"):
        run.history("pin.v")
    with pytest.raises(ModelError, match=r"'sd\.forse'.*did you mean 'sd\.force'"):
        run.coordinate("sd.forse")
    with pytest.raises(ModelError, match=r"needs a suffix: sd\.length, sd\.rate, sd\.force"):
        run.history("sd")
    with pytest.raises(ModelError, match="an element's quantity .spring-damper, loop cut or beam., not a coordinate"):
        run.coordinate("sd.force")
    with pytest.raises(ModelError, match="not a coordinate name"):
        run.rate("pin.u")


def test_beam_and_cut_quantities_by_name(tmp_path):
    """A beam element's section forces and a loop cut's wrench components by name (N2): the columns
    of Result.element_force / Result.cut_force; a bare element name says which suffixes it takes."""
    mb = fm.ModelBuilder(gravity=(0, -G, 0))
    sec = fm.BeamSection(7e10, 7e10 / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)
    nodes = mb.add_flexible_link("beam", (0, 0, 0), (L, 0, 0), 2, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0, 0, 1))
    mb.add_bushing("hold", "ground", nodes[-1], stiffness=[1e5, 1e5, 1e5, 0, 0, 0], point=(L, 0, 0))
    res = simulate(mb.compile(), t_end=0.01, dt=DT)
    assert res.element_names and res.cut_names == ("hold",)
    e = res.element_names[0]
    for k, suffix in enumerate((".N", ".Vy", ".Vz", ".T", ".My", ".Mz")):
        assert np.array_equal(res.history(e + suffix), res.element_force(e)[:, k])
    for k, suffix in enumerate((".fx", ".fy", ".fz", ".mx", ".my", ".mz")):
        assert np.array_equal(res.history("hold" + suffix), res.cut_force("hold")[:, k])
    assert np.abs(res.history("hold.fy")).max() > 0  # gravity loads the bushing
    with pytest.raises(ModelError, match=r"a loop cut's history needs a suffix: hold\.fx, hold\.fy"):
        res.history("hold")
    with pytest.raises(ModelError, match=f"did you mean '{e}.N', "):  # letter case first
        res.history(f"{e}.n")


def test_sweep_output_columns(run):
    out = named_outputs(run, None, {}, ["coordinate:pin.u", "final:sd.force", "peak:pin.udot", "sd.length", "pin.udot"])
    assert out["pin.u"] == run.coordinate("pin.u")[-1]
    assert out["sd.force"] == run.history("sd.force")[-1]
    assert out["peak[pin.udot]"] == np.abs(run.coordinate("pin.udot")).max()
    assert out["sd.length"] == run.history("sd.length")[-1] and out["pin.udot"] == run.acceleration("pin")[-1]
    with pytest.raises(KeyError, match="did you mean 'sd.rate'"):
        named_outputs(run, None, {}, ["final:sd.rat"])


def test_cli_plot_and_sweep_with_the_new_names(tmp_path, capsys):
    case = tmp_path / "pendulum_sd.py"
    case.write_text(CASE_SOURCE)
    out = tmp_path / "sweep"
    code = main(["sweep", str(case), "--grid", "theta0=-0.3,-0.2", "--output", "final:sd.force", "--output", "pin.u",
                 "--output", "peak:pin.udot", "--out", str(out), "--workers", "0", "-q"])
    assert code == EXIT_OK
    table = fm.load(out / "run_0000")
    rows = [json.loads((out / f"run_000{i}" / "row.json").read_text()) for i in (0, 1)]
    assert rows[0]["sd.force"] == table.history("sd.force")[-1]
    assert rows[0]["pin.u"] == table.rate("pin")[-1]
    assert rows[0]["peak[pin.udot]"] == np.abs(table.acceleration("pin")).max()
    assert rows[0]["sd.force"] != rows[1]["sd.force"]
    capsys.readouterr()
    plots = tmp_path / "plots"
    assert main(["plot", str(out / "run_0000"), "pin.u", "pin.udot", "sd.force", "sd.length", "--out", str(plots)]) == EXIT_OK
    assert (plots / "quantities.png").stat().st_size > 1000
    assert main(["plot", str(out / "run_0000"), "sd.forse", "--out", str(plots)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "unknown quantity 'sd.forse'" in err and "did you mean 'sd.force'" in err
