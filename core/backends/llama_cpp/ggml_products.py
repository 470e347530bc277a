"""One ggml matrix product, run through the CPU backend of the installed llama.cpp build (ctypes).

The kernel-level view of batch invariance: a weight matrix ``W`` of a quantized type (random values,
quantized by ggml itself) times ``m`` activation columns, computed by exactly the code a model's
layer runs (``ggml_mul_mat`` on the CPU backend, weights repacked where ``repack`` asks for the
CPU's extra buffer type, as llama.cpp loads a GGUF with ``use_extra_bufts``). Comparing the product
over ``m`` columns with ``m`` one-column products, bytes for bytes, checks every kernel a pass width
can select (gemv, gemm, multi-column dot products) without a model around it. Nothing here is used
to generate text.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .library import library, llama_cpp_folder

# ggml's enum ggml_type values for the types the embedded GGUF files use (ggml.h).
GGML_TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q8_0": 8, "q4_K": 12, "q5_K": 13, "q6_K": 14}
# values per block of each type
_BLOCK = {"f32": 1, "f16": 1, "q4_0": 32, "q4_1": 32, "q5_0": 32, "q8_0": 32, "q4_K": 256, "q5_K": 256, "q6_K": 256}
_GGML_TYPE_F32 = GGML_TYPES["f32"]
_DEVICE_TYPE_CPU = 0  # enum ggml_backend_dev_type
_REPACK_BUFFER = b"CPU_REPACK"


class _InitParams(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


def _libraries() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    """libggml (backends, which pulls in libggml-base) and libggml-cpu, from where llama_cpp loaded
    its own (``LLAMA_CPP_LIB_PATH`` overrides the package's folder, as for llama_cpp), after
    ``library()`` has initialised llama.cpp as for every model of specdraft's."""
    library()
    folder = os.environ.get("LLAMA_CPP_LIB_PATH") or str(Path(llama_cpp_folder()) / "lib")
    ggml = ctypes.CDLL(str(Path(folder) / "libggml.so"), mode=ctypes.RTLD_GLOBAL)
    cpu = ctypes.CDLL(str(Path(folder) / "libggml-cpu.so"), mode=ctypes.RTLD_GLOBAL)
    p, i64, sz = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t
    signatures = {
        "ggml_init": (p, [_InitParams]),
        "ggml_free": (None, [p]),
        "ggml_new_tensor_2d": (p, [p, ctypes.c_int, i64, i64]),
        "ggml_mul_mat": (p, [p, p, p]),
        "ggml_new_graph": (p, [p]),
        "ggml_build_forward_expand": (None, [p, p]),
        "ggml_nbytes": (sz, [p]),
        "ggml_row_size": (sz, [ctypes.c_int, i64]),
        "ggml_tensor_overhead": (sz, []),
        "ggml_graph_overhead": (sz, []),
        "ggml_quantize_chunk": (sz, [ctypes.c_int, p, p, i64, i64, i64, p]),
        "ggml_backend_dev_by_type": (p, [ctypes.c_int]),
        "ggml_backend_dev_backend_reg": (p, [p]),
        "ggml_backend_reg_get_proc_address": (p, [p, ctypes.c_char_p]),
        "ggml_backend_buft_name": (ctypes.c_char_p, [p]),
        "ggml_backend_cpu_buffer_type": (p, []),
        "ggml_backend_alloc_ctx_tensors_from_buft": (p, [p, p]),
        "ggml_backend_buffer_free": (None, [p]),
        "ggml_backend_tensor_set": (None, [p, p, sz, sz]),
        "ggml_backend_tensor_get": (None, [p, p, sz, sz]),
        "ggml_backend_graph_compute": (ctypes.c_int, [p, p]),
        "ggml_backend_free": (None, [p]),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(ggml, name)
        function.restype, function.argtypes = restype, argtypes
    cpu.ggml_backend_cpu_init.restype = p
    cpu.ggml_backend_cpu_set_n_threads.argtypes = [p, ctypes.c_int]
    return ggml, cpu


@dataclass(frozen=True)
class ProductShape:
    """``rows`` x ``k`` weights of ``weight_type`` (a ``GGML_TYPES`` name); ``k`` a multiple of the
    type's block (256 for K-quants, 32 for the others)."""

    weight_type: str
    k: int
    rows: int
    repack: bool = False

    def __post_init__(self) -> None:
        if self.weight_type not in GGML_TYPES:
            raise ValueError(f"weight_type must be one of {sorted(GGML_TYPES)}, got {self.weight_type!r}")
        if self.k < 1 or self.k % _BLOCK[self.weight_type] or self.rows < 1:
            block = _BLOCK[self.weight_type]
            raise ValueError(f"{self.weight_type} needs k a positive multiple of {block} and rows >= 1")


class GgmlProduct:
    """``W @ X`` for one random ``W`` (seeded), on the CPU backend with ``threads`` threads.

    ``run(x)`` takes ``x`` as ``[m, k]`` float32 (m activation rows, ggml's columns) and returns the
    product ``[m, rows]``. Each call builds a graph for its ``m`` (as llama.cpp builds one per batch).
    """

    def __init__(self, shape: ProductShape, threads: int = 2, seed: int = 0) -> None:
        self.shape = shape
        self.ggml, cpu = _libraries()
        self.backend = cpu.ggml_backend_cpu_init()
        cpu.ggml_backend_cpu_set_n_threads(self.backend, threads)
        weight_type = GGML_TYPES[shape.weight_type]
        self._weights_ctx = self.ggml.ggml_init(_InitParams(self.ggml.ggml_tensor_overhead() * 4, None, True))
        self.weight = self.ggml.ggml_new_tensor_2d(self._weights_ctx, weight_type, shape.k, shape.rows)
        buffer_type = self._buffer_type(shape.repack)
        self._weights_buffer = self.ggml.ggml_backend_alloc_ctx_tensors_from_buft(self._weights_ctx, buffer_type)
        values = np.random.default_rng(seed).standard_normal((shape.rows, shape.k), dtype=np.float32)
        quantized = ctypes.create_string_buffer(self.ggml.ggml_nbytes(self.weight))
        written = self.ggml.ggml_quantize_chunk(
            weight_type, values.ctypes.data, quantized, 0, shape.rows, shape.k, None
        )
        if written != len(quantized):
            raise RuntimeError(f"ggml quantized {written} of {len(quantized)} bytes")
        self.ggml.ggml_backend_tensor_set(self.weight, quantized, 0, len(quantized))  # repacks in a repack buffer

    def _buffer_type(self, repack: bool) -> int:
        if not repack:
            return self.ggml.ggml_backend_cpu_buffer_type()
        device = self.ggml.ggml_backend_dev_by_type(_DEVICE_TYPE_CPU)
        registry = self.ggml.ggml_backend_dev_backend_reg(device)
        address = self.ggml.ggml_backend_reg_get_proc_address(registry, b"ggml_backend_dev_get_extra_bufts")
        extra = ctypes.CFUNCTYPE(ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)(address)(device)
        for i in range(16):
            if not extra[i]:
                break
            if self.ggml.ggml_backend_buft_name(extra[i]) == _REPACK_BUFFER:
                return extra[i]
        raise RuntimeError("this llama.cpp build has no CPU repack buffer type")

    def run(self, x: np.ndarray) -> np.ndarray:
        m, k = x.shape
        if k != self.shape.k:
            raise ValueError(f"x has {k} values per row, W {self.shape.k}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        g = self.ggml
        ctx = g.ggml_init(_InitParams(g.ggml_tensor_overhead() * 8 + g.ggml_graph_overhead(), None, True))
        buffer = None
        try:
            activations = g.ggml_new_tensor_2d(ctx, _GGML_TYPE_F32, k, m)
            product = g.ggml_mul_mat(ctx, self.weight, activations)  # [m, rows]
            graph = g.ggml_new_graph(ctx)
            g.ggml_build_forward_expand(graph, product)
            buffer = g.ggml_backend_alloc_ctx_tensors_from_buft(ctx, g.ggml_backend_cpu_buffer_type())
            g.ggml_backend_tensor_set(activations, x.ctypes.data, 0, x.nbytes)
            if g.ggml_backend_graph_compute(self.backend, graph) != 0:
                raise RuntimeError("ggml could not compute the product")
            out = np.empty((m, self.shape.rows), dtype=np.float32)
            g.ggml_backend_tensor_get(product, out.ctypes.data, 0, out.nbytes)
            return out
        finally:
            if buffer:
                g.ggml_backend_buffer_free(buffer)
            g.ggml_free(ctx)

    def close(self) -> None:
        if self.backend:
            self.ggml.ggml_backend_buffer_free(self._weights_buffer)
            self.ggml.ggml_free(self._weights_ctx)
            self.ggml.ggml_backend_free(self.backend)
            self.backend = None

    def __enter__(self) -> "GgmlProduct":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def width_invariance(product: GgmlProduct, widths: range | list[int], seed: int = 1) -> dict[int, int]:
    """For each width m: how many of the m columns of one m-column product differ, in any byte, from
    the same column computed alone. All zeros: the kernels are batch-invariant for this product."""
    widths = list(widths)
    x = np.random.default_rng(seed).standard_normal((max(widths), product.shape.k), dtype=np.float32)
    alone = np.concatenate([product.run(x[i : i + 1]) for i in range(max(widths))])  # [max width, rows]
    differing = {}
    for m in widths:
        together = product.run(x[:m])
        differing[m] = int(sum(together[i].tobytes() != alone[i].tobytes() for i in range(m)))
    return differing


_Q8_K_BLOCK_BYTES = 4 + 256 + 2 * 16  # d (float), 256 values, 16 sums of 16 (ggml-common.h's block_q8_K)


def quantize_q8_K(x: np.ndarray, reference: bool = False) -> bytes:
    """``x`` (float32, a multiple of 256 values) as Q8_K blocks, the raw bytes: through the CPU
    backend's ``quantize_row_q8_K``, which quantizes the activations of every K-quant product, or
    through ggml's reference ``quantize_row_q8_K_ref``. The patched build's AVX2 version gives the
    reference's bytes."""
    x = np.ascontiguousarray(x, dtype=np.float32).ravel()
    if x.size % 256:
        raise ValueError(f"Q8_K quantizes blocks of 256 values, got {x.size}")
    ggml, cpu = _libraries()  # libggml's handle also finds libggml-base's symbols
    function = ggml.quantize_row_q8_K_ref if reference else cpu.quantize_row_q8_K
    function.argtypes, function.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64], None
    out = ctypes.create_string_buffer(x.size // 256 * _Q8_K_BLOCK_BYTES)
    function(x.ctypes.data, out, x.size)
    return out.raw
