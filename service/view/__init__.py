"""The job page (``/v1/jobs/{id}/view``): one self-contained HTML document."""

from .routes import bp

__all__ = ["bp"]
