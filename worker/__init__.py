"""Celery workers that run the core's stages on jobs stored in Redis (``sca_worker``).

``celery -A worker worker`` finds :data:`app` here.  The Celery app is built
from the environment only when ``app`` or ``create_celery`` is first looked
up (PEP 562), so importing another worker module (the API imports the store,
the stages and the embedded runner) builds none.  Nothing in this package
imports the service.
"""

__all__ = ["app", "create_celery"]


def __getattr__(name: str):
    if name in __all__:
        # Absolute: `celery -A worker` imports this folder as `worker`, and the
        # one Celery app must still be sca_worker.celery_app's.
        import importlib

        return getattr(importlib.import_module("sca_worker.celery_app"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
