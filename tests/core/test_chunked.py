"""A Dask label matrix clustered on a cluster of worker processes: the in-memory
answer, with nothing of size n on the client (sca.operators.chunked,
sca.chunked_iteration)."""

import tracemalloc

import numpy as np
import pytest

import sca
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
    than a quarter of one n-vector of floats.  Gathering the labels (n x r
    bytes), the scaling d, an iterate or the labels would each add several.

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
        (_, _, _, _), low = client_peak(tmp_path / str(small))
        (balanced, spec, result, _), high = client_peak(tmp_path / str(large))
        assert type(balanced.d) is da.Array and type(result.labels) is da.Array
        assert result.labels.chunks == balanced.d.chunks == ((large // CHUNKS,) * CHUNKS,)
        labels = np.asarray(result.labels)
    grown = high - low
    assert grown < 0.25 * 8 * (large - small), (low, high)
    stack = tmp_path / str(large)
    memory = np.concatenate([np.load(stack / f"{i}.npy") for i in range(CHUNKS)])
    _, reference, in_memory, _ = sca.run_stages(sca.membership_operator(memory))
    assert spec.k == reference.k == 4
    assert sca.evaluate(labels, in_memory.labels)["ari"] == 1.0
    assert sca.evaluate(labels, truths[large])["ari"] == 1.0
