"""Grammar correction: ``POST /v1/grammar/correct``.

Request: ``{"text": str, "model"?: str, "speculate"?: bool = true, "compare"?: bool = false}``.
The text is corrected by ``ServiceConfig.grammar_model`` (or the served model or an allowed extra
model the request names) with ``GrammarCorrector``, which drafts the answer from the text itself
(see ``specdraft.copydraft``); ``speculate: false`` decodes plainly and gives the same answer.

Response: ``{"corrected", "edits", "token_ids", "stats", "quality", "pieces", "model"}`` where
``quality`` is the check of the answer against the text (``copydraft.answer_check``: ``ok`` false,
with ``warnings``, when it leaves out words or sentences, loops, runs to the token limit or adds
much text: then ``corrected`` is the model's answer but not a correction), ``edits`` are
``{"start", "end", "original", "replacement"}`` in the input's character offsets, and ``pieces``
spell ``corrected`` as runs of ``{"text", "source"}``: "draft" for text the model accepted from the
copy of the input, "target" for text it generated itself (adjacent pieces of one source merged).
With ``compare: true`` the text is also corrected the other way (plain if ``speculate``, else
speculatively) and the response adds ``comparison``: both wall times, the speedup, whether the two
outputs are identical, and both counts of target forward passes.

Limits: a body over ``max_request_bytes`` and a text over ``max_grammar_chars`` get a 413; bad
fields a 400 (see ``protocol.grammar``).
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
