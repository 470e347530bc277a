"""Command-line arguments that several `specdraft` commands share."""

from __future__ import annotations

import argparse


def add_model_args(parser: argparse.ArgumentParser, default_model: str) -> None:
    """--model (default ``default_model``), --device and --dtype."""
    parser.add_argument("--model", default=default_model, help="target model: registry name, path or hub id (default: %(default)s)")
    parser.add_argument("--device", default="auto", help="auto (CUDA if available), cpu or cuda[:N] (default: %(default)s)")
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"], help="weights dtype; auto = float32, which keeps the output identical to plain decoding on GPUs too (bfloat16/float16 may flip near-ties)")
