"""A handful of LangChain's standard chat-model tests through ``ChatOpenAI(use_responses_api=True)``,
so through ``POST /v1/responses``, on qwen2.5-coder-0.5b (llama.cpp, the session's ``llama_server``):
tool calling (``function_call`` output items), a tool's result sent back (``function_call`` and
``function_call_output`` input items), ``tool_choice`` "any" with few-shot tool calls, JSON mode
(``text.format`` ``json_object``), streaming (the Responses API's events) and usage in a stream.

The tests are the suite's own, unchanged (``test_langchain_standard.TestSpecdraftChatOpenAI`` with
the Responses API on); every other test of the suite is left out here, to keep the default run short.
The whole suite through the Responses API runs with ``SPECDRAFT_LANGCHAIN_RESPONSES=1`` on the
standard module, or ``benchmarks/langchain_standard.py --responses-api`` (results in
docs/bench/langchain-standard-responses/).
"""

from __future__ import annotations

import pytest
import test_langchain_standard as standard

pytestmark = standard.pytestmark

KEPT = (
    "test_tool_calling",
    "test_tool_message_histories_string_content",
    "test_structured_few_shot_examples",
    "test_json_mode",
    "test_stream",
    "test_usage_metadata_streaming",
)


class TestResponsesApiStandard(standard.TestSpecdraftChatOpenAI):
    @pytest.fixture(scope="class", autouse=True)
    def server(self, request, llama_server):
        live = llama_server(standard.SMALL)
        request.cls.base_url = live.url + "/v1"
        return live

    @property
    def chat_model_params(self) -> dict:
        return {**super().chat_model_params, "model": standard.SMALL, "use_responses_api": True}


for _name in dir(standard.TestSpecdraftChatOpenAI):
    if _name.startswith("test_") and _name not in KEPT:
        setattr(TestResponsesApiStandard, _name, None)  # not collected here: the standard module runs it
