"""What a completion's answer must be: ``plan_output`` turns ``response_format`` and the tools into an
``OutputPlan`` once per request, before generation (docs/service.md, "Structured outputs and tool
calls"): the constraint (tool calls in the model's format for ``required`` or a named function, the
schema for a JSON ``response_format``; a 400 naming the field, keyword and JSON pointer when it cannot
be compiled), the tools the chat template lists (with every ``tool_choice``, ``none`` included) and
whether calls are read from the text (``auto``, ``required``, a function).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from specdraft import Tokenizer
from specdraft.constrained import Constraint, ConstraintError, ConstraintLimits, from_response_format
from specdraft.tool_calls import DEFAULT, ToolCallFormat, ToolChoice, ToolError, ToolSpec, check_parameters

from .protocol.errors import RequestError, as_request_error
from .protocol.structured import ToolRequest

NO_TOOLS = ToolChoice("none")


@dataclass(frozen=True)
class OutputPlan:
    """The answer's ``constraint`` (None: free text), the request's ``tools`` (for the chat template)
    and ``choice`` (mode "none" without tools); ``parallel``: several calls may be made;
    ``tool_format``: the model's tool-call format, which reads the calls."""

    constraint: Constraint | None = None
    tools: tuple[ToolSpec, ...] = ()
    choice: ToolChoice = NO_TOOLS
    parallel: bool = True
    tool_format: ToolCallFormat = DEFAULT

    @property
    def template_tools(self) -> list[dict[str, Any]] | None:
        """The tools as the chat template lists them (None: no tools section)."""
        return [tool.to_openai() for tool in self.tools] or None

    @property
    def reads_calls(self) -> bool:
        """Whether tool calls are read from the answer (auto, required, a named function)."""
        return self.choice.mode != "none"

    def finish_reason(self, reason: str, calls: int) -> str:
        """OpenAI's ``finish_reason`` for an answer that ended with ``reason`` and made ``calls``:
        "tool_calls" for calls in auto or required mode, "stop" for a named function's call (as
        OpenAI answers), "length" whenever the token limit cut it."""
        if reason == "length" or not calls:
            return reason
        return "stop" if self.choice.mode == "function" else "tool_calls"


def plan_output(
    response_format: Mapping[str, Any] | None,
    tools: ToolRequest | None,
    tokenizer: Tokenizer,
    limits: ConstraintLimits = ConstraintLimits(),
    tool_format: ToolCallFormat = DEFAULT,
) -> OutputPlan:
    """The request's ``OutputPlan`` (module docstring) for a model with ``tokenizer`` that writes calls
    in ``tool_format``; ``RequestError`` naming the field for a schema that cannot be used."""
    tools = tools or ToolRequest()
    specs, choice = tools.specs(), tools.tool_choice()
    for i, spec in enumerate(specs):
        if spec.parameters is not None:
            try:
                check_parameters(spec.parameters, f"tools[{i}].function.parameters")
            except ToolError as error:
                raise RequestError(str(error), error.param) from None
    if choice.constrained:
        constraint = tool_format.constraint(specs, choice, tools.parallel, tokenizer)
        _check(constraint, limits, "the tools' call grammar", "tools")
        return OutputPlan(constraint, specs, choice, tools.parallel, tool_format)
    with as_request_error("response_format", ConstraintError, prefix="response_format: "):
        constraint = from_response_format(response_format)
    if constraint is not None:
        if choice.mode == "auto":
            raise RequestError(
                "response_format constrains the answer to JSON, which leaves tool calls in auto mode no room: "
                'send tool_choice "none" (JSON only), "required" or a function (calls only)',
                "response_format",
            )
        where = "response_format.json_schema.schema" if constraint.kind == "json_schema" else "response_format"
        _check(constraint, limits, where, where)
    return OutputPlan(constraint, specs, choice, tools.parallel, tool_format)


def _check(constraint: Constraint, limits: ConstraintLimits, what: str, param: str) -> None:
    with as_request_error(param, ConstraintError, prefix=f"{what}: "):
        constraint.check(limits)
