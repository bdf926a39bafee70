"""The options registry (sca.options): one declaration, every place that uses it."""

import inspect

import numpy as np
import pytest

import sca
from sca import options as registry

from .conftest import BASEBALL_S


@pytest.mark.parametrize(
    "function, names",
    [
        (
            sca.iterate,
            {
                "seed": "seed",
                "starts": "starts",
                "stable": "stable",
                "max_iterations": "max_iterations",
                "split": "split",
                "trace": "trace",
                "reconsensus": "reconsensus",
                "x0": "x0",
            },
        ),
        (sca.balance, {"tol": "tol", "max_iter": "balance_max_iterations"}),
        (
            sca.spectrum,
            {
                "k": "k",
                "k_hat": "k_hat",
                "min_k": "min_k",
                "max_k": "max_k",
                "rule": "rule",
                "seed": "seed",
            },
        ),
    ],
)
def test_function_defaults_are_the_registry_s(function, names):
    parameters = inspect.signature(function).parameters
    for parameter, option in names.items():
        assert parameters[parameter].default == registry.OPTIONS[option].default, parameter


def test_custom_defaults_are_the_registry_s():
    parameters = inspect.signature(sca.custom_cluster).parameters
    custom = {o.name: o.default for o in registry.CUSTOM}
    for name in ("min_size", "max_size", "max_iterations", "limit"):
        assert parameters[name].default == custom[name], name


def test_snn_metrics_are_scikit_learn_s():
    from sklearn.neighbors import VALID_METRICS

    assert set(registry.SNN_METRICS) <= set(VALID_METRICS["brute"])


def test_validate_fills_defaults_and_names_the_field():
    assert registry.validate({"k": np.int64(3)}) == {
        **registry.defaults("core"),
        "ensemble_seed": 0,
        "k": 3,
    }
    assert registry.validate({}, scope="job") == registry.defaults("job")
    for options, field in [
        ({"k": 0}, "options.k"),
        ({"k": True}, "options.k"),
        ({"k": 2.0}, "options.k"),
        ({"rule": "max"}, "options.rule"),
        ({"trace": 1}, "options.trace"),
        ({"tol": 0.0}, "options.tol"),
        ({"seed": 2**32}, "options.seed"),
        ({"min_k": 3, "max_k": 2}, "options.max_k"),
        ({"k": 3, "k_hat": 3}, "options.k_hat"),
        ({"rule": "gap", "k_hat": 2}, "options.k_hat"),
        ({"bogus": 1}, "options"),
        ({"tol": 1e-9}, "options"),
    ]:
        with pytest.raises(sca.SCAError) as info:
            registry.validate(
                options, scope="job" if "tol" in options and options["tol"] == 1e-9 else None
            )
        assert info.value.field == field, options
    with pytest.raises(sca.SCAError, match=r"\[1, n\] = \[1, 6\]"):
        registry.validate({"k": 7}, n=6)
    assert registry.check("starts", 3) == 3


def test_the_core_refuses_what_the_api_refuses():
    """k_hat <= k is refused by sca.cluster (and so by sca cluster) as by the API."""
    with pytest.raises(sca.SCAError) as info:
        sca.cluster(consensus=BASEBALL_S, options={"k": 3, "k_hat": 3})
    assert info.value.field == "options.k_hat"
    out = sca.cluster(consensus=BASEBALL_S, options={"k": 3, "k_hat": 4})
    assert out["k"] == 3 and out["gap"] is not None


def test_one_input():
    assert registry.one_input(["labels"]) == "labels"
    for given in ([], ["data", "labels"]):
        with pytest.raises(sca.SCAError, match="exactly one input") as info:
            registry.one_input(given)
        assert info.value.field == "input"
