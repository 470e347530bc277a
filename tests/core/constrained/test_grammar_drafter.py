"""GrammarDrafter: forced bytes as drafts, the inner drafter's tokens cut where the grammar refuses
them, the two limits, and the grammar state left as it was."""

import numpy as np
import pytest

from specdraft import Draft, NoDrafter
from specdraft.constrained import Constraint, GrammarCompiler, GrammarDrafter
from specdraft.constrained.grammar import hf_grammar_tokenizer

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "city": {"type": "string"}},
    "required": ["name", "city"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def compiler(tokenizer):
    vocab = len(tokenizer)
    return GrammarCompiler(hf_grammar_tokenizer(tokenizer, vocab, [tokenizer.eos_token_id]), vocab)


class Fixed:
    """Proposes ``tokens`` whatever the context; records budgets and observations."""

    def __init__(self, tokens):
        self.tokens = list(tokens)
        self.budgets: list[int] = []
        self.observed: list[int] = []

    def propose(self, context_ids, budget):
        self.budgets.append(budget)
        return Draft.chain(self.tokens[:budget])

    def observe(self, accepted_len):
        self.observed.append(accepted_len)


def text(tokenizer, draft):
    return tokenizer.decode(list(draft.tokens))


def test_forced_bytes_are_drafted_and_the_state_is_rolled_back(compiler, tokenizer):
    grammar = compiler.grammar(Constraint.json_schema(SCHEMA))
    before = grammar.mask().copy()
    drafter = GrammarDrafter(grammar, compiler.tokenize, NoDrafter())
    draft = drafter.propose_within([1, 2], budget=0, limit=16)
    assert text(tokenizer, draft) == '{"name": "'
    assert np.array_equal(grammar.mask(), before)
    drafter.observe(len(draft))
    assert drafter.forced_drafted == drafter.forced_accepted == len(draft)
    assert drafter.inner_counts(len(draft)) == (0, 0)


def test_inner_tokens_fill_values_and_forced_bytes_follow(compiler, tokenizer):
    grammar = compiler.grammar(Constraint.json_schema(SCHEMA))
    value = tokenizer('Ann", "city": "Rome"}', add_special_tokens=False).input_ids
    drafter = GrammarDrafter(grammar, compiler.tokenize, Fixed(value))
    draft = drafter.propose_within([1], budget=32, limit=64)
    assert text(tokenizer, draft).startswith('{"name": "Ann", "city": "Rome"}')


def test_inner_tokens_stop_at_the_first_refused_one(compiler, tokenizer):
    grammar = compiler.grammar(Constraint.regex("[0-9]+"))
    inner = tokenizer("12ab34", add_special_tokens=False).input_ids
    drafter = GrammarDrafter(grammar, compiler.tokenize, Fixed(inner), max_rounds=1)
    draft = drafter.propose_within([1], budget=8, limit=8)
    assert text(tokenizer, draft) == "12"
    drafter.observe(1)
    assert drafter.inner_counts(1) == (len(draft), 1)


def test_the_budget_limits_the_inner_tokens_and_the_limit_the_draft(compiler, tokenizer):
    grammar = compiler.grammar(Constraint.json_schema(SCHEMA))
    value = tokenizer("Annabelle Lee", add_special_tokens=False).input_ids
    inner = Fixed(value)
    drafter = GrammarDrafter(grammar, compiler.tokenize, inner)
    draft = drafter.propose_within([1], budget=1, limit=64)
    forced = len(compiler.tokenize(b'{"name": "'))
    assert len(draft) == forced + 1 and inner.budgets == [1]
    assert len(drafter.propose_within([1], budget=8, limit=2)) == 2


def test_as_a_plain_drafter_its_budget_is_the_limit_and_the_seam_sets_the_inner_budget(compiler, tokenizer):
    grammar = compiler.grammar(Constraint.json_schema(SCHEMA))
    value = tokenizer("Annabelle Lee", add_special_tokens=False).input_ids
    inner = Fixed(value)
    drafter = GrammarDrafter(grammar, compiler.tokenize, inner)
    assert drafter.propose([1], 64) == drafter.propose_within([1], budget=64, limit=64)  # no inner budget set
    drafter.inner_budget = 1  # what GrammarSelection.draft_size does each step
    assert drafter.propose([1], 64) == drafter.propose_within([1], budget=1, limit=64)
    assert inner.budgets[-2:] == [1, 1]


def test_a_zero_limit_drafts_nothing_but_tells_the_inner_drafter(compiler, tokenizer):
    inner = Fixed([5])
    drafter = GrammarDrafter(compiler.grammar(Constraint.json_schema(SCHEMA)), compiler.tokenize, inner)
    assert len(drafter.propose([1, 2, 3], 0)) == 0 and inner.budgets == [0]


def test_where_the_draft_completes_the_constraint_the_end_tokens_are_leaves(compiler, tokenizer):
    grammar = compiler.grammar(Constraint.regex("(yes|no)"))
    answer = tokenizer("yes", add_special_tokens=False).input_ids
    drafter = GrammarDrafter(grammar, compiler.tokenize, Fixed(answer))
    draft = drafter.propose_within([1], budget=8, limit=8)
    chain = len(answer)
    assert list(draft.tokens) == [*answer, tokenizer.eos_token_id]
    assert draft.parents[-1] == chain - 1  # the end hangs off the chain's last node
    drafter.observe(chain + 1)
    assert drafter.forced_accepted == 1 and drafter.inner_counts(chain + 1) == (chain, chain)
    assert not grammar.finished  # rolled back
