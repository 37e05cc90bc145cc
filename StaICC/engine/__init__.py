"""The one runner: plan the works, score their distinct requests through the model (the one call site), summarize.

In the order a run goes:

- :mod:`.procedures`: each sub-benchmark's passes as frozen values;
- :mod:`.plan`: the frozen :class:`RunPlan`, its requests, and :class:`Work` (one experimentor's share of a run);
- :mod:`.preflight`: every check that needs no model, done before any inference;
- :mod:`.cache_use`, :mod:`.progress`: the prediction cache for a run, progress bars;
- :mod:`.scoring`: ``score_requests``, the one place a model is called; every answer validated;
- :mod:`.outcome`: ``summarize``: answers -> metrics -> records;
- :mod:`.runner`: ``run_works``: works -> ``distinct_requests`` -> ``score_requests`` -> ``summarize``,
  dataset by dataset; every run (a sub-benchmark call, the suite, the CLI) goes through it.

Nothing is imported here: each module is loaded where it is used.
"""

#: nothing is exported here: each module named above is imported where it is used
__all__: list = []
