"""The llama.cpp backend on the embedded GGUF models: the built library decodes, its tokenizer and
chat template agree with transformers', a wide pass computes every row exactly as one-token passes
do (what makes speculative == plain on llama.cpp), and a GGUF draft model drafts losslessly."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
from oracle import Recording

from specdraft import (
    Draft,
    GenerationConfig,
    LlamaCppModel,
    ModelConfig,
    SpeculativeGenerator,
    TokenChooser,
    TransformersModel,
)
from specdraft.drafters import DraftModelConfig, DraftModelDrafter

pytestmark = pytest.mark.slow

TEXTS = [
    "Correct the grammar: She go to school every days and she like it.",
    "def add(a, b):\n    return a + b  # ünïcödé 日本語 🙂",
    "Summarize: The committee met on Tuesday to discuss the budget. The budget was approved after a long debate.",
]


@pytest.fixture(scope="module")
def smollm2_gguf():
    return LlamaCppModel.load("smollm2-135m")


@pytest.fixture(scope="module")
def smollm2_hf():
    return TransformersModel.load(ModelConfig("smollm2-135m", device="cpu"))


def test_the_built_library_decodes(smollm2_gguf):
    ids = smollm2_gguf.encode_chat([{"role": "user", "content": "Repeat: the cat sat on the mat."}])
    result = SpeculativeGenerator(smollm2_gguf).generate(ids, None, GenerationConfig(max_new_tokens=12))
    assert result.token_ids and result.text.strip()
    assert result.stats.target_forward_passes == len(result.token_ids)


def test_passes_from_many_python_threads_leave_no_thread_pools_behind(smollm2_gguf):
    """A server runs passes on several request threads. The build uses ggml's own thread pool, made for
    a pass and gone after it: no thread keeps a pool of idle workers. (An OpenMP build keeps one per
    thread that ever ran a pass, in the libgomp it shares with torch; with more such threads than
    CPUs, libgomp sleeps at every barrier and passes took 1.7x as long: docs/llama-exactness.md.)"""
    ids = smollm2_gguf.tokenizer.encode("The quick brown fox jumps over the lazy dog.")
    ran, finish = threading.Barrier(5), threading.Event()

    def request_thread() -> None:
        context = smollm2_gguf.acquire_context()
        try:
            with smollm2_gguf.lock:
                context.decode(ids, list(range(len(ids))), [(0,)] * len(ids), [True] * len(ids))
        finally:
            smollm2_gguf.release_context(context)
        ran.wait()
        finish.wait()

    before = len(os.listdir("/proc/self/task"))
    threads = [threading.Thread(target=request_thread) for _ in range(4)]
    for thread in threads:
        thread.start()
    ran.wait()  # every thread has run its pass and is still alive
    during = len(os.listdir("/proc/self/task"))
    finish.set()
    for thread in threads:
        thread.join()
    assert during == before + 4  # the four request threads themselves, nothing kept beside them


def test_tokenizer_and_chat_template_agree_with_transformers(smollm2_gguf, smollm2_hf):
    for text in TEXTS:
        assert smollm2_gguf.tokenizer.encode(text) == smollm2_hf.tokenizer.encode(text)
        assert smollm2_gguf.encode(text) == smollm2_hf.encode(text)
        ids = smollm2_hf.tokenizer.encode(text)
        assert smollm2_gguf.decode(ids) == smollm2_hf.decode(ids)
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]
        assert smollm2_gguf.encode_chat(messages) == smollm2_hf.encode_chat(messages)
    assert smollm2_gguf.tokenizer.fingerprint() == smollm2_hf.tokenizer.fingerprint()
    assert smollm2_gguf.vocab_size == smollm2_hf.vocab_size


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {"type": "function", "function": {"name": "get_time"}},
]
TOOL_HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather and time in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": {}}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 °C"},
    {"role": "tool", "tool_call_id": "call_2", "content": "12:05"},
]


def test_tools_and_tool_calls_render_alike_on_both_backends():
    """``encode_chat(messages, tools)``: the template's tools section, replayed ``<tool_call>`` blocks
    (arguments given as objects) and tool results, the same tokens on llama.cpp and transformers."""
    gguf, hf = (
        LlamaCppModel.load("qwen2.5-coder-0.5b"),
        TransformersModel.load(ModelConfig("qwen2.5-coder-0.5b", device="cpu")),
    )
    for messages in (TOOL_HISTORY[:2], TOOL_HISTORY):
        ids = gguf.encode_chat(messages, TOOLS)
        assert ids == hf.encode_chat(messages, TOOLS)
        assert ids == hf.tokenizer.encode(
            hf.hf_tokenizer.apply_chat_template(messages, tools=TOOLS, add_generation_prompt=True, tokenize=False)
        )
        assert gguf.decode(ids) == hf.decode(ids)
        assert '"name": "get_weather"' in gguf.decode(ids) and ids != gguf.encode_chat(messages)
        assert gguf.encode_chat(messages) == hf.encode_chat(messages)
    replayed = gguf.encode_chat(TOOL_HISTORY, TOOLS)
    tag = hf.tokenizer.encode("<tool_call>")
    assert len(tag) == 1 and replayed.count(tag[0]) == 4  # twice in the template's instructions, once per call
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in gguf.decode(replayed)


@pytest.mark.parametrize("name", ["smollm2-135m", "qwen2.5-coder-0.5b"])
def test_a_wide_pass_computes_each_row_as_one_token_passes_do(name):
    """Bit for bit, not within a tolerance: the property ``LlamaCppModel.exact`` claims."""
    model = LlamaCppModel.load(name)
    assert model.exact
    for text in TEXTS:
        ids = model.encode(text)
        narrow = model.new_target(TokenChooser())
        narrow.prefill(ids[:4])
        rows = []
        for token in ids[4:]:
            rows.append(np.asarray(narrow.verify(Draft.empty()).logits[-1]))
            narrow.commit([], token)
        rows.append(np.asarray(narrow.verify(Draft.empty()).logits[-1]))
        wide = model.new_target(TokenChooser())
        wide.prefill(ids[:4])
        assert np.array_equal(np.asarray(wide.verify(Draft.chain(ids[4:])).logits), np.stack(rows))


@pytest.mark.parametrize("width", [1, 3])
def test_a_gguf_draft_model_drafts_losslessly_for_a_transformers_target(smollm2_gguf, smollm2_hf, width):
    ids = smollm2_hf.encode_chat([{"role": "user", "content": TEXTS[2]}])
    config = GenerationConfig(max_new_tokens=40)
    plain = SpeculativeGenerator(smollm2_hf).generate(ids, None, config)
    drafter = Recording(
        DraftModelDrafter(smollm2_gguf, smollm2_hf.vocab_size, config=DraftModelConfig(tree_width=width))
    )
    result = SpeculativeGenerator(smollm2_hf).generate(ids, drafter, config)
    assert result.token_ids == plain.token_ids
    assert result.stats.accepted_tokens > 0  # the same weights in Q4 mostly agree with float32
    if width > 1:
        assert any(not d.is_chain for d in drafter.drafts)


def test_sampled_drafts_carry_their_distributions(smollm2_gguf):
    from specdraft import SamplingParams
    from specdraft.sampling import PositionalRandom

    sampling = SamplingParams(temperature=0.9)
    drafter = DraftModelDrafter(
        smollm2_gguf, smollm2_gguf.vocab_size, sampling, PositionalRandom(3), DraftModelConfig(tree_width=2)
    )
    draft = drafter.propose(smollm2_gguf.encode(TEXTS[0]), 6)
    assert len(draft) == 6 and draft.probs is not None and draft.probs.shape == (6, smollm2_gguf.vocab_size)
    for node, token in enumerate(draft.tokens):
        assert float(draft.probs[node][token]) > 0


def test_generate_command_keeps_its_json_contract_on_llama_cpp(capsys):
    from specdraft.apps.cli import main

    code = main(
        [
            "generate",
            "--backend",
            "llama-cpp",
            "--model",
            "smollm2-135m",
            "--max-new-tokens",
            "12",
            "--json",
            "--chat",
            "Repeat: the cat sat on the mat.",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == {"text", "token_ids", "prompt_token_ids", "finish_reason", "model", "drafter", "stats"}
    assert payload["stats"]["exact"] is True and payload["token_ids"]
