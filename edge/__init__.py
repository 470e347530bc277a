"""edge: an on-device llama.cpp model drafting for a target on a GPU server over HTTP (LLMCad).

Not built yet: this package is reserved for the edge adapter (see DESIGN.md).
"""
