"""The verify call's ``draft_probs`` over HTTP: a sampling session accepts drafts carrying their
draft distributions (rejection sampling, committed by the server), including repeated sibling
draws; bad lists are a 400 that leaves the session as it was; greedy sessions ignore them."""

import pytest
from test_edge_api import app, assert_error, auth, client, model, open_session, plain, verify  # noqa: F401  (fixtures)

from specdraft import SamplingParams
from specdraft.edge.guesses import draft_distribution


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
