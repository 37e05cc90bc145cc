"""Evaluate a HuggingFace causal LM on StaICC-Normal, optionally with a calibration.

    pip install StaICC[hf]
    python examples/hf_model.py meta-llama/Llama-3.2-1B --device cuda
    python examples/hf_model.py ./my-local-model --calibration contextual --datasets GLUE-SST2 rotten_tomatoes
    python examples/hf_model.py --tiny --datasets 0 1 --k 1          # offline smoke run, random model

The five lines that matter::

    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16).to("cuda")
    tokenizer = AutoTokenizer.from_pretrained(name)
    scorer = CausalLMScorer(model, tokenizer)
    results = Normal()(scorer, batched_inference=True)
    print(results["Averaged results"])
"""
import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from StaICC import Normal  # noqa: E402
from StaICC.extras import require  # noqa: E402
from StaICC.methods import calibration as sc  # noqa: E402
from StaICC.backends.causal_lm import CausalLMScorer  # noqa: E402

CALIBRATIONS = ["none", "contextual", "domain", "batch", "hidden", "knn", "knn_centroid"]


def load(args: argparse.Namespace) -> Tuple[Any, Any]:
    torch = require("torch", "examples/hf_model.py")  # a missing extra names its install command
    if args.tiny:
        from StaICC.backends.tiny_models import tiny_causal_lm, tiny_tokenizer
        demonstrations = Normal(k=0, datasets=[0])[0].demonstration_set()
        texts = [demonstrations[i][0][0] for i in range(len(demonstrations))]
        tokenizer = tiny_tokenizer(texts)
        return tiny_causal_lm(vocab_size=len(tokenizer)).to(args.device), tokenizer
    transformers = require("transformers", "examples/hf_model.py")
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    dtype_keyword = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model, **{dtype_keyword: dtype})
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.model)
    return model.to(args.device), tokenizer


def calibrated_inference(name: str, scorer: CausalLMScorer, experimentor: Any) -> Tuple[Callable, bool]:
    """The inference function for one experimentor and whether it is batched."""
    labels = experimentor.get_label_space()
    maker = experimentor.prompt_former.write_prompt_from_dataline
    calibration_set = experimentor.calibration_set()
    k = experimentor.get_k()
    if name == "none":
        return scorer, True
    if name == "batch":
        return (lambda prompt, label_space: sc.batch_calibration(scorer(prompt=prompt, label_space=label_space))), True
    calibration, feedforward = {
        "contextual": (sc.contextual_calibration(labels), scorer),
        "domain": (sc.domain_calibration(labels), scorer),
        "hidden": (sc.hidden_calibration(labels), scorer.feedforward_with_hidden_state),
        "knn": (sc.knn_prompting(labels), scorer.feedforward_with_full_vocab),
        "knn_centroid": (sc.knn_prompt_centroid(labels), scorer.feedforward_with_full_vocab),
    }[name]
    calibration.train(maker, feedforward, calibration_set, k=k)
    return scorer.calibrated(calibration.inference), True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", nargs="?", help="HuggingFace model name or local directory")
    parser.add_argument("--tiny", action="store_true", help="use a tiny random model (no download)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--datasets", nargs="*", default=None, help="names or indexes (default: all ten)")
    parser.add_argument("--scoring", default="last_token", choices=["last_token", "first_token", "sequence"])
    parser.add_argument("--calibration", default="none", choices=CALIBRATIONS)
    args = parser.parse_args()
    if not args.tiny and not args.model:
        parser.error("give a model name/path, or --tiny")
    model, tokenizer = load(args)
    scorer = CausalLMScorer(model, tokenizer, scoring=args.scoring)
    datasets = [int(d) if d.isdigit() else d for d in args.datasets] if args.datasets else None
    bench = Normal(k=args.k, datasets=datasets) if datasets else Normal(k=args.k)
    if args.calibration == "none":
        results = bench(scorer, batched_inference=True)
    else:  # each dataset trains its own calibration on its calibration set
        divided = {}
        for i in range(len(bench)):
            experimentor = bench[i]
            inference, batched = calibrated_inference(args.calibration, scorer, experimentor)
            divided[experimentor.dataset_name] = experimentor.auto_run(forward_inference=inference,
                                                                       batched_inference=batched)[0]
        metrics = list(next(iter(divided.values())))
        averaged = {m: sum(d[m] for d in divided.values()) / len(divided) for m in metrics}
        results = {"Divided results": divided, "Averaged results": averaged}
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
