"""``specdraft serve``'s start-up banner names the backend that verifies: with ``--backend engine`` the
engine, not the backend of the model loaded here for its tokenizer (it said "transformers")."""

from __future__ import annotations

import contextlib
import io

import pytest


@pytest.mark.parametrize(
    "argv,backend",
    [
        (["--backend", "engine", "--engine-url", "http://127.0.0.1:9"], "engine"),
        (["--backend", "engine", "--engine-url", "http://127.0.0.1:9", "--engine-api", "llama-cpp-server"], "engine"),
        ([], "transformers"),
        (["--model", "model.gguf"], "llama-cpp"),
    ],
)
def test_the_banner_names_the_backend_that_verifies(monkeypatch, tmp_path, argv, backend):
    from specdraft.apps.cli import entry_point
    from specdraft.apps.service import server

    monkeypatch.setattr(server, "serve", lambda app, config, host, port: None)  # print the banner, serve nothing
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = entry_point.main(
            ["serve", "--lazy", "--index-root", str(tmp_path / "idx"), *argv]
        )  # lazy: nothing is loaded
    assert code == 0, err.getvalue()
    assert f"(backend {backend})" in err.getvalue()
