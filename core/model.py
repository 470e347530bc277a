"""The model protocol: everything the engine and the task adapters need of a model, whatever runs it.

A ``Model`` is loaded once and shared by every request; it never holds sequence state. Each request
gets its own ``Target`` from ``new_target(chooser)``; a caller that runs the model step by
step itself (a draft model, iterative RAG) gets a ``Session`` from ``new_session()``. Everything
above the core (the generator, the editor and grammar corrector, the RAG pipeline, the service, the
benchmark) is written against this protocol and ``Tokenizer``, never against a backend's own
objects, so a backend plugs in by implementing these few members:

- transformers (``specdraft.backends.transformers``): CPU/CUDA, float32 by default, the exact
  reference; its fast path (``specdraft.backends.fast_path``) on static caches;
- llama.cpp (``specdraft.backends.llama_cpp``): GGUF files as they are, the fast CPU engine;
- a serving engine (``specdraft.backends.engine``) and the edge verify server (``specdraft.edge``)
  implement the same protocol over HTTP (no sessions there: ``SessionsUnavailableError``).

``specdraft.backends.load_model`` loads a model on the backend a ``ModelConfig`` names.

``exact`` says whether the backend's verification is guaranteed to choose exactly what plain
decoding on the same backend chooses (a pass over k tokens computes each row as k one-token passes
would). Speculative output then equals plain output token for token; where it is False the engine
still keeps only the target's own choices, but rounding that depends on the pass width may flip a
near-tie, and the stats say so (``Stats.exact``).
"""

from __future__ import annotations

import hashlib
from typing import Protocol, Sequence, runtime_checkable

from .constrained.grammar import GrammarCompiler
from .cost import PassCostProfile
from .sampling import TokenChooser
from .session import Session
from .target import Target


@runtime_checkable
class Tokenizer(Protocol):
    """Text <-> token ids for one vocabulary. Special-token text inside ``text`` (for example a
    chat template's ``<|im_start|>``) is always parsed as the special token."""

    @property
    def vocab_size(self) -> int:
        """How many token ids the tokenizer knows."""
        ...

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text``; ``add_special_tokens`` adds the model's own (a BOS token, ...)."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids``, special tokens left out (a partial UTF-8 character decodes to U+FFFD)."""
        ...

    def fingerprint(self) -> str:
        """Equal for two tokenizers exactly when they map every string to the same ids."""
        ...


def vocabulary_fingerprint(tokens: Sequence[str]) -> str:
    """sha256 of the token strings in id order: the same for two backends reading one vocabulary
    (what ``Tokenizer.fingerprint`` returns on every backend)."""
    digest = hashlib.sha256()
    for token in tokens:
        digest.update(token.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


@runtime_checkable
class Model(Protocol):
    name: str
    cost: PassCostProfile  # measured seconds of a verification pass by width; feeds the policy

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer (read-only here, so a backend may declare its own ``Tokenizer`` class)."""
        ...

    @property
    def backend(self) -> str:
        """ "transformers", "llama-cpp", ..."""
        ...

    @property
    def exact(self) -> bool:
        """Whether verification is guaranteed to choose what plain decoding chooses (module docstring)."""
        ...

    @property
    def max_length(self) -> int:
        """Longest context (prompt + answer) the model takes."""
        ...

    @property
    def vocab_size(self) -> int:
        """Width of a row of logits (may exceed ``tokenizer.vocab_size``: padded embeddings)."""
        ...

    @property
    def eos_token_ids(self) -> frozenset[int]: ...

    @property
    def has_chat_template(self) -> bool: ...

    @property
    def chat_template(self) -> str | None:
        """The model's Jinja chat template (None without one): what ``specdraft.tool_calls`` reads the
        model's tool-call format from."""
        ...

    def encode(self, text: str) -> list[int]:
        """``text`` as a prompt: token ids with the model's special tokens (BOS where it has one)."""
        ...

    def encode_chat(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> list[int]:
        """``messages`` in the model's chat template, ready for the assistant's answer. ``tools``:
        OpenAI's function tools (``{"type": "function", "function": {...}}``), given to the template as
        ``tools`` as transformers' ``apply_chat_template(tools=...)`` gives them (None: the template
        gets no ``tools`` at all). Messages may be assistant messages with ``tool_calls`` (OpenAI's
        shape, each call's ``arguments`` an object, as templates take them) and ``tool`` messages."""
        ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> Target:
        """A fresh per-request target whose own tokens are chosen by ``chooser``."""
        ...

    def new_session(self) -> Session:
        """A fresh sequence of this model run here, step by step (``specdraft.session``).
        ``SessionsUnavailableError`` for a model that keeps no KV cache on this machine."""
        ...

    def grammar_compiler(self) -> GrammarCompiler:
        """Compiles constraints over this model's vocabulary (``specdraft.constrained``), built on
        first use and shared by every request. ``GrammarUnavailableError`` for a model whose targets
        return no logits (nothing could be masked)."""
        ...


def check_same_tokenizer(draft: Model, target: Model) -> None:
    """Raise ValueError unless both models map the same strings to the same token ids."""
    if draft.tokenizer.fingerprint() != target.tokenizer.fingerprint():
        raise ValueError(f"draft model {draft.name} and target {target.name} use different tokenizers")
