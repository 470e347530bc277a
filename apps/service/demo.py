"""Demo pages: ``GET /demo/grammar``, grammar correction in the browser.

The page (``templates/grammar.html``, ``static/grammar.js``, ``static/grammar.css``; no external
resources) posts the text to ``POST /v1/grammar/correct`` with ``compare: true`` and shows the
corrections (inserted and replaced words highlighted, deleted words struck through), which parts of
the answer the model accepted from the copy of the input, and the measured speedup over plain
decoding. Serving the page loads no model.
"""

from __future__ import annotations

from flask import Blueprint, render_template, url_for

from .state import current_state

bp = Blueprint("demo", __name__, url_prefix="/demo")

EXAMPLE_TEXT = (
    "Yesterday me and my sister goes to the new library in town. It were bigger then we expected, "
    "and there was so many books that we didn't knew where to start. The librarian, who were very "
    "friendly, show us the science section and explain how to borrow books. We stayed their for "
    "three hour and each of us borrowed two book."
)


@bp.get("/grammar")
def grammar() -> str:
    state = current_state()
    return render_template(
        "grammar.html",
        example=EXAMPLE_TEXT,
        model=state.config.model,
        max_chars=state.config.max_grammar_chars,
        api_url=url_for("grammar.correct"),
    )
