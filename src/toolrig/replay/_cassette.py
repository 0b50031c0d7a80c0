"""A cassette: tool bodies' outcomes recorded at the pipeline boundary, and replayed strictly.

``Runtime(tools, recorder=Cassette(path, mode=...))`` hands the cassette every call that reaches a tool body
(after validation, policy, approval, limits, cache, breaker and retry; once per attempt). Modes, as in vcrpy:

``"record"``
    every body runs and every call is recorded; the file is written afresh from the first recorded call on.
``"replay"``
    no body runs: each call gets its recorded outcome; a call with no recording ends with ``replay_miss``,
    whose message names the JSON path of the first difference from the nearest recording.
``"once"`` (default)
    replay when the file exists, record when it does not.
``"new_episodes"``
    replay what was recorded; calls with no recording (or whose recordings are used up) run and are added.

Matching: the tool name, its version and the validated arguments (redacted, as canonical JSON) must be equal.
Identical calls replay in recorded order; among them, one made under the same workflow step (or call id) as a
recording gets that recording first, so concurrent calls replay the same way whatever order they arrive in. A
call repeated more often than it was recorded replays its last recording again (``allow_repeats=False`` makes
the extra calls ``replay_miss``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from toolrig._outcome import ErrorKind, ToolError, ToolOutcome
from toolrig.redact import DEFAULT_REDACTOR, Redactor
from toolrig.replay._codec import (
    call_document,
    canonical_key,
    lane_of,
    outcome_from_data,
    outcome_to_data,
    redacted_arguments,
)
from toolrig.replay._diff import distance, first_difference, json_path, shown
from toolrig.replay._file import append_interaction, read_cassette
from toolrig.runtime import CallNext, Invocation

__all__ = ["Cassette", "RecordMode"]

RecordMode = Literal["record", "replay", "once", "new_episodes"]


class Cassette:
    """Records and replays tool calls in a file (see the module docstring); a :class:`toolrig.runtime.Recorder`.

    Args:
        path: the cassette file: ``.yaml`` / ``.yml`` (YAML) or ``.jsonl`` (JSON lines).
        mode: ``"record"``, ``"replay"``, ``"once"`` (default) or ``"new_episodes"``.
        redactor: applied to arguments, results and error messages before they are kept (default: the
            runtime's default redactor, the one its audit and output stages use).
        allow_repeats: a call repeated more often than recorded replays its last recording again.

    Attributes:
        mode: the mode in effect (``"once"`` has become ``"record"`` or ``"replay"``).

    Raises:
        ValueError: an unknown mode.
        ConfigError: the file exists but is not a cassette this toolrig reads.
    """

    def __init__(self, path: str | Path, mode: RecordMode = "once", *, redactor: Redactor = DEFAULT_REDACTOR,
                 allow_repeats: bool = True) -> None:
        if mode not in get_args(RecordMode):
            raise ValueError(f"cassette mode must be one of {', '.join(get_args(RecordMode))}, not {mode!r}")
        self.path = Path(path)
        self.redactor = redactor
        self.allow_repeats = allow_repeats
        self.mode: RecordMode = ("replay" if self.path.exists() else "record") if mode == "once" else mode
        self._lock = threading.Lock()
        self._recorded: list[dict[str, Any]] = [] if self.mode == "record" else read_cassette(self.path)
        self._keys = [canonical_key(_document(i)) for i in self._recorded]
        self._used = [False] * len(self._recorded)
        self._new: list[dict[str, Any]] = []

    @property
    def interactions(self) -> list[dict[str, Any]]:
        """Every interaction the file holds or will hold: the replayable ones, then those recorded now."""
        with self._lock:
            return [dict(i) for i in (*self._recorded, *self._new)]

    @property
    def unplayed(self) -> list[dict[str, Any]]:
        """Recorded interactions no call has replayed yet (for tests that want every recording used)."""
        with self._lock:
            return [dict(i) for i, used in zip(self._recorded, self._used, strict=True) if not used]

    async def record(self, inv: Invocation, invoke: CallNext) -> ToolOutcome:
        """The outcome of ``inv``: replayed, or run by ``invoke`` and recorded (see the module docstring)."""
        arguments, secrets = redacted_arguments(inv, self.redactor)
        document = call_document(inv, arguments)
        key = canonical_key(document)
        if self.mode != "record":
            found = self._take(key, lane_of(inv))
            if found is not None:
                return _replayed(inv, found)
            if self.mode == "replay":
                return self._miss(inv, document, key)
        outcome = await invoke(inv)
        self._keep({**document, "lane": lane_of(inv), "outcome": outcome_to_data(outcome, self.redactor, secrets)})
        return outcome

    def _take(self, key: str, lane: str) -> dict[str, Any] | None:
        """The recording to replay for a call (marked used), or None."""
        with self._lock:
            same = [i for i, k in enumerate(self._keys) if k == key]
            unused = [i for i in same if not self._used[i]]
            pick = next((i for i in unused if self._recorded[i].get("lane") == lane), None)
            if pick is None and unused:
                pick = unused[0]
            if pick is None:
                if not same or not self.allow_repeats or self.mode == "new_episodes":
                    return None
                pick = next((i for i in reversed(same) if self._recorded[i].get("lane") == lane), same[-1])
            self._used[pick] = True
            return self._recorded[pick]

    def _keep(self, interaction: dict[str, Any]) -> None:
        with self._lock:
            self._new.append(interaction)
            append_interaction(self.path, [*self._recorded, *self._new] if self.mode != "record" else self._new)

    def _miss(self, inv: Invocation, document: Mapping[str, Any], key: str) -> ToolOutcome:
        with self._lock:
            recorded = list(self._recorded)
            repeats = sum(1 for k in self._keys if k == key)
        if repeats:
            message = (f"the cassette {self.path} holds {repeats} recording(s) of this call to {document['tool']!r}, "
                       "all replayed already (allow_repeats=False); record the extra call")
            path = "$"
        elif not recorded:
            message = (f"the cassette {self.path} holds no recordings: record it first (mode='record' or 'once', "
                       "or pytest --toolrig-record)")
            path = "$"
        else:
            path, message = self._nearest(document, recorded)
        error = ToolError.of(ErrorKind.REPLAY_MISS, message, path=path, cassette=str(self.path))
        return ToolOutcome.failure(inv.call.id, inv.name, error, attempts=inv.attempt, repairs=inv.repairs)

    def _nearest(self, document: Mapping[str, Any], recorded: list[dict[str, Any]]) -> tuple[str, str]:
        """The JSON path of the first difference from the nearest recording, and the message naming it.

        The nearest is a recording of the same tool (fewest differing values; the first recorded of equals); the
        first difference is looked for in the tool's version, then in its arguments.
        """
        tool = document["tool"]
        same_tool = [_document(i) for i in recorded if i.get("tool") == tool]
        if not same_tool:
            names = ", ".join(sorted({str(i.get("tool")) for i in recorded}))
            return "$.tool", (f"no recording of any call to {tool!r} in the cassette {self.path} (it holds calls to "
                              f"{names})")
        nearest = min(same_tool, key=lambda d: distance(d, document))
        if nearest["version"] != document["version"]:
            where: tuple[str | int, ...] = ("version",)
            was, now = nearest["version"], document["version"]
        else:
            found = first_difference(nearest["arguments"], document["arguments"], ("arguments",))
            where, was, now = found if found is not None else (("arguments",), None, None)
        path = json_path(where)
        return path, (f"no recording of this call to {tool!r} in the cassette {self.path}: the nearest recording "
                      f"differs at {path} (recorded {shown(was)}, called with {shown(now)})")

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r})"


def _document(interaction: Mapping[str, Any]) -> dict[str, Any]:
    return {"tool": interaction.get("tool"), "version": interaction.get("version"),
            "arguments": interaction.get("arguments")}


def _replayed(inv: Invocation, interaction: Mapping[str, Any]) -> ToolOutcome:
    try:
        return outcome_from_data(inv, interaction.get("outcome") or {})
    except (ValueError, TypeError, KeyError) as exc:
        error = ToolError.of(ErrorKind.REPLAY_MISS, f"the recording of this call cannot be read ({exc}); record it "
                                                    "again", path="$.outcome")
        return ToolOutcome.failure(inv.call.id, inv.name, error, attempts=inv.attempt, repairs=inv.repairs)
