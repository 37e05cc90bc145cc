"""What ``staicc run`` prints beside its tables, for a suite run and a ``--methods`` run alike: the resolved
configuration (``--show-config``), a dry run's status line and the lines that say a run or its writing failed and
where the answers are.  :class:`Terminal` is the run's observer (:mod:`StaICC.runs.observer`): the runs floor's
:func:`~StaICC.runs.execute.execute` tells it each step, and it prints there."""
import sys
from typing import Any, Dict, Optional

from ..runs.build import Prepared
from ..runs.config import RunConfig
from ..runs.observer import Counting, RunObserver
from .common import argument_errors, one_line


class Terminal(RunObserver):
    """``staicc run``'s observer: the lines it prints between the run's steps, and what the backend and a dry
    run's counting were, which the tables and the cost lines read after the run."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config  # as the command line resolved it (a methods run's 'all' not yet narrowed)
        self.backend: Any = None
        self.counting: Optional[Counting] = None
        self.asked = False
        self.failure: Optional[BaseException] = None

    def planned(self, prepared: Prepared) -> None:
        self.backend = prepared.backend
        if self.config.show_config:
            print(config_text(self.config, prepared.backend, prepared.suite))

    def asking(self, prepared: Prepared, counting: Optional[Counting]) -> None:  # noqa: ARG002  (the event's signature)
        self.asked, self.counting = True, counting
        if counting is not None:  # tokenizing a suite takes a while: say what is counted
            from ..report.progress import StatusLine
            counting.counter.say = StatusLine("staicc run --dry-run", self.config.progress)

    def failed(self, prepared: Prepared, error: Exception) -> None:  # noqa: ARG002  (the event's signature)
        self.failure = error
        run_failed(self.config, error)

    def exit_status(self, error: Exception) -> int:
        """The exit status of an error the run raised: before anything was asked, a one-line argument error
        (status 2, raised); a failed run, said by :meth:`failed` (1); anything else is raised again."""
        if not self.asked:
            with argument_errors():
                raise error
        if error is self.failure:
            return 1
        raise error


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
