"""Forgetting: what imitating an app's own self-proposed paths costs its suite, with and without
holding the turns that taught nothing (`adapt.preserve_weight`).

    python benchmarks/forgetting.py                                   # Clock, the default recipe
    python benchmarks/forgetting.py --apps com.example.clock,com.example.calendar --updates 4

Per app: explore it as `coadapt adapt` does (the default exploration), replay the training
proposals' verified paths as imitation samples, and train a fresh adapter on them for `--updates`
updates (each `epochs` passes, the loop's lr and rank). Variants: no update (the base policy);
the paths alone; the paths plus `preserve_turns` of the base policy's own sampled turns at the
app's adapt goals as KL-only samples (`preserve_weight`). Each is scored by ground truth on the
app's eval instances, greedy, with the loss on the paths at the end of training (how well they
were learnt). Seen apps are where this is meaningful: the base policy has something to lose.
Ground truth is used for the score only; nothing here is part of adaptation. Prints one table;
--json writes the rows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from coadapt.adapt.config import AdaptConfig
from coadapt.adapt.loop import collect, demo_samples, greedy, preserve_samples
from coadapt.adapt.trainer import LoraTrainer
from coadapt.adaptation import adapt_cards, explore_card, instances
from coadapt.apps import label_map
from coadapt.config import DeviceSettings, ModelSettings
from coadapt.evaluation import GroundTruth
from coadapt.explore.job import explore_app
from coadapt.rollout import RolloutRunner, RolloutSettings, TaskCard
from coadapt.runs import RunStore
from coadapt.wiring import build_policy, build_pool


def fresh_agents(temperature: float):
    """The bundled policy, loaded anew (no adapter)."""
    return build_policy(ModelSettings(), temperature=temperature)


def success(agents, pool, app: str, seed: int, per_template: int, folder: Path) -> float:
    """Greedy ground-truth success on the app's eval instances."""
    tasks = instances(app, "eval", seed, per_template)
    cards = [TaskCard.from_template(t, k) for k, t in tasks.items()]
    store = RunStore(folder)
    try:
        with greedy(agents):
            res = RolloutRunner(pool, agents, store, scorer=GroundTruth(tasks)).run(cards, k=1, phase="eval")
        scores = [ep.success or 0.0 for ep in store.episodes(phase="eval")]
    finally:
        store.close()
    assert res.infra_errors == 0, f"{res.infra_errors} infrastructure errors"
    return sum(scores) / len(scores) if scores else 0.0


def measure(app: str, cfg: AdaptConfig, updates: int, eval_per_template: int, work: Path, say) -> list[dict]:
    pool = build_pool(DeviceSettings())
    card = explore_card(app, cfg.seed)
    with pool.lease() as slot:
        found = explore_app(slot.device, card, app_names=label_map(), steps=cfg.explore_steps, runs=cfg.explore_runs,
                            seed=cfg.seed, proposals=cfg.proposals)
    every = round(1 / cfg.holdout) if cfg.holdout > 0 else 0
    cards = [p.card(card, i, max(8, 2 * len(p.actions) + 2)) for i, p in enumerate(found.proposals)]
    train = [i for i in range(len(cards)) if not (every and i % every == every - 1)]
    rows = []
    for name, weight in (("base", None), ("paths", 0.0), ("paths + preserve", cfg.preserve_weight)):
        t0 = time.monotonic()
        agents = fresh_agents(cfg.temperature)
        samples, held, loss = [], 0, None
        if weight is not None:
            samples = demo_samples(agents, pool, [found.proposals[i] for i in train], [cards[i] for i in train],
                                   RolloutSettings())
            demos = len(samples)
            if weight > 0:  # the base policy's own sampled turns at the adapt goals, held at the reference
                goals, _ = adapt_cards(app, cfg.seed, cfg.instances_per_template)
                store = RunStore(work / f"{app}-rollouts")
                runner = RolloutRunner(pool, agents, store, settings=RolloutSettings(guard=True, run_seed=cfg.seed))
                res = runner.run(goals, k=2, round=0, phase="adapt")
                turns = [(t, i) for t in collect(store, res.trajectories, res.episode_ids, goals, 2)
                         for i in range(len(t.steps))]
                random.Random(cfg.seed).shuffle(turns)
                for t, i in turns[: cfg.preserve_turns]:
                    samples += preserve_samples(t, [i])
                held = len(samples) - demos
                store.close()
            trainer = LoraTrainer(agents.policy, dataclasses.replace(cfg, preserve_weight=weight))
            for u in range(updates):
                stats = trainer.update(samples, seed=u)
                loss = stats.get("sft")
        score = success(agents, pool, app, cfg.seed, eval_per_template, work / f"{app}-{name.replace(' ', '')}")
        rows.append({"app": app, "variant": name, "proposals": len(train), "held_turns": held,
                     "samples": len(samples), "updates": updates if weight is not None else 0,
                     "path_loss": loss, "success": round(score, 4), "seconds": round(time.monotonic() - t0, 1)})
        say(rows[-1])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--apps", default="com.example.clock", help="comma-separated packages (seen apps)")
    ap.add_argument("--updates", type=int, default=4, help="updates over the samples (a loop's 3 rounds + a pass)")
    ap.add_argument("--eval-instances", type=int, default=10, help="eval instances per template")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    console = Console(width=100)
    cfg = AdaptConfig()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for app in args.apps.split(","):
            rows += measure(app.strip(), cfg, args.updates, args.eval_instances, Path(tmp),
                            lambda r: console.print(f"{r['app']} {r['variant']}: {r['success']:.3f} ({r['seconds']:.0f} s)"))
    table = Table(title=f"forgetting: {args.updates} updates on the proposals' paths (lr {cfg.lr}, r {cfg.lora_r})")
    for col in ("app", "variant", "proposals", "held", "samples", "path loss", "success", "s"):
        table.add_column(col, justify="left" if col in ("app", "variant") else "right", no_wrap=True)
    for r in rows:
        table.add_row(r["app"].rsplit(".", 1)[-1], r["variant"], str(r["proposals"]), str(r["held_turns"]), str(r["samples"]),
                      "-" if r["path_loss"] is None else f"{r['path_loss']:.3f}", f"{r['success']:.3f}",
                      f"{r['seconds']:.0f}")
    console.print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
