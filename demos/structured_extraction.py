"""Structured extraction with the official ``openai`` client: one record per document, typed by a
pydantic model, with ``client.chat.completions.parse(response_format=Invoice)``.

Run it against the server ``./start.sh`` starts (http://127.0.0.1:8000 by default), serving a model
that follows instructions well enough to extract (the default smollm2-135m is too small for this):

    ./start.sh --model qwen2.5-coder-0.5b        # in one terminal
    .venv/bin/python demos/structured_extraction.py
    .venv/bin/python demos/structured_extraction.py --url http://127.0.0.1:8000 --key sk-...   # with keys
    .venv/bin/python demos/structured_extraction.py --json   # the records as one JSON document
    .venv/bin/python demos/structured_extraction.py catering   # one of the documents below only

The SDK turns the pydantic model into a strict JSON schema (``response_format={"type": "json_schema",
...}``); the server constrains every token to it, so each answer parses. Most of such an answer is
either forced by the schema (keys, quotes, braces: drafted by the grammar) or copied from the
document (names, numbers: drafted by prompt lookup), and the model checks those drafts in wide
passes instead of writing them one token at a time. The demo extracts each document twice, with the
server's prompt-lookup drafter and with ``drafter: "none"`` (the grammar's drafts only), and says
whether the records are identical (they are: speculation never changes the answer) and how many
model passes each took.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from openai import OpenAI
from pydantic import BaseModel, Field


class Invoice(BaseModel):
    """One invoice's record."""

    vendor: str = Field(description="the company that sent the invoice")
    invoice_number: str
    date: str = Field(description="the invoice date, as written")
    total: float = Field(description="the amount due")
    currency: str = Field(description="a three-letter currency code")


DOCUMENTS = {
    "office-supplies": (
        "INVOICE No. INV-2024-0192\nFrom: Brightside Office Supplies Ltd, 14 Mill Lane, Leeds\nDate: 3 March 2024\n\n"
        "20 x A4 paper reams  89.80\n4 x toner cartridge  212.00\nTotal due: GBP 301.80 within 30 days."
    ),
    "web-hosting": (
        "Hallo Anna, anbei unsere Rechnung.\n\nNordlicht Hosting GmbH - Rechnung RE-55731 vom 12.01.2025\n"
        "Webhosting Business (12 Monate): 238,80 EUR\nGesamtbetrag: EUR 238.80"
    ),
    "catering": (
        "Thanks for choosing Blue Fig Catering! Invoice #BF-0087, issued April 30, 2025.\n"
        "Lunch for 25 people on May 2: USD 612.50. Please pay by bank transfer."
    ),
}
SYSTEM = "Extract the invoice's fields from the user's document."


def extract(client: OpenAI, model: str, document: str, drafter: str, max_tokens: int) -> tuple[Invoice, dict, float]:
    """The document's record, the server's speculation stats for it and the wall time."""
    start = time.perf_counter()
    response = client.chat.completions.parse(
        model=model,
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": document}],
        response_format=Invoice,
        temperature=0,
        max_completion_tokens=max_tokens,
        extra_body={"drafter": drafter},  # specdraft's field: what drafts beside the grammar
    )
    choice = response.choices[0]
    if choice.message.parsed is None:  # cut by max_tokens (finish_reason "length"): no whole record
        raise SystemExit(f"no record: the answer ended with finish_reason {choice.finish_reason!r}; raise --max-tokens")
    return choice.message.parsed, (response.model_extra or {}).get("speculation") or {}, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "documents",
        nargs="*",
        metavar="DOCUMENT",
        help=f"the documents to extract: {' '.join(DOCUMENTS)} (default: all)",
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the specdraft server (default: %(default)s)")
    parser.add_argument(
        "--key",
        default=os.environ.get("SPECDRAFT_API_KEY"),
        help="API key, when the server has keys (default: $SPECDRAFT_API_KEY)",
    )
    parser.add_argument("--max-tokens", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print the records as one JSON document")
    args = parser.parse_args(argv)
    if unknown := [name for name in args.documents if name not in DOCUMENTS]:
        parser.error(f"no document named {', '.join(unknown)}: choose from {' '.join(DOCUMENTS)}")
    client = OpenAI(base_url=args.url.rstrip("/") + "/v1", api_key=args.key or "not-needed")  # no keys: any string
    model = client.models.list().data[0].id  # the served model
    records, report = {}, {}
    for name in args.documents or DOCUMENTS:
        document = DOCUMENTS[name]
        record, stats, seconds = extract(client, model, document, "prompt-lookup", args.max_tokens)
        plain, plain_stats, plain_seconds = extract(client, model, document, "none", args.max_tokens)
        records[name] = record.model_dump()
        report[name] = {
            "identical": record == plain,
            "tokens": stats.get("generated_tokens"),
            "passes": stats.get("target_forward_passes"),
            "plain_passes": plain_stats.get("target_forward_passes"),
            "seconds": round(seconds, 3),
            "plain_seconds": round(plain_seconds, 3),
        }
    if args.json:
        print(json.dumps({"model": model, "records": records, "report": report}, indent=2, ensure_ascii=False))
        return 0
    for name, record in records.items():
        line = report[name]
        print(f"[{name}] {json.dumps(record, ensure_ascii=False)}")
        print(
            f"    {line['tokens']} tokens in {line['passes']} model passes with prompt lookup ({line['seconds']:.2f} "
            f"s), {line['plain_passes']} with the grammar's drafts only ({line['plain_seconds']:.2f} s); identical: "
            f"{line['identical']}"
        )
    print(f"records: {len(records)}; all identical: {all(line['identical'] for line in report.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
