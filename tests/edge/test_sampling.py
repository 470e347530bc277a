"""Sampling with the draft's probabilities over the edge wire format is lossless: the client's
draft distribution ``q`` (top-k of the draft row, warped), its keyed draws, the sampled tree (a
chain with an independent sibling draw), the JSON it sends, the server's validation, the merge of
repeated siblings and its rejection rule, end to end on crafted rows; the emitted tokens follow the
target's distribution (chi-square and total variation), including tokens outside ``q``'s support.
The same test catches a ``q`` that is not the one drawn from (its power)."""

import json
from collections import Counter

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from specdraft import Draft, SamplingParams
from specdraft.apps.service.edge import draft_probs
from specdraft.apps.service.edge_sessions import DraftRows, _merge_repeats, sampled_acceptance
from specdraft.edge.guesses import LocalGuesser, draft_distribution
from specdraft.edge.trees import sampled_tree

V = 6
CONTEXT = [0, 1, 2, 3]
DRAFT_ROWS = [np.log([0.5, 0.3, 0.1, 0.05, 0.03, 0.02]), np.log([0.05, 0.1, 0.6, 0.05, 0.1, 0.1])]  # by context parity
P0 = torch.tensor([0.05, 0.4, 0.25, 0.2, 0.1, 0.0])  # the target's row after the context
P1 = torch.tensor([0.1, 0.1, 0.5, 0.0, 0.2, 0.1])  # its row one token later (whatever the token)
SAMPLING = SamplingParams(temperature=1.0)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Rows of 6 entries: torch's thread pool only adds waits (ms per op on a loaded machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


class FakeSession:
    def __init__(self) -> None:
        self.length = 0

    def truncate(self, n: int) -> None:
        self.length = n

    def feed(self, tokens, all_logits=False):
        self.length += len(tokens)
        return [DRAFT_ROWS[self.length % 2]]


class FakeModel:
    def new_session(self) -> FakeSession:
        return FakeSession()


def emitted(seed: int, wrong_q: bool = False) -> list[int]:
    drafter = LocalGuesser(FakeModel(), seed, SAMPLING, q_top_k=3)
    guesses = []

    def main(depth: int):
        while len(guesses) <= depth:
            guesses.append(drafter.guess(CONTEXT + [g.token for g in guesses]))
        return guesses[depth]

    tree = sampled_tree(main, budget=3, threshold=None, alt_below=0.9, siblings=1, max_leaves=4, seed=seed)
    body = json.loads(json.dumps(tree.wire()))
    if wrong_q:  # claims the untruncated row, while the draws came from its top 3
        full = torch.softmax(torch.as_tensor(DRAFT_ROWS[len(CONTEXT) % 2]), -1).tolist()
        body["draft_probs"] = [{"tokens": list(range(V)), "probs": full} for _ in body["tokens"]]
    rows = draft_probs(body["draft_probs"], body["tokens"], body["parents"], V, 64)
    draft = Draft(tuple(body["tokens"]), tuple(body["parents"]), DraftRows(rows, V))
    merged, node_of = _merge_repeats(draft)
    logits = torch.stack([P0.log()] + [P1.log()] * len(merged))  # after any node: P1
    accepted = sampled_acceptance(draft, node_of, logits, SAMPLING, seed, len(CONTEXT))
    return [draft.tokens[n] for n in accepted.path] + [accepted.next_token]


def check(counts: Counter, probs: torch.Tensor) -> tuple[float, float]:
    n = sum(counts.values())
    support = [t for t in range(V) if probs[t] > 0]
    assert all(counts[t] == 0 for t in range(V) if t not in support)
    stat = chisquare([counts[t] for t in support], [float(probs[t]) * n for t in support])
    tv = 0.5 * sum(abs(counts[t] / n - float(probs[t])) for t in range(V))
    return stat.pvalue, tv


def test_the_draft_distribution_is_the_top_k_of_the_warped_row():
    tokens, probs = draft_distribution(DRAFT_ROWS[0], SamplingParams(temperature=0.5), 3)
    assert tokens == (0, 1, 2)
    expected = np.array([0.5, 0.3, 0.1]) ** 2
    assert np.allclose(probs, expected / expected.sum())
    tokens, probs = draft_distribution(DRAFT_ROWS[0], SamplingParams(temperature=1.0, top_p=0.5), 4)
    assert tokens == (0,) and probs == (1.0,)  # top-p keeps the likeliest token alone here


def test_first_and_second_tokens_follow_the_target_distribution():
    n = 6000
    first, second = Counter(), Counter()
    for seed in range(n):
        out = emitted(seed)
        first[out[0]] += 1
        if len(out) > 1:
            second[out[1]] += 1
    pvalue, tv = check(first, P0)
    assert pvalue > 1e-3 and tv < 0.03, (first, pvalue, tv)
    assert first[5] == 0 and first[3] + first[4] > 0  # mass outside q's support comes from the residual
    assert sum(second.values()) > n // 3
    pvalue, tv = check(second, P1)
    assert pvalue > 1e-3 and tv < 0.04, (second, pvalue, tv)


def test_a_q_other_than_the_one_drawn_from_is_caught():
    n = 3000
    first = Counter(emitted(seed, wrong_q=True)[0] for seed in range(n))
    pvalue, tv = check(first, P0)
    assert pvalue < 1e-3, (first, pvalue, tv)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"tokens": [1, 2], "probs": [0.5, 0.4]}, "sum to"),
        ({"tokens": [2, 3], "probs": [0.5, 0.5]}, "no probability"),
        ({"tokens": [1, 1], "probs": [0.5, 0.5]}, "distinct"),
        ({"tokens": [1, 9], "probs": [0.5, 0.5]}, "distinct"),
        ({"tokens": [1, 2], "probs": [1.5, -0.5]}, "(0, 1]"),
        ({"tokens": [1, 2], "probs": [0.5]}, "one per token"),
        ("nope", "an object"),
    ],
)
def test_malformed_draft_distributions_are_refused(bad, message):
    from specdraft.apps.service.protocol.errors import RequestError

    with pytest.raises(RequestError, match=message.replace("(", r"\(").replace("]", r"\]")):
        draft_probs([bad], [1], [-1], V, 64)


def test_siblings_must_share_their_distribution_and_entries_have_a_limit():
    from specdraft.apps.service.protocol.errors import RequestError

    q = {"tokens": [1, 2], "probs": [0.5, 0.5]}
    assert len(draft_probs([q, q], [1, 1], [-1, -1], V, 64)) == 2  # repeated draws are fine
    with pytest.raises(RequestError, match="same distribution"):
        draft_probs([q, {"tokens": [1, 2], "probs": [0.6, 0.4]}], [1, 2], [-1, -1], V, 64)
    with pytest.raises(RequestError, match="at most 1"):
        draft_probs([q], [1], [-1], V, 1)
