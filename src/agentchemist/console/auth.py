"""Who may use the console: one access token, printed at start-up, required by every request that reads
the run or moves the robot. Compared in constant time; a request without it is refused and logged."""
from __future__ import annotations

import hmac
import secrets

__all__ = ["TokenAuth", "new_token"]


def new_token() -> str:
    """A fresh token, 32 URL-safe characters (192 bits): unguessable, and short enough to paste."""
    return secrets.token_urlsafe(24)


class TokenAuth:
    def __init__(self, token: str):
        if len(token) < 16:
            raise ValueError("a console token needs at least 16 characters")
        self._token = token.encode()

    def allows(self, authorization: str | None = None, query_token: str | None = None) -> bool:
        """`Authorization: Bearer TOKEN`, or `?token=TOKEN` (a link the page opens, an <img> it shows)."""
        given = ""
        if authorization and authorization.startswith("Bearer "):
            given = authorization[len("Bearer "):].strip()
        elif query_token:
            given = query_token
        return bool(given) and hmac.compare_digest(given.encode(), self._token)
