"""``specdraft serve --batch-verify``: its flags map onto ``ServiceConfig.batch_verify`` and the gate."""

import pytest

from specdraft import ModelConfig
from specdraft.apps.cli.entry_point import build_parser
from specdraft.apps.cli.serve_args import access_config
from specdraft.apps.service.config import ServiceConfig
from specdraft.apps.service.limits import LimitConfig
from specdraft.backends.transformers.verify_batch_config import VerifyBatchConfig


def config_of(*argv):
    return access_config(build_parser().parse_args(["serve", *argv]))


def test_batching_is_off_by_default_and_the_gate_keeps_its_default():
    config = config_of()
    assert config["batch_verify"] is None and config["limits"].max_concurrent == LimitConfig().max_concurrent
    assert ServiceConfig().batch_verify is None


def test_batch_verify_raises_the_gate_to_the_batch_size_unless_told_otherwise():
    config = config_of("--batch-verify")
    assert (
        config["batch_verify"] == VerifyBatchConfig()
        and config["limits"].max_concurrent == VerifyBatchConfig().max_batch
    )
    config = config_of("--batch-verify", "--batch-max", "4", "--batch-window-ms", "2")
    assert (
        config["batch_verify"] == VerifyBatchConfig(window_ms=2, max_batch=4) and config["limits"].max_concurrent == 4
    )
    assert config_of("--batch-verify", "--max-concurrent", "3")["limits"].max_concurrent == 3
    assert config_of("--max-concurrent", "5")["limits"].max_concurrent == 5


def test_bad_batch_settings_and_other_backends_are_refused():
    with pytest.raises(ValueError, match="max_batch"):
        config_of("--batch-verify", "--batch-max", "1")
    with pytest.raises(ValueError, match="transformers backend"):
        ServiceConfig(ModelConfig(backend="llama-cpp"), batch_verify=VerifyBatchConfig())
