"""Celery workers that run the core's stages on jobs stored in Redis.

``celery -A worker worker`` finds :data:`app` here.  Nothing in this package
imports the service.
"""

from .celery_app import app, create_celery

__all__ = ["app", "create_celery"]
