"""The energy balance closes (issue 4): for a damped flexible mechanism — the four-bar with a
beam coupler (stiffness-proportional damping), a rotational spring–damper at the rocker, a
driven crank, gravity and a time-varying load on the coupler —

    T + V + U + D - W_drive - W_load = const

up to the integration error. Generalized-α is second-order accurate and the work integrals
are trapezoidal sums over every step, so the drift of the balance must fall like h²: halving
h divides it by about four. A missing or wrong term (strain, damping, drive or load work) would
leave an error of that term's size that does not shrink with h; each term is made far larger
than the drift, so such an error cannot hide. The tolerance is the theory's order, not a
number read off the output.
"""

import sys
from pathlib import Path

import numpy as np

from flexmb.solvers.simulate import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent / "cases"))
import four_bar  # noqa: E402

P = dict(E=0.7e9, alpha=5e-3, c_rocker=0.5, k_rocker=5.0, load=-20.0)


def test_energy_balance_drift_converges_at_second_order():
    model = four_bar.build(**P)
    drifts, runs = [], []
    for h in (4e-3, 2e-3, 1e-3):
        res = simulate(model, 0.3, h, rho_inf=0.8)
        assert res.status == "finished"
        E = res.total_energy
        drifts.append(np.abs(E - E[0]).max())
        runs.append(res)
    r1, r2 = drifts[0] / drifts[1], drifts[1] / drifts[2]
    # second order: ratio 4 (3..5.5 allows the pre-asymptotic part); a constant error gives ~1
    assert 3.0 < r1 < 5.5 and 3.0 < r2 < 5.5, drifts
    fine = runs[-1]
    e = fine.energy
    # every term of the balance is exercised, each far above the drift
    for k in ("kinetic", "potential", "strain", "dissipated", "drive_work", "load_work"):
        assert np.ptp(e[k]) > 100 * drifts[-1], (k, np.ptp(e[k]), drifts[-1])
    # the dissipation holds the beams' damping, not only the rocker damper's c u²
    # (integrated here from the recorded rocker speed)
    w = fine.u[:, fine.coordinate_names.index("O4.q")]
    d_rocker = np.concatenate([[0.0], np.cumsum(0.5 * np.diff(fine.t) * P["c_rocker"] * (w[1:] ** 2 + w[:-1] ** 2))])
    assert (e["dissipated"] - d_rocker)[-1] > 100 * drifts[-1]
