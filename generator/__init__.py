"""pith-mirror: publish a verified, read-only mirror of the Pith resolver as a static site."""

__version__ = "0.1.0"
