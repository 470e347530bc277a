"""The pass-cost probe (``python benchmarks/pass_cost.py``) runs end to end on a CPU: a
tiny random model, eager and fast path, a table and a JSON report (the figures are a GPU's to take)."""

import json

from benchmarks.pass_cost import main


def test_it_prints_eager_and_fast_pass_costs_by_width(tmp_path, capsys):
    out = tmp_path / "pass_cost.json"
    assert (
        main(
            [
                "--fast-path",
                "--arch",
                "tiny",
                "--device",
                "cpu",
                "--context",
                "12",
                "--widths",
                "1,3,8",
                "--reps",
                "1",
                "--warmup",
                "1",
                "--check-tokens",
                "24",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "width  eager_ms   fast_ms  eager/fast" in printed and "eager: no CUDA" in printed
    report = json.loads(out.read_text())
    assert report["fast_graphs"] is False and report["device"] == "cpu"
    assert set(report["eager_ms"]) == set(report["fast_ms"]) == set(report["speedup"]) == {"1", "3", "8"}
    assert all(ms > 0 for ms in report["fast_ms"].values())
    assert report["same_argmax"] is True and max(report["max_abs_logit_diff"].values()) < 1e-4
    assert report["lossless"]["fast plain == eager plain"] and report["lossless"]["fast drafted (trees) == eager plain"]
    assert report["lossless"]["fast drafted accepted tokens"] > 0


def test_without_fast_path_it_measures_eager_only(capsys):
    assert (
        main(["--arch", "tiny", "--device", "cpu", "--context", "4", "--widths", "2", "--reps", "1", "--warmup", "0"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "eager only" in printed and "fast_ms" not in printed
