"""``load --concurrency ... --compare-batch-verify``: two real ``specdraft serve`` processes (without and
with ``--batch-verify``) on a tiny checkpoint, every point run on both; and the report's table."""

import json

from benchmarks.load import main
from benchmarks.load_concurrency import ConcurrencyConfig, markdown


def test_a_short_comparison_runs_every_point_on_both_servers(chat_checkpoint, tmp_path):
    out = tmp_path / "concurrency-batched-tiny"
    argv = [
        "--model",
        str(chat_checkpoint),
        "--concurrency",
        "1,3",
        "--limit",
        "4",
        "--max-tokens",
        "8",
        "--modes",
        "speculative",
        "--compare-batch-verify",
        "--out",
        str(out),
    ]
    status = main(argv)
    report = json.loads((out / "concurrency.json").read_text())
    assert report["servers"] == ["alone", "batched"] and "--batch-verify" in report["server"]
    assert report["server"].count("--max-concurrent=8") == 2  # the same gate on both servers
    runs = [(p["clients"], p["mode"], p["server"]) for p in report["points"]]
    assert sorted(runs) == sorted(
        (c, m, s)
        for c, m in ConcurrencyConfig(levels=(1, 3), modes=("speculative",)).points()
        for s in ("alone", "batched")
    )
    assert runs[0][2] == "alone" and runs[2][2] == "batched"  # the server order alternates from point to point
    assert report["sequential"]["same_on_every_server"] is True  # requests alone never batch: the same answers
    for point in report["points"]:
        assert point["requests"] == 4 and point["errors"] == {} and point["answered"] == 4
        if point["server"] == "alone":  # float32: only the unbatched server's answers are asserted identical
            assert point["identical"] == point["compared"] == point["answered"]
    assert status == (0 if all(report["goals"].values()) else 1)
    table = markdown(report)
    assert "| clients | mode | server |" in table and "| 3 | speculative | batched |" in table
    assert (out / "concurrency.png").stat().st_size > 0


def test_compare_needs_servers_of_its_own(capsys):
    assert main(["--concurrency", "1", "--compare-batch-verify", "--url", "http://127.0.0.1:9"]) == 2
    assert "--compare-batch-verify" in capsys.readouterr().err
    assert main(["--concurrency", "1", "--batch-verify", "--url", "http://127.0.0.1:9"]) == 2
    assert "--batch-verify" in capsys.readouterr().err
