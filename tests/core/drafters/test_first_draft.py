from specdraft import Draft
from specdraft.drafters.chain_of_drafters import FirstDraft


class Fixed:
    def __init__(self, tokens):
        self.tokens = tokens
        self.calls = []
        self.observed = []

    def propose(self, context_ids, budget):
        self.calls.append(len(context_ids))
        return Draft.chain(self.tokens[:budget])

    def observe(self, accepted_len):
        self.observed.append(accepted_len)


def test_first_non_empty_draft_wins_and_is_observed():
    empty, full = Fixed([]), Fixed([7, 8])
    drafter = FirstDraft([empty, full])
    assert drafter.propose([1, 2, 3], 4).tokens == (7, 8)
    drafter.observe(1)
    assert full.observed == [1] and empty.observed == []


def test_every_drafter_sees_the_first_call():
    first, second = Fixed([5]), Fixed([6])
    drafter = FirstDraft([first, second])
    drafter.propose([1, 2], 4)
    drafter.propose([1, 2, 5, 9], 4)
    assert first.calls == [2, 4] and second.calls == [2]  # later steps stop at the first draft
