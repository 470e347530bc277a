"""What a CPU user runs today on a GGUF file: llama-cpp-python's own generation, plain and with its
``LlamaPromptLookupDecoding``, as benchmark methods beside specdraft on the llama.cpp backend.

Each peer loads the same GGUF file into its own ``Llama`` (its defaults, as a user gets them: weight
repacking on), generates greedily (``temp=0``) until an end-of-generation token or the case's
``max_new_tokens``, and resets its state before each case so that every method pays the same
prefill (llama-cpp-python would otherwise reuse a cached prompt prefix across calls; specdraft's
prefix cache is a later issue). Passes are counted as ``eval`` calls (one per batch it decodes).
"""

from __future__ import annotations

import time
from typing import Any

from .methods import BenchCase, Measurement


def _counting_llama(**kwargs: Any) -> Any:
    from llama_cpp import Llama

    class CountingLlama(Llama):
        passes = 0

        def eval(self, tokens):  # one llama_decode batch per call for the prompts used here
            self.passes += 1
            return super().eval(tokens)

    return CountingLlama(**kwargs)


class LlamaCppPeer:
    """llama-cpp-python's ``Llama.generate`` on ``model_path``; ``prompt_lookup`` tokens > 0 adds its
    ``LlamaPromptLookupDecoding(num_pred_tokens=prompt_lookup)``."""

    def __init__(self, name: str, model_path: str, context: int, threads: int, prompt_lookup: int = 0) -> None:
        draft_model = None
        if prompt_lookup:
            from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

            draft_model = LlamaPromptLookupDecoding(num_pred_tokens=prompt_lookup)
        self.name = name
        # logits_all: a draft model makes Llama compute every row's logits anyway, but its scores
        # buffer is sized from the constructor argument, so without it a prompt longer than n_batch
        # fails inside Llama.eval (llama-cpp-python 0.3.36: "could not broadcast input array").
        self.llama = _counting_llama(
            model_path=model_path,
            n_ctx=context,
            n_batch=512,
            n_threads=threads,
            n_threads_batch=threads,
            draft_model=draft_model,
            logits_all=draft_model is not None,
            verbose=False,
        )

    def _is_eog(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self.llama._model.vocab, token))  # what Llama itself stops at

    def run(self, case: BenchCase) -> Measurement:
        llama = self.llama
        llama.reset()
        llama.passes = 0
        tokens: list[int] = []
        start = time.perf_counter()
        first_token_s = 0.0
        for token in llama.generate(
            list(case.prompt_ids), temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True
        ):
            if not tokens:
                first_token_s = time.perf_counter() - start
            tokens.append(int(token))
            if self._is_eog(token):
                break
            if len(tokens) >= case.max_new_tokens:
                break
        wall = time.perf_counter() - start
        steps = max(1, llama.passes - 1)
        mean_accepted = max(0.0, len(tokens) / steps - 1.0)
        return Measurement(self.name, case.id, tokens, wall, llama.passes, mean_accepted, first_token_s or wall)
