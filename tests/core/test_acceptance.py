"""Acceptance rules on hand-built logits: greedy cases, trees, and the sampling distribution."""

from collections import Counter

import pytest
import torch
from scipy.stats import chisquare

from specdraft import ROOT, Draft, greedy_accept, speculative_accept
from specdraft.sampling import PositionalRandom

V = 6


def logits_choosing(*tokens: int) -> torch.Tensor:
    """Logits ``[len(tokens), V]`` whose row i has its argmax at tokens[i]."""
    logits = torch.zeros(len(tokens), V)
    for row, token in enumerate(tokens):
        logits[row, token] = 5.0
    return logits


def test_perfect_match_accepts_all_plus_bonus():
    result = greedy_accept(Draft.chain([1, 2, 3]), logits_choosing(1, 2, 3, 4))
    assert result.path == (0, 1, 2) and result.next_token == 4


def test_early_mismatch_keeps_prefix_and_takes_target_token():
    result = greedy_accept(Draft.chain([1, 2, 3]), logits_choosing(1, 5, 3, 4))
    assert result.path == (0,) and result.next_token == 5


def test_first_token_mismatch():
    result = greedy_accept(Draft.chain([1, 2]), logits_choosing(0, 2, 3))
    assert result.path == () and result.next_token == 0


def test_empty_draft_is_plain_decoding():
    result = greedy_accept(Draft.empty(), logits_choosing(3))
    assert result.path == () and result.next_token == 3


def test_tree_follows_the_matching_branch():
    # ROOT -> 0:(1) -> 2:(2); ROOT -> 1:(4) -> 3:(5) -> 4:(0)
    draft = Draft((1, 4, 2, 5, 0), (ROOT, ROOT, 0, 1, 3))
    # rows: ROOT, node0, node1, node2, node3, node4
    logits = logits_choosing(4, 0, 5, 0, 0, 3)
    result = greedy_accept(draft, logits)
    assert result.path == (1, 3, 4) and result.next_token == 3


def test_tree_equals_best_branch_verified_as_chain():
    torch.manual_seed(0)
    draft = Draft((1, 4, 2, 5, 0, 3), (ROOT, ROOT, 0, 1, 3, 1))
    for _ in range(200):
        logits = torch.randn(1 + len(draft), V)
        logits[:, :2] += 1.0  # make matches likelier
        tree = greedy_accept(draft, logits)
        best = None
        for leaf in (2, 4, 5):
            branch = draft.path_to(leaf)
            rows = torch.stack([logits[0]] + [logits[1 + node] for node in branch])
            chain = greedy_accept(Draft.chain([draft.tokens[n] for n in branch]), rows)
            if best is None or len(chain.path) > len(best[0]):
                best = ([branch[i] for i in chain.path], chain.next_token)
        assert list(tree.path) == best[0] and tree.next_token == best[1]


def output_first_token(draft: Draft, result) -> int:
    return draft.tokens[result.path[0]] if result.path else result.next_token


def assert_matches(counts: Counter, probs: torch.Tensor, n: int) -> None:
    observed = [counts.get(t, 0) for t in range(len(probs))]
    support = [t for t in range(len(probs)) if probs[t] > 0]
    assert all(observed[t] == 0 for t in range(len(probs)) if t not in support)
    expected = [float(probs[t]) * n for t in support]
    stat = chisquare([observed[t] for t in support], expected)
    assert stat.pvalue > 1e-3, (observed, expected)


P = torch.tensor([0.05, 0.4, 0.25, 0.2, 0.1, 0.0])
Q = torch.tensor([0.3, 0.1, 0.1, 0.4, 0.1, 0.0])


@pytest.mark.parametrize("kind", ["deterministic chain", "sampled chain", "deterministic tree", "sampled tree"])
def test_first_token_distribution_is_the_target_distribution(kind):
    n = 20000
    generator = torch.Generator().manual_seed(1234)
    target = torch.stack([P, P.roll(1), P.roll(2), P.roll(3)])  # rows for ROOT and up to 3 nodes
    counts = Counter()
    for i in range(n):
        if kind == "deterministic chain":
            draft = Draft.chain([3, 1])
        elif kind == "deterministic tree":
            draft = Draft((3, 0, 2), (ROOT, ROOT, 0))
        else:
            first = int(torch.multinomial(Q, 1, generator=generator))
            if kind == "sampled chain":
                draft = Draft.chain([first], Q[None])
            else:  # two independent samples of q as siblings (SpecInfer)
                second = int(torch.multinomial(Q, 1, generator=generator))
                draft = Draft((first, second), (ROOT, ROOT), torch.stack([Q, Q]))
        result = speculative_accept(draft, target[: 1 + len(draft)], PositionalRandom(i), 0)
        counts[output_first_token(draft, result)] += 1
    assert_matches(counts, P, n)


def test_second_token_distribution_after_accepted_node():
    """Once node 0 is kept, the next output token follows the target's next row, whichever token
    node 0 was (the crafted target's rows do not depend on it)."""
    n = 30000
    generator = torch.Generator().manual_seed(7)
    row1 = torch.tensor([0.1, 0.1, 0.5, 0.0, 0.2, 0.1])
    target = torch.stack([P, row1, P])
    counts = Counter()
    kept = 0
    for i in range(n):
        tokens = torch.multinomial(Q, 2, replacement=True, generator=generator).tolist()
        draft = Draft.chain(tokens, torch.stack([Q, Q]))
        result = speculative_accept(draft, target, PositionalRandom(i), 0)
        if not result.path:
            continue
        second = draft.tokens[result.path[1]] if len(result.path) > 1 else result.next_token
        counts[second] += 1
        kept += 1
    assert kept > n // 3
    assert_matches(counts, row1, kept)


def test_same_seed_same_result():
    draft = Draft.chain([3, 1], torch.stack([Q, Q]))
    target = torch.stack([P, P, P])
    runs = [[speculative_accept(draft, target, PositionalRandom(seed), 10) for seed in range(50)] for _ in range(2)]
    assert runs[0] == runs[1]


def test_sample_and_compare_draws_what_plain_sampling_draws():
    """With a deterministic draft, the token at each position is the one plain sampling draws."""
    target = torch.stack([P, P.roll(1), P.roll(2)])
    for seed in range(200):
        rng = PositionalRandom(seed)
        result = speculative_accept(Draft.chain([1, 2]), target, rng, 5)
        tokens = [1, 2][: len(result.path)] + [result.next_token]
        plain = [int(torch.multinomial(target[i], 1, generator=rng.generator(5 + i))) for i in range(len(tokens))]
        assert tokens == plain
