"""JSON Schemas of the two OpenAI-compatible request bodies: ``POST /v1/completions`` and
``POST /v1/chat/completions``.

Built from the constants the validators use (``validation``, ``messages``, ``openai_fields``) and
the app's ``ServiceConfig``; see ``openapi_schemas`` for the conventions (``null`` is "absent",
unknown fields are ignored). A field this server knows and refuses (``tools``, ``logit_bias``, ...,
see ``openai_fields.check_unsupported``) is documented with the only values it passes (its neutral
ones) and a description saying that anything else is a 400. Rules across fields that JSON Schema
cannot state are in the descriptions: ``max_tokens`` and ``max_completion_tokens`` may both be sent
only with one value; prompts x ``n`` is at most ``MAX_CHOICES``; token ids must be in the model's
vocabulary.
"""

from __future__ import annotations

from specdraft.apps.model_pool import DRAFTER_NAMES

from .config import ServiceConfig
from .messages import MAX_PROMPTS, ROLES
from .openai_fields import MAX_CHOICES, MAX_COMPLETION_LOGPROBS, MAX_N, MAX_TOP_LOGPROBS
from .openapi_schemas import Schema, boolean, integer, obj, served_models
from .validation import MAX_SEED, MAX_STOP_STRINGS, MAX_TEMPERATURE

# Any value Python reads as false (``if body.get(name)`` lets it pass): null, false, 0, "", [], {}.
FALSY = {
    "anyOf": [
        {"type": "null"},
        {"const": False},
        {"const": 0},
        {"const": ""},
        {"type": "array", "maxItems": 0},
        {"type": "object", "maxProperties": 0},
    ]
}
TEXT_PART = obj({"type": {"const": "text"}, "text": {"type": "string"}}, ("type", "text"))
TOKEN_IDS = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}
PREDICTION = {
    "type": "object",
    "properties": {"type": {"const": "content"}, "content": {"anyOf": [{"type": "string"}, {"type": "array", "items": TEXT_PART}]}},
    "required": ["type", "content"],
    "description": "OpenAI's predicted output: the answer is drafted from it (the request's drafter is then not used)",
}


def refused(values: Schema, what: str) -> Schema:
    """A field this server refuses unless it holds one of its neutral ``values``."""
    return {**values, "description": f"not supported ({what}): any other value is a 400"}


def model_names(config: ServiceConfig) -> Schema:
    """What ``openai_fields.check_model`` accepts as ``model``."""
    if config.serve_any_model_name:
        return {"type": "string", "description": f"any name: the answer always comes from {config.model!r}"}
    return {"enum": [config.model, *config.model_aliases], "description": "the served model (or one of its aliases)"}


def completion_drafters(config: ServiceConfig) -> list[str]:
    """The ``drafter`` values a request may give: the general ones and ``model:NAME`` for each model
    the server may load (``DRAFTER_NAMES`` lists the forms)."""
    general = [name for name in DRAFTER_NAMES if ":" not in name]
    return [*general, *(f"model:{name}" for name in served_models(config))]


def _common(config: ServiceConfig) -> dict[str, Schema]:
    """The fields both endpoints read."""
    limit = integer(1, config.max_tokens_limit, f"tokens to generate at most (default {config.default_max_tokens})")
    return {
        "model": model_names(config),
        "max_tokens": limit,
        "max_completion_tokens": {**limit, "description": "the same as max_tokens (send one, or both with one value)"},
        "n": integer(1, MAX_N, f"choices per prompt (at most {MAX_CHOICES} choices per request in all)"),
        "temperature": {"type": "number", "minimum": 0, "maximum": MAX_TEMPERATURE, "description": "0: greedy (default)"},
        "top_p": {"type": "number", "exclusiveMinimum": 0, "maximum": 1, "description": "nucleus sampling mass"},
        "top_k": integer(0, None, "extension: sample among the k most likely tokens (0: all)"),
        "seed": integer(0, MAX_SEED, "makes a sampled answer reproducible (choice i gets seed + i)"),
        "stop": {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": MAX_STOP_STRINGS},
            ],
            "description": f"a string or up to {MAX_STOP_STRINGS} strings that end the answer",
        },
        "stream": boolean("answer with server-sent events"),
        "stream_options": obj({"include_usage": boolean("end the stream with a chunk holding usage and no choices")}),
        "drafter": {"enum": completion_drafters(config), "description": f"extension: the drafter (default {config.drafter!r})"},
        "prediction": PREDICTION,
        # refused unless neutral (openai_fields.check_unsupported)
        "tools": refused(FALSY, "this server runs no tools"),
        "functions": refused(FALSY, "this server runs no tools"),
        "tool_choice": refused({"enum": ["none", "auto"]}, "this server runs no tools"),
        "function_call": refused({"enum": ["none", "auto"]}, "this server runs no tools"),
        "response_format": refused({"enum": [{"type": "text"}]}, "no JSON mode"),
        "presence_penalty": refused({"enum": [0]}, "it would change the target's own output"),
        "frequency_penalty": refused({"enum": [0]}, "it would change the target's own output"),
        "logit_bias": refused(FALSY, "it would change the target's own output"),
        "echo": refused({"enum": [False]}, "the prompt is not repeated"),
        "best_of": refused({"enum": [1]}, "use n"),
        "suffix": refused(FALSY, "no fill-in-the-middle"),
        "audio": refused({"type": "null"}, "the served model answers in text"),
        "modalities": refused({"enum": [["text"]]}, "the served model answers in text"),
    }


def completion_request(config: ServiceConfig) -> Schema:
    """``POST /v1/completions``: ``prompt`` is a string, a list of token ids, or a list of up to
    ``MAX_PROMPTS`` prompts (strings or lists of token ids), one choice (or ``n``) each."""
    prompt = {
        "anyOf": [
            {"type": "string", "minLength": 1},
            TOKEN_IDS,
            {"type": "array", "items": {"anyOf": [{"type": "string", "minLength": 1}, TOKEN_IDS]}, "minItems": 1, "maxItems": MAX_PROMPTS},
        ],
        "description": f"the text to continue: a string, token ids, or up to {MAX_PROMPTS} of them (one choice each)",
    }
    fields = {
        "prompt": prompt,
        **_common(config),
        "logprobs": integer(0, MAX_COMPLETION_LOGPROBS, "report the target's log-probabilities with this many alternatives per token"),
    }
    example = {"prompt": "def add(a, b):\n", "max_tokens": config.default_max_tokens, "temperature": 0}
    return obj(fields, ("prompt",), "OpenAI's text completion request", example)


def chat_request(config: ServiceConfig) -> Schema:
    """``POST /v1/chat/completions`` (``developer`` reaches the chat template as ``system``)."""
    content = {"anyOf": [{"type": "string"}, {"type": "array", "items": TEXT_PART}], "description": "text, or text parts (joined)"}
    message = obj(
        {
            "role": {"enum": list(ROLES)},
            "content": content,
            "tool_calls": refused(FALSY, "this server runs no tools"),
            "function_call": refused(FALSY, "this server runs no tools"),
        },
        ("role", "content"),
    )
    fields = {
        "messages": {"type": "array", "items": message, "minItems": 1, "description": "through the model's chat template"},
        **_common(config),
        "logprobs": boolean("report the target's log-probabilities of the answer's tokens"),
        "top_logprobs": integer(0, MAX_TOP_LOGPROBS, "alternatives per token (needs logprobs: true)"),
    }
    schema = obj(fields, ("messages",), "OpenAI's chat completion request")
    # top_logprobs needs logprobs: true
    schema["dependentSchemas"] = {"top_logprobs": {"anyOf": [{"properties": {"top_logprobs": {"type": "null"}}}, {"properties": {"logprobs": {"const": True}}, "required": ["logprobs"]}]}}
    schema["examples"] = [{"messages": [{"role": "user", "content": "Name three primary colours."}], "max_completion_tokens": config.default_max_tokens}]
    return schema
