"""What the episode viewer and the live view show: episode rows, one step with its action drawn on
the screenshot, and the newest frame of each running episode."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from coadapt.android_env.sim.canvas import font
from coadapt.dashboard.folders import DashboardError, inside
from coadapt.runs import EpisodeRow, RunStore, RunStoreError

EPISODE_COLUMNS = ("id", "phase", "round", "key", "attempt", "device", "status", "steps", "declared", "success",
                   "verifier", "gate", "source", "wandering")
"""Columns of the episode table, in order."""

ACCENT = (230, 40, 90)
SWIPE_PX = 0.3
"""Arrow length of a swipe or scroll, as a share of the screen height."""


def episode_rows(store: RunStore) -> list[list[Any]]:
    """One row per episode (EPISODE_COLUMNS), newest first."""
    return [_episode_row(e) for e in reversed(store.episodes())]


def _episode_row(e: EpisodeRow) -> list[Any]:
    return [e.id, e.phase, e.round, e.key, e.attempt, e.device, e.status, e.steps, e.declared or "",
            _round(e.success), _round(e.verifier_score), e.gate or "", e.source or "", _round(e.wandering)]


def _round(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)


@dataclass(frozen=True)
class StepView:
    """Everything the viewer shows for one step of one episode."""

    episode: int
    step: int
    n_steps: int
    image: Image.Image | None
    """The screenshot with the action drawn on it (None when screens were not saved)."""
    action: str
    """The action's short form, e.g. `tap(3)`, with the element it hit."""
    elements: list[tuple[str, str | None]]
    """The element list, one (line, label) per element; the chosen element is labelled `chosen`."""
    raw_output: str
    details: dict[str, Any]
    """Step and episode signals: verifier votes and score, curiosity, gate, advantage, outcome."""


def step_view(store: RunStore, root: Path, episode_id: int, step: int) -> StepView:
    """Step `step` of an episode (clamped to the steps it has), with the action drawn."""
    try:
        ep = store.episode(episode_id)
    except RunStoreError as e:
        raise DashboardError(str(e)) from e
    steps = store.steps(episode_id)
    if not steps:
        return StepView(episode_id, 0, 0, None, "(no steps yet)", [], "", _episode_details(store, ep))
    step = max(0, min(step, len(steps) - 1))
    rec = steps[step]
    image = None
    if rec.get("screen"):
        path = inside(root, Path(store.folder).resolve().relative_to(root.resolve()) / rec["screen"])
        try:
            with Image.open(path) as im:
                image = draw_action(im.convert("RGB"), rec["action"], rec.get("element"), rec["action_text"])
        except OSError:
            image = None
    chosen = (rec["action"] or {}).get("index")
    lines = [(line + "\n", "chosen" if chosen is not None and line.startswith(f"[{chosen}]") else None)
             for line in (rec.get("elements") or "").splitlines()]
    target = rec.get("element") or {}
    hit = target.get("text") or target.get("content_desc") or (target.get("resource_id") or "").split("/")[-1]
    action = rec["action_text"] + (f"  →  {hit!r}" if hit else "")
    details = {
        "step": {k: rec.get(k) for k in ("action", "invalid", "error", "package", "reward", "curiosity", "advantage",
                                          "gate", "seconds") if rec.get(k) not in (None, 0, "")},
        **_episode_details(store, ep),
    }
    return StepView(episode_id, step, len(steps), image, action, lines, rec.get("raw_output") or "", details)


def _episode_details(store: RunStore, ep: EpisodeRow) -> dict[str, Any]:
    detail = ep.verifier_detail
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            pass
    outcome = {"status": ep.status, "declared": ep.declared, "answer": ep.answer, "steps": ep.steps,
               "success (ground truth)": ep.success, "error": ep.error}
    verifier = {"score": ep.verifier_score, "votes": store.verdicts(ep.id), "detail": detail}
    curiosity = {"episode": ep.curiosity, "wandering": ep.wandering, "informative": ep.informative}
    training = {"source": ep.source, "gate": ep.gate, "advantage": ep.advantage, "reward": ep.reward,
                "adapter": ep.adapter}
    return {
        "episode": {"goal": ep.goal, "key": ep.key, "attempt": ep.attempt, "phase": ep.phase, "round": ep.round,
                    "device": ep.device, "policy": ep.policy},
        "outcome": _drop_none(outcome),
        "verifier": _drop_none(verifier),
        "curiosity": _drop_none(curiosity),
        "training": _drop_none(training),
    }


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v not in (None, [], {})}


def draw_action(image: Image.Image, action: dict[str, Any] | None, element: dict[str, Any] | None,
                text: str) -> Image.Image:
    """A copy of `image` with the action drawn: a dot for a tap, a ring for a long press, an arrow
    for a swipe or scroll, the element's box for anything aimed at one, and the action's short
    form in a banner."""
    out = image.copy()
    overlay = Image.new("RGBA", out.size, (0, 0, 0, 0))
    d = ImageDraw.Draw(overlay)
    w, h = out.size
    unit = max(4, round(min(w, h) / 60))
    action = action or {}
    kind = action.get("action_type")
    box = (element or {}).get("bounds")
    if box and len(box) == 4:
        d.rectangle(box, outline=ACCENT + (255,), width=max(2, unit // 3))
    if "x" in action and "y" in action:
        point = (action["x"], action["y"])
    elif box and len(box) == 4:
        point = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
    else:
        point = (w / 2, h / 2)
    if kind == "click":
        r = unit * 2
        d.ellipse((point[0] - r, point[1] - r, point[0] + r, point[1] + r), fill=ACCENT + (110,),
                  outline=ACCENT + (255,), width=max(2, unit // 2))
    elif kind == "long_press":
        for r in (unit * 2, unit * 4):
            d.ellipse((point[0] - r, point[1] - r, point[0] + r, point[1] + r), outline=ACCENT + (255,),
                      width=max(2, unit // 2))
    elif kind in ("swipe", "scroll"):
        direction = action.get("direction", "down")
        # A scroll "down" reveals what is below: the finger moves up. A swipe moves the finger itself.
        finger = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}.get(direction, (0, 1))
        if kind == "scroll":
            finger = (-finger[0], -finger[1])
        length = SWIPE_PX * h
        start = (point[0] - finger[0] * length / 2, point[1] - finger[1] * length / 2)
        end = (point[0] + finger[0] * length / 2, point[1] + finger[1] * length / 2)
        _arrow(d, start, end, unit)
    out = Image.alpha_composite(out.convert("RGBA"), overlay).convert("RGB")
    _banner(out, text, unit)
    return out


def _arrow(d: ImageDraw.ImageDraw, start: tuple[float, float], end: tuple[float, float], unit: int) -> None:
    d.line((start, end), fill=ACCENT + (255,), width=unit)
    angle = math.atan2(end[1] - start[1], end[0] - start[0])
    head = unit * 4
    left = (end[0] - head * math.cos(angle - 0.5), end[1] - head * math.sin(angle - 0.5))
    right = (end[0] - head * math.cos(angle + 0.5), end[1] - head * math.sin(angle + 0.5))
    d.polygon((end, left, right), fill=ACCENT + (255,))
    d.ellipse((start[0] - unit, start[1] - unit, start[0] + unit, start[1] + unit), fill=ACCENT + (255,))


def _banner(image: Image.Image, text: str, unit: int) -> None:
    d = ImageDraw.Draw(image)
    f = font(unit * 3)
    w, h = image.size
    height = unit * 5
    d.rectangle((0, h - height, w, h), fill=(20, 20, 24))
    d.text((unit, h - height + unit), text[:80], font=f, fill=(255, 255, 255))


@dataclass(frozen=True)
class LiveFrame:
    """The newest frame of one running episode."""

    device: str
    episode: int
    key: str
    step: int
    image: Image.Image | None
    caption: str


def live_frames(store: RunStore, root: Path) -> list[LiveFrame]:
    """For each device with a running episode, that episode's newest frame (its action drawn when
    one was taken). Reads only; the writer is never locked."""
    frames = []
    latest: dict[str, EpisodeRow] = {}
    for e in store.episodes(status="running"):
        latest[e.device or "?"] = e
    base = Path(store.folder).resolve().relative_to(root.resolve())
    for device, e in sorted(latest.items()):
        rec = store.last_step(e.id)
        image = None
        if rec is not None and rec.get("screen"):
            try:
                with Image.open(inside(root, base / rec["screen"])) as im:
                    image = draw_action(im.convert("RGB"), rec["action"], rec.get("element"), rec["action_text"])
            except OSError:
                image = None
        step = -1 if rec is None else rec["step"]
        caption = f"{device} · {e.key} · step {step + 1}" + ("" if rec is None else f" · {rec['action_text']}")
        frames.append(LiveFrame(device, e.id, e.key, step, image, caption))
    return frames
