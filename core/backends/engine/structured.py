"""vLLM's own ``structured_outputs`` for a specdraft ``Constraint``: the request fields that make vLLM
decode under the very grammar specdraft verifies with.

specdraft's constraints are llguidance grammars (``specdraft.constrained``: JSON in one fixed style,
tool calls as Lark with their tags as tokens). vLLM's ``guidance`` structured-output backend compiles
a ``grammar`` field with llguidance too (``llguidance.grammar_from("grammar", text)``), over the same
tokenizer, so ``structured_outputs(constraint)`` sent to a vLLM started with
``--structured-outputs-config '{"backend": "guidance"}'`` asks vLLM for the same masks at every step.
A JSON schema goes as Lark (``start: %json {...}``) with the fixed style in its ``x-guidance`` options,
because vLLM's own ``json`` field would compile it in its flexible whitespace style (another grammar,
other answers). The engine backend does not need this to serve constraints (its grammar runs on this
side; docs/engine-vllm.md); it is how the tests, the benchmark and a user ask vLLM for its own answer
to compare with.
"""

from __future__ import annotations

import json

from ...constrained.constraint import JSON_STYLE, Constraint


def structured_outputs(constraint: Constraint) -> dict:
    """``{"grammar": ...}`` or ``{"regex": ...}``: the value of vLLM's ``structured_outputs`` field."""
    if constraint.kind in ("json_schema", "json_object"):
        schema = constraint.schema
        if isinstance(schema, dict):
            schema = {**schema, "x-guidance": {**schema.get("x-guidance", {}), **JSON_STYLE}}
        else:  # true / false
            schema = {"allOf": [schema], "x-guidance": dict(JSON_STYLE)}
        return {"grammar": "start: %json " + json.dumps(schema, ensure_ascii=False)}
    if constraint.kind == "regex":
        return {"regex": constraint.source}
    return {"grammar": constraint.source}
