"""Constrained decoding on real models, both backends: speculative == plain constrained decoding token for
token (greedy and seeded sampling), answers valid under their schemas, control tokens never inside JSON."""

from __future__ import annotations

import json

import jsonschema_rs
import pytest
from oracle import LenientOracle

from specdraft import GenerationConfig, ModelConfig, NoDrafter, SpeculationConfig, SpeculativeGenerator, load_model
from specdraft.constrained import Constraint
from specdraft.drafters import PromptLookupDrafter

pytestmark = pytest.mark.slow

DOCUMENTS = [
    "In 1998, Maria Gonzalez founded Blue Harbor Logistics in Valparaiso, Chile, after ten years at sea.",
    "The invoice INV-2231 from Northwind Traders, dated 14 March 2024, asks for 1,250.00 EUR within 30 days.",
    "Dr. Kenji Watanabe will present the results of the Osaka flood study on 2 May at the Tokyo Forum.",
]
SCHEMAS = [
    {
        "type": "object",
        "properties": {
            "people": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "organisations": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "year": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["people", "organisations", "year"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"summary": {"type": "string", "maxLength": 80}, "place": {"type": "string"}},
        "required": ["summary", "place"],
        "additionalProperties": False,
    },
]
MAX_NEW = 64


def prompt(model, document, schema):
    return model.encode_chat(
        [
            {
                "role": "user",
                "content": (
                    f"Extract the record from the text as JSON matching this schema: {json.dumps(schema)}"
                    f"\n\nText: {document}"
                ),
            }
        ]
    )


def plain(model, ids, config):
    return SpeculativeGenerator(model, SpeculationConfig(grammar_drafts=False)).generate(ids, NoDrafter(), config)


@pytest.fixture(
    scope="module",
    params=[("qwen2.5-coder-0.5b", "llama-cpp"), ("qwen2.5-coder-0.5b", "transformers"), ("smollm2-135m", "llama-cpp")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def model(request):
    name, backend = request.param
    return load_model(ModelConfig(name, backend=backend, device="cpu"))


def test_speculative_constrained_greedy_is_plain_and_valid(model):
    special = {t for t in range(model.vocab_size) if model.grammar_compiler().tokenizer.is_special_token(t)}
    forced = 0
    fp32 = model.backend == "transformers"  # about 5 tokens/s here: fewer cases
    for schema in SCHEMAS[:1] if fp32 else SCHEMAS:
        constraint = Constraint.json_schema(schema)
        config = GenerationConfig(max_new_tokens=MAX_NEW, constraint=constraint)
        for document in DOCUMENTS[:2] if fp32 else DOCUMENTS:
            ids = prompt(model, document, schema)
            reference = plain(model, ids, config)
            assert not special & set(reference.token_ids[:-1]), "a control token inside the JSON"
            if reference.finish_reason == "stop":
                assert reference.token_ids[-1] in model.eos_token_ids
                jsonschema_rs.validate(schema, json.loads(reference.text))
            for drafter in (
                NoDrafter(),
                PromptLookupDrafter(),
                LenientOracle(ids + reference.token_ids, model.vocab_size, "partly"),
            ):
                result = SpeculativeGenerator(model).generate(ids, drafter, config)
                assert result.token_ids == reference.token_ids, (schema, document, type(drafter).__name__)
                forced += result.stats.forced_tokens
    assert forced > 0


def test_speculative_constrained_sampling_is_plain_with_the_same_seed(model):
    schema = SCHEMAS[0]
    for seed in (0, 1):
        config = GenerationConfig(
            max_new_tokens=48, constraint=Constraint.json_schema(schema), temperature=0.8, seed=seed
        )
        ids = prompt(model, DOCUMENTS[seed], schema)
        reference = plain(model, ids, config)
        result = SpeculativeGenerator(model).generate(ids, PromptLookupDrafter(), config)
        assert result.token_ids == reference.token_ids


def test_json_mode_answers_an_object(model):
    ids = model.encode_chat([{"role": "user", "content": "Give the capital of France as a JSON object."}])
    result = SpeculativeGenerator(model).generate(
        ids, PromptLookupDrafter(), GenerationConfig(max_new_tokens=48, constraint=Constraint.json_object())
    )
    assert (
        result.token_ids
        == plain(model, ids, GenerationConfig(max_new_tokens=48, constraint=Constraint.json_object())).token_ids
    )
    if result.finish_reason == "stop":
        assert isinstance(json.loads(result.text), dict)
