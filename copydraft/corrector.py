"""GrammarCorrector: text in, corrected text + edits + stats out, drafting from the input.

Long documents are split into paragraphs (and over-long paragraphs into sentences), corrected in
order, and reassembled with every space and line break of the original kept (see ``chunking``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdraft import Model, Stats
from specdraft.text_stream import TextPiece

from . import chunking
from .editor import Editor, EditorConfig
from .edits import Edit, diff

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


@dataclass
class CorrectionResult:
    original: str
    corrected: str
    edits: list[Edit]
    token_ids: list[int]  # generated ids of every chunk, in order
    stats: Stats
    pieces: list[TextPiece]  # the corrected text as drafted / generated pieces (whitespace kept)

    def to_dict(self) -> dict:
        return {
            "corrected": self.corrected,
            "edits": [e.to_dict() for e in self.edits],
            "token_ids": self.token_ids,
            "stats": self.stats.to_dict(),
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
        for chunk in chunks:
            if chunk.lead:
                pieces.append(TextPiece(chunk.lead, "target"))
            if chunk.core:
                result = self.editor.edit(self.config.instruction, chunk.core, speculate)
                core = result.text.strip()
                cores.append(core)
                token_ids += result.token_ids
                stats.append(result.stats)
                pieces += _trimmed(result.pieces, result.text, core)
            else:
                cores.append("")
            if chunk.trail:
                pieces.append(TextPiece(chunk.trail, "target"))
        corrected = chunking.join(chunks, cores)
        return CorrectionResult(text, corrected, diff(text, corrected), token_ids, Stats.merged(stats), pieces)


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
