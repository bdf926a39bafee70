"""A Dask label matrix clustered on a cluster of worker processes: the in-memory
answer, with nothing of size n on the client (sca.operators.chunked,
sca.chunked_iteration)."""

import tracemalloc

import numpy as np
import pytest

import sca
from sca.options import MANY_CENTRES
from sca.planted import planted_runs, planted_truth

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")
subprocess_cluster = pytest.importorskip("distributed.deploy.subprocess")

CHUNKS = 8


def planted_stack(path, n: int, runs: int, seed: int):
    """Planted label runs written as an npy stack of CHUNKS row chunks (the
    workers read them; the client never holds them); returns the truth."""
    rng = np.random.default_rng(seed)
    truth = planted_truth(n, [1, 1, 2, 3], rng)
    labels = planted_runs(truth, runs, 0.25, rng, dtype=np.uint8)
    da.to_npy_stack(path, da.from_array(labels, chunks=(-(-n // CHUNKS), -1)))
    return truth


def client_peak(path):
    """The stages on the stack at ``path``: their result and the client's peak
    of traced memory (bytes) while they ran."""
    tracemalloc.start()
    try:
        S = sca.membership_operator(da.from_npy_stack(str(path)))
        found = sca.run_stages(S)
        return found, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_chunked_stages_keep_n_sized_data_on_the_workers(tmp_path):
    """Same k and partition as the in-memory operator, and the client's peak
    memory does not grow with n: a quadrupled n (the same chunks) adds less
    than half of what the label matrix grows by.  Gathering the labels (n x r
    bytes) adds more than all of it, and the scaling d gathered at each
    balancing step many times that.  (The bound is not one n-vector of floats:
    the client's message buffers move its peak by up to a megabyte.)

    The scheduler and the workers run in processes of their own, so the
    client's traced memory is the client's alone."""
    small, large = 25_000, 100_000
    runs = 40
    truths = {n: planted_stack(tmp_path / str(n), n, runs, seed=n) for n in (small, large)}
    with (
        subprocess_cluster.SubprocessCluster(
            n_workers=2,
            threads_per_worker=1,
            dashboard_address=":0",
            worker_class="distributed.Worker",
        ) as cluster,
        distributed.Client(cluster),
    ):
        client_peak(tmp_path / str(small))  # imports and compiled kernels, once
        low = client_peak(tmp_path / str(small))[1]
        # The lesser peak of two: the client's message buffers add up to about a
        # megabyte to one run's peak or another's.
        runs_of_large = [client_peak(tmp_path / str(large)) for _ in range(2)]
        high = min(peak for _, peak in runs_of_large)
        balanced, spec, result, _ = runs_of_large[-1][0]
        labels = np.asarray(result.labels)
    # Half the growth of the label matrix (runs bytes an element): the labels
    # gathered for the null draw add more than all of it, d gathered at each
    # balancing step many times that.
    assert high - low < 0.5 * runs * (large - small), (low, high)
    assert type(balanced.d) is da.Array and type(result.labels) is da.Array
    assert result.labels.chunks == balanced.d.chunks == ((large // CHUNKS,) * CHUNKS,)
    stack = tmp_path / str(large)
    memory = np.concatenate([np.load(stack / f"{i}.npy") for i in range(CHUNKS)])
    _, reference, in_memory, _ = sca.run_stages(sca.membership_operator(memory))
    assert spec.k == reference.k == 4
    assert sca.evaluate(labels, in_memory.labels)["ari"] == 1.0
    assert sca.evaluate(labels, truths[large])["ari"] == 1.0


@pytest.fixture(scope="module")
def local_client():
    """A cluster of two worker threads (the null draws' tasks are small)."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def pair_statistic(codes: np.ndarray, a: int, b: int) -> float:
    """The sum of squares of the joint counts of runs a and b: the pairs of
    elements together in both (S's off-diagonal weight, up to constants)."""
    table = np.zeros((codes[:, a].max() + 1, codes[:, b].max() + 1))
    np.add.at(table, (codes[:, a], codes[:, b]), 1)
    return float((table**2).sum())


def test_chunked_null_draw_has_the_in_memory_null_distribution(local_client):
    """The chunked null (hypergeometric counts per chunk, each chunk shuffled
    locally) keeps every run's label counts exactly and moves labels across
    chunks; its pair statistics match those of the in-memory null (one
    permutation, each run rotated) within sampling error."""
    rng = np.random.default_rng(11)
    n, chunk = 600, 100
    labels = planted_runs(planted_truth(n, [1, 2, 3], rng), 4, 0.2, rng, dtype=np.uint8)
    chunked = sca.membership_operator(da.from_array(labels, chunks=(chunk, -1)))
    in_memory = sca.membership_operator(labels)
    counts = [np.bincount(labels[:, j], minlength=3) for j in range(4)]
    draws = 200
    stats: dict[str, list] = {"chunked": [], "memory": []}
    first_chunk = []
    draw_rng = np.random.default_rng(12)
    for _ in range(draws):
        null = np.asarray(chunked.null_draw(draw_rng).codes)
        for j in range(4):
            assert np.array_equal(np.bincount(null[:, j], minlength=3), counts[j])
        first_chunk.append(np.count_nonzero(null[:chunk, 0] == 0))
        stats["chunked"].append([pair_statistic(null, 0, 1), pair_statistic(null, 2, 3)])
        null = np.asarray(in_memory.null_draw(draw_rng).codes)
        stats["memory"].append([pair_statistic(null, 0, 1), pair_statistic(null, 2, 3)])
    got, ref = np.array(stats["chunked"]), np.array(stats["memory"])
    error = np.sqrt(got.var(axis=0, ddof=1) / draws + ref.var(axis=0, ddof=1) / draws)
    assert np.all(np.abs(got.mean(axis=0) - ref.mean(axis=0)) < 4 * error)
    assert got.std(axis=0).min() > 0  # the draws differ
    # the first chunk's share of run 0's label 0: hypergeometric, mean counts * chunk / n
    expected = counts[0][0] * chunk / n
    spread = np.std(first_chunk, ddof=1)
    assert spread > 0 and abs(np.mean(first_chunk) - expected) < 4 * spread / np.sqrt(draws)


def test_the_paged_result_is_the_listed_one_without_its_lists(local_client):
    """The paged result of a chunked operator (sizes, confidences and uncoupling as
    reductions over its blocks) agrees with the listed result of the same
    clustering on the in-memory operator; its per-element arrays are its lists.
    The stages run in memory (the chunked ones are tested above): the same P and
    partition are then handed to the chunked form as Dask arrays."""
    rng = np.random.default_rng(5)
    labels = planted_runs(planted_truth(3000, [1, 1, 2], rng), 12, 0.25, rng, dtype=np.uint8)
    options = sca.options.validate({"starts": 3}, n=3000, scope="core")
    memory = sca.membership_operator(labels)
    done = sca.pipeline.walk({"S": memory, "source": None, "scaled": None}, options)
    listed, found = done["result"], done["iteration"]
    S = sca.membership_operator(da.from_array(labels, chunks=(400, -1)))
    P = S.scaled(done["P"].scale)
    rows = (400, -1)
    chunked = sca.IterationResult(
        da.from_array(found.labels, chunks=400),
        found.iterations,
        [(da.from_array(sol, chunks=400), freq) for sol, freq in found.solutions],
        da.from_array(found.membership, chunks=rows),
        failed_starts=found.failed_starts,
    )
    paged, arrays = sca.pipeline.paged_result(S, P, done["balance"], done["choice"], chunked)
    assert paged["per_element"] == "paged" and paged["k"] == listed["k"] == 3
    assert all(type(array) is da.Array for array in arrays.values())  # nothing gathered
    for field in ("clusters", "labels", "confidence", "membership", "ids"):
        assert field not in paged
    assert paged["cluster_sizes"] == [len(members) for members in listed["clusters"]]
    for field in ("cluster_confidence", "cluster_uncoupling"):
        assert np.allclose(paged[field], listed[field], atol=2e-6)
    for which in ("S", "P"):
        assert np.isclose(paged["uncoupling"][which], listed["uncoupling"][which])
    assert set(listed) - set(paged) == {"clusters", "labels", "confidence", "membership"}
    assert set(paged) - set(listed) == {"per_element", "cluster_sizes"}
    assert [s["frequency"] for s in paged["solutions"]] == [
        s["frequency"] for s in listed["solutions"]
    ]
    assert np.array_equal(arrays["labels"].compute(), listed["labels"])
    assert np.allclose(arrays["confidence"].compute(), listed["confidence"], atol=2e-6)
    assert np.allclose(arrays["membership"].compute(), listed["membership"], atol=2e-6)


@pytest.mark.slow
# the iterates' K x b coefficients (K = 9,000 labels here) go with each step's graph
@pytest.mark.filterwarnings("ignore:Sending large graph")
def test_many_clusters_are_split_by_their_pivots_on_the_cluster(local_client):
    """Beyond MANY_CENTRES clusters the chunked iteration splits the rows by
    pivots, as in memory (sca.splits.PivotSplit): every planted block found."""
    rng = np.random.default_rng(3)
    k = MANY_CENTRES + 44
    truth = planted_truth(20 * k, [1] * k, rng)
    labels = planted_runs(truth, 30, 0.25, rng, dtype=np.uint16)
    chunked = da.from_array(labels, chunks=(truth.size // 4, -1))
    found = sca.iterate(sca.balance(sca.membership_operator(chunked)).P, k)
    assert type(found.labels) is da.Array
    assert sca.evaluate(np.asarray(found.labels), truth)["ari"] == 1.0
