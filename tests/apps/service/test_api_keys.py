"""The API key file: parsing, scopes, and checking keys (``specdraft.apps.service.api_keys``)."""

import pytest

from specdraft.apps.service.api_keys import KeyFileError, KeyRing

READER, WRITER = "reader-key-0123456789abcdef", "writer-key-0123456789abcdef"


def write(tmp_path, text):
    path = tmp_path / "keys"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_key_file_lists_keys_with_scopes_read_by_default(tmp_path):
    ring = KeyRing.load(write(tmp_path, f"# comment\n\n{READER}\n  {WRITER}   write  \n"))
    assert len(ring) == 2
    reader, writer = ring.check(READER), ring.check(WRITER)
    assert reader.scope == "read" and writer.scope == "write"
    assert reader.may("read") and not reader.may("write")
    assert writer.may("read") and writer.may("write")
    assert ring.check("reader-key-0123456789abcdeX") is None
    assert ring.check("") is None
    assert ring.check(READER + " ") is None


def test_the_key_id_names_a_key_without_revealing_it(tmp_path):
    principal = KeyRing.load(write(tmp_path, READER)).check(READER)
    assert len(principal.key_id) == 12 and principal.key_id not in READER


@pytest.mark.parametrize(
    "text, problem",
    [
        ("", "lists no keys"),
        ("# only a comment\n", "lists no keys"),
        ("short\n", ":1: a key must be at least 16 characters"),
        (f"{READER} admin\n", ":1: scope must be one of read, write"),
        (f"{READER} read extra\n", ":1: expected 'KEY [read|write]'"),
        (f"{READER}\n{READER} write\n", ":2: this key is listed twice"),
    ],
)
def test_a_bad_key_file_is_refused_with_the_line_at_fault(tmp_path, text, problem):
    with pytest.raises(KeyFileError, match=problem.replace("[", r"\[").replace("|", r"\|").replace("]", r"\]")):
        KeyRing.load(write(tmp_path, text))


def test_a_missing_key_file_is_refused(tmp_path):
    with pytest.raises(KeyFileError, match="cannot read the API key file"):
        KeyRing.load(tmp_path / "nope")


def test_a_refused_key_is_never_echoed(tmp_path):
    with pytest.raises(KeyFileError) as error:
        KeyRing.load(write(tmp_path, "s3cret-but-short\tadmin\n"))
    assert "s3cret" not in str(error.value)
