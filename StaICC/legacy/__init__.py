"""The original StaICC 0.1.1 API, in one place.

The original import paths (``StaICC.util.*``, ``StaICC.normal``, ``StaICC.diagnosis``,
``StaICC.prefabricate_inference.*``, ``StaICC.cached_dataset``) are few-line re-exports of
these modules.  Core modules never import this package.
"""
