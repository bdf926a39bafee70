"""The API's schemas come from the core's options registry and refuse what it refuses."""

from __future__ import annotations

import pytest

from sca import options as registry
from sca_service.jobs.schemas import (
    SimilarQuerySchema,
    custom_cluster_schema_class,
    job_request_schema,
)
from sca_service.options_docs import OPTIONS_PAGE, generated
from sca_service.options_docs import main as generate
from tests.conftest import BASEBALL_BODY
from tests.service.conftest import load_spec, problem

LIMITS = {"SCA_MAX_K": 50, "SCA_MAX_K_HAT": 60, "SCA_MAX_ITERATIONS": 70, "SCA_MAX_STARTS": 80}


def test_the_committed_readme_and_openapi_match_the_registry():
    """Fails when the docs' options tables or openapi.yaml's Options schema drift
    from sca/options/records.py: run ``python -m sca_service.options_docs --write``."""
    for path, text in generated().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} is out of date: run python -m sca_service.options_docs --write"
        )
    assert generate(["--check"]) == 0


def test_a_changed_default_shows_as_drift(tmp_path, monkeypatch):
    for name in (OPTIONS_PAGE, "openapi.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((registry_root() / name).read_text(encoding="utf-8"))
    assert generate(["--check", "--root", str(tmp_path)]) == 0
    changed = tuple(
        registry.Option(**{**o.__dict__, "default": 7}) if o.name == "stable" else o
        for o in registry.CLUSTERING
    )
    monkeypatch.setattr("sca_service.options_docs.CLUSTERING", changed)
    assert generate(["--check", "--root", str(tmp_path)]) == 1
    assert generate(["--write", "--root", str(tmp_path)]) == 0
    assert "default: 7" in (tmp_path / "openapi.yaml").read_text()


def registry_root():
    from sca_service.options_docs import ROOT

    return ROOT


def test_the_schemas_have_the_registry_s_fields():
    options = job_request_schema(LIMITS).fields["options"].schema
    assert set(options.fields) == {o.name for o in registry.options_for("job")}
    custom = custom_cluster_schema_class(70)()
    assert set(custom.fields) == {o.name for o in registry.options_for("custom", "custom")}
    assert set(SimilarQuerySchema().fields) == {"limit", "method"}


def test_the_spec_s_options_are_the_registry_s():
    properties = load_spec()["components"]["schemas"]["Options"]["properties"]
    assert list(properties) == [o.name for o in registry.options_for("job")]
    for option in registry.options_for("job"):
        assert properties[option.name].get("default") == option.default, option.name
        assert properties[option.name].get("minimum") == option.minimum, option.name


def test_the_spec_s_queries_agree_with_the_registry():
    """The custom-cluster request and the similar query are written by hand in the
    spec: their names, defaults and minimums are the registry's."""
    spec = load_spec()
    custom = spec["components"]["schemas"]["CustomClusterRequest"]["properties"]
    similar = {
        p["name"]: p["schema"]
        for p in spec["paths"]["/v1/jobs/{id}/elements/{element}/similar"]["get"]["parameters"]
        if p.get("in") == "query"
    }
    for properties, group in ((custom, "custom"), (similar, "similar")):
        assert set(properties) == {o.name for o in registry.options_for(group, group)}
        for option in registry.options_for(group, group):
            assert properties[option.name].get("default") == option.default, option.name
            assert properties[option.name].get("minimum") == option.minimum, option.name
            if option.choices:
                assert properties[option.name]["enum"] == list(option.choices), option.name


@pytest.mark.parametrize(
    "options, field",
    [
        ({"k": 3, "k_hat": 3}, "options.k_hat"),  # the gap after λ_k needs λ_(k+1)
        ({"k": 51}, "options.k"),  # over SCA_MAX_K
        ({"starts": 81}, "options.starts"),
        ({"min_k": 3, "max_k": 2}, "options.max_k"),
        ({"rule": "perron", "k_hat": 1}, "options.k_hat"),
        ({"tol": 1e-9}, "options.tol"),  # the command line's, not the API's
    ],
)
def test_the_api_refuses_what_the_core_refuses(make_client, options, field):
    client = make_client(**LIMITS)
    body = problem(client.post("/v1/jobs", json={**BASEBALL_BODY, "options": options}), 422, field)
    if field == "options.k_hat" and "k" in options:
        assert "exceed k = 3" in " ".join(body["errors"][field])


def test_k_hat_above_k_is_accepted(idle_client):
    response = idle_client.post("/v1/jobs", json={**BASEBALL_BODY, "options": {"k": 3, "k_hat": 4}})
    assert response.status_code == 202, response.get_data(as_text=True)


def test_the_spec_s_input_kinds_are_the_registry_s():
    schemas = load_spec()["components"]["schemas"]
    assert schemas["JobUpload"]["properties"]["input"]["enum"] == list(registry.INPUT_NAMES)
    assert set(registry.INPUT_NAMES) <= set(schemas["JobRequest"]["properties"])


def test_the_spec_s_ensemble_algorithms_are_the_registry_s():
    item = load_spec()["components"]["schemas"]["EnsembleItem"]
    assert item["properties"]["algorithm"]["enum"] == list(registry.ALGORITHMS)
