"""A LangChain tool-calling loop against specdraft: ``ChatOpenAI.bind_tools`` with two Python tools;
the model calls them, the loop runs each call and sends its ``ToolMessage`` back, and the model answers.

Run it against the server ``./start.sh`` starts (http://127.0.0.1:8000 by default), serving a model
whose chat template has tools (Qwen2.5; the default smollm2-135m has none):

    ./start.sh --model qwen2.5-coder-0.5b        # in one terminal
    .venv/bin/python demos/langchain_tool_agent.py "Where is my order A-1042?"
    .venv/bin/python demos/langchain_tool_agent.py --url http://127.0.0.1:8000 --key sk-...   # with keys

Nothing here is specific to specdraft: the same loop runs against OpenAI. The server writes the
tools into the prompt with the model's own chat template, reads the model's ``<tool_call>`` blocks
back as OpenAI ``tool_calls``, and answers the final turn from the tool's result. The first turn
requires a call (``tool_choice="required"``: the server then constrains the model to the tools'
``<tool_call>`` format and parameter schemas, so the call is well formed even from a small model);
``--tool-choice auto`` lets the model decide, as later turns do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai import OpenAI

ORDERS = {
    "A-1042": {"status": "shipped", "carrier": "DHL", "expected": "2025-06-03"},
    "A-1043": {"status": "packing", "carrier": None, "expected": "2025-06-05"},
}
SHIPPING_EUR = {"DE": 4.9, "FR": 7.5, "IT": 8.9}


@tool
def get_order_status(order_id: str) -> str:
    """Look up an order by its id (like A-1042): its status, carrier and expected delivery date."""
    order = ORDERS.get(order_id.strip().upper())
    return json.dumps(order) if order else f"no order {order_id!r}"


@tool
def shipping_cost(country_code: str, weight_kg: float) -> str:
    """The shipping cost in euros of a parcel of weight_kg kilograms to a country (two-letter code, like FR)."""
    per_parcel = SHIPPING_EUR.get(country_code.strip().upper())
    if per_parcel is None:
        return f"no shipping to {country_code!r}"
    return f"{per_parcel + 1.2 * max(weight_kg - 2, 0):.2f} EUR"


TOOLS = {t.name: t for t in (get_order_status, shipping_cost)}
SYSTEM = "You are a shop's support assistant. Use the tools to look things up; answer in one or two sentences."


def run(llm: ChatOpenAI, question: str, first_choice: str, max_rounds: int) -> tuple[list[BaseMessage], list[dict]]:
    """The loop: ask (the first turn with ``tool_choice`` ``first_choice``, later ones "auto"), run
    every tool call the answer makes, send the results back, until an answer without calls (or
    ``max_rounds`` turns). Returns the conversation and the calls made."""
    first = llm.bind_tools(list(TOOLS.values()), tool_choice=first_choice, parallel_tool_calls=False)  # one call a turn
    then = llm.bind_tools(list(TOOLS.values()), parallel_tool_calls=False)  # after the results: the model may answer
    messages: list[BaseMessage] = [SystemMessage(SYSTEM), HumanMessage(question)]
    calls: list[dict] = []
    for round_ in range(max_rounds):
        reply = (first if round_ == 0 else then).invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            result: ToolMessage = TOOLS[call["name"]].invoke(call)  # a tool call in: a ToolMessage with its id out
            messages.append(result)
            calls.append({"name": call["name"], "args": call["args"], "result": result.content})
    return messages, calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("question", nargs="?", default="Where is my order A-1042?")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the specdraft server (default: %(default)s)")
    parser.add_argument(
        "--key",
        default=os.environ.get("SPECDRAFT_API_KEY"),
        help="API key, when the server has keys (default: $SPECDRAFT_API_KEY)",
    )
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--max-rounds", type=int, default=3, help="model turns at most (default: %(default)s)")
    parser.add_argument(
        "--tool-choice",
        choices=["required", "auto"],
        default="required",
        help="the first turn's tool_choice: required (it must call a tool) or auto (the model decides; "
        "small models often answer from nothing); later turns are auto (default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print the calls and the answer as one JSON document")
    args = parser.parse_args(argv)
    api_key = args.key or "not-needed"  # a server without keys ignores it
    base_url = args.url.rstrip("/") + "/v1"
    model = OpenAI(base_url=base_url, api_key=api_key).models.list().data[0].id  # the served model
    llm = ChatOpenAI(base_url=base_url, api_key=api_key, model=model, temperature=0, max_tokens=args.max_tokens)
    messages, calls = run(llm, args.question, args.tool_choice, args.max_rounds)
    answer = messages[-1].text if not messages[-1].tool_calls else None
    turns = sum(isinstance(message, AIMessage) for message in messages)
    if args.json:
        print(
            json.dumps(
                {"model": model, "question": args.question, "calls": calls, "turns": turns, "answer": answer},
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    print(f"question: {args.question}")
    for call in calls:
        print(f"tool call: {call['name']}({json.dumps(call['args'], ensure_ascii=False)}) -> {call['result']}")
    print(f"answer: {answer if answer is not None else '(none: the model was still calling tools after --max-rounds)'}")
    print(f"model turns: {turns}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
