"""An OpenAI Agents SDK agent with a function tool, against specdraft's Responses API (``POST /v1/responses``).

Run it against the server ``./start.sh`` starts (http://127.0.0.1:8000 by default), serving a model
whose chat template has tools (Qwen2.5; the default smollm2-135m has none):

    ./start.sh --model qwen2.5-coder-0.5b        # in one terminal
    .venv/bin/python demos/agents_sdk_agent.py "Where is my parcel ZX-4411?"
    .venv/bin/python demos/agents_sdk_agent.py --url http://127.0.0.1:8000 --key sk-...   # with keys

Nothing here is specific to specdraft: the agent is the SDK's own (``Agent``, ``Runner``,
``@function_tool``), its model is ``OpenAIResponsesModel`` over an ``AsyncOpenAI`` client pointed
at the server, and tracing (which would send traces to OpenAI) is off. The runner asks the model,
runs the tool call it makes, sends the result back as a ``function_call_output`` item, and asks
again until the model answers in text. The first turn requires a call (``tool_choice="required"``:
the server constrains the model to the tool's call format and parameter schema, so even a small
model's call is well formed); after the call the SDK resets the choice to auto, so the model
answers from the result.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from agents.items import ToolCallItem, ToolCallOutputItem
from agents.result import RunResultBase
from openai import AsyncOpenAI, OpenAI

PARCELS = {
    "ZX-4411": {"status": "in transit", "location": "Lyon hub", "delivery": "Friday"},
    "ZX-4412": {"status": "delivered", "location": "front door", "delivery": "Monday"},
}
INSTRUCTIONS = (
    "You are a parcel delivery desk. Look the parcel up with the parcel_status tool, then tell the "
    "customer its status and delivery day in one sentence."
)


@function_tool
def parcel_status(tracking_number: str) -> str:
    """Look up a parcel by its tracking number (like ZX-4411): its status, location and delivery day."""
    parcel = PARCELS.get(tracking_number.strip().upper())
    return json.dumps(parcel) if parcel else f"no parcel {tracking_number!r}"


def make_agent(client: AsyncOpenAI, model: str, max_tokens: int) -> Agent:
    """The agent: one tool, greedy answers, a call required on the first turn (then auto)."""
    settings = ModelSettings(temperature=0, max_tokens=max_tokens, tool_choice="required", parallel_tool_calls=False)
    return Agent(
        name="Parcel desk",
        instructions=INSTRUCTIONS,
        tools=[parcel_status],
        model=OpenAIResponsesModel(model=model, openai_client=client),
        model_settings=settings,
    )


async def _streamed(agent: Agent, question: str, max_turns: int) -> RunResultBase:
    """The run with the answers streamed (``Runner.run_streamed``: the Responses API's events)."""
    result = Runner.run_streamed(agent, question, max_turns=max_turns)
    async for _event in result.stream_events():
        pass  # a user interface would show each text delta as it comes
    return result


def run(client: AsyncOpenAI, model: str, question: str, max_tokens: int, max_turns: int, stream: bool = False) -> dict:
    """Run the agent on ``question`` (``stream``: with streamed answers): its calls (name, arguments,
    result) and its final answer."""
    agent = make_agent(client, model, max_tokens)
    if stream:
        result = asyncio.run(_streamed(agent, question, max_turns))
    else:
        result = Runner.run_sync(agent, question, max_turns=max_turns)
    calls = [
        {"name": item.raw_item.name, "arguments": json.loads(item.raw_item.arguments)}
        for item in result.new_items
        if isinstance(item, ToolCallItem)
    ]
    outputs = [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]
    for call, output in zip(calls, outputs):
        call["result"] = output
    return {"model": model, "question": question, "calls": calls, "answer": result.final_output}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default="Where is my parcel ZX-4411?")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the specdraft server (default: %(default)s)")
    parser.add_argument(
        "--key",
        default=os.environ.get("SPECDRAFT_API_KEY"),
        help="API key, when the server has keys (default: $SPECDRAFT_API_KEY)",
    )
    parser.add_argument("--max-tokens", type=int, default=120, help="tokens per model turn (default: %(default)s)")
    parser.add_argument("--max-turns", type=int, default=4, help="model turns at most (default: %(default)s)")
    parser.add_argument("--stream", action="store_true", help="stream the model's answers (Runner.run_streamed)")
    parser.add_argument("--json", action="store_true", help="print the calls and the answer as one JSON document")
    args = parser.parse_args(argv)
    set_tracing_disabled(True)  # the SDK would otherwise send traces to OpenAI
    api_key = args.key or "not-needed"  # a server without keys ignores it
    base_url = args.url.rstrip("/") + "/v1"
    model = OpenAI(base_url=base_url, api_key=api_key).models.list().data[0].id  # the served model
    client = AsyncOpenAI(base_url=base_url, api_key=api_key)
    out = run(client, model, args.question, args.max_tokens, args.max_turns, args.stream)
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(f"question: {out['question']}")
    for call in out["calls"]:
        print(f"tool call: {call['name']}({json.dumps(call['arguments'], ensure_ascii=False)}) -> {call['result']}")
    print(f"answer: {out['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
