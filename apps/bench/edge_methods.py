"""The edge benchmark's cases, measurements and methods (``edge_bench`` runs them, ``edge_report``
reports them): ``server-only`` (the server generating alone, streamed over HTTP), ``local-only`` (the
laptop's model alone, in this process) and the ``EdgeClient`` variants of ``EDGE_VARIANTS`` (drafting
here, the server verifying). Every method returns one ``EdgeMeasurement``, measured at the client."""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass

from specdraft import GenerationConfig, SpeculativeGenerator
from specdraft.edge import EdgeClient, EdgeClientConfig, EdgeConnection, TransportConfig
from specdraft.edge.trees import Calibration

EDGE_VARIANTS = {  # method name -> (pipeline, adaptive)
    "edge": (True, True),
    "edge no-pipeline": (False, True),
    "edge no-adaptive": (True, False),
    "edge no-pipeline no-adaptive": (False, False),
}


@dataclass(frozen=True)
class EdgeCase:
    set: str
    id: str
    prompt_ids: tuple[int, ...]
    max_new_tokens: int


@dataclass
class EdgeMeasurement:
    set: str
    prompt_id: str
    delay_ms: int
    method: str
    generated_tokens: int
    wall_s: float
    server_forward_passes: int
    round_trips: int = 0
    verified_tokens: int = 0
    verify_steps: int = 0
    unverified_tokens: int = 0
    text: str = ""
    identical: bool | None = None
    overlap_s: float = 0.0  # the client drafting while a verification was in flight (edge with the pipeline)
    in_flight_s: float = 0.0  # verifications in flight
    overlap_drafted_tokens: int = 0
    overlap_emitted_tokens: int = 0  # of those, tokens that became verified output
    side_passes: int = 0  # local passes on tree nodes off the main chain


# --- the methods ---------------------------------------------------------------------------------------
def server_only(
    url: str, key: str, model_name: str, case: EdgeCase, delay_ms: int, timeout_s: float
) -> EdgeMeasurement:
    """The server generating alone, streamed: ``POST /v1/completions`` with the prompt's token ids."""
    host, port = url.split("//", 1)[1].split(":")
    body = json.dumps(
        {
            "model": model_name,
            "prompt": list(case.prompt_ids),
            "max_tokens": case.max_new_tokens,
            "temperature": 0,
            "stream": True,
            "drafter": "none",
        }
    ).encode()
    started = time.perf_counter()
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout_s)
    conn.request(
        "POST", "/v1/completions", body, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    )
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"server-only completion: HTTP {response.status}: {response.read()[:300]!r}")
    text, tokens, passes = [], 0, 0
    for raw in response:
        line = raw.decode().strip()
        if not line.startswith("data:") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[5:])
        if "error" in chunk:
            raise RuntimeError(f"server-only completion failed: {chunk['error']}")
        for choice in chunk.get("choices", ()):
            text.append(choice.get("text", ""))
        if "speculation" in chunk:
            tokens = chunk["speculation"]["generated_tokens"]
            passes = chunk["speculation"]["target_forward_passes"]
    wall = time.perf_counter() - started
    conn.close()
    return EdgeMeasurement(
        case.set, case.id, delay_ms, "server-only", tokens, wall, passes, round_trips=1, text="".join(text)
    )


def local_only(model, case: EdgeCase) -> EdgeMeasurement:
    started = time.perf_counter()
    result = SpeculativeGenerator(model).generate(
        list(case.prompt_ids), None, GenerationConfig(max_new_tokens=case.max_new_tokens)
    )
    wall = time.perf_counter() - started
    return EdgeMeasurement(case.set, case.id, -1, "local-only", len(result.token_ids), wall, 0, text=result.text)


_CALIBRATIONS: dict[str, Calibration] = {}  # per method: what a laptop client learns over its session of prompts


def forget_calibrations() -> None:
    """A new run's clients start from no calibration (each method then keeps one over its prompts)."""
    _CALIBRATIONS.clear()


def edge(
    url: str, key: str, model, case: EdgeCase, delay_ms: int, method: str, max_draft_nodes: int, timeout_s: float
) -> EdgeMeasurement:
    """``method`` (a name of ``EDGE_VARIANTS``): an ``EdgeClient`` drafting with ``model``, the server at
    ``url`` verifying at most ``max_draft_nodes`` per verification (``EdgeBenchConfig``'s settings)."""
    pipeline, adaptive = EDGE_VARIANTS[method]
    client_config = EdgeClientConfig(max_draft_nodes=max_draft_nodes, pipeline=pipeline, adaptive=adaptive)
    with EdgeConnection(url, key, TransportConfig(timeout_s=timeout_s)) as connection:
        client = EdgeClient(connection, model, client_config)
        client.calibration = _CALIBRATIONS.setdefault(method, client.calibration)
        started = time.perf_counter()
        result = client.generate(list(case.prompt_ids), GenerationConfig(max_new_tokens=case.max_new_tokens))
        wall = time.perf_counter() - started
    s = result.stats
    return EdgeMeasurement(
        case.set,
        case.id,
        delay_ms,
        method,
        len(result.token_ids),
        wall,
        s["server_forward_passes"],
        s["round_trips"],
        s["verified_tokens"],
        s["verify_steps"],
        s["unverified_tokens"],
        result.text,
        overlap_s=s["overlap_s"],
        in_flight_s=s["in_flight_s"],
        overlap_drafted_tokens=s["overlap_drafted_tokens"],
        overlap_emitted_tokens=s["overlap_emitted_tokens"],
        side_passes=s["side_passes"],
    )
