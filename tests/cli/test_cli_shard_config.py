"""``staicc run`` resolves its arguments once; a launched process runs its part of that one configuration.

``cli/scaleout.shard_config`` derives a shard's configuration from the whole run's: its shard
(counted by a dry run), its own settings (a launched shard's cache), nothing else changed; the
merging run is the same configuration with the shards recorded.  ``resolve_config`` itself
returns the whole run whatever the launch.
"""
from dataclasses import replace

import pytest

from StaICC.cli import ArgumentError
from StaICC.cli.launchers import Launch
from StaICC.cli.scaleout import shard_config
from StaICC.engine.selection import Everything, Nothing, Shard
from StaICC.runs import RunConfig

WHOLE = RunConfig(model="reference", arguments={"seed": "1"}, cache="answers.sqlite", output_dir="out",
                  log_samples="compact", shard_unit="call")


def test_a_shard_is_the_whole_runs_configuration_with_its_shard():
    part = shard_config(WHOLE, Launch("shard", 1, 3))
    assert part.selection == Shard(1, 3, "call")
    assert replace(part, selection=WHOLE.selection) == WHOLE
    assert part.arguments == WHOLE.arguments


def test_a_dry_run_shard_counts_its_shard_and_a_launched_shard_keeps_its_own_cache():
    counted = shard_config(replace(WHOLE, selection=Nothing()), Launch("torchrun", 0, 2, local_rank=0))
    assert counted.selection == Nothing(Shard(0, 2, "call"))
    own = shard_config(WHOLE, Launch("slurm", 2, 4), cache="answers.sqlite.shard-2-of-4", output_dir=None,
                       log_samples=None)
    assert (own.cache, own.output_dir, own.log_samples) == ("answers.sqlite.shard-2-of-4", None, None)
    assert WHOLE.selection == Everything()  # the whole run's configuration is never changed


def test_resolve_config_returns_the_whole_run_whatever_the_launch():
    from StaICC.cli import full_parser
    from StaICC.cli.run_config import resolve_config
    args = full_parser().parse_args(["run", "--datasets", "TREC", "--cache", "c.sqlite", "--shard", "0/2"])
    config = resolve_config(args, Launch("shard", 0, 2))
    assert config.selection == Everything() and config.cache == "c.sqlite"


def test_methods_are_still_refused_with_a_launch_that_shards():
    from StaICC.cli import full_parser
    from StaICC.cli.run_config import resolve_config
    args = full_parser().parse_args(["run", "--datasets", "TREC", "--cache", "c.sqlite", "--methods", "vanilla"])
    with pytest.raises(ArgumentError, match="--launcher with --methods"):
        resolve_config(args, Launch("torchrun", 0, 2))
