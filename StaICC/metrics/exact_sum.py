"""What a run's rows are, which branch of the standard's exact-sum rule they take, and when it rests on rounding.

The standard softmaxes every row of a score metric unless every row passes an exact check
(entries in [0, 1] and a left-to-right sum equal to 1.0), and softmaxes the bias entropy's
mean row unless it passes.  For probabilities computed in floating point (a model's
softmax), whether a row's sum lands on 1.0 is a matter of its last bit, which the batch
size, the shards, the thread count and the hardware change: the branch, and with it the
true-label likelihood, ECE and the bias entropy, would change with how a run was routed.
With the original's kernel a full dataset fails the check almost surely, so published
numbers come from the softmax branch: a model's probabilities softmaxed a second time.

What the rows are (``prediction_kind``, :data:`PREDICTION_KINDS`) decides the rule:

* ``None``: the standard's rule, decided by the check: a user's function, preentered
  predictions and the built-in reference models, exactly as the standard states it;
* ``"probabilities"``: a model's probabilities computed in floating point (the package's
  ``hf``, ``vllm`` and ``openai`` log-probability backends declare this): the softmax
  branch, always;
* ``"loglikelihoods"`` / ``"logits"``: scores whose softmax is the model's distribution
  over the labels: softmaxed once into that distribution, which then takes the softmax
  branch as probabilities do.  Log-likelihoods handed back (lm-evaluation-harness's
  ``loglikelihood``) so give the numbers of the ``hf`` backend that computed them.

Under the standard's rule, :func:`census` says per pass whether the branch rested on
rounding (probability-like rows, the branch decided by at most :data:`FEW_ROWS` rows) and
whether the rows look like log-likelihoods; :func:`notice` turns that into one line.
"""
import math
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..validation import PREDICTION_KINDS, check_prediction_kind  # noqa: F401  (re-exported: the kinds' one home)
from ..numeric import (CHECK, SOFTMAX, Matrix, PredictionRows, column_means, is_probability_vector, rule_of,
                       sequential_sum, softmax)

#: a branch decided by at most this many rows rests on rounding: with a share q ~ 0.2-0.35 of
#: floating-point probability rows failing the check, f failing rows all pass on another route
#: with probability about (1 - q)^f, over 1 % up to 10 rows
FEW_ROWS = 10
#: a row is probability-like when it is in [0, 1] and its exact sum is within this of 1: the
#: check then passes or fails on rounding alone
ROUNDING = 1e-9
#: the metrics whose value a rounding-decided branch moves (argmax-based metrics cannot move)
SCORE_METRICS_MOVED = ("averaged_truelabel_likelihood", "expected_calibration_error_1")


class RowRule(NamedTuple):
    """How a run's rows meet the exact-sum rule: what they are, and whether no route can move a last
    bit of them (pure-Python arithmetic, as the built-in reference models; exact rows of generated answers)."""

    kind: Optional[str] = None
    reproducible: bool = False
    original: bool = False  # exact_sum="original": declared rows meet the original's check, not the softmax branch


STANDARD_RULE = RowRule()


def rows_of_kind(rows: PredictionRows, kind: Optional[str], dataset: str = "", original: bool = False) -> PredictionRows:
    """The rows the metrics read for rows declared ``kind``: as given (None), with the softmax branch
    (probabilities), or softmaxed once into the model's distribution first (log-likelihoods, logits).
    ``original``: the model's distribution under the standard's check instead of the softmax branch,
    as the original's kernel handed its probabilities over (exact_sum="original")."""
    if kind is None or not rows or (original and kind == "probabilities" and not rows.exact):
        return rows
    if rows.exact:  # one-hot rows of int answers
        at = f" for dataset {dataset!r}" if dataset else ""
        raise InvalidValueError(f"prediction_kind={kind!r} describes score vectors, but the predictions{at} are int label "
                                "indexes; leave prediction_kind out for labels")
    rule = CHECK if original else SOFTMAX
    if kind == "probabilities":
        declared = PredictionRows(rows, rule)
        declared.floats = rows.floats  # the same rows
        return declared
    return PredictionRows(map(softmax, rows), rule)


def own_distribution(matrix: Matrix) -> Matrix:
    """The model's own distribution over the labels: each row normalised once (rows that are
    probabilities up to rounding, divided by their exact sum) or softmaxed once (anything else).

    It depends on the rows only, not on their declared rule, so statistics recomputed from the
    records give the same bits.  Computed once per :class:`~StaICC.numeric.PredictionRows`.
    """
    cached = getattr(matrix, "own", None)
    if cached is not None:
        return cached
    if all(_probability_like(row) for row in matrix):
        result: Matrix = list(map(divided_by_exact_sum, matrix))
    else:
        result = [softmax(row) for row in matrix]
    if isinstance(matrix, PredictionRows):
        matrix.own = result
    return result


def divided_by_exact_sum(row: Sequence[float]) -> Sequence[float]:
    """A probability-like row's own distribution: divided by its exact sum, or the very row when that is 1."""
    total = math.fsum(row)
    return row if total == 1 else [v / total for v in row]


def recorded_rule(metadata: Any, dataset: str) -> str:
    """The exact-sum rule a recorded run's rows of ``dataset`` took (a sub-benchmark's metadata, as
    results.json holds it): what statistics recomputed from the records must apply too."""
    entry = (metadata.get("exact_sum") or {}).get(dataset) if isinstance(metadata, dict) else None
    passes = entry.get("passes") if isinstance(entry, dict) else None
    rule = passes[0].get("rule") if passes and isinstance(passes[0], dict) else None
    return SOFTMAX if rule == SOFTMAX else CHECK


def recorded_rules(run: Any) -> Dict[Tuple[str, str], str]:
    """(sub-benchmark, dataset) -> :func:`recorded_rule`, for a loaded run (``run.parts``) or a result of
    ``run_suite`` (each sub-benchmark's result carries its metadata; a compound one's, such as Triplet_bias, is
    unfolded into its parts, named as their records are, as a loaded run's are)."""
    from ..spec import unfold
    parts = getattr(run, "parts", None)
    # a result in memory: a compound sub-benchmark's parts, each with its own metadata, under their records' names
    named = parts.items() if parts is not None else \
        ([(u.part, u.value) for u in unfold(run)] if isinstance(run, dict) else ())
    found: Dict[Tuple[str, str], str] = {}
    for name, part in named:
        metadata = getattr(part, "metadata", None)
        entries = metadata.get("exact_sum") if isinstance(metadata, dict) else None
        for dataset in entries if isinstance(entries, dict) else ():
            found[(name, dataset)] = recorded_rule(metadata, dataset)
    return found


def _probability_like(row: Sequence[float]) -> bool:
    return all(0 <= v <= 1 for v in row) and abs(math.fsum(row) - 1) <= ROUNDING


class PassCensus(NamedTuple):
    """How one pass's rows met the exact-sum rule (what the numerics record and the notice read).

    ``branch``: what the score metrics read ("as given" or "softmax"; ``EITHER`` for rows that
    are their own softmax (every entry of each row equal); None when no score metric ran and
    nothing was counted); ``failing``: rows that fail the check (None: not
    counted); ``rounding``: the branch was decided by at most :data:`FEW_ROWS` probability-like
    rows; ``mean_rounding``: the bias entropy's branch (its mean row's check) rests on
    rounding; ``loglikelihoods``: every score is <= 0.
    """

    rule: str
    rows: int
    branch: Optional[str] = None
    failing: Optional[int] = None
    rounding: bool = False
    mean_rounding: bool = False
    loglikelihoods: bool = False

    def as_dict(self) -> Dict[str, Any]:
        return {name: value for name, value in self._asdict().items() if value is not None}


#: the branch of rows that the softmax leaves unchanged: the exact-sum check cannot move their numbers
EITHER = "either"


def census(matrix: Matrix, rule: RowRule = STANDARD_RULE, values: bool = False, entropy: bool = False) -> PassCensus:
    """The census of one pass's rows, after its metrics ran: ``values``, the likelihood or ECE read
    the softmaxed values (argmax metrics cannot move with the branch); ``entropy``, the bias
    entropy read their mean.

    Rows with a declared rule, and reproducible rows, are not scanned: their branch cannot
    depend on the route.  Otherwise every row is checked once, stopping early when the rows
    are neither probability-like nor log-likelihoods (a logit matrix: the softmax branch,
    robustly).
    """
    declared = rule_of(matrix)
    if declared == SOFTMAX:
        return PassCensus(SOFTMAX, len(matrix), "softmax")
    normalized = getattr(matrix, "normalized", None)
    branch = None if normalized is None else "as given" if normalized is matrix else "softmax"
    if branch == "as given" and all(len(set(row)) <= 1 for row in matrix):
        branch = EITHER  # constant rows (a chance model's): the softmax gives them back unchanged
    if rule.reproducible or not matrix or getattr(matrix, "exact", False):
        return PassCensus(CHECK, len(matrix), branch, 0 if branch in ("as given", EITHER) else None)
    failing, near, nonpositive, one_hot = _scan(matrix)
    if failing is None:  # rows that are not probabilities: the score metrics' branch is softmax, robustly
        return PassCensus(CHECK, len(matrix), branch)
    rounding = values and near and not one_hot and failing <= FEW_ROWS
    mean_rounding = near and not one_hot and entropy
    return PassCensus(CHECK, len(matrix), branch, failing, rounding, mean_rounding, nonpositive and not near)


def _scan(matrix: Matrix) -> Tuple[Optional[int], bool, bool, bool]:
    """(rows failing the check, all probability-like, all scores <= 0, all one-hot); the count is
    None when the scan stopped early (rows neither probability-like nor log-likelihoods)."""
    failing, near, nonpositive, one_hot = 0, True, True, True
    for row in matrix:
        in_range = all(0 <= v <= 1 for v in row)
        total = sequential_sum(row)
        if not (in_range and total == 1):
            failing += 1
        if near and not (in_range and abs(math.fsum(row) - 1) <= ROUNDING):
            near = False
        if nonpositive and max(row) > 0:
            nonpositive = False
        if one_hot and not (in_range and total == 1 and max(row) == 1):
            one_hot = False
        if not near and not nonpositive:
            return None, False, False, False
    return failing, near, nonpositive, one_hot


def original_branch_differs(matrix: Matrix, values: bool, entropy: bool) -> Tuple[bool, bool]:
    """For rows that take the softmax branch always: (the score metrics, the bias entropy) would read
    other numbers under the original's rule. The score metrics do when every row passes the exact check
    (the original reads them as given), the entropy when the mean row passes it; rows (or a mean) equal
    to their own softmax (constant) read the same either way. Stops at the first failing row."""
    if not matrix or rule_of(matrix) != SOFTMAX:
        return False, False
    scores = values and all(map(is_probability_vector, matrix)) and not all(len(set(r)) <= 1 for r in matrix)
    mean = column_means(matrix) if entropy else []
    return scores, bool(entropy and is_probability_vector(mean) and len(set(mean)) > 1)


def original_rule_notice(differences: Iterable[Tuple[str, Sequence[str]]]) -> Optional[str]:
    """The one line naming, for ``(label, metrics)`` pairs, the metrics whose value the original's
    exact-sum rule would change in this run (None when none would)."""
    by_metrics: Dict[Tuple[str, ...], List[str]] = {}
    for label, metrics in differences:
        if metrics:
            by_metrics.setdefault(tuple(metrics), []).append(label)
    if not by_metrics:
        return None
    said = "; ".join(f"{', '.join(metrics)} in {_names(labels)}" for metrics, labels in by_metrics.items())
    return ("EXACT-SUM: this run's probabilities (a model backend's, or declared so) take the softmax branch of "
            f"the exact-sum rule always; under the original's rule these values would differ: {said} (exact_sum='original', --exact-sum original, "
            "replicates the original's rule)")


# ----------------------------------------------------------------------------
# the notice: one line for a run whose numbers rest on rounding or on a representation
# ----------------------------------------------------------------------------
def notice(censuses: Iterable[Tuple[str, Sequence[Any]]]) -> Optional[str]:
    """The one notice line for ``(label, pass censuses)`` pairs (a label: "Normal rotten_tomatoes"),
    or None when no pass's likelihood or ECE rests on rounding and no rows look like log-likelihoods.

    Census entries may be :class:`PassCensus` values or their ``as_dict()`` form (from results files).
    The bias entropy's mean row rests on rounding in every run of floating-point probabilities
    under the standard's rule (one vector decides it), so that is recorded (``mean_rounding``)
    and documented rather than said on every run.
    """
    loglikelihoods: List[str] = []
    rounding: List[str] = []
    for label, passes in censuses:
        entries = [p if isinstance(p, dict) else p.as_dict() for p in passes]
        if any(e.get("loglikelihoods") for e in entries):
            loglikelihoods.append(label)
        elif any(e.get("rounding") for e in entries):
            rounding.append(label)
    if loglikelihoods:
        return ("NUMERICS: the predictions of " + _names(loglikelihoods) + " look like log-likelihoods (every score "
                "<= 0): the standard softmaxes them once, the package's model backends' probabilities twice, so "
                "averaged_truelabel_likelihood, expected_calibration_error_1 and the bias metrics are not comparable "
                "with an hf run (accuracy, macro-F1 and consistency are); pass prediction_kind='loglikelihoods' to "
                "get the hf backend's numbers")
    if rounding:
        return ("NUMERICS: the standard's exact-sum check was decided by rounding in " + _names(rounding)
                + f" (probability rows, at most {FEW_ROWS} of them summing to other than exactly 1.0): another batch "
                "size, shard or machine can flip whether the rows are softmaxed again and move "
                + ", ".join(SCORE_METRICS_MOVED) + "; pass prediction_kind='probabilities' to take the softmax branch "
                "always, as the package's model backends do")
    return None


def _names(labels: List[str], shown: int = 3) -> str:
    more = len(labels) - shown
    return ", ".join(labels[:shown]) + (f" and {more} more" if more > 0 else "")
