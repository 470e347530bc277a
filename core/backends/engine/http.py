"""A small JSON-over-HTTP client for the engine (the standard library only) and ``EngineError``.

Every failure (nothing listening, a timeout, an HTTP error status, a body that is not JSON) raises
``EngineError`` with the engine's address and what went wrong, never a bare socket error.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class EngineError(RuntimeError):
    """The engine could not be reached, refused a request, or answered something unusable."""


class EngineClient:
    def __init__(self, base: str, timeout: float, api_key: str = "") -> None:
        self.base = base
        self.timeout = timeout
        self.api_key = api_key
        self.requests = 0

    def get(self, path: str) -> Any:
        return self._send(urllib.request.Request(self.base + path, method="GET"))

    def post(self, path: str, body: dict) -> Any:
        data = json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base + path, data=data, method="POST")
        request.add_header("Content-Type", "application/json")
        return self._send(request)

    def _send(self, request: urllib.request.Request) -> Any:
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:500].decode("utf-8", "replace")
            raise EngineError(
                f"the engine at {self.base} answered {error.code} to {request.get_method()} "
                f"{request.full_url[len(self.base) :]}: {detail}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, TimeoutError):
                raise EngineError(
                    f"the engine at {self.base} did not answer {request.get_method()} "
                    f"{request.full_url[len(self.base) :]} within {self.timeout:g} s"
                ) from None
            raise EngineError(
                f"no engine answers at {self.base} ({reason}); is it running, and is the url right?"
            ) from None
        try:
            return json.loads(raw)
        except ValueError:
            raise EngineError(f"the engine at {self.base} answered something that is not JSON: {raw[:200]!r}") from None
