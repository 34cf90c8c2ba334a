"""coadapt: test-time adaptation of Android GUI agents."""

__version__ = "0.1.0"
