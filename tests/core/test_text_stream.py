import pytest

from specdraft.backends.transformers.tokenizer import HFTokenizer
from specdraft.text_stream import TextAssembler


def run(tokenizer, text, stop=(), sources=None):
    ids = tokenizer(text).input_ids
    assembler = TextAssembler(HFTokenizer(tokenizer), stop)
    pieces = []
    for i, token in enumerate(ids):
        pieces += assembler.push(token, sources[i % len(sources)] if sources else "target")
        if assembler.stopped:
            break
    pieces += assembler.finish()
    return assembler, pieces


@pytest.mark.parametrize("text", ["plain words here", "ünïcödé 日本語 🙂 mixed", "def f(x):\n    return x\n"])
def test_pieces_concatenate_to_the_decoded_text(tokenizer, text):
    assembler, pieces = run(tokenizer, text)
    assert "".join(p.text for p in pieces) == assembler.text == tokenizer.decode(tokenizer(text).input_ids)


def test_multibyte_characters_are_never_split(tokenizer):
    _, pieces = run(tokenizer, "🙂🙂 日本語")
    assert all("\ufffd" not in p.text for p in pieces)


def test_stop_string_cuts_the_text_and_is_not_emitted(tokenizer):
    assembler, pieces = run(tokenizer, "The dog sleeps. The fox jumps.", stop=("fox",))
    assert assembler.stopped
    assert assembler.text == "The dog sleeps. The "
    assert "".join(p.text for p in pieces) == assembler.text


def test_text_that_only_starts_like_a_stop_string_is_released_at_the_end(tokenizer):
    assembler, pieces = run(tokenizer, "The dog sleeps. The fo", stop=("fox",))
    assert not assembler.stopped and assembler.text == "The dog sleeps. The fo"
    assert "".join(p.text for p in pieces) == assembler.text


def test_pieces_keep_their_source(tokenizer):
    _, pieces = run(tokenizer, "a b c d e f", sources=["draft", "target"])
    assert {p.source for p in pieces} == {"draft", "target"}


def test_each_piece_names_the_token_it_is_cut_from(tokenizer):
    sources = ["draft", "target"]
    _, pieces = run(tokenizer, "a b 🙂 c d", sources=sources)
    tokens = [p.token for p in pieces]
    assert tokens == sorted(tokens) and 0 <= tokens[0] and tokens[-1] < len(tokenizer("a b 🙂 c d").input_ids)
    assert all(p.source == sources[p.token % len(sources)] for p in pieces)
