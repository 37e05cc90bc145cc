"""``staicc batch export|import``: a run's distinct prompts through the OpenAI Batch API.

``export`` plans the run exactly as ``staicc run`` would (same arguments) and writes the
requests not yet in ``--cache`` as Batch-API JSONL; ``import`` plans the same run again,
joins the result lines to its requests by ``custom_id`` and stores the answers in
``--cache``.  ``staicc run --cache C`` with the same arguments then asks no prompt.
"""
import argparse
import sys
import warnings
from typing import Any, Iterator, List, Tuple

from ..errors import TamperingWarning
from .common import ArgumentError, as_argument_error, needs_a_command
from .run import _open_cache, add_selection_arguments


def add_batch_parser(sub: Any) -> None:
    p = sub.add_parser("batch", description="Run the prompts of a run through the OpenAI Batch API.")
    commands = p.add_subparsers(dest="batch_command", parser_class=type(p))
    export = commands.add_parser("export", help="write the run's unanswered requests as Batch-API JSONL")
    add_selection_arguments(export)
    export.add_argument("-o", "--output", required=True, metavar="FILE.jsonl",
                        help="the JSONL file (split into FILE-00001.jsonl ... at 50,000 lines or 100 MB)")
    export.add_argument("--cache", metavar="FILE", help="leave out the requests this cache already answers")
    export.set_defaults(func=export_command)
    imports = commands.add_parser("import", help="store Batch-API results in a prediction cache")
    imports.add_argument("results", nargs="+", metavar="RESULTS.jsonl", help="the Batch API's output file(s)")
    add_selection_arguments(imports)
    imports.add_argument("--cache", required=True, metavar="FILE", help="the cache that receives the answers")
    imports.set_defaults(func=import_command)
    needs_a_command(p, "batch", ["export", "import"])


def _planned(args: argparse.Namespace) -> Tuple[Any, List[Any]]:
    """(backend, the run's works) exactly as ``staicc run`` plans them; argument errors before anything.

    The works write their prompts when read, so a caller that streams them never holds a
    whole suite's prompts at once.
    """
    from dataclasses import replace

    from ..backends.registry import capabilities
    from ..runs.build import prepare
    from .run_config import resolve_config
    config = resolve_config(args)
    if not capabilities(config.model).batch_api:
        raise ArgumentError("staicc batch writes and reads OpenAI Batch-API requests: give --model openai")
    with warnings.catch_warnings():
        if config.quiet_departures or config.tasks:
            warnings.simplefilter("ignore", TamperingWarning)
        # planned as `staicc run` plans it; the cache is opened by the command (export reads it, import writes it)
        prepared = as_argument_error(prepare, replace(config, cache=None))
    if getattr(prepared.backend, "label_logprobs", "off") != "off":
        raise ArgumentError("staicc batch sends the echo requests of a direct run: leave label_logprobs off")
    return prepared.backend, prepared.works()


def export_command(args: argparse.Namespace) -> int:
    from ..scaleout.batch_api import distinct_requests, export_batch, unanswered
    backend, works = _planned(args)
    cache = as_argument_error(_open_cache, args.cache)
    counted = [0]

    def todo() -> Iterator[Any]:  # the prompts to answer, streamed (and counted) as the files are written
        for request in unanswered(backend, distinct_requests(works), cache):
            counted[0] += 1
            yield request
    try:
        written = as_argument_error(export_batch, backend, todo(), args.output)
    finally:
        if cache is not None:
            cache.close()
    if not written:
        print("every request of this run is already in the cache; nothing to export")
        return 0
    for path, lines in written:
        print(f"wrote {path}: {lines} requests")
    print(f"{counted[0]} prompts to answer (model {backend.fingerprint()[:12]}); after the batch: "
          f"staicc batch import RESULTS.jsonl --cache FILE with the same arguments")
    return 0


def import_command(args: argparse.Namespace) -> int:
    from ..scaleout.batch_api import distinct_requests
    from ..scaleout.batch_results import import_batch
    backend, works = _planned(args)
    cache = as_argument_error(_open_cache, args.cache)
    try:
        report = import_batch(backend, list(distinct_requests(works)), args.results, cache)
    finally:
        cache.close()
    for error in report.errors:
        print(f"staicc: error: {error}", file=sys.stderr)
    if report.conflicts:
        print(f"stored nothing in {args.cache}: {report.conflicts} custom_id(s) have two different answers; "
              f"{len(report.errors)} bad line(s)")
        return 1
    print(f"stored {report.stored} answers in {args.cache}; {report.missing} requests have no complete result "
          f"yet; {len(report.errors)} bad line(s)")
    return 1 if report.errors else 0
