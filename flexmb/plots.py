"""Time-history plots (matplotlib, PNG): coordinates, drive forces, energy balance."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plot_coordinates", "plot_energy", "plot_drive_forces"]


def plot_coordinates(result, names, path: str | Path, title: str = "") -> Path:
    """Plot the time histories of the coordinates ``names`` into ``path``."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for n in names:
        ax.plot(result.t, result.coordinate(n), label=n)
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("coordinate [rad or m]")
    ax.set_title(title or "generalized coordinates")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_energy(result, path: str | Path, title: str = "") -> Path:
    """Energy balance: kinetic, potential, dissipated, work of drives and loads, and the
    balance T + V + D - W (constant when the integration conserves the balance)."""
    e = result.energy
    fig, ax = plt.subplots(figsize=(7, 4))
    for k in ("kinetic", "potential", "dissipated", "drive_work", "load_work"):
        if np.any(e[k] != 0):
            ax.plot(result.t, e[k], label=k.replace("_", " "))
    ax.plot(result.t, result.total_energy, "k--", label="T + V + D - W")
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("energy [J]")
    ax.set_title(title or "energy balance")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def plot_drive_forces(result, path: str | Path, title: str = "") -> Path:
    """Actuator force/torque of every driven coordinate."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, n in enumerate(result.driven_names):
        ax.plot(result.t, result.drive_forces[:, i], label=n)
    ax.set_xlabel("time t [s]")
    ax.set_ylabel("drive force [N] / torque [N m]")
    ax.set_title(title or "drive forces (inverse dynamics)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
