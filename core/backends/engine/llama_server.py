"""The llama-cpp-python server's dialect (``python -m llama_cpp.server``): text prompts, token texts.

That server takes a prompt only as text and names tokens by their text, not their ids, so this
adapter needs the engine's GGUF file locally (``local``: a ``LlamaCppModel`` of the same file;
its tokenizer is compared with the engine's at start-up through ``/extras/tokenize``):

- **ids -> text**: the ids are rendered with special tokens as their text (``<|im_start|>``) and
  sent only if the engine's tokenizer (the same as ``local``'s) gives back exactly these ids. A
  draft whose text would tokenize differently (``cat`` + ``s`` becomes ``cats``) is cut to its
  longest prefix that does not; the rows past the cut are never needed unless the engine's own
  choice is that non-canonical token, and then ``EngineError`` says so (its own output cannot be
  sent back as text: use vLLM or SGLang, which take ids). A context that does not round-trip
  raises the same way; so does one that ends inside a character (a model writing Cyrillic or CJK
  text byte by byte), which is not text at all.
- **one request per verification**: ``/v1/completions`` with ``echo``, ``logprobs: 1``,
  ``max_tokens: 1``, ``temperature: 0`` and ``repeat_penalty: 1`` (the server's default of 1.1
  would change greedy decoding). In this server's echo output, entry ``i`` of ``top_logprobs`` is
  the distribution *after* prompt token ``i`` (it pairs each token with its own row; the first entry
  is null and entries of BOS tokens are left out).
- **text -> id**: a row's top-1 text names one id when no other token has the same text (about 99%
  of smollm2's vocabulary); otherwise (special tokens and end of generation all read "", partial
  UTF-8 bytes) the row is resolved with extra one-token requests at that prefix: the greedy
  token's raw log-probability L, then a binary search over the candidates with ``logit_bias``
  (the greedy token among a half, raised by +100, has log-probability L exactly when the argmax
  is in that half). An end-of-generation token is seen as an empty stop and read as the model's
  EOS id (which end-of-generation id, where a model has several, is not visible here).
"""

from __future__ import annotations

import ctypes
from collections import defaultdict
from functools import cached_property
from typing import Any, Sequence

from .apis import PROBE_TEXT
from .http import EngineClient, EngineError

BIAS = 100.0


class LlamaServerApi:
    ranks = False  # text prompts: the rows of a constrained answer could not always be sent back

    def __init__(self, client: EngineClient, model: str, local: Any) -> None:
        from ..llama_cpp.library import library
        from ..llama_cpp.model import LlamaCppModel

        if not isinstance(local, LlamaCppModel):
            raise ValueError("the llama-cpp-server engine api needs the same GGUF model locally (a llama-cpp model)")
        self.client = client
        self.model = model
        self.local = local

        ll = library()
        vocab = local.file.vocab
        self._ll = ll
        self._bos = int(ll.llama_vocab_bos(vocab))
        self._add_bos = bool(ll.llama_vocab_get_add_bos(vocab))
        self._eos = int(ll.llama_vocab_eos(vocab))
        self.extra_requests = 0  # resolution requests (ambiguous token texts)
        self._rendered: dict[int, bytes] = {}  # token -> its text with special tokens written out

    # --- vocabulary ---------------------------------------------------------------------------
    def _piece(self, token: int, special: bool) -> bytes:
        buffer = (ctypes.c_char * 256)()
        n = self._ll.llama_token_to_piece(self.local.file.vocab, int(token), buffer, 256, 0, special)
        return buffer.raw[: max(n, 0)]

    @cached_property
    def _by_text(self) -> dict[str, list[int]]:
        """Token text as the server writes it (special tokens empty, invalid UTF-8 dropped) -> ids."""
        table: dict[str, list[int]] = defaultdict(list)
        for token in range(self.local.file.n_vocab):
            table[self._piece(token, False).decode("utf-8", "ignore")].append(token)
        return dict(table)

    def render(self, ids: Sequence[int]) -> str | None:
        """The text the engine tokenizes back into exactly ``ids``, or None if there is none."""
        body = list(ids[1:]) if self._add_bos and ids and ids[0] == self._bos else list(ids)
        pieces = []
        for token in body:
            piece = self._rendered.get(token)
            if piece is None:
                piece = self._rendered[token] = self._piece(token, True)
            pieces.append(piece)
        try:
            text = b"".join(pieces).decode("utf-8")
        except UnicodeDecodeError:
            return None
        return text if self.local.tokenizer.encode(text, add_special_tokens=False) == body else None

    # --- engine -------------------------------------------------------------------------------
    def info(self) -> dict:
        models = self.client.get("/v1/models").get("data") or []
        name = self.model or (models[0]["id"] if models else "")
        return {"model": name, "max_length": 0}

    def tokenize(self, text: str) -> list[int]:
        return [int(t) for t in self.client.post("/extras/tokenize", {"input": text})["tokens"]]

    def check_tokenizer(self) -> None:
        want = self.local.tokenizer.encode(PROBE_TEXT, add_special_tokens=False)
        got = self.tokenize(PROBE_TEXT)
        if got != want:
            raise ValueError(
                f"the local model {self.local.name!r} does not tokenize like the engine at {self.client.base}"
            )

    def _complete(self, text: str, echo: bool, bias: dict[int, float] | None = None) -> dict:
        body: dict[str, Any] = {
            "prompt": text,
            "max_tokens": 1,
            "temperature": 0.0,
            "echo": echo,
            "logprobs": 1,
            "repeat_penalty": 1.0,
            "frequency_penalty": 0.0,
            "presence_penalty": 0.0,
        }
        if self.model:
            body["model"] = self.model
        if bias:
            body["logit_bias"] = {str(t): b for t, b in bias.items()}
        return self.client.post("/v1/completions", body)["choices"][0]

    def choices(self, ids: Sequence[int], first: int) -> list[int]:
        """As ``apis.VllmApi.choices``; fewer rows where the draft was cut (module docstring)."""
        ids = [int(t) for t in ids]
        n = len(ids)
        text = self.render(ids)
        while text is None and n > first:
            n -= 1
            text = self.render(ids[:n])
        if text is None:
            raise EngineError(
                "the context cannot be sent to the llama-cpp-python server as text that tokenizes "
                "back into the same tokens (its prompts are text); use an engine that takes token ids"
            )
        choice = self._complete(text, echo=True)
        tops = self._echo_rows(ids[:n], choice.get("logprobs") or {})
        rows: list[int] = []
        for j in range(first, n + 1):  # row j: the token after ids[:j]
            top = tops.get(j - 1)
            candidates = self._by_text.get(top, []) if top is not None else []
            if j == n and top is None:  # no echo entry: the generated token is the row
                generated = choice["text"][len(text) :]
                if choice.get("finish_reason") == "stop" and not generated:
                    rows.append(self._eos)
                    continue
                candidates = self._by_text.get(generated, [])
            if len(candidates) == 1:
                rows.append(candidates[0])
            else:
                rows.append(self._resolve(ids[:j]))
        return rows

    def _echo_rows(self, ids: list[int], logprobs: dict) -> dict[int, str]:
        """Prompt index i -> the top-1 text after ids[i], for the entries the server wrote."""
        tops = logprobs.get("top_logprobs") or []
        shifted = self._add_bos and ids and ids[0] == self._bos  # the server dropped the leading BOS
        labels = ids[1:] if shifted else ids
        out: dict[int, str] = {}
        k = 0
        for i in range(len(ids)):
            if i < len(labels) and labels[i] == self._bos:
                continue  # the server writes no entry for a BOS token
            if i >= len(labels):  # the generated token's entry (shifted layout)
                break
            if k < len(tops) and tops[k]:
                out[i] = next(iter(tops[k]))
            k += 1
        return out

    def _resolve(self, prefix: list[int]) -> int:
        """The engine's greedy token after ``prefix`` when its text does not name it (module docstring)."""
        text = self.render(prefix)
        if text is None:
            raise EngineError(
                "a sequence the engine must continue is not representable as text (llama-cpp-python server)"
            )
        self.extra_requests += 1
        probe = self._complete(text, echo=False)
        logprobs = probe.get("logprobs") or {}
        tokens = logprobs.get("tokens") or []
        if not tokens:
            if probe.get("finish_reason") == "stop":
                return self._eos  # an end-of-generation token
            return self._bos  # the server writes no entry for a BOS token
        target = float(logprobs["token_logprobs"][0])
        candidates = sorted(self._by_text.get(tokens[0], []))
        if not candidates:
            raise EngineError(f"the engine's token {tokens[0]!r} is not in the local vocabulary")
        while len(candidates) > 1:
            half = candidates[: len(candidates) // 2]
            self.extra_requests += 1
            answer = self._complete(text, False, {t: BIAS for t in half}).get("logprobs") or {}
            values = answer.get("token_logprobs") or []
            candidates = half if values and float(values[0]) == target else candidates[len(half) :]
        return candidates[0]
