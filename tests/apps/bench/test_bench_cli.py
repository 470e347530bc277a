"""`specdraft bench`'s arguments as the runners receive them (stand-ins stop each command once its
configuration is known: nothing loads), and its refusal to start without the plotting extra."""

from __future__ import annotations

import argparse
import re
import sys

import pytest

from specdraft import GenerationConfig
from specdraft.apps.bench.result_files import INSTALL_BENCH
from specdraft.apps.cli.entry_point import main


class Stop(Exception):
    """Raised by a stand-in once it has seen what the command passes on."""


def test_prompt_sets_run_the_generation_default_unless_told_otherwise(monkeypatch, tmp_path):
    from specdraft.apps.bench import suites
    from specdraft.apps.cli import model_args

    seen: list[argparse.Namespace] = []

    def build(args, pool, target):
        seen.append(args)
        raise Stop

    monkeypatch.setattr(model_args, "model_pool", lambda args: type("Pool", (), {"get": lambda self, name: None})())
    monkeypatch.setattr(suites, "build", build)
    for extra in ([], ["--max-new-tokens", "64"]):
        with pytest.raises(Stop):
            main(["bench", "chat", "--limit", "1", "--out", str(tmp_path), *extra])
    assert [args.max_new_tokens for args in seen] == [GenerationConfig().max_new_tokens, 64]


def test_edge_runs_the_generation_default_unless_told_otherwise(monkeypatch, tmp_path):
    from specdraft.apps.bench import edge_bench

    seen: list = []

    def run(config, **kwargs):
        seen.append(config)
        raise Stop

    monkeypatch.setattr(edge_bench, "run_edge_bench", run)
    for extra in ([], ["--max-new-tokens", "64"]):
        with pytest.raises(Stop):
            main(["bench", "edge", "--limit", "1", "--out", str(tmp_path), *extra])
    assert [config.max_new_tokens for config in seen] == [GenerationConfig().max_new_tokens, 64]


def test_without_matplotlib_bench_stops_before_loading_anything_and_names_the_install_command(monkeypatch, tmp_path):
    from specdraft.apps.cli import model_args

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails as if it were not installed
    monkeypatch.setattr(model_args, "model_pool", lambda args: pytest.fail("a model was loaded"))
    with pytest.raises(ModuleNotFoundError, match=re.escape(INSTALL_BENCH)):
        main(["bench", "chat", "--limit", "1", "--out", str(tmp_path)])
