"""``demos/edge_laptop.py`` run as a user runs it (a subprocess): it starts its own verify server
(``specdraft serve --edge``, a process of its own), drafts in its own process, and prints the answer
with its stats and whether it equals the server's own greedy answer. On a tiny checkpoint (fast),
and on the default real pair (smollm2-135m float32 served, its GGUF drafting: slow)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from chat_checkpoint import save_chat_checkpoint

from specdraft import GenerationConfig, SpeculativeGenerator

DEMO = Path(__file__).resolve().parents[2] / "demos" / "edge_laptop.py"


def run_demo(*args, timeout=900):
    done = subprocess.run([sys.executable, str(DEMO), *args], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_demo_says_how_to_run_it():
    source = DEMO.read_text()
    assert source.startswith('"""') and "demos/edge_laptop.py" in source
    assert run_demo("--help").startswith("usage: ")


def test_the_demo_prints_the_servers_greedy_answer_and_its_stats(tmp_path, tokenizer):
    model = save_chat_checkpoint(tmp_path, tokenizer)
    prompt = "The quick brown fox"
    args = [
        "--model",
        str(tmp_path),
        "--device",
        "cpu",
        "--draft-model",
        str(tmp_path),
        "--draft-backend",
        "transformers",
        "--max-new-tokens",
        "12",
        prompt,
    ]
    out = json.loads(run_demo(*args, "--json"))
    want = SpeculativeGenerator(model).generate(
        model.encode_chat([{"role": "user", "content": prompt}]), None, GenerationConfig(max_new_tokens=12)
    )
    assert out["token_ids"] == want.token_ids and out["identical"] is True and all(out["verified"])
    assert out["stats"]["round_trips"] >= 1 and out["stats"]["unverified_tokens"] == 0
    text = run_demo(*args)
    assert text.startswith(want.text) and "identical to the server model's own greedy answer" in text
    assert "round trips" in text and "server forward passes" in text


@pytest.mark.slow
def test_the_demo_on_smollm2_with_its_gguf_drafting():
    out = json.loads(run_demo("--max-new-tokens", "32", "--json", "Write a haiku about the sea."))
    assert out["identical"] is True and out["stats"]["unverified_tokens"] == 0
    assert out["stats"]["verified_per_round_trip"] > 1  # the GGUF guesses its float32 model well
