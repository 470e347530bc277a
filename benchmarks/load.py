"""Load test: concurrent clients against a real ``specdraft serve`` on this machine, bounded in count and time.

``python benchmarks/load.py --clients 4 --minutes 3 --name smollm2`` (see ``--help``).

1. **Server** (``load_server``): starts ``specdraft serve`` in a subprocess on loopback (a free port, a fresh
   ``--index-root`` and a key file with one write key in a temporary folder, ``--grammar-model``
   the served model by default so corrections stay fast), or targets ``--url`` (loopback only;
   ``--key`` a write key when the server has keys). Its memory is sampled from the process
   (``--server-pid``, or found by its port with psutil, for ``--url``).
2. **Documents**: ``load_requests.DOCUMENTS`` are added to a fresh index (``load-<time>``), as a
   client with a write key would.
3. **Sequential pass**: every distinct request of ``load_requests.load_requests`` alone, once per
   mode; the speculative answers are the expected answers (the plain ones must equal them).
4. **Load**: ``--clients`` threads for ``--minutes`` (at most ``--max-requests`` requests), in
   segments alternating the modes in the order speculative, plain, plain, speculative, ...
   (``--segments`` per mode), so that other work on the machine falls on both modes alike. Every
   answer is compared with the expected one; 429s are counted apart.
5. **Report** (``load_report``) to ``--out`` (default ``docs/bench/load-<name>``): throughput,
   p50/p99 latency per kind and mode, errors by status, identity, the server's memory over time,
   and per request the ratios plain / speculative under load of latency, generation time and passes.

Exit status: 0 when every answer was a 200 or a 429 and every answer was identical; 1 otherwise
(the files are written either way); 2 for bad arguments or a server that would not start.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

if not __package__:  # run as a script (python benchmarks/load.py): the repository root, for `benchmarks.*`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.load_client import (  # noqa: E402
    Client,
    MemorySampler,
    Outcome,
    RequestBudget,
    add_documents,
    run_clients,
    sequential_pass,
)
from benchmarks.load_requests import MODES, PLAIN, load_requests  # noqa: E402
from benchmarks.load_server import started_server  # noqa: E402
from specdraft.apps.bench.datasets.archive_cache import say  # noqa: E402

DEFAULT_MODEL = "smollm2-135m"
MAX_CLIENTS, MAX_DURATION_S, MAX_REQUESTS = 64, 3600.0, 100_000
BATCH_GATE = 8  # --compare-batch-verify: both servers' --max-concurrent (the batcher's default --batch-max)


@dataclass(frozen=True)
class LoadConfig:
    """``clients`` threads for ``duration_s`` seconds in all, at most ``max_requests`` requests;
    ``modes`` in ``segments`` segments each; chat and RAG answers of up to ``max_tokens`` tokens."""

    clients: int = 4
    duration_s: float = 180.0
    max_requests: int = 10_000
    modes: tuple[str, ...] = MODES
    segments: int = 2
    max_tokens: int = 64
    seed: int = 0
    request_timeout_s: float = 600.0
    memory_interval_s: float = 1.0

    def __post_init__(self) -> None:
        if not 1 <= self.clients <= MAX_CLIENTS:
            raise ValueError(f"clients must be 1..{MAX_CLIENTS}, got {self.clients}")
        if not 0 < self.duration_s <= MAX_DURATION_S:
            raise ValueError(
                f"the load must last more than 0 and at most {MAX_DURATION_S / 60:g} minutes, got "
                f"{self.duration_s / 60:g}"
            )
        if not 1 <= self.max_requests <= MAX_REQUESTS:
            raise ValueError(f"max_requests must be 1..{MAX_REQUESTS}, got {self.max_requests}")
        if not self.modes or len(set(self.modes)) != len(self.modes) or not set(self.modes) <= set(MODES):
            raise ValueError(f"modes must be distinct names of {', '.join(MODES)}, got {self.modes}")
        if not 1 <= self.segments <= 20:
            raise ValueError(f"segments must be 1..20, got {self.segments}")
        if not 1 <= self.max_tokens <= 512:
            raise ValueError(f"max_tokens must be 1..512, got {self.max_tokens}")

    def segment_modes(self) -> list[str]:
        """The modes of the load segments in order: A B B A A B ... (one mode: A A ...)."""
        return [self.modes[((i + 1) // 2) % len(self.modes)] for i in range(self.segments * len(self.modes))]


def run(
    config: LoadConfig, client: Client, pid: int | None, server: str, name: str | None = None
) -> tuple[dict[str, Any], list[Outcome], Any]:
    """Steps 2-4 of the module docstring against ``client``'s server (process ``pid``, None: its
    memory is not sampled): the report (``load_report``'s words), every outcome, and the plain vs
    speculative ``BenchResult`` (None unless both modes ran). ``name``: the run's (default: the
    served model's folder or registry name)."""
    from benchmarks.load_report import comparison, memory_summary, mode_summary, ratio_summary, ratios
    from specdraft.apps.bench.runner import environment

    health = client.get("/healthz")
    if health.status != 200:
        raise RuntimeError(f"{client.base_url}/healthz answered HTTP {health.status}: is it specdraft serve?")
    model = health.body["model"]
    name = name or Path(model).name
    zero = time.perf_counter()
    clock = lambda: time.perf_counter() - zero  # noqa: E731
    load_before = os.getloadavg()
    index = f"load-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
    requests = load_requests(config.max_tokens, index)
    sampler = MemorySampler(pid, config.memory_interval_s, clock) if pid else contextlib.nullcontext()
    segments, outcomes = [], []
    with sampler:
        add_documents(client, index)
        expected, alone = sequential_pass(client, requests, config.modes, clock)
        budget = RequestBudget(config.max_requests)
        seconds = config.duration_s / len(config.segment_modes())
        load_start = clock()
        for number, mode in enumerate(config.segment_modes()):
            start = clock()
            found = run_clients(
                client, requests, mode, config.clients, start + seconds, budget, expected, config.seed + number, clock
            )
            segments.append(
                {"mode": mode, "start_s": round(start, 3), "end_s": round(clock(), 3), "requests": len(found)}
            )
            say(
                f"segment {number + 1}/{len(config.segment_modes())} ({mode}): {len(found)} requests in "
                f"{clock() - start:.1f} s"
            )
            outcomes += found
    samples = getattr(sampler, "samples", [])
    env = {**environment(), "cpu_count": os.cpu_count(), "load_before": load_before, "load_after": os.getloadavg()}
    report: dict[str, Any] = {
        "name": name,
        "model": model,
        "server": server,
        "config": asdict(config),
        "environment": env,
        "segments_order": [s["mode"] for s in segments],
        "segments": segments,
        "sequential": {
            "requests": len(requests),
            "plain_identical": sum(o.identical is True for o in alone if o.mode == PLAIN),
            "latency_s": {f"{o.request} {o.mode}": o.latency_s for o in alone},
        },
        "load": {
            mode: mode_summary(
                [o for o in outcomes if o.mode == mode],
                sum(s["end_s"] - s["start_s"] for s in segments if s["mode"] == mode),
            )
            for mode in config.modes
        },
        "memory": memory_summary(samples, load_start),
        "memory_samples": samples,
    }
    result = comparison(outcomes, model, config.max_tokens, env)
    if result is not None:
        report["ratios"] = ratios(outcomes)
        report["comparison"] = {measure: ratio_summary(values) for measure, values in report["ratios"].items()}
    plain_alone_identical = PLAIN not in config.modes or report["sequential"]["plain_identical"] == len(requests)
    report["goals"] = {
        "no_errors_but_429": not any(s["errors"] for s in report["load"].values()),
        "identical_to_sequential": plain_alone_identical
        and all(s["identical"] == s["compared"] for s in report["load"].values()),
    }
    return report, outcomes, result


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/load.py",
        description="Load test of specdraft serve on this machine: concurrent clients over chat, grammar and RAG, "
        "greedy; throughput, p50/p99 latency, errors (429 apart), server memory over time, answers identical to "
        "sequential ones, and plain vs speculative decoding under the same load. Writes load.json, load.md, load.png "
        "and results.* to --out.",
    )
    target = parser.add_argument_group("server")
    target.add_argument(
        "--url", default=None, help="an already running server on this machine (loopback only); default: start one"
    )
    target.add_argument("--key", default=None, help="with --url: an API key with write scope, when the server has keys")
    target.add_argument(
        "--server-pid",
        type=int,
        default=None,
        help="with --url: the server's process, for its memory (default: found by the port)",
    )
    target.add_argument("--model", default=DEFAULT_MODEL, help="served model when starting one (default: %(default)s)")
    target.add_argument(
        "--grammar-model",
        default=None,
        help="grammar model when starting one (default: --model, to keep corrections fast)",
    )
    target.add_argument("--device", default="cpu")
    target.add_argument("--dtype", default="auto")
    target.add_argument("--backend", default="auto")
    target.add_argument(
        "--batch-verify",
        action="store_true",
        help="start the server with --batch-verify (verify batching across requests)",
    )
    target.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="another argument for specdraft serve, e.g. --serve-arg=--max-queue=0 (repeatable)",
    )
    load = parser.add_argument_group("load")
    defaults = LoadConfig()
    load.add_argument("--clients", type=int, default=defaults.clients, help="concurrent clients (default: %(default)s)")
    load.add_argument(
        "--minutes",
        type=float,
        default=defaults.duration_s / 60,
        help="load duration, all segments together (default: %(default)s)",
    )
    load.add_argument(
        "--max-requests",
        type=int,
        default=defaults.max_requests,
        help="most requests under load (default: %(default)s)",
    )
    load.add_argument(
        "--modes", default=",".join(defaults.modes), help="speculative, plain or both (default: %(default)s)"
    )
    load.add_argument(
        "--segments",
        type=int,
        default=defaults.segments,
        help="load segments per mode, alternating (default: %(default)s)",
    )
    load.add_argument(
        "--max-tokens",
        type=int,
        default=defaults.max_tokens,
        help="max_tokens of chat and RAG requests (default: %(default)s)",
    )
    load.add_argument(
        "--seed", type=int, default=defaults.seed, help="the clients' request orders (default: %(default)s)"
    )
    load.add_argument(
        "--request-timeout",
        type=float,
        default=defaults.request_timeout_s,
        help="client timeout per request, s (default: %(default)s)",
    )
    sweep = parser.add_argument_group("concurrency sweep (load_concurrency)")
    sweep.add_argument(
        "--concurrency",
        default=None,
        metavar="N,N,...",
        help="instead of the timed load: a sweep over these numbers of concurrent clients, e.g. 1,4,16; writes "
        "concurrency.* to --out (default docs/bench/concurrency-NAME)",
    )
    sweep.add_argument(
        "--limit", type=int, default=24, help="with --concurrency: requests per point and mode (default: %(default)s)"
    )
    sweep.add_argument(
        "--compare-batch-verify",
        action="store_true",
        help="with --concurrency: start two servers, without and with --batch-verify, both with --max-concurrent %d "
        "unless a --serve-arg sets it, and run every point on both (alternating)" % BATCH_GATE,
    )
    parser.add_argument(
        "--name", default=None, help="run name (default: the model's); output folder docs/bench/load-NAME"
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: docs/bench/load-NAME)")
    return parser.parse_args(argv)


def config_of(args: argparse.Namespace) -> LoadConfig:
    return LoadConfig(
        clients=args.clients,
        duration_s=args.minutes * 60,
        max_requests=args.max_requests,
        modes=tuple(mode.strip() for mode in args.modes.split(",") if mode.strip()),
        segments=args.segments,
        max_tokens=args.max_tokens,
        seed=args.seed,
        request_timeout_s=args.request_timeout,
    )


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.load_report import markdown, write

    args = parse_args(argv)
    if args.concurrency is not None:
        return _sweep_main(args)
    try:
        config = config_of(args)
        with started_server(args) as (client, pid, server):
            report, outcomes, result = run(config, client, pid, server, args.name)
    except (ValueError, RuntimeError, TimeoutError) as error:
        print(f"load: error: {error}", file=sys.stderr)
        return 2
    paths = write(report, outcomes, result, args.out or Path("docs/bench") / f"load-{report['name']}")
    print(markdown(report, result))
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0 if all(report["goals"].values()) else 1


def _with_serve_args(args: argparse.Namespace, batch_verify: bool, *extra: str) -> argparse.Namespace:
    return argparse.Namespace(**{**vars(args), "batch_verify": batch_verify, "serve_arg": [*args.serve_arg, *extra]})


def _sweep_main(args: argparse.Namespace) -> int:
    """``--concurrency``: ``load_concurrency.sweep`` against the server (``--compare-batch-verify``: two
    servers, ``load_concurrency.sweep_servers``); exit status as ``main``'s."""
    from benchmarks import load_concurrency

    try:
        config = load_concurrency.ConcurrencyConfig(
            levels=load_concurrency.parse_levels(args.concurrency),
            limit=args.limit,
            max_tokens=args.max_tokens,
            seed=args.seed,
            modes=tuple(mode.strip() for mode in args.modes.split(",") if mode.strip()),
        )
        if args.compare_batch_verify:
            if args.url:
                raise ValueError("--compare-batch-verify starts its own two servers; it cannot use --url")
            gate = (
                []
                if any(a.startswith("--max-concurrent") for a in args.serve_arg)
                else [f"--max-concurrent={BATCH_GATE}"]
            )
            with (
                started_server(_with_serve_args(args, False, *gate)) as (alone, _, alone_server),
                started_server(_with_serve_args(args, True, *gate)) as (batched, _, batched_server),
            ):
                servers = [("alone", alone, alone_server), ("batched", batched, batched_server)]
                report = load_concurrency.sweep_servers(config, servers, args.name)
        else:
            with started_server(args) as (client, _pid, server):
                report = load_concurrency.sweep(config, client, server, args.name)
    except (ValueError, RuntimeError, TimeoutError) as error:
        print(f"load: error: {error}", file=sys.stderr)
        return 2
    paths = load_concurrency.write(report, args.out or Path("docs/bench") / f"concurrency-{report['name']}")
    print(load_concurrency.markdown(report))
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0 if all(report["goals"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
