"""The gateway's review of everything upstream servers offer: :class:`Review` (collisions, scan, pins).

Tools, resources, resource templates and prompts are reviewed alike, each time a server lists them (tools at
start and after ``notifications/tools/list_changed``; the others whenever they are listed or read), before a
model or a client sees them:

1. *collisions*: a local name (a tool's or prompt's served name, a resource's served URI) that several
   offers claim goes to the one that held it before (admitted now, or pinned), and every other claimant is
   blocked as a ``conflict``; when none held it, every claimant is blocked — whatever the order the offers
   came in. A tool named like a local tool or a content tool of the gateway is a ``conflict`` too;
2. the poisoning scan (:mod:`toolrig.mcp.gateway._scan`): a flagged offer is ``quarantined`` unless the config's
   ``[scan] allow`` names it (quarantine off: offered, the findings logged);
3. its pin (:mod:`toolrig.mcp.gateway._pins`, by local name): seen for the first time it is pinned (``"tofu"``) or held
   (``"approve"``: ``unapproved``); a definition that differs from its pin — another description, another
   remote name behind the local name, another server — is ``changed``: blocked, held for review.

What is blocked is kept in the pin store too, so ``toolrig pins list`` shows it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolrig.mcp.gateway._pins import PinKind, PinStore
from toolrig.mcp.gateway._scan import ScanReport, scan_definition, scan_prompt, scan_resource

__all__ = ["Blocked", "Offer", "PinMode", "Review"]

log = logging.getLogger("toolrig.mcp.gateway")

PinMode = Literal["tofu", "approve"]
BlockKind = Literal["quarantined", "changed", "unapproved", "conflict"]


@dataclass(frozen=True, kw_only=True)
class Offer:
    """One thing a server offers, as the gateway would serve it.

    Attributes:
        what: ``tool``, ``resource``, ``template`` or ``prompt``.
        server: the server's name.
        local: its name as served (a tool's or prompt's local name, a resource's or template's served URI).
        remote: its name (or URI, URI template) on the server.
        definition: what the server sent (MCP JSON).
    """

    what: PinKind
    server: str
    local: str
    remote: str
    definition: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class Blocked:
    """Something the gateway does not offer, and why (``what``: tool, resource, template or prompt)."""

    tool: str
    server: str
    remote: str
    kind: BlockKind
    reasons: tuple[str, ...]
    what: PinKind = "tool"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form."""
        return {"tool": self.tool, "server": self.server, "remote": self.remote, "kind": self.kind,
                "what": self.what, "reasons": list(self.reasons)}


_SCANNERS: dict[str, Callable[..., ScanReport]] = {"tool": scan_definition, "resource": scan_resource,
                                                   "template": scan_resource, "prompt": scan_prompt}


class Review:
    """Decides what of the upstream servers' offers is admitted (see the module docstring).

    Args:
        pins: where pins, pending definitions and blocked records are kept.
        pin_mode: ``"tofu"`` pins on first sight; ``"approve"`` holds until approved.
        quarantine: block what the scan flags (False: offer it, log the findings).
        allow_flagged: local names offered although flagged (after a person reviewed them).
        reserved: the local tool names upstream tools may not take (the gateway's own tools, content tools).
    """

    def __init__(self, *, pins: PinStore, pin_mode: PinMode = "tofu", quarantine: bool = True,
                 allow_flagged: Iterable[str] = (), reserved: Callable[[], set[str]] = set) -> None:
        self.pins = pins
        self.pin_mode: PinMode = pin_mode
        self.quarantine = quarantine
        self.allow_flagged = frozenset(allow_flagged)
        self.reserved = reserved
        self._admitted: dict[str, dict[str, Offer]] = {}
        self._blocked: dict[tuple[str, str], list[Blocked]] = {}

    # -- what is admitted ------------------------------------------------------------------------------
    def admitted(self, what: PinKind) -> dict[str, Offer]:
        """``local name -> offer`` of everything of one kind admitted now."""
        return dict(self._admitted.get(what, {}))

    def admits(self, tool: Any) -> bool:
        """True when ``tool`` (an MCP tool) is exactly what was reviewed and admitted under its name."""
        offer = self._admitted.get("tool", {}).get(getattr(tool, "name", ""))
        return (offer is not None and offer.server == getattr(tool, "server", None)
                and offer.definition == getattr(tool, "definition", None))

    def blocked(self) -> list[Blocked]:
        """Everything not offered now, with the reasons."""
        return [b for entries in self._blocked.values() for b in entries]

    def holder(self, server: str, local: str, what: PinKind = "tool") -> str | None:
        """The remote name of ``server`` that holds ``local``: admitted now, else pinned."""
        offer = self._admitted.get(what, {}).get(local)
        if offer is not None:
            return offer.remote if offer.server == server else None
        pinned = self.pins.holder(local, kind=what)
        return pinned[1] if pinned is not None and pinned[0] == server else None

    # -- deciding --------------------------------------------------------------------------------------
    def decide(self, what: PinKind, offers: Mapping[str, Sequence[Offer]], *,
               refused: Mapping[str, Sequence[Blocked]] | None = None,
               own_tools: Mapping[str, Sequence[str]] | None = None, refused_logged: bool = False) -> bool:
        """Review every offer of one kind, by server.

        Args:
            what: the kind reviewed.
            offers: every server's current offers (all servers, so that a collision between them is seen).
            refused: what was refused before review (bad names, unreadable entries), recorded beside what is blocked
                here.
            refused_logged: whoever refused ``refused`` logged it already (an MCP toolset does): not logged again.
            own_tools: each server's own tool names, which its metadata may mention (default: the remote names
                of its offers).

        Returns:
            True when what is admitted changed.
        """
        claims: dict[str, list[Offer]] = {}
        for server_offers in offers.values():
            for offer in server_offers:
                claims.setdefault(offer.local, []).append(offer)
        reserved = self.reserved() if what == "tool" else set()
        own = dict(own_tools) if own_tools is not None else {
            s: [o.remote for o in server_offers] for s, server_offers in offers.items()}
        admitted: dict[str, Offer] = {}
        blocked: dict[str, list[Blocked]] = {s: list((refused or {}).get(s, ())) for s in offers}
        for local, claimants in sorted(claims.items()):
            for offer in claimants:
                verdict = self._verdict(offer, claimants, reserved, own.get(offer.server, ()))
                if verdict is None:
                    admitted[local] = offer
                else:
                    blocked.setdefault(offer.server, []).append(verdict)
        before = self._admitted.get(what, {})
        self._admitted[what] = admitted
        logged = {b for entries in (refused or {}).values() for b in entries} if refused_logged else set()
        for server, entries in blocked.items():
            self._record(what, server, entries, logged)
        return before != admitted

    def _record(self, what: PinKind, server: str, entries: list[Blocked], logged: set[Blocked]) -> None:
        previous = {(b.remote, b.kind, b.reasons) for b in self._blocked.get((what, server), [])}
        self._blocked[(what, server)] = entries
        for b in entries:
            if (b.remote, b.kind, b.reasons) not in previous and b not in logged:
                log.warning("%s %s %s (%s): %s", b.kind, what, b.tool, server, "; ".join(b.reasons))
        try:
            self.pins.record_blocked(server, what, [b.to_dict() for b in entries])
        except Exception:  # the store being down must not stop the review (what is blocked stays blocked)
            log.exception("could not record what is blocked of server %s", server)

    def _verdict(self, offer: Offer, claimants: Sequence[Offer], reserved: set[str],
                 own: Sequence[str]) -> Blocked | None:
        def block(kind: BlockKind, *reasons: str) -> Blocked:
            return Blocked(tool=offer.local, server=offer.server, remote=offer.remote, kind=kind, reasons=reasons,
                           what=offer.what)

        if offer.local in reserved:
            return block("conflict", f"the name {offer.local!r} belongs to the gateway's own tools")
        if len(claimants) > 1 and self._keeper(offer.what, offer.local, claimants) is not offer:
            others = sorted({f"{c.server}/{c.remote}" for c in claimants if c is not offer})
            return block("conflict", f"{offer.local!r} is also claimed by {', '.join(others)}; it stays with the "
                                     "one that held it before, or with none of them")
        report = _SCANNERS[offer.what](offer.definition, own_tools=own)
        if report.flagged and offer.local not in self.allow_flagged:
            if self.quarantine:
                return block("quarantined", *report.reasons)
            log.warning("%s %s is flagged but quarantine is off: %s", offer.what, offer.local,
                        "; ".join(report.reasons))
        return self._pinned(offer, block)

    def _keeper(self, what: PinKind, local: str, claimants: Sequence[Offer]) -> Offer | None:
        """The claimant that held ``local`` before (admitted now, else pinned), if exactly one did."""
        current = self._admitted.get(what, {}).get(local)
        pinned = self.pins.holder(local, kind=what)
        for held in ((current.server, current.remote) if current is not None else None, pinned):
            if held is None:
                continue
            matches = [c for c in claimants if (c.server, c.remote) == held]
            if len(matches) == 1:
                return matches[0]
        return None

    def _pinned(self, offer: Offer, block: Callable[..., Blocked]) -> Blocked | None:
        pins, what = self.pins, offer.what
        status = pins.status(offer.server, offer.local, offer.definition, kind=what)
        if status == "pinned":
            return None
        if status == "new" and self.pin_mode == "tofu":
            pins.pin(offer.server, offer.local, offer.definition, kind=what, by="first use")
            return None
        pins.hold(offer.server, offer.local, offer.definition, kind=what)
        hint = f"review it with `toolrig pins diff {offer.local}`, then `toolrig pins approve {offer.local}`"
        if status == "changed":
            return block("changed", f"its definition changed since it was approved; {hint}")
        return block("unapproved", f"a new {what} waiting for approval; {hint}")
