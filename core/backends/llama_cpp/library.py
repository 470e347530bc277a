"""The llama.cpp library through llama-cpp-python's low-level bindings: a model file, and contexts.

``LlamaContext`` is one llama.cpp context: its own KV cache, **unified** across up to ``n_seq``
sequences, so one batch can hold a token tree: every node belongs to the sequences of the leaves
below it, and llama.cpp's mask lets a token see exactly the cells of its first sequence at earlier
or equal positions, which are the context and the node's own ancestors. Memory operations
(``seq_rm``, ``seq_cp``, ``seq_keep``) roll sequences back or keep one branch without copying keys.

Nothing here is specific to speculation; ``target`` builds the protocol on top.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import Sequence

import numpy as np

_init_lock = threading.Lock()
_initialised = False


# ggml's CPU backend takes a "tiled" kernel for K-quant products over 8 or more rows and dot products
# below that; stock, the two round differently, so a verification pass over 8+ tokens gave logits up to
# 0.4 away from one-token passes (qwen2.5-coder-0.5b Q4_K_M) and could flip a near-tie. The patched
# build (scripts/patches/llama-cpp-tiled-q6k.patch) gives the tiled kernel only Q6_K, from 32 rows
# (llama-cpp-q6k-cols-registers.patch), and computes Q6_K's smaller products in the tiled kernel's order,
# so the kernel stays on, as in stock llama.cpp, and every row is computed the same way in any pass
# (docs/llama-exactness.md). Nothing in the environment needs setting; whatever it says, the probe at
# load (``exactness``) checks the result.


# Attention runs over the KV cells in use, which stock llama.cpp pads to a multiple of 256; the padding
# cells are masked, so they add exact zeros to every sum and change no logit, but each pass computes them
# (after 300 tokens, 212 of 512 cells). The patched build reads a smaller multiple from the environment
# (scripts/patches/llama-cpp-kv-pad.patch): one-token passes after 300 tokens took 13% less time, 8- and
# 16-token passes 10%. A value the user set wins; the exactness probe checks the result either way.
KV_PAD_MIN = 32


def library():
    """The ``llama_cpp`` module, initialised once, its log quiet except for errors."""
    global _initialised
    import llama_cpp

    with _init_lock:
        if not _initialised:
            os.environ.setdefault("LLAMA_KV_PAD_MIN", str(KV_PAD_MIN))  # read at the first pass, not at import
            logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
            llama_cpp.llama_backend_init()
            _initialised = True
    return llama_cpp


def llama_cpp_folder() -> str:
    """The installed ``llama_cpp`` package's folder (its libraries are in ``lib/`` under it)."""
    return os.path.dirname(library().__file__)


class LlamaModelFile:
    """A GGUF file loaded once (weights mmapped); shared by every context. Frees itself on close."""

    def __init__(self, path: str, use_extra_bufts: bool) -> None:
        ll = library()
        params = ll.llama_model_default_params()
        params.n_gpu_layers = 0
        params.use_extra_bufts = use_extra_bufts  # weight repacking (LlamaCppConfig.repack)
        self.path = path
        self.ptr = ll.llama_model_load_from_file(path.encode("utf-8"), params)
        if not self.ptr:
            raise ValueError(f"llama.cpp could not load {path}")
        self.vocab = ll.llama_model_get_vocab(self.ptr)
        self.n_vocab = int(ll.llama_vocab_n_tokens(self.vocab))
        self.n_ctx_train = int(ll.llama_model_n_ctx_train(self.ptr))

    def close(self) -> None:
        if self.ptr:
            library().llama_model_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order is not ours
        try:
            self.close()
        except Exception:
            pass


class LlamaContext:
    """One context (one request's KV cache) with a reusable batch of up to ``n_batch`` tokens.
    ``n_prefill``: the tokens a caller feeds per pass where it wants only the last row's logits
    (``LlamaCppConfig.prefill_chunk``, at most ``n_batch``)."""

    def __init__(
        self, model: LlamaModelFile, n_ctx: int, n_batch: int, n_seq: int, n_threads: int, n_prefill: int
    ) -> None:
        ll = library()
        params = ll.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = n_seq
        params.n_threads = params.n_threads_batch = n_threads
        params.kv_unified = True  # one cache for every sequence: tree branches share the context's cells
        params.swa_full = True  # sliding-window layers keep every position, so rollback stays possible
        # Flash attention's CPU kernel takes other paths for one query (split over the cache) and for
        # many (tiles), which round differently; the plain path computes each row the same way.
        params.flash_attn_type = ll.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.no_perf = True
        self.ll = ll
        self.model = model
        self.n_ctx, self.n_batch, self.n_seq = n_ctx, n_batch, n_seq
        self.n_prefill = min(n_prefill, n_batch)
        self.ptr = ll.llama_init_from_model(model.ptr, params)
        if not self.ptr:
            raise RuntimeError("llama.cpp could not create a context (out of memory?)")
        self.memory = ll.llama_get_memory(self.ptr)
        self.batch = ll.llama_batch_init(n_batch, 0, n_seq)

    def decode(
        self, tokens: Sequence[int], positions: Sequence[int], seq_ids: Sequence[Sequence[int]], logits: Sequence[bool]
    ) -> np.ndarray:
        """Run one batch; returns the logits rows ``[rows with logits, n_vocab]`` (float32, copied),
        in batch order. ``seq_ids[i]``: the sequences token ``i`` belongs to (first: its view)."""
        n = len(tokens)
        if not 0 < n <= self.n_batch:
            raise ValueError(f"a batch holds 1 to {self.n_batch} tokens, got {n}")
        batch = self.batch
        for i in range(n):
            batch.token[i] = int(tokens[i])
            batch.pos[i] = int(positions[i])
            batch.n_seq_id[i] = len(seq_ids[i])
            for j, seq in enumerate(seq_ids[i]):
                batch.seq_id[i][j] = seq
            batch.logits[i] = bool(logits[i])
        batch.n_tokens = n
        code = self.ll.llama_decode(self.ptr, batch)
        if code != 0:
            raise RuntimeError(
                f"llama_decode failed with code {code} ({n} tokens at positions {positions[0]}..{positions[-1]})"
            )
        rows = sum(bool(x) for x in logits)
        if not rows:
            return np.zeros((0, self.model.n_vocab), dtype=np.float32)
        pointer = self.ll.llama_get_logits(self.ptr)
        return np.ctypeslib.as_array(pointer, shape=(rows, self.model.n_vocab)).copy()

    # --- memory (positions p0 <= p < p1; -1 means "to the end" / "from the start") --------------
    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> None:
        if not self.ll.llama_memory_seq_rm(self.memory, seq, p0, p1):
            raise RuntimeError(f"llama.cpp could not remove positions [{p0}, {p1}) of sequence {seq}")

    def seq_cp(self, source: int, dest: int, p0: int = -1, p1: int = -1) -> None:
        self.ll.llama_memory_seq_cp(self.memory, source, dest, p0, p1)

    def seq_keep(self, seq: int) -> None:
        self.ll.llama_memory_seq_keep(self.memory, seq)

    def clear(self) -> None:
        self.ll.llama_memory_clear(self.memory, True)

    # --- a sequence's state (its cells' positions, keys and values), for the prefix cache -------
    def seq_state(self, seq: int):
        """A copy of sequence ``seq``'s cells, as llama.cpp serialises them (a ctypes byte array)."""
        size = self.ll.llama_state_seq_get_size(self.ptr, seq)
        data = (ctypes.c_uint8 * size)()
        written = self.ll.llama_state_seq_get_data(self.ptr, data, size, seq)
        if written != size:
            raise RuntimeError(f"llama.cpp wrote {written} of {size} bytes of sequence {seq}'s state")
        return data

    def set_seq_state(self, seq: int, data) -> None:
        """Make sequence ``seq`` hold the cells of ``seq_state``'s ``data`` (read, not kept)."""
        if not self.ll.llama_state_seq_set_data(self.ptr, data, len(data), seq):
            raise RuntimeError(f"llama.cpp could not restore sequence {seq} from {len(data)} bytes")

    def close(self) -> None:
        if self.ptr:
            self.ll.llama_batch_free(self.batch)
            self.ll.llama_free(self.ptr)
            self.ptr = None

    def __del__(self) -> None:  # pragma: no cover
        try:
            self.close()
        except Exception:
            pass


def tokenize(model: LlamaModelFile, text: str, add_special: bool) -> list[int]:
    """Token ids of ``text``; special-token text is parsed as special tokens."""
    ll = library()
    data = text.encode("utf-8", "surrogatepass")
    capacity = len(data) + 8
    buffer = (ll.llama_token * capacity)()
    n = ll.llama_tokenize(model.vocab, data, len(data), buffer, capacity, add_special, True)
    if n < 0:
        capacity = -n
        buffer = (ll.llama_token * capacity)()
        n = ll.llama_tokenize(model.vocab, data, len(data), buffer, capacity, add_special, True)
    return list(buffer[:n])


def detokenize_bytes(model: LlamaModelFile, ids: Sequence[int]) -> bytes:
    """The bytes of ``ids`` with special tokens left out (as ``skip_special_tokens`` does)."""
    ll = library()
    if not ids:
        return b""
    tokens = (ll.llama_token * len(ids))(*[int(t) for t in ids])
    capacity = 16 * len(ids) + 16
    buffer = ctypes.create_string_buffer(capacity)
    n = ll.llama_detokenize(model.vocab, tokens, len(ids), buffer, capacity, False, False)
    if n < 0:
        capacity = -n
        buffer = ctypes.create_string_buffer(capacity)
        n = ll.llama_detokenize(model.vocab, tokens, len(ids), buffer, capacity, False, False)
    return buffer.raw[:n]


def token_text(model: LlamaModelFile, token: int) -> str:
    """A token's vocabulary string ("" for a negative id: the vocabulary has no such token)."""
    if token < 0:
        return ""
    return (library().llama_vocab_get_text(model.vocab, token) or b"").decode("utf-8", "replace")


def token_texts(model: LlamaModelFile) -> list[str]:
    """Every token's vocabulary string, in id order."""
    return [token_text(model, i) for i in range(model.n_vocab)]
