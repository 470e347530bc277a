"""The one results writer of every benchmark (``result_files``): three files together, and a missing
``bench`` extra named by its install command."""

from __future__ import annotations

import json
import re
import sys

import pytest

from specdraft.apps.bench.result_files import INSTALL_BENCH, markdown_table, pyplot, save_plot, write_results


def draw(figure) -> None:
    figure.subplots().plot([1, 2, 3], [3, 1, 2])


def test_it_writes_json_markdown_and_a_plot_under_one_stem(tmp_path):
    table = markdown_table(["width", "ms"], [[1, 0.12345], [2, 3]])
    assert table == "| width | ms |\n|---|---|\n| 1 | 0.123 |\n| 2 | 3 |\n"
    paths = write_results(tmp_path / "out", {"rows": [1, 2], "name": "ünïcödé"}, table, draw, stem="probe")
    assert [path.name for path in paths.values()] == ["probe.json", "probe.md", "probe.png"]
    assert json.loads(paths["json"].read_text(encoding="utf-8")) == {"rows": [1, 2], "name": "ünïcödé"}
    assert paths["markdown"].read_text() == table
    assert paths["plot"].read_bytes().startswith(b"\x89PNG")


@pytest.fixture
def no_matplotlib(monkeypatch):
    """``import matplotlib`` fails as if the ``bench`` extra were not installed."""
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_plotting_without_matplotlib_names_the_install_command(no_matplotlib, tmp_path):
    for plot in (pyplot, lambda: save_plot(tmp_path / "p.png", draw)):
        with pytest.raises(ModuleNotFoundError, match=re.escape(INSTALL_BENCH)) as caught:
            plot()
        assert caught.value.name == "matplotlib"


def test_a_run_without_matplotlib_keeps_its_numbers_and_table(no_matplotlib, tmp_path):
    with pytest.raises(ModuleNotFoundError, match=re.escape(INSTALL_BENCH)):
        write_results(tmp_path, {"speedup": 1.5}, "| a |\n|---|\n| 1 |\n", draw)
    assert json.loads((tmp_path / "results.json").read_text()) == {"speedup": 1.5}
    assert (tmp_path / "results.md").exists() and not (tmp_path / "results.png").exists()


def test_the_runners_plots_go_through_the_shared_writer(no_matplotlib, tmp_path):
    """``specdraft bench``'s report (``report.write_report``) needs the extra the same way."""
    from specdraft.apps.bench.report import write_report
    from specdraft.apps.bench.runner import BenchResult, environment

    result = BenchResult("chat", "tiny", 4, 0, environment(), [], [])
    with pytest.raises(ModuleNotFoundError, match=re.escape(INSTALL_BENCH)):
        write_report(result, tmp_path)
