"""Scaling a run beyond one process: shard plans, launchers on existing engines, the OpenAI Batch API.

In data-flow order:

* :mod:`.shards`: which distinct requests each of N shards asks (a pure, deterministic
  plan whose hash goes into provenance), and the shard run itself (answers into the cache,
  no summary);
* :mod:`.batch_api`: the run's distinct requests as OpenAI Batch-API JSONL, and the Batch
  results read back into a prediction cache.

Merging shard caches lives with the cache (:mod:`StaICC.cache.merge`).  The launchers (torchrun /
``accelerate launch`` ranks, Slurm job arrays, Ray tasks) run command lines, so they live with the
command line (:mod:`StaICC.cli.launchers`).  Nothing here is
imported by ``import StaICC``; torch and ray are imported inside the functions that use them.
"""
