"""Scaling a run beyond one process: shard plans, launchers on existing engines, the OpenAI Batch API.

In data-flow order:

* :mod:`.shards`: which distinct requests each of N shards asks (a pure, deterministic
  plan whose hash goes into provenance), and the shard run itself (answers into the cache,
  no summary);
* :mod:`.launchers`: torchrun / ``accelerate launch`` ranks, Slurm job arrays and Ray tasks
  that each run one shard, then one process merges the shard caches and summarises;
* :mod:`.batch_api`: the run's distinct requests as OpenAI Batch-API JSONL, and the Batch
  results read back into a prediction cache.

Merging shard caches lives with the cache (:mod:`StaICC.cache.merge`).  Nothing here is
imported by ``import StaICC``; torch and ray are imported inside the functions that use them.
"""
