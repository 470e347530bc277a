"""``specdraft edge`` against a live verify server (the tiny checkpoint, drafting for itself through
the command line's real loading path); ``serve --edge`` refuses to start without keys."""

import json

from edge_support import KEY, edge_server

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.cli.entry_point import main


def test_edge_prints_the_servers_greedy_output_as_json(tiny_checkpoint, tmp_path, capsys):
    path, model = tiny_checkpoint
    prompt = "The quick brown fox"
    want = SpeculativeGenerator(model).generate(
        model.encode(prompt), None, GenerationConfig(max_new_tokens=12, ignore_eos=True)
    )
    with edge_server(model, tmp_path) as url:
        code = main(
            [
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
                "12",
                "--json",
                prompt,
            ]
        )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    n = len(out["token_ids"])
    assert out["token_ids"] == want.token_ids[:n] and (n == 12 or out["finish_reason"] == "stop")
    assert out["prompt_token_ids"] == model.encode(prompt)
    assert all(out["verified"]) and out["stats"]["unverified_tokens"] == 0
    assert {"round_trips", "server_forward_passes", "unverified_tokens"} <= set(out["stats"])


def test_a_wrong_key_is_a_clear_error(tiny_checkpoint, tmp_path, capsys):
    path, model = tiny_checkpoint
    with edge_server(model, tmp_path) as url:
        code = main(
            [
                "edge",
                "--server",
                url,
                "--key",
                "wrong-key-0123456789abcdef",
                "--draft-model",
                str(path),
                "--backend",
                "transformers",
                "hi",
            ]
        )
    assert code == 2 and "refused" in capsys.readouterr().err


def test_serve_edge_needs_keys(capsys):
    assert main(["serve", "--edge", "--lazy", "--model", "smollm2-135m"]) == 2
    assert "API keys" in capsys.readouterr().err
