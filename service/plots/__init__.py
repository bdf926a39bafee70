"""Plots of a finished job (``/v1/jobs/{id}/plots/{name}.{png|svg}``)."""

from .routes import bp

__all__ = ["bp"]
