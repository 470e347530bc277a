"""Server-sent events as the service streams them: ``data: {json}`` events, ending with ``data: [DONE]``."""

from __future__ import annotations

import json
from typing import Any

DONE_EVENT = "data: [DONE]\n\n"


def event(payload: dict[str, Any]) -> str:
    """One ``data:`` event carrying ``payload`` as JSON."""
    return f"data: {json.dumps(payload)}\n\n"
