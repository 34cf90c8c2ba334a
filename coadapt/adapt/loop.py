"""The adapt loop: rounds of rollouts -> verifier -> gate -> advantages -> LoRA update -> keep or
roll back, on task cards only (goal text; no checker is reachable from here and the phones refuse
to show app state). Reads top to bottom; every round is checkpointed, and a killed run resumes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from coadapt.android_env.pool import DevicePool
from coadapt.policy.agent import VLMAgentPolicy
from coadapt.policy.prompt import PolicyInput
from coadapt.rollout import RolloutRunner, RolloutSettings, TaskCard, Trajectory, load_trajectory
from coadapt.runs import RunStore

from .advantages import episode_advantages, step_advantages, turn_facts
from .config import AdaptConfig
from .gate import (
    ACCEPTED_NEGATIVE, ACCEPTED_POSITIVE, DROPPED_FLAT, DROPPED_INFRA, DROPPED_UNCERTAIN, GateSettings, accepted,
    gate_attempt, outcome,
)
from .relabel import relabel
from .trainer import LoraTrainer, TrainSample
from .verifier import Verdict, Verifier

log = logging.getLogger(__name__)

PHASE = "adapt"
"""Run-store phase of the learning rollouts."""
CHECK = "adapt_check"
"""Run-store phase of the keep-or-roll-back checks (greedy, verifier only)."""

ProgressFn = Callable[[str, dict[str, Any]], None]


@contextlib.contextmanager
def greedy(agents: VLMAgentPolicy) -> Iterator[None]:
    """Decode greedily inside the block (the checks), sampling again after it."""
    policy = agents.policy
    with policy.lock:
        saved = policy.config
        policy.config = dataclasses.replace(saved, temperature=0.0)
    try:
        yield
    finally:
        with policy.lock:
            policy.config = saved


def collect(store: RunStore, result_trajs: dict, ids: dict, cards: Sequence[TaskCard], k: int) -> list[Trajectory]:
    """Every finished attempt of a round: played now, or rebuilt from the store (a resumed round)."""
    out = []
    for card in cards:
        for a in range(k):
            traj = result_trajs.get((card.key, a))
            if traj is None and (card.key, a) in ids:
                traj = load_trajectory(store, ids[(card.key, a)], card)
            if traj is not None:
                out.append(traj)
    return out


def train_samples(traj: Trajectory, advantages: Sequence[float], *, imitate: bool) -> list[TrainSample]:
    """One training sample per turn: the prompt the model saw (the trajectory's goal), its tokens."""
    return [TrainSample(PolicyInput(s.obs, traj.goal, s.decision.history), s.decision.token_ids, s.decision.logprobs,
                        adv, imitate=imitate) for s, adv in zip(traj.steps, advantages)]


def adapt(agents: VLMAgentPolicy, pool: DevicePool, store: RunStore, train_cards: Sequence[TaskCard],
          check_cards: Sequence[TaskCard], cfg: AdaptConfig, verifier: Verifier, *, out_dir: Path,
          settings: RolloutSettings = RolloutSettings(), progress: ProgressFn | None = None) -> dict[str, Any]:
    """Adapt `agents`' LoRA adapter to the app of `train_cards`; returns the loop's own summary
    (self-verified numbers only). The adapter that was kept last is in out_dir/adapter."""
    say = progress or (lambda event, data: None)
    policy = agents.policy
    trainer = LoraTrainer(policy, cfg)
    guarded = dataclasses.replace(settings, guard=True, run_seed=cfg.seed)
    runner = RolloutRunner(pool, agents, store, settings=guarded, adapter="adapter")
    gate_cfg = GateSettings(cfg.gate, cfg.positive_threshold, cfg.negative_threshold)
    adapter_dir = out_dir / "adapter"
    started = time.monotonic()

    def check(round: int) -> float:
        """Self-verified success of the current policy on the held-out adapt cards (greedy)."""
        if not check_cards:
            return 0.0
        with greedy(agents):
            res = runner.run(check_cards, k=1, round=round, phase=CHECK)
        trajs = collect(store, res.trajectories, res.episode_ids, check_cards, 1)
        ps = [verifier(t).p or 0.0 for t in trajs]
        return sum(ps) / len(ps) if ps else 0.0

    # ------------------------------------------------------------------ resume
    done_rounds = [r for r in store.rounds(PHASE) if r.status in ("finished", "rolled_back")]
    history: list[dict[str, Any]] = [json.loads(r.metrics) if isinstance(r.metrics, str) else dict(r.metrics or {})
                                     for r in done_rounds]
    if done_rounds and (adapter_dir / "adapter_config.json").is_file():
        policy.load_adapter_weights(adapter_dir)
        log.info("resuming after round %d", done_rounds[-1].round)
    best = history[-1]["best_check"] if history else check(0)
    say("start", {"rounds": cfg.rounds, "done": len(done_rounds), "check": best})

    for r in range(len(done_rounds), cfg.rounds):
        t_round = time.monotonic()
        store.start_round(PHASE, r)
        # ------------------------------------------------------------------ rollouts
        cards = [c.replace(max_steps=cfg.horizon_at(r, c.max_steps)) for c in train_cards]
        res = runner.run(cards, k=cfg.group_size, round=r, phase=PHASE,
                         progress=lambda e, d: say("episode" if e == "episode" else "round_start",
                                                   {**d, "round": r}))
        trajs = collect(store, res.trajectories, res.episode_ids, cards, cfg.group_size)

        # ------------------------------------------------------------------ verifier and gate
        verdicts: list[Verdict] = []
        decisions: list[str] = []
        for t in trajs:
            v = verifier(t)
            verdicts.append(v)
            decisions.append(gate_attempt(v, gate_cfg, infra_error=t.infra_error))
            store.add_verdicts(t.episode_id, [(judge, i, vote, None) for judge, i, vote in v.votes])
            store.update_episode(t.episode_id, verifier_score=v.p, verifier_detail=json.dumps(
                {"progress": v.progress, "checks": v.checks}))

        # ------------------------------------------------------------------ hindsight relabelling
        relabels: list[tuple[Trajectory, Verdict]] = []
        if cfg.relabel:
            for t, d in zip(trajs, decisions):
                if d != ACCEPTED_POSITIVE and not t.infra_error:
                    found = relabel(t, train_cards, verifier, cfg.positive_threshold)
                    if found is not None:
                        relabels.append(found)

        # ------------------------------------------------------------------ advantages with turn credit
        rewards = [outcome(d, v, gate_cfg) + cfg.progress_weight * v.progress if accepted(d) else 0.0
                   for d, v in zip(decisions, verdicts)]
        live = [i for i, d in enumerate(decisions) if accepted(d)]
        adv_live = episode_advantages([rewards[i] for i in live], [trajs[i].card.key for i in live], cfg.objective)
        advantages: list[float | None] = [None] * len(trajs)
        for i, a in zip(live, adv_live):
            advantages[i] = a
            if a is None and cfg.objective != "sft" and decisions[i] != ACCEPTED_POSITIVE:
                decisions[i] = DROPPED_FLAT
        samples: list[TrainSample] = []
        wandering = []
        for t, d, a, reward in zip(trajs, decisions, advantages, rewards):
            facts = turn_facts(t)
            wandering.append(facts.wandering)
            positive = d == ACCEPTED_POSITIVE
            if a is None and not positive:
                store.update_episode(t.episode_id, gate=d)
                continue
            per_step = step_advantages(a or 0.0, facts, turn_credit=cfg.turn_credit, discount=cfg.credit_discount)
            store.update_episode(t.episode_id, gate=d, advantage=a, reward=reward)
            store.set_step_advantages(t.episode_id, per_step, d)
            samples += train_samples(t, per_step, imitate=positive)
        for t, _ in relabels:  # imitation only: their tokens were sampled for another goal
            samples += train_samples(t, [0.0] * len(t.steps), imitate=True)

        # ------------------------------------------------------------------ update
        snapshot = policy.adapter_state()
        metrics = trainer.update(samples, seed=cfg.seed * 1000 + r)

        # ------------------------------------------------------------------ keep or roll back
        score = check(r + 1)
        kept = score >= best
        if kept:
            best = score
        else:
            policy.load_adapter_state(snapshot)
            log.info("round %d made the self-check worse (%.3f < %.3f): rolled back", r, score, best)
        policy.save_adapter(adapter_dir)
        summary = {
            "round": r, "horizon": max(c.max_steps for c in cards),
            "episodes": len(trajs), "infra_errors": res.infra_errors,
            "self_verified_success": sum(1 for v in verdicts if (v.p or 0) >= cfg.positive_threshold) / max(1, len(trajs)),
            **{name: decisions.count(name) for name in (ACCEPTED_POSITIVE, ACCEPTED_NEGATIVE, DROPPED_UNCERTAIN,
                                                         DROPPED_FLAT, DROPPED_INFRA)},
            "relabelled_positive": len(relabels),
            "mean_progress": sum(v.progress for v in verdicts) / max(1, len(verdicts)),
            "wandering_rate": sum(wandering) / max(1, len(wandering)),
            "env_steps": sum(len(t.steps) for t in trajs), "check": score, "best_check": best, "kept": kept,
            "seconds": round(time.monotonic() - t_round, 1), **{f"train_{k}": v for k, v in metrics.items()},
        }
        summary["verifier"] = [(t.episode_id, v.p, d) for t, v, d in zip(trajs, verdicts, decisions)]
        store.finish_round(PHASE, r, status="finished" if kept else "rolled_back", adapter="adapter",
                           metrics=summary, kept=kept)
        for name in ("self_verified_success", "check", "train_loss", "train_kl", "mean_progress", "wandering_rate"):
            if isinstance(summary.get(name), (int, float)):
                store.log_metric(f"adapt/{name}", r, float(summary[name]))
        history.append(summary)
        say("round", summary)
        elapsed = time.monotonic() - started
        per_round = elapsed / (r + 1 - len(done_rounds))
        if elapsed + per_round > cfg.max_minutes * 60 and r + 1 < cfg.rounds:
            log.info("stopping after round %d: the %.1f-minute budget would run out", r, cfg.max_minutes)
            break
    if not (adapter_dir / "adapter_config.json").is_file():
        policy.save_adapter(adapter_dir)
    return {"rounds": history, "best_check": best, "adapter": str(adapter_dir),
            "wall_clock_s": round(time.monotonic() - started, 1)}
