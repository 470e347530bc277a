"""edge: a laptop drafts, a GPU server verifies (LLMCad, SpecEdge), and the laptop survives losing the server.

- ``transport``: JSON over one keep-alive HTTP connection (stdlib), failures split into
  ``EdgeRefused`` (4xx) and ``ServerUnavailable`` (no answer, 5xx).
- ``remote_target``: ``RemoteModel``/``RemoteTarget``, the ``Model``/``Target`` protocols over the
  verify server of ``specdraft serve --edge`` (``specdraft.apps.service.edge``).

Nothing here imports torch.
"""

from .remote_target import RemoteModel, RemoteTarget
from .transport import EdgeConnection, EdgeRefused, ServerUnavailable, TransportConfig

__all__ = ["EdgeConnection", "EdgeRefused", "RemoteModel", "RemoteTarget", "ServerUnavailable", "TransportConfig"]
