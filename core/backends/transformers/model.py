"""The transformers backend: a causal LM on CPU or CUDA, its tokenizer, and per-request sessions.

``TransformersModel`` (the ``Model`` protocol) holds the weights and tokenizer, loaded once and
shared by every request; it never holds sequence state. ``TransformersSession`` (the ``Session``
protocol) is one sequence's KV cache with a forward pass that accepts a token tree (tree attention
mask + tree positions). ``TransformersTarget`` implements the ``Target`` protocol on a session
(``SessionTarget`` holds the bookkeeping; prefix cache included: it starts from a copy of the
longest cached prefix and, when closed, stores its sequence's keys and values). Draft models use
sessions too. A model may batch concurrent requests' verification passes (``enable_verify_batching``,
``specdraft.backends.transformers.verify_batcher``). In float32 (the default) it is the exact
reference backend.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import torch

from ...constrained.grammar import CompilerOnce, GrammarCompiler, hf_grammar_tokenizer
from ...cost import PassCostProfile
from ...draft import Draft
from ...model import Model
from ...model_config import ModelConfig
from ...prefix_cache import PrefixHit
from ...sampling import TokenChooser
from ...session import Session
from ..target_base import SessionTarget
from .kv_cache import KVCache, LayerState
from .tokenizer import HFTokenizer
from .verify_batch_config import VerifyBatchConfig

if TYPE_CHECKING:
    from .verify_batcher import VerifyBatcher

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolved_device(config: ModelConfig) -> torch.device:
    if config.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(config.device)


def resolved_dtype(config: ModelConfig) -> torch.dtype:
    return torch.float32 if config.dtype == "auto" else _DTYPES[config.dtype]  # see ModelConfig


class SnapshotCache(Protocol):
    """A session's cache as the prefix cache reads it (``KVCache``; the fast path's session is its own)."""

    @property
    def supports_snapshots(self) -> bool: ...

    def snapshot(self, length: int) -> tuple[tuple[LayerState, ...], int]: ...

    def restore(self, layers: Sequence[LayerState], length: int) -> None: ...


class TreeSession(Session, Protocol):
    """The session a ``TransformersTarget`` runs on (``TransformersSession``, the fast path's
    ``StaticSession``): a ``Session`` whose ``feed`` takes token trees and returns a torch tensor, that
    keeps a tree's accepted path (``keep``, as ``KVCache.keep``), with a cache that snapshots."""

    @property
    def cache(self) -> SnapshotCache: ...

    def feed(
        self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True
    ) -> torch.Tensor: ...

    def keep(self, start: int, offsets: Sequence[int]) -> None: ...


class TransformersModel:
    """A loaded causal LM + tokenizer. Thread-safe: forward passes are serialised by a lock.

    ``tokenizer`` is the ``Tokenizer`` protocol over ``hf_tokenizer`` (transformers' own object,
    for code that runs transformers itself, such as the benchmark's peers)."""

    backend = "transformers"

    def __init__(self, hf_model, tokenizer, name: str = "model") -> None:
        self.hf_model = hf_model.eval()
        self.hf_tokenizer = tokenizer
        self.tokenizer = HFTokenizer(tokenizer)
        self.name = name
        self.cost = PassCostProfile()
        self._lock = threading.Lock()
        self.verify_batcher: VerifyBatcher | None = None  # opt-in: enable_verify_batching
        self._grammar_compiler = CompilerOnce(
            lambda: GrammarCompiler(
                hf_grammar_tokenizer(self.hf_tokenizer, self.vocab_size, self.eos_token_ids), self.vocab_size
            )
        )

    @classmethod
    def load(cls, config: ModelConfig = ModelConfig()) -> "TransformersModel":
        """Load ``config.model`` (registry names are converted once and cached; see specdraft.models)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ...models import resolve_checkpoint

        path = resolve_checkpoint(config.model)
        hf_model = AutoModelForCausalLM.from_pretrained(path, dtype=resolved_dtype(config))
        hf_model.to(resolved_device(config))  # type: ignore[arg-type]  # transformers types its wrapped .to() unbound
        return cls(hf_model, AutoTokenizer.from_pretrained(path), name=config.model)

    # --- facts --------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return self.hf_model.device

    @property
    def exact(self) -> bool:
        """float32/float64 passes agree with one-token passes far below any logit gap that matters
        (see ``ModelConfig``); half precision does not."""
        return self.hf_model.dtype in (torch.float32, torch.float64)

    @property
    def vocab_size(self) -> int:
        return self.hf_model.get_output_embeddings().weight.shape[0]

    @property
    def max_length(self) -> int:
        return int(getattr(self.hf_model.config, "max_position_embeddings", 2048))

    @property
    def eos_token_ids(self) -> frozenset[int]:
        ids: set[int] = set()
        configured = getattr(self.hf_model.generation_config, "eos_token_id", None)
        if configured is not None:
            ids.update([configured] if isinstance(configured, int) else configured)
        if self.hf_tokenizer.eos_token_id is not None:
            ids.add(self.hf_tokenizer.eos_token_id)
        return frozenset(ids)

    # --- text ---------------------------------------------------------------------------------
    @property
    def has_chat_template(self) -> bool:
        return self.tokenizer.chat_template is not None

    @property
    def chat_template(self) -> str | None:
        """The tokenizer's Jinja chat template (None without one): what ``specdraft.tool_calls`` reads
        the model's tool-call format from."""
        return self.tokenizer.chat_template

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=True)

    def encode_chat(self, messages: Sequence[dict], tools: Sequence[dict] | None = None) -> list[int]:
        """Token ids of ``messages`` (and ``tools``) in the model's chat template, ready for the answer
        (``Model.encode_chat``)."""
        if not self.has_chat_template:
            raise ValueError(f"{self.name} has no chat template")
        return self.tokenizer.encode(self.tokenizer.apply_chat_template(messages, tools))

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids)

    # --- compute ------------------------------------------------------------------------------
    def forward(
        self,
        cache: KVCache,
        tokens: Sequence[int],
        positions: Sequence[int] | None = None,
        tree_mask=None,
        all_logits: bool = True,
    ) -> torch.Tensor:
        """Run ``tokens`` after what ``cache`` holds, appending their keys/values to it.

        ``positions``/``tree_mask`` (bool ``[q, q]`` array, True = may attend) describe a token tree;
        None means an ordinary causal chain. Returns logits ``[q, vocab]`` (or ``[1, vocab]`` for
        the last token when ``all_logits`` is False), float32 on the model's device. With a
        ``verify_batcher`` attached, a verification pass may run in one padded pass with other
        sequences' (``specdraft.backends.transformers.verify_batcher``); prefills always run alone.
        """
        batcher = self.verify_batcher
        if all_logits and batcher is not None and batcher.accepts(cache):
            return batcher.forward(cache, tokens, positions, tree_mask)
        return self.forward_alone(cache, tokens, positions, tree_mask, all_logits)

    def forward_alone(
        self,
        cache: KVCache,
        tokens: Sequence[int],
        positions: Sequence[int] | None = None,
        tree_mask=None,
        all_logits: bool = True,
    ) -> torch.Tensor:
        """``forward`` as one pass of this sequence alone (what every pass was before batching)."""
        past = len(cache)
        q = len(tokens)
        device = self.device
        input_ids = torch.tensor([list(tokens)], dtype=torch.long, device=device)
        kwargs = {}
        if tree_mask is not None:
            if positions is None:
                raise ValueError("a tree pass needs the positions of its tokens")
            allowed = torch.cat([torch.ones(q, past, dtype=torch.bool), torch.as_tensor(tree_mask)], dim=1)
            bias = torch.zeros(allowed.shape, dtype=self.hf_model.dtype)
            bias.masked_fill_(~allowed, torch.finfo(self.hf_model.dtype).min)
            kwargs["attention_mask"] = bias[None, None].to(device)  # [1, 1, q, past + q]
            kwargs["position_ids"] = torch.tensor([list(positions)], dtype=torch.long, device=device)
        with self._lock, torch.inference_mode():
            start = time.perf_counter()
            out = self.hf_model(
                input_ids=input_ids,
                past_key_values=cache.cache,
                use_cache=True,
                logits_to_keep=0 if all_logits else 1,
                **kwargs,
            )
            logits = out.logits[0].float()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if all_logits:  # verification-shaped passes only: a prefill keeps one row of logits
                self.cost.record(q, time.perf_counter() - start)
        return logits

    def new_session(self) -> TreeSession:
        return TransformersSession(self)

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> "TransformersTarget":
        return TransformersTarget(self, chooser)

    def grammar_compiler(self) -> GrammarCompiler:
        return self._grammar_compiler()

    # --- verify batching ----------------------------------------------------------------------
    def enable_verify_batching(self, config: VerifyBatchConfig = VerifyBatchConfig()) -> "VerifyBatcher":
        """Run concurrent requests' verification passes in one padded pass (replaces any earlier
        batcher; ``specdraft.backends.transformers.verify_batcher``). Returns the batcher."""
        from .verify_batcher import VerifyBatcher

        self.verify_batcher = VerifyBatcher(self, config)
        return self.verify_batcher


class TransformersSession:
    """One sequence's KV cache on a ``TransformersModel`` (the ``Session`` protocol): feed tokens or
    token trees, roll back, keep a tree's accepted path."""

    def __init__(self, model: TransformersModel) -> None:
        self.model = model
        self.cache = KVCache(model.hf_model.config)

    def __len__(self) -> int:
        return len(self.cache)

    def feed(
        self, tokens: Sequence[int], parents: Sequence[int] | None = None, all_logits: bool = True
    ) -> torch.Tensor:
        """Run ``tokens`` after the cache; ``parents[i]`` (ROOT or an earlier index) makes them a tree.

        Returns logits ``[len(tokens), vocab]``; the cache grows by ``len(tokens)``.
        """
        if parents is None or all(p == i - 1 for i, p in enumerate(parents)):
            return self.model.forward(self.cache, tokens, all_logits=all_logits)
        tree = Draft(tuple(tokens), tuple(parents))
        positions = [len(self.cache) + depth - 1 for depth in tree.depths]
        return self.model.forward(self.cache, tokens, positions, tree.ancestor_mask(), all_logits)

    def truncate(self, length: int) -> None:
        self.cache.truncate(length)

    def keep(self, start: int, offsets: Sequence[int]) -> None:
        self.cache.keep(start, offsets)

    def close(self) -> None:
        """Drop the cache's tensors (the session is empty afterwards)."""
        self.cache = KVCache(self.model.hf_model.config)


class TransformersTarget(SessionTarget):
    """The ``Target`` protocol on a transformers session (one request), prefix cache included.

    The prefill runs the whole context and keeps the logits of its last position, so the first
    verification needs no pending token (and with an empty draft, no pass at all): plain decoding
    costs one pass per generated token, prefill included, as in transformers' ``generate``.
    A verification is one pass over the pending token and the draft tree (tree attention mask +
    tree positions); commit keeps the accepted path's keys and values (``KVCache.keep``).
    """

    max_branches = 1 << 30  # a tree mask takes any shape

    def __init__(self, model: TransformersModel, chooser: TokenChooser = TokenChooser()) -> None:
        super().__init__(model, chooser)
        self.session = model.new_session()

    def _cache_length(self) -> int:
        return len(self.session)

    def _run_prompt(self, tokens: list[int]) -> torch.Tensor:
        return self.session.feed(tokens, all_logits=False)

    def _run_draft(self, draft: Draft, leading: list[int]) -> torch.Tensor:
        n = len(leading)
        tokens = (*leading, *draft.tokens)
        parents = (
            *(i - 1 for i in range(n)),
            *(p + n for p in draft.parents),
        )  # roots (ROOT = -1) hang off the last leading token
        return self.session.feed(tokens, parents)[max(n - 1, 0) :]

    def _join(self, first: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
        return torch.cat([first[None], rows])

    def _keep(self, draft: Draft, path: list[int], first_node: int) -> int:
        # The cache holds [..., (leading), node_0, ..., node_{n-1}]: keep what precedes the nodes + the path.
        self.session.keep(first_node, path)
        return len(path)

    def _caches_prefixes(self) -> bool:
        return self.session.cache.supports_snapshots

    def _restore(self, hit: PrefixHit) -> None:
        self.session.cache.restore(hit.entry.state, hit.length)

    def _snapshot(self, length: int) -> tuple[Any, int]:
        return self.session.cache.snapshot(length)

    def _release(self) -> None:
        self.session.close()


def enable_verify_batching(model: Model, config: VerifyBatchConfig = VerifyBatchConfig()) -> "VerifyBatcher":
    """Attach a ``VerifyBatcher`` to ``model`` (a ``TransformersModel``; replaces any earlier one).
    ``ValueError`` for another backend's model or the fast path."""
    if not isinstance(model, TransformersModel):
        raise ValueError(f"verify batching is for the transformers backend; {model.name} runs on {model.backend}")
    return model.enable_verify_batching(config)
