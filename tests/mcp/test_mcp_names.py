"""Local names, namespaces and claims, and the review, as properties over generated names (real pin stores)."""

from __future__ import annotations

import hashlib
import itertools
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolrig.errors import MCPConfigError
from toolrig.mcp.gateway._pins import open_pins
from toolrig.mcp.gateway._review import Offer, Review
from toolrig.mcp.shared._names import (
    SEP,
    check_namespaces,
    claimed,
    forged_prefix,
    local_name,
    name_problem,
    served_uri,
    split_served,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# names made to collide: '.' and '_', case, '-', look-alikes, other servers' heads, long names cut to 64
COLLIDING = ["get_data", "get.data", "Get_Data", "get-data", "GET_DATA", "get__data", "get._data", "get_.data",
             "x", "_x", "a__x", "a_.x", "a..x", "A__x", "a_b__x", "b__x", "free__x", "resources-read", "prompts-get",
             "g\u0435t_data", "get\u200bdata", "l" * 70, "l" * 69 + ".", "l" * 61, "l" * 62]
server_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,6}", fullmatch=True).filter(lambda n: SEP not in n)
remote_names = st.one_of(st.sampled_from(COLLIDING), st.from_regex(r"[A-Za-z0-9_.-]{1,70}", fullmatch=True))


def expected_local(prefix: str | None, remote: str) -> str:
    """The documented rule, written out here: prefix + '__' + remote with '.' as '_', cut to 64 with a digest."""
    full = f"{prefix}__{remote.replace('.', '_')}" if prefix else remote.replace(".", "_")
    return full if len(full) <= 64 else f"{full[:55]}_{hashlib.sha256(full.encode()).hexdigest()[:8]}"


@SETTINGS
@given(st.lists(server_names, min_size=1, max_size=5, unique=True), st.lists(remote_names, max_size=12))
def test_accepted_namespaces_never_make_one_local_name_twice(servers: list[str], remotes: list[str]) -> None:
    try:
        check_namespaces({s: s for s in servers})
    except MCPConfigError as exc:  # refused at start, with both names
        assert "ambiguous namespaces" in str(exc)
        return
    owners: dict[str, str] = {}
    for server in servers:
        others = [s for s in servers if s != server]
        for remote in remotes:
            if name_problem(remote) or forged_prefix(remote, server, others, SEP):
                continue
            local = local_name(remote, server)
            assert local == expected_local(server, remote) and len(local) <= 64
            assert owners.setdefault(local, server) == server, (local, owners[local], server)


@SETTINGS
@given(st.lists(remote_names, max_size=10))
def test_an_unprefixed_server_cannot_enter_a_prefixed_namespace(remotes: list[str]) -> None:
    prefixed = ["a", "a_b", "free"]
    for remote in remotes:
        if name_problem(remote) is None and forged_prefix(remote, None, prefixed, SEP) is None:
            local = local_name(remote, None)
            assert not any(local.lower().startswith(f"{p}__") for p in prefixed), local


@SETTINGS
@given(st.dictionaries(st.sampled_from(["x", "y", "z"]), st.lists(st.sampled_from(["r1", "r2", "r3"]), min_size=1,
                                                                   max_size=4), max_size=3),
       st.sampled_from([None, "r1", "r2"]))
def test_claims_never_depend_on_the_order(claims: dict[str, list[str]], held: str | None) -> None:
    expected = claimed(claims, lambda local: held)
    for local, remotes in claims.items():
        for order in itertools.permutations(remotes):
            assert claimed({local: list(order)}, lambda _: held)[local] == expected[local]
        keeper = expected[local]
        if keeper is not None:
            assert keeper in remotes and remotes.count(keeper) == 1
            assert len(remotes) == 1 or keeper == held


offers = st.lists(st.tuples(st.sampled_from(["s1", "s2", "s3"]), st.sampled_from(["n1", "n2", "n3", "n4"]),
                            st.sampled_from(["r1", "r2"]), st.sampled_from(["v1", "v2"])), max_size=8)


def as_offers(drawn: list[tuple[str, str, str, str]]) -> dict[str, list[Offer]]:
    out: dict[str, list[Offer]] = {"s1": [], "s2": [], "s3": []}
    for server, local, remote, version in drawn:
        out[server].append(Offer(what="tool", server=server, local=local, remote=remote,
                                 definition={"name": remote, "description": f"{server} {remote} {version}"}))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(first=offers, second=offers, seed=st.randoms(use_true_random=False))
def test_the_review_admits_one_offer_per_name_whatever_the_order(tmp_path: Path, first: list[tuple[str, str, str, str]],
                                                                 second: list[tuple[str, str, str, str]],
                                                                 seed: object) -> None:
    results = []
    for attempt in range(2):
        store = tmp_path / f"{uuid.uuid4().hex}.db"  # a fresh store: pins of earlier examples must not count
        review = Review(pins=open_pins(store), reserved=lambda: {"n4"})
        review.decide("tool", as_offers(first))
        kept = review.admitted("tool")
        shuffled = list(second)
        if attempt:
            seed.shuffle(shuffled)  # type: ignore[attr-defined]
        review.decide("tool", as_offers(shuffled))
        admitted = review.admitted("tool")
        assert "n4" not in admitted  # a reserved name is never taken
        for local, offer in admitted.items():
            assert offer.local == local
        for local, offer in kept.items():  # the holder keeps its name while it still offers it, unchanged
            again = [o for o in as_offers(second)[offer.server] if o.local == local and o.remote == offer.remote]
            if len(again) == 1 and again[0].definition == offer.definition:
                assert admitted.get(local) == offer, (local, offer, admitted.get(local))
        results.append({k: (v.server, v.remote) for k, v in admitted.items()})
    assert results[0] == results[1]


@pytest.mark.parametrize("uri", ["file:///data/report.txt", "toolrig://x/y", "memo://a", "https://h/p?q={x}"])
def test_served_uris_round_trip(uri: str) -> None:
    assert split_served(served_uri("docs", uri)) == ("docs", uri)
    assert split_served(served_uri(None, uri)) == ((None, uri) if not uri.startswith("toolrig://") else ("x", "y"))
    assert split_served("TOOLRIG://docs/" + uri) == ("docs", uri)  # the scheme in any case
