"""The answers of ``POST /v1/responses`` as models, in OpenAI's shapes (``openai.types.responses``):
the response object, its output items and usage, and the streamed events (docs/responses-api.md).
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import Field, RootModel

from .responses import SOURCE, Error, Reply, Source, SpecDecodeMetrics, Speculation

ItemStatus = Literal["in_progress", "completed", "incomplete"]
Status = Literal["in_progress", "completed", "incomplete", "failed"]


class OutputText(Reply):
    type: Literal["output_text"]
    text: str
    annotations: list[Any] = Field(description="always empty: the served model cites nothing")
    logprobs: list[Any] = Field(None, description="always empty")


class OutputMessage(Reply):
    """The answer's text: one ``output_text`` part (absent while a stream has not started it)."""

    id: str = Field(description="msg_ and 32 hex digits")
    type: Literal["message"]
    role: Literal["assistant"]
    status: ItemStatus
    content: list[OutputText]


class FunctionCall(Reply):
    """A call the answer makes: ``arguments`` is a JSON object as text; ``call_id`` is what a later
    ``function_call_output`` input item answers."""

    id: str = Field(description="fc_ and 32 hex digits")
    type: Literal["function_call"]
    status: ItemStatus
    call_id: str
    name: str
    arguments: str


OutputItem = Union[OutputMessage, FunctionCall]


class InputTokensDetails(Reply):
    cached_tokens: int = Field(description="prompt tokens restored from the prefix cache")
    cache_write_tokens: int = Field(description="always 0 (nothing is billed)")


class OutputTokensDetails(Reply):
    reasoning_tokens: int = Field(description="always 0: the served model's reasoning, if any, is its text")


class ResponseUsage(Reply):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class IncompleteDetails(Reply):
    reason: Literal["max_output_tokens"] = Field(description="the token limit (or the server's time limit) cut it")


class FormatSpec(Reply):
    type: Literal["text", "json_object", "json_schema"]


class TextConfig(Reply):
    format: FormatSpec


class ResponseObject(Reply):
    """OpenAI's response object, plus ``speculation`` and ``spec_decode_metrics`` (as chat completions
    report them). The request's settings are echoed as OpenAI echoes them (``tools`` in the Responses
    API's shape, ``tool_choice``, ``text``, ...)."""

    id: str = Field(description="resp_ and 32 hex digits: a later request's previous_response_id")
    object: Literal["response"]
    created_at: int
    status: Status
    model: str
    output: list[OutputItem]
    parallel_tool_calls: bool
    tool_choice: Union[str, dict[str, Any]]
    tools: list[dict[str, Any]]
    error: Optional[dict[str, Any]] = None
    incomplete_details: Optional[IncompleteDetails] = None
    instructions: Optional[str] = None
    max_output_tokens: Optional[int] = None
    previous_response_id: Optional[str] = None
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    text: TextConfig = None
    store: bool = Field(None, description="whether a later request may continue from it (previous_response_id)")
    metadata: dict[str, Any] = None
    usage: Optional[ResponseUsage] = Field(None, description="null until the answer is complete")
    speculation: Speculation = None
    spec_decode_metrics: SpecDecodeMetrics = None


class ResponseDeleted(Reply):
    """The answer of ``DELETE /v1/responses/{id}``."""

    id: str
    object: Literal["response.deleted"]
    deleted: bool


# --- streamed events ------------------------------------------------------------------------------
class EventBase(Reply):
    type: str
    sequence_number: int = Field(ge=0, description="0, 1, 2, ... in the order sent")


class ResponseEvent(EventBase):
    """``response.created``, ``response.in_progress``, ``response.completed``, ``response.incomplete``."""

    type: Literal["response.created", "response.in_progress", "response.completed", "response.incomplete"]
    response: ResponseObject


class ItemEvent(EventBase):
    """``response.output_item.added`` / ``.done``: an output item begins (empty) or is complete."""

    type: Literal["response.output_item.added", "response.output_item.done"]
    output_index: int
    item: OutputItem


class ItemPartEvent(EventBase):  # about the output item item_id
    item_id: str
    output_index: int


class ContentPartEvent(ItemPartEvent):  # about a part of a message item's content
    content_index: int


class PartEvent(ContentPartEvent):
    type: Literal["response.content_part.added", "response.content_part.done"]
    part: OutputText


class TextDeltaEvent(ContentPartEvent):
    type: Literal["response.output_text.delta"]
    delta: str
    logprobs: list[Any]
    source: Source = Field(None, description=SOURCE)


class TextDoneEvent(ContentPartEvent):
    type: Literal["response.output_text.done"]
    text: str
    logprobs: list[Any]


class ArgumentsDeltaEvent(ItemPartEvent):
    type: Literal["response.function_call_arguments.delta"]
    delta: str


class ArgumentsDoneEvent(ItemPartEvent):
    type: Literal["response.function_call_arguments.done"]
    name: str
    arguments: str


# an error ends a stream that failed after it began
StreamEvent = RootModel[
    Union[
        ResponseEvent,
        ItemEvent,
        PartEvent,
        TextDeltaEvent,
        TextDoneEvent,
        ArgumentsDeltaEvent,
        ArgumentsDoneEvent,
        Error,
    ]
]
