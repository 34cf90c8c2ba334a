"""The UI transition graph (DroidBot's UTG): screens as nodes, actions as edges, written as utg.json."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .screens import ScreenFacts

UTG_VERSION = 1


@dataclass
class Node:
    """One screen (by its coarse key)."""

    key: str
    package: str
    title: str
    """A readable name: the screen's first fixed-chrome text when it has one."""
    labels: list[str]
    """Every label seen on this screen so far (sorted)."""
    actionables: list[str]
    visits: int = 0
    first_step: int = 0
    screenshot: str | None = None
    """File name of the screen's first screenshot, beside utg.json."""


@dataclass
class Edge:
    """One action taken on one screen, and where it led (the latest destination)."""

    src: str
    event: str
    """The event's signature on `src` (kind, element class, id and label), see `explorer.Event`."""
    action: dict[str, Any]
    """The action as AndroidWorld JSON, for replay on the screen the agent saw."""
    label: str
    """Human-readable action, e.g. `tap "More options"`."""
    dst: str
    effective: bool
    """The screen (fine key) changed."""
    count: int = 1
    steps: list[int] = field(default_factory=list)
    dsts: dict[str, int] = field(default_factory=dict)
    """Every destination this event led to, with how often (an event may lead to several)."""


class TransitionGraph:
    """Screens and the actions between them, built one step at a time."""

    def __init__(self, app: str):
        self.app = app
        self.nodes: dict[str, Node] = {}
        self.edges: dict[tuple[str, str], Edge] = {}

    def visit(self, facts: ScreenFacts, step: int, title: str = "") -> tuple[Node, bool]:
        """Record a visit to a screen; returns the node and whether it is new."""
        node = self.nodes.get(facts.key)
        new = node is None
        if node is None:
            node = Node(facts.key, facts.package, title, sorted(facts.labels), list(facts.actionables), first_step=step)
            self.nodes[facts.key] = node
        else:
            node.labels = sorted(set(node.labels) | facts.labels)
            node.actionables = sorted(set(node.actionables) | set(facts.actionables))
        node.visits += 1
        return node, new

    def add_edge(self, src: str, event: str, action: dict[str, Any], label: str, dst: str, effective: bool,
                 step: int) -> Edge:
        edge = self.edges.get((src, event))
        if edge is None:
            edge = Edge(src, event, action, label, dst, effective, steps=[step], dsts={dst: 1})
            self.edges[(src, event)] = edge
        else:
            edge.count += 1
            edge.dst, edge.effective = dst, edge.effective or effective
            edge.steps.append(step)
            edge.dsts[dst] = edge.dsts.get(dst, 0) + 1
        return edge

    def tried(self, src: str, event: str) -> bool:
        return (src, event) in self.edges

    def path(self, src: str, goal: set[str]) -> list[Edge] | None:
        """The shortest chain of effective edges from `src` to any screen in `goal` (BFS)."""
        if src in goal:
            return []
        seen = {src}
        queue: deque[tuple[str, list[Edge]]] = deque([(src, [])])
        out: dict[str, list[Edge]] = {}
        for e in self.edges.values():
            if e.effective and e.src != e.dst:
                out.setdefault(e.src, []).append(e)
        while queue:
            here, way = queue.popleft()
            for e in out.get(here, ()):
                if e.dst in seen:
                    continue
                if e.dst in goal:
                    return way + [e]
                seen.add(e.dst)
                queue.append((e.dst, way + [e]))
        return None

    def coverage(self, app_only: bool = True) -> dict[str, float]:
        """Unique screens, unique actionable elements and the share of effective actions."""
        nodes = [n for n in self.nodes.values() if not app_only or n.package == self.app]
        elements = {f"{n.key}/{a}" for n in nodes for a in n.actionables}
        taken = sum(e.count for e in self.edges.values())
        effective = sum(e.count for e in self.edges.values() if e.effective)
        return {"screens": len(nodes), "elements": len(elements), "actions": taken,
                "effective_share": effective / taken if taken else 0.0}

    def to_json(self) -> dict[str, Any]:
        start = min(self.nodes.values(), key=lambda n: n.first_step).key if self.nodes else None
        return {"version": UTG_VERSION, "app": self.app, "start": start, "num_nodes": len(self.nodes),
                "num_edges": len(self.edges), "coverage": self.coverage(),
                "nodes": [asdict(n) for n in self.nodes.values()],
                "edges": [asdict(e) for e in self.edges.values()]}

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False))

    @classmethod
    def load(cls, path: Path) -> "TransitionGraph":
        data = json.loads(Path(path).read_text())
        g = cls(data["app"])  # start, num_nodes and num_edges are derived again
        for n in data["nodes"]:
            g.nodes[n["key"]] = Node(**n)
        for e in data["edges"]:
            g.edges[(e["src"], e["event"])] = Edge(**e)
        return g
