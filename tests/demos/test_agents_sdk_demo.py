"""``demos/agents_sdk_agent.py`` run as a user runs it (a subprocess): an OpenAI Agents SDK agent with a
function tool, against ``POST /v1/responses`` on a live server serving qwen2.5-coder-0.5b on llama.cpp
(the session's ``llama_server``; slow: the tiny random models call no tools). The agent runs to its
final answer: its call is well formed (the first turn requires one), the tool's result goes back as a
``function_call_output`` item, and the answer is the target's own: the chat completion's answer to
the same conversation, with the same tool, under plain decoding; streamed (``--stream``), the run is
the same."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from openai import OpenAI

DEMOS = Path(__file__).resolve().parents[2] / "demos"
NAME = "agents_sdk_agent.py"
MODEL = "qwen2.5-coder-0.5b"


def run_demo(*args, timeout=600):
    done = subprocess.run([sys.executable, str(DEMOS / NAME), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def load_demo():
    spec = importlib.util.spec_from_file_location("agents_sdk_agent", DEMOS / NAME)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_demo_says_how_to_run_it_against_start_sh():
    source = (DEMOS / NAME).read_text()
    assert source.startswith('"""') and "./start.sh --model qwen2.5-coder-0.5b" in source
    assert "--url" in source and "--key" in source and "set_tracing_disabled(True)" in source
    assert run_demo("--help").startswith("usage: ")  # without a server


@pytest.mark.slow
def test_the_agent_calls_its_tool_and_answers_as_the_chat_completion_does(llama_server):
    server, demo = llama_server(MODEL), load_demo()
    out = json.loads(run_demo("Where is my parcel ZX-4411?", "--url", server.url, "--json"))
    assert out["model"] == MODEL
    [call] = out["calls"]
    assert call == {
        "name": "parcel_status",
        "arguments": {"tracking_number": "ZX-4411"},
        "result": json.dumps(demo.PARCELS["ZX-4411"]),
    }
    assert isinstance(out["answer"], str) and out["answer"]
    # the agent's last turn, as a chat completion under plain decoding
    tool = demo.parcel_status
    function = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.params_json_schema,
        "strict": tool.strict_json_schema,
    }
    history = [
        {"role": "system", "content": demo.INSTRUCTIONS},
        {"role": "user", "content": "Where is my parcel ZX-4411?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "parcel_status", "arguments": json.dumps(call["arguments"])},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": call["result"]},
    ]
    client = OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=300)
    chat = client.chat.completions.create(
        model=MODEL,
        messages=history,
        tools=[{"type": "function", "function": function}],
        parallel_tool_calls=False,
        max_tokens=120,
        temperature=0,
        extra_body={"drafter": "none"},
    )
    message = chat.choices[0].message
    assert not message.tool_calls and message.content == out["answer"]
    # streamed (Runner.run_streamed: the Responses API's events, parsed by the SDK): the same run
    assert json.loads(run_demo("Where is my parcel ZX-4411?", "--url", server.url, "--json", "--stream")) == out
