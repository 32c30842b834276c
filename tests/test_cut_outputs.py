"""Cut forces and cut settings where a user sees them (issue 12.1, 12.3): `flexmb info`'s cut table and
warnings, `flexmb plot`'s cut-force figures, `peak_force:` sweep columns."""

from pathlib import Path

import numpy as np
from cut_mechanisms import chain
from test_rigid_cut import hanging_mass

import flexmb as fm
from flexmb.app.cli import EXIT_OK, main
from flexmb.app.cut_table import CLOSURE_TOLERANCE, RESOLVED
from flexmb.app.table import named_outputs

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def test_info_lists_every_cut_with_its_damping_frequency_and_warnings():
    """The chain's cuts at k = 1e9 (docs/loops.md §1.2): default damping listed as chosen, ω = √(k/m_eff) and ω·dt
    per held direction (cut1 tx: m_eff 4/3 kg, ω = 27 386 rad/s, 27.4 at dt 1e-3); undamped cuts are
    flagged as ringing (ω·dt >= 0.3), a cut too soft to close the loop within 1e-3 of the model's size
    under its start force (the couplers' weights, 4.905 N, at k = 1e3 N/m: 4.9e-3 m > 4.4e-3 m) as soft."""
    m, _ = chain(1e9)
    text = fm.describe(m, dt=1e-3)
    assert "bushing cut1: damping chosen by flexmb (zeta = 0.5 per local mode)" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("tx:"))
    om = np.sqrt(1e9 / (4 / 3))
    assert f"omega = {om:.4g} rad/s" in line and f"omega*dt = {om * 1e-3:.3g}" in line
    assert "warnings:" not in text
    quiet, _ = chain(1e9, damping=0)
    text = fm.describe(quiet, dt=1e-3)
    assert "bushing cut1: damping given" in text and "bushing cut1 tx rings" in text and f">= {RESOLVED}" in text
    soft, _ = chain(1e3)
    text = fm.describe(soft, dt=1e-3)
    assert "bushing cut1 ty soft: it gives 0.0049 m under its start force 4.905 N" in text
    assert f"({CLOSURE_TOLERANCE:g} x the model's size)" in text and "tx soft" not in text


def test_info_command_prints_the_cut_table_for_the_cases_dt(capsys):
    assert main(["info", str(ROOT / "cases" / "bennett_linkage.py")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "loop cuts (elastic), dt = 0.002 s:" in out and "bushing J4: damping given" in out


def test_plot_command_draws_cut_forces(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", str(ROOT / "cases" / "bennett_linkage.py"), "--t-end", "0.01", "--out", str(out), "-q"]) == EXIT_OK
    assert (out / "cut_forces.png").read_bytes()[:8] == PNG  # a standard plot of every run with cuts
    capsys.readouterr()
    assert main(["plot", str(out), "cuts", "J4"]) == EXIT_OK
    made = sorted(Path(p).name for p in capsys.readouterr().out.split())
    assert made == ["cut_forces.png", "cut_forces_selected.png"]


def test_peak_force_column_of_a_cut():
    """`peak_force:PATTERN` over loop cuts: the peak |F| of the hanging mass's rigid cut is its weight."""
    model = hanging_mass("rigid")
    res = fm.simulate(model, 0.05, 1e-3)
    out = named_outputs(res, model, {}, ["peak_force:hold", "peak_force:ho*"])
    assert abs(out["peak_N[hold]"] - 2.0 * 9.81) < 1e-9 * 19.62 and out["peak_N[ho*]"] == out["peak_N[hold]"]


def test_cut_forces_survive_npz_and_run_directory(tmp_path):
    """Result.save / fm.load and a streamed run directory keep the cut names and forces bit for bit."""
    model = hanging_mass("rigid")
    res = fm.simulate(model, 0.01, 1e-3, out=tmp_path / "run")
    res.save(tmp_path / "r.npz")
    for back in (fm.load(tmp_path / "r.npz"), fm.load(tmp_path / "run")):
        assert back.cut_names == ("hold",)
        assert np.array_equal(back.cut_forces, res.cut_forces) and np.array_equal(back.cut_forces_global, res.cut_forces_global)
    assert abs(res.cut_force("hold")[-1, 1] - 2.0 * 9.81) < 1e-9


def test_bushings_and_rigid_cuts_share_the_cut_force_field(tmp_path):
    """A 2 kg slider held to ground by a rigid cut, a 1 kg slider hung from it by a bushing (both on
    vertical prismatic joints): cut_names lists bushings then rigid cuts; the rigid cut carries both
    weights (3 kg g = 29.43 N), the bushing the lower one's (9.81 N, once its default damping has
    settled the drop: 1e-3 relative at 0.3 s); each on its own ParaView cell."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for name, x, m in (("upper", 0.0, 2.0), ("lower", 1.0, 1.0)):
        mb.add_node(name, (x, 1.0, 0.0))
        mb.add_body(name, name, m, (0, 0, 0), np.eye(3) * 0.01)
        mb.add_joint(f"slide_{name}", "prismatic", "ground", name, axis=(0, 1, 0))
    mb.add_rigid_cut("hold", "ground", "upper", point=(0.0, 1.0, 0.0))
    mb.add_bushing("spring", "upper", "lower", stiffness=[1e5] * 6, point=(1.0, 1.0, 0.0))
    res = fm.simulate(mb.compile(), 0.3, 1e-3)
    assert res.status == "finished" and res.cut_names == ("spring", "hold")
    assert abs(res.cut_force("hold")[-1, 1] - 3.0 * 9.81) < 1e-3 * 29.43
    assert abs(res.cut_force("spring")[-1, 1] - 9.81) < 1e-3 * 9.81
    from flexmb.results.drawing import cell_kinds, frames, lines

    kind = lines(res.drawing)[1]
    cdata = list(frames(res, res.drawing, 1))[-1][4]
    for name, family in (("spring", "bushing"), ("hold", "rigid_cut")):
        cell = np.flatnonzero(kind == cell_kinds().index(family))
        assert cell.size == 1 and cdata["cut_force_y"][cell[0]] == res.cut_force(name)[-1, 1]


def test_the_compiled_cut_wrenches_are_eq_3_evaluated_directly() -> None:
    """cut_wrenches (compiled: elements/cut_kernels.py cut_wrenches_into) against eq. (3) of elements/bushing.py
    written out with numpy for random cuts: w_b = -G_bᵀ f, its moment moved to the cut point R_b s_b, then the cut
    axes A; equal to round-off."""
    from flexmb.elements.cut_family import cut_wrenches

    rng = np.random.default_rng(7)
    n = 9
    G, f = rng.normal(size=(n, 6, 12)), 1e3 * rng.normal(size=(n, 6))
    xb, Rb, sb, A = rng.normal(size=(n, 3)), rng.normal(size=(n, 3, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3, 3))
    loc, glob = cut_wrenches(G, f, xb, Rb, sb, A)
    for e in range(n):
        wb = -G[e, :, 6:].T @ f[e]
        moment = wb[3:] - np.cross(Rb[e] @ sb[e], wb[:3])
        scale = np.abs(G[e]).max() * np.abs(f[e]).max() * (1.0 + np.abs(Rb[e] @ sb[e]).max()) * np.abs(A[e]).max()
        np.testing.assert_allclose(glob[e], np.concatenate([wb[:3], moment]), rtol=0, atol=1e-14 * scale)
        np.testing.assert_allclose(loc[e], np.concatenate([A[e].T @ wb[:3], A[e].T @ moment]), rtol=0, atol=1e-13 * scale)
