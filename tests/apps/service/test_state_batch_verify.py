"""``ServiceConfig.batch_verify``: the service attaches the verify batcher to its target when it loads
it (so ``create_app`` alone batches, and ``--lazy`` still loads on the first request)."""

from tiny_service import make_app, make_chat_model

from specdraft.backends.transformers.verify_batch_config import VerifyBatchConfig


def test_a_service_built_with_batch_verify_batches_its_target_when_it_loads(tokenizer):
    model = make_chat_model(tokenizer)
    app = make_app(model, batch_verify=VerifyBatchConfig(window_ms=1, max_batch=4))
    assert model.verify_batcher is None  # lazy: nothing attached before the model is asked for
    assert app.extensions["specdraft"].target() is model
    assert model.verify_batcher is not None and model.verify_batcher.config == VerifyBatchConfig(
        window_ms=1, max_batch=4
    )


def test_without_batch_verify_passes_run_alone(tokenizer):
    model = make_chat_model(tokenizer)
    make_app(model).extensions["specdraft"].target()
    assert model.verify_batcher is None


def test_metrics_report_the_batcher(tokenizer):
    model = make_chat_model(tokenizer)
    app = make_app(model, batch_verify=VerifyBatchConfig(window_ms=1, max_batch=4))
    client = app.test_client()
    assert "specdraft_verify_batcher_lone_passes 0.0" in client.get("/metrics").get_data(as_text=True)  # not loaded yet
    answer = client.post(
        "/v1/completions",
        json={
            "model": app.extensions["specdraft"].config.model_name,
            "prompt": "Hello there",
            "max_tokens": 6,
            "temperature": 0,
        },
    )
    assert answer.status_code == 200, answer.get_json()
    text = client.get("/metrics").get_data(as_text=True)
    lone = model.verify_batcher.stats()["lone_passes"]
    assert lone > 0 and f"specdraft_verify_batcher_lone_passes {float(lone)}" in text
    assert "specdraft_verify_batcher_batched_passes 0.0" in text  # one request: nothing to batch with
