"""The sub-benchmarks: the experimentor, the generic sub-benchmark, the standard's seven, the suite.

- :mod:`.experimentor`: ``single_experimentor``, one query set over one dataset;
- :mod:`.accessors`: its read-only accessors with the original's names (``get_k()``, ``example()`` ...);
- :mod:`.generic`: :class:`SubBenchmark`, an experimentor per dataset;
- :mod:`.builtin`: the seven sub-benchmarks of the standard (``Normal`` ... ``Demo_sens``);
- :mod:`.suite`: every sub-benchmark over one model, each distinct prompt asked once.
"""

#: nothing is exported here: each module named above is imported where it is used
__all__: list = []
