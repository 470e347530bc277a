"""llama-cpp-python on another llama.cpp build, in a worker process (`bench --stock-llama-lib`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specdraft import ModelConfig
from specdraft.apps.bench.llama_build_peer import OtherBuildPeer, lib_folder
from specdraft.apps.cli import main


def test_a_folder_without_libllama_is_refused_with_what_is_wanted(tmp_path):
    with pytest.raises(ValueError, match="no libllama in this folder.*build_stock_llama.sh"):
        lib_folder(tmp_path)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--backend", "llama-cpp", "--stock-llama-lib", "/nowhere"], "--stock-llama-lib /nowhere: no libllama"),
        (["--stock-llama-lib", "/nowhere"], "only for the text and structured benchmarks with --backend llama-cpp"),
    ],
)
def test_bench_refuses_a_bad_stock_build_before_loading_anything(tmp_path, extra, message):
    with pytest.raises(SystemExit, match=message):
        main(["bench", "chat", "--limit", "1", "--out", str(tmp_path), *extra])


@pytest.mark.slow
def test_the_worker_on_the_installed_build_gives_the_in_process_peers_tokens():
    import llama_cpp

    from specdraft.apps.bench.llama_peers import LlamaCppPeer
    from specdraft.apps.bench.methods import BenchCase
    from specdraft.apps.model_pool import ModelPool

    model = ModelPool(ModelConfig(backend="llama-cpp")).get("smollm2-135m")
    case = BenchCase(
        "c0", tuple(model.encode_chat([{"role": "user", "content": "Repeat: the cat sat on the mat."}])), 12
    )
    here = LlamaCppPeer("here", model.file.path, model.max_length, model.threads).run(case)
    installed = Path(llama_cpp.__file__).parent / "lib"
    peer = OtherBuildPeer("other", installed, model.file.path, model.max_length, model.threads)
    try:
        first, again = peer.run(case), peer.run(case)
    finally:
        peer.close()
    assert first.method == "other" and first.prompt_id == "c0"
    assert first.token_ids == here.token_ids == again.token_ids  # same build, greedy: the same tokens
    assert first.forward_passes == len(first.token_ids)  # prefill + one pass per later token
    assert 0 < first.first_token_s <= first.wall_s


@pytest.mark.slow
def test_the_constrained_worker_gives_the_in_process_chat_peers_answer():
    import llama_cpp

    from specdraft.apps.bench.structured_bench import StructuredBenchConfig, build_cases
    from specdraft.apps.bench.structured_methods import StructuredMeasurement
    from specdraft.apps.bench.structured_peer import LlamaCppChatPeer
    from specdraft.apps.model_pool import ModelPool

    model = ModelPool(ModelConfig(backend="llama-cpp")).get("smollm2-135m")
    case = build_cases(model, StructuredBenchConfig(limit=1, tasks=("extract",), max_new_tokens=24))[0]
    here = LlamaCppChatPeer(model.file.path, model.max_length, model.threads).run(case)
    installed = Path(llama_cpp.__file__).parent / "lib"
    peer = OtherBuildPeer("other", installed, model.file.path, model.max_length, model.threads, "constrained")
    try:
        there = peer.run(case)
    finally:
        peer.close()
    assert isinstance(there, StructuredMeasurement) and there.method == "other" and there.task == "extract"
    assert (there.token_ids, there.text, there.same_prompt) == (here.token_ids, here.text, here.same_prompt)


def test_an_unknown_kind_is_refused(tmp_path):
    with pytest.raises(ValueError, match="kind must be one of plain, constrained"):
        OtherBuildPeer("x", tmp_path, "model.gguf", 512, 1, kind="sampled")
