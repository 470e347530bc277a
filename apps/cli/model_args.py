"""Command-line arguments that several `specdraft` commands share."""

from __future__ import annotations

import argparse


def add_model_args(parser: argparse.ArgumentParser, default_model: str) -> None:
    """--model (default ``default_model``), --backend, --device, --dtype and --context."""
    from specdraft.model_config import BACKENDS, DTYPES, ModelConfig

    defaults = ModelConfig()
    parser.add_argument("--model", default=default_model, help="target model: registry name, checkpoint folder, .gguf file or hub id (default: %(default)s)")
    parser.add_argument("--backend", default=defaults.backend, choices=BACKENDS, help="transformers (exact float32 reference, CPU or CUDA) or llama-cpp (the GGUF file as it is: fast on a CPU); auto = llama-cpp for a .gguf path, else transformers (default: %(default)s)")
    parser.add_argument("--device", default=defaults.device, help="transformers: auto (CUDA if available), cpu or cuda[:N] (default: %(default)s)")
    parser.add_argument("--dtype", default=defaults.dtype, choices=DTYPES, help="transformers weights dtype; auto = float32, which keeps the output identical to plain decoding on GPUs too (bfloat16/float16 may flip near-ties)")
    parser.add_argument("--context", type=int, default=defaults.context, metavar="TOKENS", help="llama-cpp: context size in tokens (default: 0 = min(the model's, 4096))")


def model_pool(args: argparse.Namespace):
    """The ``ModelPool`` that the model arguments of ``add_model_args`` describe."""
    from specdraft.apps.model_pool import ModelPool

    return ModelPool(args.device, args.dtype, args.backend, args.context)
