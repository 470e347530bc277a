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
import os
import sys
from pathlib import Path

import pytest
import torch

TESTS = Path(__file__).resolve().parent
HELPER_FOLDERS = ("", "apps/service", "edge", "core/backends/engine")
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


def _pin_xdist_worker() -> None:
    """Under pytest-xdist (``./test.sh`` runs two workers), worker ``gwN`` runs on one CPU of its own
    (N modulo the CPUs this process may use), so that llama.cpp and torch, which size their thread
    pools from the CPUs a process may use, take one thread each and two workers never oversubscribe
    the cores (ggml's threads spin at barriers: two 2-thread passes on 2 cores slow each other down many
    times). Servers a test starts inherit the CPU. Without xdist nothing changes."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    cpus = sorted(os.sched_getaffinity(0))
    if worker.startswith("gw") and len(cpus) > 1:
        os.sched_setaffinity(0, {cpus[int(worker[2:]) % len(cpus)]})
        torch.set_num_threads(1)


_pin_xdist_worker()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the files with real-model (``slow``) tests first, each file's tests together and
    in order: ``./test.sh`` hands whole files to its workers in collection order
    (``--dist loadfile --no-loadscope-reorder``), so the long files start early and the many short ones
    even out the end, instead of one worker finishing minutes before the other."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: files stay whole and in order


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


@pytest.fixture(scope="session")
def real_model():
    """``real_model(name, backend="transformers")``: the registry model ``name`` on the CPU (transformers
    float32, or llama.cpp's GGUF), loaded the first time a test asks for it and shared by every test of
    the session (a model holds no per-generation state). For the tests about exactness or quality on
    real weights; plumbing is tested on the tiny models above."""
    from specdraft import ModelConfig, load_model

    loaded: dict[tuple[str, str], object] = {}

    def get(name: str, backend: str = "transformers"):
        if (name, backend) not in loaded:
            loaded[name, backend] = load_model(ModelConfig(name, device="cpu", backend=backend))
        return loaded[name, backend]

    return get


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory):
    """``llama_server(name)``: the service (``create_app``) serving the registry model ``name`` on
    llama.cpp, live on loopback (waitress, ``live_server.LiveServer``), started the first time a test
    asks for it and shared by the session's tests that drive a real model as clients do (LangChain's
    standard suite, the openai SDK's tool calls, the structured-output demos). Answers are greedy
    and lossless, so a shared server answers each request as a fresh one would."""
    from contextlib import ExitStack

    from live_server import LiveServer

    from specdraft import ModelConfig
    from specdraft.apps.service import ServiceConfig, create_app

    servers: dict[str, LiveServer] = {}
    with ExitStack() as running:

        def get(name: str) -> LiveServer:
            if name not in servers:
                config = ServiceConfig(
                    model=ModelConfig(name, device="cpu", backend="llama-cpp"),
                    index_root=str(tmp_path_factory.mktemp("indexes")),
                )
                servers[name] = running.enter_context(LiveServer(create_app(config)))
            return servers[name]

        yield get
