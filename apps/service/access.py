"""Who may call what (docs/deployment.md, "Keys, access and limits"): ``install_access_control(app,
policy)`` checks every request before its view runs, in order, each failure a JSON error that changes
nothing:

1. Host (without keys only): a loopback name or one of ``allowed_hosts``, else 421 (DNS rebinding).
2. Key (with keys only): routes under ``/v1/`` and ``/metrics`` need ``Authorization: Bearer KEY``
   (401 ``invalid_api_key``); a read key on a ``WRITE_ENDPOINTS`` route is a 403 ``insufficient_scope``.
3. Cross-site (every request with a body): an ``Origin`` other than this server's (or
   ``allowed_origins``), or ``Sec-Fetch-Site: cross-site``, is a 403; a body that is not
   ``application/json`` a 415 (JSON needs a CORS preflight, which this server never grants).

``g.principal`` holds the caller's ``Principal`` (None without keys) for views that own resources.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import Flask, current_app, g, request

from .api_keys import WRITE, KeyRing, Principal
from .protocol.errors import RequestError

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WRITE_ENDPOINTS = frozenset({"rag.add_documents"})  # Flask endpoint names of routes that change state
OPEN_PREFIXES = ("/healthz", "/openapi.json", "/demo/", "/static/")
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class AccessPolicy:
    """``keys``: None serves without keys (loopback only, see ``specdraft.apps.service.server``).
    ``allowed_origins``: other origins (``scheme://host[:port]``) whose pages may send requests with
    bodies. ``allowed_hosts``: other Host names accepted without keys (a reverse proxy's name)."""

    keys: KeyRing | None = None
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()


class AccessDenied(RequestError):
    """A request refused before its view runs (no ``param``: the request as a whole)."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message, None, status, code, headers=headers)


def install_access_control(app: Flask, policy: AccessPolicy) -> None:
    app.extensions["specdraft.access"] = policy
    app.before_request(_check_request)  # its AccessDenied is answered by ``errors``


def _check_request() -> None:
    policy: AccessPolicy = current_app.extensions["specdraft.access"]
    g.principal = None
    if policy.keys is None:
        _check_host(policy)
    elif not request.path.startswith(OPEN_PREFIXES) and request.path != "/":
        g.principal = _authenticate(policy.keys)
        if request.endpoint in WRITE_ENDPOINTS and not g.principal.may(WRITE):
            raise AccessDenied(
                403,
                f"this API key may only read; {request.method} {request.path} needs a key with write scope",
                "insufficient_scope",
            )
    if request.method in BODY_METHODS and request.routing_exception is None:  # unknown routes: their 404/405
        _check_cross_site(policy)


def _check_host(policy: AccessPolicy) -> None:
    host = _hostname(request.host)
    if host not in LOOPBACK_HOSTS and host not in policy.allowed_hosts:
        raise AccessDenied(
            421,
            f"this server runs without API keys and answers only requests addressed to this machine "
            f"(localhost, 127.0.0.1, [::1]), not to {request.host!r}; "
            "start it with --api-key-file to serve other names",
            "misdirected_request",
        )


def _authenticate(keys: KeyRing) -> Principal:
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise AccessDenied(
            401,
            "this server needs an API key: send the header 'Authorization: Bearer KEY'",
            "invalid_api_key",
            {"WWW-Authenticate": "Bearer"},
        )
    principal = keys.check(key.strip())
    if principal is None:
        raise AccessDenied(
            401, "the API key is not valid for this server", "invalid_api_key", {"WWW-Authenticate": "Bearer"}
        )
    return principal


def _check_cross_site(policy: AccessPolicy) -> None:
    origin = request.headers.get("Origin")
    if origin is not None and not _same_origin(origin) and origin.rstrip("/") not in policy.allowed_origins:
        raise AccessDenied(
            403,
            f"requests from pages of another origin ({origin}) may not send bodies to this server",
            "cross_site_request",
        )
    if request.headers.get("Sec-Fetch-Site") == "cross-site" and origin is None:
        raise AccessDenied(
            403,
            "the browser marked this request as cross-site; it may not send a body to this server",
            "cross_site_request",
        )
    bodiless_delete = request.method == "DELETE" and not request.content_length  # a browser preflights it anyway
    if request.mimetype != "application/json" and not bodiless_delete:
        got = request.mimetype or "none"
        raise AccessDenied(
            415,
            f"the request body must be sent as Content-Type: application/json (got {got})",
            "unsupported_media_type",
        )


def _same_origin(origin: str) -> bool:
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == request.host.lower()


def _hostname(host: str) -> str:
    """``host[:port]`` or ``[v6]:port`` -> the host name, lower case, without brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
