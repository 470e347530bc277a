"""RemoteModel and RemoteTarget: the ``Model`` and ``Target`` protocols over an edge verify server.

``RemoteModel(url, key, local)`` is the model ``specdraft serve --edge`` serves, seen from a laptop:
``SpeculativeGenerator(RemoteModel(...), ...)`` with a local drafter (for example a llama.cpp draft
model, ``specdraft.drafters.DraftModelDrafter``) generates the server model's own output, with one
round trip per verification. ``local`` is a model on this machine sharing the server's tokenizer
(checked by fingerprint): it encodes prompts and decodes text; nothing of it is run by the target.

A ``RemoteTarget`` is one server session. It returns only the target's choices (``returns_logits``
False: the generator verifies deterministic drafts by following them, greedy or sample-and-compare
under the positional ``TokenChooser``, whose draws the server makes with the same seed). Calls map
onto the server: ``prefill`` opens the session, ``verify`` sends the draft (``commit: false``) together
with the previous step's commit (``previous``), so a step costs one round trip, ``commit`` is kept
until the next ``verify``, ``close`` deletes the session. Misuse raises ``RuntimeError`` before
anything is sent, as the local targets do. ``RemoteModel.cost`` learns round-trip seconds by draft
width, which the engine's draft-length policy reads as the pass cost.

Needs no torch: numpy (through ``specdraft``'s core) and the standard library only.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

from specdraft.cost import PassCostProfile
from specdraft.draft import Draft
from specdraft.sampling import TokenChooser
from specdraft.served_text import ServedText
from specdraft.target import CacheElsewhere
from specdraft.verification import Verification

from .transport import EdgeConnection, TransportConfig


class RemoteModel(ServedText):
    """The served model (``Model`` protocol) through ``connection``; text through ``local``."""

    served_by = "is verified by a remote server"

    def __init__(
        self,
        url: str,
        key: str,
        local: Any,
        transport: TransportConfig = TransportConfig(),
        connection: EdgeConnection | None = None,
    ) -> None:
        self.connection = connection or EdgeConnection(url, key, transport)
        self.local = local
        self.info = self.connection.request("GET", "/v1/edge/info")
        if self.info["tokenizer"] != local.tokenizer.fingerprint():
            raise ValueError(
                f"the local model {getattr(local, 'name', local)!r} does not share the server model "
                f"{self.info['model']!r}'s tokenizer"
            )
        self.name = f"{self.info['model']} @ {self.connection.url}"
        self.tokenizer = local.tokenizer
        self.cost = PassCostProfile()

    backend = "remote"

    @property
    def exact(self) -> bool:
        return bool(self.info["exact"])

    @property
    def max_length(self) -> int:
        return int(self.info["max_length"])

    @property
    def vocab_size(self) -> int:
        return int(self.info["vocab_size"])

    @property
    def eos_token_ids(self) -> frozenset[int]:
        return frozenset(int(t) for t in self.info["eos_token_ids"])

    @property
    def has_chat_template(self) -> bool:
        return bool(self.info["has_chat_template"]) and bool(self.local.has_chat_template)

    @property
    def chat_template(self) -> str | None:
        return self.local.chat_template if self.has_chat_template else None

    def new_target(self, chooser: TokenChooser = TokenChooser()) -> "RemoteTarget":
        return RemoteTarget(self.connection, chooser, self.info, self.tokenizer.fingerprint(), self.cost)


class RemoteTarget(CacheElsewhere):  # the server keeps its own prefix cache
    """One edge session on the server (``Target`` protocol; see the module docstring)."""

    returns_logits = False
    prefill_predicts_next = False  # every verification is a round trip, an empty draft's too

    def __init__(
        self,
        connection: EdgeConnection,
        chooser: TokenChooser,
        info: dict,
        fingerprint: str,
        cost: PassCostProfile | None = None,
    ) -> None:
        self.connection = connection
        self.chooser = chooser
        self._info = info
        self._fingerprint = fingerprint
        self._cost = cost
        self.session_id: str | None = None
        self._length = 0  # committed tokens as this side sees them (the server's after sending the commit)
        self._server_length = 0  # what the server holds (before the commit not yet sent)
        self._verified: Draft | None = None  # verified, awaiting commit()
        self._unsent: tuple[list[int], int] | None = None  # committed here, sent with the next verify
        self._passes = 0
        self.round_trips = 0

    @property
    def context_length(self) -> int:
        return self._length

    @property
    def max_length(self) -> int:
        return int(self._info["max_length"])

    @property
    def max_branches(self) -> int:
        return int(self._info["max_branches"])

    @property
    def max_draft_nodes(self) -> int:
        return int(self._info["max_draft_nodes"])

    @property
    def forward_passes(self) -> int:
        return self._passes

    def prefill(self, context_ids: Sequence[int]) -> None:
        if self.session_id is not None:
            raise RuntimeError("prefill() starts a sequence; this target already holds one")
        if not context_ids:
            raise ValueError("the context must hold at least one token")
        params = self.chooser.params
        body = {
            "prompt": [int(t) for t in context_ids],
            "tokenizer": self._fingerprint,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "top_k": params.top_k,
            "seed": self.chooser.seed,
        }
        answer = self._call("POST", "/v1/edge/sessions", body)
        self.session_id = answer["id"]
        self._length = self._server_length = int(answer["context_length"])
        self._passes = int(answer["forward_passes"])

    def verify(self, draft: Draft) -> Verification:
        if self._verified is not None:
            raise RuntimeError("verify() twice without commit()")
        if self.session_id is None:
            raise RuntimeError("verify() before prefill()")
        if len(draft) > self.max_draft_nodes:
            raise ValueError(f"the server verifies at most {self.max_draft_nodes} nodes; got a draft of {len(draft)}")
        body: dict[str, Any] = {
            "tokens": list(draft.tokens),
            "parents": list(draft.parents),
            "commit": False,
            "context_length": self._server_length,
        }
        if self._unsent is not None:
            body["previous"] = {"path": self._unsent[0], "next_token": self._unsent[1]}
        start = time.perf_counter()
        answer = self._call("POST", f"/v1/edge/sessions/{self.session_id}/verify", body)
        if self._cost is not None:
            self._cost.record(1 + len(draft), time.perf_counter() - start)
        self._unsent = None
        self._server_length = int(answer["context_length"])
        self._passes = int(answer["forward_passes"])
        self._verified = draft
        return Verification.from_choices(answer["choices"])

    def commit(self, path: Sequence[int], next_token: int) -> None:
        if self._verified is None:
            raise RuntimeError("commit() without verify()")
        self._unsent = ([int(n) for n in path], int(next_token))
        self._length += len(path) + 1
        self._verified = None

    def close(self) -> None:
        if self.session_id is not None:
            session, self.session_id = self.session_id, None
            try:
                self.connection.request("DELETE", f"/v1/edge/sessions/{session}")
            except Exception:  # the server forgets idle sessions anyway
                pass

    def _call(self, method: str, path: str, body: dict) -> dict:
        answer = self.connection.request(method, path, body)
        self.round_trips += 1
        return answer
