"""The conformance suite: every ``Target`` implementation passes the same checks.

Backends: transformers (a tiny random float64 model: no weights needed), llama.cpp (the real
smollm2-135m GGUF: marked slow), a choice-only target (``ChoicesOnlyModel``: the tiny model
behind a target that returns only its chosen token per row, as a serving engine does), and the
remote target (``specdraft.edge.RemoteModel``: the tiny model served by ``serve --edge`` on a real
loopback server), the fast path (``specdraft.backends.fast_path.FastPathModel``: static caches and
width-bucketed passes on the tiny model, eager on the CPU), and the engine target
(``specdraft.backends.engine.EngineModel`` over a loopback server speaking vLLM's request dialect on
the tiny model, ``tests/core/backends/engine/vllm_dialect.py``; greedy only, so the sampling checks skip
it). Another target joins by adding a fixture param.

- losslessness: speculative greedy output == the same backend's plain greedy output, token for
  token, with drafters that are always right, always wrong, partly right and trees; seeded
  sampling with a deterministic drafter == plain sampling with that seed;
- cache rollback: after a tree is verified and a path committed, the target continues exactly as
  one that was prefilled with the accepted tokens;
- trees: each row of a tree's verification equals that branch verified as a chain;
- accounting: plain decoding costs one pass per token, the prefill included; misuse raises.

Logits are compared with a backend tolerance (transformers float64: 1e-9; llama.cpp: none, they
are equal bit for bit), the token outputs always with ``==``.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import OracleDrafter, started_target

from specdraft import ROOT, Draft, GenerationConfig, SpeculationConfig, SpeculativeGenerator, TokenChooser, Verification

N_NEW = 32
PROMPTS = ["The quick brown fox", "def add(a, b):\n", "Grammar correction returns mostly"]


class ChoicesOnlyTarget:
    """A target that answers a verification with its chosen tokens only (no logits)."""

    returns_logits = False

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name):  # context_length, max_length, forward_passes, prefill, commit, close
        return getattr(self.inner, name)

    @property
    def max_branches(self) -> int:
        return 4  # as a server might limit a tree

    def verify(self, draft):
        verification = self.inner.verify(draft)
        return Verification.from_choices([verification.choice(row) for row in range(len(verification))])


class ChoicesOnlyModel:
    """A model whose targets are ``ChoicesOnlyTarget``s; everything else is the wrapped model's."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def new_target(self, chooser=TokenChooser()):
        return ChoicesOnlyTarget(self.inner.new_target(chooser))


@pytest.fixture(
    scope="module",
    params=[
        "transformers",
        "fast-path",
        "choices-only",
        "remote",
        "engine",
        pytest.param("llama-cpp", marks=pytest.mark.slow),
    ],
)
def backend(request, tokenizer, tmp_path_factory):
    """(model, logits tolerance)."""
    if request.param in ("transformers", "choices-only"):
        from tiny_models import make_tiny_model

        model = make_tiny_model(tokenizer, seed=0)
        yield (model if request.param == "transformers" else ChoicesOnlyModel(model)), 1e-9
    elif request.param == "fast-path":
        from tiny_models import make_tiny_model

        from specdraft.backends.fast_path import FastPathConfig, FastPathModel

        # small caches so that sequences outgrow them (moving to a larger cache) during the suite
        yield FastPathModel(make_tiny_model(tokenizer, seed=0), FastPathConfig(min_capacity=32, headroom=8)), 1e-9
    elif request.param == "remote":
        yield from remote_backend(tokenizer, tmp_path_factory)
    elif request.param == "engine":
        yield from engine_backend(tokenizer)
    else:
        yield request.getfixturevalue("real_model")("smollm2-135m", "llama-cpp"), 0.0  # exact: see LlamaCppModel.exact


def remote_backend(tokenizer, tmp_path_factory):
    """The tiny model served by the service with ``edge`` on a real loopback server, seen through a
    ``RemoteModel`` (the same tiny model encodes text locally)."""

    from live_server import LiveServer
    from tiny_models import make_tiny_model
    from tiny_service import make_app

    from specdraft.apps.service.edge_sessions import EdgeConfig
    from specdraft.edge import RemoteModel

    key = "conformance-key-0123456789"
    keys = tmp_path_factory.mktemp("edge") / "keys"
    keys.write_text(key + "\n")
    model = make_tiny_model(tokenizer, seed=0)
    app = make_app(model, api_key_file=str(keys), edge=True, edge_config=EdgeConfig(max_sessions_per_key=1000))
    with LiveServer(app) as server:
        remote = RemoteModel(server.url, key, local=model)
        yield remote, None
        remote.connection.close()


def engine_backend(tokenizer):
    """The tiny model behind a loopback server speaking vLLM's dialect, seen through an ``EngineModel``
    (the same tiny model encodes text locally)."""

    from live_server import LiveServer
    from tiny_models import make_tiny_model
    from vllm_dialect import make_vllm_dialect_app

    from specdraft.backends.engine import EngineConfig, EngineModel

    model = make_tiny_model(tokenizer, seed=0)
    with LiveServer(make_vllm_dialect_app(model)) as server:
        yield EngineModel(EngineConfig(server.url, "vllm", exact=True), model), None


def greedy_only(model) -> bool:
    return getattr(model, "backend", None) == "engine"


@pytest.fixture(scope="module")
def plain_outputs(backend):
    model, _ = backend
    generator = SpeculativeGenerator(model)
    return {
        p: generator.generate(model.encode(p), None, GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True)).token_ids
        for p in PROMPTS
    }


def as_array(logits) -> np.ndarray:
    return logits.detach().cpu().double().numpy() if hasattr(logits, "detach") else np.asarray(logits, dtype=np.float64)


def assert_rows_close(got: Verification, want: Verification, tolerance: float, rows=None) -> None:
    """The same choices on ``rows`` (default: all), and logits within ``tolerance`` where present."""
    rows = list(range(len(want))) if rows is None else rows
    assert [got.choice(r) for r in rows] == [want.choice(r) for r in range(len(want))]
    if got.logits is None:
        return
    got_rows, want_rows = as_array(got.logits)[rows], as_array(want.logits)
    assert got_rows.shape == want_rows.shape
    assert np.abs(got_rows - want_rows).max() <= tolerance


@pytest.mark.parametrize("mode", ["right", "wrong", "partly", "tree"])
def test_speculative_greedy_equals_plain_greedy(backend, plain_outputs, mode):
    model, _ = backend
    for prompt in PROMPTS:
        ids = model.encode(prompt)
        reference = plain_outputs[prompt]
        drafter = OracleDrafter(ids + reference, model.vocab_size, mode)
        config = GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True)
        result = SpeculativeGenerator(model, SpeculationConfig(initial_draft_len=5, adaptive=False)).generate(
            ids, drafter, config
        )
        assert result.token_ids == reference
        assert result.stats.verify_steps > 3
        if mode == "right":
            assert result.stats.mean_accepted_tokens > 2
        if mode == "wrong":
            assert result.stats.accepted_tokens == 0 and result.stats.drafted_tokens > 0


def test_seeded_sampling_with_a_deterministic_drafter_equals_plain_sampling(backend):
    from specdraft.drafters import PromptLookupDrafter

    model, _ = backend
    if greedy_only(model):
        pytest.skip("the engine target verifies greedy decoding only")
    ids = model.encode("The dog sleeps. The dog sleeps. The dog")
    for seed in range(3):
        config = GenerationConfig(max_new_tokens=20, temperature=0.8, seed=seed, ignore_eos=True)
        plain = SpeculativeGenerator(model).generate(ids, None, config)
        drafted = SpeculativeGenerator(model).generate(ids, PromptLookupDrafter(), config)
        assert drafted.token_ids == plain.token_ids


@pytest.mark.parametrize("pending_step", [False, True])
@pytest.mark.parametrize("path", [(), (0,), (1, 3), (1, 3, 4)])
def test_commit_continues_like_a_target_prefilled_with_the_accepted_tokens(backend, pending_step, path):
    model, tolerance = backend
    draft = Draft((20, 21, 22, 23, 24), (ROOT, ROOT, 0, 1, 3))
    target, context = started_target(model, [11, 12, 13, 14], pending_step)
    verification = target.verify(draft)
    assert len(verification) == 1 + len(draft)
    assert verification.logits is None or verification.logits.shape[0] == 1 + len(draft)
    target.commit(list(path), next_token=30)
    assert target.context_length == len(context) + len(path) + 1
    kept = [draft.tokens[i] for i in path]
    fresh = model.new_target(TokenChooser())
    fresh.prefill(context + kept + [30])
    probe = Draft.chain([7, 8])
    assert_rows_close(target.verify(probe), fresh.verify(probe), tolerance)
    target.close()
    fresh.close()


@pytest.mark.parametrize("pending_step", [False, True])
def test_tree_rows_equal_each_branch_verified_as_a_chain(backend, pending_step):
    model, tolerance = backend
    draft = Draft((20, 21, 22, 23, 24, 25), (ROOT, ROOT, 0, 1, 3, 1))
    target, _ = started_target(model, [3, 4, 5], pending_step)
    tree = target.verify(draft)
    for leaf in (2, 4, 5):
        branch = draft.path_to(leaf)
        chain_target, _ = started_target(model, [3, 4, 5], pending_step)
        chain = chain_target.verify(Draft.chain([draft.tokens[n] for n in branch]))
        assert_rows_close(tree, chain, tolerance, rows=[0] + [1 + n for n in branch])


def test_plain_steps_cost_one_pass_each_prefill_included(backend):
    model, _ = backend
    target = model.new_target(TokenChooser())
    target.prefill([1, 2, 3])
    for token in (4, 5, 6):
        target.verify(Draft.empty())
        target.commit([], token)
    assert target.forward_passes == 3 and target.context_length == 6


def test_misuse_raises(backend):
    model, _ = backend
    target = model.new_target(TokenChooser())
    with pytest.raises(RuntimeError):
        target.verify(Draft.empty())
    with pytest.raises(RuntimeError):
        target.commit([], 1)
    target.prefill([1, 2])
    with pytest.raises(RuntimeError):
        target.prefill([1, 2])
    target.verify(Draft.chain([3]))
    with pytest.raises(RuntimeError):
        target.verify(Draft.chain([3]))


def test_drafts_wider_than_the_target_are_pruned_and_stay_lossless(backend, plain_outputs):
    """A tree with more branches than the target verifies at once is cut to fit, not refused."""
    model, _ = backend
    prompt = PROMPTS[0]
    ids = model.encode(prompt)
    reference = plain_outputs[prompt]

    class Bushy:
        def propose(self, context, budget):
            truth = (ids + reference)[len(context)]
            wrong = [(truth + k) % model.vocab_size for k in range(1, 300)]
            return Draft((*wrong, truth), (ROOT,) * 300)  # 300 branches, the right one last

        def observe(self, accepted):
            pass

    result = SpeculativeGenerator(
        model, SpeculationConfig(initial_draft_len=300, max_draft_len=300, adaptive=False)
    ).generate(ids, Bushy(), GenerationConfig(max_new_tokens=8, ignore_eos=True))
    assert result.token_ids == reference[:8]


def test_sampled_drafts_with_distributions_stay_lossless_on_every_target(backend):
    """A draft model's sampled drafts carry distributions: rejection sampling where the target
    returns logits, sample-and-compare where it returns only choices. Greedy output is exact
    either way; seeded sampling repeats."""
    from specdraft.drafters import DraftModelConfig, DraftModelDrafter
    from specdraft.sampling import PositionalRandom

    model, _ = backend
    drafting = getattr(model, "local", model)  # a remote target's drafts come from the local copy
    ids = model.encode("The dog sleeps. The dog")
    for config in (
        GenerationConfig(max_new_tokens=16, ignore_eos=True),
        GenerationConfig(max_new_tokens=16, temperature=0.9, seed=5, ignore_eos=True),
    ):
        if greedy_only(model) and not config.sampling.greedy:
            continue  # the engine target verifies greedy decoding only
        outputs = []
        for _ in range(2):
            drafter = DraftModelDrafter(
                drafting, model.vocab_size, config.sampling, PositionalRandom(1), DraftModelConfig(tree_width=2)
            )
            outputs.append(SpeculativeGenerator(model).generate(ids, drafter, config).token_ids)
        assert outputs[0] == outputs[1]
        if config.sampling.greedy:
            assert outputs[0] == SpeculativeGenerator(model).generate(ids, None, config).token_ids
