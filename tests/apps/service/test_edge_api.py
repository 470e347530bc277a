"""The edge verify server (``specdraft.apps.service.edge``): sessions, verification, keys, limits,
refused calls that leave a session exactly as it was, and drafts sent with their ``draft_probs``.
Driven through Flask's test client on the tiny chat model; outputs compared with the engine's own
plain greedy decoding (``==``)."""

import pytest
from tiny_service import make_app, make_chat_model

from specdraft import GenerationConfig, SamplingParams, SpeculativeGenerator
from specdraft.apps.service import ServiceConfig
from specdraft.apps.service.edge import STORE
from specdraft.apps.service.edge_sessions import EdgeConfig
from specdraft.edge.guesses import draft_distribution

KEY, OTHER = "edge-key-0123456789abcdef", "other-key-0123456789abcdef"
N_NEW = 24


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture
def app(model, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(f"{KEY}\n{OTHER}\n")
    return make_app(
        model,
        api_key_file=str(keys),
        edge=True,
        edge_config=EdgeConfig(max_sessions_per_key=3, max_draft_nodes=16, max_branches=4),
    )


@pytest.fixture
def client(app):
    return app.test_client()


def auth(key=KEY):
    return {"Authorization": f"Bearer {key}"}


def open_session(client, model, key=KEY, **fields):
    body = {"prompt": model.encode("The quick brown fox"), "tokenizer": model.tokenizer.fingerprint(), **fields}
    response = client.post("/v1/edge/sessions", json=body, headers=auth(key))
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def verify(client, session_id, tokens=(), parents=None, key=KEY, **fields):
    parents = list(range(-1, len(tokens) - 1)) if parents is None else list(parents)
    return client.post(
        f"/v1/edge/sessions/{session_id}/verify",
        json={"tokens": list(tokens), "parents": parents, **fields},
        headers=auth(key),
    )


def plain(model, prompt_ids, **config):
    return (
        SpeculativeGenerator(model)
        .generate(prompt_ids, None, GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True, **config))
        .token_ids
    )


def assert_error(response, status, code=None):
    assert response.status_code == status, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return error


def test_edge_needs_api_keys(model):
    with pytest.raises(ValueError, match="API keys"):
        ServiceConfig(model="tiny", edge=True)


def test_without_edge_there_are_no_edge_routes(model, tmp_path):
    keys = tmp_path / "k"
    keys.write_text(KEY + "\n")
    client = make_app(model, api_key_file=str(keys)).test_client()
    assert client.get("/v1/edge/info", headers=auth()).status_code == 404


def test_every_call_needs_a_key(client, model):
    assert_error(client.get("/v1/edge/info"), 401)
    assert_error(client.post("/v1/edge/sessions", json={"prompt": [1, 2]}), 401)
    assert_error(client.post("/v1/edge/sessions/x/verify", json={"tokens": [], "parents": []}), 401)
    info = client.get("/v1/edge/info", headers=auth()).get_json()
    assert (
        info["tokenizer"] == model.tokenizer.fingerprint()
        and info["tokenizer_vocab_size"] == model.tokenizer.vocab_size
    )
    assert info["vocab_size"] == model.vocab_size
    assert info["max_branches"] == 4 and info["max_draft_nodes"] == 16


def test_greedy_verification_with_right_drafts_reproduces_plain_greedy(client, model):
    prompt = model.encode("The quick brown fox")
    reference = plain(model, prompt)
    session = open_session(client, model)
    assert session["context_length"] == len(prompt) and session["forward_passes"] == 1
    generated: list[int] = []
    while len(generated) < N_NEW:
        truth = reference[len(generated) : len(generated) + 4]
        draft = truth[:2] + [(truth[2] + 1) % 50] if len(truth) > 2 else truth  # a wrong third token
        answer = verify(client, session["id"], draft).get_json()
        generated += answer["accepted_tokens"] + [answer["next_token"]]
        assert answer["context_length"] == len(prompt) + len(generated)
    assert generated[:N_NEW] == reference
    assert answer["forward_passes"] < 1 + N_NEW  # fewer passes than plain decoding


def test_trees_follow_the_targets_choices(client, model):
    prompt = model.encode("The quick brown fox")
    reference = plain(model, prompt)
    session = open_session(client, model)
    wrong = (reference[0] + 1) % 50
    answer = verify(client, session["id"], [wrong, reference[0], reference[1]], [-1, -1, 1]).get_json()
    assert answer["accepted_path"] == [1, 2] and answer["next_token"] == reference[2]
    assert answer["choices"][0] == reference[0] and len(answer["choices"]) == 4


def test_seeded_sampling_sessions_repeat_plain_sampling(client, model):
    prompt = model.encode("The quick brown fox")
    reference = plain(model, prompt, temperature=0.9, seed=7)
    session = open_session(client, model, temperature=0.9, seed=7)
    generated: list[int] = []
    while len(generated) < N_NEW:
        truth = reference[len(generated) : len(generated) + 3]
        answer = verify(client, session["id"], truth).get_json()
        generated += answer["accepted_tokens"] + [answer["next_token"]]
    assert generated[:N_NEW] == reference


def test_chat_messages_open_a_session_from_the_template(client, model):
    messages = [{"role": "user", "content": "hello"}]
    session = open_session(client, model, prompt=None, messages=messages)
    want = model.encode_chat(messages)
    assert session["prompt_token_ids"] == want and session["context_length"] == len(want)


def test_a_different_tokenizer_is_a_409(client, model):
    body = {"prompt": [1, 2, 3], "tokenizer": "not-the-fingerprint"}
    assert_error(client.post("/v1/edge/sessions", json=body, headers=auth()), 409, "tokenizer_mismatch")


@pytest.mark.parametrize(
    "body",
    [
        {"tokens": [1, 2], "parents": [-1]},  # lengths differ
        {"tokens": [1, 2], "parents": [1, -1]},  # a parent after its child
        {"tokens": [1, 1], "parents": [-1, -1]},  # repeated siblings
        {"tokens": [10**6], "parents": [-1]},  # outside the vocabulary
        {"tokens": [-3], "parents": [-1]},
        {"tokens": ["a"], "parents": [-1]},
        {"tokens": [True], "parents": [-1]},
        {"tokens": list(range(1, 18)), "parents": list(range(-1, 16))},  # more nodes than the server takes
        {"tokens": [1, 2, 3, 4, 5], "parents": [-1] * 5},  # more branches than the server takes
        {"tokens": [1], "parents": [-1], "previous": {"path": [], "next_token": 3}},  # no commit waiting
        {"tokens": [1], "parents": [-1], "commit": "yes"},
        {"parents": []},
    ],
)
def test_a_refused_verification_leaves_the_session_as_it_was(client, model, body):
    prompt = model.encode("The quick brown fox")
    reference = plain(model, prompt)
    session = open_session(client, model)
    response = client.post(f"/v1/edge/sessions/{session['id']}/verify", json=body, headers=auth())
    assert 400 <= response.status_code < 500 and response.get_json()["error"]["message"]
    answer = verify(client, session["id"], reference[:3]).get_json()
    assert answer["accepted_tokens"] == reference[:3] and answer["next_token"] == reference[3]
    assert answer["forward_passes"] == 2  # the prefill and this one: the refused call ran nothing


def test_a_draft_past_the_context_limit_is_refused(model, tmp_path):
    keys = tmp_path / "k"
    keys.write_text(KEY + "\n")
    client = make_app(model, api_key_file=str(keys), edge=True, edge_config=EdgeConfig(max_length=8)).test_client()
    session = open_session(client, model, prompt=[5, 6, 7, 8, 9])
    assert_error(verify(client, session["id"], [1, 2, 3]), 400, "context_length_exceeded")
    assert verify(client, session["id"], [1, 2]).status_code == 200
    assert_error(
        client.post(
            "/v1/edge/sessions",
            json={"prompt": list(range(1, 10)), "tokenizer": model.tokenizer.fingerprint()},
            headers=auth(),
        ),
        400,
        "context_length_exceeded",
    )


def test_sessions_belong_to_their_key(client, model):
    session = open_session(client, model)
    assert_error(verify(client, session["id"], [1], key=OTHER), 403, "session_forbidden")
    assert_error(client.delete(f"/v1/edge/sessions/{session['id']}", json={}, headers=auth(OTHER)), 403)
    assert_error(verify(client, "edge-nope", [1]), 404, "session_not_found")


def test_close_frees_the_session_and_the_limit_per_key(client, app, model):
    ids = [open_session(client, model)["id"] for _ in range(3)]
    assert_error(
        client.post(
            "/v1/edge/sessions", json={"prompt": [1, 2], "tokenizer": model.tokenizer.fingerprint()}, headers=auth()
        ),
        429,
        "too_many_sessions",
    )
    open_session(client, model, key=OTHER)  # another key has its own limit
    assert client.delete(f"/v1/edge/sessions/{ids[0]}", json={}, headers=auth()).status_code == 200
    assert_error(verify(client, ids[0], [1]), 404)
    open_session(client, model)
    assert len(app.extensions[STORE]) == 4


def test_idle_sessions_are_closed(client, app, model):
    store = app.extensions[STORE]
    now = [0.0]
    store._clock = lambda: now[0]
    session = open_session(client, model)
    now[0] += store.config.idle_timeout_s + 1
    assert_error(verify(client, session["id"], [1]), 404, "session_not_found")
    assert store.closed_idle == 1 and len(store) == 0


def test_commit_out_of_turn_and_deferred_commits(client, model):
    prompt = model.encode("The quick brown fox")
    reference = plain(model, prompt)
    session = open_session(client, model)
    sid = session["id"]
    answer = verify(client, sid, reference[:2], commit=False).get_json()
    assert answer["committed"] is False and answer["context_length"] == len(prompt)
    assert_error(verify(client, sid, [1]), 409, "commit_pending")
    assert_error(client.post(f"/v1/edge/sessions/{sid}/append", json={"tokens": [1]}, headers=auth()), 409)
    bad = {
        "tokens": [],
        "parents": [],
        "previous": {"path": [1], "next_token": reference[2]},
    }  # node 1 is not a root child
    assert_error(client.post(f"/v1/edge/sessions/{sid}/verify", json=bad, headers=auth()), 400, "invalid_path")
    good = verify(client, sid, reference[3:5], previous={"path": [0, 1], "next_token": reference[2]}).get_json()
    assert good["accepted_tokens"] == reference[3:5] and good["next_token"] == reference[5]
    assert good["context_length"] == len(prompt) + 6


def test_append_adds_tokens_like_a_longer_prompt(client, model):
    prompt = model.encode("The quick brown fox")
    extra = model.encode(" jumps over")
    reference = plain(model, prompt + extra)
    session = open_session(client, model)
    answer = client.post(f"/v1/edge/sessions/{session['id']}/append", json={"tokens": extra}, headers=auth()).get_json()
    assert answer["context_length"] == len(prompt) + len(extra)
    got = verify(client, session["id"], reference[:4]).get_json()
    assert got["accepted_tokens"] == reference[:4] and got["next_token"] == reference[4]


def test_a_call_made_against_an_old_context_length_is_a_409(client, model):
    session = open_session(client, model)
    length = session["context_length"]
    first = verify(client, session["id"], [1], context_length=length).get_json()
    assert_error(verify(client, session["id"], [1], context_length=length), 409, "context_mismatch")  # a retry
    assert verify(client, session["id"], [1], context_length=first["context_length"]).status_code == 200


# ---------------------------------------------------------------------------------------------
# The verify call's ``draft_probs`` over HTTP: a sampling session accepts drafts carrying their
# draft distributions (rejection sampling, committed by the server), including repeated sibling
# draws; bad lists are a 400 that leaves the session as it was; greedy sessions ignore them.


def q_after(model, ids, params, k=8):
    """The tiny model's own draft distribution after ``ids`` (as a laptop drafting with it sends)."""
    session = model.new_session()
    row = session.feed(list(ids), all_logits=False)[-1]
    tokens, probs = draft_distribution(row, params, k)
    return {"tokens": list(tokens), "probs": list(probs)}


def test_a_sampled_tree_with_repeated_draws_is_accepted_and_committed(client, model):
    params = SamplingParams(temperature=0.8)
    session = open_session(client, model, temperature=0.8, seed=11)
    assert session["draft_probs_max_entries"] >= 8
    prompt = model.encode("The quick brown fox")
    q = q_after(model, prompt, params)
    first = q["tokens"][0]
    q2 = q_after(model, prompt + [first], params)
    # root: two draws of the same token (both carry q) and another; the first has a child
    body = {
        "tokens": [first, first, q["tokens"][1], q2["tokens"][0]],
        "parents": [-1, -1, -1, 0],
        "draft_probs": [q, q, q, q2],
    }
    response = verify(client, session["id"], **body)
    assert response.status_code == 200, response.get_json()
    answer = response.get_json()
    assert answer["committed"] and answer["choices"] == []
    path = answer["accepted_path"]
    assert path in ([], [0], [0, 3], [2]) and answer["accepted_tokens"] == [body["tokens"][i] for i in path]
    assert answer["context_length"] == len(prompt) + len(path) + 1
    # the session goes on from there: a plain verification without probabilities still works
    assert verify(client, session["id"]).status_code == 200


@pytest.mark.parametrize(
    "bad",
    [
        {"draft_probs": [{"tokens": [1, 2], "probs": [0.5, 0.4]}]},
        {"draft_probs": [{"tokens": [2, 3], "probs": [0.5, 0.5]}]},
        {"draft_probs": "x"},
        {"draft_probs": [{"tokens": list(range(65)), "probs": [1 / 65] * 65}]},
        {"draft_probs": [{"tokens": [1, 2], "probs": [0.5, 0.5]}], "commit": False},
    ],
)
def test_bad_draft_probs_are_a_400_and_leave_the_session_as_it_was(client, model, bad):
    session = open_session(client, model, temperature=0.8, seed=1)
    body = {"tokens": [1], "parents": [-1], **bad}
    assert_error(client.post(f"/v1/edge/sessions/{session['id']}/verify", json=body, headers=auth()), 400)
    # unchanged: the next verification starts from the same context length
    answer = verify(client, session["id"]).get_json()
    assert answer["context_length"] == session["context_length"] + 1


def test_greedy_sessions_ignore_draft_probs(client, model):
    prompt = model.encode("The quick brown fox")
    want = plain(model, prompt)
    session = open_session(client, model)
    q = {"tokens": [want[0], (want[0] + 1) % 100], "probs": [0.5, 0.5]}
    answer = verify(client, session["id"], tokens=[want[0]], parents=[-1], draft_probs=[q]).get_json()
    assert answer["accepted_tokens"] == [want[0]] and answer["next_token"] == want[1]
