"""The package version, in one place (setup.py reads it from here)."""
__version__ = "0.3.0"
