"""The backends: what runs a model behind the ``Model``/``Target`` protocols.

- ``transformers``: a causal LM on CPU or CUDA, the exact reference;
- ``llama_cpp``: GGUF files through llama.cpp, the fast CPU engine;
- ``fast_path``: the transformers backend on static caches and width-bucketed (CUDA-graph) passes;
- ``engine``: verification by an existing serving engine over HTTP (vLLM, SGLang, llama.cpp's server).

Importing this package loads none of them (no torch, no llama.cpp).
"""
