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
