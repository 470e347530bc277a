"""Shared by the Hermes tool-call tests (``test_tool_calls.py``, ``test_tool_spec.py``,
``test_tool_call_grammar.py``): tools in OpenAI's shape (``WEATHER`` with a strict schema, ``TIME``
without parameters, ``SEARCH`` with an open one) and ``CALL``, one call of ``get_weather`` as the
Qwen2.5 template writes it."""

from __future__ import annotations

from specdraft.tool_calls import format_tool_call

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city", "days"],
            "additionalProperties": False,
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time"}}
SEARCH = {
    "type": "function",
    "function": {"name": "search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
}
CALL = format_tool_call("get_weather", '{"city": "Paris", "days": 2}')
