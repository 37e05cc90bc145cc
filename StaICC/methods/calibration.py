"""Standard calibrations for in-context learning.

Each calibration is trained on an experimentor's calibration set with a
feedforward (an inference function) and then used as the
``calibration_function`` of an inference: ``calibration.inference(label_probs,
full_vocab, hidden)`` returns the calibrated probabilities.

Typical use with the fast scorer::

    exp = bench[i]
    calibration = contextual_calibration(exp.get_label_space())
    calibration.train(exp.prompt_former.write_prompt_from_dataline, scorer, exp.calibration_set(), k=exp.get_k())
    exp.auto_run(forward_inference=scorer.calibrated(calibration.inference), batched_inference=True)

Behaviour follows the standard, with these fixes to the original StaICC:

* ``train`` always restarts: a second call gives exactly what a first
  call on a fresh object gives, instead of accumulating onto the old state.
* kNN distances over the full vocabulary run in NumPy; the sums are
  still sequential in the vectors' element type, so the numbers are unchanged.
* Inputs are validated: a feedforward returning the wrong number of
  probabilities fails with the calibration query's index.

Vectors keep their element type: the prefab kernels return float32 NumPy
arrays, so hidden-state and kNN arithmetic is float32 as in the original;
Python-float vectors are computed in double.
"""
import warnings
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

from ..extras import require
from ..metrics import argmin as first_argmin, softmax
from ..validation import check_int, check_label_space
from .vectors import as_vector, sequential_l2

__all__ = ["calibration", "knn_prompt", "contextual_calibration", "domain_calibration", "batch_calibration", "hidden_calibration", "knn_prompting", "knn_prompt_centroid", "INITIAL_CONTEXT_MASS", "DEFAULT_CALIBRATION_NUMBER", "DEFAULT_DOMAIN_SAMPLE_LENGTH", "DEFAULT_BATCH_SIZE", "MISSING_CATEGORY_WARNING"]

INITIAL_CONTEXT_MASS = 1e-5
DEFAULT_CALIBRATION_NUMBER = 128
DEFAULT_DOMAIN_SAMPLE_LENGTH = 64
DEFAULT_BATCH_SIZE = 128
MISSING_CATEGORY_WARNING = "Some categories didn't present in the calibration set: "
_PASSED = 1e9  # distance given to an anchor that already voted (kNN)

PromptMaker = Callable[..., Any]
Feedforward = Callable[..., Any]


# --------------------------------------------------------------------------- helpers
def _checked_label_space(label_space: Sequence[str], where: str) -> List[str]:
    return check_label_space(label_space, at=f" in {where}", name="label_space")


def _checked_training(calibration_set: Any, calibration_number: int, k: int, where: str) -> None:
    check_int(calibration_number, "calibration_number", minimum=1, at=f" in {where}")
    check_int(k, "k", minimum=0, at=f" in {where}")
    if len(calibration_set) == 0:
        raise ValueError(f"{where}: the calibration set is empty")


def _probabilities(value: Any, n: int, where: str) -> List[Any]:
    """The feedforward's label probabilities as a list of n numbers."""
    if hasattr(value, "tolist") and not isinstance(value, list):
        value = value.tolist()
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise ValueError(f"{where}: expected {n} label probabilities, got {value!r:.200}")
    return list(value)


def _element(value: Any, index: int, where: str) -> Any:
    """Element ``index`` of a feedforward's tuple return (hidden state, full-vocab logits)."""
    if not isinstance(value, (list, tuple)) or len(value) < 2 or isinstance(value[index], (int, float)):
        raise ValueError(f"{where}: the feedforward must return a tuple such as (probs, state); got "
                         f"{type(value).__name__}. Use return_hidden_state / return_full_vocab_prob, or "
                         "CausalLMScorer.feedforward_with_hidden_state / feedforward_with_full_vocab")
    return value[index]


def _label_index(calibration_set: Any, label_text: str, label_space: List[str], where: str) -> int:
    """Position of a row's label text in the calibration set's own label space."""
    dataset_labels = calibration_set.get_label_space() if hasattr(calibration_set, "get_label_space") else label_space
    if label_text not in dataset_labels:
        raise ValueError(f"{where}: label {label_text!r} is not in the calibration set's label space {dataset_labels}")
    return list(dataset_labels).index(label_text)


def _fresh_stream() -> Any:
    from ..rng import fresh_stream
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

    def _query_lines(self, calibration_set: Any, input_count: int) -> Iterator[List[str]]:
        while True:
            yield [""] * input_count

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> None:
        """Average ``calibration_number`` predictions; restarts from A = [1e-5]·n every call."""
        where = f"{type(self).__name__}.train"
        _checked_training(calibration_set, calibration_number, k, where)
        indexes = _sample_indexes(calibration_number * k, len(calibration_set))
        queries = self._query_lines(calibration_set, len(calibration_set[0][0]))
        total: List[Any] = [INITIAL_CONTEXT_MASS] * len(self.label_space)
        for i in range(calibration_number):
            demos = [calibration_set[j] for j in indexes[i * k:(i + 1) * k]]
            prompt = default_prompt_maker(demos, next(queries))
            probs = _probabilities(_call(feedforward, prompt, self.label_space), len(total), f"{where} query {i}")
            total = [a + p for a, p in zip(total, probs)]
        self.calibrationA = [a / calibration_number for a in total]
        self.trained = True

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> List[float]:
        """softmax([p_c / A_c]); untrained, A = [1e-5]·n as in the original."""
        probs = _probabilities(label_space_prob, len(self.calibrationA), f"{type(self).__name__}.inference")
        return softmax([p / a for p, a in zip(probs, self.calibrationA)])

    __call__ = inference


class domain_calibration(contextual_calibration):
    """Domain-context calibration (Fei et al. 2023): the content-free query is random in-domain words.

    Each training query line is ``sample_length`` random words of the calibration
    set (the domain query generator, with its own fresh stream), restarted every train.
    """

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, sample_length: int = DEFAULT_DOMAIN_SAMPLE_LENGTH,
              k: int = 4) -> None:
        check_int(sample_length, "sample_length", minimum=1, at=" in domain_calibration.train")
        self._sample_length = sample_length
        super().train(default_prompt_maker, feedforward, calibration_set, calibration_number, k)

    def _query_lines(self, calibration_set: Any, input_count: int) -> Iterator[List[str]]:
        from ..prompt import domain_query_generator
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
def batch_calibration(probs_list: Sequence[Sequence[Any]], batch_size: int = DEFAULT_BATCH_SIZE) -> List[List[float]]:
    """Batch calibration (Zhou et al. 2024): subtract each batch's mean, then softmax.

    Consecutive batches of ``batch_size`` plus a remainder batch; items keep
    their order.  Use as ``batch_calibration_function`` of the batched kernel.
    """
    check_int(batch_size, "batch_size", minimum=1, at=" in batch_calibration")
    rows = [list(row.tolist() if hasattr(row, "tolist") else row) for row in probs_list]
    if rows and any(len(row) != len(rows[0]) for row in rows):
        raise ValueError("batch_calibration: every prediction must have the same number of labels")
    out: List[List[float]] = []
    for start in range(0, len(rows), batch_size):
        batch = rows[start:start + batch_size]
        mean = [0] * len(batch[0])
        for row in batch:
            mean = [m + p for m, p in zip(mean, row)]
        mean = [m / len(batch) for m in mean]
        out.extend(softmax([p - m for p, m in zip(row, mean)]) for row in batch)
    return out


# --------------------------------------------------------------------------- hidden and kNN
class _demonstration_query_trained(calibration):
    """Shared hidden-calibration / kNN sampling: per calibration query, k demonstrations and one query row."""

    def __init__(self, label_space: Sequence[str]) -> None:
        self.label_space = _checked_label_space(label_space, type(self).__name__)
        self.failed = False
        self.trained = False

    def _collect(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
                 calibration_number: int, k: int, element: int) -> List[Tuple[Any, int]]:
        """(vector, query label index) per calibration query, in filing order."""
        where = f"{type(self).__name__}.train"
        _checked_training(calibration_set, calibration_number, k, where)
        indexes = _sample_indexes(calibration_number * (k + 1), len(calibration_set))
        filed = []
        for i in range(calibration_number):
            chunk = indexes[i * (k + 1):(i + 1) * (k + 1)]
            demos = [calibration_set[j] for j in chunk[:k]]
            query_inputs, query_label = calibration_set[chunk[k]]
            prompt = default_prompt_maker(demos, query_inputs)
            vector = as_vector(_element(_call(feedforward, prompt, self.label_space), element, f"{where} query {i}"),
                               f"{where} query {i}")
            filed.append((vector, _label_index(calibration_set, query_label, self.label_space, where)))
        return filed

    def _by_label(self, filed: List[Tuple[Any, int]]) -> Optional[List[List[Any]]]:
        """Vectors grouped per label; None (with the standard's warning) if a label is missing."""
        groups: List[List[Any]] = [[] for _ in self.label_space]
        for vector, label in filed:
            if label >= len(groups):
                raise ValueError(f"{type(self).__name__}.train: label index {label} is outside the label space "
                                 f"{self.label_space}")
            groups[label].append(vector)
        for label, vectors in enumerate(groups):
            if not vectors:
                warnings.warn(MISSING_CATEGORY_WARNING + self.label_space[label], stacklevel=4)
                return None
        return groups


class hidden_calibration(_demonstration_query_trained):
    """Hidden calibration (Cho et al. 2024): nearest label centroid in last-layer hidden space.

    ``feedforward`` must return ``(probs, hidden)``: element [1] is used.
    """

    def __init__(self, label_space: Sequence[str]) -> None:
        super().__init__(label_space)
        self.centroids: Any = None

    def train(self, default_prompt_maker: PromptMaker, feedforward_with_hidden_state: Feedforward,
              calibration_set: Any, calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> None:
        self.centroids, self.failed, self.trained = None, False, False
        groups = self._by_label(self._collect(default_prompt_maker, feedforward_with_hidden_state,
                                              calibration_set, calibration_number, k, element=1))
        if groups is None:
            self.failed = True
            return
        self.centroids = _stack([_sequential_mean(vectors) for vectors in groups])
        self.trained = True

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:
        """softmax([d₀ − d_c]) over hidden-to-centroid distances; label_probs if training failed."""
        if self.failed:
            return label_space_prob
        if self.centroids is None:
            raise RuntimeError("hidden_calibration.inference: call train() first")
        if hidden_state is None:
            raise ValueError("hidden_calibration.inference: needs the hidden state (third argument); use "
                             "calibration_function= of the kernel or CausalLMScorer.calibrated")
        return _distance_scores(self.centroids, as_vector(hidden_state, "hidden_calibration.inference"))

    __call__ = inference


# --------------------------------------------------------------------------- kNN
class knn_prompting(_demonstration_query_trained):
    """kNN prompting (Xu et al. 2023): majority vote of the nearest full-vocabulary anchors.

    ``feedforward`` must return ``(probs, full_vocab_logits)``: element [-1] is
    the anchor.
    """

    def __init__(self, label_space: Sequence[str], knn_k: int = 3) -> None:
        super().__init__(label_space)
        check_int(knn_k, "knn_k", minimum=1, at=f" in {type(self).__name__}")
        self.knn_k = knn_k
        self.anchors: Any = None
        self.anchor_labels: List[int] = []
        self.label_counts: List[int] = [0] * len(self.label_space)

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> None:
        self.anchors, self.anchor_labels, self.failed, self.trained = None, [], False, False
        filed = self._collect(default_prompt_maker, feedforward, calibration_set, calibration_number, k, element=-1)
        self.anchors = _stack([vector for vector, _ in filed])
        self.anchor_labels = [label for _, label in filed]
        groups = self._by_label(filed)
        self.label_counts = [0] * len(self.label_space) if groups is None else [len(g) for g in groups]
        if groups is None:
            self.failed = True
            return
        self._after_train(groups)
        self.trained = True

    def _after_train(self, groups: List[List[Any]]) -> None:
        """Hook for the centroid variant."""

    def _check_ready(self, full_vocab_prob: Any) -> Any:
        if self.anchors is None:
            raise RuntimeError(f"{type(self).__name__}.inference: call train() first")
        if full_vocab_prob is None:
            raise ValueError(f"{type(self).__name__}.inference: needs the full-vocabulary logits (second argument)")
        vector = as_vector(full_vocab_prob, f"{type(self).__name__}.inference")
        if vector.shape[0] != self.anchors.shape[1]:
            raise ValueError(f"{type(self).__name__}.inference: vector of length {vector.shape[0]}, anchors have "
                             f"length {self.anchors.shape[1]}")
        return vector

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:
        """softmax(votes of the knn_k nearest anchors); label_probs if training failed."""
        if self.failed:
            return label_space_prob
        distances = sequential_l2(self.anchors, self._check_ready(full_vocab_prob))
        votes = [0] * len(self.label_space)
        for _ in range(min(self.knn_k, len(distances))):
            nearest = first_argmin(distances)
            votes[self.anchor_labels[nearest]] += 1
            distances[nearest] = _PASSED
        return softmax(votes)

    __call__ = inference


class knn_prompt_centroid(knn_prompting):
    """kNN prompting against per-label centroids of the anchors (``knn_k`` is unused)."""

    def __init__(self, label_space: Sequence[str], knn_k: int = 3) -> None:
        super().__init__(label_space, knn_k)
        self.centroids: Any = None

    def train(self, default_prompt_maker: PromptMaker, feedforward: Feedforward, calibration_set: Any,
              calibration_number: int = DEFAULT_CALIBRATION_NUMBER, k: int = 4) -> None:
        self.centroids = None
        super().train(default_prompt_maker, feedforward, calibration_set, calibration_number, k)

    def _after_train(self, groups: List[List[Any]]) -> None:
        self.centroids = _stack([_sequential_mean(vectors) for vectors in groups])

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:
        """softmax([d₀ − d_c]) over full-vocab-to-centroid distances; label_probs if training failed."""
        if self.failed:
            return label_space_prob
        return _distance_scores(self.centroids, self._check_ready(full_vocab_prob))

    __call__ = inference


#: CamelCase aliases for readers who prefer class-style names
ContextualCalibration = contextual_calibration
DomainCalibration = domain_calibration
HiddenCalibration = hidden_calibration
KNNPrompting = knn_prompting
KNNPromptCentroid = knn_prompt_centroid


#: the original's name for kNN prompting
knn_prompt = knn_prompting
