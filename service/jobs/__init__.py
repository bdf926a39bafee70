"""The jobs resource (``/v1/jobs``)."""

from .routes import bp

__all__ = ["bp"]
