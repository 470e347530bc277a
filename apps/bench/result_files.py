"""The one results writer of every benchmark: ``<stem>.json`` (everything), ``<stem>.md`` (the table a
person reads) and ``<stem>.png`` (the plot), written together (``stem`` is ``results`` unless a
script writes several sets into one folder). Scripts build the three pieces; this module only
writes them, so every folder in docs/bench has the same shape.

Plotting needs matplotlib, which comes with the ``bench`` extra, not with the package: ``pyplot``
(and so ``save_plot`` and ``write_results``) raises ``ModuleNotFoundError`` naming
``INSTALL_BENCH`` when it is missing; nothing else here needs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from specdraft.files import atomic_write_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

INSTALL_BENCH = "pip install 'specdraft[bench]'"
FIGURE_SIZE = (8.0, 4.5)  # inches; a draw function may resize its figure
DPI = 110

Draw = Callable[["Figure"], None]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats are shown with 3 significant digits."""

    def cell(value: Any) -> str:
        return f"{value:.3g}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend. Raises ``ModuleNotFoundError`` that names
    the install command (``INSTALL_BENCH``) when matplotlib is not installed."""
    try:
        import matplotlib
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            f"plotting benchmark results needs matplotlib, which the bench extra installs: {INSTALL_BENCH}",
            name="matplotlib",
        ) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_plot(path: Path, draw: Draw) -> Path:
    """Call ``draw`` with a fresh matplotlib ``Figure`` (``FIGURE_SIZE``), lay it out tightly and save
    it as a PNG at ``path``; returns ``path``."""
    plt = pyplot()
    figure = plt.figure(figsize=FIGURE_SIZE)
    try:
        draw(figure)
        figure.tight_layout()
        figure.savefig(path, dpi=DPI)
    finally:
        plt.close(figure)
    return path


def write_results(out_dir: Path, payload: Any, markdown: str, draw: Draw, stem: str = "results") -> dict[str, Path]:
    """Write ``payload`` as ``<stem>.json``, ``markdown`` as ``<stem>.md`` and the figure ``draw``
    fills (``save_plot``) as ``<stem>.png`` into ``out_dir`` (created); the text files are written
    atomically (UTF-8). Returns the paths written:
    ``{"json", "markdown", "plot"}``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / f"{stem}.json", "markdown": out_dir / f"{stem}.md", "plot": out_dir / f"{stem}.png"}
    atomic_write_text(paths["json"], json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(paths["markdown"], markdown)
    save_plot(paths["plot"], draw)
    return paths
