"""Grammar correction: ``POST /v1/grammar/correct`` (docs/grammar.md), by ``GrammarCorrector``, which
drafts the answer from the text itself; ``compare: true`` also corrects the other way and reports
``comparison``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request

from specdraft.copydraft import CorrectionResult, GrammarCorrector
from specdraft.text_stream import merge_pieces

from . import metrics
from .limits import generating
from .protocol import responses
from .protocol.errors import as_request_error, parse_json_body
from .protocol.grammar import parse_grammar_request
from .protocol.responses import answer
from .state import current_state

bp = Blueprint("grammar", __name__, url_prefix="/v1/grammar")
COPY_DRAFTER, NO_DRAFTER = "copy", "none"  # the drafter label of a correction in the metrics


@bp.post("/correct")
@generating
def correct() -> Response:
    state = current_state()
    req = parse_grammar_request(parse_json_body(request.get_data()), state.config)
    corrector = state.corrector(req.model)
    result = _correct(corrector, req.text, req.speculate)
    body: dict[str, Any] = {
        **result.to_dict(),
        "pieces": [{"text": p.text, "source": p.source} for p in merge_pieces(result.pieces)],
        "model": req.model,
    }
    if req.compare:
        other = _correct(corrector, req.text, not req.speculate)
        speculative, plain = (result, other) if req.speculate else (other, result)
        body["comparison"] = comparison(plain, speculative)
    return jsonify(answer(responses.Grammar, **body))


def _correct(corrector: GrammarCorrector, text: str, speculate: bool) -> CorrectionResult:
    with as_request_error("text", ValueError):  # the corrector's own input checks (e.g. a paragraph too long)
        result = corrector.correct(text, speculate=speculate)
    metrics.record_generation(COPY_DRAFTER if speculate else NO_DRAFTER, result.stats)
    return result


def comparison(plain: CorrectionResult, speculative: CorrectionResult) -> dict[str, Any]:
    """Plain vs speculative decoding of the same text: time, identity of the output, target passes."""
    plain_s, speculative_s = plain.stats.wall_s, speculative.stats.wall_s
    return {
        "plain_wall_s": round(plain_s, 4),
        "speculative_wall_s": round(speculative_s, 4),
        "speedup": round(plain_s / speculative_s, 3) if speculative_s > 0 else None,
        "identical": plain.corrected == speculative.corrected and plain.token_ids == speculative.token_ids,
        "plain_forward_passes": plain.stats.target_forward_passes,
        "speculative_forward_passes": speculative.stats.target_forward_passes,
    }
