"""The request dialects of serving engines that take token ids: vLLM and SGLang.

Each API object answers one question in one request: ``choices(ids, first)``, the engine's greedy
token after ``ids[:j]`` for every ``j`` from ``first`` to ``len(ids)`` (so ``len(ids) - first + 1``
tokens). The target sends ``ids`` = its context + one draft branch and ``first`` = the context's
length. Each row is read from the engine's top-1 log-probability at that prompt position (the row
``j = len(ids)`` from the one token the request generates greedily).

- vLLM, ``POST /v1/completions`` with ``prompt`` as token ids, ``prompt_logprobs: 1`` (each prompt
  position's top-1 with ``rank`` 1, keyed by token id), ``max_tokens: 1``, ``temperature: 0``,
  ``logprobs: 1`` and ``return_tokens_as_token_ids`` (the generated token as ``"token_id:N"``).
  vLLM computes prompt log-probabilities by running the whole prompt again: a request with
  ``prompt_logprobs`` does not reuse cached prefix blocks, so each verification costs a prefill
  of the whole context (see docs/backends.md, "Serving engines"). A request with no draft (``first``
  = ``len(ids)``) needs no prompt row: it is sent without ``prompt_logprobs``, as a plain one-token
  generation, which vLLM computes from its prefix cache where that holds the context's blocks.

  Under a constraint (``ranks``): ``ranked(ids, first, k)`` asks for ``prompt_logprobs: k`` and
  ``logprobs: k`` and gives each row's top ``k`` ids in rank order, and ``choose_among(ids,
  allowed)`` is vLLM's greedy token after ``ids`` with ``allowed_token_ids`` (its sampler masks
  every other token to -inf, as its structured-output backends mask with a grammar's bitmask).
- SGLang, native ``POST /generate`` with ``input_ids``, ``return_logprob``, ``logprob_start_len``
  = ``first`` and ``top_logprobs_num: 1``: log-probabilities only from the first draft position on;
  its radix cache holds the context, so a verification computes only the draft tokens.

Neither was run here (no GPU): the fields follow the engines' API documentation. The
llama-cpp-python server (text prompts only) is ``llama_server``; it is the one tested.
"""

from __future__ import annotations

from typing import Any, Sequence

from .http import EngineClient, EngineError

PROBE_TEXT = "Hello wörld! def f(x):\n    return x  # 42 ✓"


def _top_id(entry: Any, where: str) -> int:
    """The token id of rank 1 in a vLLM ``{token_id: {logprob, rank, decoded_token}}`` entry."""
    if not isinstance(entry, dict) or not entry:
        raise EngineError(f"the engine returned no log-probabilities {where}")
    for key, value in entry.items():
        if isinstance(value, dict) and value.get("rank") == 1:
            return int(key)
    # no rank given: the largest log-probability (ties: the lowest id, as greedy sampling picks)
    best = max(
        entry.items(), key=lambda kv: (float(kv[1]["logprob"] if isinstance(kv[1], dict) else kv[1]), -int(kv[0]))
    )
    return int(best[0])


def _ranked_ids(entry: Any, k: int, where: str) -> list[int]:
    """The ids of rank 1..``k`` in a vLLM ``{token_id: {logprob, rank, ...}}`` entry, in rank order
    (the prompt token itself is listed too, with its own rank, which may be past ``k``)."""
    if not isinstance(entry, dict) or not entry:
        raise EngineError(f"the engine returned no log-probabilities {where}")
    ranked = sorted(
        (int(value["rank"]), int(key)) for key, value in entry.items() if int(value.get("rank") or k + 1) <= k
    )
    if not ranked or ranked[0][0] != 1:
        raise EngineError(f"the engine returned no token of rank 1 {where}")
    return [token for _, token in ranked]


def _generated_ranked(choice: dict) -> list[int]:
    """The generated token (the greedy one) first, then the other top entries by log-probability."""
    logprobs = choice.get("logprobs") or {}
    tokens = logprobs.get("tokens") or []
    if not tokens or not str(tokens[0]).startswith("token_id:"):
        raise EngineError("the engine did not return the generated token's id (return_tokens_as_token_ids)")
    chosen = int(str(tokens[0])[len("token_id:") :])
    tops = (logprobs.get("top_logprobs") or [None])[0] or {}
    others = sorted(
        ((-float(value), int(str(key)[len("token_id:") :])) for key, value in tops.items()),
    )
    return [chosen] + [token for _, token in others if token != chosen]


class VllmApi:
    """vLLM's OpenAI-compatible completions (see the module docstring)."""

    ranks = True  # ``ranked`` and ``choose_among`` (constraints without logits)

    def __init__(self, client: EngineClient, model: str) -> None:
        self.client = client
        self.model = model

    def info(self) -> dict:
        """``{"model", "max_length"}`` from ``/v1/models`` (vLLM lists ``max_model_len``)."""
        models = self.client.get("/v1/models").get("data") or []
        if not models:
            raise EngineError(f"the engine at {self.client.base} lists no model")
        chosen = next((m for m in models if m.get("id") == self.model), None) if self.model else models[0]
        if chosen is None:
            raise EngineError(f"the engine at {self.client.base} does not serve {self.model!r}")
        return {"model": chosen["id"], "max_length": int(chosen.get("max_model_len") or 0)}

    def tokenize(self, text: str) -> list[int]:
        answer = self.client.post("/tokenize", {"model": self.model, "prompt": text, "add_special_tokens": False})
        return [int(t) for t in answer["tokens"]]

    def request(self, ids: Sequence[int], prompt_rows: bool = True, k: int = 1) -> dict:
        """The completions body for ``ids``: one greedy token, with each prompt position's top ``k``
        where ``prompt_rows``."""
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": [int(t) for t in ids],
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": k,
            "return_tokens_as_token_ids": True,
        }
        if prompt_rows:
            body["prompt_logprobs"] = k
        return body

    def choices(self, ids: Sequence[int], first: int) -> list[int]:
        answer = self.client.post("/v1/completions", self.request(ids, first < len(ids)))
        return self.parse(answer, len(ids), first)

    def ranked(self, ids: Sequence[int], first: int, k: int) -> list[list[int]]:
        """Each row's top ``k`` ids in rank order (rows as ``choices``)."""
        answer = self.client.post("/v1/completions", self.request(ids, first < len(ids), k))
        choice = answer["choices"][0]
        rows = [_ranked_ids(entry, k, f"at prompt position {j}") for j, entry in self._prompt_rows(choice, ids, first)]
        return rows + [_generated_ranked(choice)]

    def choose_among(self, ids: Sequence[int], allowed: Sequence[int]) -> int:
        """vLLM's greedy token after ``ids`` among ``allowed`` (``allowed_token_ids``)."""
        body = {**self.request(ids, False), "allowed_token_ids": [int(t) for t in allowed]}
        return _generated_ranked(self.client.post("/v1/completions", body)["choices"][0])[0]

    @staticmethod
    def _prompt_rows(choice: dict, ids: Sequence[int], first: int) -> list[tuple[int, Any]]:
        n = len(ids)
        if first == n:
            return []
        prompt_logprobs = choice.get("prompt_logprobs")
        if prompt_logprobs is None or len(prompt_logprobs) < n:
            raise EngineError("the engine returned no prompt_logprobs (is this vLLM?)")
        return [(j, prompt_logprobs[j]) for j in range(first, n)]

    @classmethod
    def parse(cls, answer: dict, n: int, first: int) -> list[int]:
        choice = answer["choices"][0]
        rows = [_top_id(entry, f"at prompt position {j}") for j, entry in cls._prompt_rows(choice, range(n), first)]
        return rows + [_generated_ranked(choice)[0]]


class SglangApi:
    """SGLang's native ``/generate`` (see the module docstring)."""

    ranks = False  # not implemented: its API has no allowed-token list to resolve a row with

    def __init__(self, client: EngineClient, model: str) -> None:
        self.client = client
        self.model = model

    def info(self) -> dict:
        answer = self.client.get("/get_model_info")
        return {
            "model": answer.get("model_path", self.model),
            "max_length": int(answer.get("max_context_length") or answer.get("context_length") or 0),
        }

    def tokenize(self, text: str) -> list[int] | None:
        return None  # not compared: SGLang's native API has no tokenize route in every version

    def request(self, ids: Sequence[int], first: int) -> dict:
        return {
            "input_ids": [int(t) for t in ids],
            "sampling_params": {"max_new_tokens": 1, "temperature": 0.0},
            "return_logprob": True,
            "logprob_start_len": int(first),
            "top_logprobs_num": 1,
            "return_text_in_logprobs": False,
        }

    def choices(self, ids: Sequence[int], first: int) -> list[int]:
        answer = self.client.post("/generate", self.request(ids, first))
        return self.parse(answer, len(ids), first)

    @staticmethod
    def parse(answer: Any, n: int, first: int) -> list[int]:
        meta = (answer[0] if isinstance(answer, list) else answer)["meta_info"]
        tops = meta.get("input_top_logprobs") or []
        if len(tops) < n - first:
            raise EngineError("the engine returned fewer input_top_logprobs than asked for (logprob_start_len)")
        rows = []
        for j, top in enumerate(tops[: n - first]):
            if not top:
                raise EngineError(f"no top log-probability at prompt position {first + j}")
            rows.append(int(top[0][1]))  # entries are [logprob, token_id, text]
        output = meta.get("output_token_logprobs") or []
        if not output:
            raise EngineError("the engine returned no output_token_logprobs")
        return rows + [int(output[0][1])]
