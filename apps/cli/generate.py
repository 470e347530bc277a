"""`specdraft generate`: one prompt through the engine, printed as text or as one JSON object.

``--json-schema FILE`` constrains the answer to a JSON schema (``specdraft.constrained``): the same
``GenerationConfig.constraint`` the Python API and the service's ``response_format`` set."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.model_pool import ModelPool
from specdraft.constrained import Constraint, ConstraintError
from specdraft.retrieval.drafter_registry import DrafterSpec
from specdraft.retrieval.prompt_passages import prompt_passages


@dataclass(frozen=True)
class GenerateRequest:
    prompt: str
    model: str
    drafter: DrafterSpec
    config: GenerationConfig
    chat: bool = False


def json_schema_constraint(path: str) -> Constraint:
    """The JSON schema in the file ``path`` as a constraint, checked (``Constraint.check``): a
    ValueError naming the file when it cannot be read, is not JSON, or is not a schema we can follow."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(
            f"cannot read the JSON schema file {path}: {getattr(error, 'strerror', None) or error}"
        ) from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the JSON schema file {path} is not valid JSON: {error}") from None
    try:
        constraint = Constraint.json_schema(schema)
        constraint.check()
    except ConstraintError as error:
        raise ValueError(f"the JSON schema file {path}: {error}") from None
    return constraint


def prompt_ids_for(model, prompt: str, chat: bool) -> list[int]:
    return model.encode_chat([{"role": "user", "content": prompt}]) if chat else model.encode(prompt)


def run_generate(request: GenerateRequest, pool: ModelPool, as_json: bool, out=None) -> dict:
    """Generate and print to ``out`` (standard output by default); returns the JSON object."""
    out = out or sys.stdout
    model = pool.get(request.model)
    pool.prepare(request.drafter, model)
    prompt_ids = prompt_ids_for(model, request.prompt, request.chat)
    if len(prompt_ids) >= model.max_length:
        raise ValueError(
            f"the prompt has {len(prompt_ids)} tokens; {request.model} accepts at most {model.max_length - 1}"
        )
    passages = prompt_passages([request.prompt])  # what the reference drafter drafts from
    drafter = pool.drafter(request.drafter, model, request.config.sampling, request.config.seed, passages)
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
