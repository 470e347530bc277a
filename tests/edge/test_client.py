"""EdgeClient against a real loopback verify server: the output is the server model's own (greedy
==, seeded sampling ==), with and without the pipeline and the adaptive trigger; the pipeline keeps
drafting while a verification is in flight."""

import pytest
from edge_support import KEY, edge_server
from tiny_service import make_chat_model

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.edge import EdgeConnection
from specdraft.edge.client import EdgeClient, EdgeClientConfig

N_NEW = 40


@pytest.fixture(scope="module")
def model(tokenizer):
    return make_chat_model(tokenizer)


@pytest.fixture(scope="module")
def url(model, tmp_path_factory):
    with edge_server(model, tmp_path_factory.mktemp("edge"), max_branches=4) as url:
        yield url


def plain(model, prompt, **config):
    return SpeculativeGenerator(model).generate(
        prompt, None, GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True, **config)
    )


@pytest.mark.parametrize("drafter", ["same", "other"])
@pytest.mark.parametrize("pipeline", [True, False])
@pytest.mark.parametrize("adaptive", [True, False])
def test_greedy_output_is_the_servers_greedy_output(model, tiny_draft_model, url, drafter, pipeline, adaptive):
    draft_model = model if drafter == "same" else tiny_draft_model
    client = EdgeClient(
        EdgeConnection(url, KEY), draft_model, EdgeClientConfig(pipeline=pipeline, adaptive=adaptive, max_draft_nodes=8)
    )
    for text in ("The quick brown fox", "def add(a, b):\n"):
        prompt = model.encode(text)
        want = plain(model, prompt)
        got = client.generate(prompt, GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True))
        assert got.token_ids == want.token_ids
        assert got.text == want.text
        assert all(got.verified) and got.stats["unverified_tokens"] == 0
        assert got.stats["server_forward_passes"] >= got.stats["verify_steps"] + 1
        if drafter == "same":  # the local model is the server's: every draft is kept
            # (the tiny random model's flat distributions make the adaptive trigger draft short)
            assert got.stats["server_passes_per_token"] < (0.6 if adaptive else 0.3)
    client.connection.close()


def test_seeded_sampling_is_the_servers_sampling(model, url):
    """Sample-and-compare (``draft_probs=False``): the text is exactly the server's own seeded
    sampling. (With draft distributions the server accepts by rejection sampling: the same
    distribution, not the same draws; see test_sampling.py.)"""
    client = EdgeClient(EdgeConnection(url, KEY), model, EdgeClientConfig(draft_probs=False))
    prompt = model.encode("The quick brown fox")
    for seed in (0, 1):
        config = dict(temperature=0.8, seed=seed)
        got = client.generate(prompt, GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True, **config))
        assert got.token_ids == plain(model, prompt, **config).token_ids
    client.connection.close()


def test_the_pipeline_drafts_while_a_verification_is_in_flight(model, url):
    """With the pipeline, the local model drafts past the draft in flight, so fewer local passes
    happen between verifications (tokens kept from the overlap need no second drafting)."""
    prompt = model.encode("The quick brown fox")
    config = GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True)
    runs = {}
    for pipeline in (True, False):
        client = EdgeClient(
            EdgeConnection(url, KEY), model, EdgeClientConfig(pipeline=pipeline, adaptive=False, max_draft_nodes=4)
        )
        run = client.stream(prompt, config)
        pieces = list(run.steps())
        runs[pipeline] = run.result()
        assert "".join(p.text for p in pieces) == runs[pipeline].text
        client.connection.close()
    assert runs[True].token_ids == runs[False].token_ids
    # without the pipeline every drafted token was drafted before its verification was sent; with it,
    # a kept overlap means some verifications were sent with tokens drafted while the last was in flight
    assert runs[True].stats["verify_steps"] <= runs[False].stats["verify_steps"]


def test_a_wrong_key_is_refused_at_once(model, url):
    from specdraft.edge import EdgeRefused

    with EdgeConnection(url, "not-a-key-0123456789abcdef") as connection, pytest.raises(EdgeRefused) as error:
        EdgeClient(connection, model).generate(model.encode("hello"), GenerationConfig(max_new_tokens=4))
    assert error.value.status == 401


def test_sampling_with_draft_distributions_accepts_more_than_comparing_tokens(model, url):
    """The same model drafting under top-k 16: its q is the target's own warped row, so rejection
    sampling keeps nearly every main-chain token, where comparing two draws keeps few."""
    prompt = model.encode("The quick brown fox")
    config = GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True, temperature=0.8, top_k=16, seed=3)
    stats = {}
    for probs in (True, False):
        with EdgeConnection(url, KEY) as connection:
            result = EdgeClient(
                connection, model, EdgeClientConfig(draft_probs=probs, adaptive=False, max_draft_nodes=6)
            ).generate(prompt, config)
        assert len(result.token_ids) == N_NEW and all(result.verified)
        assert result.stats["sampled_verifications"] == (result.stats["verify_steps"] if probs else 0)
        stats[probs] = result.stats
    assert stats[True]["accepted_tokens"] > 2 * stats[False]["accepted_tokens"]
    assert stats[True]["server_passes_per_token"] < 0.5


def test_overlap_is_measured(model, url):
    """Real overlap: seconds drafted while a verification was in flight, tokens drafted then, and
    the ones kept and emitted; none without the pipeline."""
    prompt = model.encode("The quick brown fox")
    config = GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True)
    for pipeline in (True, False):
        with EdgeConnection(url, KEY) as connection:
            s = (
                EdgeClient(connection, model, EdgeClientConfig(pipeline=pipeline, adaptive=False, max_draft_nodes=4))
                .generate(prompt, config)
                .stats
            )
        assert s["in_flight_s"] > 0
        assert s["overlap_emitted_tokens"] <= s["overlap_kept_tokens"] + s["overlap_drafted_tokens"]
        assert s["overlap_kept_tokens"] <= s["overlap_drafted_tokens"]
        if pipeline:
            assert s["overlap_drafted_tokens"] > 0 and 0 < s["overlap_s"] <= s["in_flight_s"] + 0.05
            assert s["overlap_emitted_tokens"] > 0  # the same model: what it drafts ahead is the server's text
        else:
            assert (
                s["overlap_drafted_tokens"] == s["overlap_kept_tokens"] == s["overlap_emitted_tokens"] == 0
                and s["overlap_s"] == 0
            )


def test_trees_branch_where_the_draft_is_unsure(model, tiny_draft_model, url):
    """Another model drafting greedy trees: the output is still the server's, and trees carry
    side branches (nodes beyond the main chain) computed by extra local passes."""
    prompt = model.encode("def add(a, b):\n")
    with EdgeConnection(url, KEY) as connection:
        got = EdgeClient(
            connection, tiny_draft_model, EdgeClientConfig(tree_width=3, adaptive=False, max_draft_nodes=8)
        ).generate(prompt, GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True))
    assert got.token_ids == plain(model, prompt).token_ids
    assert got.stats["side_passes"] > 0
