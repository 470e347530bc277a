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
    return SpeculativeGenerator(model).generate(prompt, None, GenerationConfig(max_new_tokens=N_NEW, ignore_eos=True, **config))


@pytest.mark.parametrize("drafter", ["same", "other"])
@pytest.mark.parametrize("pipeline", [True, False])
@pytest.mark.parametrize("adaptive", [True, False])
def test_greedy_output_is_the_servers_greedy_output(model, tiny_draft_model, url, drafter, pipeline, adaptive):
    draft_model = model if drafter == "same" else tiny_draft_model
    client = EdgeClient(EdgeConnection(url, KEY), draft_model, EdgeClientConfig(pipeline=pipeline, adaptive=adaptive, max_draft_nodes=8))
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
    client = EdgeClient(EdgeConnection(url, KEY), model)
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
        client = EdgeClient(EdgeConnection(url, KEY), model, EdgeClientConfig(pipeline=pipeline, adaptive=False, max_draft_nodes=4))
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
