"""`specdraft correct`: its JSON contract and text output, on a tiny checkpoint saved to disk."""

import io
import json
import sys

import pytest

from specdraft.apps.cli import main
from specdraft.apps.cli.entry_point import build_parser
from specdraft.copydraft import GrammarCorrector
from specdraft.copydraft.corrector import DEFAULT_GRAMMAR_MODEL
from specdraft.copydraft.edits import Edit, apply

TEXT = "The dog sleep. the quick brown fox jump over the lazy dog."


@pytest.fixture(scope="module")
def checkpoint(tiny_checkpoint):
    return tiny_checkpoint


@pytest.fixture(scope="module")
def reference(checkpoint):
    """The corrector's own answer, decoded plainly."""
    return GrammarCorrector(checkpoint[1]).correct(TEXT, speculate=False)


def correct(capsys, checkpoint, *args):
    """Run `specdraft correct` on the checkpoint; (exit code, stdout, stderr)."""
    code = main(["correct", "--device", "cpu", "--model", str(checkpoint[0]), *args])
    out, err = capsys.readouterr()
    return code, out, err


def correct_json(capsys, checkpoint, *args):
    code, out, err = correct(capsys, checkpoint, "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_json_contract(capsys, checkpoint, reference):
    out = correct_json(capsys, checkpoint, TEXT)
    assert list(out) == ["corrected", "edits", "token_ids", "stats", "quality"]
    assert out["quality"] == reference.quality.to_dict()
    assert out["corrected"] == reference.corrected
    assert out["token_ids"] == reference.token_ids
    assert apply(TEXT, [Edit(**edit) for edit in out["edits"]]) == out["corrected"]
    assert out["stats"]["generated_tokens"] == len(reference.token_ids)
    assert out["stats"]["drafted_tokens"] > 0


def test_no_speculation_gives_identical_output(capsys, checkpoint):
    fast = correct_json(capsys, checkpoint, TEXT)
    plain = correct_json(capsys, checkpoint, "--no-speculation", TEXT)
    assert plain["token_ids"] == fast["token_ids"]
    assert plain["corrected"] == fast["corrected"]
    assert plain["edits"] == fast["edits"]
    assert plain["stats"]["drafted_tokens"] == 0
    assert plain["stats"]["target_forward_passes"] == plain["stats"]["generated_tokens"]  # one pass per token


@pytest.mark.parametrize("source", ["argument", "stdin", "stdin-dash", "file"])
def test_text_output_from_every_source(capsys, checkpoint, reference, monkeypatch, tmp_path, source):
    monkeypatch.setattr(sys, "stdin", io.StringIO(TEXT))
    path = tmp_path / "text.txt"
    path.write_text(TEXT, encoding="utf-8")
    args = {"argument": [TEXT], "stdin": [], "stdin-dash": ["-"], "file": ["--file", str(path)]}[source]
    code, out, err = correct(capsys, checkpoint, *args)
    assert code == 0, err
    assert out == reference.corrected + "\n"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["   "], "", "the text to correct is empty"),
        ([], "\n\n", "the text to correct is empty"),
        (["--file", "/no/such/file.txt"], "", "cannot read /no/such/file.txt: No such file or directory"),
        (["--file", "{binary}"], "", "not UTF-8 text"),
    ],
)
def test_bad_input_gets_exit_code_2_and_a_clear_message(
    capsys, checkpoint, monkeypatch, tmp_path, args, stdin, message
):
    binary = tmp_path / "binary.bin"
    binary.write_bytes(b"\xff\xfe\x00abc")
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code, out, err = correct(capsys, checkpoint, *[a.format(binary=binary) for a in args])
    assert code == 2
    assert out == ""
    assert err.startswith("specdraft: error: ") and message in err


def test_text_and_file_together_are_a_usage_error(capsys, checkpoint, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        correct(capsys, checkpoint, "--file", str(tmp_path / "x.txt"), "some text")
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_an_answer_that_fails_the_check_is_printed_and_the_reasons_told_on_stderr(capsys, checkpoint, reference):
    assert not reference.quality.ok, "the tiny model runs to its token limit on TEXT"
    code, out, err = correct(capsys, checkpoint, TEXT)
    assert code == 0
    assert out == reference.corrected + "\n"  # the model's answer, as it wrote it
    assert (
        f"specdraft: warning: {checkpoint[0]}'s answer is not a reliable correction: " in err
    )  # after the loading bar
    assert all(warning in err for warning in reference.quality.warnings)
    out = correct_json(capsys, checkpoint, TEXT)
    assert out["quality"]["ok"] is False and out["quality"]["warnings"] == list(reference.quality.warnings)


def test_correct_and_serve_default_to_the_grammar_model(monkeypatch):
    parser = build_parser()
    assert parser.parse_args(["correct", "x"]).model == DEFAULT_GRAMMAR_MODEL
    assert parser.parse_args(["serve"]).grammar_model == DEFAULT_GRAMMAR_MODEL
    assert parser.parse_args(["serve", "--grammar-model", "smollm2-135m"]).grammar_model == "smollm2-135m"

    import specdraft.apps.service as service

    configs = []

    class Stop(Exception):
        pass

    def fake_create_app(config, *args, **kwargs):
        configs.append(config)
        raise Stop

    monkeypatch.setattr(service, "create_app", fake_create_app)
    with pytest.raises(Stop):
        main(["serve", "--lazy", "--grammar-model", "smollm2-135m"])
    assert configs[0].grammar_model == "smollm2-135m" and configs[0].model != "qwen2.5-coder-0.5b"
