"""Prompt-editing baselines: PPL-ICL instruction choice and SA-ICL / TopK demonstrations.

Fixes relative to the original StaICC:

* ``PPL_ICL`` accepts ``cache_empty=None`` and raises a clear ValueError when
  neither an instruction set nor an experimentor is given.
* ``SA_ICL`` no longer truncates the experimentor's demonstration set in place
  (a caller's experimentor kept fewer rows afterwards).  Candidate anchors are restricted to the first
  ``demonstration_set_cut`` rows instead; since sampler indexes below the cut
  address the same rows, prompts are identical to the original's.
* An encoding failure raises (with the row index) instead of being skipped,
  which used to misalign anchors and demonstration indexes.
* ``inference_interface`` keeps its per-test-index semantics but checks that
  it received one prompt per test item.

Kept on purpose (standard behaviour): the candidate demonstration orders are
the *first* 10 ordered 4-permutations of the 5 nearest demonstrations (the
original's shuffle result was discarded).
"""
import itertools
from typing import Any, Callable, List, Optional, Sequence

from ..errors import InvalidValueError, OperationError
from ..backends.kernels import model_device, standard_ICL_inference_with_torch_Causal_LM
from ..extras import require
from ..metrics import argmin as first_argmin
from ..validation import check_int
from .vectors import as_vector, sequential_l2

__all__ = ["PPL_ICL", "SA_ICL"]

_PASSED = 1e10  # distance given to an already chosen demonstration (Top-k)


def _instruction_loss(model: Any, tokenizer: Any, instruction: str) -> float:
    """Mean causal-LM loss of the instruction alone, labels = input ids."""
    torch = require("torch", "PPL_ICL")
    input_ids = tokenizer(instruction, return_tensors="pt")["input_ids"].to(model_device(model))
    if input_ids.shape[1] < 2:
        raise InvalidValueError(f"PPL_ICL: the instruction {instruction!r} has fewer than 2 tokens; its loss is undefined")
    with torch.no_grad():
        return float(model(input_ids=input_ids, labels=input_ids).loss.float().item())


def PPL_ICL(model: Any, tokenizer: Any, instruction_set: Optional[Sequence[str]] = None, experimentor: Any = None,
            cache_empty: Optional[Callable[[], Any]] = None) -> str:
    """Pick the instruction with the lowest perplexity (first minimum); install it on the experimentor.

    Without ``instruction_set`` the 5 paraphrases of the experimentor's dataset
    (``ppl_icl_instructions``) are used.
    """
    if instruction_set is None:
        if experimentor is None:
            raise InvalidValueError("PPL_ICL: give an instruction_set, or an experimentor whose dataset's "
                                    "ppl_icl_instructions are used")
        from ..datasets import dataset_constants
        instruction_set = dataset_constants(experimentor.dataset_name)["ppl_icl_instructions"]
    if isinstance(instruction_set, str) or len(instruction_set) == 0 or \
            not all(isinstance(i, str) for i in instruction_set):
        raise InvalidValueError(f"PPL_ICL: instruction_set must be a non-empty list of strings, got {instruction_set!r}")
    losses = []
    for instruction in instruction_set:
        if cache_empty is not None:
            cache_empty()
        losses.append(_instruction_loss(model, tokenizer, instruction))
    selected = instruction_set[first_argmin(losses)]
    if experimentor is not None:
        experimentor.prompt_former.change_instruction(selected)
    return selected


class SA_ICL:
    """Self-adaptive ICL (Wu et al. 2023) and TopK demonstration selection by hidden-state distance.

    Construction encodes the first ``demonstration_set_cut`` demonstrations
    (their inputs, no template) with the one-prompt kernel's last-layer hidden state at the last position and
    installs a placeholder sampler (T rows of [0]·k, so R = 1).  With a
    ``scorer`` (a ``CausalLMScorer``) encoding and candidate scoring run in
    batches instead of through the one-prompt kernel.  Then either

    * ``set_TopK_to_demonstration(k)``: every test item gets its k nearest
      demonstrations, and the experimentor is run with any inference; or
    * run ``experimentor(inference_interface, batched_inference=True)``: each
      test item picks, among the first 10 orders of its 5 nearest
      demonstrations, the prompt with the lowest prediction entropy.
    """

    def __init__(self, model: Any, tokenizer: Any, experimentor: Any, cache_empty: Optional[Callable[[], Any]] = None,
                 calibrate_function: Optional[Callable[..., Any]] = None, demonstration_set_cut: Optional[int] = 512,
                 scorer: Any = None) -> None:
        self.scorer = scorer
        self.model = model
        self.tokenizer = tokenizer
        self.experimentor = experimentor
        self.cache_empty = cache_empty
        self.calibrate_function = calibrate_function
        self.demonstration_set = experimentor.demonstration_set()
        self.test_set = experimentor.test_set()
        self.label_space = experimentor.get_label_space()
        size = len(self.demonstration_set)
        if demonstration_set_cut is not None:
            check_int(demonstration_set_cut, "demonstration_set_cut", minimum=1, at=" in SA_ICL")
            size = min(size, demonstration_set_cut)
        self.anchor_count = size
        self.anchors = require("numpy", "SA_ICL").stack(self._encode_demonstrations(size))
        k = experimentor.get_k()
        experimentor.set_demonstration_sampler([[0] * k for _ in range(len(self.test_set))])

    # ------------------------------------------------------------ encoding
    @staticmethod
    def _text(inputs: Sequence[str]) -> str:
        """The inputs with no template (multi-input rows joined by a space; no standard dataset has one)."""
        return inputs[0] if len(inputs) == 1 else " ".join(inputs)

    def _encode(self, inputs: Sequence[str]) -> Any:
        """Last-layer hidden state at the last token of the inputs."""
        if self.scorer is not None:
            _, hidden = self.scorer.feedforward_with_hidden_state(self._text(inputs), self.label_space)
        else:
            _, hidden = standard_ICL_inference_with_torch_Causal_LM(
                self._text(inputs), self.model, self.tokenizer, self.label_space, self.cache_empty,
                return_hidden_state=True)
        return as_vector(hidden, "SA_ICL hidden state")

    def _encode_many(self, rows: List[Sequence[str]]) -> Optional[List[Any]]:
        """All encodings in one batched pass with the scorer; None without one."""
        if self.scorer is None:
            return None
        texts = [self._text(inputs) for inputs in rows]
        return [as_vector(hidden, "SA_ICL hidden state")
                for _, hidden in self.scorer.feedforward_with_hidden_state(texts, self.label_space)]

    def _encode_demonstrations(self, size: int) -> List[Any]:
        """Anchors for rows 0..size-1; a failure names the row instead of being skipped."""
        batched = self._encode_many([self.demonstration_set[i][0] for i in range(size)])
        if batched is not None:
            return batched
        anchors = []
        for index in range(size):
            try:
                anchors.append(self._encode(self.demonstration_set[index][0]))
            except Exception as error:
                raise OperationError(f"SA_ICL: encoding demonstration {index} of {self.experimentor.dataset_name!r} "
                                     f"failed: {error}") from error
        return anchors

    def _predict(self, prompts: List[str]) -> List[Any]:
        """The one-prompt kernel (with the calibration) per prompt, or the scorer's batched equivalent."""
        if self.scorer is not None:
            inference = self.scorer.calibrated(self.calibrate_function) if self.calibrate_function else self.scorer
            return inference(prompt=prompts, label_space=self.label_space)
        return [standard_ICL_inference_with_torch_Causal_LM(p, self.model, self.tokenizer, self.label_space,
                                                            self.cache_empty, self.calibrate_function)
                for p in prompts]

    # ------------------------------------------------------------- top-k
    def topk(self, query_inputs: Sequence[str], m: int, encoded: Any = None) -> List[int]:
        """Indexes of the m nearest demonstrations (first minimum on ties), nearest first."""
        check_int(m, "m", minimum=0, maximum=self.anchor_count, at=" in SA_ICL.topk")
        distances = sequential_l2(self.anchors, self._encode(query_inputs) if encoded is None else encoded)
        chosen = []
        for _ in range(m):
            nearest = first_argmin(distances)
            chosen.append(nearest)
            distances[nearest] = _PASSED
        return chosen

    def set_TopK_to_demonstration(self, k: int) -> None:
        """Sampler row i = the k nearest demonstrations of test item i (R becomes 1)."""
        queries = [self.test_set[i][0] for i in range(len(self.test_set))]
        encoded = self._encode_many(queries) or [None] * len(queries)
        sampler = [self.topk(query, k, state) for query, state in zip(queries, encoded)]
        self.experimentor.set_demonstration_sampler(sampler)

    # ---------------------------------------------------------- SA-ICL
    def _candidate_prompts(self, query_index: int, nearest_k: int, inference_demos_number: int,
                           return_length: int, encoded: Any = None) -> List[str]:
        """Prompts for the first ``return_length`` ordered picks of the nearest demonstrations."""
        query_inputs = self.test_set[query_index][0]
        top = self.topk(query_inputs, nearest_k, encoded)
        candidates = itertools.islice(itertools.permutations(top, inference_demos_number), return_length)
        writer = self.experimentor.prompt_former
        return [writer.write_prompt_from_dataline([self.demonstration_set[i] for i in order], query_inputs)
                for order in candidates]

    @staticmethod
    def _lowest_entropy(results: List[Any]) -> Any:
        """The first result with the minimum entropy (a row is softmaxed first unless it is an exact probability vector)."""
        from ..metrics import entropy
        best, best_entropy = None, None
        for result in results:
            value = entropy(list(result))
            if best_entropy is None or value < best_entropy:
                best, best_entropy = result, value
        return best

    def _inference(self, query_index: int, nearest_k: int = 5, inference_demos_number: int = 4,
                   return_length: int = 10, _encoded: Any = None) -> Any:
        """The prediction of the candidate order with the lowest entropy (first minimum)."""
        prompts = self._candidate_prompts(query_index, nearest_k, inference_demos_number, return_length, _encoded)
        return self._lowest_entropy(self._predict(prompts))

    def inference_interface(self, prompt: Sequence[Any], label_space: Sequence[str] = None, nearest_k: int = 5,  # noqa: ARG002  (the original's inference_interface signature)
                            inference_demos_number: int = 4, return_length: int = 10) -> List[Any]:
        """Batched inference: prediction i is test item i's (the prompt texts are not used).

        With a scorer, every candidate prompt of every test item is scored in
        one batched call.
        """
        if len(prompt) != len(self.test_set):
            raise InvalidValueError(f"SA_ICL.inference_interface: expected one prompt per test item ({len(self.test_set)}), "
                                    f"got {len(prompt)}; run it with batched_inference=True right after constructing "
                                    "SA_ICL (its sampler has R = 1)")
        count = len(prompt)
        if self.scorer is None:
            return [self._inference(i, nearest_k, inference_demos_number, return_length) for i in range(count)]
        encoded = self._encode_many([self.test_set[i][0] for i in range(count)])
        per_query = [self._candidate_prompts(i, nearest_k, inference_demos_number, return_length, encoded[i])
                     for i in range(count)]
        results = self._predict([p for prompts in per_query for p in prompts])
        out, start = [], 0
        for prompts in per_query:
            out.append(self._lowest_entropy(results[start:start + len(prompts)]))
            start += len(prompts)
        return out
