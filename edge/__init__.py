"""edge: a laptop drafts, a GPU server verifies (LLMCad, SpecEdge), and the laptop survives losing the server.

- ``transport``: JSON over one keep-alive HTTP connection (stdlib), failures split into
  ``EdgeRefused`` (4xx) and ``ServerUnavailable`` (no answer, 5xx).
- ``remote_target``: ``RemoteModel``/``RemoteTarget``, the ``Model``/``Target`` protocols over the
  verify server of ``specdraft serve --edge`` (``specdraft.apps.service.edge``).
- ``client``: ``EdgeClient``, drafting trees on a local model (``local_drafter``) with an adaptive
  confidence trigger, drafting on while a verification is in flight, and generating locally
  (tokens flagged unverified) while the server is unreachable.

Nothing here imports torch.
"""

from .client import EdgeClient, EdgeClientConfig, EdgeResult
from .remote_target import RemoteModel, RemoteTarget
from .transport import EdgeConnection, EdgeRefused, ServerUnavailable, TransportConfig

__all__ = ["EdgeClient", "EdgeClientConfig", "EdgeResult", "EdgeConnection", "EdgeRefused", "RemoteModel", "RemoteTarget", "ServerUnavailable", "TransportConfig"]
