"""The prompt the service builds after a tool result, with the packaged Qwen2.5-Coder GGUFs' own chat
templates: what an agent's second turn sends (a user question, the model's call, the tool's output),
through the Responses API's translation and the chat request's validation, rendered as the served
model renders it.

Why (issue 29): through chat completions, an agent on qwen2.5-coder-1.5b calls its tool and then ends
with a malformed call as its answer, ``{{"name": "parcel_status", "arguments": {...}}}``. The history is
rendered as the template's own format (the call as one ``<tool_call>`` block of single-brace JSON with
its arguments as an object, the output in ``<tool_response>``); the doubled braces are in the 1.5b
GGUF's own template, whose tools section tells the model to answer
``{{"name": <function-name>, "arguments": <args-json-object>}}`` (a Jinja string literal, so the braces
reach the prompt doubled; the 0.5b GGUF's template has single braces). The model copies that
example. With the example's braces made single, the 1.5b still calls the tool again after the result
(a well-formed call) rather than answering: the model, not the prompt we build."""

from __future__ import annotations

import pytest

from specdraft.apps.service import ServiceConfig
from specdraft.apps.service.protocol.completions import parse_completion_request
from specdraft.apps.service.protocol.openai_responses_request import ResponsesBody, to_chat
from specdraft.chat_template import render_chat

pytestmark = pytest.mark.slow  # reads the packaged GGUF files' headers

PARCEL = {
    "type": "function",
    "name": "parcel_status",
    "description": "Look up a parcel by its tracking number",
    "parameters": {
        "type": "object",
        "properties": {"tracking_number": {"type": "string"}},
        "required": ["tracking_number"],
    },
}
RESULT = '{"status": "in transit", "delivery": "Friday"}'
EXAMPLE = '{{"name": <function-name>, "arguments": <args-json-object>}}'


def template(name: str) -> str:
    """The packaged model's chat template, from its GGUF (the vocabulary only: no weights are read)."""
    import llama_cpp

    from specdraft.models import gguf_path

    model = llama_cpp.Llama(str(gguf_path(name)), vocab_only=True, verbose=True)  # quiet mode leaks /dev/null handles
    try:
        return model.metadata["tokenizer.chat_template"]
    finally:
        model.close()


def second_turn_prompt(chat_template: str) -> str:
    """The prompt of an agent's turn after its tool ran, as the service builds it."""
    config = ServiceConfig(model="qwen2.5-coder-1.5b")
    items = [
        {"role": "user", "content": "Where is my parcel ZX-4411?"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "parcel_status",
            "arguments": '{"tracking_number":"ZX-4411"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": RESULT},
    ]
    chat = to_chat(ResponsesBody.parse({"input": items, "tools": [PARCEL]}, config))
    request = parse_completion_request(chat.body, True, config)
    tools = [dict(tool) for tool in request.tools.tools]
    return render_chat(chat_template, [message.to_dict() for message in request.messages], {}, tools)


@pytest.mark.parametrize("name", ["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
def test_the_history_is_the_templates_own_format_and_the_braces_are_the_templates(name):
    prompt = second_turn_prompt(template(name))
    # the call: one <tool_call> block, single braces, the arguments an object (not a JSON string)
    assert '<tool_call>\n{"name": "parcel_status", "arguments": {"tracking_number": "ZX-4411"}}\n</tool_call>' in prompt
    assert f"<tool_response>\n{RESULT}\n</tool_response>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    # the only doubled braces are the 1.5b template's example of a call
    doubled = prompt.count("{{")
    assert (doubled, EXAMPLE in prompt) == ((1, True) if name == "qwen2.5-coder-1.5b" else (0, False))
