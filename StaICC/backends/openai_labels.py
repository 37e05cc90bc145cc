"""Label-token scoring over an OpenAI-compatible server that offers ``/tokenize`` and ``logprob_token_ids`` (vLLM).

With ``label_logprobs=on`` (or ``auto``) the ``openai`` backend tokenizes through the
server's ``POST /tokenize`` (at the server root, beside ``/v1``) and scores a prompt whose
labels are single next tokens with ONE ``/v1/completions`` request: the prompt as token
ids, ``max_tokens=1``, ``logprob_token_ids`` and ``allowed_token_ids`` set to the label
tokens, ``return_tokens_as_token_ids`` so that the returned ``top_logprobs`` are keyed
``token_id:N``.  Such a request reads the server's prefix cache (an echo request with
prompt log-probabilities does not) and scores every label at once.  This also makes the
standard's ``last_token`` rule computable over HTTP (each label tokenized alone).

``auto`` probes the server once: where either endpoint is missing, the backend keeps the
echo path and its identity says so (``label_logprobs: "echo (...)"``), which provenance
records.  Requests whose labels are not single next tokens (multi-token labels in
``sequence`` mode, noisy-channel prompts) always take the echo path.
"""
import urllib.parse
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidValueError
from ..requests import Request
from ..validation import is_int, is_real

LABEL_LOGPROBS = ("off", "on", "auto")
FALLBACK_NOTE = "echo (the server offers no /tokenize or logprob_token_ids)"


def server_root(base_url: str) -> str:
    """``http://host:8000/v1`` -> ``http://host:8000``: where vLLM serves ``/tokenize``."""
    parsed = urllib.parse.urlsplit(base_url)
    path = parsed.path[:-3] if parsed.path.endswith("/v1") else parsed.path
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, path, parsed.query, ""))


def tokenize_body(model: str, text: str, add_special_tokens: bool = True) -> Dict[str, Any]:
    return {"model": model, "prompt": text, "add_special_tokens": add_special_tokens}


def token_ids(response: Dict[str, Any], where: str) -> List[int]:
    """The ``tokens`` list of a ``/tokenize`` response, checked."""
    tokens = response.get("tokens")
    if not isinstance(tokens, list) or not all(is_int(t) for t in tokens):
        raise InvalidValueError(f"{where} returned no list of token ids under 'tokens'")
    return tokens


def label_token_body(model: str, prompt_ids: Sequence[int], label_ids: Sequence[int]) -> Dict[str, Any]:
    """The one ``/completions`` body that scores every label token after ``prompt_ids``."""
    distinct = sorted(set(label_ids))
    return {"model": model, "prompt": list(prompt_ids), "max_tokens": 1, "temperature": 0,
            "logprobs": len(distinct), "logprob_token_ids": distinct, "allowed_token_ids": distinct,
            "return_tokens_as_token_ids": True}


def read_label_logprobs(response: Dict[str, Any], label_ids: Sequence[int], where: str) -> List[float]:
    """Each label token's log-probability from ``choices[0].logprobs.top_logprobs[0]`` ("token_id:N" keys)."""
    try:
        table = response["choices"][0]["logprobs"]["top_logprobs"][0]
    except (KeyError, IndexError, TypeError):
        raise InvalidValueError(f"{where} returned no top_logprobs for the generated position") from None
    if not isinstance(table, dict):
        raise InvalidValueError(f"{where} returned top_logprobs[0] as {type(table).__name__}, expected an object")
    values = []
    for token in label_ids:
        value = table.get(f"token_id:{token}")
        if not is_real(value):
            raise InvalidValueError(f"{where} returned no log-probability for the label token {token} "
                                    "(does the server honour logprob_token_ids and return_tokens_as_token_ids?)")
        try:
            values.append(float(value))
        except OverflowError:
            raise InvalidValueError(f"{where} returned a log-probability of {len(str(value))} digits for the label token "
                                    f"{token}") from None
    return values


class RemoteTokenizer:
    """The server's tokenizer through ``/tokenize``, shaped like a slow HF tokenizer for :func:`split_joint`."""

    is_fast = False

    def __init__(self, tokenize: Any) -> None:
        self.tokenize = tokenize  # text -> token ids

    def __call__(self, texts: Any) -> Dict[str, Any]:
        if isinstance(texts, str):
            return {"input_ids": self.tokenize(texts)}
        return {"input_ids": [self.tokenize(t) for t in texts]}


def label_query(scoring: str, prompt: str, labels: Sequence[str], tokenizer: RemoteTokenizer,
                label_alone: Any) -> Optional[Tuple[List[int], List[int]]]:
    """(context ids, one token id per label) when the labels are single next tokens, else None.

    ``last_token``: the prompt's ids and each label's last id tokenized alone (``label_alone``).
    ``first_token`` / ``sequence``: the joint tokenization split where the label starts; one
    common context is needed (``sequence`` also needs one-token continuations).
    """
    if scoring == "last_token":
        ids = []
        for label in labels:
            alone = label_alone(label)
            if not alone:
                raise InvalidValueError(f"openai backend: the label {label!r} tokenizes to no token")
            ids.append(alone[-1])
        return tokenizer(prompt)["input_ids"], ids
    from .joint_tokens import split_joint
    splits = split_joint(tokenizer, [(prompt, label) for label in labels], set(), "openai backend")
    if any(s.context != splits[0].context for s in splits):
        return None
    if scoring == "sequence" and any(len(s.continuation) != 1 for s in splits):
        return None
    return splits[0].context, [s.continuation[0] for s in splits]


def score_label_tokens(backend: Any, requests: Sequence[Any]) -> List[Any]:
    """The ``openai`` backend's answers: one ``/completions`` request per prompt whose labels are single
    next tokens, the echo path for the others (noisy channel, multi-token labels)."""
    from .scores import answers_from_scores
    tokenizer = RemoteTokenizer(backend.tokenize)
    jobs: List[Tuple[Any, ...]] = []
    for i, r in enumerate(requests):
        query = None if r.noisy_channel else label_query(backend.scoring, r.prompt, r.label_space, tokenizer,
                                                         backend.tokenize)
        if query is None:
            jobs.extend(("echo", i, context, continuation) for _, context, continuation in scoring_jobs([r]))
        else:
            jobs.append(("labels", i, query[0], query[1]))
    where = f"{backend.base_url}/completions"

    def run(job: Tuple[Any, ...]) -> List[float]:
        if job[0] == "echo":
            return [backend.logprob_score(job[2], job[3])]
        response = backend.post("/completions", label_token_body(backend.model, job[2], job[3]))
        return read_label_logprobs(response, job[3], where)
    values = [v for found in backend._map(run, jobs) for v in found]
    return answers_from_scores(requests, values)


def scoring_jobs(requests: Sequence[Request]) -> List[Tuple[int, str, Optional[str]]]:
    """(request number, context, continuation or None: the whole text) of every echo request to score."""
    jobs: List[Tuple[int, str, Optional[str]]] = []
    for i, r in enumerate(requests):
        if r.noisy_channel:
            jobs.extend((i, p, None) for p in r.prompt)
        else:
            jobs.extend((i, r.prompt, label) for label in r.label_space)  # type: ignore[misc]
    return jobs
