"""GrammarCorrector: text in, corrected text + edits + stats out, drafting from the input.

Long documents are split into paragraphs (and over-long paragraphs into sentences), corrected in
order, and reassembled with every space and line break of the original kept (see ``chunking``).
Every answer is checked against its text (``answer_check``): ``CorrectionResult.quality`` says
whether it is a correction or drops sentences, loops or runs to the token limit; the answer itself
is the model's, whatever the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdraft import Model, Stats
from specdraft.text_stream import TextPiece

from . import chunking
from .answer_check import AnswerCheck, CheckConfig, check_answer
from .editor import Editor, EditorConfig
from .edits import Edit, diff

# The model the service and `specdraft correct` correct with by default: the smallest registry model
# whose answers are corrections (smollm2-135m drops clauses and loops; see docs/bench/grammar-quality).
DEFAULT_GRAMMAR_MODEL = "qwen2.5-coder-0.5b"

INSTRUCTION = (
    "Correct the grammar, spelling and punctuation mistakes in the following text. "
    "Keep its wording and meaning otherwise unchanged. Reply with the corrected text only."
)


@dataclass(frozen=True)
class CorrectorConfig:
    instruction: str = INSTRUCTION
    max_chunk_chars: int = 1200
    max_text_chars: int = 50_000
    editor: EditorConfig = field(default_factory=EditorConfig)
    check: CheckConfig = field(default_factory=CheckConfig)


@dataclass
class CorrectionResult:
    original: str
    corrected: str
    edits: list[Edit]
    token_ids: list[int]  # generated ids of every chunk, in order
    stats: Stats
    pieces: list[TextPiece]  # the corrected text as drafted / generated pieces (whitespace kept)
    quality: AnswerCheck  # is ``corrected`` a correction of ``original`` (see ``answer_check``)

    def to_dict(self) -> dict:
        return {
            "corrected": self.corrected,
            "edits": [e.to_dict() for e in self.edits],
            "token_ids": self.token_ids,
            "stats": self.stats.to_dict(),
            "quality": self.quality.to_dict(),
        }


class GrammarCorrector:
    def __init__(self, model: Model, config: CorrectorConfig = CorrectorConfig()) -> None:
        self.model = model
        self.config = config
        self.editor = Editor(model, config.editor)

    def correct(self, text: str, speculate: bool = True) -> CorrectionResult:
        """Correct ``text``; ``speculate=False`` decodes plainly (same output, for comparison)."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text must be a non-empty string")
        if len(text) > self.config.max_text_chars:
            raise ValueError(f"text has {len(text)} characters; the limit is {self.config.max_text_chars}")
        chunks = chunking.split(text, self.config.max_chunk_chars)
        cores: list[str] = []
        token_ids: list[int] = []
        stats: list[Stats] = []
        pieces: list[TextPiece] = []
        cut_off = False  # some chunk's answer ran to its token limit
        for chunk in chunks:
            if chunk.lead:
                pieces.append(TextPiece(chunk.lead, "target"))
            if chunk.core:
                result = self.editor.edit(self.config.instruction, chunk.core, speculate)
                core = result.text.strip()
                cores.append(core)
                token_ids += result.token_ids
                stats.append(result.stats)
                cut_off |= result.finish_reason == "length"
                pieces += _trimmed(result.pieces, result.text, core)
            else:
                cores.append("")
            if chunk.trail:
                pieces.append(TextPiece(chunk.trail, "target"))
        corrected = chunking.join(chunks, cores)
        quality = check_answer(text, corrected, cut_off, self.config.check)
        return CorrectionResult(text, corrected, diff(text, corrected), token_ids, Stats.merged(stats), pieces, quality)


def _trimmed(pieces: list[TextPiece], text: str, core: str) -> list[TextPiece]:
    """``pieces`` (which spell ``text``) cut down to the stripped ``core`` inside it."""
    start = len(text) - len(text.lstrip())
    end = start + len(core)
    out, position = [], 0
    for piece in pieces:
        lo, hi = max(start, position), min(end, position + len(piece.text))
        if lo < hi:
            out.append(TextPiece(piece.text[lo - position : hi - position], piece.source))
        position += len(piece.text)
    return out
