"""Each patched llama.cpp kernel, on its own: a product over 1..20 activation columns gives every
column, byte for byte, what the same column gets alone (``ggml_products.width_invariance``).

The weights are random, quantized by ggml; the products run through ``ggml_mul_mat`` on the CPU
backend of the installed build, so each width takes the kernel a model's pass of that many tokens
takes: the repacked Q8_0, Q5_0, Q6_K and Q4_K rows (8 interleaved, one kernel for every width; on AVX2
they replace ggml's Q4_K 8x8 gemm and gemv), the repacked Q4_0 (as shipped), and, for weights not repacked, the
multi-column Q6_K, Q5_K, Q4_K and Q4_1 dot products (vec_dot itself for a lone column, but for Q6_K) and
ggml's tiled kernel, which takes Q6_K products over 32 or more columns. ``k`` spans several super-blocks
and the rows several threads' chunks.
A negative control shows the comparison can fail: with ``GGML_CPU_TILED_MM_ALL_TYPES=1`` (read once per
process, so in a subprocess) the tiled kernel also takes the types stock ggml gives it, whose dot
products round differently, and a Q5_K product over 32 or more columns changes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from specdraft.backends.llama_cpp.ggml_products import GgmlProduct, ProductShape, quantize_q8_K, width_invariance

WIDTHS = range(1, 21)
SHAPES = [
    ProductShape("q4_K", k=2048, rows=64, repack=True),  # 8 rows interleaved, every width (patch: q4k-rows8)
    ProductShape("q6_K", k=2048, rows=64),  # multi-column dot products (patch: multicolumn-dot)
    ProductShape("q5_K", k=2048, rows=64),  # multi-column dot products (patch: multicolumn-dot)
    ProductShape("q4_K", k=2048, rows=64),  # not repacked: multi-column dot products (patch: multicolumn-dot)
    ProductShape("q4_1", k=2048, rows=64),  # multi-column dot products (patch: multicolumn-dot)
    ProductShape("q4_0", k=2048, rows=64, repack=True),  # repacked as shipped (research: already invariant)
    ProductShape("q8_0", k=2048, rows=64),  # not repacked: tinyBLAS from 2 columns, vec_dot for 1 (same arithmetic)
    ProductShape("q5_0", k=2048, rows=64),  # the same
    ProductShape("q8_0", k=896, rows=48, repack=True),  # 8 rows interleaved, every width (patch: q8-q5-rows8)
    ProductShape("q5_0", k=896, rows=48, repack=True),  # the same; the 0.5B's 896-wide layers
    ProductShape("q6_K", k=2048, rows=48, repack=True),  # the same kernel family (patch: q6k-rows8)
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s.weight_type}{'-repack' if s.repack else ''}")
def test_every_width_gives_each_column_the_bytes_it_gets_alone(shape):
    with GgmlProduct(shape) as product:
        assert width_invariance(product, WIDTHS) == {m: 0 for m in WIDTHS}


@pytest.mark.parametrize("k", [1536, 8960])
def test_q6_k_products_through_the_tiled_kernel_give_each_column_its_bytes_alone(k):
    """From 32 columns ggml's tiled kernel takes Q6_K (its tiles of 8 and 16 columns and ragged ends);
    below, the multi-column dot products in the tiled kernel's order: every width agrees with one column.
    ``k``: qwen2.5-coder-1.5b's output head and its ``ffn_down``."""
    with GgmlProduct(ProductShape("q6_K", k=k, rows=48)) as product:
        widths = [1, 2, 15, 16, 17, 23, 24, 31, 32, 33, 48, 64, 100]
        assert width_invariance(product, widths) == {m: 0 for m in widths}


def test_the_product_is_the_product():
    """The kernels compute W @ x, so the bytes compared above mean something: against numpy on the
    float weights before quantization (loosely: quantization error, not the kernel, sets the bound)."""

    shape = ProductShape("q6_K", k=1024, rows=32)
    # the weights as GgmlProduct seeds them
    weights = np.random.default_rng(0).standard_normal((shape.rows, shape.k), dtype=np.float32)
    x = np.random.default_rng(1).standard_normal((5, shape.k), dtype=np.float32)
    with GgmlProduct(shape) as product:
        got = product.run(x)
    want = x @ weights.T
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()


@pytest.mark.parametrize(("weight_type", "k"), [("q8_0", 896), ("q5_0", 896), ("q6_K", 2048), ("q4_K", 2048)])
def test_the_interleaved_rows_compute_the_product_the_other_kernels_compute(weight_type, k):
    """The Q8_0, Q5_0, Q6_K and Q4_K rows repacked 8 at a time sum the same integer products as tinyBLAS
    (Q8_0, Q5_0) or the multi-column dot products (the K-quants) and round their floats in another order: the
    two agree to float rounding (not bit for bit, which they need not: the one-token pass takes the interleaved
    kernel too)."""

    x = np.random.default_rng(1).standard_normal((7, k), dtype=np.float32)
    with GgmlProduct(ProductShape(weight_type, k=k, rows=64, repack=True)) as product:
        interleaved = product.run(x)
    with GgmlProduct(ProductShape(weight_type, k=k, rows=64)) as product:
        other = product.run(x)
    assert np.abs(interleaved - other).max() < 1e-5 * np.abs(other).max()


VNNI_PRODUCT = """
import sys
import numpy as np
from specdraft.backends.llama_cpp.ggml_products import GgmlProduct, ProductShape
weight_type, k, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
x = np.random.default_rng(2).standard_normal((21, k), dtype=np.float32)
with GgmlProduct(ProductShape(weight_type, k=k, rows=64, repack=True)) as product:
    np.save(out, np.concatenate([product.run(x[:n]) for n in (1, 3, 4, 9, 21)]))  # 1-8 columns at a time
"""


def _cpu_has_vpdpbusd() -> bool:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = cpuinfo.read().split()
    except OSError:
        return False
    return "avx_vnni" in flags or ("avx512_vnni" in flags and "avx512vl" in flags)


@pytest.mark.skipif(not _cpu_has_vpdpbusd(), reason="this CPU has no vpdpbusd: the interleaved rows take AVX2 only")
@pytest.mark.parametrize(("weight_type", "k"), [("q8_0", 896), ("q5_0", 896), ("q6_K", 2048), ("q4_K", 2048)])
def test_the_interleaved_rows_give_the_same_bytes_with_and_without_vpdpbusd(weight_type, k, tmp_path):
    """Where the CPU has AVX512-VNNI or AVX-VNNI, the rows repacked 8 at a time sum their byte
    products with vpdpbusd; ``GGML_REPACK_VNNI=0`` (read once per process, so in subprocesses) keeps
    AVX2's maddubs, madd and add. The integers are the same, so the products are the same bytes: the wheel
    gives the logits it gives on a CPU without VNNI."""

    products = {}
    for vnni in ("1", "0"):
        out = tmp_path / f"{vnni}.npy"
        env = dict(os.environ, GGML_REPACK_VNNI=vnni)
        cmd = [sys.executable, "-c", VNNI_PRODUCT, weight_type, str(k), str(out)]
        subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=True)
        products[vnni] = np.load(out)
    assert products["1"].tobytes() == products["0"].tobytes()
    assert np.abs(products["1"]).max() > 0


NEGATIVE_CONTROL = """
import json
from specdraft.backends.llama_cpp.ggml_products import GgmlProduct, ProductShape, width_invariance
with GgmlProduct(ProductShape("q5_K", k=2048, rows=64)) as product:
    print(json.dumps(width_invariance(product, [1, 8, 16, 31, 32, 40])))
"""


def test_the_k_quant_activation_quantizer_gives_the_reference_bytes():
    """The patched build quantizes a K-quant product's activations (Q8_K) 8 values at a time
    (llama-cpp-q8k-quantize-avx2.patch): byte for byte ggml's scalar reference, at every scale,
    with ties of magnitude (a negative and a positive maximum: the first one sets the scale) and
    products that land on .5 (rounded to even)."""
    rng = np.random.default_rng(0)
    rows = [rng.standard_normal(4096).astype(np.float32) * scale for scale in (1.0, 1e-3, 1e3)]
    ties = rng.standard_normal(4096).astype(np.float32)
    ties[[3, 40]], ties[[300, 301]] = (-9.0, 9.0), (9.5, -9.5)
    rows += [ties, np.round(rng.standard_normal(4096) * 4).astype(np.float32)]
    for x in rows:
        assert quantize_q8_K(x) == quantize_q8_K(x, reference=True)


def test_negative_control_the_tiled_kernel_on_every_type_differs_from_32_columns():
    env = dict(os.environ, GGML_CPU_TILED_MM_ALL_TYPES="1")
    run = subprocess.run(
        [sys.executable, "-c", NEGATIVE_CONTROL], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    out = run.stdout
    differing = {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}
    assert differing[1] == differing[8] == differing[16] == differing[31] == 0
    assert differing[32] > 0 and differing[40] > 0
