"""Grammar: the state of one answer under a ``Constraint``, over one model's vocabulary.

A grammar state follows the answer token by token. It can say which tokens may come next (``allows``,
and the full mask behind ``choose``), ``advance`` over a token, ``rollback`` the last tokens, and name the
bytes the constraint **forces** next (``forced_bytes``: the keys, quotes and separators of a JSON object).
Verification under a grammar compares drafts with the target's choice from the **masked** logits at
every draft position (``specdraft.constrained.walk``), so the output is exactly plain constrained
decoding's.

``LLGuidanceGrammar`` implements it on llguidance (a Rust library with no Python dependencies; it reads
Hugging Face and GGUF vocabularies alike). A model supplies its vocabulary as an llguidance tokenizer
(``Model.grammar_tokenizer``): its control tokens are special, so no JSON string can hold one, and its
end-of-generation tokens are the grammar's EOS: once the constraint is complete they are all the
grammar allows, and the model's own choice among them ends the answer.

The allowed tokens are the **mask** (``mask``), as every decoder on llguidance masks (vLLM's
``guidance`` backend among them). ``allows`` (llguidance's ``validate_tokens``) is wider: where the
grammar forces bytes, the mask holds only the forced text's canonical tokens (after ``"arguments": ``
only `` {"``), while ``allows`` also takes the other spellings (`` {`` then ``"``). So the target's
choice is always taken under the mask; ``allows`` only says whether the grammar can consume a token
(what the grammar drafter needs).

Cost: ``choose`` computes the mask once per row (the vocabulary's bitmask, about 20-100 us for
151,936 tokens); with greedy decoding the unmasked argmax is kept when the mask has it, else the
argmax is taken over the allowed tokens. Sampling draws from the masked, renormalised distribution.
``seconds`` adds up the time spent here.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Iterable, Protocol, Sequence

import numpy as np

from ..sampling import TokenChooser, argmax
from .constraint import Constraint, ConstraintError


class GrammarUnavailableError(ValueError):
    """A constraint was asked of a target that returns no logits (a serving engine, a remote verify
    server): masking needs the target's logits at every position."""


class Grammar(Protocol):
    """One answer's grammar state (module docstring)."""

    seconds: float  # time spent in the grammar so far

    def allows(self, token: int) -> bool:
        """Whether the grammar can consume ``token`` next (wider than ``mask``: module docstring)."""
        ...

    def choose(self, logits_row: Any, chooser: TokenChooser, position: int) -> int:
        """The target's own token at absolute ``position`` from ``logits_row`` ``[vocab]`` masked by the
        grammar: the masked argmax (greedy) or a draw from the masked, renormalised distribution."""
        ...

    def advance(self, tokens: Sequence[int]) -> int:
        """Consume ``tokens`` in order, stopping at the first one not allowed; returns how many it took."""
        ...

    def rollback(self, count: int) -> None:
        """Undo the last ``count`` tokens consumed."""
        ...

    def forced_bytes(self) -> bytes:
        """The bytes every answer must continue with from here (empty when the model has a choice)."""
        ...

    @property
    def finished(self) -> bool:
        """The constraint is complete: only an end-of-generation token may follow."""
        ...

    def mask(self) -> Any:
        """The tokens allowed now, the target's choice is taken among: a bool array ``[vocab]``."""
        ...


class LLGuidanceGrammar:
    """``Grammar`` on an ``llguidance.LLMatcher`` (module docstring)."""

    def __init__(self, matcher: Any, vocab_size: int) -> None:
        import llguidance.numpy as llnp

        self._matcher = matcher
        self._vocab_size = vocab_size
        self._bitmask = llnp.allocate_token_bitmask(1, vocab_size)  # [1, ceil(vocab / 32)] int32
        self._fill = llnp.fill_next_token_bitmask
        self.seconds = 0.0

    def allows(self, token: int) -> bool:
        start = time.perf_counter()
        ok = self._matcher.validate_tokens([int(token)]) == 1
        self.seconds += time.perf_counter() - start
        return ok

    def mask(self) -> np.ndarray:
        """The allowed tokens now: a bool array ``[vocab]``."""
        start = time.perf_counter()
        self._fill(self._matcher, self._bitmask)
        bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")[: self._vocab_size].astype(bool)
        self.seconds += time.perf_counter() - start
        return bits

    def choose(self, logits_row: Any, chooser: TokenChooser, position: int) -> int:
        allowed = self.mask()
        if chooser.params.greedy:
            token = argmax(logits_row)
            if token < len(allowed) and allowed[token]:  # the argmax of the masked row is this token too
                return token
        row = _as_numpy(logits_row)
        if not allowed.any():
            raise RuntimeError(f"the grammar allows no token here ({self._matcher.get_error() or 'no error reported'})")
        masked = np.where(allowed[: row.shape[-1]], row.astype(np.float32, copy=False), np.float32(-np.inf))
        return chooser.choose(masked, position)

    def advance(self, tokens: Sequence[int]) -> int:
        start = time.perf_counter()
        tokens = [int(t) for t in tokens]
        count = self._matcher.validate_tokens(tokens)
        if count and not self._matcher.consume_tokens(tokens[:count]):
            error = self._matcher.get_error()
            self.seconds += time.perf_counter() - start
            raise RuntimeError(f"the grammar refused tokens it had allowed: {error}")
        self.seconds += time.perf_counter() - start
        return count

    def rollback(self, count: int) -> None:
        if count:
            start = time.perf_counter()
            self._matcher.rollback(count)
            self.seconds += time.perf_counter() - start

    def forced_bytes(self) -> bytes:
        start = time.perf_counter()
        forced = self._matcher.compute_ff_bytes()
        self.seconds += time.perf_counter() - start
        return forced

    @property
    def finished(self) -> bool:
        return self._matcher.is_stopped()


def _as_numpy(row: Any) -> np.ndarray:
    """A ``[vocab]`` row of logits (numpy, or a torch tensor on any device) as a numpy array."""
    if isinstance(row, np.ndarray):
        return row
    return row.detach().float().cpu().numpy()


class GrammarCompiler:
    """Compiles constraints for one vocabulary (an llguidance tokenizer), keeping the last
    ``capacity`` compiled matchers: a request gets a deep copy of a fresh one, so the compilation
    (milliseconds, up to a second for a huge schema) is paid once per constraint."""

    def __init__(self, tokenizer: Any, vocab_size: int, capacity: int = 32) -> None:
        self.tokenizer = tokenizer
        self.vocab_size = vocab_size
        self.capacity = capacity
        self._compiled: OrderedDict[Constraint, Any] = OrderedDict()
        self._lock = threading.Lock()

    def tokenize(self, data: bytes) -> list[int]:
        """``data`` as the model's tokenizer spells it (what the grammar drafter proposes)."""
        return list(self.tokenizer.tokenize_bytes(data))

    def grammar(self, constraint: Constraint) -> LLGuidanceGrammar:
        """A fresh grammar state for ``constraint``; ``ConstraintError`` if it does not compile."""
        with self._lock:
            matcher = self._compiled.get(constraint)
            if matcher is not None:
                self._compiled.move_to_end(constraint)
        if matcher is None:
            from llguidance import LLMatcher

            matcher = LLMatcher(self.tokenizer, constraint.grammar(), log_level=0)
            if matcher.is_error():
                raise ConstraintError(f"the constraint does not compile for this model: {matcher.get_error()}")
            with self._lock:
                self._compiled[constraint] = matcher
                while len(self._compiled) > self.capacity:
                    self._compiled.popitem(last=False)
        return LLGuidanceGrammar(matcher.deep_copy(), self.vocab_size)


class CompilerOnce:
    """A model's ``GrammarCompiler``, built by ``build`` on first use (about a second: the vocabulary is
    read whole) and then shared; safe to call from several request threads."""

    def __init__(self, build: Callable[[], GrammarCompiler]) -> None:
        self._build = build
        self._compiler: GrammarCompiler | None = None
        self._lock = threading.Lock()

    def __call__(self) -> GrammarCompiler:
        with self._lock:
            if self._compiler is None:
                self._compiler = self._build()
            return self._compiler


def hf_grammar_tokenizer(hf_tokenizer: Any, vocab_size: int, eos_ids: Iterable[int]) -> Any:
    """An llguidance tokenizer for a Hugging Face fast tokenizer: ``vocab_size`` rows of logits (padded
    embeddings included, never allowed) and ``eos_ids`` as the grammar's end of generation. Its added
    tokens are special."""
    import llguidance.hf

    return llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=vocab_size, eos_token=sorted(eos_ids))


def gguf_grammar_tokenizer(vocab: Any, vocab_size: int, eos_ids: Iterable[int]) -> Any:
    """An llguidance tokenizer for a llama.cpp vocabulary (``llama_vocab_p``): control tokens, and
    user-defined tokens written ``<...>`` (Qwen's ``<tool_call>``), are special."""
    import llguidance.llamacpp

    return llguidance.llamacpp.lltokenizer_from_vocab(vocab, n_vocab=vocab_size, eos_token=sorted(eos_ids))
