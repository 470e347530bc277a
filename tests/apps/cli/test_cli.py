"""The command line's JSON contract, on a tiny checkpoint saved to disk (the real loading path)."""

import json
import subprocess
import sys

import pytest

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.apps.cli import main
from specdraft.constrained import Constraint


@pytest.fixture(scope="module")
def checkpoint(tiny_checkpoint):
    return tiny_checkpoint


def run_json(capsys, *args):
    assert main(["generate", "--json", "--device", "cpu", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_generate_json_contract(capsys, checkpoint):
    path, model = checkpoint
    out = run_json(capsys, "--model", str(path), "--max-new-tokens", "12", "--drafter", "none", "The quick brown fox")
    assert set(out) >= {"text", "token_ids", "prompt_token_ids", "stats"}
    assert out["prompt_token_ids"] == model.encode("The quick brown fox")
    assert len(out["token_ids"]) == 12
    for key in (
        "verify_steps",
        "drafted_tokens",
        "accepted_tokens",
        "mean_accepted_tokens",
        "target_forward_passes",
        "wall_s",
    ):
        assert key in out["stats"]
    assert out["stats"]["drafted_tokens"] == 0 and out["stats"]["target_forward_passes"] == 12
    expected = SpeculativeGenerator(model).generate(out["prompt_token_ids"], None, GenerationConfig(max_new_tokens=12))
    assert out["token_ids"] == expected.token_ids and out["text"] == expected.text


def test_drafters_give_identical_output(capsys, checkpoint):
    path, _ = checkpoint
    prompt = "The dog sleeps. The dog sleeps. The dog"
    outs = [
        run_json(capsys, "--model", str(path), "--max-new-tokens", "16", "--drafter", d, prompt)
        for d in ("none", "prompt-lookup", f"model:{path}")
    ]
    assert outs[0]["token_ids"] == outs[1]["token_ids"] == outs[2]["token_ids"]
    assert outs[2]["stats"]["accepted_tokens"] == outs[2]["stats"]["drafted_tokens"]  # the same model drafting


def test_the_passage_drafter_answers_to_both_names(capsys, checkpoint):
    path, _ = checkpoint
    prompt = "Context:\n\nThe dog sleeps in the sun.\n\nQuestion: where does the dog sleep?"
    plain = run_json(capsys, "--model", str(path), "--max-new-tokens", "12", "--drafter", "none", prompt)
    for name in ("reference", "documents"):
        out = run_json(capsys, "--model", str(path), "--max-new-tokens", "12", "--drafter", name, prompt)
        assert out["token_ids"] == plain["token_ids"] and out["drafter"] == name


def test_sampling_is_reproducible_with_a_seed(capsys, checkpoint):
    path, _ = checkpoint
    args = [
        "--model",
        str(path),
        "--max-new-tokens",
        "10",
        "--temperature",
        "1.0",
        "--top-p",
        "0.9",
        "--seed",
        "7",
        "hello",
    ]
    assert run_json(capsys, *args)["token_ids"] == run_json(capsys, *args)["token_ids"]


def test_plain_text_output_and_stdin(capsys, checkpoint, monkeypatch):
    path, model = checkpoint
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO("The quick brown fox"))
    assert main(["generate", "--device", "cpu", "--model", str(path), "--max-new-tokens", "5", "-"]) == 0
    text = capsys.readouterr().out
    expected = SpeculativeGenerator(model).generate(
        model.encode("The quick brown fox"), None, GenerationConfig(max_new_tokens=5)
    )
    assert text == expected.text + "\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--drafter", "magic"], "unknown drafter"),
        (["--drafter", "datastore"], "needs a datastore"),
        (["--max-new-tokens", "0"], "max_new_tokens"),
        (["--temperature", "-1"], "temperature"),
        (["--chat"], "no chat template"),
    ],
)
def test_bad_arguments_get_a_clear_error(capsys, checkpoint, args, message):
    path, _ = checkpoint
    assert main(["generate", "--device", "cpu", "--model", str(path), *args, "hi"]) == 2
    assert message in capsys.readouterr().err


SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "size": {"enum": ["small", "large"]}},
    "required": ["ok", "size"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("drafter", ["none", "prompt-lookup"])
def test_json_schema_constrains_the_answer(capsys, checkpoint, tmp_path, drafter):
    """--json-schema FILE: the answer is plain constrained decoding's (GenerationConfig.constraint), JSON
    in the fixed style that follows the schema, whatever the drafter."""
    path, model = checkpoint
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    out = run_json(
        capsys,
        "--model",
        str(path),
        "--max-new-tokens",
        "40",
        "--drafter",
        drafter,
        "--json-schema",
        str(schema_file),
        "The dog is",
    )
    config = GenerationConfig(max_new_tokens=40, constraint=Constraint.json_schema(SCHEMA))
    expected = SpeculativeGenerator(model).generate(out["prompt_token_ids"], None, config)
    assert out["token_ids"] == expected.token_ids and out["text"] == expected.text
    answer = json.loads(out["text"])
    assert list(answer) == ["ok", "size"] and isinstance(answer["ok"], bool) and answer["size"] in ("small", "large")
    assert out["text"] == json.dumps(answer) and out["finish_reason"] == "stop"


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read the JSON schema file {file}: No such file or directory"),
        ('{"type": "object",', "the JSON schema file {file} is not valid JSON: "),
        (
            '{"type": "object", "properties": {"age": {"type": "integr"}}}',
            "the JSON schema file {file}: invalid schema at /properties/age/type",
        ),
    ],
)
def test_a_bad_json_schema_file_is_named_in_the_error(capsys, checkpoint, tmp_path, content, message):
    path, _ = checkpoint
    schema_file = tmp_path / "schema.json"
    if content is not None:
        schema_file.write_text(content)
    assert main(["generate", "--device", "cpu", "--model", str(path), "--json-schema", str(schema_file), "hi"]) == 2
    assert message.format(file=schema_file) in capsys.readouterr().err


def test_help_explains_the_commands():
    out = subprocess.run(
        [sys.executable, "-m", "specdraft.apps.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for word in ("generate", "serve", "bench", "models"):
        assert word in out


@pytest.mark.slow
def test_console_script_on_the_embedded_default_model():
    exe = __import__("shutil").which("specdraft") or str(
        __import__("pathlib").Path(sys.executable).parent / "specdraft"
    )
    proc = subprocess.run(
        [exe, "generate", "--json", "--chat", "--max-new-tokens", "16", "Say hello."],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["model"] == "smollm2-135m" and out["text"] and out["stats"]["target_forward_passes"] >= 2
