"""The calibrations that correct the label probabilities from a prior: contextual, domain and batch.

:class:`calibration` (the base), the helpers every calibration shares, and the calibrations
that estimate the model's bias from content-free or in-domain queries (contextual, domain)
or from the batch itself (batch).  The package docstring says how calibrations are used.
"""
from typing import Any, Callable, Iterator, List, Optional, Sequence

from ...errors import InvalidTypeError, InvalidValueError
from ...extras import require
from ...metrics import softmax
from ...numeric import VECTOR_ROWS, float_array, loaded_numpy, softmax_array
from ...validation import check_int, check_label_space
from ..vectors import sequential_l2

INITIAL_CONTEXT_MASS = 1e-5
DEFAULT_CALIBRATION_NUMBER = 128
#: the most calibration prompts a method writes (each is written, kept and asked before the method is fitted)
MAX_CALIBRATION_NUMBER = 100_000
DEFAULT_DOMAIN_SAMPLE_LENGTH = 64
DEFAULT_BATCH_SIZE = 128
MISSING_CATEGORY_WARNING = "Some categories didn't present in the calibration set: "

PromptMaker = Callable[..., Any]
Feedforward = Callable[..., Any]


# --------------------------------------------------------------------------- helpers
def _checked_label_space(label_space: Sequence[str], where: str) -> List[str]:
    return check_label_space(label_space, at=f" in {where}", name="label_space")


def _checked_training(calibration_set: Any, calibration_number: int, k: int, where: str) -> None:
    check_int(calibration_number, "calibration_number", minimum=1, maximum=MAX_CALIBRATION_NUMBER, at=f" in {where}")
    check_int(k, "k", minimum=0, at=f" in {where}")
    if len(calibration_set) == 0:
        raise InvalidValueError(f"{where}: the calibration set is empty")


def _probabilities(value: Any, n: int, where: str) -> List[Any]:
    """The feedforward's label probabilities as a list of n numbers."""
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise InvalidValueError(f"{where}: expected {n} label probabilities, got {value!r:.200}")
    return list(value)


def _element(value: Any, index: int, where: str) -> Any:
    """Element ``index`` of a feedforward's tuple return (hidden state, full-vocab logits)."""
    if not isinstance(value, (list, tuple)) or len(value) < 2 or isinstance(value[index], (int, float)):
        raise InvalidValueError(f"{where}: the feedforward must return a tuple such as (probs, state); got "
                                f"{type(value).__name__}. Use return_hidden_state / return_full_vocab_prob, or "
                                "CausalLMScorer.feedforward_with_hidden_state / feedforward_with_full_vocab")
    return value[index]


def _label_index(calibration_set: Any, label_text: str, label_space: List[str], where: str) -> int:
    """Position of a row's label text in the calibration set's own label space."""
    dataset_labels = calibration_set.get_label_space() if hasattr(calibration_set, "get_label_space") else label_space
    if label_text not in dataset_labels:
        raise InvalidValueError(f"{where}: label {label_text!r} is not in the calibration set's label space {dataset_labels}")
    return list(dataset_labels).index(label_text)


def _fresh_stream() -> Any:
    from ...rng import fresh_stream
    return fresh_stream()


def _sample_indexes(count: int, size: int) -> List[int]:
    """``count`` indexes into a set of ``size`` rows, with repetition, from a fresh stream."""
    return _fresh_stream().index_set(count, size, allow_repetition=True)


def _call(feedforward: Feedforward, prompt: Any, label_space: List[str]) -> Any:
    return feedforward(prompt=prompt, label_space=list(label_space))


def _stack(vectors: List[Any]) -> Any:
    np = require("numpy", "StaICC calibrations")
    return np.stack(vectors) if vectors else None


def _sequential_mean(vectors: List[Any]) -> Any:
    """Element-wise Σ→ over the vectors in order, then divided by their count."""
    total = vectors[0] * 0
    for vector in vectors:
        total = total + vector
    return total / len(vectors)


def _distance_scores(centroids: Any, vector: Any) -> List[float]:
    """softmax([d₀ − d_c]) over the L2 distances to the centroids."""
    distances = sequential_l2(centroids, vector)
    return softmax([distances[0] - d for d in distances])


# --------------------------------------------------------------------------- the common interface
class calibration:
    """What every trained calibration offers (the original's base class).

    ``train(default_prompt_maker, feedforward, calibration_set, ...)`` fits it on the
    calibration part; ``inference(label_space_prob, full_vocab_prob=None, hidden_state=None)``
    (also ``calibration(...)``) maps one prediction to calibrated probabilities.
    """

    def __init__(self, label_space: Sequence[str]) -> None:
        self.label_space = _checked_label_space(label_space, type(self).__name__)

    def train(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement train")

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement inference")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.inference(*args, **kwargs)


# --------------------------------------------------------------------------- contextual and domain
class contextual_calibration(calibration):
    """Contextual calibration (Zhao et al. 2021): divide by the content-free prediction.

    ``train`` averages the predictions for prompts whose query inputs are all
    empty strings; ``inference`` returns softmax(p_c / A_c).
    """

    def __init__(self, label_space: Sequence[str]) -> None:
        self.label_space = _checked_label_space(label_space, type(self).__name__)
        self.calibrationA: List[Any] = [INITIAL_CONTEXT_MASS] * len(self.label_space)
        self.trained = False

    def _query_lines(self, calibration_set: Any, input_count: int) -> Iterator[List[str]]:  # noqa: ARG002  (the calibration protocol's signature)
        while True:
            yield [""] * input_count

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> None:
        """Average ``calibration_number`` predictions; restarts from A = [1e-5]·n every call.

        :meth:`training_prompts`, the feedforward on each, then :meth:`fit`: the steps a
        method run takes with the answers of its backend (:mod:`StaICC.methods.builtin`).
        """
        prompts = self.training_prompts(default_prompt_maker, calibration_set, calibration_number, k)
        self.fit([_call(feedforward, prompt, self.label_space) for prompt in prompts])

    def training_prompts(self, default_prompt_maker: PromptMaker, calibration_set: Any,
                         calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> List[Any]:
        """The ``calibration_number`` prompts training asks about: k demonstrations of the calibration set
        (a fresh stream's draws, with repetition) and this calibration's query line each."""
        where = f"{type(self).__name__}.train"
        _checked_training(calibration_set, calibration_number, k, where)
        indexes = _sample_indexes(calibration_number * k, len(calibration_set))
        queries = self._query_lines(calibration_set, len(calibration_set[0][0]))
        return [default_prompt_maker([calibration_set[j] for j in indexes[i * k:(i + 1) * k]], next(queries))
                for i in range(calibration_number)]

    def fit(self, predictions: Sequence[Any]) -> None:
        """A = the mean of the label probabilities predicted for the training prompts, summed in order from
        [1e-5]·n; restarts every call."""
        where = f"{type(self).__name__}.train"
        total: List[Any] = [INITIAL_CONTEXT_MASS] * len(self.label_space)
        for i, value in enumerate(predictions):
            probs = _probabilities(value, len(total), f"{where} query {i}")
            total = [a + p for a, p in zip(total, probs)]
        self.calibrationA = [a / len(predictions) for a in total]
        self.trained = True

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> List[float]:  # noqa: ARG002  (the calibration protocol's signature)
        """softmax([p_c / A_c]); untrained, A = [1e-5]·n as in the original."""
        probs = _probabilities(label_space_prob, len(self.calibrationA), f"{type(self).__name__}.inference")
        return softmax([p / a for p, a in zip(probs, self.calibrationA)])

    __call__ = inference


class domain_calibration(contextual_calibration):
    """Domain-context calibration (Fei et al. 2023): the content-free query is random in-domain words.

    Each training query line is ``sample_length`` random words of the calibration
    set (the domain query generator, with its own fresh stream), restarted every train.
    """

    def __init__(self, label_space: Sequence[str], sample_length: int = DEFAULT_DOMAIN_SAMPLE_LENGTH) -> None:
        super().__init__(label_space)
        self._sample_length = check_int(sample_length, "sample_length", minimum=1, at=" in domain_calibration")

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, sample_length: int = DEFAULT_DOMAIN_SAMPLE_LENGTH,
              k: int = 4) -> None:
        """``sample_length`` random in-domain words per query line (kept for :meth:`training_prompts`)."""
        check_int(sample_length, "sample_length", minimum=1, at=" in domain_calibration.train")
        self._sample_length = sample_length
        super().train(default_prompt_maker, feedforward, calibration_set, calibration_number, k)

    def _query_lines(self, calibration_set: Any, input_count: int) -> Iterator[List[str]]:  # noqa: ARG002  (the calibration protocol's signature)
        from ...prompt import domain_query_generator
        if not hasattr(calibration_set, "table"):  # a plain sequence of rows: give the generator its table
            calibration_set = _RowTable([calibration_set[i] for i in range(len(calibration_set))])
        return iter(domain_query_generator(calibration_set, self._sample_length))


class _RowTable:
    """Rows (inputs, label) seen as a dataset with a ``table``, as the domain query generator reads it."""

    def __init__(self, rows: List[Any]) -> None:
        self.table = rows

    def __len__(self) -> int:
        return len(self.table)


# --------------------------------------------------------------------------- batch
def batch_calibration(probs_list: Optional[Sequence[Sequence[Any]]] = None, batch_size: int = DEFAULT_BATCH_SIZE, *,
                      label_space_probs: Optional[Sequence[Sequence[Any]]] = None) -> List[List[float]]:
    """Batch calibration (Zhou et al. 2024): subtract each batch's mean, then softmax.

    Consecutive batches of ``batch_size`` plus a remainder batch; items keep
    their order.  Use as ``batch_calibration_function`` of the batched kernel.
    ``label_space_probs=`` is the original's name for ``probs_list``.
    """
    if (probs_list is None) == (label_space_probs is None):
        raise InvalidTypeError("batch_calibration() takes the predictions once: probs_list (or the original's name, "
                               "label_space_probs)")
    probs_list = probs_list if probs_list is not None else label_space_probs
    check_int(batch_size, "batch_size", minimum=1, at=" in batch_calibration")
    rows = probs_list if type(probs_list) is list and set(map(type, probs_list)) <= {list} else \
        [list(row.tolist() if hasattr(row, "tolist") else row) for row in probs_list]  # read, never changed
    if len(set(map(len, rows))) > 1:
        raise InvalidValueError("batch_calibration: every prediction must have the same number of labels")
    values = batch_calibrated_values(rows, batch_size)
    if values is not None:
        return values.tolist()
    out: List[List[float]] = []
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        mean = [0] * len(batch[0])
        for row in batch:
            mean = [m + p for m, p in zip(mean, row)]
        mean = [m / len(batch) for m in mean]
        out.extend(softmax([p - m for p, m in zip(row, mean)]) for row in batch)
    return out


def batch_calibrated_values(rows: List[List[Any]], batch_size: int) -> Any:
    """:func:`batch_calibration` of list rows as the float array it is the ``tolist()`` of, where it is computed
    at once (NumPy loaded, finite float rows); None where the per-row loop computes it."""
    np = loaded_numpy()
    values = float_array(np, rows) if np is not None and len(rows) >= VECTOR_ROWS else None
    return None if values is None else _batch_calibrated_array(np, values, batch_size)


def _batch_calibrated_array(np: Any, values: Any, batch_size: int) -> Any:
    """The loop of :func:`batch_calibration` over a float array, to the last bit: each batch's column sums
    accumulated row by row (plus 0.0: the loop's sums start at the integer 0, so a sum of zeros is +0.0),
    divided by the batch's length, subtracted, then :func:`~StaICC.numeric.softmax_array`."""
    centred = np.empty_like(values)
    with np.errstate(over="ignore", invalid="ignore"):  # past the float range: inf and nan, as the loop gives them
        for start in range(0, len(values), batch_size):
            batch = values[start:start + batch_size]
            centred[start:start + batch_size] = batch - (np.add.accumulate(batch, axis=0)[-1] + 0.0) / len(batch)
        return softmax_array(np, centred)


#: CamelCase aliases for readers who prefer class-style names
ContextualCalibration = contextual_calibration
DomainCalibration = domain_calibration
