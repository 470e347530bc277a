"""The llama.cpp backend (llama-cpp-python): GGUF files as they are, the fast engine on a CPU.

``LlamaCppModel`` implements the ``Model`` protocol; its targets verify token trees in one
``llama_decode`` batch (``target``). Only numpy and llama-cpp-python are needed, not torch.
"""

from .model import DEFAULT_CONTEXT, LlamaCppConfig, LlamaCppModel, LlamaTokenizer
from .target import LlamaCppTarget, LlamaSession

__all__ = ["DEFAULT_CONTEXT", "LlamaCppConfig", "LlamaCppModel", "LlamaCppTarget", "LlamaSession", "LlamaTokenizer"]
