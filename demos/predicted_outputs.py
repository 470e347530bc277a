"""Predicted outputs for a code edit with the official ``openai`` client: most of the edited code is
the old code, so the request sends the old code as its ``prediction`` and the model checks it in
long runs instead of writing it token by token.

Run it against the server ``./start.sh`` starts (http://127.0.0.1:8000 by default):

    ./start.sh                                   # in one terminal
    .venv/bin/python demos/predicted_outputs.py
    .venv/bin/python demos/predicted_outputs.py --url http://127.0.0.1:8000 --key sk-...   # with keys

``prediction={"type": "content", "content": old_code}`` is OpenAI's own parameter; the answer is the
one the model gives without it (the demo also decodes it plainly and checks), and ``usage``
says how many predicted tokens the model kept (``accepted_prediction_tokens``). How much of the
prediction is kept depends on the model following the edit: small models (the default
smollm2-135m) often rewrite code instead of editing it; a coder model (``./start.sh --model
qwen2.5-coder-0.5b``) keeps more of it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from openai import OpenAI

OLD_CODE = """import logging

DEFAULTS = {
    "host": "127.0.0.1",
    "port": 8000,
    "workers": 2,
    "timeout": 60,
    "log_level": "info",
}


def load_settings(overrides):
    settings = dict(DEFAULTS)
    settings.update(overrides)
    logging.info("settings: %s", settings)
    return settings
"""
INSTRUCTION = "Change the default port to 8080. Answer with the whole code only, no explanation."


def edit(client: OpenAI, model: str, max_tokens: int, predict: bool) -> tuple[str, object, float]:
    """The edited code, the response's ``usage`` and the wall time: with the prediction, or decoded
    plainly (specdraft's ``drafter: "none"``, else the server would draft from the prompt)."""
    extra = {"prediction": {"type": "content", "content": OLD_CODE}} if predict else {"extra_body": {"drafter": "none"}}
    start = time.perf_counter()
    response = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": f"{INSTRUCTION}\n\n```python\n{OLD_CODE}```"}],
        temperature=0,
        max_completion_tokens=max_tokens,
        **extra,
    )
    return response.choices[0].message.content, response.usage, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the specdraft server (default: %(default)s)")
    parser.add_argument(
        "--key",
        default=os.environ.get("SPECDRAFT_API_KEY"),
        help="API key, when the server has keys (default: $SPECDRAFT_API_KEY)",
    )
    parser.add_argument("--max-tokens", type=int, default=160)
    args = parser.parse_args(argv)
    client = OpenAI(base_url=args.url.rstrip("/") + "/v1", api_key=args.key or "not-needed")  # no keys: any string
    model = client.models.list().data[0].id  # the served model
    predicted, usage, predicted_s = edit(client, model, args.max_tokens, predict=True)
    plain, _, plain_s = edit(client, model, args.max_tokens, predict=False)
    details = usage.completion_tokens_details
    print(predicted)
    print(
        f"--- {usage.completion_tokens} tokens; prediction tokens accepted: {details.accepted_prediction_tokens}, "
        f"rejected: {details.rejected_prediction_tokens}"
    )
    print(f"with the prediction: {predicted_s:.2f} s; plain decoding: {plain_s:.2f} s; identical: {predicted == plain}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
