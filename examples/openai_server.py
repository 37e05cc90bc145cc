"""Evaluate a model behind any OpenAI-compatible server (vLLM, SGLang, llama.cpp, TGI) on StaICC-Normal.

    # serve a model, e.g. with vLLM (GPU) or llama.cpp (CPU):
    vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2 --port 8000
    python examples/openai_server.py --base-url http://127.0.0.1:8000/v1 --model meta-llama/Llama-3.1-8B

    # chat/API models: generative answers parsed to labels
    python examples/openai_server.py --base-url https://api.example.com/v1 --model some-chat-model \\
        --scoring generate --chat --api-key-env MY_API_KEY

    # offline dry run: a tiny random model served over HTTP on 127.0.0.1 by the test server
    python examples/openai_server.py --tiny --datasets 0 --k 1

The lines that matter::

    backend = make_backend("openai", base_url=url, model=name, scoring="sequence", concurrency=16)
    results = Normal()(as_inference(backend), batched_inference=True)
"""
import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, List

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from StaICC import Normal  # noqa: E402
from StaICC.backends.base import Backend  # noqa: E402
from StaICC.backends.registry import make_backend  # noqa: E402
from StaICC.requests import Request  # noqa: E402


def as_inference(backend: Backend) -> Callable[..., List[Any]]:
    """A batched inference function over a backend (noisy-channel prompts arrive as lists)."""
    def inference(prompt: List[Any], label_space: List[str]) -> List[Any]:
        requests = [Request(tuple(p) if isinstance(p, list) else p, tuple(label_space)) for p in prompt]
        answers = []
        for start in range(0, len(requests), backend.batch_size):
            answers.extend(backend.score(requests[start:start + backend.batch_size]))
        unparsed = sum(not a.parsed for a in answers)
        if unparsed:
            print(f"  {unparsed} of {len(answers)} answers named no label", file=sys.stderr)
        return [a.prediction for a in answers]
    return inference


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--scoring", default="sequence", choices=["sequence", "first_token", "generate"])
    parser.add_argument("--chat", action="store_true")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--tiny", action="store_true", help="serve a tiny random model on 127.0.0.1 and use it")
    args = parser.parse_args()
    server = None
    if args.tiny:
        sys.path.insert(0, str(ROOT / "tests"))
        from backend_helpers import tiny_pair
        from openai_reference_server import ReferenceServer
        server = ReferenceServer(*tiny_pair())
        args.base_url, args.model = server.base_url, "tiny"
    if not args.base_url or not args.model:
        parser.error("--base-url and --model are required (or --tiny)")
    backend = make_backend("openai", base_url=args.base_url, model=args.model, scoring=args.scoring,
                           chat=args.chat, api_key_env=args.api_key_env, concurrency=args.concurrency)
    datasets = [int(d) if d.isdigit() else d for d in args.datasets] if args.datasets else None
    try:
        bench = Normal(k=args.k, datasets=datasets) if datasets else Normal(k=args.k)
        results = bench(as_inference(backend), batched_inference=True)
    finally:
        backend.close()
        if server is not None:
            server.close()
    print("model:", json.dumps(backend.identity()))
    print("non-standard settings:", backend.non_standard or "none")
    print(json.dumps(results["Averaged results"], indent=1))


if __name__ == "__main__":
    main()
