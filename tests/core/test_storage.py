"""Label matrices named by reference (sca.storage): roots, the checks that keep a
reference inside its root, and the formats opened as Dask arrays."""

from __future__ import annotations

import os
import sys

import dask.array as da
import numpy as np
import pytest

import sca
from sca import storage
from sca.errors import SCAError
from sca.planted import planted_runs, planted_truth
from tests.storage_roots import storage_root


@pytest.fixture
def labels():
    rng = np.random.default_rng(3)
    return planted_runs(planted_truth(600, [1, 1, 1], rng), 8, 0.2, rng)


@pytest.fixture
def root(tmp_path, labels):
    base = storage_root(tmp_path, labels, 250)
    os.symlink(base / "labels.npy", base / "inside.npy")
    leaky = base / "leaky"
    leaky.mkdir()
    os.symlink(tmp_path / "outside.npy", leaky / "0.npy")
    return base


def test_roots_are_name_equals_location(tmp_path):
    assert storage.parse_roots(f" a={tmp_path} , b=s3://bucket/x/ ") == {
        "a": str(tmp_path),
        "b": "s3://bucket/x",
    }
    assert storage.parse_roots(None) == storage.parse_roots("") == {}
    for bad in ("a", "=/x", "a=relative/dir", f"a={tmp_path},a={tmp_path}", "a b=/x"):
        with pytest.raises(ValueError):
            storage.parse_roots(bad)


@pytest.mark.parametrize(
    ("root_name", "path", "field"),
    [
        ("nowhere", "labels.npy", "labels.root"),
        ("c", "/etc/passwd", "labels.path"),
        ("c", "../outside.npy", "labels.path"),
        ("c", "stack/../../outside.npy", "labels.path"),
        ("c", "escape.npy", "labels.path"),
        ("c", "leaky", "labels.path"),
        ("c", "missing.npy", "labels.path"),
        ("c", "", "labels.path"),
        ("c", "file:///etc/passwd", "labels.path"),
    ],
)
def test_a_reference_stays_inside_its_root(root, root_name, path, field):
    with pytest.raises(SCAError) as caught:
        storage.resolve({"c": str(root)}, root_name, path)
    assert caught.value.field == field


def test_links_within_the_root_are_followed(root):
    assert storage.resolve({"c": str(root)}, "c", "inside.npy") == str(root / "labels.npy")


@pytest.mark.parametrize("path", ["labels.npy", "stack", "./stack/"])
def test_formats_open_lazily_as_the_labels(root, labels, path):
    location = storage.resolve({"c": str(root)}, "c", path)
    opened = storage.open_labels(location)
    assert opened.shape == labels.shape and opened.chunks[1] == (labels.shape[1],)
    assert np.array_equal(opened.compute(), labels)
    assert np.array_equal(storage.load_labels(location), labels)


def test_a_small_block_size_gives_several_row_blocks(root, labels, monkeypatch):
    monkeypatch.setattr(storage, "BLOCK_ROWS", 128)
    opened = storage.open_labels(str(root / "labels.npy"))
    assert len(opened.chunks[0]) == 5 and np.array_equal(opened.compute(), labels)


def test_what_is_not_a_label_matrix_is_refused(root, tmp_path):
    with pytest.raises(SCAError, match="integers"):
        storage.open_labels(str(root / "floats.npy"))
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    with pytest.raises(SCAError, match="npy stack") as caught:
        storage.open_labels(str(other))
    assert caught.value.field == "labels.path"
    (root / "text.npy").write_text("not numpy")
    with pytest.raises(SCAError, match="not a .npy"):
        storage.open_labels(str(root / "text.npy"))


def test_zarr_without_its_package_is_a_clear_error(root, monkeypatch):
    monkeypatch.setitem(sys.modules, "zarr", None)  # as if not installed: import fails
    (root / "x.zarr").mkdir()
    with pytest.raises(SCAError, match="zarr package"):
        storage.open_labels(str(root / "x.zarr"))


def test_a_zarr_store_is_clustered_as_its_labels_in_memory(root, labels):
    pytest.importorskip("zarr")
    da.from_array(labels, chunks=(250, -1)).to_zarr(str(root / "runs.zarr"))
    opened = storage.open_labels(str(root / "runs.zarr"))
    assert opened.chunks[0] == (250, 250, 100) and np.array_equal(opened.compute(), labels)
    found = sca.run_stages(sca.membership_operator(opened))[2]
    expected = sca.run_stages(sca.membership_operator(labels))[2]
    assert sca.evaluate(np.asarray(found.labels), expected.labels)["ari"] == 1.0


def test_a_zarr_store_without_an_array_is_named(root):
    zarr = pytest.importorskip("zarr")
    (root / "empty.zarr").mkdir()
    zarr.open_group(str(root / "group.zarr"), mode="w")
    for name in ("empty.zarr", "group.zarr"):
        with pytest.raises(SCAError, match="not a zarr array") as error:
            storage.open_labels(str(root / name))
        assert error.value.field == "labels.path"


def test_the_fingerprint_follows_the_files(root, labels):
    location = str(root / "stack")
    first = storage.fingerprint(location)
    assert storage.fingerprint(location) == first
    da.to_npy_stack(location, da.from_array(labels[::-1].copy(), chunks=(100, -1)))
    assert storage.fingerprint(location) != first


def test_written_labels_read_back(tmp_path, labels):
    vector = labels[:, 0].astype(np.int64)
    storage.write_labels(vector, str(tmp_path / "out"), block_rows=100)
    assert np.array_equal(storage.load_stack(str(tmp_path / "out")), vector)
    storage.write_labels(da.from_array(labels, chunks=(200, -1)), str(tmp_path / "m"))
    assert np.array_equal(storage.open_labels(str(tmp_path / "m")).compute(), labels)


@pytest.mark.parametrize("lo, hi", [(0, 10), (95, 205), (190, 600), (600, 600), (150, 150)])
def test_a_page_of_a_stack_reads_its_rows(tmp_path, labels, lo, hi):
    vector = labels[:, 0].astype(np.int64)
    storage.write_labels(vector, str(tmp_path / "out"), block_rows=100)
    storage.write_labels(labels, str(tmp_path / "m"), block_rows=100)
    assert np.array_equal(storage.stack_rows(str(tmp_path / "out"), lo, hi), vector[lo:hi])
    assert np.array_equal(storage.stack_rows(str(tmp_path / "m"), lo, hi), labels[lo:hi])


def test_a_page_opens_only_the_blocks_before_its_end(tmp_path, labels):
    """A block after the page is never opened: garbage there does not disturb it."""
    vector = labels[:, 0].astype(np.int64)
    storage.write_labels(vector, str(tmp_path / "out"), block_rows=100)
    (tmp_path / "out" / "3.npy").write_bytes(b"not an array")
    assert np.array_equal(storage.stack_rows(str(tmp_path / "out"), 120, 250), vector[120:250])
    with pytest.raises(SCAError, match="not a .npy file"):
        storage.stack_rows(str(tmp_path / "out"), 250, 350)


def test_the_operator_of_a_referenced_matrix_is_the_in_memory_one(root, labels):
    S = sca.membership_operator(storage.open_labels(str(root / "stack")))
    x = np.random.default_rng(0).random(labels.shape[0])
    expected = sca.membership_operator(labels)
    assert np.allclose(S.matmat(x), expected.matmat(x))


def test_a_url_root_goes_through_fsspec():
    """An object-storage root (here fsspec's in-memory filesystem): the same checks,
    existence asked of the filesystem, and only .zarr stores read there."""
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/sca-test-bucket/cohort/labels.zarr/.zarray", b"{}")
    fs.pipe("/sca-test-bucket/cohort/labels.npy", b"x")
    roots = storage.parse_roots("mem=memory://sca-test-bucket/cohort")
    location = storage.resolve(roots, "mem", "labels.zarr")
    assert location == "memory://sca-test-bucket/cohort/labels.zarr"
    for path in ("missing.zarr", "../cohort/labels.zarr", "/labels.zarr"):
        with pytest.raises(SCAError) as caught:
            storage.resolve(roots, "mem", path)
        assert caught.value.field == "labels.path"
    with pytest.raises(SCAError, match="only .zarr"):
        storage.open_labels(storage.resolve(roots, "mem", "labels.npy"))
    first = storage.fingerprint(location)
    fs.pipe("/sca-test-bucket/cohort/labels.zarr/0.0", b"block")
    assert storage.fingerprint(location) != first
    fs.rm("/sca-test-bucket", recursive=True)


@pytest.mark.parametrize("rows", [64, 1 << 14])
def test_p_on_disk_is_the_in_memory_p(tmp_path, labels, monkeypatch, rows):
    """The stacked P (labels and D read a block at a time) multiplies, ranks an
    element's row and finds its custom cluster as the in-memory P does."""
    monkeypatch.setattr(sca.operators.stacked, "ROWS", rows)
    d = np.random.default_rng(1).uniform(0.5, 1.5, labels.shape[0])
    storage.write_labels(labels, str(tmp_path / "labels"), block_rows=250)
    storage.write_labels(d, str(tmp_path / "scale"), block_rows=100)
    memory = sca.membership_operator(labels).scaled(d)
    for location in (str(tmp_path / "labels"), str(tmp_path / "labels.npy")):
        np.save(tmp_path / "labels.npy", labels)
        spans = None if location.endswith(".npy") else labels.max(axis=0) + 1  # given or read
        P = sca.operators.StackedOperator(location, str(tmp_path / "scale"), spans)
        X = np.random.default_rng(2).random((labels.shape[0], 3))
        assert np.allclose(P.matmat(X), memory.matmat(X))
        assert np.allclose(P.diagonal(), memory.diagonal())
        for element in (0, 299, 599):
            got, expected = (sca.custom.row_neighbours(Q, element, 7) for Q in (P, memory))
            assert [i for i, _ in got] == [i for i, _ in expected]
            assert np.allclose([s for _, s in got], [s for _, s in expected])
        got, expected = (sca.custom_cluster(Q, 5, 3) for Q in (P, memory))
        assert (got.cluster, got.iterations) == (expected.cluster, expected.iterations)
        assert np.allclose([s for _, s in got.ranked], [s for _, s in expected.ranked])
