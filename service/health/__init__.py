"""Health checks and the API contract."""

from .routes import bp

__all__ = ["bp"]
