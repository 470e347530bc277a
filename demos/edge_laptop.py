"""Edge speculation on one machine: a verify server (``specdraft serve --edge``, the large model) in
one process, and in this one a "laptop" whose small local model drafts while the server verifies.
Prints the answer, its stats, and whether it equals the server model's own greedy answer.

Run it from the repository (no ``./start.sh`` needed: it starts its own server, with an API key it
makes up, on a free loopback port, and stops it at the end):

    .venv/bin/python demos/edge_laptop.py "Write a haiku about the sea."
    .venv/bin/python demos/edge_laptop.py --model qwen2.5-coder-0.5b --draft-model qwen2.5-coder-0.5b --no-chat "def
    fib(n):" .venv/bin/python demos/edge_laptop.py --json "..."     # one JSON object

By default the server runs smollm2-135m in float32 on transformers and the laptop drafts with the same
model's 4-bit GGUF on llama.cpp (the two share a tokenizer; the GGUF guesses the float32 model's
tokens well). The laptop uses the Python API (``specdraft.edge.EdgeClient``); ``specdraft edge``,
``specdraft edge --chat`` and ``specdraft edge serve`` do the same from the command line.
The check asks the server's own ``POST /v1/completions`` (``drafter: "none"``, greedy) for the same
prompt ids and compares the text.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(args: argparse.Namespace, key_file: str, port: int) -> subprocess.Popen:
    """``specdraft serve --edge`` in its own process; returns once ``/healthz`` answers."""
    command = [
        sys.executable,
        "-m",
        "specdraft.apps.cli",
        "serve",
        "--model",
        args.model,
        "--backend",
        args.backend,
        "--dtype",
        "float32",
        "--device",
        args.device,
        "--drafter",
        "none",
        "--edge",
        "--api-key-file",
        key_file,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=None if args.verbose else subprocess.DEVNULL)
    deadline = time.monotonic() + args.start_timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).close()
            return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise SystemExit(
                    f"the verify server did not start (exit code {server.poll()}); run with --verbose to see its log"
                )
            time.sleep(0.3)


def servers_own_greedy(url: str, key: str, prompt_ids: list[int], max_tokens: int) -> str:
    """The served model's own greedy text for ``prompt_ids`` (no drafter)."""
    body = {"prompt": prompt_ids, "max_tokens": max_tokens, "temperature": 0, "drafter": "none"}
    request = urllib.request.Request(
        url + "/v1/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)["choices"][0]["text"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("prompt", metavar="PROMPT", nargs="?", default="Explain in two sentences why the sky is blue.")
    parser.add_argument("--model", default="smollm2-135m", help="the server's model (default: %(default)s)")
    parser.add_argument("--backend", default="transformers", help="the server model's backend (default: %(default)s)")
    parser.add_argument("--device", default="auto", help="the server model's device (default: %(default)s)")
    parser.add_argument(
        "--draft-model",
        default="smollm2-135m",
        help="the laptop's model: registry name or path sharing the tokenizer (default: %(default)s)",
    )
    parser.add_argument(
        "--draft-backend", default="llama-cpp", help="the laptop model's backend (default: %(default)s)"
    )
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--no-chat", action="store_true", help="send PROMPT as plain text instead of a chat message")
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object {text, token_ids, verified, stats, identical}"
    )
    parser.add_argument(
        "--start-timeout", type=float, default=600, help="seconds to wait for the server to load (default: %(default)s)"
    )
    parser.add_argument("--verbose", action="store_true", help="show the server's log")
    args = parser.parse_args()

    from specdraft import GenerationConfig, ModelConfig, load_model
    from specdraft.edge import EdgeConnection, TransportConfig
    from specdraft.edge.client import EdgeClient

    key = "edge-demo-" + secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as folder:
        key_file = os.path.join(folder, "keys.txt")
        with open(key_file, "w") as f:
            f.write(key + "\n")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        if not args.json:
            print(f"starting the verify server ({args.model}, {args.backend}) on {url} ...", file=sys.stderr)
        server = start_server(args, key_file, port)
        try:
            laptop = load_model(ModelConfig(args.draft_model, "cpu", "auto", args.draft_backend, 0))
            messages = [{"role": "user", "content": args.prompt}]
            prompt_ids = laptop.encode(args.prompt) if args.no_chat else laptop.encode_chat(messages)
            with EdgeConnection(url, key, TransportConfig(timeout_s=120)) as connection:
                run = EdgeClient(connection, laptop).stream(
                    prompt_ids, GenerationConfig(max_new_tokens=args.max_new_tokens)
                )
                for piece in run.steps():
                    if not args.json:
                        sys.stdout.write(piece.text if piece.source != "unverified" else f"[?{piece.text}?]")
                        sys.stdout.flush()
                result = run.result()
            own = servers_own_greedy(url, key, prompt_ids, args.max_new_tokens)
        finally:
            server.terminate()
            server.wait(timeout=30)
    identical = own == result.text
    s = result.stats.to_dict()
    if args.json:
        print(
            json.dumps(
                {
                    "text": result.text,
                    "token_ids": result.token_ids,
                    "prompt_token_ids": result.prompt_token_ids,
                    "verified": result.verified,
                    "finish_reason": result.finish_reason,
                    "stats": s,
                    "servers_own_text": own,
                    "identical": identical,
                }
            )
        )
    else:
        print()
        print(
            f"\n{s['generated_tokens']} tokens in {s['wall_s']:.2f} s ({s['tokens_per_s']:.1f} tokens/s): "
            f"{s['round_trips']} round trips, {s['server_forward_passes']} server forward passes "
            f"({s['server_passes_per_token']:.2f} per token), {s['verified_per_round_trip']:.1f} verified tokens per "
            f"round trip, {s['unverified_tokens']} unverified"
        )
        print(
            "identical to the server model's own greedy answer"
            if identical
            else "DIFFERENT from the server model's own greedy answer"
        )
    return 0 if identical or s["unverified_tokens"] else 1


if __name__ == "__main__":
    sys.exit(main())
