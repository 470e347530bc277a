"""Grammar correction over HTTP: send a text to specdraft's ``POST /v1/grammar/correct`` and print
the correction, its edits and what speculation saved.

Run it against the server ``./start.sh`` starts (http://127.0.0.1:8000 by default):

    ./start.sh                                   # in one terminal
    .venv/bin/python demos/grammar_client.py "She go to school every days and she like it."
    .venv/bin/python demos/grammar_client.py --compare --url http://127.0.0.1:8000 --key sk-...   # with keys

Only the standard library is used (``urllib``). The model drafts the answer from the text itself and
checks many kept words in one pass; the answer is exactly what plain decoding gives. ``--compare``
asks the server to correct the text plainly too and prints both times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request

EXAMPLE = "She go to school every days and she like it. The results was surprising."


def correct(url: str, key: str | None, text: str, compare: bool = False) -> dict:
    """The server's answer to ``{"text": text}`` (raises ``RuntimeError`` with its error message)."""
    headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {key}"} if key else {})
    body = json.dumps({"text": text, "compare": compare}).encode("utf-8")
    request = urllib.request.Request(url.rstrip("/") + "/v1/grammar/correct", data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        message = json.loads(error.read() or b"{}").get("error", {}).get("message", error.reason)
        raise RuntimeError(f"HTTP {error.code}: {message}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("text", nargs="?", default=EXAMPLE, help="the text to correct (default: an example)")
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the specdraft server (default: %(default)s)")
    parser.add_argument(
        "--key",
        default=os.environ.get("SPECDRAFT_API_KEY"),
        help="API key, when the server has keys (default: $SPECDRAFT_API_KEY)",
    )
    parser.add_argument("--compare", action="store_true", help="also correct plainly, and print both times")
    args = parser.parse_args(argv)
    try:
        answer = correct(args.url, args.key, args.text, args.compare)
    except (RuntimeError, OSError) as error:
        print(f"grammar_client: {error}", file=sys.stderr)
        return 1
    stats = answer["stats"]
    print(f"original:  {args.text}")
    print(f"corrected: {answer['corrected']}")
    for edit in answer["edits"]:
        print(f"  edit {edit['start']}-{edit['end']}: {edit['original']!r} -> {edit['replacement']!r}")
    quality = answer.get("quality", {"ok": True})
    if not quality["ok"]:  # the model's answer is not a correction (it dropped words, looped, ...)
        print("warning: " + "; ".join(quality["warnings"]))
    drafted = sum(len(p["text"]) for p in answer["pieces"] if p["source"] == "draft")
    print(
        f"model {answer['model']}: {stats['generated_tokens']} tokens in {stats['target_forward_passes']} model "
        f"passes, {drafted} of {len(answer['corrected'])} characters accepted from the draft, {stats['wall_s']:.2f} s"
    )
    if args.compare:
        c = answer["comparison"]
        print(
            f"plain decoding: {c['plain_wall_s']:.2f} s, {c['plain_forward_passes']} passes; speed-up "
            f"{c['speedup']}x; identical: {c['identical']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
