"""DocumentIndex crash safety: a save that dies (simulated, or a real SIGKILL) leaves a loadable index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hash_embedder import HashEmbedder
from index_helpers import DOCS, filled_index, results

from specdraft import files as files_module
from specdraft.retrieval import index_store
from specdraft.retrieval.index import DocumentIndex, IndexConfig

HERE = Path(__file__).parent.parent  # where hash_embedder.py is


class Crash(BaseException):
    """Stands for the process dying at that point (nothing after it runs, no cleanup handler catches it)."""


def _crash(*args, **kwargs):
    raise Crash()


@pytest.fixture
def previous(tmp_path):
    """An index saved in tmp_path/ix, and a bigger in-memory successor about to be saved over it."""
    old = filled_index()
    old.save(tmp_path / "ix")
    new = filled_index()
    new.add([{"id": "owls", "text": "Owls hunt at night."}])
    return tmp_path / "ix", old, new


def _assert_loads_as(path: Path, expected: DocumentIndex) -> None:
    loaded = DocumentIndex.load(path, HashEmbedder())
    assert (len(loaded), loaded.documents) == (len(expected), expected.documents)
    assert results(loaded, "owls cat tea", k=5) == results(expected, "owls cat tea", k=5)


@pytest.mark.parametrize(
    ("module", "step"), [(index_store, "_sha256_and_fsync"), (files_module, "_move_aside"), (files_module, "_move_in")]
)
def test_a_save_that_dies_before_the_swap_leaves_the_previous_index(previous, monkeypatch, module, step):
    path, old, new = previous
    monkeypatch.setattr(module, step, _crash)
    with pytest.raises(Crash):
        new.save(path)
    if step == "_move_in":
        assert not path.exists()  # the previous index waits aside
    _assert_loads_as(path, old)
    monkeypatch.undo()
    new.save(path)  # the next save recovers and cleans up
    _assert_loads_as(path, new)
    assert sorted(p.name for p in path.parent.iterdir()) == ["ix"]


def test_a_save_that_dies_after_the_swap_leaves_the_new_index(previous, monkeypatch):
    path, old, new = previous
    monkeypatch.setattr(files_module, "_discard", _crash)
    with pytest.raises(Crash):
        new.save(path)
    assert (path.parent / ".ix.old").is_dir()
    _assert_loads_as(path, new)
    monkeypatch.undo()
    old.save(path)
    _assert_loads_as(path, old)
    assert sorted(p.name for p in path.parent.iterdir()) == ["ix"]


def test_a_half_written_temporary_folder_is_ignored_and_cleaned(previous):
    path, old, new = previous
    half = path.parent / ".ix.tmp-12345-deadbeef"
    half.mkdir()
    (half / "index.faiss").write_bytes(b"partial")
    _assert_loads_as(path, old)
    new.save(path)
    assert not half.exists()


_KILLED_SAVER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from hash_embedder import HashEmbedder
    from specdraft.retrieval.index import DocumentIndex, IndexConfig

    index = DocumentIndex.create(IndexConfig(), HashEmbedder(dim=int(sys.argv[3])))
    index.add({"id": f"d{i}", "text": f"document number {i} about owls"} for i in range(int(sys.argv[4])))
    print("saving", flush=True)
    index.save(sys.argv[2])
    print("saved", flush=True)
    """
)


def test_a_save_killed_midway_leaves_a_loadable_index(tmp_path):
    """A real SIGKILL while a large index (~100 MB) is being written over a previous one."""
    path = tmp_path / "ix"
    dim, n_docs = 1024, 25_000
    old = DocumentIndex.create(IndexConfig(), HashEmbedder(dim=dim))
    old.add(DOCS)
    old.save(path)
    command = [sys.executable, "-c", _KILLED_SAVER, str(HERE), str(path), str(dim), str(n_docs)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as saver:
        try:
            assert saver.stdout.readline() == "saving\n"
            deadline = time.monotonic() + 60
            while not list(tmp_path.glob(".ix.tmp-*")) and time.monotonic() < deadline:
                time.sleep(0.001)
            time.sleep(0.05)  # into the middle of writing the new files
        finally:
            os.kill(saver.pid, signal.SIGKILL)
    assert saver.returncode == -signal.SIGKILL
    loaded = DocumentIndex.load(path, HashEmbedder(dim=dim))
    assert len(loaded) in (len(old), n_docs)  # the previous index, or the new one if the swap had happened
    if len(loaded) == len(old):
        assert results(loaded, "cat purrs") == results(old, "cat purrs")
    loaded.add([{"id": "after", "text": "added after the crash"}])
    loaded.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]
