"""The original release's module layout, kept so that code written for StaICC 0.1.1 imports unchanged."""
