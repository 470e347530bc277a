"""OpenAI-compatible ``POST /v1/completions`` and ``POST /v1/chat/completions`` (docs/service.md).

Both run ``start``: encode the prompt(s) (chat: through the chat template), check they fit the
context, plan the output (``structured_output.plan_output``), and build the first choice's stream
before the answer starts, so that what the server cannot do is a 400. Choice ``i * n + j`` is prompt
``i``'s ``j``-th, each with a fresh drafter. ``Run`` writes the answer whole or as chunks;
``answer_format`` spells it per endpoint. Serving an edge model, a request is an ``EdgeRun`` whose
answer ``edge_model`` writes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, Iterator, Sequence

from flask import Blueprint, Response, jsonify, request
from jinja2 import TemplateError

from specdraft import (
    GenerationConfig,
    GenerationResult,
    GenerationStream,
    LogprobsUnavailableError,
    Model,
    SamplingUnavailableError,
    SpeculativeGenerator,
    Stats,
    Tokenizer,
)
from specdraft.constrained import GrammarUnavailableError
from specdraft.copydraft import CopyDrafter
from specdraft.copydraft.editor import COPY_SPECULATION
from specdraft.retrieval.prompt_passages import prompt_texts
from specdraft.tool_calls import format_for_model

from . import edge_model, metrics, openai_usage, sse
from .answer_format import CHAT, TEXT, Answer, Format
from .limits import RequestGuard, current_guard, drain, generating, until_stopped
from .openai_logprobs import LogprobWriter
from .protocol.chat import ChatMessage, Prompt
from .protocol.completions import CompletionRequest, check_context_length, parse_completion_request
from .protocol.errors import RequestError, as_request_error, check_token_ids, parse_json_body
from .state import ServiceState, current_state
from .structured_output import OutputPlan, plan_output

bp = Blueprint("completions", __name__, url_prefix="/v1")


@bp.post("/completions")
@generating
def completions() -> Response:
    """Text completion: ``prompt`` (a string, or a list: one choice per prompt) in, ``choices[i].text`` out."""
    return _complete(TEXT)


@bp.post("/chat/completions")
@generating
def chat_completions() -> Response:
    """Chat completion: ``messages`` in (through the model's chat template), ``choices[i].message`` out."""
    return _complete(CHAT)


def _complete(fmt: Format) -> Response:
    """The shared path: everything that can be rejected is checked before generation starts."""
    state = current_state()
    req = parse_completion_request(parse_json_body(request.get_data()), fmt.chat, state.config)
    guard = current_guard()
    if edge_model.serves_edge(state.config):  # the laptop's endpoint: an EdgeRun per request
        edge_model.check_supported(req)
        [(_, ids)] = _prompts(state.target(), req, state.config.model_name, fmt.prompt_param, edge_model.PLAIN)
        return edge_model.answer(state, ids, req, Answer(fmt, edge_model.served_name(state)), guard)
    run = start(state, req, fmt)
    return sse.response(run.chunks(guard), guard) if req.stream else jsonify(run.whole(guard))


def start(state: ServiceState, req: CompletionRequest, fmt: Format) -> Run:
    """Start ``req`` as ``fmt`` spells it: its prompts encoded and checked against the context, its
    output planned, its first choice's stream built (so what the server cannot do is a
    ``RequestError`` now, before any answer). Also the Responses API's way in (``responses_api``)."""
    model = state.target()
    plan = plan_output(req.response_format, req.tools, model.tokenizer, tool_format=format_for_model(model))
    prompts = _prompts(model, req, state.config.model_name, fmt.prompt_param, plan)
    prediction_ids = None if req.prediction is None else model.tokenizer.encode(req.prediction)
    choices = [
        _Choice(i * req.n + j, text, ids, replace(req.choice_generation(j), constraint=plan.constraint))
        for i, (text, ids) in enumerate(prompts)
        for j in range(req.n)
    ]
    drafter = "prediction" if prediction_ids is not None else str(req.drafter)
    streams = (_start(state, model, req, choice, prediction_ids, drafter) for choice in choices)
    first = next(streams)  # now: a drafter or logprobs the server cannot give is a 400 before the answer starts
    return Run(
        Answer(fmt, state.config.model_name),
        chain([first], streams),  # the others are built in turn, as each choice's turn comes
        drafter,
        prediction_ids,
        prompt_tokens=sum(len(ids) for _, ids in prompts),
        choices=len(choices),
        plan=plan,
        tokenizer=None if req.generation.logprobs is None else model.tokenizer,
        include_usage=req.include_usage,
    )


@dataclass(frozen=True)
class _Choice:
    index: int  # in the answer's choices
    text: str | None  # the prompt's text (None: chat, or a prompt of token ids)
    prompt_ids: list[int]
    generation: GenerationConfig  # the request's, with this choice's seed


def _start(
    state: ServiceState,
    model: Model,
    req: CompletionRequest,
    choice: _Choice,
    prediction_ids: list[int] | None,
    drafter_name: str,
) -> tuple[int, GenerationStream]:
    """One choice's drafter and generation stream: the one place both are built."""
    generation = choice.generation
    if prediction_ids is not None:  # predicted output: draft from it (the request's drafter is not used)
        drafter, speculation = CopyDrafter(prediction_ids, model.eos_token_ids), COPY_SPECULATION
    else:
        texts = prompt_texts(choice.text, None if req.messages is None else [m.to_dict() for m in req.messages])
        drafter = state.drafter(req.drafter, generation.sampling, generation.seed, texts)
        speculation = state.speculation(req.drafter)
    try:
        stream = SpeculativeGenerator(model, speculation).stream(choice.prompt_ids, drafter, generation)
    except LogprobsUnavailableError:
        raise RequestError(
            "logprobs are not available on this backend (its verification returns no logits)", "logprobs"
        ) from None
    except SamplingUnavailableError as error:
        raise RequestError(str(error), "temperature") from None
    except GrammarUnavailableError as error:
        raise RequestError(f"{error} (asked for by {_constrained_by(req)})", _constrained_by(req)) from None
    return choice.index, metrics.observe(stream, drafter_name)


def _constrained_by(req: CompletionRequest) -> str:
    """The request field that asked for a constraint: tool_choice (required or a function) or response_format."""
    return (
        "tool_choice" if req.tools is not None and req.tools.choice not in (None, "none", "auto") else "response_format"
    )


def _prompts(
    model: Model, req: CompletionRequest, served: str, param: str, plan: OutputPlan
) -> list[tuple[str | None, list[int]]]:
    """Each prompt's text (None: chat or token ids) and token ids, each checked against the context;
    the chat template gets the plan's tools."""
    if req.messages is not None:
        prompts = [(None, chat_ids(model, req.messages, served, plan.template_tools))]
    else:
        assert req.prompts is not None
        several = len(req.prompts) > 1
        prompts = [
            (p, model.encode(p))
            if isinstance(p, str)
            else (None, _token_ids(model, p, f"prompt[{i}]" if several else "prompt"))
            for i, p in enumerate(req.prompts)
        ]
    for _, ids in prompts:
        check_context_length(len(ids), req.max_tokens, model.max_length, param)
    return prompts


def chat_ids(
    model: Model,
    messages: Sequence[ChatMessage],
    served: str,
    tools: list[dict[str, Any]] | None = None,
    instead: str = "a prompt to /v1/completions",
) -> list[int]:
    """``messages`` through ``model``'s chat template (a 400 naming ``messages`` when it has none, which
    says to send ``instead``, or refuses them); also an edge session's prompt."""
    if not model.has_chat_template:
        raise RequestError(f"model {served!r} has no chat template; send {instead}", "messages")
    # templates may reject e.g. a system message that is not first
    with as_request_error("messages", TemplateError, prefix="the model's chat template rejected the messages: "):
        return model.encode_chat([m.to_dict() for m in messages], tools=tools)


def _token_ids(model: Model, prompt: Prompt, param: str) -> list[int]:
    check_token_ids(prompt, model.tokenizer.vocab_size, param)  # type: ignore[arg-type]
    return list(prompt)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Run:
    """A request under way (``start``): its choices' ``streams``, the first one built, and its answer,
    written whole (``whole``) or as a stream of chunks (``chunks``). ``tokenizer``: spells logprobs
    (None: none were asked for)."""

    answer: Answer
    streams: Iterator[tuple[int, GenerationStream]]
    drafter: str
    prediction_ids: list[int] | None
    prompt_tokens: int  # every prompt once, however many choices it has
    choices: int
    plan: OutputPlan  # what the answer is: text, JSON, tool calls
    tokenizer: Tokenizer | None = None
    include_usage: bool = False

    def whole(self, guard: RequestGuard) -> dict[str, Any]:
        """The whole answer: each choice's result, in turn (the one place a non-streamed answer is
        drained). A time limit or a client gone ends the choice under way and starts no other."""
        results = []
        for index, stream in self.streams:
            results.append((index, drain(stream, guard)))
            if guard.timed_out or guard.client_gone:
                break
        done = [result for _, result in results]
        choices = [
            self.answer.choice(i, r.text, self.plan, r.finish_reason, self._logprobs(self._writer(), r.logprobs))
            for i, r in results
        ]
        return self.answer.whole(choices, self._usage(done), **self._speculation(done, guard))

    def chunks(self, guard: RequestGuard) -> Iterator[dict[str, Any]]:
        """The choices' chunks, one choice after the other: one per text piece (with the logprobs of
        the tokens accepted since the last chunk), a final one with ``finish_reason`` and the choice's
        ``speculation`` and ``spec_decode_metrics``; the last choice's also carries the whole answer's
        ``usage``, unless ``include_usage`` asks for OpenAI's separate last chunk (no choices, only
        ``usage``). Generation stops early when ``guard`` says so (time limit: the final chunk
        follows and no other choice starts; client gone: nothing more)."""
        done: list[GenerationResult] = []
        for index, stream in self.streams:
            deltas, writer, sent = self.answer.fmt.deltas(self.plan), self._writer(), 0
            for piece in until_stopped(stream, guard):
                for delta in deltas.push(piece.text):  # none while text is held back (a tag may be starting)
                    logprobs, sent = self._logprobs(writer, stream.logprobs, sent), len(stream.logprobs or ())
                    yield self.answer.chunk(index, delta, None, logprobs, source=piece.source)
            result = stream.stop()
            if guard.client_gone:
                return
            done.append(result)
            for delta in deltas.finish():
                logprobs, sent = self._logprobs(writer, result.logprobs, sent), len(result.logprobs or ())
                yield self.answer.chunk(index, delta, None, logprobs)
            last = len(done) == self.choices or guard.timed_out
            reason = self.plan.finish_reason(result.finish_reason, deltas.calls)
            usage = {"usage": self._usage(done)} if last and not self.include_usage else {}
            logprobs = self._logprobs(writer, result.logprobs, sent)
            yield self.answer.chunk(
                index, deltas.final(), reason, logprobs, **usage, **self._speculation([result], guard)
            )
            if last:
                break
        if self.include_usage:
            yield self.answer.usage_chunk(self._usage(done))

    def _writer(self) -> LogprobWriter | None:
        return None if self.tokenizer is None else LogprobWriter(self.tokenizer, self.answer.fmt.chat)

    def _logprobs(self, writer: LogprobWriter | None, entries: list | None, start: int = 0) -> dict[str, Any] | None:
        """The logprobs of the entries from ``start`` on (None when none were asked for)."""
        if writer is None or entries is None:
            return None
        return writer(entries[start:])

    def _usage(self, results: list[GenerationResult]) -> dict[str, Any]:
        return openai_usage.usage(self.prompt_tokens, results, self.prediction_ids)

    def _speculation(self, results: list[GenerationResult], guard: RequestGuard) -> dict[str, Any]:
        """``speculation`` (the drafter and ``Stats.to_dict()``) and ``spec_decode_metrics`` (vLLM's
        names, ``openai_usage``) of the choices in ``results``."""
        stats = Stats.merged([result.stats for result in results])
        speculation = {
            "drafter": self.drafter,
            **stats.to_dict(),
            **({"time_limit_reached": True} if guard.timed_out else {}),
        }
        return {"speculation": speculation, "spec_decode_metrics": openai_usage.spec_decode_metrics(stats)}
