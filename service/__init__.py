"""The HTTP service: ``create_app`` builds the Flask app (nothing runs at import).

Importing the package loads no web stack: ``sca serve``
(:mod:`sca_service.commands`, found by the core's command line) must be able to
say which extra is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flask import Flask

BLUEPRINTS = (
    "sca_service.health",
    "sca_service.jobs",
    "sca_service.plots",
    "sca_service.view",
    "sca_service.jobs.stream",
    "sca_service.metrics",
)


def create_app(test_config=None) -> Flask:
    """The API; config from :data:`config.DEFAULTS`, the environment, then ``test_config``."""
    # Flask and the modules that use it load here: importing the package stays light.
    from flask import Flask

    from . import auth, backend, config, errors, limits, origin
    from .body import BodyLimit, check_json_length

    app = Flask(__name__)
    app.config.from_mapping(config.DEFAULTS)
    app.config.from_mapping(config.from_env())
    if test_config is not None:
        # Settings given as text (as the environment gives them) are converted alike.
        app.config.from_mapping({**test_config, **config.convert(test_config, config.DEFAULTS)})
    app.config["MAX_CONTENT_LENGTH"] = app.config["SCA_MAX_BODY_BYTES"]
    app.config["MAX_FORM_MEMORY_SIZE"] = app.config["SCA_MAX_BODY_BYTES"]
    app.wsgi_app = BodyLimit(  # type: ignore[method-assign]
        app.wsgi_app, app.config["SCA_MAX_BODY_BYTES"], app.config["SCA_MAX_JSON_BYTES"]
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]  # Flask's DefaultJSONProvider
    errors.init_app(app)
    origin.init_app(app)
    auth.init_app(app)
    backend.init_app(app)
    limits.init_app(app)
    app.before_request(check_json_length)
    for name in BLUEPRINTS:
        app.register_blueprint(importlib.import_module(name).bp)
    return app
