"""Which shard a process runs, and the engines that start the shards: torchrun / accelerate, Slurm, Ray.

Every launcher runs the same command once per shard; each shard writes its answers to its
own cache file, ``CACHE.shard-I-of-N`` (SQLite is not shared across machines), and one
process then merges those files into ``CACHE`` (:func:`StaICC.cache.merge.merge_caches`)
and runs the command once more over the merged cache: it asks no prompt and writes the
results.  The results therefore never depend on which worker finished first.

* ``torchrun`` / ``accelerate launch`` (detected from ``WORLD_SIZE`` > 1, or
  ``--launcher torchrun``): rank ``RANK`` runs shard ``RANK`` of ``WORLD_SIZE``; the ranks
  meet at a gloo barrier (CPU only: no GPU collective is used); rank 0 merges and
  summarises.  An ``hf`` model without ``device=`` goes to ``cuda:LOCAL_RANK``.
* Slurm job arrays (``--launcher slurm``): ``SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN``
  of ``SLURM_ARRAY_TASK_COUNT``; there is no barrier, so a dependent job merges
  (``staicc cache merge``) and summarises (see docs/scaling.md for the sbatch recipe).
* Ray (``--launcher ray[:address=...,shards=N,num_gpus=G,num_cpus=C,retries=R]``): the
  driver submits the N shards as Ray tasks with those resources, Ray retries a failed
  shard R times (a retry resumes from the shard's cache), the driver merges and summarises.
"""
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ..engine.selection import Shard
from ..errors import InvalidValueError, OperationError, StaICCError

LAUNCHERS = ("torchrun", "slurm", "ray")
#: seconds the torchrun ranks wait at the barrier for the slowest shard
BARRIER_SECONDS = 7 * 24 * 3600
_RAY_OPTIONS = ("address", "shards", "num_gpus", "num_cpus", "retries")


@dataclass(frozen=True)
class Launch:
    """How this process takes part in a run: ``kind`` is single, shard, torchrun, slurm or ray."""

    kind: str = "single"
    index: int = 0
    count: int = 1
    options: Dict[str, str] = field(default_factory=dict)
    local_rank: Optional[int] = None

    @property
    def sharded(self) -> bool:
        return self.kind in ("shard", "torchrun", "slurm")


def resolve_launch(shard: Optional[str], launcher: Optional[str], environ: Mapping[str, str]) -> Launch:
    """The launch described by ``--shard``, ``--launcher`` and the environment; ValueError when inconsistent."""
    if shard is not None:
        if launcher is not None:
            raise InvalidValueError("give either --shard I/N or --launcher, not both (a launcher chooses the shard)")
        parsed = Shard.parse(shard)
        return Launch("shard", parsed.index, parsed.count)
    name, _, text = (launcher or "").partition(":")
    if launcher is None and _int_env(environ, "WORLD_SIZE", 1) > 1:
        name = "torchrun"
    if not name:
        return Launch()
    if name not in LAUNCHERS:
        raise InvalidValueError(f"--launcher must be one of {', '.join(LAUNCHERS)} (ray:address=...), got {launcher!r}")
    if name != "ray" and text:
        raise InvalidValueError(f"--launcher {name} takes no options, got {launcher!r}")
    if name == "torchrun":
        count = _int_env(environ, "WORLD_SIZE", None)
        index = _int_env(environ, "RANK", None)
        if count is None or index is None:
            raise InvalidValueError("--launcher torchrun needs WORLD_SIZE and RANK in the environment: start the command "
                                    "with torchrun --nproc_per_node N or accelerate launch")
        Shard(index, count)  # checked: 0 <= RANK < WORLD_SIZE
        return Launch("torchrun", index, count, local_rank=_int_env(environ, "LOCAL_RANK", None))
    if name == "slurm":
        task = _int_env(environ, "SLURM_ARRAY_TASK_ID", None)
        count = _int_env(environ, "SLURM_ARRAY_TASK_COUNT", None)
        if task is None or count is None:
            raise InvalidValueError("--launcher slurm needs SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT: submit the "
                                    "command with sbatch --array=0-N")
        index = task - _int_env(environ, "SLURM_ARRAY_TASK_MIN", 0)
        Shard(index, count)  # checked: 0 <= index < count
        return Launch("slurm", index, count)
    return Launch("ray", options=ray_options(text))


def _int_env(environ: Mapping[str, str], name: str, default: Optional[int]) -> Any:
    value = environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise InvalidValueError(f"the environment variable {name} must be an integer, got {value!r}") from None


def ray_options(text: str) -> Dict[str, str]:
    """``address=auto,shards=4,num_gpus=1`` -> checked options (numbers stay strings until used)."""
    from ..backends.registry import parse_model_args
    options = parse_model_args(text)
    unknown = sorted(set(options) - set(_RAY_OPTIONS))
    if unknown:
        raise InvalidValueError(f"--launcher ray: unknown option(s) {', '.join(unknown)}; known: {', '.join(_RAY_OPTIONS)}")
    for name, minimum in (("shards", 1), ("retries", 0)):
        if name in options and (not options[name].isdigit() or int(options[name]) < minimum):
            raise InvalidValueError(f"--launcher ray: {name} must be an integer >= {minimum}, got {options[name]!r}")
    for name in ("num_gpus", "num_cpus"):
        if name in options:
            try:
                if float(options[name]) < 0:
                    raise InvalidValueError
            except ValueError:
                raise InvalidValueError(f"--launcher ray: {name} must be a number >= 0, got {options[name]!r}") from None
    return options


def shard_cache_path(cache: str, index: int, count: int) -> str:
    """The cache file shard ``index`` of ``count`` writes when a launcher runs it."""
    return f"{cache}.shard-{index}-of-{count}"


def shard_cache_paths(cache: str, count: int) -> List[str]:
    return [shard_cache_path(cache, index, count) for index in range(count)]


def rank_model_arguments(model: str, arguments: Dict[str, str], launch: Launch) -> Dict[str, str]:
    """Under torchrun, an hf model without ``device=`` goes to this rank's GPU (``cuda:LOCAL_RANK``).

    The device is not part of a backend's identity, so every rank keeps the same fingerprint.
    """
    from ..backends.registry import capabilities
    if launch.kind != "torchrun" or not capabilities(model).per_rank_device or "device" in arguments \
            or launch.local_rank is None:
        return arguments
    import torch
    if not torch.cuda.is_available() or torch.cuda.device_count() <= launch.local_rank:
        return arguments
    return dict(arguments, device=f"cuda:{launch.local_rank}")


def torchrun_barrier(launch: Launch) -> None:
    """Wait until every rank has finished its shard (gloo on CPU; the group is created here when needed)."""
    import datetime

    import torch.distributed as dist
    created = not dist.is_initialized()
    if created:
        dist.init_process_group("gloo", rank=launch.index, world_size=launch.count,
                                timeout=datetime.timedelta(seconds=BARRIER_SECONDS))
    try:
        dist.barrier()
    finally:
        if created:
            dist.destroy_process_group()


# ----------------------------------------------------------------------------
# command lines of the shard runs and of the final run
# ----------------------------------------------------------------------------
#: run options a shard command drops (it writes no results) or replaces (its own cache)
_DROPPED = {"--launcher": True, "--cache": True, "--output-dir": True, "--log-samples": False, "--shard": True,
            "--overwrite": False}
#: options whose value is optional: dropped with it when the next argument is one of these values
_OPTIONAL_VALUES = {"--log-samples": ("compact", "full")}


def without_options(argv: Sequence[str], dropped: Mapping[str, bool] = _DROPPED) -> List[str]:
    """``argv`` without the options in ``dropped`` (name -> takes a value), in both ``--x v`` and ``--x=v`` form."""
    kept: List[str] = []
    skip = False
    for position, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in dropped:
            skip = dropped[name] and "=" not in arg
            optional = _OPTIONAL_VALUES.get(name, ())
            if optional and "=" not in arg and position + 1 < len(argv) and argv[position + 1] in optional:
                skip = True
            continue
        kept.append(arg)
    return kept


def shard_argv(argv: Sequence[str], cache: str, index: int, count: int) -> List[str]:
    """The command that runs shard ``index``: the run's own arguments, its shard and its shard cache."""
    return without_options(argv) + ["--shard", f"{index}/{count}", "--cache", shard_cache_path(cache, index, count)]


def final_argv(argv: Sequence[str]) -> List[str]:
    """The command that summarises over the merged cache: the run's arguments without the launcher."""
    return without_options(argv, {"--launcher": True, "--shard": True})


# ----------------------------------------------------------------------------
# Ray
# ----------------------------------------------------------------------------
def _shard_task(main: Callable[[List[str]], int], argv: List[str]) -> int:
    """One shard inside a Ray worker: the same CLI (``main``, the ``staicc`` entry point the driver passes down,
    so this module imports no command back), so the worker builds the same run.

    A failed shard raises with the command's own last error line (what the user would
    have read had the shard run in a terminal), so the driver can say why it failed.
    """
    import contextlib
    import sys
    tee = _ErrorLines(sys.stderr)
    with contextlib.redirect_stderr(tee):
        status = main(argv)
    if status != 0:
        shard = argv[argv.index("--shard") + 1] if "--shard" in argv else "?"
        raise OperationError(f"shard {shard} exited with status {status}: {tee.last_error or 'no error line'}")
    return status


class _ErrorLines:
    """A stderr that passes everything on and keeps the last ``staicc: error:`` line written to it."""

    PREFIX = "staicc: error: "

    def __init__(self, stream: Any) -> None:
        self.stream, self.last_error, self._partial = stream, "", ""

    def write(self, text: str) -> int:
        self.stream.write(text)
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()[-4096:]  # an unfinished line, bounded
        for line in lines:
            if line.startswith(self.PREFIX):
                self.last_error = line[len(self.PREFIX):]
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def run_ray_shards(argv: Sequence[str], cache: str, options: Mapping[str, str],
                   main: Callable[[List[str]], int]) -> List[str]:
    """Run the shards as Ray tasks (retried on failure) and return their cache files, in shard order; each task
    runs ``main`` (the ``staicc`` entry point: Ray sends it to the workers by its import path) on its shard's
    command line."""
    from ..extras import require
    ray = require("ray", "--launcher ray")
    address = options.get("address")
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(address=address, runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}
                     if address is None else None, log_to_driver=True)
        except Exception as exc:  # Ray's own error types; nothing has run yet
            raise RayConnectionError(_connection_message(address, exc)) from None
    try:
        num_gpus = float(options.get("num_gpus", 0))
        count = int(options["shards"]) if "shards" in options else _default_shards(ray, num_gpus)
        task = ray.remote(_shard_task).options(num_gpus=num_gpus, num_cpus=float(options.get("num_cpus", 1)),
                                               max_retries=int(options.get("retries", 2)), retry_exceptions=True)
        pending = [task.remote(main, shard_argv(argv, cache, index, count)) for index in range(count)]
        ray.get(pending)
    finally:
        if started:
            ray.shutdown()
    return shard_cache_paths(cache, count)


class RayConnectionError(StaICCError, RuntimeError):
    """Ray could not connect to its cluster (or start one): no shard ran."""


def _connection_message(address: Optional[str], exc: BaseException) -> str:
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if address is None:
        return f"--launcher ray: cannot start a local Ray cluster: {reason}; no shard ran"
    return (f"--launcher ray: cannot connect to the Ray cluster at {address}: {reason}; no shard ran. A cluster "
            "started with token authentication (RAY_AUTH_MODE=token) needs its token in this process's environment: "
            "RAY_AUTH_MODE=token RAY_AUTH_TOKEN=<token> (or RAY_AUTH_TOKEN_PATH=<file>); check the address with "
            f"ray status --address {address}")


def _default_shards(ray: Any, num_gpus: float) -> int:
    gpus = ray.cluster_resources().get("GPU", 0)
    if num_gpus <= 0 or gpus < num_gpus:
        raise InvalidValueError("--launcher ray: say how many shards to run (ray:shards=N) when the tasks use no GPU")
    return int(gpus // num_gpus)
