"""The structured-output benchmark's cases, measurements and specdraft methods.

- ``StructuredCase``: a ``BenchCase`` that also carries its constraint (the grammar every method's
  answer is decoded under), the messages and tools the prompt was encoded from (a peer encodes them
  itself) and the schema the answer's JSON must satisfy.
- ``StructuredMeasurement``: a ``Measurement`` with the answer's text, the grammar's stats
  (``Stats.forced_drafted``, ``forced_tokens``, ``grammar_s``), the finish reason and the verdict
  on the answer (``judge``).
- ``ConstrainedMethod``: specdraft's engine with ``GenerationConfig(constraint=case.constraint)``,
  a speculation config (``grammar_drafts`` on or off) and a drafter made per case.
  ``constrained_methods`` lists the four the benchmark compares (``METHODS``).

**Judging an answer** (``judge``): for ``extract`` the answer is the whole text; for ``tool-call``
the text must hold exactly one call in the target's tool-call format (``ToolCallFormat.parse``, as
the service reads a reply) calling the chosen tool, and the answer is the call's arguments.
``valid_json``: the answer parses as JSON; ``valid_schema``: it also satisfies the case's schema
(``jsonschema_rs``). ``answer`` is the answer's JSON text in the grammar's style (``", "`` and
``": "``, no newlines, non-ASCII kept), which the peer's text is compared with.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable

from specdraft import Drafter, GenerationConfig, Model, SpeculationConfig, SpeculativeGenerator
from specdraft.constrained import Constraint
from specdraft.drafters import PromptLookupDrafter
from specdraft.retrieval.pipeline import RAG_SPECULATION
from specdraft.retrieval.prompt_passages import documents_drafter, prompt_texts

from .datasets.structured_data import StructuredItem
from .methods import BenchCase, Measurement

if TYPE_CHECKING:
    from specdraft.tool_calls import ToolCallFormat

__all__ = [
    "METHODS",
    "PLAIN",
    "Answer",
    "ConstrainedMethod",
    "StructuredCase",
    "StructuredMeasurement",
    "constrained_methods",
    "judge",
    "judge_json",
    "structured_case",
]

PLAIN = "constrained"  # plain constrained decoding: the baseline
METHODS = (PLAIN, "specdraft:grammar", "specdraft:grammar+prompt-lookup", "specdraft:grammar+documents")


@dataclass(frozen=True)
class StructuredCase(BenchCase):
    """A case of ``structured_bench``: ``prompt_ids`` encode ``messages`` (with ``tools``) in the
    target's chat template; ``constraint`` is what every specdraft method decodes under; ``schema``
    is the answer's (``StructuredItem.answer_schema``); ``document`` is the real text; ``tool_format``
    (tool-call cases) the target's format, which reads the answer's call (None: the default, Hermes)."""

    task: str = ""
    constraint: Constraint | None = None
    schema: dict = field(default_factory=dict)
    messages: tuple[dict, ...] = ()
    tools: tuple[dict, ...] = ()
    tool_choice: dict | None = None
    document: str = ""
    tool_format: ToolCallFormat | None = None


def structured_case(item: StructuredItem, target: Model, max_new_tokens: int) -> StructuredCase:
    """The case of ``item`` for ``target``: the prompt through ``target.encode_chat`` (with the
    tools for ``tool-call``), the constraint from the schema or the named tool choice."""
    if item.tools:
        from specdraft.tool_calls import ToolChoice, format_for_model, tools_from_openai

        prompt_ids = target.encode_chat(list(item.messages), tools=list(item.tools))
        tools = tools_from_openai(list(item.tools))
        choice = ToolChoice.from_openai(item.tool_choice, tools)
        tool_format = format_for_model(target)
        constraint = tool_format.constraint(tools, choice, False, target.tokenizer)
    else:
        prompt_ids = target.encode_chat(list(item.messages))
        constraint, tool_format = Constraint.json_schema(item.answer_schema), None
    return StructuredCase(
        item.id, tuple(prompt_ids), max_new_tokens, task=item.task, constraint=constraint, schema=item.answer_schema,
        messages=item.messages, tools=item.tools, tool_choice=item.tool_choice, document=item.document,
        tool_format=tool_format,
    )  # fmt: skip


@dataclass(frozen=True)
class Answer:
    """The verdict on one answer (module docstring, "Judging an answer")."""

    answer: str | None  # the answer's JSON text in the grammar's style; None when it does not parse
    valid_json: bool
    valid_schema: bool


def judge_json(text: str, schema: dict) -> Answer:
    """``text`` as JSON, checked against ``schema``."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return Answer(None, False, False)
    return _verdict(value, schema)


def _verdict(value: Any, schema: dict) -> Answer:
    import jsonschema_rs

    styled = json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return Answer(styled, True, bool(jsonschema_rs.is_valid(schema, value)))


def judge(case: StructuredCase, text: str) -> Answer:
    """The verdict on specdraft's answer ``text`` to ``case`` (module docstring)."""
    if not case.tools:
        return judge_json(text, case.schema)
    from specdraft.tool_calls import DEFAULT

    calls = (case.tool_format or DEFAULT).parse(text).calls
    name = (case.tool_choice or {}).get("function", {}).get("name")
    if len(calls) != 1 or calls[0].name != name:
        return Answer(None, False, False)
    return judge_json(calls[0].arguments, case.schema)


@dataclass
class StructuredMeasurement(Measurement):
    """One answer of one method. For the peer only (None for specdraft's methods): ``text_equal``
    (its answer's JSON text equals plain constrained decoding's), ``same_record`` (the same JSON
    value) and ``same_prompt`` (its prompt tokens were ours)."""

    task: str = ""
    text: str = ""
    finish_reason: str = ""
    forced_drafted: int = 0
    forced_tokens: int = 0
    grammar_s: float = 0.0
    answer: str | None = None
    valid_json: bool = False
    valid_schema: bool = False
    text_equal: bool | None = None
    same_record: bool | None = None
    same_prompt: bool | None = None


class ConstrainedMethod:
    """specdraft's engine under the case's constraint, with ``speculation`` and a fresh drafter from
    ``make_drafter(case)`` (None: no drafter of the request's own). Every request prefills its whole
    prompt (no prefix cache), as the peer does, unless ``share_prefill`` (the model's prefix cache)."""

    def __init__(
        self,
        name: str,
        target: Model,
        make_drafter: Callable[[StructuredCase], Drafter | None],
        speculation: SpeculationConfig,
        share_prefill: bool = False,
    ) -> None:
        self.name = name
        self.share_prefill = share_prefill
        self.target = target
        self.make_drafter = make_drafter
        self.speculation = speculation

    def run(self, case: StructuredCase) -> StructuredMeasurement:
        config = GenerationConfig(max_new_tokens=case.max_new_tokens, constraint=case.constraint)
        drafter = self.make_drafter(case)
        start = time.perf_counter()
        result = SpeculativeGenerator(self.target, self.speculation, prefix_cache=self.share_prefill).generate(
            list(case.prompt_ids), drafter, config
        )
        wall = time.perf_counter() - start
        stats = result.stats
        verdict = judge(case, result.text)
        return StructuredMeasurement(
            self.name, case.id, result.token_ids, wall,
            stats.target_forward_passes, stats.mean_accepted_tokens, stats.prefill_s,
            task=case.task, text=result.text, finish_reason=result.finish_reason, forced_drafted=stats.forced_drafted,
            forced_tokens=stats.forced_tokens, grammar_s=stats.grammar_s, answer=verdict.answer,
            valid_json=verdict.valid_json, valid_schema=verdict.valid_schema,
        )  # fmt: skip


def constrained_methods(target: Model, share_prefill: bool = False) -> list[ConstrainedMethod]:
    """``METHODS`` on ``target``: plain constrained decoding (no drafter, ``grammar_drafts=False``),
    the grammar drafter alone, with prompt lookup, and with the ``documents`` drafter over the
    prompt's texts (the service's: ``prompt_passages.documents_drafter``, with the RAG answers'
    speculation config, as the service gives it). ``share_prefill``: see ``ConstrainedMethod``."""
    plain = SpeculationConfig(grammar_drafts=False)
    grammar = SpeculationConfig(grammar_drafts=True)
    documents = replace(RAG_SPECULATION, grammar_drafts=True)
    tokenizer = target.tokenizer
    return [
        ConstrainedMethod(PLAIN, target, lambda case: None, plain, share_prefill),
        ConstrainedMethod(METHODS[1], target, lambda case: None, grammar, share_prefill),
        ConstrainedMethod(METHODS[2], target, lambda case: PromptLookupDrafter(), grammar, share_prefill),
        ConstrainedMethod(
            METHODS[3],
            target,
            lambda case: documents_drafter(tokenizer, prompt_texts(None, case.messages)),
            documents,
            share_prefill,
        ),
    ]
