"""LlamaCppModel: a GGUF model run by llama.cpp, behind specdraft's ``Model`` protocol.

The GGUF file is used as it is (no conversion): a registry name resolves to its verified file
(``specdraft.models.gguf_path``), or pass a path. Tokenization, the chat template (rendered as
transformers renders it, see ``chat_template``) and end-of-generation tokens come from the file.
Each request's target gets its own llama.cpp context (KV cache), created on demand and reused
after the request ends (a small pool); forward passes of one model are serialised by a lock.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ...chat_template import render_chat
from ...constrained.grammar import CompilerOnce, GrammarCompiler, gguf_grammar_tokenizer
from ...cost import PassCostProfile
from ...model import vocabulary_fingerprint
from ...sampling import TokenChooser
from .exactness import Comparison
from .library import LlamaContext, LlamaModelFile, detokenize_bytes, library, token_text, token_texts, tokenize
from .probe_cache import checked_exactness
from .target import LlamaCppTarget, LlamaSession

if TYPE_CHECKING:
    from ...model_config import ModelConfig

DEFAULT_CONTEXT = 4096
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LlamaCppConfig:
    """``context``: tokens per request (0: min(the model's training context, ``DEFAULT_CONTEXT``)).
    ``batch``: most tokens one pass takes (a draft is cut to fit). ``prefill_chunk``: tokens per
    pass when only the last row's logits are wanted (a prompt's prefill; at most ``batch``). Each
    chunk attends only to the cells before it and its own, so smaller chunks skip most of the masked
    half of a long prompt's attention, and batch invariance makes the chunk size change no bit
    (docs/llama-exactness.md, "Prefill in chunks"). ``branches``: most root-to-leaf branches of one
    verified tree (llama.cpp sequences).
    ``threads``: CPU threads (0: every core this process may run on, ``os.sched_getaffinity``).
    ``repack``: let llama.cpp repack quantized weights
    (Q4_0, Q4_K, IQ4_NL on AVX2) into interleaved blocks for its gemm and gemv kernels, as stock
    llama-cpp-python does; on by default, since the patched build makes the Q4_K gemv round as its
    gemm does, so a wide pass still computes every row as a one-token pass (the probe at load checks
    it; docs/llama-exactness.md). ``pool``: idle contexts kept."""

    context: int = 0
    batch: int = 512
    prefill_chunk: int = 128
    branches: int = 64
    threads: int = 0
    repack: bool = True
    pool: int = 4

    def __post_init__(self) -> None:
        if self.context < 0 or self.batch < 2 or not 1 <= self.branches <= 256 or self.threads < 0 or self.pool < 0:
            raise ValueError("need context >= 0, batch >= 2, 1 <= branches <= 256, threads >= 0, pool >= 0")
        if self.prefill_chunk < 1:
            raise ValueError("need prefill_chunk >= 1")

    @classmethod
    def from_model_config(cls, config: "ModelConfig") -> "LlamaCppConfig":
        return cls(context=config.context)


class LlamaTokenizer:
    """The GGUF file's tokenizer behind the ``Tokenizer`` protocol."""

    def __init__(self, file: LlamaModelFile) -> None:
        self.file = file

    @property
    def vocab_size(self) -> int:
        return self.file.n_vocab

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return tokenize(self.file, text, add_special_tokens)

    def decode(self, ids: Sequence[int]) -> str:
        return detokenize_bytes(self.file, ids).decode("utf-8", "replace")

    @cached_property
    def _fingerprint(self) -> str:
        return vocabulary_fingerprint(token_texts(self.file))

    def fingerprint(self) -> str:
        return self._fingerprint


class LlamaCppModel:
    backend = "llama-cpp"

    def __init__(self, file: LlamaModelFile, name: str, config: LlamaCppConfig = LlamaCppConfig()) -> None:
        ll = library()
        self.file = file
        self.name = name
        self.config = config
        self.tokenizer = LlamaTokenizer(file)
        self.cost = PassCostProfile()
        self.threads = config.threads or len(os.sched_getaffinity(0))
        context = config.context or min(file.n_ctx_train or DEFAULT_CONTEXT, DEFAULT_CONTEXT)
        self._context = context
        self.lock = threading.Lock()  # one forward pass at a time: the cores are shared
        self._idle: list[LlamaContext] = []
        self._idle_lock = threading.Lock()
        self._grammar_compiler = CompilerOnce(
            lambda: GrammarCompiler(
                gguf_grammar_tokenizer(self.file.vocab, self.vocab_size, self._eos), self.vocab_size
            )
        )
        vocab = file.vocab
        self._eos = frozenset(i for i in range(file.n_vocab) if ll.llama_vocab_is_eog(vocab, i))
        template = ll.llama_model_chat_template(file.ptr, None)
        self._chat_template = template.decode("utf-8") if template else None
        self._special_text = {
            "bos_token": token_text(file, ll.llama_vocab_bos(vocab)),
            "eos_token": token_text(file, ll.llama_vocab_eos(vocab)),
        }
        # Checked, not assumed: a wide pass against one-token passes on this build, CPU and settings.
        self.exactness: Comparison = checked_exactness(self, file.path, config)  # a stored verdict, or the probe
        if not self.exactness.exact:
            log.warning(
                "llama.cpp on this machine computes a %d-token pass differently from one-token passes "
                "(%d rows differ, by up to %.3g): speculative output may differ from plain decoding "
                "(stats.exact is false). Exact verification needs llama-cpp-python as scripts/setup.sh builds it "
                "(docs/llama-exactness.md).",
                self.exactness.width,
                self.exactness.rows_differing,
                self.exactness.max_abs_diff,
            )

    @classmethod
    def load(cls, model: "ModelConfig | str", config: LlamaCppConfig | None = None) -> "LlamaCppModel":
        """``model``: a ``ModelConfig`` (as ``specdraft.backends.load_model`` passes it; ``config``
        defaults to ``LlamaCppConfig.from_model_config`` of it), or its ``model`` alone: a registry
        name (its verified GGUF file) or a path to a ``.gguf`` file."""
        from ...models import REGISTRY, gguf_path

        if not isinstance(model, str):
            config = config if config is not None else LlamaCppConfig.from_model_config(model)
            model = model.model
        config = config if config is not None else LlamaCppConfig()

        if model in REGISTRY:
            path = gguf_path(model)
        else:
            path = Path(model).expanduser()
            if path.suffix.lower() != ".gguf":
                raise ValueError(f"the llama-cpp backend takes a registry name or a .gguf file, got {model!r}")
            if not path.is_file():
                raise FileNotFoundError(f"no such GGUF file: {path}")
        return cls(LlamaModelFile(str(path), use_extra_bufts=config.repack), model, config)

    # --- facts --------------------------------------------------------------------------------
    @property
    def exact(self) -> bool:
        """Whether a pass over k tokens computes each row bit for bit as k one-token passes do, as
        the probe at load measured it (``exactness``). It does with the patched build that
        ``scripts/setup.sh`` makes (tinyBLAS for one-row float products, Q4_K/Q6_K/Q8_0/Q5_0 repacked
        into one kernel for every width, multi-column dot products for the types not repacked, the tiled
        kernel for Q6_K only and in the same order)
        and flash attention off (every context), with or without repacking (checked on every
        embedded model by tests/core/backends/llama_cpp)."""
        return self.exactness.exact

    @property
    def max_length(self) -> int:
        return self._context

    @property
    def vocab_size(self) -> int:
        return self.file.n_vocab

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return self._eos

    @property
    def has_chat_template(self) -> bool:
        return self._chat_template is not None

    @property
    def chat_template(self) -> str | None:
        """The GGUF file's chat template (``tokenizer.chat_template``; None without one)."""
        return self._chat_template

    # --- text ---------------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=True)

    def encode_chat(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> list[int]:
        """``Model.encode_chat``: the GGUF's template rendered as transformers renders it."""
        if self._chat_template is None:
            raise ValueError(f"{self.name} has no chat template")
        return self.tokenizer.encode(render_chat(self._chat_template, messages, self._special_text, tools))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    # --- contexts -----------------------------------------------------------------------------
    def acquire_context(self) -> LlamaContext:
        """An empty context of this model (a pooled one, or a new one)."""
        with self._idle_lock:
            context = self._idle.pop() if self._idle else None
        if context is None:
            config = self.config
            return LlamaContext(
                self.file,
                self._context,
                min(config.batch, self._context),
                config.branches,
                self.threads,
                config.prefill_chunk,
            )
        context.clear()
        return context

    def release_context(self, context: LlamaContext) -> None:
        """Give ``context`` back (kept idle up to ``config.pool``, else freed). A context released twice
        is ignored the second time: freeing one that the pool still holds would leave a dangling
        pointer for the next ``acquire_context``."""
        with self._idle_lock:
            if any(idle is context for idle in self._idle):
                return
            if len(self._idle) < self.config.pool:
                self._idle.append(context)
                return
        context.close()

    def new_session(self) -> LlamaSession:
        return LlamaSession(self)

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> LlamaCppTarget:
        return LlamaCppTarget(self, chooser)

    def grammar_compiler(self) -> GrammarCompiler:
        return self._grammar_compiler()
