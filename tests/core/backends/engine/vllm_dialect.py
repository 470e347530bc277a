"""A loopback server that speaks the vLLM request dialect the engine target uses, over a local model.

Written for the tests (it is not vLLM): ``/v1/models`` (with ``max_model_len``), ``/tokenize`` and
``/v1/completions`` with token-id prompts, ``prompt_logprobs: k`` (each position's top k and its
prompt token as ``{id: {"logprob", "rank"}}``, the first entry null), ``logprobs: k`` and one greedy
token returned as ``"token_id:N"`` (``return_tokens_as_token_ids``), optionally among
``allowed_token_ids``, computed by ``model``'s own target in one pass.
It lets the conformance suite run ``EngineTarget`` + ``VllmApi`` over real HTTP on the tiny
float64 model in seconds; the real engine test is ``test_engine_llama_server.py``.
"""

from __future__ import annotations

import threading

import numpy as np
from flask import Flask, jsonify, request

from specdraft import Draft, TokenChooser


def _numpy(row) -> np.ndarray:
    return np.asarray(row.detach().cpu().double().numpy() if hasattr(row, "detach") else row, dtype=np.float64)


def _top(row, k: int, also: int | None = None) -> dict[str, dict]:
    """vLLM's entry for one row: its ``k`` likeliest tokens with ``rank`` 1..k (ties: the lower id
    first, as a greedy argmax), plus ``also`` with its own rank."""
    row = _numpy(row)
    top = row.max()
    logprobs = row - top - np.log(np.exp(row - top).sum())
    order = np.lexsort((np.arange(len(row)), -row))
    entry = {str(int(t)): {"logprob": float(logprobs[t]), "rank": rank} for rank, t in enumerate(order[:k], 1)}
    if also is not None and str(also) not in entry:
        entry[str(also)] = {"logprob": float(logprobs[also]), "rank": int((row > row[also]).sum()) + 1}
    return entry


def make_vllm_dialect_app(model, name: str = "tiny") -> Flask:
    app = Flask(__name__)
    lock = threading.Lock()

    @app.get("/healthz")
    def healthz():
        return {"ok": True}

    @app.get("/v1/models")
    def models():
        return {"object": "list", "data": [{"id": name, "object": "model", "max_model_len": model.max_length}]}

    @app.post("/tokenize")
    def tokenize():
        body = request.get_json()
        return {
            "tokens": model.tokenizer.encode(
                body["prompt"], add_special_tokens=bool(body.get("add_special_tokens", True))
            )
        }

    @app.post("/v1/completions")
    def completions():
        body = request.get_json()
        ids = [int(t) for t in body["prompt"]]
        if not (body.get("return_tokens_as_token_ids") and body.get("temperature") == 0.0 and body.get("logprobs")):
            return jsonify({"error": "this test server answers only the engine target's request"}), 400
        k = int(body["logprobs"])
        with lock:
            target = model.new_target(TokenChooser())
            target.prefill(ids[:1])
            verification = target.verify(Draft.chain(ids[1:]))  # row r: after ids[:1 + r]
            target.close()
        prompt_logprobs: list | None = None
        if body.get("prompt_logprobs"):
            prompt_logprobs = [None]
            for j in range(1, len(ids)):
                prompt_logprobs.append(_top(verification.logits[j - 1], int(body["prompt_logprobs"]), ids[j]))
        last = verification.logits[len(ids) - 1]
        allowed = body.get("allowed_token_ids")
        if allowed:  # as vLLM's sampler: every other token masked to -inf
            row = np.full(len(_numpy(last)), -np.inf)
            row[allowed] = _numpy(last)[allowed]
            last = row
        top = _top(last, k)
        generated = min(top, key=lambda t: top[t]["rank"])
        choice = {
            "index": 0,
            "text": "",
            "finish_reason": "length",
            "prompt_logprobs": prompt_logprobs,
            "logprobs": {
                "tokens": [f"token_id:{generated}"],
                "token_logprobs": [top[generated]["logprob"]],
                "top_logprobs": [{f"token_id:{t}": v["logprob"] for t, v in top.items()}],
                "text_offset": [0],
            },
        }
        return {"id": "cmpl-test", "object": "text_completion", "model": name, "choices": [choice]}

    return app
