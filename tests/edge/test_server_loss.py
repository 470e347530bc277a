"""Losing the server: a real verify server process killed mid-generation and restarted. The client
keeps writing on its local model (those tokens flagged unverified), reconnects with a new session
from the whole context, and verifies again; nothing shown is lost or rewritten."""

import os
import signal
import socket
import subprocess

import pytest
from edge_support import KEY
from server_process import start_server_process
from tiny_service import make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.edge import EdgeConnection, TransportConfig
from specdraft.edge.client import EdgeClient, EdgeClientConfig

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, keys: str) -> subprocess.Popen:
    return start_server_process("edge_server_main.py", port, keys)


@pytest.fixture
def server(tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(KEY + "\n")
    port = free_port()
    processes = [start_server(port, str(keys))]
    yield port, str(keys), processes
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()


def test_the_client_finishes_through_a_killed_and_restarted_server(tokenizer, server):
    port, keys, processes = server
    model = make_chat_model(tokenizer)  # the local model: the server's weights, so its tokens are the server's too
    prompt = model.encode("The quick brown fox")
    n_new = 300  # room to verify again after the restart before the answer ends (160 was racy under CI load)
    want = (
        SpeculativeGenerator(model)
        .generate(prompt, None, GenerationConfig(max_new_tokens=n_new, ignore_eos=True))
        .token_ids
    )
    connection = EdgeConnection(f"http://127.0.0.1:{port}", KEY, TransportConfig(timeout_s=5))
    client = EdgeClient(
        connection, model, EdgeClientConfig(max_draft_nodes=4, adaptive=False, retry_initial_s=0.05, retry_max_s=0.2)
    )
    run = client.stream(prompt, GenerationConfig(max_new_tokens=n_new, ignore_eos=True))
    shown = []
    phase = "before"
    for piece in run.steps():
        shown.append(piece)
        if phase == "before" and len(run.out) >= 12:
            processes[0].send_signal(signal.SIGKILL)  # the server dies between two verifications
            processes[0].wait()
            phase = "down"
        elif phase == "down" and run.stats["unverified_tokens"] >= 6:
            processes.append(start_server(port, keys))  # back (generation paused while it starts)
            phase = "restarted"
    result = run.result()
    connection.close()
    assert phase == "restarted"
    assert result.token_ids == want  # nothing lost or rewritten (the local model is the server's)
    assert "".join(p.text for p in shown) == result.text
    flags = result.verified
    first_unverified = flags.index(False)
    last_unverified = len(flags) - 1 - flags[::-1].index(False)
    assert first_unverified >= 12 and all(flags[:first_unverified])
    assert all(flags[last_unverified + 1 :]) and len(flags) - last_unverified > 20  # verified again after the restart
    assert result.stats["unverified_tokens"] == flags.count(False) >= 6
    assert result.stats["reconnects"] >= 1 and result.stats["server_losses"] == 1
    unverified_text = "".join(p.text for p in result.pieces if p.source == "unverified")
    assert unverified_text and unverified_text in result.text
