"""POST /v1/grammar/correct and GET /demo/grammar, on tiny random-initialised models.

The answer must be ``GrammarCorrector``'s own, whether the request speculates or not; its edits must
turn the input into the answer and its pieces must spell it; its ``quality`` is the answer check's
verdict (the tiny model loops on ``TEXT``: flagged). A request without ``model`` gets the config's
``grammar_model`` (the tiny app's is ``SERVED`` unless a test says otherwise).
"""

import threading

import pytest
from tiny_service import DRAFT, GRAMMAR_TEXT, SERVED, UNLOADABLE, make_app, make_chat_model

from specdraft import ModelConfig
from specdraft.apps.service import ServiceConfig
from specdraft.copydraft import GrammarCorrector
from specdraft.copydraft.answer_check import check_answer
from specdraft.copydraft.corrector import DEFAULT_GRAMMAR_MODEL
from specdraft.copydraft.edits import Edit, apply

PATH = "/v1/grammar/correct"
TEXT = GRAMMAR_TEXT
MAX_CHARS = 2000


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def app(model, tiny_draft_model):
    return make_app(model, tiny_draft_model, max_grammar_chars=MAX_CHARS)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="module")
def reference(model):
    """The corrector's own answer, decoded plainly."""
    return GrammarCorrector(model).correct(TEXT, speculate=False)


def post_ok(client, body):
    response = client.post(PATH, json=body)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()


# --- the answer -----------------------------------------------------------------------------------
def test_response_contract(client, reference):
    body = post_ok(client, {"text": TEXT})
    assert list(body) == ["corrected", "edits", "token_ids", "stats", "quality", "pieces", "model"]
    assert body["corrected"] == reference.corrected
    assert body["quality"] == reference.quality.to_dict()
    assert body["token_ids"] == reference.token_ids
    assert body["model"] == SERVED
    assert all(set(edit) == {"start", "end", "original", "replacement"} for edit in body["edits"])
    assert all(set(piece) == {"text", "source"} for piece in body["pieces"])
    for key in ("verify_steps", "drafted_tokens", "accepted_tokens", "target_forward_passes", "wall_s"):
        assert key in body["stats"]
    assert body["stats"]["generated_tokens"] == len(reference.token_ids)


@pytest.mark.parametrize("speculate", [True, False])
def test_speculation_does_not_change_the_answer(client, reference, speculate):
    body = post_ok(client, {"text": TEXT, "speculate": speculate})
    assert body["corrected"] == reference.corrected
    assert body["token_ids"] == reference.token_ids
    assert (body["stats"]["drafted_tokens"] > 0) == speculate
    if not speculate:
        assert {piece["source"] for piece in body["pieces"]} == {"target"}


def test_edits_turn_the_text_into_the_answer_and_pieces_spell_it(client):
    body = post_ok(client, {"text": TEXT})
    assert body["edits"], "the tiny model's answer differs from its input"
    assert apply(TEXT, [Edit(**edit) for edit in body["edits"]]) == body["corrected"]
    pieces = body["pieces"]
    assert "".join(piece["text"] for piece in pieces) == body["corrected"]
    assert all(piece["text"] for piece in pieces)
    assert {piece["source"] for piece in pieces} == {"draft", "target"}
    assert all(a["source"] != b["source"] for a, b in zip(pieces, pieces[1:])), "adjacent pieces are merged"


@pytest.mark.parametrize("speculate", [True, False])
def test_compare_reports_both_decodings(client, reference, speculate):
    body = post_ok(client, {"text": TEXT, "compare": True, "speculate": speculate})
    comparison = body["comparison"]
    assert list(comparison) == [
        "plain_wall_s",
        "speculative_wall_s",
        "speedup",
        "identical",
        "plain_forward_passes",
        "speculative_forward_passes",
    ]
    assert comparison["identical"] is True
    assert comparison["plain_forward_passes"] == reference.stats.target_forward_passes
    assert comparison["plain_wall_s"] > 0 and comparison["speculative_wall_s"] > 0
    expected = comparison["plain_wall_s"] / comparison["speculative_wall_s"]
    assert comparison["speedup"] == pytest.approx(expected, rel=0.01)
    assert body["corrected"] == reference.corrected
    passes = comparison["speculative_forward_passes"] if speculate else comparison["plain_forward_passes"]
    assert body["stats"]["target_forward_passes"] == passes


def test_without_compare_there_is_no_comparison(client):
    assert "comparison" not in post_ok(client, {"text": TEXT, "compare": False})


def test_an_extra_model_can_be_named(client, tiny_draft_model):
    body = post_ok(client, {"text": TEXT, "model": DRAFT})
    assert body["model"] == DRAFT
    expected = GrammarCorrector(tiny_draft_model).correct(TEXT, speculate=False)
    assert body["token_ids"] == expected.token_ids and body["corrected"] == expected.corrected


# --- the quality check -------------------------------------------------------------------------------
def test_a_looping_answer_is_flagged_not_presented_as_a_correction(client, reference):
    body = post_ok(client, {"text": TEXT})
    quality = body["quality"]
    assert quality["ok"] is False
    assert quality["hit_token_limit"] is True  # the tiny model never ends its answer on TEXT
    assert any(w.endswith("it loops") for w in quality["warnings"]), quality["warnings"]
    assert any("cut off at the token limit" in w for w in quality["warnings"])
    assert quality["repeated"]["extra_times"] >= 4
    # the answer is still there, as the model wrote it
    assert body["corrected"] == reference.corrected and body["edits"]
    expected = check_answer(TEXT, body["corrected"], hit_token_limit=True).to_dict()
    assert quality == expected


@pytest.mark.parametrize("speculate", [True, False])
def test_quality_does_not_depend_on_speculation(client, reference, speculate):
    body = post_ok(client, {"text": TEXT, "speculate": speculate, "compare": True})
    assert body["quality"] == reference.quality.to_dict()


def test_an_answer_that_ends_by_itself_and_keeps_the_text_passes(client):
    # the tiny model's answer to "=vedae6" starts with it and ends (EOS) within the limit
    body = post_ok(client, {"text": "=vedae6"})
    assert body["corrected"].startswith("=vedae6")
    assert body["quality"]["ok"] is True and body["quality"]["warnings"] == []
    assert body["quality"]["dropped_words"] == 0.0 and body["quality"]["hit_token_limit"] is False


# --- the grammar model ------------------------------------------------------------------------------
def test_the_grammar_model_answers_requests_that_name_none(model, tiny_draft_model):
    client = make_app(model, tiny_draft_model, grammar_model=DRAFT, extra_models=()).test_client()
    body = post_ok(client, {"text": TEXT})
    assert body["model"] == DRAFT
    expected = GrammarCorrector(tiny_draft_model).correct(TEXT, speculate=False)
    assert body["token_ids"] == expected.token_ids
    # the served model can still be named; the grammar model is allowed though not an extra model
    assert post_ok(client, {"text": TEXT, "model": SERVED})["model"] == SERVED
    assert post_ok(client, {"text": TEXT, "model": DRAFT})["model"] == DRAFT
    response = client.post(PATH, json={"text": TEXT, "model": "gpt-4"})
    assert response.status_code == 400
    assert "allowed: 'tiny', 'tiny-draft')" in response.get_json()["error"]["message"]
    # the page names the model that corrects
    assert f"model <code>{DRAFT}</code>" in client.get("/demo/grammar").get_data(as_text=True)


def test_the_grammar_model_is_loaded_on_the_first_correction_only(model):
    client = make_app(model, grammar_model=UNLOADABLE, extra_models=()).test_client()
    assert client.get("/demo/grammar").status_code == 200
    assert client.get("/healthz").status_code == 200
    response = client.post(PATH, json={"text": TEXT})
    assert response.status_code == 400
    assert f"cannot load model '{UNLOADABLE}'" in response.get_json()["error"]["message"]
    assert post_ok(client, {"text": TEXT, "model": SERVED})["model"] == SERVED


def test_the_default_grammar_model_is_one_that_corrects():
    assert ServiceConfig().grammar_model == DEFAULT_GRAMMAR_MODEL == "qwen2.5-coder-0.5b"
    assert ServiceConfig().model_name != DEFAULT_GRAMMAR_MODEL  # the served model stays the small default


def test_one_corrector_per_model_is_kept(app):
    state = app.extensions["specdraft"]
    assert state.corrector(SERVED) is state.corrector(SERVED)
    assert state.corrector(DRAFT) is not state.corrector(SERVED)


def test_concurrent_requests_get_the_answer_they_get_alone(app, reference):
    answers: list = [None] * 3
    start = threading.Barrier(len(answers), timeout=60)

    def run(i):
        client = app.test_client()
        start.wait()
        answers[i] = post_ok(client, {"text": TEXT, "speculate": i % 2 == 0})["token_ids"]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(answers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [reference.token_ids] * len(answers)


# --- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "status", "message", "param"),
    [
        (b'{"text": "hi"', 400, "not valid JSON", None),
        (b"", 400, "the request body is empty", None),
        (["hi"], 400, "must be a JSON object, got array", None),
        ({}, 400, "text is required", "text"),
        ({"text": None}, 400, "text is required", "text"),
        ({"text": 42}, 400, "text must be a string, got number 42", "text"),
        ({"text": ["a"]}, 400, "text must be a string, got array", "text"),
        ({"text": ""}, 400, "text must not be empty", "text"),
        ({"text": " \n\t"}, 400, "text must not be empty", "text"),
        ({"text": "hi", "speculate": "yes"}, 400, 'speculate must be true or false, got string "yes"', "speculate"),
        ({"text": "hi", "speculate": 0}, 400, "speculate must be true or false, got number 0", "speculate"),
        ({"text": "hi", "compare": 1}, 400, "compare must be true or false, got number 1", "compare"),
        ({"text": "hi", "model": 7}, 400, "model must be a string", "model"),
        (
            {"text": "hi", "model": "gpt-4"},
            400,
            "model 'gpt-4' is not served here (allowed: 'tiny', 'tiny-draft'",
            "model",
        ),
        ({"text": "hi", "model": "/etc"}, 400, "model '/etc' is not served here", "model"),
        ({"text": "hi", "model": UNLOADABLE}, 400, f"cannot load model '{UNLOADABLE}'", "model"),
        ({"text": "x" * 1100}, 400, "too long for", "text"),  # one paragraph beyond the model's context
        (
            {"text": "x" * (MAX_CHARS + 1)},
            413,
            f"text has {MAX_CHARS + 1} characters; this server corrects at most {MAX_CHARS}",
            "text",
        ),
        (b"x" * 1_000_001, 413, "larger than the limit of 1000000 bytes", None),
    ],
)
def test_bad_requests_get_a_json_error(client, body, status, message, param):
    if isinstance(body, bytes):
        response = client.post(PATH, data=body, content_type="application/json")
    else:
        response = client.post(PATH, json=body)
    assert response.status_code == status
    assert response.mimetype == "application/json"
    error = response.get_json()["error"]
    assert message in error["message"]
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"


def test_only_post_is_allowed(client):
    response = client.get(PATH)
    assert response.status_code == 405
    assert "allowed: OPTIONS, POST" in response.get_json()["error"]["message"]


# --- the demo page --------------------------------------------------------------------------------
def test_demo_page_and_its_assets_are_served_without_loading_the_model(model):
    client = make_app(model).test_client()
    page = client.get("/demo/grammar")
    assert page.status_code == 200 and page.mimetype == "text/html"
    html = page.get_data(as_text=True)
    assert f'data-api="{PATH}"' in html
    assert "/static/demo.js" in html and "/static/grammar.js" in html and "/static/demo.css" in html
    assert "<textarea" in html and "Correct</button>" in html
    assert "http://" not in html and "https://" not in html, "the page loads nothing from elsewhere"
    for asset, mimetype in (
        ("demo.js", "text/javascript"),
        ("grammar.js", "text/javascript"),
        ("demo.css", "text/css"),
    ):
        response = client.get(f"/static/{asset}")
        assert response.status_code == 200 and response.mimetype == mimetype
        response.close()
    assert client.get("/healthz").get_json()["loaded"] is False


# --- real models (slow) ---------------------------------------------------------------------------
ISSUE_SENTENCE = "She go to school every days and she like it."


@pytest.mark.slow
def test_the_real_default_grammar_model_corrects_without_dropping_the_second_clause(tmp_path):
    from specdraft.apps.service import create_app

    client = create_app(ServiceConfig(ModelConfig(device="cpu"), index_root=str(tmp_path))).test_client()
    body = post_ok(client, {"text": ISSUE_SENTENCE})
    assert body["model"] == DEFAULT_GRAMMAR_MODEL
    assert body["corrected"].startswith("She goes to school every day")
    assert "and she likes it" in body["corrected"]
    assert body["quality"]["ok"] is True and body["quality"]["dropped_word_count"] == 0
    assert client.get("/healthz").get_json()["loaded"] is False  # the served model was never needed


@pytest.mark.slow
def test_the_small_models_dropped_clause_and_loop_are_flagged(tmp_path):
    from specdraft.apps.service import create_app

    client = create_app(
        ServiceConfig(ModelConfig(device="cpu"), index_root=str(tmp_path), grammar_model="smollm2-135m")
    ).test_client()
    dropped = post_ok(client, {"text": ISSUE_SENTENCE})  # the issue: "She go to school every day."
    assert dropped["quality"]["ok"] is False
    assert dropped["quality"]["dropped_passages"] == ["and she like it"]
    looping = post_ok(client, {"text": "bla " * 20})  # smollm2-135m answers "The corrected text is:" over and over
    assert looping["quality"]["ok"] is False
    assert any(w.endswith("it loops") for w in looping["quality"]["warnings"]), looping["quality"]
    assert looping["quality"]["hit_token_limit"] is True
