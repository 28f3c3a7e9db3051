"""Semantic invariants of one Responses API event stream (PROTOCOL.md, "Streaming (SSE)").

This module owns the *meaning* of an already-parsed event list: lifecycle order, sequence
numbers, item scaffolding (added -> parts -> deltas -> done), delta/done/item agreement and
the terminal response. Framing lives in ``tests.sse``, schemas in ``tests.oracles``.

Entry point: ``check_stream(events) -> terminal response dict``. Every violation raises
``AssertionError`` naming the offending event.

The checker is table driven: ``ITEM_KINDS`` says, per output item ``type``, which identity
keys must stay fixed, which part containers and argument streams it has and which extra
event types are merely tolerated (checked only for referring to the open item). To support
a new item kind or event family, add an entry there; an item type or event type the tables
do not know is an error, so nothing slips through unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["check_stream", "ITEM_KINDS", "TEXT_CHANNELS", "TERMINAL_STATUS"]

# --------------------------------------------------------------------------- tables

START_EVENTS = ("response.created", "response.queued", "response.in_progress")
ALLOWED_STARTS = (
    ("response.created", "response.in_progress"),
    ("response.created", "response.queued", "response.in_progress"),
)
TERMINAL_STATUS = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}
LIFECYCLE_EVENTS = frozenset(START_EVENTS) | frozenset(TERMINAL_STATUS)


@dataclass(frozen=True)
class PartFamily:
    """The events that open/close parts of one list-valued key of an item."""

    added_event: str
    done_event: str
    index_key: str  # the event key that indexes the part
    container: str  # the item key that holds the parts


CONTENT_PARTS = PartFamily("response.content_part.added", "response.content_part.done", "content_index", "content")
SUMMARY_PARTS = PartFamily(
    "response.reasoning_summary_part.added", "response.reasoning_summary_part.done", "summary_index", "summary"
)
PART_FAMILIES = {f.added_event: f for f in (CONTENT_PARTS, SUMMARY_PARTS)} | {
    f.done_event: f for f in (CONTENT_PARTS, SUMMARY_PARTS)
}


@dataclass(frozen=True)
class TextChannel:
    """A text streamed into one part: deltas, then one done event carrying the full text."""

    part_type: str
    text_key: str  # key of the text in the part AND in the done event
    delta_event: str
    done_event: str
    family: PartFamily


TEXT_CHANNELS = {
    c.part_type: c
    for c in (
        TextChannel("output_text", "text", "response.output_text.delta", "response.output_text.done", CONTENT_PARTS),
        TextChannel("refusal", "refusal", "response.refusal.delta", "response.refusal.done", CONTENT_PARTS),
        TextChannel(
            "reasoning_text", "text", "response.reasoning_text.delta", "response.reasoning_text.done", CONTENT_PARTS
        ),
        TextChannel(
            "summary_text",
            "text",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            SUMMARY_PARTS,
        ),
    )
}
TEXT_DELTA_EVENTS = {c.delta_event: c for c in TEXT_CHANNELS.values()}
TEXT_DONE_EVENTS = {c.done_event: c for c in TEXT_CHANNELS.values()}


@dataclass(frozen=True)
class ArgumentsChannel:
    """A string item field streamed as deltas and closed by one done event (always emitted)."""

    delta_event: str
    done_event: str
    key: str  # key in the item and in the done event


FUNCTION_ARGUMENTS = ArgumentsChannel(
    "response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments"
)
CUSTOM_TOOL_INPUT = ArgumentsChannel(
    "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done", "input"
)


@dataclass(frozen=True)
class Container:
    family: PartFamily
    part_types: tuple[str, ...]
    nullable: bool = False  # the item may carry null / omit the key while it has no parts


@dataclass(frozen=True)
class ItemKind:
    type: str
    identity_keys: tuple[str, ...]
    status_required: bool  # False: status checked only when the item carries one
    done_statuses: tuple[str, ...] = ("completed", "incomplete")
    containers: tuple[Container, ...] = ()
    arguments: ArgumentsChannel | None = None
    tolerated_events: tuple[str, ...] = ()


ITEM_KINDS = {
    k.type: k
    for k in (
        ItemKind(
            "message",
            ("id", "role"),
            status_required=True,
            containers=(Container(CONTENT_PARTS, ("output_text", "refusal")),),
            tolerated_events=("response.output_text.annotation.added",),
        ),
        ItemKind("function_call", ("id", "call_id", "name"), status_required=True, arguments=FUNCTION_ARGUMENTS),
        ItemKind("custom_tool_call", ("id", "call_id", "name"), status_required=True, arguments=CUSTOM_TOOL_INPUT),
        ItemKind(
            "reasoning",
            ("id",),
            status_required=False,
            containers=(
                Container(CONTENT_PARTS, ("reasoning_text",), nullable=True),
                Container(SUMMARY_PARTS, ("summary_text",)),
            ),
        ),
        ItemKind(
            "mcp_call",
            ("id", "name", "server_label"),
            status_required=True,
            done_statuses=("completed", "incomplete", "failed"),
            tolerated_events=(
                "response.mcp_call.in_progress",
                "response.mcp_call.completed",
                "response.mcp_call.failed",
                "response.mcp_call_arguments.delta",
                "response.mcp_call_arguments.done",
            ),
        ),
        ItemKind(
            "mcp_list_tools",
            ("id", "server_label"),
            status_required=False,
            tolerated_events=(
                "response.mcp_list_tools.in_progress",
                "response.mcp_list_tools.completed",
                "response.mcp_list_tools.failed",
            ),
        ),
        ItemKind("mcp_approval_request", ("id", "name", "server_label"), status_required=False),
        ItemKind("web_search_call", ("id",), status_required=True,
                 done_statuses=("completed", "incomplete", "failed"),
                 tolerated_events=("response.web_search_call.in_progress",
                                   "response.web_search_call.searching",
                                   "response.web_search_call.completed")),
        ItemKind("file_search_call", ("id",), status_required=True,
                 done_statuses=("completed", "incomplete", "failed"),
                 tolerated_events=("response.file_search_call.in_progress",
                                   "response.file_search_call.searching",
                                   "response.file_search_call.completed")),
        ItemKind("compaction", ("id",), status_required=False,
                 tolerated_events=("response.compaction.compacting",)),
        # shell commands stream by output_index and command_index (no item_id): _shell_command
        ItemKind("shell_call", ("id", "call_id"), status_required=True),
        ItemKind("local_shell_call", ("id", "call_id"), status_required=True),
        ItemKind("apply_patch_call", ("id", "call_id"), status_required=True,
                 done_statuses=("completed",)),
        ItemKind("tool_search_call", ("id", "call_id"), status_required=True),
        ItemKind("tool_search_output", ("id", "call_id"), status_required=True),
    )
}
ALL_TOLERATED_EVENTS = frozenset(e for k in ITEM_KINDS.values() for e in k.tolerated_events)
ARGUMENT_EVENTS = frozenset(
    e for k in ITEM_KINDS.values() if k.arguments for e in (k.arguments.delta_event, k.arguments.done_event)
)

# --------------------------------------------------------------------------- state


@dataclass
class _Part:
    type: str
    deltas: list[str] = field(default_factory=list)
    text_done: bool = False
    done_part: dict | None = None


@dataclass
class _OpenItem:
    output_index: int
    kind: ItemKind
    added: dict
    parts: dict[str, list[_Part]] = field(default_factory=dict)  # container -> parts by index
    arg_deltas: list[str] = field(default_factory=list)
    arguments_done: str | None = None
    commands: list = field(default_factory=list)  # a shell_call's [deltas, done command or None]


SHELL_COMMAND_EVENTS = ("response.shell_call_command.added", "response.shell_call_command.delta",
                        "response.shell_call_command.done")


def _where(i: int, ev: dict) -> str:
    return f"event #{i} ({ev.get('type')!r}, sequence_number={ev.get('sequence_number')!r})"


# --------------------------------------------------------------------------- envelope


def _check_sequence_numbers(events: list[dict]) -> None:
    for i, ev in enumerate(events):
        assert isinstance(ev, dict), f"event #{i} is {type(ev).__name__}, not a dict"
        assert "type" in ev, f"event #{i} has no 'type'"
        assert "sequence_number" in ev, f"{_where(i, ev)} has no sequence_number"
        seq = ev["sequence_number"]
        assert type(seq) is int and seq == i, (
            f"{_where(i, ev)}: sequence_number must be exactly {i} (0..n-1, no gaps), got {seq!r}"
        )


def _check_lifecycle(events: list[dict]) -> int:
    """Check the start sequence and the single terminal event; return len(start prefix)."""
    assert len(events) >= 3, f"stream has {len(events)} events; need at least created, in_progress, terminal"
    types = [ev["type"] for ev in events]
    prefix: list[str] = []
    for t in types:
        if t not in START_EVENTS:
            break
        prefix.append(t)
    assert tuple(prefix) in ALLOWED_STARTS, (
        f"stream must start with created -> in_progress (or created -> queued -> in_progress), got {prefix!r}"
    )
    terminals = [i for i, t in enumerate(types) if t in TERMINAL_STATUS]
    assert len(terminals) == 1, (
        f"exactly one terminal event required, found {len(terminals)} at {terminals!r}: "
        f"{[types[i] for i in terminals]!r}"
    )
    assert terminals[0] == len(events) - 1, (
        f"terminal event {types[terminals[0]]!r} at #{terminals[0]} is not the last event (n={len(events)})"
    )
    for i, t in enumerate(types[len(prefix):-1], start=len(prefix)):
        assert t not in LIFECYCLE_EVENTS, f"{_where(i, events[i])}: lifecycle event in the middle of the stream"

    response_id = None
    for i, ev in enumerate(events):
        if ev["type"] not in LIFECYCLE_EVENTS:
            continue
        resp = ev.get("response")
        assert isinstance(resp, dict), f"{_where(i, ev)} carries no response object"
        if response_id is None:
            response_id = resp.get("id")
            assert isinstance(response_id, str) and response_id != "", f"{_where(i, ev)}: bad response id"
        assert resp.get("id") == response_id, (
            f"{_where(i, ev)}: response.id {resp.get('id')!r} differs from {response_id!r}"
        )
    for i, t in enumerate(prefix):
        resp = events[i]["response"]
        assert resp.get("output") == [], f"{_where(i, events[i])}: response.output must be [] before any item"
        expected = {"response.queued": ("queued",), "response.in_progress": ("in_progress",)}.get(
            t, ("in_progress", "queued")
        )
        assert resp.get("status") in expected, (
            f"{_where(i, events[i])}: response.status {resp.get('status')!r} not in {expected!r}"
        )
    return len(prefix)


def _check_terminal(ev: dict, i: int) -> dict:
    resp = ev["response"]
    want = TERMINAL_STATUS[ev["type"]]
    assert resp.get("status") == want, f"{_where(i, ev)}: response.status is {resp.get('status')!r}, expected {want!r}"
    if want == "completed":
        assert resp.get("error") is None, f"{_where(i, ev)}: completed response has error {resp.get('error')!r}"
        assert resp.get("incomplete_details") is None, (
            f"{_where(i, ev)}: completed response has incomplete_details {resp.get('incomplete_details')!r}"
        )
    elif want == "incomplete":
        details = resp.get("incomplete_details")
        assert isinstance(details, dict), f"{_where(i, ev)}: incomplete response needs incomplete_details"
        reason = details.get("reason")
        assert isinstance(reason, str) and reason != "", f"{_where(i, ev)}: incomplete_details.reason missing"
    else:
        err = resp.get("error")
        assert isinstance(err, dict), f"{_where(i, ev)}: failed response needs error {{code, message}}, got {err!r}"
        for key in ("code", "message"):
            assert isinstance(err.get(key), str) and err[key] != "", (
                f"{_where(i, ev)}: failed response error.{key} must be a non-empty string, got {err.get(key)!r}"
            )
    usage = resp.get("usage")
    if usage is not None:
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            assert type(usage.get(key)) is int, f"{_where(i, ev)}: usage.{key} must be an int, got {usage.get(key)!r}"
        total = usage["input_tokens"] + usage["output_tokens"]
        assert usage.get("total_tokens") == total, (
            f"{_where(i, ev)}: usage.total_tokens {usage.get('total_tokens')!r} != input+output {total!r}"
        )
    return resp


# --------------------------------------------------------------------------- items


class _ItemChecker:
    def __init__(self) -> None:
        self.open: dict[str, _OpenItem] = {}  # item id -> state
        self.seen_ids: set[str] = set()
        self.next_index = 0
        self.done_items: dict[int, dict] = {}

    # -- helpers
    def _item_for(self, i: int, ev: dict) -> _OpenItem:
        item_id = ev.get("item_id")
        assert item_id in self.open, (
            f"{_where(i, ev)}: item_id {item_id!r} is not an open item (open: {sorted(self.open)!r})"
        )
        state = self.open[item_id]
        assert ev.get("output_index") == state.output_index, (
            f"{_where(i, ev)}: output_index {ev.get('output_index')!r} != item's {state.output_index}"
        )
        return state

    def _part_for(self, i: int, ev: dict, state: _OpenItem, family: PartFamily) -> _Part:
        parts = state.parts.get(family.container)
        assert parts is not None, f"{_where(i, ev)}: item type {state.kind.type!r} has no {family.container!r} parts"
        idx = ev.get(family.index_key)
        assert type(idx) is int and 0 <= idx < len(parts), (
            f"{_where(i, ev)}: {family.index_key} {idx!r} does not name an added part (have {len(parts)})"
        )
        part = parts[idx]
        assert part.done_part is None, f"{_where(i, ev)}: part {family.index_key}={idx} is already done"
        return part

    # -- dispatch
    def handle(self, i: int, ev: dict) -> None:
        t = ev["type"]
        if t == "response.output_item.added":
            self._item_added(i, ev)
        elif t == "response.output_item.done":
            self._item_done(i, ev)
        elif t in PART_FAMILIES:
            family = PART_FAMILIES[t]
            if t == family.added_event:
                self._part_added(i, ev, family)
            else:
                self._part_done(i, ev, family)
        elif t in TEXT_DELTA_EVENTS:
            self._text_delta(i, ev, TEXT_DELTA_EVENTS[t])
        elif t in TEXT_DONE_EVENTS:
            self._text_done(i, ev, TEXT_DONE_EVENTS[t])
        elif t in ARGUMENT_EVENTS:
            self._arguments(i, ev)
        elif t in SHELL_COMMAND_EVENTS:
            self._shell_command(i, ev)
        elif t in ALL_TOLERATED_EVENTS:
            state = self._item_for(i, ev)
            assert t in state.kind.tolerated_events, (
                f"{_where(i, ev)}: not allowed for a {state.kind.type!r} item"
            )
        else:
            raise AssertionError(f"{_where(i, ev)}: event type unknown to the checker (add it to ITEM_KINDS)")

    def _item_added(self, i: int, ev: dict) -> None:
        item = ev.get("item")
        assert isinstance(item, dict), f"{_where(i, ev)}: no item"
        assert ev.get("output_index") == self.next_index, (
            f"{_where(i, ev)}: output_index {ev.get('output_index')!r}, expected {self.next_index} (0,1,2.. in order)"
        )
        kind = ITEM_KINDS.get(item.get("type"))
        assert kind is not None, f"{_where(i, ev)}: item type {item.get('type')!r} unknown to the checker"
        item_id = item.get("id")
        assert isinstance(item_id, str) and item_id != "", f"{_where(i, ev)}: item has no id"
        assert item_id not in self.seen_ids, f"{_where(i, ev)}: item id {item_id!r} reused"
        for key in kind.identity_keys:
            assert key in item, f"{_where(i, ev)}: {kind.type} item lacks {key!r}"
        if kind.status_required or "status" in item:
            assert item.get("status") == "in_progress", (
                f"{_where(i, ev)}: added item status must be 'in_progress', got {item.get('status')!r}"
            )
        state = _OpenItem(self.next_index, kind, item)
        for c in kind.containers:
            value = item.get(c.family.container, None)
            empty_ok = value == [] or (c.nullable and value is None)
            assert empty_ok, f"{_where(i, ev)}: added item {c.family.container!r} must be empty, got {value!r}"
            state.parts[c.family.container] = []
        if kind.arguments is not None:
            assert item.get(kind.arguments.key) == "", (
                f"{_where(i, ev)}: added item {kind.arguments.key!r} must be '', got {item.get(kind.arguments.key)!r}"
            )
        self.seen_ids.add(item_id)
        self.open[item_id] = state
        self.next_index += 1

    def _item_done(self, i: int, ev: dict) -> None:
        item = ev.get("item")
        assert isinstance(item, dict), f"{_where(i, ev)}: no item"
        item_id = item.get("id")
        assert item_id in self.open, f"{_where(i, ev)}: item {item_id!r} is not open (never added or done twice)"
        state = self.open[item_id]
        assert ev.get("output_index") == state.output_index, (
            f"{_where(i, ev)}: output_index {ev.get('output_index')!r} != added output_index {state.output_index}"
        )
        kind = state.kind
        assert item.get("type") == kind.type, f"{_where(i, ev)}: type changed from {kind.type!r} to {item.get('type')!r}"
        for key in kind.identity_keys:
            assert item.get(key) == state.added[key], (
                f"{_where(i, ev)}: {key!r} changed from {state.added[key]!r} to {item.get(key)!r}"
            )
        if kind.status_required or "status" in item:
            assert item.get("status") in kind.done_statuses, (
                f"{_where(i, ev)}: done item status {item.get('status')!r} not in {kind.done_statuses!r}"
            )
        for c in kind.containers:
            parts = state.parts[c.family.container]
            value = item.get(c.family.container)
            if parts == []:
                empty_ok = value == [] or (c.nullable and value is None)
                assert empty_ok, f"{_where(i, ev)}: {c.family.container!r} is {value!r} but no part was streamed"
                continue
            for idx, part in enumerate(parts):
                assert part.done_part is not None, (
                    f"{_where(i, ev)}: part {c.family.index_key}={idx} was added but never done"
                )
            assert value == [p.done_part for p in parts], (
                f"{_where(i, ev)}: item {c.family.container!r} {value!r} != the streamed done parts "
                f"{[p.done_part for p in parts]!r}"
            )
        if kind.arguments is not None:
            ch = kind.arguments
            assert state.arguments_done is not None, f"{_where(i, ev)}: {ch.done_event!r} never sent for this item"
            assert item.get(ch.key) == state.arguments_done, (
                f"{_where(i, ev)}: item {ch.key!r} {item.get(ch.key)!r} != {ch.done_event} {state.arguments_done!r}"
            )
        if kind.type == "shell_call":
            assert all(done is not None for _, done in state.commands), (
                f"{_where(i, ev)}: a shell command was added but never done")
            assert item["action"]["commands"] == [done for _, done in state.commands], (
                f"{_where(i, ev)}: action.commands {item['action']['commands']!r} != the commands "
                f"streamed {[done for _, done in state.commands]!r}")
        del self.open[item_id]
        self.done_items[state.output_index] = item

    def _shell_command(self, i: int, ev: dict) -> None:
        """`shell_call_command.added` (command ''), `.delta`s, `.done` (their concatenation),
        command_index 0, 1, 2.. in order, on an open shell_call named by output_index."""
        state = next((s for s in self.open.values() if s.output_index == ev.get("output_index")), None)
        assert state is not None and state.kind.type == "shell_call", (
            f"{_where(i, ev)}: output_index {ev.get('output_index')!r} is not an open shell_call")
        index, stage = ev.get("command_index"), ev["type"].rsplit(".", 1)[1]
        if stage == "added":
            assert index == len(state.commands), f"{_where(i, ev)}: command_index {index!r}, expected {len(state.commands)}"
            assert ev.get("command") == "", f"{_where(i, ev)}: an added command must be ''"
            state.commands.append([[], None])
            return
        assert type(index) is int and 0 <= index < len(state.commands), f"{_where(i, ev)}: command {index!r} not added"
        deltas, done = state.commands[index]
        assert done is None, f"{_where(i, ev)}: command {index} already done"
        if stage == "delta":
            deltas.append(ev["delta"])
        else:
            assert ev.get("command") == "".join(deltas), f"{_where(i, ev)}: command != concatenated deltas"
            state.commands[index][1] = ev["command"]

    def _part_added(self, i: int, ev: dict, family: PartFamily) -> None:
        state = self._item_for(i, ev)
        container = next((c for c in state.kind.containers if c.family is family), None)
        assert container is not None, f"{_where(i, ev)}: a {state.kind.type!r} item has no {family.container!r} parts"
        parts = state.parts[family.container]
        assert ev.get(family.index_key) == len(parts), (
            f"{_where(i, ev)}: {family.index_key} {ev.get(family.index_key)!r}, expected {len(parts)} (0,1,2.. in order)"
        )
        part = ev.get("part")
        assert isinstance(part, dict), f"{_where(i, ev)}: no part"
        assert part.get("type") in container.part_types, (
            f"{_where(i, ev)}: part type {part.get('type')!r} not allowed in {state.kind.type} "
            f"{family.container} (allowed {container.part_types!r})"
        )
        channel = TEXT_CHANNELS[part["type"]]
        assert part.get(channel.text_key) == "", (
            f"{_where(i, ev)}: added part {channel.text_key!r} must be '' (scaffold before delta), "
            f"got {part.get(channel.text_key)!r}"
        )
        parts.append(_Part(part["type"]))

    def _part_done(self, i: int, ev: dict, family: PartFamily) -> None:
        state = self._item_for(i, ev)
        part = self._part_for(i, ev, state, family)
        done = ev.get("part")
        assert isinstance(done, dict), f"{_where(i, ev)}: no part"
        assert done.get("type") == part.type, f"{_where(i, ev)}: part type changed {part.type!r} -> {done.get('type')!r}"
        channel = TEXT_CHANNELS[part.type]
        assert part.text_done, f"{_where(i, ev)}: {channel.done_event!r} must come before {family.done_event!r}"
        text = "".join(part.deltas)
        assert done.get(channel.text_key) == text, (
            f"{_where(i, ev)}: done part {channel.text_key!r} {done.get(channel.text_key)!r} != deltas {text!r}"
        )
        part.done_part = done

    def _text_delta(self, i: int, ev: dict, channel: TextChannel) -> None:
        state = self._item_for(i, ev)
        part = self._part_for(i, ev, state, channel.family)
        assert part.type == channel.part_type, f"{_where(i, ev)}: delta for a {part.type!r} part"
        assert not part.text_done, f"{_where(i, ev)}: delta after {channel.done_event!r}"
        delta = ev.get("delta")
        assert isinstance(delta, str), f"{_where(i, ev)}: delta must be a string, got {delta!r}"
        part.deltas.append(delta)

    def _text_done(self, i: int, ev: dict, channel: TextChannel) -> None:
        state = self._item_for(i, ev)
        part = self._part_for(i, ev, state, channel.family)
        assert part.type == channel.part_type, f"{_where(i, ev)}: done event for a {part.type!r} part"
        assert not part.text_done, f"{_where(i, ev)}: {channel.done_event!r} sent twice for one part"
        text = "".join(part.deltas)
        assert ev.get(channel.text_key) == text, (
            f"{_where(i, ev)}: {channel.text_key!r} {ev.get(channel.text_key)!r} != concatenated deltas {text!r}"
        )
        part.text_done = True

    def _arguments(self, i: int, ev: dict) -> None:
        state = self._item_for(i, ev)
        ch = state.kind.arguments
        assert ch is not None and ev["type"] in (ch.delta_event, ch.done_event), (
            f"{_where(i, ev)}: not allowed for a {state.kind.type!r} item"
        )
        assert state.arguments_done is None, f"{_where(i, ev)}: after {ch.done_event!r}"
        if ev["type"] == ch.delta_event:
            delta = ev.get("delta")
            assert isinstance(delta, str), f"{_where(i, ev)}: delta must be a string, got {delta!r}"
            state.arg_deltas.append(delta)
            return
        value = ev.get(ch.key)
        joined = "".join(state.arg_deltas)
        assert value == joined, f"{_where(i, ev)}: {ch.key!r} {value!r} != concatenated deltas {joined!r}"
        state.arguments_done = value


# --------------------------------------------------------------------------- entry point


def check_stream(events: list[dict]) -> dict:
    """Run every stream invariant; return the terminal event's ``response``."""
    assert isinstance(events, list), f"events must be a list, got {type(events).__name__}"
    _check_sequence_numbers(events)
    start = _check_lifecycle(events)
    items = _ItemChecker()
    for i in range(start, len(events) - 1):
        items.handle(i, events[i])
    last = len(events) - 1
    assert items.open == {}, (
        f"items added but never done before the terminal event: {sorted(items.open)!r}"
    )
    response = _check_terminal(events[last], last)
    streamed = [items.done_items[k] for k in sorted(items.done_items)]
    assert response.get("output") == streamed, (
        f"terminal response.output differs from the output_item.done items in output_index order:\n"
        f"  output:   {response.get('output')!r}\n  streamed: {streamed!r}"
    )
    return response


def check_cancelled_stream(events: list[dict]) -> list[dict]:
    """A cancelled run's stream. The Responses API has no terminal event for cancellation:
    the stream ends once every open item is closed (or is empty if the run never started).
    Returns the output items, in output_index order."""
    _check_sequence_numbers(events)
    if not events:
        return []
    types = [ev["type"] for ev in events]
    assert not [t for t in types if t in TERMINAL_STATUS], f"terminal event in a cancelled stream: {types!r}"
    assert types[:2] == ["response.created", "response.in_progress"], f"bad start: {types[:2]!r}"
    items = _ItemChecker()
    for i in range(2, len(events)):
        assert types[i] not in LIFECYCLE_EVENTS, f"{_where(i, events[i])}: lifecycle event mid-stream"
        items.handle(i, events[i])
    assert items.open == {}, f"items added but never done: {sorted(items.open)!r}"
    return [items.done_items[k] for k in sorted(items.done_items)]
