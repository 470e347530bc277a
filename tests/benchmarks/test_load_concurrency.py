"""The concurrency sweep (``load --concurrency``, ``load_concurrency``) and the verify-batching probe
(``load_batch_probe``): their pure parts, one short sweep against a real ``specdraft serve`` (a
subprocess on loopback) serving a tiny checkpoint, and the probe on that checkpoint."""

import json

import pytest

from benchmarks.load import main
from benchmarks.load_batch_probe import ProbeConfig
from benchmarks.load_batch_probe import main as probe_main
from benchmarks.load_client import Outcome
from benchmarks.load_concurrency import ConcurrencyConfig, markdown, parse_levels, point_summary
from benchmarks.load_requests import MODES, PLAIN, SPECULATIVE


def test_levels_are_parsed_and_bad_ones_refused():
    assert parse_levels("1,4,16") == (1, 4, 16) and parse_levels(" 2 ") == (2,)
    for text in ("", "a,b", "1;4"):
        with pytest.raises(ValueError, match="--concurrency"):
            parse_levels(text)


@pytest.mark.parametrize(
    "field, value",
    [
        ("levels", ()),
        ("levels", (0,)),
        ("levels", (65,)),
        ("levels", (4, 4)),
        ("limit", 0),
        ("limit", 10_001),
        ("modes", ("fast",)),
        ("max_tokens", 0),
    ],
)
def test_every_point_is_bounded(field, value):
    with pytest.raises(ValueError):
        ConcurrencyConfig(**{field: value})


def test_the_mode_order_alternates_from_level_to_level():
    assert ConcurrencyConfig(levels=(1, 4, 16)).points() == [
        (1, SPECULATIVE),
        (1, PLAIN),
        (4, PLAIN),
        (4, SPECULATIVE),
        (16, SPECULATIVE),
        (16, PLAIN),
    ]


def test_a_point_counts_throughput_percentiles_429s_and_identity():
    outcomes = [
        Outcome(f"r{i}", "chat", PLAIN, 0, float(i), float(i + 1), 200, identical=True, stats={"generated_tokens": 10})
        for i in range(10)
    ]
    outcomes += [Outcome("x", "chat", PLAIN, 0, 0.0, 0.1, 429), Outcome("y", "chat", PLAIN, 0, 0.0, 0.1, 500)]
    point = point_summary(outcomes, 4, PLAIN, 5.0)
    assert point["answered"] == 10 and point["requests"] == 12 and point["requests_per_s"] == 2.0
    assert point["generated_tokens_per_s"] == 20.0 and point["p50_s"] == 5.0 and point["p90_s"] == 9.0
    assert (
        point["overloaded_429"] == 1 and point["errors"] == {"500": 1} and point["identical"] == point["compared"] == 10
    )


def test_bad_sweep_arguments_exit_2_before_starting_a_server(capsys):
    assert main(["--concurrency", "1,x"]) == 2
    assert "--concurrency" in capsys.readouterr().err
    assert main(["--concurrency", "1", "--limit", "0"]) == 2


def test_a_short_sweep_against_a_real_server_answers_identically_at_every_level(chat_checkpoint, tmp_path):
    out = tmp_path / "concurrency-tiny"
    argv = [
        "--model",
        str(chat_checkpoint),
        "--concurrency",
        "1,3",
        "--limit",
        "4",
        "--max-tokens",
        "8",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    report = json.loads((out / "concurrency.json").read_text())
    assert [(p["clients"], p["mode"]) for p in report["points"]] == ConcurrencyConfig(levels=(1, 3)).points()
    for point in report["points"]:
        assert point["requests"] == 4 and point["errors"] == {}
        assert point["identical"] == point["compared"] == point["answered"] > 0 and point["requests_per_s"] > 0
    assert report["goals"] == {"no_errors_but_429": True, "identical_to_sequential": True}
    assert set(report["config"]["modes"]) == set(MODES)
    for name in ("concurrency.json", "concurrency.md", "concurrency.png"):
        assert (out / name).stat().st_size > 0
    assert "| 3 | speculative |" in markdown(report)


def test_the_batch_probe_runs_on_a_real_checkpoint(chat_checkpoint, tmp_path):
    assert (
        probe_main(
            [
                "--model",
                str(chat_checkpoint),
                "--batches",
                "1,2",
                "--width",
                "3",
                "--context",
                "5",
                "--repeats",
                "2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    report = json.loads((tmp_path / "batch-probe.json").read_text())
    assert [r["batch"] for r in report["rows"]] == [1, 2] and report["rows"][0]["gain"] == 1.0
    assert all(r["pass_ms"] > 0 for r in report["rows"])
    with pytest.raises(ValueError):
        ProbeConfig(batches=(0,))
