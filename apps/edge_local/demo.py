"""The edge demo page, ``GET /demo/`` (``templates/edge.html``, ``static/edge.js``, ``static/edge.css``).

The page streams ``POST /v1/chat/completions`` from this endpoint and shows the answer as it grows:
verified text (the server's own tokens) plain, unverified text (the local model's while the server was
unreachable) struck and tinted, and the local model's draft in flight in grey after it; beside it the
live round-trip time to the verify server and the counts of the answer's ``speculation``. No external
resources; serving the page loads nothing.
"""

from __future__ import annotations

from flask import Blueprint, render_template, url_for

from .completions import current_runner

bp = Blueprint("edge_demo", __name__, url_prefix="/demo")

EXAMPLE_QUESTION = "Explain in two sentences why the sky is blue."


@bp.get("/")
def page() -> str:
    runner = current_runner()
    return render_template(
        "edge.html",
        example=EXAMPLE_QUESTION,
        server=runner.config.server,
        draft_model=runner.config.draft_model,
        max_tokens=min(128, runner.config.max_tokens_limit),
        api_url=url_for("edge_completions.chat_completions"),
    )
