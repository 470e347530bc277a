"""`specdraft generate`: one prompt through the engine, printed as text or as one JSON object."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.model_pool import DrafterSpec, ModelPool


@dataclass(frozen=True)
class GenerateRequest:
    prompt: str
    model: str
    drafter: DrafterSpec
    config: GenerationConfig
    chat: bool = False


def prompt_ids_for(model, prompt: str, chat: bool) -> list[int]:
    return model.encode_chat([{"role": "user", "content": prompt}]) if chat else model.encode(prompt)


def run_generate(request: GenerateRequest, pool: ModelPool, as_json: bool, out=None) -> dict:
    """Generate and print to ``out`` (standard output by default); returns the JSON object."""
    out = out or sys.stdout
    model = pool.get(request.model)
    request.drafter.prepare(pool, model)
    prompt_ids = prompt_ids_for(model, request.prompt, request.chat)
    if len(prompt_ids) >= model.max_length:
        raise ValueError(f"the prompt has {len(prompt_ids)} tokens; {request.model} accepts at most {model.max_length - 1}")
    drafter = request.drafter.build(pool, model, request.config.sampling, request.config.seed, [request.prompt])
    stream = SpeculativeGenerator(model).stream(prompt_ids, drafter, request.config)
    for piece in stream:
        if not as_json:
            out.write(piece.text)
            out.flush()
    result = stream.result
    payload = {
        "text": result.text,
        "token_ids": result.token_ids,
        "prompt_token_ids": result.prompt_token_ids,
        "finish_reason": result.finish_reason,
        "model": request.model,
        "drafter": str(request.drafter),
        "stats": result.stats.to_dict(),
    }
    if as_json:
        out.write(json.dumps(payload, ensure_ascii=False) + "\n")
    else:
        out.write("\n")
    return payload
