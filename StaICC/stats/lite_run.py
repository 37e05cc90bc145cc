"""Lite runs end to end: a stratified share of the test items asked, every standard number estimated.

``run_lite(f, 0.125)`` (``staicc run --lite 0.125``) asks the seeded, label-stratified 12.5 %
of every sub-benchmark's test items (:class:`~StaICC.sampling.lite.LiteSample`; the same items
for every model and run), through the one runner, and estimates each standard metric of the
*full* run from them with its interval (:func:`~StaICC.stats.lite.lite_estimates`; a metric
the coverage study does not vouch for at that share is "not estimable", with the reason).

The estimates need each (sub-benchmark, dataset)'s full test labels (their shares weight
the subset's items), which the built sub-benchmarks hold: :func:`populations`.  What a lite
run records beside its results (:func:`lite_section`, ``provenance["lite"]`` of
``results.json``): the sample, the departure from the standard, the items' SHA-256 (two lite
runs with the same digest evaluated the same items) and the estimates.  The estimates need
NumPy; :func:`require_numpy` says so before anything is asked.
"""
import hashlib
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import MissingExtraError
from .bootstrap import DEFAULT_LEVEL, DEFAULT_RESAMPLES, DEFAULT_SEED

#: the extra that installs what the estimates need
LITE_EXTRA = "stats"


def require_numpy() -> None:
    """Refuse a lite run, before anything is asked, where NumPy (which the estimates need) is missing."""
    try:
        import numpy  # noqa: F401
    except ImportError as error:
        from ..extras import install_hint
        raise MissingExtraError(f"a lite run's estimates need the optional dependency 'numpy', which is not installed "
                                f"({error}). Install it with: {install_hint(LITE_EXTRA)}") from None


def sample_of(lite: Any) -> Any:
    """A :class:`~StaICC.sampling.lite.LiteSample` from a fraction (a float), or a sample itself."""
    from ..sampling.lite import LiteSample
    if isinstance(lite, LiteSample):
        return lite
    return LiteSample(fraction=lite)


def populations(suite: Dict[str, Any]) -> Dict[Tuple[str, str], List[int]]:
    """(part name, dataset) -> the full test labels of every part of a built suite (what the estimates weight by)."""
    from ..subbenchmarks.suite import suite_parts
    found: Dict[Tuple[str, str], List[int]] = {}
    for name, bench in suite.items():
        for _key, part_name, part in suite_parts(name, bench):
            for experimentor in part.get_experimentors():
                found[(part_name, experimentor.dataset_name)] = experimentor.triplet_dataset.test.label_indexes()
    return found


def check_proxy_covers(proxy: Any, full: Dict[Tuple[str, str], List[int]]) -> None:
    """Refuse a proxy run that is not known on every test item of a part the lite run estimates (a lite run, or a
    --limit run, given as the proxy): its "full-run value" would be that of its own subset, and the difference
    estimator would take the subset for the full run (a narrow interval that misses the full run's value).
    ``full``: :func:`populations` of the lite run's suite; a ValueError naming the proxy and the part."""
    from ..errors import InvalidValueError
    from .lite_proxy import as_proxies
    for one in as_proxies(proxy):
        for (part, dataset), labels in full.items():
            known = len(set(one.statistic(part, dataset).table.items))
            if known < len(labels):
                raise InvalidValueError(
                    f"the proxy {one.name} has records of {known} of the {len(labels)} test items of {part} / "
                    f"{dataset} (a lite run, or one with --limit): a proxy must be scored on every test item; give "
                    "a full run made with --log-samples")


def items_sha256(planned: Dict[str, Sequence[Any]]) -> str:
    """SHA-256 of the test items each (part, dataset) evaluates: equal digests, the same items."""
    items = sorted([work.part, work.dataset, list(work.plan.test_items or ())]
                   for works in planned.values() for work in works)
    return hashlib.sha256(json.dumps(items, separators=(",", ":")).encode("utf-8")).hexdigest()


def estimate(records: Any, sample: Any, full: Dict[Tuple[str, str], List[int]], *,
             resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL,
             proxy: Any = None, rules: Optional[Dict[Tuple[str, str], str]] = None) -> Any:
    """The :class:`~StaICC.stats.lite.LiteResult` of a lite run's records (``rules``: the exact-sum rule each part's
    rows took, ``metrics.exact_sum.recorded_rules``).

    A fraction is the share of every part's items; with a number of items, each part is
    estimated at its smallest share over its datasets (a metric reported at a share is
    reported at every larger one), and the result's ``fraction`` is the smallest of all.  ``proxy``: a
    :class:`~StaICC.stats.lite_proxy.Proxy` scored on every item (the proxy-assisted estimates).
    """
    from functools import partial

    from .lite import LiteResult, lite_estimates
    from .lite_proxy import ProxyLiteResult, as_proxies, proxy_lite_estimates, proxy_models, proxy_name
    estimates_of = lite_estimates if proxy is None else partial(proxy_lite_estimates, proxy=proxy)
    if sample.fraction is not None:
        return estimates_of(records, sample.fraction, full, resamples=resamples, seed=seed, level=level, rules=rules)
    by_part: Dict[str, List[Any]] = {}
    for record in records:
        by_part.setdefault(record["benchmark"], []).append(record)
    estimates: Dict[str, Any] = {}
    shares = []
    for part, part_records in by_part.items():
        share = min(sample.share_of(len(labels)) for (name, _), labels in full.items() if name == part)
        shares.append(share)
        found = estimates_of(part_records, share, full, resamples=resamples, seed=seed, level=level, rules=rules)
        estimates.update(found.estimates)
    if proxy is not None:
        return ProxyLiteResult(min(shares) if shares else 1.0, resamples, seed, level, estimates,
                               proxy=proxy_name(proxy), proxies=len(as_proxies(proxy)), models=proxy_models(proxy))
    return LiteResult(min(shares) if shares else 1.0, resamples, seed, level, estimates)


def lite_section(result: Any, sample: Any, suite: Dict[str, Any], planned: Dict[str, Sequence[Any]], *,
                 resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, level: float = DEFAULT_LEVEL,
                 full_counts: Optional[Dict[str, int]] = None, proxy: Any = None) -> Tuple[Any, Dict[str, Any]]:
    """(the estimates, what a lite run records beside its results: the sample, the departure, the items'
    digest, the counts against the full run's when known, and the estimates as a dict)."""
    from ..metrics.exact_sum import recorded_rules
    found = estimate(result.records, sample, populations(suite), resamples=resamples, seed=seed, level=level,
                     proxy=proxy, rules=recorded_rules(result))
    section: Dict[str, Any] = {
        "standard": False, "departure": sample.description, "fraction": sample.fraction, "items": sample.items,
        "items_sha256": items_sha256(planned),
        "prompts": {"prompts": result.metadata["prompts"], "distinct": result.metadata["distinct_prompts"]},
        "estimates": found.to_dict()}
    if full_counts:
        section["full_run"] = dict(full_counts)
    return found, section


def _share(section: Dict[str, Any]) -> str:
    from ..sampling.lite import percent
    return f"{percent(section['fraction'])} of the test items" if section.get("fraction") is not None else \
        f"{section.get('items')} test items each"


def lite_pairing(a: Any, b: Any) -> Tuple[Optional[str], Optional[str]]:
    """(why two loaded runs cannot be compared, a note on how they are): a lite run compares paired with a
    lite run on the same items only; a full run is not its pair (their items differ)."""
    la, lb = (run.provenance.get("lite") if isinstance(run.provenance, dict) else None for run in (a, b))
    if not la and not lb:
        return None, None
    if la and lb:
        if la.get("items_sha256") == lb.get("items_sha256"):
            return None, (f"{a.label} and {b.label} are lite runs on the same test items ({_share(la)}): compared "
                          "paired over those items; the values are the subset's own, not estimates of the full run")
        return (f"{a.label} ({_share(la)}) and {b.label} ({_share(lb)}) are lite runs on different test items, so "
                "they are not paired; compare lite runs made with the same --lite (or --lite-items) and datasets"), \
            None
    lite, full = (a, b) if la else (b, a)
    return (f"{lite.label} is a lite run ({_share(lite.provenance['lite'])}) and {full.label} a full run: their "
            "test items differ, so they are not paired; compare two lite runs at the same share, or two full runs"), None
