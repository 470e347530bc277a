"""``specdraft edge serve`` run as a user runs it (a subprocess), answering the real ``openai`` SDK:
against a live verify server on loopback serving the same tiny checkpoint (fast), and against a
``specdraft serve --edge`` process serving smollm2-135m in float32 with the model's own GGUF drafting
on llama.cpp (slow). Answers equal the served model's own greedy answers."""

import signal
import socket
import subprocess
import sys
import time
import urllib.request

import openai
import pytest
from chat_checkpoint import save_chat_checkpoint
from edge_support import KEY, edge_server

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.cli.entry_point import main

QUESTION = [{"role": "user", "content": "The quick brown fox"}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(command, port, wait_s=600):
    """Run ``command`` (a specdraft CLI call); return once ``/healthz`` on ``port`` answers."""
    process = subprocess.Popen(
        [sys.executable, "-m", "specdraft.apps.cli", *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + wait_s
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).close()
            return process
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"{command[0]} did not start: {process.communicate()[1][-2000:]}")
            time.sleep(0.3)


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


@pytest.fixture(scope="module")
def chat_checkpoint(tmp_path_factory, tokenizer):
    """(folder, model): a tiny float32 chat model saved as a checkpoint (the command line loads it)."""
    path = tmp_path_factory.mktemp("tiny-chat-checkpoint")
    return path, save_chat_checkpoint(path, tokenizer)


def test_edge_serve_answers_the_openai_sdk_with_the_servers_greedy_output(chat_checkpoint, tmp_path):
    path, model = chat_checkpoint
    want = (
        SpeculativeGenerator(model)
        .generate(model.encode_chat(QUESTION), None, GenerationConfig(max_new_tokens=12))
        .text
    )
    port = free_port()
    with edge_server(model, tmp_path) as url:
        laptop = start(
            [
                "edge",
                "serve",
                "--server",
                url,
                "--key",
                KEY,
                "--draft-model",
                str(path),
                "--backend",
                "transformers",
                "--timeout",
                "60",
                "--port",
                str(port),
            ],
            port,
        )
        try:
            with openai.OpenAI(
                base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120
            ) as client:
                answer = client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, max_tokens=12)
                streamed = list(
                    client.chat.completions.create(model="x", messages=QUESTION, max_tokens=12, stream=True)
                )
        finally:
            stop(laptop)
    assert answer.choices[0].message.content == want
    assert answer.model_extra["speculation"]["unverified_tokens"] == 0
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == want
    assert all(c.model_extra["unverified"] is False for c in streamed if c.choices and c.choices[0].delta.content)


def test_edge_serve_stops_at_start_on_a_refused_key(chat_checkpoint, tmp_path):
    path, model = chat_checkpoint
    with edge_server(model, tmp_path) as url:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "specdraft.apps.cli",
                "edge",
                "serve",
                "--server",
                url,
                "--key",
                "wrong-key-0123456789abcdef",
                "--draft-model",
                str(path),
                "--backend",
                "transformers",
                "--port",
                str(free_port()),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 2 and "refused" in done.stderr


def test_edge_serve_listens_on_loopback_only_without_keys(capsys):
    assert main(["edge", "serve", "--server", "http://127.0.0.1:1", "--key", "k", "--host", "0.0.0.0"]) == 2
    assert "--api-key-file" in capsys.readouterr().err


@pytest.mark.slow
def test_edge_serve_with_smollm2_served_and_its_gguf_drafting(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(KEY + "\n")
    server_port, laptop_port = free_port(), free_port()
    server = start(
        [
            "serve",
            "--model",
            "smollm2-135m",
            "--backend",
            "transformers",
            "--dtype",
            "float32",
            "--device",
            "cpu",
            "--drafter",
            "none",
            "--edge",
            "--api-key-file",
            str(keys),
            "--port",
            str(server_port),
        ],
        server_port,
        wait_s=900,
    )
    try:
        laptop = start(
            [
                "edge",
                "serve",
                "--server",
                f"http://127.0.0.1:{server_port}",
                "--key",
                KEY,
                "--timeout",
                "300",
                "--port",
                str(laptop_port),
            ],
            laptop_port,
            wait_s=900,
        )
        try:
            messages = [{"role": "user", "content": "Write a haiku about the sea."}]
            with openai.OpenAI(
                base_url=f"http://127.0.0.1:{laptop_port}/v1", api_key="unused", max_retries=0, timeout=900
            ) as client:
                answer = client.chat.completions.create(model="smollm2-135m", messages=messages, max_tokens=24)
            with openai.OpenAI(
                base_url=f"http://127.0.0.1:{server_port}/v1", api_key=KEY, max_retries=0, timeout=900
            ) as client:
                own = client.chat.completions.create(
                    model="smollm2-135m", messages=messages, max_tokens=24, extra_body={"drafter": "none"}
                )
        finally:
            stop(laptop)
    finally:
        stop(server)
    assert answer.choices[0].message.content == own.choices[0].message.content
    speculation = answer.model_extra["speculation"]
    assert speculation["unverified_tokens"] == 0 and speculation["verified_per_round_trip"] > 1
    print(
        "edge serve, smollm2-135m float32 served, its GGUF drafting:",
        {
            k: speculation[k]
            for k in (
                "generated_tokens",
                "round_trips",
                "server_forward_passes",
                "server_passes_per_token",
                "verified_per_round_trip",
                "tokens_per_s",
            )
        },
    )
