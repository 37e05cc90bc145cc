"""The original release's data package, kept so that its import path still works.

It held the pickled dataset tables.  The data now lives in ``StaICC/data`` (verified
gzip JSON Lines files, see :mod:`StaICC.datasets`); this package is empty.
"""

__all__: list = []
