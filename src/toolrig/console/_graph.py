"""A workflow drawn from its definition: a layered layout computed from the steps, rendered as SVG.

Each step kind has a block shape: a tool step is a box; a sequence stacks its steps; a parallel opens a fork bar,
lays its branches side by side and joins them; a branch opens a diamond with one column per case (the edge
labelled with its condition) and ``otherwise``; a foreach is a header box over its step in a dashed frame.
Blocks are laid out bottom-up (sizes) and placed top-down (positions), so nothing is laid out by hand. With step
statuses (a run), each box takes its status as a CSS class (``status-ok``, ``status-running`` ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from toolrig.workflows import BranchStep, ForeachStep, ParallelStep, SequenceStep, Step, ToolStep

__all__ = ["Block", "layout", "render_graph"]

NODE_W, NODE_H, BAR_H, GAP, MARGIN = 170, 44, 8, 28, 16
_WORST = ("error", "denied", "waiting_approval", "running", "ok", "skipped")


@dataclass
class Node:
    """One box (or bar, diamond, frame) placed at ``x, y`` (its top-left)."""

    key: str
    kind: str
    label: str
    sub: str = ""
    x: float = 0.0
    y: float = 0.0
    w: float = NODE_W
    h: float = NODE_H


@dataclass
class Edge:
    """An arrow from ``(x1, y1)`` to ``(x2, y2)``, optionally labelled."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str = ""


@dataclass
class Block:
    """A laid-out part of the graph: its size, nodes and edges (relative to its top-left); entered at the top
    centre and left at the bottom centre."""

    w: float
    h: float
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)

    def moved(self, dx: float, dy: float) -> Block:
        for n in self.nodes:
            n.x += dx
            n.y += dy
        for e in self.edges:
            e.x1, e.y1, e.x2, e.y2 = e.x1 + dx, e.y1 + dy, e.x2 + dx, e.y2 + dy
        return self


def _stack(blocks: Sequence[Block]) -> Block:
    """Blocks one under the other, centred, joined by arrows."""
    if not blocks:
        return Block(NODE_W, 0)
    width = max(b.w for b in blocks)
    out = Block(width, 0)
    y = 0.0
    for i, b in enumerate(blocks):
        if i:
            out.edges.append(Edge(width / 2, y - GAP, width / 2, y))
        b.moved((width - b.w) / 2, y)
        out.nodes += b.nodes
        out.edges += b.edges
        y += b.h + GAP
    out.h = y - GAP
    return out


def _columns(head: Node, columns: Sequence[Block], labels: Sequence[str], join_key: str) -> Block:
    """``head`` above ``columns`` side by side, joined by a bar below them."""
    inner_w = sum(c.w for c in columns) + GAP * (len(columns) - 1)
    width = max(inner_w, head.w)
    top = head.h + GAP
    out = Block(width, 0)
    head.x, head.y = (width - head.w) / 2, 0
    out.nodes.append(head)
    x = (width - inner_w) / 2
    bottom = top + max((c.h for c in columns), default=0)
    for column, label in zip(columns, labels, strict=True):
        column.moved(x, top)
        cx = x + column.w / 2
        out.edges.append(Edge(width / 2, head.h, cx, top, label))
        out.nodes += column.nodes
        out.edges += column.edges
        out.edges.append(Edge(cx, top + column.h, cx, bottom + GAP))
        x += column.w + GAP
    out.nodes.append(Node(join_key, "bar", "", x=(width - inner_w) / 2, y=bottom + GAP, w=inner_w, h=BAR_H))
    out.h = bottom + GAP + BAR_H
    return out


def _block(step: Step) -> Block:
    if isinstance(step, ToolStep):
        return Block(NODE_W, NODE_H, [Node(step.id, "tool", step.id, step.tool)])
    if isinstance(step, SequenceStep):
        return _stack([_block(s) for s in step.steps])
    if isinstance(step, ParallelStep):
        head = Node(step.id, "fork", step.id, f"parallel · {step.mode}", h=NODE_H * 0.7)
        return _columns(head, [_block(s) for s in step.steps], ["" for _ in step.steps], f"{step.id}/join")
    if isinstance(step, BranchStep):
        head = Node(step.id, "branch", step.id, "branch")
        columns = [_stack([_block(s) for s in case.steps]) if case.steps else _pass(f"{step.id}/case{i}")
                   for i, case in enumerate(step.cases)]
        labels = [case.when for case in step.cases]
        columns.append(_stack([_block(s) for s in step.otherwise]) if step.otherwise else _pass(f"{step.id}/else"))
        labels.append("otherwise")
        return _columns(head, columns, labels, f"{step.id}/join")
    if isinstance(step, ForeachStep):
        inner = _block(step.step)
        head = Node(step.id, "foreach", step.id, "for each item")
        body = _stack([Block(NODE_W, NODE_H, [head]), inner])
        body.moved(8, 8)
        frame = Node(f"{step.id}/frame", "frame", "", w=body.w + 16, h=body.h + 16)
        return Block(body.w + 16, body.h + 16, [frame, *body.nodes], body.edges)
    return Block(NODE_W, NODE_H, [Node("?", "tool", "?")])


def _pass(key: str) -> Block:
    return Block(NODE_W * 0.6, NODE_H * 0.6, [Node(key, "pass", "nothing", w=NODE_W * 0.6, h=NODE_H * 0.6)])


def layout(steps: Sequence[Step]) -> Block:
    """The whole workflow's graph, placed with a margin."""
    return _stack([_block(s) for s in steps]).moved(MARGIN, MARGIN)


def status_of(key: str, statuses: Mapping[str, str]) -> str:
    """A box's status: its own, else the worst of the foreach items run for it (``each[2]/key``)."""
    if key in statuses:
        return statuses[key]
    found = [s for k, s in statuses.items() if k.endswith(f"/{key}")]
    return min(found, key=lambda s: _WORST.index(s) if s in _WORST else len(_WORST)) if found else ""


def _short(text: str, size: int = 24) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _node(n: Node, statuses: Mapping[str, str]) -> str:
    status = status_of(n.key, statuses) if n.kind not in ("bar", "frame") else ""
    css = f"node {n.kind}" + (f" status-{status}" if status else "")
    title = escape(f"{n.label} ({n.sub})" + (f": {status}" if status else ""))
    if n.kind == "frame":
        return f'<rect class="{css}" x="{n.x:.1f}" y="{n.y:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" rx="8"/>'
    if n.kind == "bar":
        return f'<rect class="{css}" x="{n.x:.1f}" y="{n.y:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" rx="3"/>'
    cx, cy = n.x + n.w / 2, n.y + n.h / 2
    if n.kind == "branch":
        shape = (f'<polygon class="{css}" points="{cx:.1f},{n.y:.1f} {n.x + n.w:.1f},{cy:.1f} {cx:.1f},'
                 f'{n.y + n.h:.1f} {n.x:.1f},{cy:.1f}"/>')
    else:
        shape = f'<rect class="{css}" x="{n.x:.1f}" y="{n.y:.1f}" width="{n.w:.1f}" height="{n.h:.1f}" rx="6"/>'
    text = f'<text x="{cx:.1f}" y="{cy - 3:.1f}" text-anchor="middle" class="label">{escape(_short(n.label))}</text>'
    if n.sub:
        text += (f'<text x="{cx:.1f}" y="{cy + 12:.1f}" text-anchor="middle" class="sub">'
                 f"{escape(_short(n.sub))}</text>")
    return (f'<g data-step="{escape(n.key)}" data-status="{escape(status)}"><title>{title}</title>'
            f"{shape}{text}</g>")


def _edge(e: Edge) -> str:
    line = (f'<line class="edge" x1="{e.x1:.1f}" y1="{e.y1:.1f}" x2="{e.x2:.1f}" y2="{e.y2:.1f}" '
            'marker-end="url(#arrow)"/>')
    if e.label:
        mx, my = (e.x1 + e.x2) / 2, (e.y1 + e.y2) / 2
        line += f'<text class="edge-label" x="{mx + 4:.1f}" y="{my:.1f}">{escape(_short(e.label, 30))}</text>'
    return line


def render_graph(steps: Sequence[Step], statuses: Mapping[str, str] | None = None, *, name: str = "") -> Markup:
    """The workflow's graph as an inline SVG element (labels escaped: a workflow file is untrusted text)."""
    block = layout(steps)
    marks = statuses or {}
    width, height = block.w + 2 * MARGIN, block.h + 2 * MARGIN
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" viewBox="0 0 {width:.0f} {height:.0f}" '
             f'width="{width:.0f}" height="{height:.0f}" role="img" aria-label="{escape(name)} workflow graph">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#666"/></marker></defs>']
    parts += [_edge(e) for e in block.edges]
    parts += [_node(n, marks) for n in block.nodes]
    parts.append("</svg>")
    return Markup("".join(parts))
