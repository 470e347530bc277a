import pytest
import torch

from specdraft import ROOT, Draft


def test_chain_shape():
    draft = Draft.chain([5, 6, 7])
    assert draft.parents == (ROOT, 0, 1)
    assert draft.is_chain and draft.depths == (1, 2, 3) and draft.max_depth == 3
    assert draft.children(ROOT) == (0,) and draft.children(2) == ()


def test_tree_paths_and_ancestor_mask():
    #        ROOT
    #       /    \
    #      0(a)   1(b)
    #      |      |  \
    #      2(c)   3(d) 4(e)
    draft = Draft((10, 11, 12, 13, 14), (ROOT, ROOT, 0, 1, 1))
    assert not draft.is_chain
    assert draft.path_to(4) == [1, 4]
    assert draft.children(1) == (3, 4)
    mask = draft.ancestor_mask()
    assert mask[4].tolist() == [False, True, False, False, True]
    assert mask[2].tolist() == [True, False, True, False, False]


def test_truncated_prefix_is_a_valid_tree():
    draft = Draft((10, 11, 12, 13), (ROOT, ROOT, 0, 1), torch.full((4, 20), 0.05))
    cut = draft.truncated(3)
    assert cut.tokens == (10, 11, 12) and cut.parents == (ROOT, ROOT, 0) and cut.probs.shape == (3, 20)
    assert draft.truncated(10) is draft


@pytest.mark.parametrize(
    "tokens, parents, message",
    [
        ((1, 2), (ROOT,), "parents"),
        ((1, 2), (ROOT, 1), "precede"),
        ((1, 1), (ROOT, ROOT), "twice"),
    ],
)
def test_invalid_drafts_are_rejected(tokens, parents, message):
    with pytest.raises(ValueError, match=message):
        Draft(tokens, parents)


def test_probs_must_match_nodes():
    with pytest.raises(ValueError, match="probs"):
        Draft.chain([1, 2], torch.ones(3, 10))


def test_from_branches_merges_shared_prefixes_in_order():
    draft = Draft.from_branches([[1, 2, 3], [1, 2, 4], [5], [], [1, 6]])
    assert draft.tokens == (1, 2, 3, 4, 5, 6)
    assert draft.parents == (ROOT, 0, 1, 1, ROOT, 0)


def test_from_branches_respects_the_node_budget_branch_by_branch():
    draft = Draft.from_branches([[1, 2, 3], [4, 5, 6]], max_nodes=4)
    assert draft.tokens == (1, 2, 3, 4) and draft.parents == (ROOT, 0, 1, ROOT)


def test_leaves():
    draft = Draft((10, 11, 12, 13, 14), (ROOT, ROOT, 0, 1, 1))
    assert draft.leaves == (2, 3, 4)


def test_deterministic_drops_distributions_and_merges_repeated_siblings():
    # sampled siblings may repeat a token: 0 and 1 are both 5; their children join under one node
    draft = Draft((5, 5, 7, 8), (ROOT, ROOT, 0, 1), torch.full((4, 10), 0.1))
    plain = draft.deterministic()
    assert plain.probs is None
    assert plain.tokens == (5, 7, 8) and plain.parents == (ROOT, 0, 0)
    assert Draft.chain([1, 2]).deterministic() == Draft.chain([1, 2])


def test_merged_nodes_map_each_node_to_its_node_in_the_deterministic_tree():
    draft = Draft((5, 5, 7, 8), (ROOT, ROOT, 0, 1), torch.full((4, 10), 0.1))
    assert draft.merged_nodes == (0, 0, 1, 2)
    plain = draft.deterministic()
    assert all(plain.tokens[m] == t for m, t in zip(draft.merged_nodes, draft.tokens))
    assert Draft.chain([1, 2]).merged_nodes == (0, 1)


def test_pruned_keeps_the_longest_prefix_with_few_enough_leaves():
    draft = Draft((1, 2, 3, 4, 5, 6), (ROOT, 0, ROOT, 2, ROOT, 1))  # leaves: 3 (via 2), 4, 5 (via 1)
    assert len(draft.leaves) == 3
    two = draft.pruned(2)
    assert two.tokens == (1, 2, 3, 4) and len(two.leaves) == 2
    one = draft.pruned(1)
    assert one.tokens == (1, 2) and one.is_chain
    assert draft.pruned(3) is draft
