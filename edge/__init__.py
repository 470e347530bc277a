"""edge: a laptop drafts, a GPU server verifies (LLMCad, SpecEdge), and the laptop survives losing the server.

The laptop runs the core's loop (``SpeculativeGenerator``) with:

- ``drafter``: ``EdgeDrafter``, the core ``Drafter`` on a local model (``guesses``): token trees
  (``trees``: core ``Draft``s) with an adaptive confidence trigger, drafting on while a
  verification is in flight (the pipeline);
- ``target``: ``EdgeModel``/``EdgeTarget``, the core ``Model``/``Target`` over the verify server of
  ``specdraft serve --edge`` (``specdraft.apps.service.edge``) through ``link`` (``EdgeLink``: the
  session, losing and regaining it), the local model choosing while the server is unreachable; the
  model holds nothing of a generation, each target its own link, drafter and per-token flags;
- ``stats``: ``EdgeStats``, the core ``Stats`` with the edge's own measures;
- ``client``: ``EdgeClient``, which wires them for one generation (``EdgeRun``; ``EdgeClientConfig`` in
  ``config``), and labels the text "verified" or "unverified" (``EdgePiece``): the core never does;
- ``transport``: JSON over one keep-alive HTTP connection (stdlib), failures split into
  ``EdgeRefused`` (4xx) and ``ServerUnavailable`` (no answer, 5xx);
- ``remote_target``: ``RemoteModel``/``RemoteTarget``, the plain ``Model``/``Target`` protocols over
  the same server for any core drafter (acceptance on this side, no stand-in).

Nothing here imports torch.
"""

from .client import EdgeClient, EdgePiece, EdgeResult, EdgeRun
from .config import EdgeClientConfig
from .remote_target import RemoteModel, RemoteTarget
from .stats import EdgeStats
from .transport import EdgeConnection, EdgeRefused, ServerUnavailable, TransportConfig

__all__ = [
    "EdgeClient",
    "EdgeClientConfig",
    "EdgeConnection",
    "EdgePiece",
    "EdgeRefused",
    "EdgeResult",
    "EdgeRun",
    "EdgeStats",
    "RemoteModel",
    "RemoteTarget",
    "ServerUnavailable",
    "TransportConfig",
]
