"""Shared fixtures: a tiny tokenizer and tiny random-initialised causal LMs (no weights needed).

Layout: ``tests/`` mirrors the packages (pyproject's package-dir): ``tests/core/...`` tests
``specdraft`` (``core/``) and its subpackages (``tests/core/backends/llama_cpp`` tests
``specdraft.backends.llama_cpp``), ``tests/apps/...``, ``tests/retrieval/...``, ``tests/copydraft``
and ``tests/edge`` the other packages; ``tests/benchmarks``, ``tests/scripts``, ``tests/demos`` and
``tests/docs`` the repository's folders of those names. Tests of the whole tree (the import graph)
sit here at the top.

Helpers shared across folders are plain modules, importable by name from any test (their folders
are put on ``sys.path`` below): ``tiny_models`` (the factories behind these fixtures), ``oracle``,
``chat_checkpoint``, ``hash_embedder``; ``live_server``, ``tiny_service``, ``browser_support``
(tests/apps/service); ``edge_support`` (tests/edge); ``engine_server``, ``vllm_dialect``
(tests/core/backends/engine). Fixtures shared by several modules live in the conftest.py of the
folder above them, never imported from another module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

TESTS = Path(__file__).resolve().parent
HELPER_FOLDERS = ("", "apps/service", "edge", "backends/engine")
sys.path[:0] = [str(TESTS / folder) for folder in HELPER_FOLDERS]

from tiny_models import make_tiny_model, make_tokenizer  # noqa: E402

from specdraft import TransformersModel  # noqa: E402


def _register_benchmarks() -> None:
    """The measurement scripts of benchmarks/ (not installed) import as ``benchmarks.<name>``, without
    the repository root on ``sys.path`` (tests/scripts/test_gpu_run.py keeps it off)."""
    folder = TESTS.parent / "benchmarks"
    spec = importlib.util.spec_from_file_location(
        "benchmarks", folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules["benchmarks"] = package
    spec.loader.exec_module(package)


_register_benchmarks()


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(tokenizer) -> TransformersModel:
    return make_tiny_model(tokenizer, seed=0)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tokenizer):
    """(folder, model): a tiny float32 model saved as a transformers checkpoint, for the command
    line's real loading path."""
    model = make_tiny_model(tokenizer, seed=3, dtype=torch.float32)
    path = tmp_path_factory.mktemp("tiny-checkpoint")
    model.hf_model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path, model


@pytest.fixture(scope="session")
def tiny_draft_model(tokenizer) -> TransformersModel:
    return make_tiny_model(tokenizer, seed=1, layers=1, hidden=32)
