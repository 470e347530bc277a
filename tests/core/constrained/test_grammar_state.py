"""LLGuidanceGrammar on a tiny byte-level vocabulary: allowed tokens, the cheap path, masks, rollback,
forced bytes, and constrained sampling's distribution."""

import math

import numpy as np
import pytest

from specdraft import SamplingParams, TokenChooser
from specdraft.constrained import Constraint, GrammarCompiler
from specdraft.constrained.grammar import hf_grammar_tokenizer

YES_NO = Constraint.regex("(yes|no|maybe)")


@pytest.fixture(scope="module")
def compiler(tokenizer):
    vocab = len(tokenizer)
    return GrammarCompiler(hf_grammar_tokenizer(tokenizer, vocab, [tokenizer.eos_token_id]), vocab)


def ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False).input_ids


def test_allows_and_mask_agree(compiler, tokenizer):
    grammar = compiler.grammar(YES_NO)
    mask = grammar.mask()
    assert mask.shape == (len(tokenizer),)
    allowed = set(np.flatnonzero(mask).tolist())
    assert allowed and all(grammar.allows(t) for t in allowed)
    assert not any(grammar.allows(t) for t in range(len(tokenizer)) if t not in allowed)
    assert all(tokenizer.decode([t]) and "yes no maybe".find(tokenizer.decode([t])[0]) >= 0 for t in allowed)


def test_greedy_choice_is_the_masked_argmax(compiler, tokenizer):
    rng = np.random.default_rng(0)
    chooser = TokenChooser()
    for _ in range(20):
        grammar = compiler.grammar(YES_NO)
        row = rng.normal(size=len(tokenizer)).astype(np.float32)
        masked = np.where(grammar.mask(), row, -np.inf)
        assert grammar.choose(row, chooser, 0) == int(np.argmax(masked))


def test_the_cheap_path_keeps_an_allowed_argmax(compiler, tokenizer):
    grammar = compiler.grammar(YES_NO)
    token = ids(tokenizer, "y")[0]
    row = np.zeros(len(tokenizer), dtype=np.float32)
    row[token] = 5.0
    assert grammar.choose(row, TokenChooser(), 0) == token


def test_advance_stops_at_the_first_refused_token_and_rollback_restores(compiler, tokenizer):
    grammar = compiler.grammar(YES_NO)
    before = grammar.mask().copy()
    tokens = ids(tokenizer, "maybe") + ids(tokenizer, "x")
    taken = grammar.advance(tokens)
    assert taken == len(ids(tokenizer, "maybe"))
    assert grammar.finished
    assert grammar.mask()[tokenizer.eos_token_id] and grammar.mask().sum() == 1  # only the end now
    grammar.rollback(taken)
    assert np.array_equal(grammar.mask(), before)


def test_forced_bytes(compiler, tokenizer):
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    grammar = compiler.grammar(Constraint.json_schema(schema))
    assert grammar.forced_bytes() == b'{"name": "'
    assert compiler.tokenize(b'{"name": "') and tokenizer.decode(compiler.tokenize(b'{"name": "')) == '{"name": "'


def test_compiled_grammars_are_reused_but_states_are_separate(compiler, tokenizer):
    first = compiler.grammar(YES_NO)
    first.advance(ids(tokenizer, "no"))
    second = compiler.grammar(YES_NO)
    assert not second.finished and first.finished


def test_constrained_sampling_draws_from_the_masked_renormalised_distribution(compiler, tokenizer):
    """Keyed draws at 4,000 positions against softmax(logits / T) restricted to the allowed tokens."""
    from scipy.stats import chisquare

    grammar = compiler.grammar(YES_NO)
    allowed = np.flatnonzero(grammar.mask())
    rng = np.random.default_rng(1)
    row = rng.normal(scale=2.0, size=len(tokenizer)).astype(np.float32)
    row[allowed[0]] -= 1.0
    chooser = TokenChooser(SamplingParams(temperature=0.7), seed=5)
    draws = [grammar.choose(row, chooser, position) for position in range(4000)]
    assert set(draws) <= set(allowed.tolist())
    logits = row[allowed].astype(np.float64) / 0.7
    expected = np.exp(logits - logits.max())
    expected /= expected.sum()
    observed = np.array([draws.count(int(t)) for t in allowed])
    keep = expected * len(draws) >= 5  # chi-square needs expected counts of 5 or more
    rest = observed[~keep].sum(), expected[~keep].sum() * len(draws)
    f_obs = np.append(observed[keep], rest[0])
    f_exp = np.append(expected[keep] * len(draws), rest[1])
    assert math.isclose(f_obs.sum(), f_exp.sum(), rel_tol=1e-6)
    assert chisquare(f_obs, f_exp).pvalue > 1e-3
