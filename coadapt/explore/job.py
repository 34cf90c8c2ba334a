"""Exploring an app as a job: several explorations from a fresh reset, the merged transition graph,
self-proposed tasks and the exploration memory, written to a run folder."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from coadapt.android_env.device import Device
from coadapt.android_env.env import AndroidEnv
from coadapt.rollout.cards import TaskCard
from coadapt.rollout.firewall import GuardedDevice

from .explorer import Exploration, Explorer, Strategy
from .graph import TransitionGraph
from .memory import memory_text
from .propose import Proposal, dumps, interleave, loads, propose

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExploreResult:
    graph: TransitionGraph
    """The first exploration's graph (the one utg.json holds, screenshots beside it)."""
    coverage: list[dict[str, float]]
    """Per exploration: unique screens, elements, effective share."""
    proposals: list[Proposal]
    memory: str


def explore_app(device: Device, card: TaskCard, *, app_names: dict[str, str] | None = None, steps: int = 200,
                runs: int = 1, seed: int = 0, strategy: Strategy = "greedy", out_dir: Path | None = None,
                proposals: int = 60, policy=None,
                progress: Callable[[str, dict[str, Any]], None] | None = None) -> ExploreResult:
    """Explore `card.app` `runs` times (seeds seed, seed+1, ...), `steps` actions each, on a
    guarded device (app state cannot be read), and propose tasks from what was found."""
    say = progress or (lambda e, d: None)
    env = AndroidEnv(GuardedDevice(device), app_names)
    if out_dir is not None:
        clear_screens(out_dir)
    found: dict[str, Proposal] = {}
    coverage = []
    first: Exploration | None = None
    for r in range(runs):
        explorer = Explorer(env, card, strategy=strategy, seed=seed + r, policy=policy,
                            out_dir=out_dir if r == 0 else None,
                            progress=lambda i, n, r=r: say("explore_step", {"run": r, "step": i, "total": n}))
        ex = explorer.run(steps)
        coverage.append(ex.coverage())
        first = first or ex
        for p in propose(ex, env, limit=proposals):
            found.setdefault(p.goal, p)
        say("explore_run", {"run": r, **coverage[-1], "proposals": len(found)})
    assert first is not None
    chosen = interleave(list(found.values()), proposals)
    result = ExploreResult(first.graph, coverage, chosen, memory_text(first.steps, card.app))
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        first.graph.save(out_dir / "utg.json")
        (out_dir / "proposals.json").write_text(dumps(chosen))
        (out_dir / "memory.txt").write_text(result.memory)
    return result


def clear_screens(out_dir: Path) -> None:
    """Delete an earlier exploration's screenshots, so a rerun into the same folder keeps none stale."""
    for old in out_dir.glob("screens/*.png"):
        old.unlink()


def write_explored(out_dir: Path, files: dict[str, bytes]) -> None:
    """Write the files an exploration elsewhere produced (relative path -> bytes) into `out_dir`,
    as if it had explored there."""
    clear_screens(out_dir)
    for rel, data in files.items():
        (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / rel).write_bytes(data)


def load_explored(out_dir: Path) -> tuple[list[Proposal], str] | None:
    """Proposals and memory of an exploration already written to `out_dir` (a resumed run)."""
    if not (out_dir / "proposals.json").is_file():
        return None
    memory = (out_dir / "memory.txt").read_text() if (out_dir / "memory.txt").is_file() else ""
    return loads((out_dir / "proposals.json").read_text()), memory


def report(result: ExploreResult) -> dict[str, Any]:
    """The explore run's report: coverage and every proposal with the exploration steps it came from."""
    return {"coverage": result.coverage, "memory": result.memory.splitlines(),
            "proposals": [p.to_json() for p in result.proposals]}


def write_report(out_dir: Path, result: ExploreResult, extra: dict[str, Any]) -> None:
    (out_dir / "report.json").write_text(json.dumps({**extra, **report(result)}, indent=1, ensure_ascii=False))
