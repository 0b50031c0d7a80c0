"""Bearer-token auth for a served toolset: :class:`BearerAuth` with a token verifier.

A token must have been issued *for this server*: its audience (RFC 8707 resource / JWT ``aud``) must be
the server's URL (``audience``). A missing, unknown, expired or wrong-audience token gets 401 before any
MCP message is read; the token is never passed on to the tools (a gateway's upstream servers get only
the headers configured for them).

* :class:`StaticTokens` — fixed tokens, each mapped to a user (and optionally its own audience);
* :class:`JWTVerifier` — signed JWTs (HS*/RS*/ES*, via PyJWT, which the SDK already depends on).

Any object with ``async verify_token(token) -> mcp.server.auth.provider.AccessToken | None`` (the SDK's
``TokenVerifier``) works too, e.g. an OAuth introspection client.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.provider import AccessToken, TokenVerifier

__all__ = ["BearerAuth", "JWTVerifier", "StaticTokens"]


@dataclass(frozen=True, kw_only=True)
class BearerAuth:
    """Require a bearer token on every request.

    Attributes:
        verifier: checks a token and says who it belongs to.
        audience: this server's URL; tokens issued for anything else are refused.
        required_scopes: scopes every token must carry (403 otherwise).
        issuer: the authorization server's URL, advertised in the protected-resource metadata.
    """

    verifier: TokenVerifier
    audience: str
    required_scopes: Sequence[str] = field(default_factory=tuple)
    issuer: str | None = None


class StaticTokens:
    """A fixed set of tokens: ``{"token": "alice"}`` or ``{"token": {"user": ..., "audience": ..., "scopes": [...]}}``.

    Args:
        tokens: token -> user name, or token -> settings.
        audience: the audience of tokens that do not name their own.
    """

    def __init__(self, tokens: Mapping[str, str | Mapping[str, Any]], *, audience: str | None = None) -> None:
        self._entries: list[tuple[bytes, str, str | None, list[str]]] = []
        for token, entry in tokens.items():
            if not token:
                raise ValueError("an empty bearer token is not allowed")
            settings: Mapping[str, Any] = {"user": entry} if isinstance(entry, str) else entry
            self._entries.append((token.encode(), str(settings["user"]), settings.get("audience", audience),
                                  list(settings.get("scopes", ()))))

    async def verify_token(self, token: str) -> AccessToken | None:
        presented = token.encode()
        found = None
        for secret, user, audience, scopes in self._entries:  # compare with every entry, in constant time
            if hmac.compare_digest(secret, presented):
                found = (user, audience, scopes)
        if found is None:
            return None
        user, audience, scopes = found
        return AccessToken(token=token, client_id=user, subject=user, scopes=scopes, resource=audience)


class JWTVerifier:
    """Signed JWTs: signature, expiry (required), issuer and audience are checked by PyJWT.

    Args:
        key: the HMAC secret or the public key (PEM) that signs the tokens.
        audience: the ``aud`` tokens must carry (this server's URL).
        issuer: the ``iss`` tokens must carry (None: not checked).
        algorithms: accepted signature algorithms.
        leeway: seconds of clock skew tolerated on ``exp`` / ``nbf``.
    """

    def __init__(self, key: str | bytes, *, audience: str, issuer: str | None = None,
                 algorithms: Iterable[str] = ("RS256", "ES256", "HS256"), leeway: float = 30.0) -> None:
        self.key = key
        self.audience = audience
        self.issuer = issuer
        self.algorithms = list(algorithms)
        self.leeway = leeway

    async def verify_token(self, token: str) -> AccessToken | None:
        import jwt

        try:
            claims: dict[str, Any] = jwt.decode(
                token, self.key, algorithms=self.algorithms, audience=self.audience, issuer=self.issuer,
                leeway=self.leeway, options={"require": ["exp", "aud"] + (["iss"] if self.issuer else [])})
        except jwt.PyJWTError:
            return None
        subject = claims.get("sub")
        client = claims.get("client_id") or claims.get("azp") or subject
        if not isinstance(client, str) or not client:
            return None
        scopes = claims.get("scope", "")
        exp = claims.get("exp")
        return AccessToken(token=token, client_id=client, subject=subject if isinstance(subject, str) else None,
                           scopes=scopes.split() if isinstance(scopes, str) else [],
                           expires_at=int(exp) if isinstance(exp, int | float) else int(time.time()),
                           resource=self.audience, claims=claims)
