"""Scaling a run beyond one process: the OpenAI Batch API (the shards themselves are a selection of the runner).

* :mod:`.batch_api`: the run's distinct requests as OpenAI Batch-API JSONL, and the Batch
  results read back into a prediction cache.

Which requests each of N shards asks is the runner's ``Shard`` selection, planned in
:mod:`StaICC.engine.sharding` (a pure, deterministic plan whose hash goes into provenance).
Merging shard caches lives with the cache (:mod:`StaICC.cache.merge`).  The launchers (torchrun /
``accelerate launch`` ranks, Slurm job arrays, Ray tasks) run command lines, so they live with the
command line (:mod:`StaICC.cli.launchers`).  Nothing here is
imported by ``import StaICC``; torch and ray are imported inside the functions that use them.
"""

#: nothing is exported here: each module named above is imported where it is used
__all__: list = []
