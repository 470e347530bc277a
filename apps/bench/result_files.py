"""One results folder for a measurement: ``results.json`` (everything), ``results.md`` (the table a
person reads) and ``results.png`` (the plot), written together. Scripts build the three pieces;
this module only writes them, so every folder in docs/bench has the same shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats are shown with 3 significant digits."""

    def cell(value: Any) -> str:
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def write_results(out_dir: Path, payload: dict, markdown: str, draw: Callable[[Any], None] | None = None) -> dict[str, Path]:
    """Write ``payload`` as JSON, ``markdown`` as the table, and, given ``draw`` (called with a
    matplotlib ``Figure``), the plot. Returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "results.json", "markdown": out_dir / "results.md"}
    paths["json"].write_text(json.dumps(payload, indent=2) + "\n")
    paths["markdown"].write_text(markdown)
    if draw is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        figure = plt.figure(figsize=(8, 4.5))
        draw(figure)
        figure.tight_layout()
        paths["plot"] = out_dir / "results.png"
        figure.savefig(paths["plot"], dpi=110)
        plt.close(figure)
    return paths
