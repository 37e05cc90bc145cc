"""What ``staicc run`` prints beside its tables, for a suite run and a ``--methods`` run alike: the resolved
configuration (``--show-config``) and the lines that say a run or its writing failed and where the answers are."""
import sys
from typing import Any, Dict

from .common import one_line


def run_failed(config: Any, exc: BaseException) -> int:
    from ..cache import CacheError
    from .refused import print_refused
    exc = print_refused(exc)  # a line per answer a backend refused, then how many
    print(f"staicc: error: {one_line((str(exc) or type(exc).__name__).splitlines()[0])}", file=sys.stderr)
    if config.cache and not isinstance(exc, CacheError):
        print(f"staicc: the answers given so far are in {one_line(config.cache)}; run the same command to "
              "resume", file=sys.stderr)
    return 1


def config_text(config: Any, backend: Any, suite: Dict[str, Any]) -> str:
    """The resolved run as JSON: what lm-eval's --show_config prints, for this package's settings."""
    import json
    from ..results.provenance import redact
    benchmarks = {}
    for name, bench in suite.items():
        parts = bench.benchmarks() if hasattr(bench, "benchmarks") else {name: bench}
        benchmarks[name] = {part_name: part.dataset_names() for part_name, part in parts.items()}
    retriever = config.retriever
    limit = config.test_items.first_count if config.test_items is not None else None
    lite = config.test_items.lite_sample if config.test_items is not None else None
    shown = {"backend": config.model, "model_args": redact({k: str(v) for k, v in config.arguments.items()}),
             "identity": redact(backend.identity()), "benchmarks": benchmarks, "k": config.k,
             "noisy_channel": config.noisy_channel, "limit": limit,
             "lite": lite.description if lite is not None else None,
             "retriever": retriever.describe() if retriever is not None else None,
             "requests_per_call": config.requests_per_call or getattr(backend, "requests_per_call", None),
             "cache": config.cache, "output_dir": config.output_dir, "log_samples": config.log_samples}
    if config.methods:
        shown["methods"] = [method.describe() for method in config.methods]
    return "resolved configuration:\n" + json.dumps(shown, indent=1, default=str)


def write_failed(config: Any, exc: OSError) -> int:
    """One line saying what was not written and where the answers are (the run's files were left as they were)."""
    print(f"staicc: error: cannot write the run directory {one_line(config.output_dir)}: "
          f"{one_line(exc.strerror or str(exc))}", file=sys.stderr)
    if config.cache:
        print(f"staicc: every answer is in the cache {one_line(config.cache)}: make room and run the same command "
              "again; it writes the results without asking the model again", file=sys.stderr)
    else:
        print("staicc: the answers were not kept; run with --cache FILE to keep them across such failures",
              file=sys.stderr)
    return 1
