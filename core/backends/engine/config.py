"""EngineConfig: where the serving engine is and how to talk to it."""

from __future__ import annotations

from dataclasses import dataclass

ENGINE_APIS = ("vllm", "sglang", "llama-cpp-server")


@dataclass(frozen=True)
class EngineConfig:
    """``url``: the engine's base address (``http://host:port``, no ``/v1``). ``api``: which request
    dialect it speaks (``ENGINE_APIS``). ``model``: the model name sent with each request ("" lets
    the engine use its only one: the first entry of ``/v1/models`` where it lists them).
    ``max_length``: the engine's context in tokens (0: ask the engine where it says, else 2048, the
    llama-cpp-python server's default ``n_ctx``). ``timeout``: seconds per request. ``branches``: most
    root-to-leaf branches verified per step (each is one request; 1 = the drafter's best branch
    only). ``exact``: whether the engine computes a row the same whatever the request's width
    (true for llama.cpp on a CPU without weight repacking; not promised by GPU engines that batch
    requests together), reported as ``Model.exact``. ``api_key``: sent as a bearer token if set.
    ``candidates``: under a constraint, how many likeliest tokens of every row a verification asks
    for (vLLM's ``prompt_logprobs``/``logprobs``; at most its ``--max-logprobs``, 20 by default): a
    row none of whose candidates the grammar allows costs one more request."""

    url: str
    api: str = "vllm"
    model: str = ""
    max_length: int = 0
    timeout: float = 120.0
    branches: int = 1
    exact: bool = False
    api_key: str = ""
    candidates: int = 5

    def __post_init__(self) -> None:
        if self.api not in ENGINE_APIS:
            raise ValueError(f"engine api must be one of {', '.join(ENGINE_APIS)}, got {self.api!r}")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"the engine url must start with http:// or https://, got {self.url!r}")
        if self.max_length < 0 or self.timeout <= 0 or not 1 <= self.branches <= 64 or self.candidates < 1:
            raise ValueError("need max_length >= 0, timeout > 0, 1 <= branches <= 64 and candidates >= 1")

    @property
    def base(self) -> str:
        return self.url.rstrip("/")
