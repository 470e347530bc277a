"""Stats' acceptance by draft position: counted by ``record_step`` from hand-built steps, and by the
engine from crafted drafts (oracle drafters on the tiny model), always summing to the totals and
agreeing with the accepted-length histogram."""

from collections import Counter

import pytest
from oracle import OracleDrafter, Recording

from specdraft import GenerationConfig, SpeculationConfig, SpeculativeGenerator, Stats

DRAFT_LEN = 5
N_NEW = 30


def check_consistent(stats: Stats) -> None:
    """The per-position counts sum to the totals and say what the histogram says."""
    drafted, accepted = stats.position_lists()
    assert len(drafted) == len(accepted)
    assert sum(drafted) == stats.drafted_tokens and sum(accepted) == stats.accepted_tokens
    reached = [
        sum(steps for length, steps in stats.accepted_length_histogram.items() if length > i)
        for i in range(len(accepted))
    ]
    assert accepted == reached


# --- record_step by hand ----------------------------------------------------------------------------
def test_a_chain_counts_one_token_per_position():
    stats = Stats()
    stats.record_step(drafted=4, accepted=2)
    assert stats.position_lists() == ([1, 1, 1, 1], [1, 1, 0, 0])
    assert stats.draft_steps == 1
    check_consistent(stats)


def test_an_empty_draft_is_a_step_but_not_a_draft():
    stats = Stats()
    stats.record_step(drafted=0, accepted=0)
    assert stats.verify_steps == 1 and stats.draft_steps == 0
    assert stats.position_lists() == ([], [])
    assert stats.accepted_length_histogram == Counter({0: 1})


def test_a_tree_counts_every_node_at_its_depth():
    stats = Stats()
    # two roots; the second has two children, one of which has a child: depths 1, 1, 2, 2, 3
    stats.record_step(drafted=5, accepted=3, depths=(1, 1, 2, 2, 3))
    assert stats.position_lists() == ([2, 2, 1], [1, 1, 1])
    check_consistent(stats)


def test_a_rejected_first_token_accepts_no_position():
    stats = Stats()
    stats.record_step(drafted=3, accepted=0)
    assert stats.position_lists() == ([1, 1, 1], [0, 0, 0])
    assert stats.draft_steps == 1


def test_steps_add_up_and_existing_counts_are_unchanged():
    stats = Stats()
    for drafted, accepted in [(4, 4), (4, 1), (0, 0), (2, 0), (6, 3)]:
        stats.record_step(drafted, accepted)
    assert (stats.verify_steps, stats.drafted_tokens, stats.accepted_tokens) == (5, 16, 8)
    assert stats.accepted_length_histogram == Counter({4: 1, 1: 1, 0: 2, 3: 1})
    assert stats.draft_steps == 4
    assert stats.position_lists() == ([4, 4, 3, 3, 1, 1], [3, 2, 2, 1, 0, 0])
    check_consistent(stats)


def test_merged_adds_the_positions_of_its_parts():
    first, second = Stats(), Stats()
    first.record_step(2, 2)
    second.record_step(4, 1)
    second.record_step(0, 0)
    total = Stats.merged([first, second])
    assert total.draft_steps == 2
    assert total.position_lists() == ([2, 2, 1, 1], [2, 1, 0, 0])
    assert total.accepted_length_histogram == Counter({2: 1, 1: 1, 0: 1})
    check_consistent(total)


# --- the engine, with crafted drafts ----------------------------------------------------------------
@pytest.fixture(scope="module")
def reference(tiny_model, tokenizer):
    """(prompt ids, the target's own greedy continuation of N_NEW tokens)."""
    prompt_ids = tokenizer("The quick brown fox").input_ids
    plain = SpeculativeGenerator(tiny_model).generate(prompt_ids, None, GenerationConfig(max_new_tokens=N_NEW))
    return prompt_ids, plain.token_ids


class BudgetRecording(Recording):
    """Keeps every draft as the generator verifies it: cut to the budget it was asked for (the
    oracle's trees hold two nodes more than the budget)."""

    def propose(self, context_ids, budget):
        draft = self.drafter.propose(context_ids, budget)
        self.drafts.append(draft.truncated(budget))
        return draft


def generate(model, reference, mode: str):
    """The speculative result with an oracle drafter in ``mode``, and every non-empty draft it sent."""
    prompt_ids, continuation = reference
    drafter = BudgetRecording(OracleDrafter(prompt_ids + continuation, model.vocab_size, mode))
    speculation = SpeculationConfig(initial_draft_len=DRAFT_LEN, adaptive=False)
    result = SpeculativeGenerator(model, speculation).generate(
        prompt_ids, drafter, GenerationConfig(max_new_tokens=N_NEW)
    )
    assert result.token_ids == continuation
    return result, [draft for draft in drafter.drafts if len(draft)]


def reaching(drafts, position: int) -> int:
    """How many of the chain ``drafts`` hold a token at ``position``."""
    return sum(len(draft) > position for draft in drafts)


def test_right_drafts_are_accepted_at_every_position(tiny_model, reference):
    result, drafts = generate(tiny_model, reference, "right")
    stats = result.stats
    drafted, accepted = stats.position_lists()
    assert drafted == accepted == [reaching(drafts, i) for i in range(DRAFT_LEN)]
    assert stats.draft_steps == len(drafts) > 1
    check_consistent(stats)


def test_wrong_drafts_are_accepted_nowhere(tiny_model, reference):
    result, drafts = generate(tiny_model, reference, "wrong")
    drafted, accepted = result.stats.position_lists()
    assert drafted == [reaching(drafts, i) for i in range(DRAFT_LEN)]
    assert accepted == [0] * DRAFT_LEN
    assert result.stats.draft_steps == len(drafts) > 1
    check_consistent(result.stats)


def test_every_third_token_wrong_stops_acceptance_at_position_two(tiny_model, reference):
    result, drafts = generate(tiny_model, reference, "partly")  # draft tokens 3, 6, ... are wrong
    drafted, accepted = result.stats.position_lists()
    assert drafted == [reaching(drafts, i) for i in range(DRAFT_LEN)]
    assert accepted == [reaching(drafts, 0), reaching(drafts, 1), 0, 0, 0]
    check_consistent(result.stats)


def tree_accepted(nodes: int) -> int:
    """How far the true branch of the oracle's tree reaches when the tree is cut to its first
    ``nodes`` nodes: node 0 is a wrong root, node 1 the true root, node 2 a wrong child of node 1,
    node 3 the true one, and nodes 4.. continue the true chain (node ``k`` at depth ``k - 1``)."""
    return {0: 0, 1: 0, 2: 1, 3: 1}.get(nodes, nodes - 2)


def test_tree_drafts_count_siblings_at_their_position(tiny_model, reference):
    """A full-size tree (DRAFT_LEN nodes, depths 1, 1, 2, 2, 3) sends two draft tokens at positions 0
    and 1 and one at position 2, and the true branch is accepted through all three."""
    result, kept = generate(tiny_model, reference, "tree")
    stats = result.stats
    assert sum(draft.depths == (1, 1, 2, 2, 3) for draft in kept) > 1, "the test should see full-size trees"
    assert stats.drafted_by_position == Counter(depth - 1 for draft in kept for depth in draft.depths)
    assert stats.accepted_by_position == Counter(i for draft in kept for i in range(tree_accepted(len(draft))))
    assert stats.draft_steps == len(kept)
    check_consistent(stats)
