"""`specdraft bench edge` on the tiny checkpoint: a real `specdraft serve --edge` process, the client in
this process behind the delaying proxy; every method measured, edge output identical to the server's
greedy (the client drafts with the server's own weights), the report written."""

import json
import time

from specdraft.apps.bench.delay_proxy import DelayProxy, ProxyConfig
from specdraft.apps.bench.edge_bench import EdgeBenchConfig, run_edge_bench
from specdraft.apps.bench.edge_methods import EDGE_VARIANTS, EdgeCase
from specdraft.apps.bench.edge_report import write_edge_report


def test_the_edge_bench_runs_every_method_and_writes_its_report(tiny_checkpoint, tmp_path):
    path, model = tiny_checkpoint
    config = EdgeBenchConfig(
        server_model=str(path),
        server_backend="transformers",
        server_dtype="float32",
        server_device="cpu",
        draft_model=str(path),
        draft_backend="transformers",
        sets=("tiny",),
        limit=2,
        max_new_tokens=16,
        delays_ms=(0, 20),
        max_draft_nodes=4,
    )
    cases = [
        EdgeCase("tiny", f"p{i}", tuple(model.encode(text)), 16)
        for i, text in enumerate(("The quick brown fox", "def add(a, b):"))
    ]
    result = run_edge_bench(config, cases, log_path=str(tmp_path / "server.log"), progress=lambda message: None)
    rows = {(r["delay_ms"], r["method"]): r for r in result.rows}
    assert set(rows) == {(-1, "local-only")} | {(d, m) for d in (0, 20) for m in ("server-only", *EDGE_VARIANTS)}
    for (delay, method), row in rows.items():
        assert row["prompts"] == 2 and row["generated_tokens"] > 0 and row["tokens_per_s"] > 0
        assert row["identical_rate"] == 1.0, (delay, method)  # same weights on both sides: same greedy text
        if method.startswith("edge"):
            assert row["unverified_tokens"] == 0 and row["verified_per_round_trip"] >= 1
    assert rows[(0, "server-only")]["server_passes_per_token"] >= 1.0  # one pass per token (plus the prefill)
    assert rows[(0, "edge no-adaptive")]["server_passes_per_token"] < 1.0  # drafts of the server's own model are kept
    assert rows[(-1, "local-only")]["server_passes_per_token"] == 0
    paths = write_edge_report(result, tmp_path / "out")
    saved = json.loads(paths["json"].read_text())
    assert len(saved["measurements"]) == 2 * (1 + 2 * (1 + len(EDGE_VARIANTS)))
    assert "| tiny | 20 | edge |" in paths["markdown"].read_text()
    assert paths["plot"].stat().st_size > 0


def test_the_proxy_adds_the_round_trip_it_is_asked_for():
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def echo():
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(1024):
                conn.sendall(data)

    threading.Thread(target=echo, daemon=True).start()
    with (
        DelayProxy(server.getsockname()[1], ProxyConfig(rtt_s=0.1)) as proxy,
        socket.create_connection(("127.0.0.1", proxy.port)) as client,
    ):
        started = time.monotonic()
        client.sendall(b"ping")
        assert client.recv(1024) == b"ping"
        elapsed = time.monotonic() - started
    server.close()
    assert 0.1 <= elapsed < 0.5
