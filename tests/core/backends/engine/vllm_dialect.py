"""A loopback server that speaks the vLLM request dialect the engine target uses, over a local model.

Written for the tests (it is not vLLM): ``/v1/models`` (with ``max_model_len``), ``/tokenize`` and
``/v1/completions`` with token-id prompts, ``prompt_logprobs`` (each position's top-1 as
``{id: {"logprob", "rank": 1}}``, the first entry null) and one greedy token returned as
``"token_id:N"`` (``return_tokens_as_token_ids``), computed by ``model``'s own target in one pass.
It lets the conformance suite run ``EngineTarget`` + ``VllmApi`` over real HTTP on the tiny
float64 model in seconds; the real engine test is ``test_engine_llama_server.py``.
"""

from __future__ import annotations

import threading

import numpy as np
from flask import Flask, jsonify, request

from specdraft import Draft, TokenChooser


def _log_softmax_at(row, token: int) -> float:
    row = np.asarray(row.detach().cpu().double().numpy() if hasattr(row, "detach") else row, dtype=np.float64)
    top = row.max()
    return float(row[token] - top - np.log(np.exp(row - top).sum()))


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
        if not (
            body.get("prompt_logprobs") and body.get("return_tokens_as_token_ids") and body.get("temperature") == 0.0
        ):
            return jsonify({"error": "this test server answers only the engine target's request"}), 400
        with lock:
            target = model.new_target(TokenChooser())
            target.prefill(ids[:1])
            verification = target.verify(Draft.chain(ids[1:]))  # row r: after ids[:1 + r]
            target.close()
        prompt_logprobs: list = [None]
        for j in range(1, len(ids)):
            top = verification.choice(j - 1)
            prompt_logprobs.append({str(top): {"logprob": _log_softmax_at(verification.logits[j - 1], top), "rank": 1}})
        generated = verification.choice(len(ids) - 1)
        choice = {
            "index": 0,
            "text": "",
            "finish_reason": "length",
            "prompt_logprobs": prompt_logprobs,
            "logprobs": {
                "tokens": [f"token_id:{generated}"],
                "token_logprobs": [0.0],
                "top_logprobs": None,
                "text_offset": [0],
            },
        }
        return {"id": "cmpl-test", "object": "text_completion", "model": name, "choices": [choice]}

    return app
