"""The bundled data files (the datasets, their table and their manifest); no Python names."""
__all__: list = []
