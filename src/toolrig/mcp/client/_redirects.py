"""Which redirects an MCP HTTP endpoint's answers may take: the SDK transport's rule (same method, same origin)."""

from __future__ import annotations

import httpx2

__all__ = ["next_within_origin", "unfollowed_redirect"]


def _within_origin(url: httpx2.URL, location: httpx2.URL) -> bool:
    if (url.scheme, url.host, url.port) == (location.scheme, location.host, location.port):
        return True
    return (url.host == location.host and url.scheme == "http" and url.port is None
            and location.scheme == "https" and location.port is None)


def next_within_origin(response: httpx2.Response) -> httpx2.Request | None:
    """The request a redirect leads to, when it is followed: same method, same origin, no userinfo of its own."""
    following = response.next_request
    if following is None:
        return None
    sent = response.request
    if (following.method != sent.method or (following.url.userinfo and following.url.userinfo != sent.url.userinfo)
            or not _within_origin(sent.url, following.url)):
        return None
    return following


def unfollowed_redirect(response: httpx2.Response) -> str | None:
    """Why a redirect response was not followed (None: not a redirect)."""
    if response.next_request is None:
        return None
    location = response.next_request.url.copy_with(userinfo=b"", query=None, fragment=None)
    if response.request.url.scheme == "https" and location.scheme == "http":
        return (f"Redirect to {location} not followed: it would downgrade this HTTPS endpoint to plain HTTP; try "
                f"{location.copy_with(scheme='https')} instead, or fix the proxy settings")
    return f"Redirect to {location} not followed; use that URL as the endpoint if it is the intended server"
