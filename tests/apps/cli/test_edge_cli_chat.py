"""``specdraft edge --chat`` without a prompt, run as a user runs it (a subprocess fed on standard input),
against a live verify server on loopback serving the same tiny checkpoint: each turn's answer is the
server model's greedy answer to the whole conversation so far; unverified text (the server gone) is
set between the plain markers ``[?`` and ``?]`` when standard output is not a terminal."""

import socket
import subprocess
import sys

import pytest
from chat_checkpoint import save_chat_checkpoint
from edge_support import KEY, edge_server

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.cli.edge_chat import UNVERIFIED_CLOSE, UNVERIFIED_OPEN, StyledWriter


@pytest.fixture(scope="module")
def chat_checkpoint(tmp_path_factory, tokenizer):
    """(folder, model): a tiny float32 chat model saved as a checkpoint (the command line loads it)."""
    path = tmp_path_factory.mktemp("tiny-chat-checkpoint")
    return path, save_chat_checkpoint(path, tokenizer)


def chat(url, path, turns, *extra, timeout=60.0):
    command = [
        sys.executable,
        "-m",
        "specdraft.apps.cli",
        "edge",
        "--server",
        url,
        "--key",
        KEY,
        "--draft-model",
        str(path),
        "--backend",
        "transformers",
        "--max-new-tokens",
        "10",
        "--timeout",
        str(timeout),
        "--chat",
        *extra,
    ]
    return subprocess.run(command, input=turns, capture_output=True, text=True, timeout=300)


def greedy_answers(model, turns, max_new_tokens=10):
    messages, answers = [], []
    for turn in turns:
        messages.append({"role": "user", "content": turn})
        answer = (
            SpeculativeGenerator(model)
            .generate(model.encode_chat(messages), None, GenerationConfig(max_new_tokens=max_new_tokens))
            .text
        )
        messages.append({"role": "assistant", "content": answer})
        answers.append(answer)
    return answers


def test_a_chat_on_standard_input_keeps_the_conversation(chat_checkpoint, tmp_path):
    path, model = chat_checkpoint
    turns = ["The quick brown fox", "and the lazy dog?", "def add(a, b):"]
    with edge_server(model, tmp_path) as url:
        done = chat(url, path, "\n".join(turns[:2]) + "\n\n" + turns[2] + "\n/exit\nnot read\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(answer + "\n" for answer in greedy_answers(model, turns))
    assert done.stderr.count("round trips") == 3 and "0 unverified" in done.stderr


def test_json_gives_one_object_per_turn_and_end_of_input_ends_the_chat(chat_checkpoint, tmp_path):
    import json

    path, model = chat_checkpoint
    turns = ["Speculative decoding", "Grammar correction"]
    with edge_server(model, tmp_path) as url:
        done = chat(url, path, "\n".join(turns), "--json", "--system", "Be brief.")
    assert done.returncode == 0, done.stderr
    objects = [json.loads(line) for line in done.stdout.splitlines()]
    messages, want = [{"role": "system", "content": "Be brief."}], []
    for turn in turns:
        messages.append({"role": "user", "content": turn})
        ids = model.encode_chat(messages)
        want.append(ids)
        answer = SpeculativeGenerator(model).generate(ids, None, GenerationConfig(max_new_tokens=10))
        messages.append({"role": "assistant", "content": answer.text})
        assert objects[len(want) - 1]["token_ids"] == answer.token_ids
    assert [o["prompt_token_ids"] for o in objects] == want
    assert all(all(o["verified"]) and o["stats"]["unverified_tokens"] == 0 for o in objects)


def test_without_the_server_the_answers_go_on_marked_unverified(chat_checkpoint):
    path, model = chat_checkpoint
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens there
    done = chat(dead, path, "The quick brown fox\n", timeout=2.0)
    assert done.returncode == 0, done.stderr
    [answer] = greedy_answers(model, ["The quick brown fox"])  # the local model has the same weights
    assert done.stdout == f"{UNVERIFIED_OPEN}{answer}{UNVERIFIED_CLOSE}\n"
    assert "10 unverified" in done.stderr or "unverified]" in done.stderr


def test_the_styled_writer_marks_runs_plainly_or_dims_them_on_a_terminal():
    import io

    plain = io.StringIO()
    writer = StyledWriter(plain, tty=False)
    for text, verified in [("a", True), ("b", False), ("c", False), ("d", True), ("e", False)]:
        writer.write(text, verified)
    writer.end()
    assert plain.getvalue() == "a[?bc?]d[?e?]\n"
    dim = io.StringIO()
    writer = StyledWriter(dim, tty=True)
    writer.write("a", True)
    writer.write("b", False)
    writer.end()
    assert dim.getvalue() == "a\x1b[2mb\x1b[0m\n"


def test_a_prompt_or_chat_is_needed(capsys):
    from specdraft.apps.cli.entry_point import main

    assert main(["edge", "--server", "http://127.0.0.1:1", "--key", "k"]) == 2
    assert "--chat" in capsys.readouterr().err
