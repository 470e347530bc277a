"""The load test (``benchmarks/load.py``): its pure parts, and one short bounded run against a
real ``specdraft serve`` (a subprocess on loopback) serving a tiny checkpoint."""

import json

import pytest

from benchmarks.load import LoadConfig, main
from benchmarks.load_client import Outcome, check_loopback
from benchmarks.load_report import mode_summary, percentile, ratio_summary, ratios
from benchmarks.load_requests import KINDS, MODES, PLAIN, SPECULATIVE, load_requests


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8000", "http://localhost:8000/", "http://[::1]:9", "http://127.3.2.1"]
)
def test_loopback_urls_are_accepted(url):
    assert check_loopback(url) == url.rstrip("/")


@pytest.mark.parametrize(
    "url", ["http://10.0.0.5:8000", "http://example.com", "http://0.0.0.0:8000", "ftp://127.0.0.1", "127.0.0.1:8000"]
)
def test_other_hosts_are_refused(url):
    with pytest.raises(ValueError):
        check_loopback(url)


def test_a_non_loopback_url_exits_2_before_sending_anything(capsys):
    assert main(["--url", "http://192.0.2.1:8000", "--minutes", "0.1"]) == 2
    assert "only targets this machine" in capsys.readouterr().err


def test_segments_alternate_the_modes_so_drift_falls_on_both():
    assert LoadConfig(segments=2).segment_modes() == [SPECULATIVE, PLAIN, PLAIN, SPECULATIVE]
    assert LoadConfig(segments=3, modes=(PLAIN,)).segment_modes() == [PLAIN] * 3


@pytest.mark.parametrize(
    "field, value",
    [
        ("clients", 0),
        ("clients", 65),
        ("duration_s", 0.0),
        ("duration_s", 3601.0),
        ("max_requests", 0),
        ("modes", ()),
        ("modes", ("fast",)),
        ("modes", (PLAIN, PLAIN)),
    ],
)
def test_the_load_is_bounded(field, value):
    with pytest.raises(ValueError):
        LoadConfig(**{field: value})


def test_every_request_has_a_plain_and_a_speculative_body():
    requests = load_requests(max_tokens=8, index="load-x")
    assert {r.kind for r in requests} == set(KINDS) and len({r.id for r in requests}) == len(requests)
    for request in requests:
        assert set(request.bodies) == set(MODES)
    plain_drafters = {r.kind: r.bodies[PLAIN].get("drafter", r.bodies[PLAIN].get("speculate")) for r in requests}
    assert plain_drafters == {"chat": "none", "grammar": False, "rag": "none"}


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0 and percentile([3.0], 99) == 3.0
    assert percentile([], 50) == 0.0


def test_429s_are_counted_apart_from_errors():
    outcomes = [
        Outcome("chat-0", "chat", SPECULATIVE, 0, 0.0, 1.0, 200, True, {"generated_tokens": 10}),
        Outcome("chat-0", "chat", SPECULATIVE, 1, 0.1, 0.01, 429),
        Outcome("rag-0", "rag", SPECULATIVE, 1, 0.2, 2.0, 200, False, {"generated_tokens": 5}),
        Outcome("rag-0", "rag", SPECULATIVE, 0, 1.0, 0.5, 500, error="boom"),
    ]
    summary = mode_summary(outcomes, seconds=5.0)
    assert summary["overloaded_429"] == 1 and summary["errors"] == {"500": 1}
    assert summary["answered"] == 2 and summary["identical"] == 1 and summary["compared"] == 2
    assert summary["tokens_per_s"] == 3.0 and summary["latency"]["chat"]["p50_s"] == 1.0


def test_ratios_compare_the_medians_of_each_request_in_both_modes():
    def ok(request, mode, latency, wall, passes):
        return Outcome(
            request,
            request.split("-")[0],
            mode,
            0,
            0.0,
            latency,
            200,
            True,
            {"wall_s": wall, "target_forward_passes": passes},
        )

    outcomes = [
        ok("chat-0", PLAIN, 4.0, 2.0, 20),
        ok("chat-0", PLAIN, 6.0, 2.0, 20),
        ok("chat-0", PLAIN, 100.0, 2.0, 20),  # median 6
        ok("chat-0", SPECULATIVE, 3.0, 1.0, 10),
        ok("rag-0", PLAIN, 2.0, 1.0, 10),
        ok("rag-0", SPECULATIVE, 4.0, 0.5, 11),
        ok("grammar-0", SPECULATIVE, 1.0, 1.0, 5),  # only one mode: not compared
        Outcome("rag-0", "rag", PLAIN, 0, 0.0, 0.1, 429),  # not an answer
    ]
    found = ratios(outcomes)
    assert found == {
        "latency": {"chat-0": 2.0, "rag-0": 0.5},
        "generation": {"chat-0": 2.0, "rag-0": 2.0},
        "passes": {"chat-0": 2.0, "rag-0": 0.9091},
    }
    summary = ratio_summary(found["latency"])
    assert summary["min"] == 0.5 and summary["below_1"] == 1 and summary["median_by_kind"] == {"chat": 2.0, "rag": 0.5}


def test_a_short_run_against_a_real_server_has_no_errors_but_429s_and_identical_answers(chat_checkpoint, tmp_path):
    """3 clients, one generation at a time and no queue: some requests get 429 (deliberately), every
    other answer is a 200 equal to the sequential one, in both modes; the files are written."""
    out = tmp_path / "load-tiny"
    argv = [
        "--model",
        str(chat_checkpoint),
        "--clients",
        "3",
        "--minutes",
        "0.33",
        "--max-tokens",
        "12",
        "--out",
        str(out),
        "--serve-arg=--max-concurrent=1",
        "--serve-arg=--max-queue=0",
    ]
    assert main(argv) == 0
    report = json.loads((out / "load.json").read_text())
    for mode in MODES:
        load = report["load"][mode]
        assert load["errors"] == {} and load["answered"] > 0
        assert load["identical"] == load["compared"] == load["answered"]
    assert sum(report["load"][mode]["overloaded_429"] for mode in MODES) > 0
    assert report["sequential"]["plain_identical"] == report["sequential"]["requests"]
    assert report["memory"]["samples"] > 0 and report["memory"]["peak_mb"] > 0
    assert report["goals"] == {"no_errors_but_429": True, "identical_to_sequential": True}
    assert set(report["comparison"]) == {"latency", "generation", "passes"}
    assert {o["kind"] for o in report["outcomes"] if o["status"] == 200} == set(KINDS)
    for name in ("load.json", "load.md", "load.png", "results.json", "results.md", "results.png"):
        assert (out / name).stat().st_size > 0
    assert "| speculative | chat |" in (out / "load.md").read_text()
