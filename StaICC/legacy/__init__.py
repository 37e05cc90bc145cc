"""The original StaICC 0.1.1 API that exists only for compatibility, in one place.

- :mod:`.configs`: the original's three settings dictionaries, rebuilt from :mod:`StaICC.standard`;
- :mod:`.experimentor`: the original's per-diagnosis experimentor classes, each a
  ``single_experimentor`` with the settings of its sub-benchmark;
- :mod:`.functional`: the original's helper functions (``L2_dist``, ``kl_divergence`` ...);
- :mod:`.stable_random`: the original's random generator class and method names.

The original import paths are few-line re-exports: ``StaICC.util.*`` of these modules;
``StaICC.normal``, ``StaICC.diagnosis`` and ``StaICC.prefabricate_inference.*`` of the core
modules that took their place.  Core modules never import this package.
"""

#: nothing is exported here: the original's names are imported from the modules above, or through the
#: original import paths
__all__: list = []
