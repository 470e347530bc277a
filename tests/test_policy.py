from specdraft.cost import PassCostProfile
from specdraft.policy import SpeculationConfig, SpeculationPolicy


def profile(one: float, per_token: float) -> PassCostProfile:
    cost = PassCostProfile()
    for n in (1, 2, 4, 8, 16, 32, 64):
        cost.record(n, one + per_token * (n - 1))
    return cost


def test_draft_length_grows_on_full_acceptance_and_shrinks_on_early_rejection():
    policy = SpeculationPolicy(SpeculationConfig(initial_draft_len=4, max_draft_len=16, fallback=False), PassCostProfile())
    policy.observe(4, 4, 4)
    assert policy.budget() == 8
    policy.observe(8, 8, 8)
    policy.observe(16, 16, 16)
    assert policy.budget() == 16
    policy.observe(16, 16, 10)  # late rejection: unchanged
    assert policy.budget() == 16
    policy.observe(16, 16, 1)  # early rejection: halve
    assert policy.budget() == 8


def test_falls_back_when_speculation_does_not_pay_and_probes_again():
    config = SpeculationConfig(initial_draft_len=8, adaptive=False, window=4, backoff=3)
    policy = SpeculationPolicy(config, profile(one=1.0, per_token=0.5))  # 8 tokens cost 4.5x
    for _ in range(4):
        policy.observe(8, 8, 0)  # nothing accepted
    assert policy.budget() == 0
    for _ in range(3):
        assert policy.falling_back
        policy.observe(0, 0, 0)
    assert policy.budget() == 8  # probing again


def test_keeps_speculating_when_it_pays():
    config = SpeculationConfig(initial_draft_len=8, adaptive=False, window=4)
    policy = SpeculationPolicy(config, profile(one=1.0, per_token=0.05))
    for _ in range(8):
        policy.observe(8, 8, 6)
    assert policy.budget() == 8


def test_measures_a_plain_step_first_when_its_cost_is_unknown():
    cost = PassCostProfile()
    cost.record(9, 2.0)
    policy = SpeculationPolicy(SpeculationConfig(adaptive=False, window=2), cost)
    policy.observe(8, 8, 0)
    policy.observe(8, 8, 0)
    assert policy.budget() == 0  # the probe
    cost.record(1, 1.0)
    policy.observe(0, 0, 0)
    assert policy.budget() == 8
    policy.observe(8, 8, 0)  # window judged now: 1 token/step at 2x cost -> fall back
    assert policy.budget() == 0


def test_cost_profile_interpolates():
    cost = PassCostProfile()
    assert cost.estimate(4) is None
    cost.record(1, 1.0)
    cost.record(16, 4.0)
    assert cost.estimate(1) == 1.0
    assert 1.0 < cost.estimate(8) < 4.0
    assert cost.estimate(64) == 16.0
