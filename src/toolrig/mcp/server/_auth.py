"""Bearer-token auth for a served toolset: :class:`BearerAuth` with a token verifier.

A token must have been issued *for this server*: its audience (RFC 8707 resource / JWT ``aud``) must be
the server's URL (``audience``). A missing, unknown, expired or wrong-audience token gets 401 before any
MCP message is read; the token is never passed on to the tools (a gateway's upstream servers get only
the headers configured for them).

* :class:`StaticTokens` — fixed tokens, each mapped to a user (and optionally an agent and its own audience);
* :class:`JWTVerifier` — signed JWTs (HS*/RS*/ES*, via PyJWT, which the SDK already depends on).

Any object with ``async verify_token(token) -> mcp.server.auth.provider.AccessToken | None`` (the SDK's
``TokenVerifier``) works too, e.g. an OAuth introspection client.

Identity comes from the credential only. The user is the token's subject (else its client id); the *agent* —
what ``agent`` policy layers select — is what the credential says: a static token's configured ``agent``, a
JWT claim named by ``agent_claim``, or a custom verifier's :class:`VerifiedToken`. A client's self-declared
name (``clientInfo.name`` in the handshake) is anyone's to claim: it is recorded as ``client_name``, never
used for a decision (:func:`agent_of`).
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from starlette.types import Scope

if TYPE_CHECKING:
    from toolrig.policy import Layer

__all__ = ["BearerAuth", "JWTVerifier", "StaticTokens", "VerifiedToken", "agent_of", "check_agent_layers",
           "gives_agents"]

log = logging.getLogger("toolrig.mcp.auth")

_ENTRY_KEYS = frozenset({"user", "agent", "audience", "scopes"})


class VerifiedToken(AccessToken):
    """An :class:`~mcp.server.auth.provider.AccessToken` that also names the agent the credential was issued to.

    Return one from a custom ``TokenVerifier`` to give callers agents (None: the credential names no agent).
    """

    agent: str | None = None


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


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r:.60}")
    return value


@dataclass(frozen=True)
class _Entry:
    secret: bytes
    user: str
    agent: str | None
    audience: str | None
    scopes: tuple[str, ...]


def _entry(token: str, entry: str | Mapping[str, Any], audience: str | None) -> _Entry:
    if not token:
        raise ValueError("an empty bearer token is not allowed")
    settings: Mapping[str, Any] = {"user": entry} if isinstance(entry, str) else entry
    if not isinstance(settings, Mapping) or "user" not in settings:
        raise ValueError("a token's settings must be a user name or a table with 'user' (and optionally 'agent', "
                         "'audience', 'scopes')")
    unknown = set(settings) - _ENTRY_KEYS
    if unknown:
        raise ValueError(f"a token's settings have unknown key(s) {sorted(unknown)}; known: {sorted(_ENTRY_KEYS)}")
    agent = settings.get("agent")
    scopes = settings.get("scopes", ())
    if isinstance(scopes, str) or not all(isinstance(x, str) for x in scopes):
        raise ValueError("a token's 'scopes' must be a list of strings")
    return _Entry(token.encode(), _text(settings["user"], "a token's 'user'"),
                  None if agent is None else _text(agent, "a token's 'agent'"),
                  settings.get("audience", audience), tuple(scopes))


class StaticTokens:
    """A fixed set of tokens: ``{"token": "alice"}`` or
    ``{"token": {"user": ..., "agent": ..., "audience": ..., "scopes": [...]}}``.

    ``agent`` is the agent the token was issued to (what ``agent`` policy layers select); a token without one
    has no agent, whatever its client calls itself.

    Args:
        tokens: token -> user name, or token -> settings.
        audience: the audience of tokens that do not name their own.

    Raises:
        ValueError: an empty token, or settings of the wrong shape.
    """

    def __init__(self, tokens: Mapping[str, str | Mapping[str, Any]], *, audience: str | None = None) -> None:
        self._entries = [_entry(token, entry, audience) for token, entry in tokens.items()]

    @property
    def agents(self) -> frozenset[str]:
        """The agents the tokens name."""
        return frozenset(e.agent for e in self._entries if e.agent is not None)

    @property
    def gives_agents(self) -> bool:
        """Whether some token names an agent."""
        return bool(self.agents)

    async def verify_token(self, token: str) -> AccessToken | None:
        presented = token.encode()
        found = None
        for entry in self._entries:  # compare with every entry, in constant time
            if hmac.compare_digest(entry.secret, presented):
                found = entry
        if found is None:
            return None
        return VerifiedToken(token=token, client_id=found.user, subject=found.user, scopes=list(found.scopes),
                             resource=found.audience, agent=found.agent)


class JWTVerifier:
    """Signed JWTs: signature, expiry (required), issuer and audience are checked by PyJWT.

    Args:
        key: the HMAC secret or the public key (PEM) that signs the tokens.
        audience: the ``aud`` tokens must carry (this server's URL).
        issuer: the ``iss`` tokens must carry (None: not checked).
        algorithms: accepted signature algorithms.
        leeway: seconds of clock skew tolerated on ``exp`` / ``nbf``.
        agent_claim: the claim naming the agent the token was issued to (None: tokens name no agent). A
            token whose claim is not a non-empty string has no agent.
    """

    def __init__(self, key: str | bytes, *, audience: str, issuer: str | None = None,
                 algorithms: Iterable[str] = ("RS256", "ES256", "HS256"), leeway: float = 30.0,
                 agent_claim: str | None = None) -> None:
        self.key = key
        self.audience = audience
        self.issuer = issuer
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.agent_claim = None if agent_claim is None else _text(agent_claim, "agent_claim")

    @property
    def gives_agents(self) -> bool:
        """Whether tokens may name an agent (``agent_claim`` is set)."""
        return self.agent_claim is not None

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
        agent = claims.get(self.agent_claim) if self.agent_claim is not None else None
        return VerifiedToken(token=token, client_id=client, subject=subject if isinstance(subject, str) else None,
                             scopes=scopes.split() if isinstance(scopes, str) else [],
                             expires_at=int(exp) if isinstance(exp, int | float) else int(time.time()),
                             resource=self.audience, claims=claims,
                             agent=agent if isinstance(agent, str) and agent else None)


def agent_of(scope: Scope) -> str | None:
    """The agent named by the credential of an authenticated request (None: no credential, or it names none)."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    return token.agent if isinstance(token, VerifiedToken) else None


def gives_agents(auth: BearerAuth | None) -> bool:
    """Whether callers authenticated by ``auth`` can have an agent: a :class:`StaticTokens` with a token naming
    one, a :class:`JWTVerifier` with ``agent_claim``, or another verifier (which may return :class:`VerifiedToken`).
    """
    if auth is None:
        return False
    verifier = auth.verifier
    if isinstance(verifier, StaticTokens | JWTVerifier):
        return verifier.gives_agents
    return True


def check_agent_layers(layers: Iterable[Layer], auth: BearerAuth | None, *, where: str = "the policy") -> None:
    """Refuse ``agent`` policy layers for unauthenticated callers, since agents come from credentials only.

    With ``auth`` whose credentials name no agent (static tokens without ``agent``, JWTs without ``agent_claim``)
    such a layer applies to nobody: that is logged as a warning, not refused (the callers are still known).

    Raises:
        ValueError: a layer selects an agent and ``auth`` is None (no credentials: stdio, or HTTP without auth).
    """
    chosen = [layer for layer in layers if layer.agent is not None]
    if not chosen or gives_agents(auth):
        return
    layer = chosen[0]
    problem = (f"{where}: layer {layer.name!r} selects agent {layer.agent!r}, but agents come only from credentials "
               "and {why}; a client's self-declared name (clientInfo.name) is never used for a decision, so this "
               "layer applies to nobody")
    if auth is None:
        raise ValueError(problem.format(why="callers are not authenticated (no bearer auth)"))
    log.warning(problem.format(why="no credential names an agent (give static tokens an 'agent', or set "
                                   "'agent_claim' for JWTs)"))
