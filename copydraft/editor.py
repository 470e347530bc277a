"""Editor: "rewrite this" tasks whose answer is mostly the source, drafted from the source.

``Editor.edit(instruction, source)`` wraps the instruction and the source in the model's chat
template (or a plain prompt for models without one), and generates the answer greedily with a
``CopyDrafter`` over the source (or plainly with ``speculate=False``). Output is the target's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specdraft import GenerationConfig, GenerationResult, Model, SpeculationConfig, SpeculativeGenerator

from .drafter import CopyDraftConfig, CopyDrafter

# Copies are long and mostly right: start long, allow very long drafts; the policy still picks the
# length from the measured cost of a pass on this device.
COPY_SPECULATION = SpeculationConfig(initial_draft_len=32, max_draft_len=512, prior_alpha=0.9)


@dataclass(frozen=True)
class EditorConfig:
    speculation: SpeculationConfig = COPY_SPECULATION
    copy: CopyDraftConfig = field(default_factory=CopyDraftConfig)
    length_factor: float = 1.5  # max_new_tokens = length_factor * source tokens + extra_tokens
    extra_tokens: int = 32

    def __post_init__(self) -> None:
        if self.length_factor < 1.0 or self.extra_tokens < 0:
            raise ValueError("need length_factor >= 1 and extra_tokens >= 0")


def build_prompt(model: Model, instruction: str, source: str) -> list[int]:
    content = f"{instruction.strip()}\n\n{source}"
    if model.has_chat_template:
        return model.encode_chat([{"role": "user", "content": content}])
    return model.encode(f"{content}\n\nAnswer:\n")


class Editor:
    def __init__(self, model: Model, config: EditorConfig = EditorConfig()) -> None:
        self.model = model
        self.config = config

    def source_ids(self, source: str) -> list[int]:
        """The source as the model writes it in an answer (no special tokens)."""
        return self.model.tokenizer.encode(source)

    def prepare(self, instruction: str, source: str) -> tuple[list[int], list[int], int]:
        """(prompt ids, source ids, max new tokens) for editing ``source`` as ``instruction`` says."""
        if not source.strip():
            raise ValueError("the source text is empty")
        prompt_ids = build_prompt(self.model, instruction, source)
        source_ids = self.source_ids(source)
        room = self.model.max_length - len(prompt_ids) - 1
        if room < 1:
            raise ValueError(f"the text is too long for {self.model.name}: {len(prompt_ids)} prompt tokens")
        wanted = int(self.config.length_factor * len(source_ids)) + self.config.extra_tokens
        return prompt_ids, source_ids, min(wanted, room)

    def drafter(self, source_ids: list[int]) -> CopyDrafter:
        return CopyDrafter(source_ids, self.model.eos_token_ids, self.config.copy)

    def edit(self, instruction: str, source: str, speculate: bool = True) -> GenerationResult:
        prompt_ids, source_ids, max_new = self.prepare(instruction, source)
        drafter = self.drafter(source_ids) if speculate else None
        generator = SpeculativeGenerator(self.model, self.config.speculation)
        return generator.generate(prompt_ids, drafter, GenerationConfig(max_new_tokens=max_new))
