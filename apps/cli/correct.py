"""`specdraft correct`: grammar correction of one text, printed as the corrected text or as JSON.

The text comes from the command line, a file (``--file``) or standard input (``-`` or nothing).
The JSON object is ``CorrectionResult.to_dict()``: ``{"corrected", "edits", "token_ids", "stats",
"quality"}``. When the check of the answer fails (``quality.ok`` false: it leaves out words or
sentences, loops, ...; see ``copydraft.answer_check``), the text output is still the model's answer,
and standard error says why it is not a correction.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from specdraft.apps.model_pool import ModelPool
from specdraft.copydraft import GrammarCorrector

from .text_files import read_utf8

STDIN = "-"


def read_text(text: str | None, path: str | None, stdin: TextIO) -> str:
    """The text to correct: ``text``, the file at ``path``, or ``stdin`` (``text`` absent or "-")."""
    if path is not None:
        text = read_utf8(path)
    elif text is None or text == STDIN:
        text = stdin.read()
    if not text.strip():
        raise ValueError("the text to correct is empty")
    return text


def run_correct(
    text: str,
    model_name: str,
    pool: ModelPool,
    speculate: bool,
    as_json: bool,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> dict:
    """Correct ``text`` with ``model_name`` and print it to ``out`` (standard output by default);
    a failed quality check is also told on ``err`` (standard error by default). Returns the JSON object."""
    out, err = out or sys.stdout, err or sys.stderr
    result = GrammarCorrector(pool.get(model_name)).correct(text, speculate=speculate)
    payload = result.to_dict()
    if as_json:
        out.write(json.dumps(payload, ensure_ascii=False) + "\n")
    else:
        out.write(result.corrected if result.corrected.endswith("\n") else result.corrected + "\n")
    if not result.quality.ok:
        err.write(
            f"specdraft: warning: {model_name}'s answer is not a reliable correction: "
            + "; ".join(result.quality.warnings)
            + "\n"
        )
    return payload
