"""A proxy's sparse residual gets fewer degrees of freedom: Satterthwaite's nu of the items' residuals, read off the
resamples, widens the combined spread by t_nu / t_d (StaICC.stats.lite_proxy_freedom), checked against NumPy by hand."""
import math

import numpy as np
import pytest

from StaICC.stats.lite import Design, _resample_weights, t_over_z
from StaICC.stats.lite_proxy import power_tuned
from StaICC.stats.lite_proxy_freedom import effective_freedom, influence, sparse_widening

N = 64


def _draws(resamples=200, seed=3):
    """Rao-Wu resample weights of one group of N equally weighted items, a tenth of the population."""
    plan = Design([1.0] * N, [(list(range(N)), math.sqrt(1 - N / (10 * N)))], N - 1)
    return _resample_weights(plan, resamples, seed, ("test", "freedom"))


def _sparse(disagreeing=3):
    """A residual zero but on a few items (target and proxy disagreeing there), centred."""
    e = np.zeros(N)
    e[:disagreeing] = 1.0
    return e - e.mean()


def test_the_effective_freedom_is_satterthwaites():
    """nu = 2 (sum u^2)^2 / sum (u^2 - mean u^2)^2: 2k / (1 - k / n) for k equal non-zero residuals of n, about n for
    normal residuals, inf for none (no spread to estimate)."""
    u = np.zeros(N)
    u[:4] = [1.0, -1.0, 1.0, -1.0]
    assert math.isclose(float(effective_freedom(u[:, None])[0]), 2 * 4 / (1 - 4 / N), rel_tol=1e-12)
    normal = np.random.default_rng(1).normal(size=(20000, 1))
    assert abs(float(effective_freedom(normal)[0]) / 20000 - 1) < 0.05
    assert math.isinf(float(effective_freedom(np.zeros((N, 1)))[0]))


def test_the_influence_of_a_mean_is_its_items_residuals():
    """For a weighted mean the resampled value is linear in the weights: the least-squares fit recovers each item's
    value minus the group's mean, over n; None with no more resamples than items."""
    e = np.random.default_rng(2).normal(size=N)
    draws = _draws()
    values = draws @ e / N
    assert np.allclose(influence(values[:, None], draws)[:, 0], (e - e.mean()) / N, atol=1e-12)
    assert influence(values[:N, None], draws[:N]) is None


def test_the_widening_is_t_at_the_effective_freedom():
    """A sparse residual (3 of 64 items): the factor is t_nu / t_63 with nu by hand; a normal one is not widened;
    the factor is never below 1."""
    draws = _draws()
    values = draws @ _sparse() / N
    u = _sparse() / N
    nu = 2 * (u ** 2).sum() ** 2 / ((u ** 2 - (u ** 2).mean()) ** 2).sum()
    factor = float(sparse_widening(values, draws, N - 1, 0.95))
    assert nu < 10 and math.isclose(factor, t_over_z(0.95, int(nu)) / t_over_z(0.95, N - 1), rel_tol=1e-12)
    assert factor > 1.1
    smooth = draws @ np.random.default_rng(4).normal(size=N) / N
    assert 1.0 <= float(sparse_widening(smooth, draws, N - 1, 0.95)) < 1.01


def test_a_sparse_residual_widens_the_power_tuned_interval():
    """The target and its proxy agree but on 3 of 64 items: with the resample weights the interval's deviations
    are wider by the factor above (without them, as before); the estimate does not move."""
    rng = np.random.default_rng(5)
    p = rng.random(N)
    t = p + _sparse()
    draws = _draws()
    target = ({"averaged_truelabel_likelihood": float(t.mean())},
              {"averaged_truelabel_likelihood": (draws @ t / N).tolist()})
    proxy = ({"averaged_truelabel_likelihood": float(p.mean())},
             {"averaged_truelabel_likelihood": (draws @ p / N).tolist()})
    truth = [{"averaged_truelabel_likelihood": float(p.mean()) + 0.01}]
    before = power_tuned("Normal", target, [proxy], truth, N - 1, 0.95)[0]["averaged_truelabel_likelihood"]
    after = power_tuned("Normal", target, [proxy], truth, N - 1, 0.95, draws=draws)[0]["averaged_truelabel_likelihood"]
    factor = float(sparse_widening(draws @ (t - p) / N, draws, N - 2, 0.95))
    assert after[0] == before[0] and factor > 1.1
    assert after[2] - after[1] == pytest.approx(factor * (before[2] - before[1]), rel=1e-9)
