"""Lossless under a constraint: speculative constrained decoding gives exactly plain constrained decoding's
tokens (greedy: ``==``; seeded sampling: ``==``, the same keyed draws) with drafters that are always
right, always wrong, partly right, trees, prompt lookup, a draft model, and the grammar alone; and every
answer that ended on EOS is valid under its schema. Tiny random models, so no weights are needed."""

from __future__ import annotations

import json

import jsonschema_rs
import pytest
from oracle import LenientOracle

from specdraft import GenerationConfig, NoDrafter, SamplingParams, SpeculationConfig, SpeculativeGenerator
from specdraft.constrained import Constraint
from specdraft.drafters import DraftModelDrafter, PromptLookupDrafter

SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 10},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "ok": {"type": "boolean"},
        },
        "required": ["name", "age", "ok"],
        "additionalProperties": False,
    },
    "enum": {
        "type": "object",
        "properties": {"mood": {"enum": ["happy", "sad", "calm"]}},
        "required": ["mood"],
        "additionalProperties": False,
    },
    "list": {
        "type": "object",
        "properties": {
            "values": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 99}, "maxItems": 4}
        },
        "required": ["values"],
        "additionalProperties": False,
    },
    "nested": {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {"b": {"type": "string", "maxLength": 6}},
                "required": ["b"],
                "additionalProperties": False,
            },
            "c": {"anyOf": [{"type": "null"}, {"type": "boolean"}]},
        },
        "required": ["a", "c"],
        "additionalProperties": False,
    },
}
CONSTRAINTS = {
    **{name: Constraint.json_schema(schema) for name, schema in SCHEMAS.items()},
    "regex": Constraint.regex(r"(cat|dog)s? [0-9]{1,3}!"),
    "json_object": Constraint.json_object(),
}
PROMPTS = ["the cat sat on the mat. ", "def add(a, b):\n    return a + b\n", "Grammar correction returns mostly"]
MAX_NEW = 40


def plain(model, prompt_ids, config):
    return SpeculativeGenerator(model, SpeculationConfig(grammar_drafts=False)).generate(
        prompt_ids, NoDrafter(), config
    )


def drafters(model, draft_model, reference, sampling):
    vocab = model.vocab_size
    yield "grammar alone", NoDrafter()
    yield "prompt lookup", PromptLookupDrafter()
    for mode in ("right", "wrong", "partly", "tree"):
        yield f"oracle {mode}", LenientOracle(reference, vocab, mode)
    yield "draft model", DraftModelDrafter(draft_model, vocab, sampling)


def check_valid(result, constraint):
    if result.finish_reason != "stop" or constraint.kind not in ("json_schema", "json_object"):
        return
    jsonschema_rs.validate(constraint.schema, json.loads(result.text))


@pytest.mark.parametrize("name", list(CONSTRAINTS))
def test_greedy_is_plain_constrained_decoding_with_every_drafter(tiny_model, tiny_draft_model, name):
    constraint = CONSTRAINTS[name]
    config = GenerationConfig(max_new_tokens=MAX_NEW, constraint=constraint)
    for prompt in PROMPTS:
        prompt_ids = tiny_model.encode(prompt)
        reference = plain(tiny_model, prompt_ids, config)
        check_valid(reference, constraint)
        for speculation in (SpeculationConfig(), SpeculationConfig(adaptive=False, initial_draft_len=6)):
            for label, drafter in drafters(
                tiny_model, tiny_draft_model, prompt_ids + reference.token_ids, SamplingParams()
            ):
                result = SpeculativeGenerator(tiny_model, speculation).generate(prompt_ids, drafter, config)
                assert result.token_ids == reference.token_ids, (name, prompt, label)
                assert result.finish_reason == reference.finish_reason


@pytest.mark.parametrize("name", ["person", "list", "regex"])
def test_seeded_sampling_is_plain_constrained_sampling(tiny_model, name):
    constraint = CONSTRAINTS[name]
    for seed in range(4):
        config = GenerationConfig(max_new_tokens=MAX_NEW, constraint=constraint, temperature=0.9, top_k=50, seed=seed)
        for prompt in PROMPTS[:2]:
            prompt_ids = tiny_model.encode(prompt)
            reference = plain(tiny_model, prompt_ids, config)
            check_valid(reference, constraint)
            for drafter in (
                NoDrafter(),
                PromptLookupDrafter(),
                LenientOracle(prompt_ids + reference.token_ids, tiny_model.vocab_size, "partly"),
            ):
                result = SpeculativeGenerator(tiny_model).generate(prompt_ids, drafter, config)
                assert result.token_ids == reference.token_ids, (name, seed, prompt, type(drafter).__name__)


def test_the_grammar_drafts_and_says_so(tiny_model):
    constraint = CONSTRAINTS["person"]
    result = SpeculativeGenerator(tiny_model).generate(
        tiny_model.encode(PROMPTS[0]), NoDrafter(), GenerationConfig(max_new_tokens=MAX_NEW, constraint=constraint)
    )
    stats = result.stats
    assert stats.forced_drafted > 0 and 0 < stats.forced_tokens <= stats.forced_drafted
    assert stats.grammar_s > 0
    off = plain(
        tiny_model, tiny_model.encode(PROMPTS[0]), GenerationConfig(max_new_tokens=MAX_NEW, constraint=constraint)
    )
    assert off.stats.forced_drafted == 0 and off.stats.target_forward_passes > stats.target_forward_passes


def test_a_constraint_unfinished_within_the_limit_ends_with_length(tiny_model):
    result = plain(
        tiny_model, tiny_model.encode(PROMPTS[0]), GenerationConfig(max_new_tokens=3, constraint=CONSTRAINTS["person"])
    )
    assert result.finish_reason == "length" and len(result.token_ids) == 3
