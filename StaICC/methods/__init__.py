"""Methods built on the benchmark, outside the standard's scoring.

- :mod:`.calibration`: the standard calibrations (contextual, domain, batch, hidden, kNN);
- :mod:`.prompt_edits`: PPL-ICL instruction choice, SA-ICL and TopK;
- :mod:`.vectors`: vector helpers for the calibrations.
"""

#: nothing is exported here: each module named above is imported where it is used
__all__: list = []
