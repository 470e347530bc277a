"""Batch invariance of the llama.cpp build, on the logits themselves (``np.array_equal``, no tolerance).

For every embedded GGUF: a pass over w tokens gives, row for row, bit for bit the logits of w
one-token passes, for widths 1-48, at contexts whose passes cross 256, 512 and 768 KV cells.
This is what the patched tinyBLAS (``scripts/patches``) buys; ``LlamaCppModel.exact`` reports the
same check on a short probe at load. A negative control shows the check can fail: the same build
with ggml's tiled kernel on every type stock ggml gives it (``GGML_CPU_TILED_MM_ALL_TYPES=1``, read once
per process, so in a subprocess) and repacking off computes the Q4_K products of passes over 16 or
more tokens differently, and the probe at load sees it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from specdraft import LlamaCppModel
from specdraft.backends.llama_cpp.exactness import compare, varied_ids
from specdraft.backends.llama_cpp.target import LlamaSession
from specdraft.models import REGISTRY

pytestmark = pytest.mark.slow

# Every width on each side of the kernels' switches (tinyBLAS from 2 rows, the tiled kernel from 32,
# tiles of 4/8/16 columns) up to 48; benchmarks/llama_batch_invariance.py checks every width 1-48.
WIDTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 48]
# Prefix lengths: the wide passes after them cross the 256-, 512- and 768-cell marks of the KV cache
# (where llama.cpp's attention pads and splits its work differently), plus a short context.
CONTEXTS = [100, 250, 500, 760]


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_width_at_every_context_gives_the_logits_of_one_token_passes(name):
    model = LlamaCppModel.load(name)
    assert model.exact, model.exactness  # the load-time probe agrees
    ids = varied_ids(model, max(CONTEXTS) + max(WIDTHS))
    comparisons = compare(model, ids, CONTEXTS, WIDTHS)  # the contexts grow one from the other
    assert [(c.context, c.width) for c in comparisons] == [(n, w) for n in CONTEXTS for w in WIDTHS]
    assert [c for c in comparisons if not c.exact] == []


NEGATIVE_CONTROL = """
import json, sys
from specdraft import LlamaCppModel
from specdraft.backends.llama_cpp.exactness import compare, varied_ids
from specdraft.backends.llama_cpp.model import LlamaCppConfig
model = LlamaCppModel.load(sys.argv[1], LlamaCppConfig(repack=False))
ids = model.tokenizer.encode("The quick brown fox jumps over the lazy dog. " * 40)
print(json.dumps({"exact": model.exact, "differing": sum(not c.exact for c in compare(model, ids, 100, [8, 16, 32]))}))
"""


def last_line_of(script: str, env: dict[str, str]) -> str:
    """The last line ``script`` prints, run on qwen2.5-coder-0.5b in a fresh process with ``env``
    (llama.cpp reads these settings once per process)."""
    out = subprocess.run(
        [sys.executable, "-c", script, "qwen2.5-coder-0.5b"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    return out.strip().splitlines()[-1]


def test_negative_control_the_tiled_kernel_on_every_type_breaks_it_and_the_probe_sees_it():
    env = dict(os.environ, GGML_CPU_TILED_MM_ALL_TYPES="1")  # Q4_K too, from 32 rows; dot products below
    # qwen2.5-coder-0.5b: Q4_K_M as the 1.5b, a third of its load and passes (differs at 32 rows)
    result = json.loads(last_line_of(NEGATIVE_CONTROL, env))
    assert result["differing"] > 0
    assert result["exact"] is False


PADDED_PASS = """
import hashlib, os, sys
from specdraft import LlamaCppModel
from specdraft.backends.llama_cpp.exactness import MAIN, varied_ids
model = LlamaCppModel.load(sys.argv[1])
ids = varied_ids(model, 316)
context = model.acquire_context()
context.decode(ids[:300], list(range(300)), [(MAIN,)] * 300, [False] * 299 + [True])
rows = context.decode(ids[300:316], list(range(300, 316)), [(MAIN,)] * 16, [True] * 16)
print(os.environ["LLAMA_KV_PAD_MIN"], hashlib.sha256(rows.tobytes()).hexdigest())
"""


def test_the_kv_padding_floor_changes_no_logit():
    """specdraft lowers llama.cpp's padding of the attention's KV cells from 256 to 32
    (``library.KV_PAD_MIN``, llama-cpp-kv-pad.patch): the padding cells are masked and add exact zeros.
    A 16-token pass after 300 tokens attends to 320 cells instead of 512, with the same logits."""
    results = []
    for floor in (None, "256"):
        env = {k: v for k, v in os.environ.items() if k != "LLAMA_KV_PAD_MIN"}
        if floor:
            env["LLAMA_KV_PAD_MIN"] = floor
        results.append(last_line_of(PADDED_PASS, env).split())
    (default_floor, default_logits), (stock_floor, stock_logits) = results
    assert (default_floor, stock_floor) == ("32", "256")  # specdraft's floor unless the user sets one
    assert default_logits == stock_logits


def test_the_prefill_chunk_changes_no_logit(real_model):
    """A prompt is fed ``LlamaCppConfig.prefill_chunk`` tokens a pass (128: a chunk attends only to
    the cells before it, so most of the masked half of a long prompt's attention is skipped). By
    batch invariance the chunk changes no bit: 700 tokens fed in chunks of 512 (the batch, as before),
    128 (the default) and 37 give the same last row, and the same next pass after it."""
    model = real_model("qwen2.5-coder-0.5b", "llama-cpp")
    assert model.config.prefill_chunk == 128
    ids = varied_ids(model, 716)
    rows = []
    for chunk in (512, 128, 37):
        session = LlamaSession(model)
        default, session.context.n_prefill = session.context.n_prefill, chunk
        try:
            last = session.feed(ids[:700], all_logits=False)
            rows.append((last, session.feed(ids[700:716])))  # a 16-token pass after it
        finally:
            session.context.n_prefill = default  # the context goes back to the model's pool
            session.close()
    assert all(last.shape == (1, model.vocab_size) for last, _ in rows)
    for last, after in rows[1:]:
        assert np.array_equal(last, rows[0][0]) and np.array_equal(after, rows[0][1])


def test_the_load_probe_times_its_passes_into_the_cost_profile():
    """So that a process's first request (a CLI call, a server's first answer) drafts from measured
    pass costs instead of guessing, as a warmed-up benchmark does."""
    model = LlamaCppModel.load("smollm2-135m")
    assert [model.cost.known(width) for width in (1, 2, 8, 20)] == [True] * 4
    assert model.cost.estimate(20) > model.cost.estimate(1)
