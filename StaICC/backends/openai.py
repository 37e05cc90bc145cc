"""``openai``: any OpenAI-compatible server (vLLM, SGLang, llama.cpp, TGI, OpenAI itself).

``staicc run --model openai --model-args base_url=http://127.0.0.1:8000/v1,model=my-model``.
Standard library only: HTTP through :mod:`StaICC.backends.http` (no redirects followed, a total
``deadline`` and a ``max_response_bytes`` cap per request) and a bounded thread pool for concurrency.

Scoring modes (``scoring=``):

* ``sequence`` (default): ``/v1/completions`` with ``echo`` and ``logprobs`` on
  prompt + label; the score of a label is the sum of the log-probabilities of the
  tokens that cover the label text (the first one may straddle the prompt's last
  characters, as in the ``hf`` backend's joint tokenization).  Probabilities are the
  softmax over the labels.
* ``first_token``: the same request; only the first such token is read.
* ``top_logprobs``: one answer token's top-k list (``top_logprobs=k``, default 20; chat completions
  with ``chat=true``, otherwise completions); each label's probability is an interval and the
  recorded row the stated point value (:mod:`StaICC.backends.top_logprobs`).
* ``generate``: a short greedy answer (``/v1/chat/completions`` with ``chat=true``,
  otherwise ``/v1/completions``) mapped to a label by :mod:`StaICC.backends.generative`;
  a reasoning model's thinking section is cut off first (:mod:`StaICC.backends.thinking`),
  including one a server returns apart (``reasoning_content`` / ``reasoning``), whose
  tokens are counted where the server reports ``usage.completion_tokens_details.reasoning_tokens``.

The standard's ``last_token`` rule needs each label tokenized *alone*, which the API
does not expose, so it is refused, unless the server offers ``/tokenize`` and
``logprob_token_ids`` (vLLM) and ``label_logprobs=on|auto`` is given: then a prompt whose
labels are single next tokens is scored in one request that reads the server's prefix
cache (:mod:`StaICC.backends.openai_labels`).  Noisy-channel prompts (one per label) are scored in both log-probability
modes by the mean log-probability of each prompt's tokens, as the ``hf`` backend does.

The API key is read from the environment variable named by ``api_key_env`` and sent
only in the ``Authorization`` header: it is never part of the identity, an error
message or a log line, and a server that echoes it in generated text gets it replaced
by ``***`` before the text is stored (:mod:`StaICC.backends.secrets`).
"""
import json
import math
import os
import threading
import warnings
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import InvalidTypeError, InvalidValueError
from ..requests import Answer, Request
from ..validation import is_real
from .base import Backend
from . import _args, openai_labels, top_logprobs
from .openai_echo import MAX_LOGPROB, MissingLogprobsError, _check_coverage, _finite, _token_end
from .openai_labels import scoring_jobs
from .generative import AnswerMapper, ScoringModes, answer_instruction, default_messages
from .http import MAX_BACKOFF_SECONDS, RETRY_STATUSES, APIError, JSONClient, Limits  # noqa: F401  (re-exported)
from .secrets import redact_prefix, redact_text, redact_url, register_secret
from .scores import answers_from_scores
from .thinking import THINKING_ARGS, ThinkingRule, with_reasoning

SCORING = ("sequence", "first_token", "generate", "top_logprobs")
_OPENAI_ARGS = ("base_url", "model", "api_key_env", "scoring", "concurrency", "retries", "timeout", "backoff",
                "max_tokens", "chat", "system", "stop", "unparsed", "aliases", "postprocess", "answer_hook",
                "message_builder", "model_id", "requests_per_call", "deadline", "max_response_bytes",
                "label_logprobs", "top_logprobs") + THINKING_ARGS


def openai_backend(**arguments: Any) -> "OpenAIBackend":
    """The registry's ``openai`` factory (arguments as strings or Python values)."""
    return OpenAIBackend(**arguments)


class OpenAIBackend(ScoringModes, Backend):
    """An OpenAI-compatible HTTP server as a backend (see the module docstring)."""

    name = "openai"
    STANDARD_SCORING = "last_token"  # computable only with label_logprobs (/tokenize + logprob_token_ids)

    def __init__(self, **arguments: Any) -> None:
        _args.no_unknown("openai", arguments, _OPENAI_ARGS)
        get = arguments.get
        address = _checked_url(_args.as_str(get("base_url"), "base_url"))
        # only the client holds the address with its credentials; everything else sees it redacted
        self.base_url = redact_url(address)
        self.model = _args.as_str(get("model"), "model")
        self.api_key_env = _args.as_str(get("api_key_env", "OPENAI_API_KEY"), "api_key_env")
        self.scoring = _args.as_choice(get("scoring", "sequence"), "scoring", SCORING + ("last_token",))
        self.label_logprobs = _args.as_choice(get("label_logprobs", "off"), "label_logprobs",
                                              openai_labels.LABEL_LOGPROBS)
        if self.scoring == "last_token" and self.label_logprobs == "off":
            raise InvalidValueError("model argument scoring=last_token cannot be computed over an OpenAI-compatible API "
                                    "(it tokenizes each label alone) unless the server offers /tokenize and "
                                    "logprob_token_ids (vLLM): add label_logprobs=on; or use scoring=first_token (the same "
                                    "number for single-token labels), scoring=sequence, or the hf/vllm backends")
        self.top_k = _args.as_int(get("top_logprobs", top_logprobs.DEFAULT_K), "top_logprobs", minimum=1)
        self.concurrency = _args.as_int(get("concurrency", 8), "concurrency", minimum=1)
        self.retries = _args.as_int(get("retries", 5), "retries", minimum=0)
        self.timeout = _args.as_float(get("timeout", 120.0), "timeout", minimum=0.001)
        self.backoff = _args.as_float(get("backoff", 1.0), "backoff", minimum=0.0)
        self.max_tokens = _args.as_int(get("max_tokens", 8), "max_tokens", minimum=1)
        self.chat = _args.as_bool(get("chat", False), "chat")
        self.system = _args.as_str(get("system"), "system", optional=True)
        self.stop = _args.as_str(get("stop"), "stop", optional=True)
        self.model_id = _args.as_str(get("model_id"), "model_id", optional=True)
        self.requests_per_call = _args.as_int(get("requests_per_call", 64), "requests_per_call", minimum=1)
        self.message_builder = get("message_builder")
        if self.message_builder is not None and not callable(self.message_builder):
            raise InvalidTypeError("model argument message_builder must be callable (request -> messages)")
        self.mapper = AnswerMapper(get("unparsed", "uniform"), get("aliases"), get("postprocess"), get("answer_hook"),
                                   ThinkingRule.from_arguments(arguments))
        self.mapper.thinking.check_scoring(self.scoring)
        self.deadline = _args.as_float(get("deadline", 600.0), "deadline", minimum=0.001)
        self.max_response_bytes = _args.as_int(get("max_response_bytes", 64 << 20), "max_response_bytes", minimum=1)
        self._api_key = os.environ.get(self.api_key_env) or None
        register_secret(self._api_key)
        headers = {"Authorization": "Bearer " + self._api_key} if self._api_key else {}
        limits = Limits(timeout=self.timeout, deadline=self.deadline, max_response_bytes=self.max_response_bytes,
                        retries=self.retries, backoff=self.backoff)
        secrets = [self._api_key] if self._api_key else []
        self.client = JSONClient(address, headers=headers, secrets=secrets, hint=self._hint, limits=limits)
        self.root_client = JSONClient(openai_labels.server_root(address), headers=headers, secrets=secrets,
                                      hint=self._root_hint, limits=limits)
        self._pool: Optional[ThreadPoolExecutor] = None
        self._lock = threading.Lock()
        self._offers_label_tokens: Optional[bool] = None
        self._token_ids: Dict[Tuple[str, bool], List[int]] = {}

    # ------------------------------------------------------------------ HTTP
    def post(self, path: str, body: Dict[str, Any], *, root: bool = False, read: Any = None) -> Any:
        """POST JSON to ``base_url + path`` (the server root + path with ``root``, for ``/tokenize``)
        through the limited client (:mod:`StaICC.backends.http`); ``read`` runs on the answer within
        the request's deadline."""
        return (self.root_client if root else self.client).post(path, body, read)

    def _hint(self, status: int) -> str:
        if status in (401, 403):
            return (f" (authentication failed: put the key in the environment variable {self.api_key_env}, "
                    "or name another with api_key_env)")
        if status == 404:
            return f" (check base_url={self.base_url!r}; it usually ends in /v1)"
        return ""

    def _root_hint(self, status: int) -> str:
        """Advice for the server-root endpoint (``/tokenize``): a 404 there says the server lacks it, not
        that base_url is wrong."""
        if status == 404:
            root = redact_url(openai_labels.server_root(self.base_url))
            return (f" (the server offers no /tokenize at {root}/tokenize, where vLLM serves it beside /v1; "
                    "keep base_url as it is and use label_logprobs=off or auto, or a server that has it)")
        return self._hint(status)

    def _redact(self, text: str) -> str:
        return redact_text(text, [self._api_key] if self._api_key else [])

    def _redact_shown(self, text: str, limit: int) -> str:
        return redact_prefix(text, limit, [self._api_key] if self._api_key else [])

    def _map(self, function: Any, items: List[Any]) -> List[Any]:
        """``function`` over ``items`` with at most ``concurrency`` requests in flight, in order."""
        if self.concurrency == 1 or len(items) <= 1:
            return [function(item) for item in items]
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="staicc-openai")
            pool = self._pool
        return list(pool.map(function, items))

    # --------------------------------------------------------------- scoring
    def score(self, requests: Sequence[Request]) -> List[Answer]:
        if self.scoring == "generate":
            generated = self._map(self.generate_one, list(requests))
            return [self.mapper.answer(r, text, tokens) for r, (text, tokens) in zip(requests, generated)]
        if self.scoring == "top_logprobs":  # every bad list of the call is collected, not only the first
            return top_logprobs.answers_or_refusal(self._map(self.top_or_line, list(requests)))
        if self.uses_label_tokens():
            return openai_labels.score_label_tokens(self, requests)
        jobs = scoring_jobs(requests)
        values = self._map(lambda job: self.logprob_score(job[1], job[2]), jobs)
        return answers_from_scores(requests, values)

    # ------------------------------------------------- label-token scoring
    def uses_label_tokens(self) -> bool:
        """Whether label tokens are scored in one request per prompt (probes the server once; see openai_labels)."""
        if self.label_logprobs == "off" or self.scoring in ("generate", "top_logprobs"):
            return False
        if self._offers_label_tokens is None:
            try:
                ids = self.tokenize("Hello")
                probe = self.post("/completions", openai_labels.label_token_body(self.model, ids, ids[-1:]))
                openai_labels.read_label_logprobs(probe, ids[-1:], f"{self.base_url}/completions")
                self._offers_label_tokens = True
            except (APIError, ValueError, IndexError) as exc:
                if self.label_logprobs == "on" or self.scoring == "last_token":
                    raise APIError(f"label_logprobs={self.label_logprobs}: the server does not offer label-token "
                                   f"scoring ({exc})") from None
                self._offers_label_tokens = False
                from ..errors import StaICCWarning
                warnings.warn(f"openai backend: {self.switched_off()[0]}", StaICCWarning, stacklevel=3)
        return self._offers_label_tokens

    def tokenize(self, text: str, add_special_tokens: bool = True) -> List[int]:
        """The server's token ids of ``text`` (``POST /tokenize``), remembered per text."""
        key = (text, add_special_tokens)
        if key not in self._token_ids:
            response = self.post("/tokenize", openai_labels.tokenize_body(self.model, text, add_special_tokens),
                                 root=True)
            self._token_ids[key] = openai_labels.token_ids(response, "/tokenize")
        return self._token_ids[key]

    def logprob_score(self, context: str, continuation: Optional[str]) -> float:
        """Summed (or first) log-probability of ``continuation`` after ``context``; None: mean over ``context``."""
        return self.score_echo(self.post("/completions", self.echo_body(context + (continuation or ""))),
                               context, continuation)

    def echo_body(self, text: str) -> Dict[str, Any]:
        """The ``/completions`` body that echoes ``text`` with its tokens' log-probabilities."""
        return {"model": self.model, "prompt": text, "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0}

    def score_echo(self, response: Dict[str, Any], context: str, continuation: Optional[str]) -> float:
        """The score :meth:`logprob_score` reads from a ``/completions`` response to :meth:`echo_body`."""
        text = context + (continuation or "")
        tokens, logprobs, offsets = self._echoed(response, text)
        if continuation is None:
            values = [lp for lp in logprobs if lp is not None]
            if not values:
                raise MissingLogprobsError(f"{self.base_url}/completions echoed no log-probability for the "
                                           f"noisy-channel prompt {context[:60]!r}; it needs at least 2 tokens")
            return math.fsum(values) / len(values)
        boundary = len(context)
        picked = [lp for k, lp in enumerate(logprobs) if _token_end(offsets, k, len(text)) > boundary]
        if not picked:
            raise MissingLogprobsError(f"{self.base_url}/completions echoed no token covering the label "
                                       f"{continuation!r}")
        if any(lp is None for lp in picked):
            raise MissingLogprobsError(f"{self.base_url}/completions returned null log-probabilities for the "
                                       f"label {continuation!r}; use scoring=generate")
        return picked[0] if self.scoring == "first_token" else math.fsum(picked)

    def _echoed(self, response: Dict[str, Any], text: str) -> Tuple[List[str], List[Optional[float]], List[int]]:
        """The echoed prompt's tokens, log-probabilities and character offsets (generated tokens dropped)."""
        where = f"{self.base_url}/completions"
        hint = (" The server must support echo=true with logprobs on /v1/completions (prompt log-probabilities); "
                "use scoring=generate otherwise.")
        choices = response.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise MissingLogprobsError(f"{where} returned no choices." + hint)
        logprobs = choices[0].get("logprobs")
        if not isinstance(logprobs, dict):
            raise MissingLogprobsError(f"{where} returned no logprobs object in choices[0]." + hint)
        missing = [k for k in ("tokens", "token_logprobs", "text_offset") if not isinstance(logprobs.get(k), list)]
        if missing:
            raise MissingLogprobsError(f"{where} returned logprobs without {', '.join(missing)}." + hint)
        tokens, values, offsets = logprobs["tokens"], logprobs["token_logprobs"], logprobs["text_offset"]
        if not (len(tokens) == len(values) == len(offsets)):
            raise MissingLogprobsError(f"{where} returned logprobs lists of different lengths." + hint)
        echoed_text = choices[0].get("text")
        if isinstance(echoed_text, str) and not echoed_text.startswith(text):
            raise MissingLogprobsError(f"{where} did not echo the prompt (echo=true ignored)." + hint)
        prompt_tokens = _check_coverage(where, tokens, offsets, text, hint)
        keep = range(prompt_tokens)
        for k in keep:
            if values[k] is not None and not is_real(values[k]):
                raise MissingLogprobsError(f"{where} returned a non-numeric log-probability {repr(values[k])[:40]}.")
            if values[k] is not None and not (_finite(values[k]) and values[k] <= MAX_LOGPROB):
                raise MissingLogprobsError(f"{where} returned the impossible log-probability {repr(values[k])[:40]} for the "
                                           f"token at offset {offsets[k]} (a log-probability is finite and <= 0)")
        return tokens[:prompt_tokens], values[:prompt_tokens], offsets[:prompt_tokens]

    def generate_one(self, request: Request) -> Tuple[str, Optional[int]]:
        """One greedy answer (chat completions with ``chat``, else completions) and its thinking tokens."""
        path, body = self.generation_request(request)
        return self.post(path, body, read=lambda response: (self.generated_text(response, path),
                                                            reasoning_tokens(response)))

    def top_one(self, request: Request) -> Answer:
        """The answer read from the first answer token's top-k list (one line naming the answer if it is bad)."""
        path, body = self.top_request(request)
        return self.post(path, body, read=lambda response: self.top_answer(response, path, request))

    def top_or_line(self, request: Request) -> Any:
        """:meth:`top_one`'s answer, or the line saying why its top-k list is refused."""
        return top_logprobs.answer_or_line(self.top_one, request)

    def top_request(self, request: Request) -> Tuple[str, Dict[str, Any]]:
        """(path, body) asking for one answer token and its top-k list (the Batch API sends the same)."""
        top_logprobs.check_request(request)
        path, body = self.generation_request(request)
        return path, top_logprobs.request_body(body, self.chat, self.top_k)

    def top_answer(self, response: Any, path: str, request: Request) -> Answer:
        """The answer a response to :meth:`top_request` gives, its list checked (one line if it is bad)."""
        try:
            entries = top_logprobs.checked_entries(response, self.chat, self.top_k, self.base_url + path)
        except MissingLogprobsError as exc:
            raise MissingLogprobsError(top_logprobs.bad_answer_line(request, exc)) from None
        return top_logprobs.answer_of(entries, request)

    def generation_request(self, request: Request) -> Tuple[str, Dict[str, Any]]:
        """(path, body) of the greedy answer to ``request``: chat completions with ``chat``, else completions."""
        if self.chat:
            system = answer_instruction(request.label_space) if self.system == "labels" else self.system
            messages = (self.message_builder or (lambda r: default_messages(r, system)))(request)
            body: Dict[str, Any] = {"model": self.model, "messages": messages,
                                    "max_tokens": self.generation_limit(self.max_tokens), "temperature": 0}
            path = "/chat/completions"
        else:
            if request.noisy_channel:
                raise InvalidValueError("scoring=generate cannot answer noisy-channel prompts (one prompt per label)")
            body = {"model": self.model, "prompt": request.prompt, "max_tokens": self.generation_limit(self.max_tokens),
                    "temperature": 0}
            path = "/completions"
        if self.stop is not None:
            body["stop"] = [self.stop]
        return path, body

    def generated_text(self, response: Dict[str, Any], path: str) -> str:
        """The generated text of a response to :meth:`generation_request`'s body; reasoning the server
        returned apart is written back as a thinking section before it (unless ``thinking=off``)."""
        try:
            choice = response["choices"][0]
            text = choice["message"]["content"] if self.chat else choice["text"]
            reasoning = _reasoning(choice["message"]) if self.chat else None
        except (KeyError, IndexError, TypeError):
            raise APIError(f"{self.base_url}{path} returned no generated text in choices[0]: "
                           f"{self._redact_shown(json.dumps(response), 200)}") from None
        # a reasoning parser leaves content null while the thinking section is unfinished
        finished = text is not None or choice.get("finish_reason") != "length"
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise APIError(f"{self.base_url}{path} returned {type(text).__name__} as generated text")
        if reasoning is not None and self.mapper.thinking.mode != "off":
            text = with_reasoning(text, reasoning, finished, self.mapper.thinking)
        return self._redact(text)  # a server echoing the key must not get it stored in samples or the cache

    def switched_off(self) -> List[str]:
        """The optimisation this server could not take (label-token log-probabilities), and why; [] otherwise."""
        if self._offers_label_tokens is not False:
            return []
        return ["label-token log-probabilities (label_logprobs=auto): the server offers no /tokenize or "
                "logprob_token_ids, so each label is scored by an echo request of its own"]

    def numerics(self) -> Dict[str, Any]:
        """What the answers' last bits depend on beyond the identity (the server's own kernels are not known here)."""
        return {"switched_off": self.switched_off()}

    # -------------------------------------------------------------- identity
    def identity(self) -> Dict[str, Any]:
        identity: Dict[str, Any] = {"backend": "openai", "scoring": self.scoring}
        if self.scoring == "top_logprobs":
            identity.update(top_logprobs.identity_part(self.top_k, self.chat, self.system, self.message_builder))
        if self.label_logprobs != "off" and self.scoring not in ("generate", "top_logprobs"):
            identity["label_logprobs"] = "token_ids" if self.uses_label_tokens() else openai_labels.FALLBACK_NOTE
        if self.model_id is not None:
            identity["model_id"] = self.model_id
        else:
            identity.update({"base_url": _public_url(self.base_url), "model": self.model})
        return self.with_generation_identity(identity, max_tokens=self.max_tokens, stop=self.stop)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def __repr__(self) -> str:
        return f"OpenAIBackend({self.identity()!r})"


def _reasoning(message: Any) -> Optional[str]:
    """The reasoning a server returned beside the answer (vLLM and SGLang: ``reasoning_content``;
    newer vLLM: ``reasoning``), or None."""
    if not isinstance(message, dict):
        raise InvalidTypeError("message is not an object")
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str):
            return value
    return None


def reasoning_tokens(response: Dict[str, Any]) -> Optional[int]:
    """The thinking tokens a server reports (``usage.completion_tokens_details.reasoning_tokens``), or None."""
    usage = response.get("usage") if isinstance(response, dict) else None
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    value = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return value if type(value) is int and value >= 0 else None


def _checked_url(url: str) -> str:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise InvalidValueError(f"model argument base_url must be an http(s) URL such as http://127.0.0.1:8000/v1, got {redact_url(url)!r}")
    return url.rstrip("/")


def _public_url(url: str) -> str:
    """The URL without user info or query string (either may carry a secret)."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.port:
        host += f":{parsed.port}"
    return urllib.parse.urlunsplit((parsed.scheme, host, parsed.path, "", ""))
