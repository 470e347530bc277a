"""llama-cpp-python's own schema-constrained chat completion, the structured benchmark's peer on the
llama.cpp backend.

``LlamaCppChatPeer`` loads the same GGUF file into its own ``Llama`` (as ``llama_peers`` does: its
defaults, weight repacking on) and answers each case with ``Llama.create_chat_completion`` on the
case's messages, greedily (``temperature=0``, ``repeat_penalty=1.0``: its chat default is 1.1),
``max_tokens=case.max_new_tokens``:

- ``extract``: ``response_format={"type": "json_object", "schema": case.schema}`` (its GBNF grammar
  from the schema); the answer is the message's ``content``.
- ``tool-call``: ``tools=case.tools`` and ``tool_choice=case.tool_choice`` (a named function: it
  constrains the output to that tool's ``parameters`` schema and returns it as the call's
  ``arguments``); the answer is the arguments. It writes the bare arguments object where
  specdraft writes a ``<tool_call>`` block around name and arguments, so its answer is shorter.

The prompt is the GGUF's chat template rendered by llama-cpp-python itself (with ``tools``);
``same_prompt`` records whether its tokens equal specdraft's ``encode_chat``. Its state is reset
before each case so it pays the whole prefill, as specdraft's methods do. Generated tokens are its
``completion_tokens`` plus the end-of-turn token it stopped on (specdraft counts it too); the token
ids are read back from its evaluated tokens, and a token it sampled but never evaluated (the
end-of-turn token, or the last one at ``max_tokens``) is recorded as -1.
Passes are ``eval`` calls; the first token's time is when the first ``eval`` past the prompt starts.
Its finish reason is "length" when it generated ``max_tokens`` tokens, else "stop" (it reports
"tool_calls" for a named tool either way).
"""

from __future__ import annotations

import time
from typing import Any

from .structured_methods import StructuredCase, StructuredMeasurement, judge_json

__all__ = ["LlamaCppChatPeer", "PEER", "chat_request", "peer_same_record", "peer_text_equal"]

PEER = "llama-cpp-python:constrained"


def _timed_llama(**kwargs: Any) -> Any:
    from llama_cpp import Llama

    class TimedLlama(Llama):
        """Notes each ``eval`` call: when it started and how many tokens were evaluated before it."""

        calls: list[tuple[float, int]] = []

        def eval(self, tokens):
            self.calls.append((time.perf_counter(), self.n_tokens))
            return super().eval(tokens)

    return TimedLlama(**kwargs)


def chat_request(case: StructuredCase) -> dict[str, Any]:
    """The keyword arguments of ``create_chat_completion`` for ``case`` (module docstring)."""
    request: dict[str, Any] = {
        "messages": [dict(message) for message in case.messages],
        "temperature": 0.0,
        "repeat_penalty": 1.0,
        "max_tokens": case.max_new_tokens,
    }
    if case.tools:
        return {**request, "tools": [dict(tool) for tool in case.tools], "tool_choice": case.tool_choice}
    return {**request, "response_format": {"type": "json_object", "schema": case.schema}}


class LlamaCppChatPeer:
    """``create_chat_completion`` on ``model_path`` (module docstring)."""

    def __init__(self, model_path: str, context: int, threads: int, name: str = PEER) -> None:
        self.name = name
        self.llama = _timed_llama(
            model_path=model_path, n_ctx=context, n_batch=512, n_threads=threads, n_threads_batch=threads, verbose=False
        )

    def run(self, case: StructuredCase) -> StructuredMeasurement:
        llama = self.llama
        llama.reset()
        llama.calls = []
        start = time.perf_counter()
        response = llama.create_chat_completion(**chat_request(case))
        wall = time.perf_counter() - start
        usage, choice = response["usage"], response["choices"][0]
        prompt_len = usage["prompt_tokens"]
        evaluated = [int(t) for t in llama.input_ids[: llama.n_tokens]]
        completion = usage["completion_tokens"]
        stopped = completion < case.max_new_tokens  # it ended on its end-of-turn token, not on max_tokens
        generated = completion + int(stopped)
        tokens = evaluated[prompt_len : prompt_len + generated]
        tokens += [-1] * (generated - len(tokens))
        first = next((t for t, before in llama.calls if before >= prompt_len), None)
        message = choice["message"]
        calls = message.get("tool_calls") or []
        text = calls[0]["function"]["arguments"] if case.tools and calls else (message.get("content") or "")
        verdict = judge_json(text, case.schema)
        return StructuredMeasurement(
            self.name, case.id, tokens, wall,
            len(llama.calls),
            max(0.0, generated / max(1, len(llama.calls) - 1) - 1.0),
            (first - start) if first else wall,
            task=case.task, text=text, finish_reason="stop" if stopped else "length", answer=verdict.answer,
            valid_json=verdict.valid_json, valid_schema=verdict.valid_schema,
            same_prompt=evaluated[:prompt_len] == list(case.prompt_ids),
        )  # fmt: skip


def peer_text_equal(peer: StructuredMeasurement, ours: StructuredMeasurement) -> bool:
    """Whether the peer's answer is specdraft's, text for text: its raw JSON text equals our answer's
    JSON text (in the grammar's style, ``structured_methods.judge``)."""
    return ours.answer is not None and peer.text.strip() == ours.answer


def peer_same_record(peer: StructuredMeasurement, ours: StructuredMeasurement) -> bool:
    """Whether the peer's answer is the same JSON value as specdraft's, whatever its spacing."""
    return ours.answer is not None and peer.answer == ours.answer
