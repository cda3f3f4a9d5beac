"""The version of the sandpod Python client."""

__version__ = "0.1.0"
