"""The Beta quantile of the exact lite intervals (Halley's iteration in the bisection's bracket) against SciPy's and
against the bisection it replaced, copied here as the specification of the old numbers; the distribution function
it searches is the old one bit for bit."""
import itertools
import math
import random

import pytest

from StaICC.stats import lite_exact
from StaICC.stats.lite_exact import beta_quantile, korn_graubard, regularized_beta

scipy_stats = pytest.importorskip("scipy.stats")

#: shapes from 0.05 to 5,000, with the non-integer effective sizes of Korn-Graubard (x = p n_eff, n_eff - x + 1)
SHAPES = (0.05, 0.3, 0.5083333333333333, 1.0, 1.5, 3.7, 12.25, 64.49166666666667, 333.3, 2500.5, 5000.0)
#: the tails a lite run asks for (alpha/2, alpha/4 and their complements at 95 %) and a far one
LEVELS = (1e-6, 0.0125, 0.025, 0.5, 0.975, 0.9875)


def old_beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction as it was before the quantile's search changed (a loop over each step's two terms)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def old_regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) as it was."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * old_beta_fraction(x, a, b) / a
    return 1 - front * old_beta_fraction(1 - x, b, a) / b


def old_beta_quantile(q: float, a: float, b: float) -> float:
    """The q-quantile of Beta(a, b) as it was: bisection to 1e-12 (40 evaluations)."""
    low, high = 0.0, 1.0
    while high - low > 1e-12:
        middle = (low + high) / 2
        low, high = (middle, high) if old_regularized_beta(middle, a, b) < q else (low, middle)
    return (low + high) / 2


def test_the_distribution_function_is_the_old_one_bit_for_bit():
    rng = random.Random(3)
    for _ in range(3000):
        a, b, x = rng.choice(SHAPES) * rng.uniform(0.5, 2), rng.choice(SHAPES) * rng.uniform(0.5, 2), rng.random()
        assert regularized_beta(x, a, b) == old_regularized_beta(x, a, b), (x, a, b)


@pytest.mark.parametrize("q", LEVELS)
def test_the_quantile_is_the_bisections_within_1e_12(q):
    for a, b in itertools.product(SHAPES, SHAPES):
        assert abs(beta_quantile(q, a, b) - old_beta_quantile(q, a, b)) <= 1e-12, (q, a, b)


@pytest.mark.parametrize("q", LEVELS + (1 - 1e-6,))
def test_the_quantile_is_scipys_within_1e_12(q):
    # q = 1 - 1e-6 is beyond what the bisection held (its 1 - tail rounding cost it 2.3e-12 at a = 0.1, b = 12.25):
    # above the median the search solves the mirrored lower tail, computed to its relative precision
    for a, b in itertools.product(SHAPES, SHAPES):
        assert abs(beta_quantile(q, a, b) - float(scipy_stats.beta.ppf(q, a, b))) <= 1e-12, (q, a, b)


def test_the_old_bisection_missed_scipy_beyond_1e_12_where_the_mirrored_search_does_not():
    q, a, b = 1 - 1e-6, 0.1, 12.25
    assert abs(old_beta_quantile(q, a, b) - float(scipy_stats.beta.ppf(q, a, b))) > 1e-12
    assert abs(beta_quantile(q, a, b) - float(scipy_stats.beta.ppf(q, a, b))) < 1e-13


def test_korn_graubards_limits_take_a_few_evaluations_each_and_none_when_asked_again(monkeypatch):
    evaluations = []
    real = lite_exact._distribution_and_density
    monkeypatch.setattr(lite_exact, "_distribution_and_density", lambda x, a, b: evaluations.append(x) or real(x, a, b))
    rng = random.Random(7)
    counts = []
    for _ in range(200):  # effective sizes and estimates as a subset's cells give them
        n, p = rng.uniform(8, 800), rng.choice([0.0, rng.random(), rng.uniform(0.95, 1.0), rng.uniform(0, 0.05)])
        for q, a, b in ((0.025, p * n, n - p * n + 1), (0.975, p * n + 1, n - p * n)):
            if a > 0 and b > 0:
                beta_quantile.cache_clear()
                evaluations.clear()
                found = beta_quantile(q, a, b)
                counts.append(len(evaluations))
                assert abs(found - old_beta_quantile(q, a, b)) <= 1e-12
                evaluations.clear()
                assert beta_quantile(q, a, b) == found and not evaluations  # the cache: no evaluation
    assert max(counts) <= 8 and sum(counts) / len(counts) <= 5, sorted(counts)[-10:]


def test_quantiles_beyond_the_floats_reach_near_1_and_near_0_are_within_the_searchs_bracket():
    # Beta(5000, 0.05)'s 0.975-quantile is 1 - 1e-37 in exact arithmetic (its mirror's lower tail); Beta(0.05, 300)'s
    # 0.0125-quantile is below 1e-50: each answer is within half the final bracket (5e-14) of it
    for q, a, b in ((0.975, 5000.0, 0.05), (0.0125, 0.05, 300.0), (0.025, 5000.0, 0.05)):
        assert abs(beta_quantile(q, a, b) - float(scipy_stats.beta.ppf(q, a, b))) <= lite_exact.QUANTILE_BRACKET / 2
    assert korn_graubard(0.0, 0.0, 12, 0.95) == pytest.approx((0.0, 1 - 0.025 ** (1 / 12)), abs=1e-13)


def test_a_quantile_at_0_or_1_is_the_supports_end():
    # the bisection gave 4.5e-13 at q = 0, and at q = 1 the first x where I_x rounds to 1.0 (0.9968 here); no
    # interval at a level below 1 asks for either
    assert beta_quantile(0.0, 2.5, 7.0) == 0.0 and abs(old_beta_quantile(0.0, 2.5, 7.0)) <= 1e-12
    assert beta_quantile(1.0, 2.5, 7.0) == 1.0
