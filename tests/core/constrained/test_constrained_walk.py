"""The constraint seam's walk (``GrammarSelection.follow``) with crafted logits: the target's choice is the
masked one at every draft position."""

import numpy as np
import pytest

from specdraft import ROOT, Draft, TokenChooser, Verification
from specdraft.constrained import Constraint, GrammarCompiler, GrammarSelection, GrammarUnavailableError
from specdraft.constrained.grammar import hf_grammar_tokenizer


@pytest.fixture(scope="module")
def compiler(tokenizer):
    vocab = len(tokenizer)
    return GrammarCompiler(hf_grammar_tokenizer(tokenizer, vocab, [tokenizer.eos_token_id]), vocab)


def single(tokenizer, text):
    [token] = tokenizer(text, add_special_tokens=False).input_ids
    return token


def logits_for(vocab, rows):
    """One row per entry: the favourite token gets 10, a runner-up 5 (None: no runner-up)."""
    out = np.zeros((len(rows), vocab), dtype=np.float32)
    for i, (best, second) in enumerate(rows):
        out[i, best] = 10.0
        if second is not None:
            out[i, second] = 5.0
    return out


def verify(draft, logits):
    return Verification.from_logits(logits, draft, 0, TokenChooser())


def masked_walk(draft, verification, grammar, chooser, position, eos=None):
    """The seam's walk under ``grammar``; ``eos`` (the tokenizer's) ends the answer unconsumed."""
    return GrammarSelection(grammar, chooser, frozenset({eos})).follow(draft, verification, position)


def test_a_draft_the_grammar_allows_is_accepted(compiler, tokenizer):
    a, b = single(tokenizer, "a"), single(tokenizer, "b")
    grammar = compiler.grammar(Constraint.regex("ab+"))
    draft = Draft.chain([a, b])
    accepted = masked_walk(
        draft, verify(draft, logits_for(len(tokenizer), [(a, None), (b, None), (b, None)])), grammar, TokenChooser(), 0
    )
    assert accepted.path == (0, 1) and accepted.next_token == b


def test_the_unmasked_argmax_is_rejected_where_the_grammar_refuses_it(compiler, tokenizer):
    a, b, c = single(tokenizer, "a"), single(tokenizer, "b"), single(tokenizer, "c")
    grammar = compiler.grammar(Constraint.regex("ab+"))
    draft = Draft.chain([a, c])  # the model's favourite after "a" is "c", which the grammar refuses
    logits = logits_for(len(tokenizer), [(a, None), (c, b), (b, None)])
    accepted = masked_walk(draft, verify(draft, logits), grammar, TokenChooser(), 0)
    assert accepted.path == (0,) and accepted.next_token == b  # the masked argmax replaces the drafted "c"


def test_trees_follow_the_allowed_child_and_the_grammar_advances_on_the_path_only(compiler, tokenizer):
    a, b, c = single(tokenizer, "a"), single(tokenizer, "b"), single(tokenizer, "c")
    grammar = compiler.grammar(Constraint.regex("a(b|c)c"))
    #                   0  1  2  3
    draft = Draft((a, b, c, c), (ROOT, 0, 0, 2))  # a -> b | a -> c -> c
    logits = logits_for(len(tokenizer), [(a, None), (c, b), (c, None), (c, None), (c, None)])
    accepted = masked_walk(draft, verify(draft, logits), grammar, TokenChooser(), 0, tokenizer.eos_token_id)
    assert accepted.path == (0, 2, 3)
    assert grammar.finished  # advanced over a, c, c: the only place left is the end


def test_choices_only_are_refused(compiler, tokenizer):
    grammar = compiler.grammar(Constraint.regex("a"))
    with pytest.raises(GrammarUnavailableError, match="needs the target's logits"):
        masked_walk(Draft.empty(), Verification.from_choices([1]), grammar, TokenChooser(), 0)
