"""A target backed by an existing serving engine over HTTP (vLLM, SGLang, the llama-cpp-python server).

specdraft's drafters run in light front-ends while an engine that already does tensor/pipeline
parallelism, multiple nodes and continuous batching verifies: ``EngineModel`` implements the
``Model`` protocol, its ``EngineTarget`` the ``Target`` protocol (greedy only; see ``model``).
Standard library only (no torch); the llama-cpp-python server dialect needs llama-cpp-python
locally for the GGUF tokenizer.
"""

from .apis import SglangApi, VllmApi
from .config import ENGINE_APIS, EngineConfig
from .http import EngineClient, EngineError
from .llama_server import LlamaServerApi
from .model import EngineModel, EngineTarget
from .structured import structured_outputs

__all__ = [
    "ENGINE_APIS",
    "EngineClient",
    "EngineConfig",
    "EngineError",
    "EngineModel",
    "EngineTarget",
    "LlamaServerApi",
    "SglangApi",
    "VllmApi",
    "structured_outputs",
]
