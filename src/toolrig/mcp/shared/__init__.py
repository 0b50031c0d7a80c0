"""What the MCP client, server and gateway share: conversions between MCP wire types and toolrig values, tool
and server names, targets (where a server is), content (resources and prompts), the peer behind a served call,
health records, bounded line reading, and rendering of forwarded requests.

Other parts of :mod:`toolrig.mcp` import these names from here, never the private modules."""

from __future__ import annotations

from toolrig.mcp.shared._callbacks import ElicitationHandler, LogHandler, SamplingHandler
from toolrig.mcp.shared._content import (
    CompletionCalls,
    ContentCalls,
    Prompts,
    PromptSource,
    ResourceContents,
    Resources,
    ResourceSource,
)
from toolrig.mcp.shared._context_streams import ContextReceive, ContextSend, ReceiveStream, context_streams
from toolrig.mcp.shared._convert import (
    ContentBlock,
    part_to_mcp,
    part_to_wire,
    result_from_mcp,
    spec_options,
    structured_of,
)
from toolrig.mcp.shared._core import WRAP_MARKER, check_name, policy_from_mapping
from toolrig.mcp.shared._forward_render import (
    label,
    labelled_elicitation,
    labelled_log,
    labelled_sampling,
    request_summary,
    shown,
)
from toolrig.mcp.shared._health import HealthState, ServerHealth
from toolrig.mcp.shared._lines import KEEP, LineSplitter, Oversized
from toolrig.mcp.shared._names import (
    SEP,
    check_namespaces,
    claimed,
    forged_prefix,
    local_name,
    name_problem,
    namespace_of,
    served_uri,
    split_served,
)
from toolrig.mcp.shared._oversized import (
    Awaiting,
    MessageOrigin,
    is_too_large,
    origin_of,
    request_id_of,
    too_large_error,
    too_many_values,
    unreadable_error,
)
from toolrig.mcp.shared._peer import LOG_LEVELS, PEER_KEY, ClientPeer, current_peer, peer_of
from toolrig.mcp.shared._target import LaunchSandbox, Target, parse_target

__all__ = [
    "KEEP",
    "LOG_LEVELS",
    "PEER_KEY",
    "SEP",
    "WRAP_MARKER",
    "Awaiting",
    "ClientPeer",
    "CompletionCalls",
    "ContentBlock",
    "ContentCalls",
    "ContextReceive",
    "ContextSend",
    "ElicitationHandler",
    "HealthState",
    "LaunchSandbox",
    "LineSplitter",
    "LogHandler",
    "MessageOrigin",
    "Oversized",
    "PromptSource",
    "Prompts",
    "ReceiveStream",
    "ResourceContents",
    "ResourceSource",
    "Resources",
    "SamplingHandler",
    "ServerHealth",
    "Target",
    "check_name",
    "check_namespaces",
    "claimed",
    "context_streams",
    "current_peer",
    "forged_prefix",
    "is_too_large",
    "label",
    "labelled_elicitation",
    "labelled_log",
    "labelled_sampling",
    "local_name",
    "name_problem",
    "namespace_of",
    "origin_of",
    "parse_target",
    "part_to_mcp",
    "part_to_wire",
    "peer_of",
    "policy_from_mapping",
    "request_id_of",
    "request_summary",
    "result_from_mcp",
    "served_uri",
    "shown",
    "spec_options",
    "split_served",
    "structured_of",
    "too_large_error",
    "too_many_values",
    "unreadable_error",
]
