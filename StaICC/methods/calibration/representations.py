"""The calibrations trained on demonstration-query rows of a representation: hidden states and kNN.

:class:`hidden_calibration` compares a query's hidden state with per-label centroids;
:class:`knn_prompting` and :class:`knn_prompt_centroid` vote with the nearest full-vocabulary
distributions.  All three file one vector per sampled calibration query (k demonstrations
and the query), as :class:`_demonstration_query_trained` does.
"""
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from ...errors import InvalidValueError, OperationError
from ...metrics import argmin as first_argmin, softmax
from ...validation import check_int
from ..vectors import as_vector, sequential_l2
from .base import (DEFAULT_CALIBRATION_NUMBER, MISSING_CATEGORY_WARNING, Feedforward, PromptMaker, calibration,
                   _call, _checked_label_space, _checked_training, _distance_scores, _element, _label_index,
                   _sample_indexes, _sequential_mean, _stack)

_PASSED = 1e9  # distance given to an anchor that already voted (kNN)


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
        prompts, labels = self.training_queries(default_prompt_maker, calibration_set, calibration_number, k)
        vectors = [_element(_call(feedforward, prompt, self.label_space), element, f"{where} query {i}")
                   for i, prompt in enumerate(prompts)]
        return self._filed(vectors, labels)

    def training_queries(self, default_prompt_maker: Optional[PromptMaker], calibration_set: Any,
                         calibration_number: int = DEFAULT_CALIBRATION_NUMBER,
                         k: int = 4) -> Tuple[List[Any], List[int]]:
        """(prompts, query label indexes) training asks about: per calibration query, k demonstrations and one
        query row of the calibration set, drawn together from a fresh stream (with repetition).
        ``default_prompt_maker=None``: the labels only (each prompt None, none written)."""
        where = f"{type(self).__name__}.train"
        _checked_training(calibration_set, calibration_number, k, where)
        indexes = _sample_indexes(calibration_number * (k + 1), len(calibration_set))
        prompts, labels = [], []
        for i in range(calibration_number):
            chunk = indexes[i * (k + 1):(i + 1) * (k + 1)]
            query_inputs, query_label = calibration_set[chunk[k]]
            prompts.append(None if default_prompt_maker is None else
                           default_prompt_maker([calibration_set[j] for j in chunk[:k]], query_inputs))
            labels.append(_label_index(calibration_set, query_label, self.label_space, where))
        return prompts, labels

    def _filed(self, vectors: Sequence[Any], labels: Sequence[int]) -> List[Tuple[Any, int]]:
        """(vector, label index) pairs in filing order, each vector a 1-D array in its own element type."""
        where = f"{type(self).__name__}.train"
        return [(as_vector(vector, f"{where} query {i}"), label)
                for i, (vector, label) in enumerate(zip(vectors, labels))]

    def _by_label(self, filed: List[Tuple[Any, int]]) -> Optional[List[List[Any]]]:
        """Vectors grouped per label; None (with the standard's warning) if a label is missing."""
        groups: List[List[Any]] = [[] for _ in self.label_space]
        for vector, label in filed:
            if label >= len(groups):
                raise InvalidValueError(f"{type(self).__name__}.train: label index {label} is outside the label space "
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
        self._fit_filed(self._collect(default_prompt_maker, feedforward_with_hidden_state, calibration_set,
                                      calibration_number, k, element=1))

    def fit(self, hidden_states: Sequence[Any], labels: Sequence[int]) -> None:
        """Centroids of the hidden states of :meth:`training_queries`' prompts, per query label."""
        self._fit_filed(self._filed(hidden_states, labels))

    def _fit_filed(self, filed: List[Tuple[Any, int]]) -> None:
        self.centroids, self.failed, self.trained = None, False, False
        groups = self._by_label(filed)
        if groups is None:
            self.failed = True
            return
        self.centroids = _stack([_sequential_mean(vectors) for vectors in groups])
        self.trained = True

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:  # noqa: ARG002  (the calibration protocol's signature)
        """softmax([d₀ − d_c]) over hidden-to-centroid distances; label_probs if training failed."""
        if self.failed:
            return label_space_prob
        if self.centroids is None:
            raise OperationError("hidden_calibration.inference: call train() first")
        if hidden_state is None:
            raise InvalidValueError("hidden_calibration.inference: needs the hidden state (third argument); use "
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
        self._fit_filed(self._collect(default_prompt_maker, feedforward, calibration_set, calibration_number, k,
                                      element=-1))

    def fit(self, full_vocab_logits: Sequence[Any], labels: Sequence[int]) -> None:
        """The anchors: the full-vocabulary logits of :meth:`training_queries`' prompts, with their query labels."""
        self._fit_filed(self._filed(full_vocab_logits, labels))

    def _fit_filed(self, filed: List[Tuple[Any, int]]) -> None:
        self.anchors, self.anchor_labels, self.failed, self.trained = None, [], False, False
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
            raise OperationError(f"{type(self).__name__}.inference: call train() first")
        if full_vocab_prob is None:
            raise InvalidValueError(f"{type(self).__name__}.inference: needs the full-vocabulary logits (second argument)")
        vector = as_vector(full_vocab_prob, f"{type(self).__name__}.inference")
        if vector.shape[0] != self.anchors.shape[1]:
            raise InvalidValueError(f"{type(self).__name__}.inference: vector of length {vector.shape[0]}, anchors have "
                                    f"length {self.anchors.shape[1]}")
        return vector

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:  # noqa: ARG002  (the calibration protocol's signature)
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

    def _fit_filed(self, filed: List[Tuple[Any, int]]) -> None:
        self.centroids = None
        super()._fit_filed(filed)

    def _after_train(self, groups: List[List[Any]]) -> None:
        self.centroids = _stack([_sequential_mean(vectors) for vectors in groups])

    def inference(self, label_space_prob: Sequence[Any], full_vocab_prob: Any = None, hidden_state: Any = None) -> Any:  # noqa: ARG002  (the calibration protocol's signature)
        """softmax([d₀ − d_c]) over full-vocab-to-centroid distances; label_probs if training failed."""
        if self.failed:
            return label_space_prob
        return _distance_scores(self.centroids, self._check_ready(full_vocab_prob))

    __call__ = inference


#: CamelCase aliases for readers who prefer class-style names
HiddenCalibration = hidden_calibration
KNNPrompting = knn_prompting
KNNPromptCentroid = knn_prompt_centroid

#: the original's name for kNN prompting
knn_prompt = knn_prompting
