"""``demos/structured_extraction.py`` and ``demos/langchain_tool_agent.py`` run as a user runs them (a
subprocess), against a live server on loopback serving qwen2.5-coder-0.5b on llama.cpp (slow: the
tiny random models neither extract nor call tools). Their output is checked against the documents,
the tools and the server's own answers."""

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

DEMOS = Path(__file__).resolve().parents[2] / "demos"
MODEL = "qwen2.5-coder-0.5b"
NAMES = ["structured_extraction.py", "langchain_tool_agent.py"]


def run_demo(name, *args, timeout=600):
    done = subprocess.run([sys.executable, str(DEMOS / name), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("name", NAMES)
def test_the_demo_says_how_to_run_it_against_start_sh(name):
    source = (DEMOS / name).read_text()
    assert source.startswith('"""') and "./start.sh --model qwen2.5-coder-0.5b" in source
    assert "--url" in source and "--key" in source
    assert run_demo(name, "--help").startswith("usage: ")  # without a server


def test_the_extraction_demo_names_its_documents_when_asked_for_another():
    done = subprocess.run(
        [sys.executable, str(DEMOS / "structured_extraction.py"), "catering", "nosuch"], capture_output=True, text=True
    )  # refused before it connects to any server
    assert done.returncode == 2
    assert "no document named nosuch: choose from office-supplies web-hosting catering" in done.stderr


@pytest.fixture(scope="module")
def server(llama_server):
    return llama_server(MODEL)


def post(server, body):
    request = urllib.request.Request(
        server.url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)


def load_demo(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name.removesuffix(".py"), DEMOS / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_structured_extraction_gives_one_valid_record_per_document_as_the_server_does(server):
    demo = load_demo("structured_extraction.py")
    out = json.loads(run_demo("structured_extraction.py", "--url", server.url, "--json"))
    assert out["model"] == MODEL and list(out["records"]) == list(demo.DOCUMENTS)
    for name, record in out["records"].items():
        demo.Invoice.model_validate(record)  # the schema holds
        assert record["invoice_number"] in demo.DOCUMENTS[name]  # copied from the document
        assert out["report"][name]["identical"] is True
        assert out["report"][name]["passes"] < out["report"][name]["tokens"]  # drafts were kept
    # the server's own answer to the request the SDK sends (a strict JSON schema), without the SDK
    from openai.lib._pydantic import to_strict_json_schema

    name, document = next(iter(demo.DOCUMENTS.items()))
    schema = {"name": "Invoice", "schema": to_strict_json_schema(demo.Invoice), "strict": True}
    body = post(
        server,
        {
            "model": MODEL,
            "messages": [{"role": "system", "content": demo.SYSTEM}, {"role": "user", "content": document}],
            "response_format": {"type": "json_schema", "json_schema": schema},
            "temperature": 0,
            "max_tokens": 200,
        },
    )
    assert json.loads(body["choices"][0]["message"]["content"]) == out["records"][name]
    text = run_demo("structured_extraction.py", name, "--url", server.url)  # the text report, of one document
    assert text.startswith(f"[{name}] {json.dumps(out['records'][name], ensure_ascii=False)}\n")
    assert text.rstrip().endswith("records: 1; all identical: True")


@pytest.mark.slow
def test_langchain_tool_agent_runs_the_tool_and_sends_its_result_back(server):
    """The loop's mechanics on the 0.5B model: the required first call is well formed (constrained to
    the tool's schema), the tool runs, and the model is asked again with the call and its
    ``ToolMessage`` in the history (the server accepts both). What the 0.5B model says then is not
    checked: it often writes another call as text instead of an answer (qwen2.5-coder-1.5b answers
    from the result; docs/structured-outputs.md)."""
    demo = load_demo("langchain_tool_agent.py")
    # the text report: the call and its result, the model's answer, and its turns
    text = run_demo("langchain_tool_agent.py", "Where is my order A-1042?", "--url", server.url)
    first = f'tool call: get_order_status({{"order_id": "A-1042"}}) -> {json.dumps(demo.ORDERS["A-1042"])}\n'
    assert text.startswith("question: Where is my order A-1042?\n" + first)
    assert "\nanswer: " in text
    assert int(re.search(r"\nmodel turns: (\d+)\n$", text).group(1)) >= 2  # asked again, with the result
    # the JSON report
    shipping = json.loads(
        run_demo("langchain_tool_agent.py", "How much is shipping 3 kg to France?", "--url", server.url, "--json")
    )
    assert shipping["calls"][0] == {
        "name": "shipping_cost",
        "args": {"country_code": "FR", "weight_kg": 3},
        "result": "8.70 EUR",
    }
    assert shipping["turns"] >= 2 and shipping["question"] == "How much is shipping 3 kg to France?"
