import pytest

from specdraft.cost import PassCostProfile
from specdraft.policy import SpeculationConfig, SpeculationPolicy, expected_tokens


def profile(one: float, per_token: float) -> PassCostProfile:
    """A measured profile where a pass over n tokens costs ``one + per_token * (n - 1)``."""
    cost = PassCostProfile()
    for n in (1, 2, 4, 8, 16, 32, 64, 128):
        cost.record(n, one + per_token * (n - 1))
    return cost


def test_expected_tokens():
    assert expected_tokens(0.0, 5) == 1.0
    assert expected_tokens(1.0, 5) == 6.0
    assert expected_tokens(0.5, 2) == pytest.approx(1.75)


def test_draft_length_grows_on_full_acceptance_and_shrinks_on_early_rejection():
    policy = SpeculationPolicy(SpeculationConfig(max_draft_len=64), profile(one=1.0, per_token=0.05))
    start = policy.budget()
    for _ in range(5):
        k = policy.budget()
        policy.observe(k, k, k)
    grown = policy.budget()
    assert grown > start
    for _ in range(5):
        k = policy.budget()
        policy.observe(k, k, 0)
    assert 0 < policy.budget() < grown


def test_draft_length_is_longer_where_passes_are_cheap():
    """The same acceptance rate buys longer drafts on a device where wide passes cost little (GPU)."""
    lengths = {}
    for name, per_token in (("gpu-like", 0.001), ("cpu-like", 0.15)):
        policy = SpeculationPolicy(SpeculationConfig(max_draft_len=128), profile(one=1.0, per_token=per_token))
        for _ in range(10):
            policy.observe(8, 8, 6)
        lengths[name] = policy.budget()
    assert lengths["gpu-like"] > lengths["cpu-like"] > 0


def test_falls_back_when_speculation_does_not_pay_and_probes_again():
    config = SpeculationConfig(initial_draft_len=8, backoff=3)
    policy = SpeculationPolicy(config, profile(one=1.0, per_token=0.5))  # wide passes are dear
    for _ in range(6):
        k = policy.budget()
        if k == 0:
            break
        policy.observe(k, k, 0)  # nothing accepted
    assert policy.budget() == 0 or policy.falling_back
    plain = 0
    while policy.falling_back:
        assert policy.budget() == 0
        policy.observe(0, 0, 0)
        plain += 1
    assert plain == 3
    assert policy.budget() == 1  # the probe: passes this dear make the prior draft nothing, so one token


def test_probes_are_as_long_as_the_prior_would_draft_here():
    """After a fall-back the probe is the prior's best length on this device, within
    [min_draft_len, initial_draft_len]: long where wide passes are cheap, short where dear."""
    config = SpeculationConfig(initial_draft_len=8, backoff=1)
    lengths = {}
    for name, per_token in (("cheap", 0.01), ("dear", 0.3)):
        policy = SpeculationPolicy(config, profile(one=1.0, per_token=per_token))
        while not policy.falling_back:
            k = policy.budget()
            if k:
                policy.observe(k, k, 0)
        while policy.falling_back:
            assert policy.budget() == 0
            policy.observe(0, 0, 0)
        lengths[name] = policy.budget()
    assert 1 <= lengths["dear"] < lengths["cheap"] <= 8


def test_keeps_speculating_when_it_pays():
    policy = SpeculationPolicy(SpeculationConfig(), profile(one=1.0, per_token=0.05))
    for _ in range(20):
        k = policy.budget()
        assert k > 0
        policy.observe(k, k, k - 1)
    assert not policy.falling_back


def test_measures_a_plain_step_when_its_cost_is_unknown():
    cost = PassCostProfile()
    cost.record(9, 2.0)
    policy = SpeculationPolicy(SpeculationConfig(window=2), cost)
    for _ in range(2):
        assert policy.budget() == 8
        policy.observe(8, 8, 3)
    assert policy.budget() == 0  # measure a 1-token pass
    cost.record(1, 1.0)
    policy.observe(0, 0, 0)
    assert policy.budget() > 0


def test_fixed_length_when_not_adaptive():
    policy = SpeculationPolicy(SpeculationConfig(initial_draft_len=5, adaptive=False), profile(1.0, 10.0))
    for _ in range(10):
        assert policy.budget() == 5
        policy.observe(5, 5, 0)


def test_cost_profile_interpolates():
    cost = PassCostProfile()
    assert cost.estimate(4) is None
    cost.record(1, 1.0)
    cost.record(16, 4.0)
    assert cost.estimate(1) == 1.0
    assert 1.0 < cost.estimate(8) < 4.0
    assert cost.estimate(64) == 4.0 + (4.0 - 1.0) / 15 * 48  # the line through the two largest sizes


def test_an_estimator_answers_as_estimate_did_when_it_was_made():
    cost = PassCostProfile()
    for n, seconds in ((1, 1.0), (4, 1.5), (16, 2.0), (32, 5.0), (128, 6.0)):
        cost.record(n, seconds)
    estimate = cost.estimator()
    assert [estimate(n) for n in range(1, 600)] == [cost.estimate(n) for n in range(1, 600)]
    cost.record(8, 1.1)  # a later measurement changes the profile, not an estimator made before it
    assert estimate(8) != cost.estimate(8) and cost.estimator()(8) == cost.estimate(8)
    assert PassCostProfile().estimator()(4) is None


def test_slow_drafters_get_shorter_drafts_or_none():
    cost = profile(one=1.0, per_token=0.05)
    fast, slow = SpeculationPolicy(SpeculationConfig(), cost), SpeculationPolicy(SpeculationConfig(), cost)
    for _ in range(10):
        fast.observe(8, 8, 5, draft_seconds=0.0)
        slow.observe(8, 8, 5, draft_seconds=8 * 0.8)  # a draft token costs 80% of a target pass
    assert fast.best_length() > slow.best_length()
    for _ in range(10):
        slow.observe(8, 8, 1, draft_seconds=8 * 0.8)
    assert slow.best_length() == 0


def test_cost_estimates_never_decrease_with_size():
    cost = PassCostProfile()
    cost.record(1, 2.0)
    cost.record(4, 1.0)  # a wider pass measured cheaper
    cost.record(16, 5.0)
    estimate = cost.estimator()
    assert estimate(4) == 2.0 and estimate(2) == 2.0  # raised to the narrower pass's cost
    assert all(estimate(n) <= estimate(n + 1) for n in range(1, 100))


def test_a_contended_timing_above_the_others_line_is_ignored():
    """Noise only adds time, and a pass's cost is convex in its size: the estimate is the lower convex
    hull of the measured points, so one slow timing does not price its neighbours out of the policy."""
    cost = PassCostProfile()
    for n, seconds in ((1, 1.0), (5, 3.0), (16, 2.5)):  # 5 tokens contended
        cost.record(n, seconds)
    assert cost.estimate(8) == 1.0 + 1.5 * 7 / 15 and cost.estimate(16) == 2.5
    assert cost.estimate(5) == cost.estimate(8)  # charged as its bucket's top
    assert cost.snapshot() == {1: 1.0, 5: 3.0, 16: 2.5}  # the points themselves are reported as measured


def test_one_short_full_acceptance_does_not_send_the_next_draft_far():
    """The prior counts as ``prior_weight`` tokens seen: a 4-of-4 draft moves a 0.8 prior to ~0.91
    (to ~0.96 with a weight of 1) and the next draft grows less."""
    lengths = {}
    for weight in (1.0, 4.0):
        config = SpeculationConfig(initial_draft_len=16, max_draft_len=64, prior_alpha=0.8, prior_weight=weight)
        policy = SpeculationPolicy(config, profile(one=1.0, per_token=0.067))
        policy.observe(policy.budget(), 4, 4)  # the drafter had only 4 tokens, all accepted
        lengths[weight] = (round(policy.alpha, 2), policy.budget())
    assert lengths[4.0][0] == 0.91 and lengths[1.0][0] == 0.96
    assert lengths[4.0][1] < lengths[1.0][1]
    with pytest.raises(ValueError, match="prior_weight"):
        SpeculationConfig(prior_weight=0.0)


def test_plain_first_step_drafts_from_the_second_step_only_where_the_first_is_free(tiny_model, tokenizer):
    """The first step is plain where the prefill already chose the first token (transformers); it
    drafts where the first verification costs a pass or a round trip anyway (an engine, a remote
    server), and when ``plain_first_step`` is off. Same tokens in every case."""
    from specdraft import GenerationConfig, SpeculativeGenerator
    from specdraft.drafters import PromptLookupDrafter

    class Recording(PromptLookupDrafter):
        def __init__(self) -> None:
            super().__init__()
            self.contexts: list[int] = []

        def propose(self, context, budget):
            self.contexts.append((len(context), budget))
            return super().propose(context, budget)

    class FirstVerifyCostsAPass:  # a target whose prefill leaves the first token to the first verify
        prefill_predicts_next = False

        def __init__(self, inner) -> None:
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

    class EngineLikeModel:
        def __init__(self, inner) -> None:
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def new_target(self, chooser):
            return FirstVerifyCostsAPass(self.inner.new_target(chooser))

    prompt_ids = tokenizer("The dog sleeps. The dog sleeps. The dog").input_ids
    # seeded: the policy decides from the nominal pass costs, not from timings a loaded machine skews
    # (measured costs once made the first drafting step fall back to plain, which this test is not about)
    config = GenerationConfig(max_new_tokens=12, ignore_eos=True, seed=0)
    plain = SpeculativeGenerator(tiny_model).generate(prompt_ids, None, config)
    n = len(prompt_ids)
    cases = [(tiny_model, True, [(n, 0), n + 1]), (EngineLikeModel(tiny_model), True, [n]), (tiny_model, False, [n])]
    for model, first_plain, first_calls in cases:
        drafter = Recording()
        speculation = SpeculationConfig(plain_first_step=first_plain)
        result = SpeculativeGenerator(model, speculation, prefix_cache=False).generate(prompt_ids, drafter, config)
        assert result.token_ids == plain.token_ids
        # a plain first step still shows the drafter the prompt alone (budget 0): where the output starts
        calls = drafter.contexts[: len(first_calls)]
        assert [c if isinstance(want, tuple) else c[0] for c, want in zip(calls, first_calls)] == first_calls
        assert all(budget > 0 for _, budget in drafter.contexts[1:])
    assert SpeculationConfig().plain_first_step  # on by default


def test_plain_first_step_saves_the_first_pass_and_changes_no_token(tiny_model, tokenizer):
    """On the transformers target the prefill chose the first token: a plain first step needs no
    pass, where a refused draft there cost one. Same tokens either way."""
    from specdraft import GenerationConfig, SpeculativeGenerator
    from specdraft.drafters import PromptLookupDrafter

    prompt_ids = tokenizer("The dog sleeps. The dog sleeps. The dog").input_ids
    config = GenerationConfig(max_new_tokens=12, ignore_eos=True)
    plain = SpeculativeGenerator(tiny_model).generate(prompt_ids, None, config)
    results = {}
    for first in (False, True):
        speculation = SpeculationConfig(plain_first_step=first)
        results[first] = SpeculativeGenerator(tiny_model, speculation, prefix_cache=False).generate(
            prompt_ids, PromptLookupDrafter(), config
        )
        assert results[first].token_ids == plain.token_ids
    # passes: the prefill, then one per step, except a first step without a draft
    assert results[True].stats.target_forward_passes == results[True].stats.verify_steps
    assert results[False].stats.target_forward_passes == results[False].stats.verify_steps + 1  # it drafted "dog ..."


def test_one_contended_pass_timing_does_not_move_the_cost_estimate_but_a_lasting_change_does():
    cost = PassCostProfile(window=5)
    for _ in range(3):
        cost.record(8, 1.0)
    cost.record(8, 9.0)  # one pass slowed by another process
    assert cost.estimate(8) == 1.0
    cost.record(8, 1.1)
    assert cost.estimate(8) == 1.0
    for _ in range(3):
        cost.record(8, 3.0)  # the device got slower for good: 3 of the last 5 agree
    assert cost.estimate(8) == 3.0
    first = PassCostProfile()
    first.record(4, 5.0)  # a bucket's first timing is all there is to go on
    first.record(4, 1.0)
    assert first.estimate(4) == 1.0  # the lower median: a second sample already outvotes an outlier
    with pytest.raises(ValueError, match="window"):
        PassCostProfile(window=0)
