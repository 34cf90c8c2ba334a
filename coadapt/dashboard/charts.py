"""What the training, compare and exploration views plot, as plain rows and images."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from coadapt.android_env.sim.canvas import font
from coadapt.dashboard.folders import DashboardError, discover, inside, read_json
from coadapt.runs import RunStore
from coadapt.stats import describe

SUCCESS_SERIES = ("self_verified_success", "check", "proposed_solved", "wandering_rate", "information_rate")
"""Per-round rates plotted together (0..1)."""
TRAIN_SERIES = ("train_loss", "train_kl")
GATE_SERIES = ("accepted_positive", "accepted_negative", "dropped_uncertain", "dropped_flat_group", "dropped_infra",
               "relabelled_positive", "untrusted_positive", "anchored", "preserved")
ROUND_COLUMNS = ("round", "kind", "status", "kept", "episodes", "accepted_positive", "accepted_negative", "dropped_uncertain",
                 "self_verified_success", "check", "train_loss", "train_kl", "seconds")


def round_metrics(store: RunStore, report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One dict per adapt round: its metrics as the store holds them now (so a running loop shows
    its finished rounds), completed from the report when there is one, with status and kept."""
    by_round: dict[int, dict[str, Any]] = {}
    for r in (report or {}).get("rounds", []):
        if isinstance(r, dict) and "round" in r:
            by_round[int(r["round"])] = dict(r)
    for row in store.rounds("adapt"):
        m = by_round.setdefault(row.round, {"round": row.round})
        m.update(row.metrics or {})
        m["status"] = row.status
        m["kept"] = row.kept
    return [by_round[k] for k in sorted(by_round)]


def long_rows(rounds: list[dict[str, Any]], series: tuple[str, ...]) -> list[dict[str, Any]]:
    """(round, label, series, value) rows for a line plot (x: round) or a bar plot (x: label);
    missing values are left out."""
    out = []
    for m in rounds:
        for s in series:
            v = m.get(s)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out.append({"round": int(m["round"]), "label": f"round {int(m['round'])}", "series": s,
                            "value": float(v)})
    return out


def round_table(rounds: list[dict[str, Any]]) -> list[list[Any]]:
    """ROUND_COLUMNS per round, numbers rounded for reading."""
    def cell(v: Any) -> Any:
        return round(v, 4) if isinstance(v, float) else v
    return [[cell(m.get(c)) for c in ROUND_COLUMNS] for m in rounds]


def ground_truth_line(report: dict[str, Any] | None) -> str:
    """Base and adapted ground-truth success from an adapt report (measured after adapting, on
    instances the loop never saw), or a note that the run has not reported yet."""
    if not report or "adapted" not in report:
        return "Ground truth: not reported yet (it is measured after the last round)."
    base = report.get("base", {}).get("success_rate")
    adapted = report["adapted"].get("success_rate")
    gain = report.get("gain")
    parts = [f"adapted **{adapted:.3f}**"] if adapted is not None else []
    if base is not None:
        parts.insert(0, f"base **{base:.3f}**")
    if gain is not None:
        c = (report.get("comparison") or {}).get("adapted") or {}
        parts.append(f"gain **{gain:+.3f}**" + (f" ({describe(c)})" if "ci95" in c else ""))
    n = report["adapted"].get("n_episodes")
    return "Ground truth on held-out instances: " + ", ".join(parts) + (f" ({n} episodes each)" if n else "")


def compare_rows(root: Path) -> list[dict[str, Any]]:
    """Base and adapted success per adapt run under `root` (from reports), two rows per run, one
    bar each (`bar`), side by side."""
    out = []
    for folder in discover(root):
        config = read_json(folder / "config.json") or {}
        report = read_json(folder / "report.json") or {}
        if config.get("kind") != "adapt" or "adapted" not in report:
            continue
        rel = folder.resolve().relative_to(root.resolve()).as_posix()
        app = str(report.get("app", config.get("app", "?"))).removeprefix("com.example.")
        for policy in ("base", "adapted"):
            rate = (report.get(policy) or {}).get("success_rate")
            if rate is not None:
                out.append({"bar": f"{app} · {policy}", "run": rel, "policy": policy, "success": float(rate),
                            "app": app})
    return out


def exploration_folders(root: Path) -> list[str]:
    """Folders holding a UI transition graph (explore runs, and adapt runs' own explorations)."""
    base = root.resolve()
    # Bounded depth: a run folder holds thousands of screenshots that a recursive glob would walk.
    found = {p.parent for level in range(5) for p in base.glob("/".join(["*"] * level + ["utg.json"]))}
    found = sorted(found, key=lambda p: (p / "utg.json").stat().st_mtime, reverse=True)
    return [p.relative_to(base).as_posix() or "." for p in found]


def load_graph(root: Path, rel: str) -> dict[str, Any]:
    """The utg.json of an exploration folder under `root`."""
    graph = read_json(inside(root, rel) / "utg.json")
    if not isinstance(graph, dict) or "nodes" not in graph:
        raise DashboardError(f"{rel} holds no readable utg.json")
    return graph


def graph_summary(graph: dict[str, Any]) -> str:
    """Coverage of an exploration, one line."""
    edges = graph.get("edges", [])
    effective = sum(1 for e in edges if e.get("effective"))
    return (f"{graph.get('app', '?')}: {len(graph['nodes'])} screens, {len(edges)} distinct actions "
            f"({effective} effective)")


def screen_gallery(root: Path, rel: str, graph: dict[str, Any]) -> list[tuple[Image.Image, str]]:
    """(thumbnail, caption) per screen, in the order first reached."""
    folder = inside(root, rel)
    out = []
    for i, n in enumerate(sorted(graph["nodes"], key=lambda n: n.get("first_step", 0))):
        image = _thumbnail(root, folder, n, 240)
        if image is not None:
            out.append((image, f"S{i} {n.get('title') or ''} · {n.get('visits', 0)} visits"))
    return out


def _thumbnail(root: Path, folder: Path, node: dict[str, Any], height: int) -> Image.Image | None:
    shot = node.get("screenshot")
    if not shot:
        return None
    try:
        with Image.open(inside(root, folder.relative_to(root.resolve()) / shot)) as im:
            im = im.convert("RGB")
            im.thumbnail((height, height))
            return im
    except OSError:
        return None


def graph_image(root: Path, rel: str, graph: dict[str, Any], thumb: int = 160) -> Image.Image:
    """The transition graph drawn left to right: one column per distance from the start screen,
    screens as thumbnails, effective actions as arrows between them."""
    folder = inside(root, rel)
    nodes = {n["key"]: n for n in graph["nodes"]}
    edges = [e for e in graph.get("edges", []) if e.get("effective") and e.get("src") in nodes and e.get("dst") in nodes]
    start = min(nodes.values(), key=lambda n: n.get("first_step", 0))["key"] if nodes else None
    depth = {start: 0} if start else {}
    queue = deque([start] if start else [])
    while queue:
        k = queue.popleft()
        for e in edges:
            if e["src"] == k and e["dst"] not in depth:
                depth[e["dst"]] = depth[k] + 1
                queue.append(e["dst"])
    far = max(depth.values(), default=0) + 1
    for k in nodes:
        depth.setdefault(k, far)  # reached only by a restart, or by an edge the explorer did not record
    columns: dict[int, list[str]] = {}
    for k in sorted(nodes, key=lambda k: nodes[k].get("first_step", 0)):
        columns.setdefault(depth[k], []).append(k)
    tw, th = round(thumb * 0.45), thumb
    gap_x, gap_y, pad = tw * 2, round(th * 0.25), 20
    width = pad * 2 + len(columns) * tw + (len(columns) - 1) * gap_x
    height = pad * 2 + max(len(c) for c in columns.values()) * (th + gap_y) if columns else 100
    canvas = Image.new("RGB", (max(width, 200), max(height, 100)), (250, 250, 252))
    d = ImageDraw.Draw(canvas)
    place: dict[str, tuple[int, int]] = {}
    for ci, col in enumerate(sorted(columns)):
        for ri, k in enumerate(columns[col]):
            place[k] = (pad + ci * (tw + gap_x), pad + ri * (th + gap_y))
    for e in edges:
        (x0, y0), (x1, y1) = place[e["src"]], place[e["dst"]]
        if e["src"] == e["dst"]:
            continue
        a = (x0 + tw, y0 + th / 2) if x1 > x0 else (x0, y0 + th / 2)
        b = (x1, y1 + th / 2) if x1 > x0 else (x1 + tw, y1 + th / 2)
        d.line((a, b), fill=(120, 130, 160), width=2)
        d.ellipse((b[0] - 4, b[1] - 4, b[0] + 4, b[1] + 4), fill=(230, 40, 90))
    label = font(12)
    for i, k in enumerate(sorted(nodes, key=lambda k: nodes[k].get("first_step", 0))):
        x, y = place[k]
        image = _thumbnail(root, folder, nodes[k], th)
        if image is not None:
            image = image.resize((tw, th))
            canvas.paste(image, (x, y))
        d.rectangle((x, y, x + tw, y + th), outline=(40, 40, 60), width=2 if k != start else 4)
        d.text((x, y + th + 2), f"S{i}", font=label, fill=(20, 20, 24))
    return canvas
