"""StrideDecoder: one answer's KV cache on a model session, rebuilt exactly on rollback.

The cache's content is described by the list of passes (``Op``) that built it, each appended after
the previous: the prompt's ``prefix``; a ``chunk`` (documents + question + answer so far, one pass,
run when the documents change); a ``single`` (one answer token, run before choosing the next).
Plain iterative RAG is the sequence of these passes that its decisions call for. A ``Checkpoint``
is the op list at a stride boundary; ``restore`` cuts the session back to the longest op prefix it
shares with the checkpoint and re-runs the checkpoint's remaining ops one by one, as they first
ran. So after any rollback the cache holds bit for bit what plain iterative RAG's cache holds at
that boundary (same passes, same shapes), and the next token is chosen from the same logits:
speculative and plain answers agree exactly, not only up to rounding. When the documents did not
change since the rolled-back stride's run began, restoring is a truncation; when a wrong guess
replaced them, the run is re-prefilled and its single-token passes replayed (counted in
``replayed_tokens``).

Token choice: ``TokenChooser.choose(logits, i)`` for answer token ``i`` (keyed by the answer
position, not the context position, which moves with the document's length): greedy is the argmax,
seeded sampling draws the same token for the same logits and position in every mode.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from specdraft import Model
from specdraft.sampling import TokenChooser
from specdraft.session import Logits, Session

from .prompt import PromptLayout

__all__ = ["Op", "Checkpoint", "StrideDecoder"]


@dataclass(frozen=True)
class Op:
    """One pass: ``kind`` "prefix" | "chunk" (``docs``, answer tokens ``upto``) | "single" (answer
    token ``upto - 1``, ``token``); ``length``: the session's length after it."""

    kind: str
    docs: tuple[int, ...]
    upto: int
    token: int
    length: int

    def same_pass(self, other: "Op") -> bool:
        return (self.kind, self.docs, self.upto, self.token) == (other.kind, other.docs, other.upto, other.token)


@dataclass(frozen=True)
class Checkpoint:
    """The decoder at a stride boundary: its ops, answer length and current documents."""

    ops: tuple[Op, ...]
    answer_len: int
    docs: tuple[int, ...] | None


class StrideDecoder:
    def __init__(self, model: Model, layout: PromptLayout, chooser: TokenChooser) -> None:
        self.model = model
        self.layout = layout
        self.chooser = chooser
        self.session: Session = model.new_session()  # transformers and llama.cpp models have one
        self.answer: list[int] = []
        self.ops: list[Op] = []
        self.docs: tuple[int, ...] | None = None
        self._logits: Logits | None = None
        self.generation_seconds = 0.0
        self.passes = 0
        self.prefill_tokens = 0
        self.replayed_tokens = 0
        self._run(Op("prefix", (), 0, -1, len(layout.prefix_ids)))

    # --- passes --------------------------------------------------------------------------------
    def _tokens(self, op: Op) -> list[int]:
        if op.kind == "prefix":
            return list(self.layout.prefix_ids)
        if op.kind == "chunk":
            return self.layout.tail_ids(op.docs, self.answer[: op.upto])
        return [op.token]

    def _run(self, op: Op, replay: bool = False) -> Logits:
        tokens = self._tokens(op)
        start = time.perf_counter()
        logits = self.session.feed(tokens, all_logits=False)[-1]
        self.generation_seconds += time.perf_counter() - start
        self.passes += 1
        if len(tokens) > 1:
            self.prefill_tokens += len(tokens)
        if replay:
            self.replayed_tokens += len(tokens)
        assert len(self.session) == op.length, (len(self.session), op)
        self.ops.append(op)
        return logits

    def _fed_answer(self) -> int:
        """Answer tokens the session holds (the rest, at most one, is pending)."""
        return self.ops[-1].upto

    def _single(self) -> Logits:
        i = self._fed_answer()
        if i >= len(self.answer):
            raise RuntimeError("no pending token to run")
        return self._run(Op("single", (), i + 1, self.answer[i], len(self.session) + 1))

    def _truncate(self, keep: int) -> None:
        """Keep the first ``keep`` ops (the prefix always stays)."""
        keep = max(1, keep)
        self.ops = self.ops[:keep]
        self.session.truncate(self.ops[-1].length)

    # --- what the pipelines call ---------------------------------------------------------------
    @property
    def context_length(self) -> int:
        """Tokens in the context: the session's and the pending one."""
        return len(self.session) + len(self.answer) - self._fed_answer()

    def fits(self, docs: Sequence[int]) -> bool:
        """Whether the context with ``docs`` and the answer so far leaves room for one more token."""
        tail = len(self.layout.tail_ids(docs, self.answer))
        return len(self.layout.prefix_ids) + tail < self.model.max_length

    def begin(self, docs: Sequence[int]) -> None:
        """Start a stride with ``docs`` in the prompt: re-prefill documents + question + answer when
        they differ from the current ones, else run the pending token. Call ``fits`` first."""
        docs = tuple(int(d) for d in docs)
        if docs != self.docs:
            self._truncate(1)
            length = len(self.layout.prefix_ids) + len(self.layout.tail_ids(docs, self.answer))
            self._logits = self._run(Op("chunk", docs, len(self.answer), -1, length))
            self.docs = docs
        elif self._fed_answer() < len(self.answer):
            self._logits = self._single()
        elif self._logits is None:
            raise RuntimeError("begin() with the same documents and nothing to run")

    def step(self) -> int:
        """Choose the next answer token (running the pending one first when needed) and append it."""
        if self._logits is None:
            self._logits = self._single()
        token = self.chooser.choose(self._logits, len(self.answer))
        self._logits = None
        self.answer.append(int(token))
        return int(token)

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(tuple(self.ops), len(self.answer), self.docs)

    def restore(self, checkpoint: Checkpoint, next_docs: Sequence[int] | None = None) -> None:
        """Go back to ``checkpoint`` (taken earlier in this answer, with the same answer tokens
        before it). ``next_docs``: the documents the next ``begin`` will get; when they differ from
        the checkpoint's, that ``begin`` re-prefills after the prefix anyway, so nothing is replayed."""
        if checkpoint.answer_len > len(self.answer):
            raise ValueError("a checkpoint past the answer")
        del self.answer[checkpoint.answer_len :]
        shared = 0
        for mine, theirs in zip(self.ops, checkpoint.ops):
            if not mine.same_pass(theirs):
                break
            shared += 1
        self._truncate(shared)
        self._logits = None
        if next_docs is not None and tuple(int(d) for d in next_docs) != checkpoint.docs:
            self._truncate(1)
            self.docs = None  # the next begin() prefills its documents after the prefix
            return
        for op in checkpoint.ops[shared:]:
            self._run(op, replay=True)
        self.docs = checkpoint.docs

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session = None
