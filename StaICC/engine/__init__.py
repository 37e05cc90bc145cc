"""The one runner: plan the requests, score them through the model (the one call site), summarize.

In the order a run goes:

- :mod:`.procedures`: each sub-benchmark's passes as frozen values;
- :mod:`.plan`: the frozen :class:`RunPlan` and its requests;
- :mod:`.preflight`: every check that needs no model, done before any inference;
- :mod:`.cache_use`, :mod:`.progress`: the prediction cache for a run, progress bars;
- :mod:`.scoring`: ``score_requests``, the one place a model is called; every answer validated;
- :mod:`.outcome`: answers -> metrics -> records.

Nothing is imported here: each module is loaded where it is used.
"""
