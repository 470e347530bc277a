"""LangChain's standard chat-model suite against specdraft, on several models: one table of every test's
outcome per model, with the run's time.

    python benchmarks/langchain_standard.py                                   # qwen2.5-coder-0.5b and -1.5b
    python benchmarks/langchain_standard.py --models qwen2.5-coder-1.5b --out /tmp/lc
    python benchmarks/langchain_standard.py --responses-api --models qwen2.5-coder-1.5b   # POST /v1/responses

Runs ``tests/apps/service/test_langchain_standard.py`` (``langchain-tests``' ``ChatModelIntegrationTests``
with ``ChatOpenAI`` pointed at a live ``specdraft serve`` on llama.cpp, tool calling, tool choice,
structured output and JSON mode on) once per model, in a pytest subprocess with
``SPECDRAFT_LANGCHAIN_MODEL`` set, and writes ``results.json`` and ``results.md`` to ``--out`` (default
docs/bench/langchain-standard/): per test and model, passed / failed / xfailed (expected on that model:
the test module says why) / skipped (a feature the server declares off), the first line of each
failure, and each model's wall time. The tests the 0.5B model answers wrongly are xfail there and run
normally on any other model.

``--responses-api`` runs the same suite with ``ChatOpenAI(use_responses_api=True)``
(``SPECDRAFT_LANGCHAIN_RESPONSES=1``), so every call goes through ``POST /v1/responses``; its default
``--out`` is docs/bench/langchain-standard-responses/.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "apps" / "service" / "test_langchain_standard.py"
DEFAULT_OUT = ROOT / "docs" / "bench" / "langchain-standard"
RESPONSES_OUT = ROOT / "docs" / "bench" / "langchain-standard-responses"
DEFAULT_MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def run_suite(model: str, report: Path, responses_api: bool = False) -> dict:
    """One pytest run of the suite on ``model`` (``responses_api``: through ``POST /v1/responses``):
    {"seconds", "returncode", "tests": {id: {"outcome", "message"}}}."""
    env = {**os.environ, "SPECDRAFT_LANGCHAIN_MODEL": model}
    env["SPECDRAFT_LANGCHAIN_RESPONSES"] = "1" if responses_api else ""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(TESTS), f"--junitxml={report}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    if not report.exists():
        raise SystemExit(f"pytest wrote no report for {model}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return {"seconds": round(seconds, 1), "returncode": done.returncode, "tests": outcomes(report)}


def outcomes(report: Path) -> dict[str, dict[str, str]]:
    """Each test case of a JUnit XML report: its outcome and the first line of its message."""
    tests = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "")
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message", "")
            elif child.tag == "skipped":
                kind = child.get("type", "")
                outcome = "xfailed" if kind == "pytest.xfail" else "skipped"
                message = child.get("message", "")
        tests[name] = {"outcome": outcome, "message": message.strip().splitlines()[0][:200] if message.strip() else ""}
    return tests


def markdown(results: dict[str, dict], responses_api: bool = False) -> str:
    models = list(results)
    names = sorted({name for run in results.values() for name in run["tests"]})
    client = "`ChatOpenAI(use_responses_api=True)` (`POST /v1/responses`)" if responses_api else "`ChatOpenAI`"
    lines = [
        "# LangChain standard chat-model suite against specdraft" + (" (Responses API)" if responses_api else ""),
        "",
        f"`langchain-tests` 1.1.9 `ChatModelIntegrationTests`, {client} against `specdraft serve` on llama.cpp "
        "(tests/apps/service/test_langchain_standard.py; benchmarks/langchain_standard.py wrote this).",
        "",
        "| test | " + " | ".join(models) + " |",
        "|---|" + "---|" * len(models),
    ]
    for name in names:
        lines.append(
            f"| `{name}` | " + " | ".join(results[m]["tests"].get(name, {}).get("outcome", "-") for m in models) + " |"
        )
    lines += ["", "| model | passed | failed | xfailed | skipped | wall time (s) |", "|---|---|---|---|---|---|"]
    for model in models:
        counts = [
            sum(t["outcome"] == kind for t in results[model]["tests"].values())
            for kind in ("passed", "failed", "xfailed", "skipped")
        ]
        lines.append(f"| {model} | " + " | ".join(map(str, counts)) + f" | {results[model]['seconds']} |")
    failures = [
        (m, n, t["message"])
        for m in models
        for n, t in sorted(results[m]["tests"].items())
        if t["outcome"] in ("failed", "xfailed")
    ]
    if failures:
        lines += ["", "## Failures and expected failures", ""]
        lines += [f"- {m}, `{n}`: {message or '(no message)'}" for m, n, message in failures]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", nargs="+", default=list(DEFAULT_MODELS), help="registry models (default: %(default)s)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for results.json and results.md (default: docs/bench/langchain-standard, or "
        "docs/bench/langchain-standard-responses with --responses-api)",
    )
    parser.add_argument(
        "--responses-api", action="store_true", help="ChatOpenAI(use_responses_api=True): through POST /v1/responses"
    )
    args = parser.parse_args(argv)
    args.out = args.out or (RESPONSES_OUT if args.responses_api else DEFAULT_OUT)
    args.out.mkdir(parents=True, exist_ok=True)
    results = {model: run_suite(model, args.out / f"junit-{model}.xml", args.responses_api) for model in args.models}
    for model in args.models:
        (args.out / f"junit-{model}.xml").unlink()
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "results.md").write_text(markdown(results, args.responses_api))
    print(markdown(results, args.responses_api))
    return 0


if __name__ == "__main__":
    sys.exit(main())
