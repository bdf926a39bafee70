"""The table of stages (sca.pipeline.STAGES), its walk, and results shaped with ids."""

from __future__ import annotations

import numpy as np
import pytest

import sca
from sca import options as registry
from sca.pipeline import stages as table
from tests.core.conftest import BASEBALL_IDS, BASEBALL_S

STARTS = {"S", "source", "scaled"}


def test_each_stage_needs_what_earlier_stages_make():
    made = set(STARTS)
    for stage in table.STAGES:
        assert set(stage.needs) <= made, stage.name
        made |= set(stage.makes)
        assert set(stage.keeps) <= set(stage.makes)
    assert table.TASKS == ("balancing", "spectral", "iteration")
    assert [s.name for s in table.parts("iteration")] == ["iteration", "diagnostics"]


def test_every_option_of_a_stage_is_read_by_it():
    read = {name for stage in table.STAGES for name in stage.options}
    declared = {o.name for o in registry.options_for("core") if o.stage in table.TASKS}
    assert declared <= read
    assert set(table.parts("spectral")[0].options) == {
        "k",
        "k_hat",
        "rule",
        "min_k",
        "max_k",
        "seed",
    }
    assert table.STAGES[0].read({}) == {"tol": 1e-12, "balance_max_iterations": 10_000}


def test_cluster_is_the_walk_shaped_with_ids():
    ids = list(BASEBALL_IDS)
    out = sca.cluster(consensus=BASEBALL_S, ids=ids)
    S = sca.consensus_operator(BASEBALL_S)
    balanced, spec, result, _ = sca.run_stages(S)
    direct = sca.result_dict(
        S, balanced.P, sca.balance_dict(balanced), sca.spectrum_dict(spec), result, ids
    )
    out.pop("timings")
    assert out == direct
    assert out["clusters"] == [
        [ids[i] for i in c] for c in sca.cluster(consensus=BASEBALL_S)["clusters"]
    ]


def test_a_stage_added_to_the_table_is_walked(monkeypatch):
    extra = table.Stage("count", lambda a, o: {"count": a["P"].n}, needs=("P",), makes=("count",))
    monkeypatch.setattr(table, "STAGES", (table.STAGES[0], extra, *table.STAGES[1:]))
    timings: dict = {}
    seen = []
    done = table.walk(
        {"S": sca.consensus_operator(BASEBALL_S), "source": None, "scaled": None},
        registry.validate({}, scope="core"),
        timings=timings,
        progress=lambda stage, fraction: seen.append(stage),
    )
    assert done["count"] == 6 and done["result"]["k"] == 2
    assert list(timings) == ["balancing", "count", "spectral", "iteration", "diagnostics"]
    assert seen == ["balancing", "count", "spectral", "iteration"]


def test_similar_by_a_row_of_p():
    S = sca.consensus_operator(BASEBALL_S)
    P = sca.balance(S).P
    row = P.matmat(np.eye(6)[2])
    out = sca.pipeline.similar_dict(2, "sca", 3, list(BASEBALL_IDS), P=P)
    expected = [i for i in np.argsort(-row, kind="stable") if i != 2][:3]
    assert [r["id"] for r in out["ranked"]] == [BASEBALL_IDS[i] for i in expected]
    assert out["ranked"][0]["score"] == pytest.approx(row[expected[0]])
    assert out["element"] == BASEBALL_IDS[2] and out["method"] == "sca"


def test_a_paged_result_is_shown_with_ids_as_it_is():
    """A paged result lists no cluster members: naming elements by ids leaves it as is."""
    paged = {"k": 2, "per_element": "paged", "cluster_sizes": [2, 1], "solutions": []}
    assert sca.pipeline.with_ids(paged, ["a", "b", "c"]) == paged
