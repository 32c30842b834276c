"""Time-history plots (matplotlib, Agg backend, PNG): coordinates, node positions, drive
forces, beam element forces, loop-cut forces, the energy balance and the step-size history."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from flexmb.results.files import naming  # noqa: E402
from flexmb.results.names import unit_of  # noqa: E402

__all__ = ["plot_coordinates", "plot_energy", "plot_steps", "plot_drive_forces", "plot_element_forces", "plot_cut_forces",
           "plot_node_positions", "plot_histories",
           "default_coordinates", "standard_plot_files", "standard_plots", "save_figure"]

ENERGY_TERMS = (("kinetic", "kinetic T"), ("potential", "potential V (gravity, springs)"), ("strain", "strain U (elements)"),
                ("dissipated", "dissipated D"), ("drive_work", "work of drives W_d"), ("load_work", "work of loads W_l"))


def _finish(fig, ax, path, title: str, ylabel: str) -> Path:
    ax.set_xlabel("time t [s]")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small")
    return save_figure(fig, path)


def save_figure(fig, path: str | Path) -> Path:
    """Lay out ``fig``, write it to ``path`` (PNG, 120 dpi; a full disk's error names the file) and
    close it: the last step of every plot of flexmb and of its study scripts."""
    fig.tight_layout()
    try:
        with naming(path):
            fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    return Path(path)


def plot_coordinates(result, names, path: str | Path, title: str = "") -> Path:
    """Plot the time histories of the coordinates ``names`` into ``path``."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for n in names:
        ax.plot(result.t, result.coordinate(n), label=n)
    return _finish(fig, ax, path, title or "generalized coordinates", "coordinate [rad or m]")


def plot_histories(result, names, path: str | Path, title: str = "") -> Path:
    """Plot the histories ``names`` (Result.history: coordinates with their rates and accelerations,
    spring-damper lengths, rates and forces; docs/results_by_name.md) into ``path``, one panel per
    kind of quantity (flexmb.results.names.unit_of) so that each panel has one unit."""
    panels: dict[str, list[str]] = {}
    for n in names:
        panels.setdefault(unit_of(result, n), []).append(n)
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.2 + 2.0 * len(panels)), sharex=True, squeeze=False)
    for ax, (unit, members) in zip(axes[:, 0], panels.items()):
        for n in members:
            ax.plot(result.t, result.history(n), label=n)
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    axes[0, 0].set_title(title or "result quantities")
    return _finish(fig, axes[-1, 0], path, axes[-1, 0].get_title(), axes[-1, 0].get_ylabel())


def plot_node_positions(result, names, path: str | Path, title: str = "") -> Path:
    """x, y, z of the nodes ``names`` over time."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for n in names:
        x = result.node_position(n)
        for a, c in enumerate("xyz"):
            if np.ptp(x[:, a]) > 0 or a < 2:
                ax.plot(result.t, x[:, a], label=f"{n} {c}")
    return _finish(fig, ax, path, title or "node positions", "position [m]")


def plot_energy(result, path: str | Path, title: str = "") -> Path:
    """Energy balance: kinetic, potential, strain, dissipated, work of drives and loads, and
    the balance T + V + U + D - W (constant when the integration conserves the balance), all
    as changes since the first output time (so small terms stay visible beside a large
    gravity potential)."""
    e = result.energy
    fig, ax = plt.subplots(figsize=(7, 4))
    if len(result.t):
        for k, label in ENERGY_TERMS:
            if k in e and np.any(e[k] != e[k][0]):
                ax.plot(result.t, e[k] - e[k][0], label=label)
        bal = result.total_energy
        ax.plot(result.t, bal - bal[0], "k--", label=f"balance T + V + U + D - W (drift {np.ptp(bal):.3g} J)")
    return _finish(fig, ax, path, title or "energy balance (changes since the first output)", "energy change [J]")


def plot_drive_forces(result, path: str | Path, title: str = "") -> Path:
    """Actuator force/torque of every driven coordinate."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, n in enumerate(result.driven_names):
        ax.plot(result.t, result.drive_forces[:, i], label=n)
    return _finish(fig, ax, path, title or "drive forces (inverse dynamics)", "drive force [N] / torque [N m]")


def plot_element_forces(result, path: str | Path, names=None, title: str = "") -> Path:
    """Section forces of beam elements: for each element in ``names`` its axial and shear
    forces (top) and torque and bending moments (bottom); without ``names``, the largest
    magnitude over all elements of each quantity (the envelope)."""
    fig, (af, am) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    F = result.element_forces
    if names:
        for n in names:
            f = result.element_force(n)
            for c, lab in enumerate(("N", "Vy", "Vz")):
                af.plot(result.t, f[:, c], label=f"{n} {lab}")
            for c, lab in enumerate(("T", "My", "Mz")):
                am.plot(result.t, f[:, 3 + c], label=f"{n} {lab}")
    elif F.shape[1]:
        af.plot(result.t, np.abs(F[:, :, 0]).max(axis=1), label="max |N| (axial)")
        af.plot(result.t, np.hypot(F[:, :, 1], F[:, :, 2]).max(axis=1), label="max |V| (shear)")
        am.plot(result.t, np.abs(F[:, :, 3]).max(axis=1), label="max |T| (torque)")
        am.plot(result.t, np.hypot(F[:, :, 4], F[:, :, 5]).max(axis=1), label="max |M| (bending)")
    af.set_ylabel("force [N]")
    af.grid(True, alpha=0.3)
    if af.get_legend_handles_labels()[0]:
        af.legend(fontsize="small")
    af.set_title(title or ("beam section forces" if names else "beam section forces: largest over all elements"))
    return _finish(fig, am, path, "", "moment [N m]")


def plot_cut_forces(result, path: str | Path, names=None, title: str = "") -> Path:
    """Force magnitude |F| (top) and moment magnitude |M| (bottom) of the loop cuts ``names`` (default:
    all; bushings and rigid cuts, Result.cut_force: what the cut exerts on its end b at the cut point)."""
    fig, (af, am) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for n in (names or result.cut_names):
        w = result.cut_force(n, "global")
        af.plot(result.t, np.linalg.norm(w[:, :3], axis=1), label=f"{n} |F|")
        am.plot(result.t, np.linalg.norm(w[:, 3:], axis=1), label=f"{n} |M|")
    af.set_ylabel("force [N]")
    af.grid(True, alpha=0.3)
    if af.get_legend_handles_labels()[0]:
        af.legend(fontsize="small")
    af.set_title(title or "loop-cut forces (on end b, at the cut point)")
    return _finish(fig, am, path, "", "moment [N m]")


def plot_steps(result, path: str | Path, title: str = "") -> Path:
    """Plot the step-size history (``result.steps``): accepted steps' size against the time they
    ended, rejected (error above tol) and failed (Newton) attempts marked; the error estimate
    on a second axis (flexmb.solvers.step_control, E3)."""
    s = result.steps
    fig, ax = plt.subplots(figsize=(8, 4.5))
    status = np.asarray(s["status"])
    for code, label, style in ((0, "accepted step h", "-"), (1, "rejected: error above tol", "x"),
                               (2, "failed: Newton or non-finite", "v")):
        k = status == code
        if k.any():
            ax.plot(s["t"][k], s["h"][k], style, ms=4, label=f"{label} ({int(k.sum())})")
    ax.set_yscale("log")
    err = np.asarray(s["error"])
    ok = (status == 0) & np.isfinite(err) & (err > 0)
    if ok.any():
        ax2 = ax.twinx()
        ax2.plot(s["t"][ok], err[ok], ".", ms=2, color="0.6")
        ax2.set_yscale("log")
        ax2.set_ylabel("error estimate (grey)")
        tol = result.meta.get("settings", {}).get("tol")
        if tol:
            ax2.axhline(tol, color="0.6", ls="--", lw=0.8)
    return _finish(fig, ax, path, title or "step sizes", "step h [s]")


def default_coordinates(result, limit: int = 8) -> list[str]:
    """The first ``limit`` coordinates of ``result``, leaving out those of auto-free nodes."""
    return [n for n in result.coordinate_names if ":free." not in n][:limit]


def standard_plot_files(result) -> list[str]:
    """The names of the files :func:`standard_plots` writes for ``result``."""
    auto = result.meta.get("settings", {}).get("dt") == "auto" and len(result.steps.get("t", ()))
    return (["energy.png"] + (["coordinates.png"] if default_coordinates(result) else [])
            + (["drive_forces.png"] if result.driven_names else []) + (["element_forces.png"] if result.element_names else [])
            + (["cut_forces.png"] if getattr(result, "cut_names", ()) else [])
            + (["steps.png"] if auto else []))


def standard_plots(result, out: str | Path) -> list[Path]:
    """The plots every run gets, into the folder ``out`` (:func:`standard_plot_files`): energy
    balance, the first coordinates, drive forces (if any coordinate is driven), beam section
    forces (if any beam), loop-cut forces (if any bushing or rigid cut), the step sizes (of a run with
    error-controlled steps)."""
    out = Path(out)
    made = []
    for name in standard_plot_files(result):
        if name == "energy.png":
            made.append(plot_energy(result, out / name))
        elif name == "coordinates.png":
            made.append(plot_coordinates(result, default_coordinates(result), out / name))
        elif name == "drive_forces.png":
            made.append(plot_drive_forces(result, out / name))
        elif name == "cut_forces.png":
            made.append(plot_cut_forces(result, out / name))
        elif name == "steps.png":
            made.append(plot_steps(result, out / name))
        else:
            made.append(plot_element_forces(result, out / name))
    return made
