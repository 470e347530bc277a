"""Demo pages over the API, with no external resources; serving a page loads no model:
``GET /demo/grammar``, ``GET /demo/rag`` and, serving an edge model, ``GET /demo/`` (``edge_bp``).
Each is ``templates/NAME.html`` with ``static/NAME.js`` (``static/demo.js`` and ``demo.css`` shared).
"""

from __future__ import annotations

from flask import Blueprint, render_template, url_for

from specdraft.retrieval.drafter_registry import drafter_names

from .protocol.rag import DEFAULT_INDEX, MAX_QUESTION_CHARS
from .state import current_state

bp = Blueprint("demo", __name__, url_prefix="/demo")
edge_bp = Blueprint("edge_demo", __name__, url_prefix="/demo")

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
        model=state.config.grammar_model,
        max_chars=state.config.max_grammar_chars,
        api_url=url_for("grammar.correct"),
    )


EDGE_QUESTION = "Explain in two sentences why the sky is blue."


@edge_bp.get("/")
def edge() -> str:
    state = current_state()
    edge = state.config.model.edge
    assert edge is not None, "registered only when an edge model is served"
    return render_template(
        "edge.html",
        example=EDGE_QUESTION,
        server=edge.server,
        draft_model=state.config.model_name,
        max_tokens=min(128, state.config.max_tokens_limit),
        api_url=url_for("completions.chat_completions"),
    )


EXAMPLE_QUESTION = "How tall is the Eiffel Tower, and who built it?"
EXAMPLE_DOCUMENTS = [
    {
        "id": "eiffel-tower",
        "text": "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. It is named "
        "after the engineer Gustave Eiffel, whose company designed and built the tower from 1887 to 1889 as the "
        "centrepiece of the 1889 World's Fair. The tower is 330 metres tall, about the same height as an 81-storey "
        "building, and was the tallest man-made structure in the world until 1930.",
    },
    {
        "id": "statue-of-liberty",
        "text": "The Statue of Liberty is a colossal neoclassical sculpture on Liberty Island in New York Harbor. The "
        "copper statue, a gift from the people of France, was designed by the sculptor Frederic Auguste Bartholdi, "
        "and its metal framework was built by Gustave Eiffel. It was dedicated on October 28, 1886.",
    },
    {
        "id": "colosseum",
        "text": "The Colosseum is an elliptical amphitheatre in the centre of the city of Rome, Italy. Construction "
        "began under the emperor Vespasian in 72 AD and was completed in 80 AD under his successor Titus. It could "
        "hold an estimated 50,000 to 80,000 spectators.",
    },
]


@bp.get("/rag")
def rag() -> str:
    config = current_state().config
    drafters = drafter_names(config.rag_offers)
    return render_template(
        "rag.html",
        model=config.model_name,
        drafters=drafters,
        default_drafter=config.rag_drafter,
        default_index=DEFAULT_INDEX,
        top_k=config.rag_top_k,
        max_top_k=config.max_rag_top_k,
        max_question_chars=MAX_QUESTION_CHARS,
        example_question=EXAMPLE_QUESTION,
        examples=EXAMPLE_DOCUMENTS,
        query_url=url_for("rag.query"),
        documents_url=url_for("rag.add_documents"),
    )
