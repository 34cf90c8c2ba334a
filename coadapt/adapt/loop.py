"""The adapt loop: rounds of rollouts -> verifier -> gate -> advantages -> LoRA update -> keep or
roll back, on task cards only (goal text; no checker is reachable from here and the phones refuse
to show app state). Reads top to bottom; every round is checkpointed, and a killed run resumes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import random
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from coadapt.android_env.actions import Type
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.pool import DevicePool
from coadapt.apps import label_map
from coadapt.explore.curiosity import CuriosityWeights, VisitCounts, analyse, episode_fields
from coadapt.explore.memory import save_memory
from coadapt.explore.propose import Proposal, demo_actions, proposal_reward
from coadapt.explore.screens import normalise
from coadapt.policy.parser import format_action
from coadapt.policy.agent import VLMAgentPolicy
from coadapt.policy.prompt import PolicyInput
from coadapt.rollout import RolloutRunner, RolloutSettings, TaskCard, Trajectory, load_trajectory
from coadapt.rollout.firewall import GuardedDevice
from coadapt.rollout.runner import EpisodeHosts, compact_obs
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
CONSOLIDATE = "consolidate"
"""The `kind` of a round that only imitates verified positives (no rollouts), after the rollout rounds."""
BUDGET_MARGIN = 1.15
"""A round or pass is projected this much longer than measured: on a shared machine 16 of 17
measured passes came within 13 % of their projection, so that variation does not overrun the budget."""

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


def train_samples(traj: Trajectory, advantages: Sequence[float], *, imitate: bool, memory: str = "") -> list[TrainSample]:
    """One training sample per turn: the prompt the model saw (the trajectory's goal), its tokens."""
    return [TrainSample(PolicyInput(s.obs, traj.goal, s.decision.history, memory), s.decision.token_ids,
                        s.decision.logprobs, adv, imitate=imitate) for s, adv in zip(traj.steps, advantages)]


def save_adapter(policy, folder: Path, app: str, memory: str) -> None:
    """The adapter (a plain peft folder) and, when the prompts showed one, the memory beside it."""
    policy.save_adapter(folder)
    save_memory(folder, app, memory)


def demo_samples(agents: VLMAgentPolicy, pool: DevicePool, proposals: Sequence[Proposal], cards: Sequence[TaskCard],
                 settings: RolloutSettings, memory: str = "") -> list[TrainSample]:
    """Imitation samples from the proposals' verified paths, replayed from a fresh reset on a
    guarded phone; each action written the way the policy writes actions."""
    policy = agents.policy
    style = policy.config.prompt.style
    out: list[TrainSample] = []
    with pool.lease() as slot:
        env = AndroidEnv(GuardedDevice(slot.device), label_map(), settle_seconds=settings.settle_seconds)
        for p, card in zip(proposals, cards):
            obs = env.reset(card, seed=card.device_seed)
            history: list[str] = []
            for action in demo_actions(p):
                if isinstance(action, Type) and normalise(action.text) not in normalise(card.goal):
                    break  # text the goal never names: the policy could not type it (nor should learn to)
                target = format_action(action, obs, style)
                out.append(TrainSample(PolicyInput(compact_obs(obs), card.goal, tuple(history), memory),
                                       tuple(policy.target_ids(target)), (), 0.0, imitate=True))
                history.append(target)
                res = env.step(action)
                if res.terminated or res.truncated or res.info.invalid:
                    break
                obs = res.observation
    return out


def anchor_samples(traj: Trajectory, memory: str = "") -> list[TrainSample]:
    """The last turn of an unlabelled claim of infeasibility, as a KL-only anchor (see AdaptConfig.anchor_weight)."""
    last = train_samples(traj, [0.0] * len(traj.steps), imitate=False, memory=memory)[-1:]
    return [dataclasses.replace(s, anchor=True) for s in last]


def preserve_picks(trajs: Sequence[Trajectory], advantages: Sequence[float | None], decisions: Sequence[str],
                   skip: set[int], n: int, seed: int) -> list[tuple[int, str, int]]:
    """Up to `n` turns, drawn at random, of attempts that teach nothing this round (no advantage,
    not a positive, not in `skip`): (episode id, card key, turn), to hold at the reference policy."""
    turns = [(k, i) for k, (t, a, d) in enumerate(zip(trajs, advantages, decisions))
             if a is None and d != ACCEPTED_POSITIVE and not t.infra_error and t.episode_id not in skip
             for i in range(len(t.steps))]
    random.Random(seed).shuffle(turns)
    # in the order of `trajs`, not of episode ids: those depend on which host stored an episode first
    return [(trajs[k].episode_id, trajs[k].card.key, i) for k, i in sorted(turns[:n])]


def preserve_samples(traj: Trajectory, turns: Sequence[int], memory: str = "") -> list[TrainSample]:
    """The given turns of `traj` as KL-only samples (see AdaptConfig.preserve_weight)."""
    steps = train_samples(traj, [0.0] * len(traj.steps), imitate=False, memory=memory)
    return [dataclasses.replace(steps[i], preserve=True) for i in turns if 0 <= i < len(steps)]


def held_samples(picks: Sequence[tuple[int, str, int]], trajectory: Callable[[int, str], Trajectory | None],
                 memory: str = "") -> list[TrainSample]:
    """`preserve_picks`' turns as KL-only samples, fetching each episode's trajectory once
    (`trajectory(episode id, card key)`; None skips it), in the order picked."""
    turns: dict[int, tuple[str, list[int]]] = {}
    for episode_id, key, turn in picks:
        turns.setdefault(episode_id, (key, []))[1].append(turn)
    out: list[TrainSample] = []
    for episode_id, (key, idx) in turns.items():
        traj = trajectory(episode_id, key)
        if traj is not None:
            out += preserve_samples(traj, idx, memory)
    return out


def round_seconds(history: Sequence[dict[str, Any]]) -> float:
    """Projected seconds of the next rollout round: the longer of the rounds' mean and the last
    one (the horizon grows over rounds, and so do they)."""
    seconds = [float(h.get("seconds", 0)) for h in history]
    return max(sum(seconds) / len(seconds), seconds[-1]) if seconds else 0.0


def pass_seconds(history: Sequence[dict[str, Any]], samples: int) -> float:
    """Projected seconds of one update over `samples` samples plus its self-check: the time per
    training sample of the latest round that trained on any, and the latest check."""
    trained = [h for h in history if int(h.get("train_samples", 0) or 0) > 0]
    per_sample = float(trained[-1]["train_seconds"]) / int(trained[-1]["train_samples"]) if trained else 0.0
    return per_sample * samples + float(history[-1].get("check_seconds", 0) if history else 0)


def unlabelled_claim(traj: Trajectory, verdict: Verdict) -> bool:
    """An attempt that declared the task infeasible and that the verifier left without a label."""
    return traj.declared == "infeasible" and verdict.p is None and not traj.infra_error


def positive_samples(store: RunStore, history: Sequence[dict[str, Any]], cards: Sequence[TaskCard],
                     memory: str = "") -> list[TrainSample]:
    """Imitation samples of every verified positive the rounds recorded (accepted attempts, and
    relabelled ones told as the goal they achieved), the rounds' anchors, and the last rollout
    round's preserved turns, rebuilt from the run store."""
    by_key = {c.key: c for c in cards}
    out: list[TrainSample] = []
    last = [h for h in history if h.get("kind") != CONSOLIDATE][-1:]
    out += held_samples(last[0].get("preserve", ()) if last else (),
                        lambda e, k: load_trajectory(store, e, by_key[k]) if k in by_key else None, memory)
    for h in history:
        for episode_id, key, goal in h.get("positives", ()):
            card = by_key.get(key)
            if card is None:
                continue
            traj = load_trajectory(store, episode_id, card.replace(goal=goal))
            out += train_samples(traj, [0.0] * len(traj.steps), imitate=True, memory=memory)
        for episode_id, key in h.get("anchors", ()):
            card = by_key.get(key)
            if card is not None:
                out += anchor_samples(load_trajectory(store, episode_id, card), memory)
    return out


def adapt(agents: VLMAgentPolicy, pool: DevicePool, store: RunStore, train_cards: Sequence[TaskCard],
          check_cards: Sequence[TaskCard], cfg: AdaptConfig, verifier: Verifier, *, out_dir: Path,
          settings: RolloutSettings = RolloutSettings(), progress: ProgressFn | None = None,
          proposals: Sequence[Proposal] = (), proposal_base: TaskCard | None = None,
          spent_s: float = 0.0, hosts: EpisodeHosts | None = None) -> dict[str, Any]:
    """Adapt `agents`' LoRA adapter to the app of `train_cards`; returns the loop's own summary
    (self-verified numbers only). The adapter that was kept last is in out_dir/adapter.

    `proposals` (self-proposed tasks, set up like `proposal_base`) join the suite goals: their
    attempts are rewarded by their expectation on the final screen, not by the verifier.
    `spent_s` is adaptation time already used (the exploration, and the earlier processes of a resumed
    run): it counts against max_minutes.
    With `hosts` the rollouts are played there (the hosts' policy servers get each round's weights)."""
    say = progress or (lambda event, data: None)
    policy = agents.policy
    trainer = LoraTrainer(policy, cfg)
    guarded = dataclasses.replace(settings, guard=True, run_seed=cfg.seed)
    runner = RolloutRunner(pool, agents, store, settings=guarded, adapter="adapter", annotate=episode_fields,
                           hosts=hosts)
    gate_cfg = GateSettings(cfg.gate, cfg.positive_threshold, cfg.negative_threshold)
    adapter_dir = out_dir / "adapter"
    optimizer_file = out_dir / "optimizer.pt"  # beside the adapter, not in it: the adapter folder stays plain peft
    started = time.monotonic()
    app = train_cards[0].app if train_cards else ""
    memory = agents.memory.get(app, "")
    horizon_cap = max((c.max_steps for c in train_cards), default=10)
    every = round(1 / cfg.holdout) if cfg.holdout > 0 else 0
    all_proposed = [p.card(proposal_base, i, min(horizon_cap, max(8, 2 * len(p.actions) + 2)))
                    for i, p in enumerate(proposals)] if proposal_base is not None else []
    expectations = {c.key: p.expect for c, p in zip(all_proposed, proposals)}
    # every `every`-th proposal is held out: the keep-or-roll-back check scores it judge-free
    held = {i for i in range(len(all_proposed)) if every and i % every == every - 1}
    proposed = [c for i, c in enumerate(all_proposed) if i not in held]
    check_proposed = [c for i, c in enumerate(all_proposed) if i in held]
    demos = demo_samples(agents, pool, [p for i, p in enumerate(proposals) if i not in held], proposed, settings,
                         memory) if proposed and cfg.proposal_demos else []
    visits = VisitCounts()
    weights = CuriosityWeights()

    def judge(t: Trajectory) -> Verdict:
        """The verifier; a proposal's own expectation (judge-free) for self-proposed cards."""
        if t.card.key in expectations:
            r = proposal_reward(expectations[t.card.key], t.final_obs or (t.steps[-1].obs if t.steps else None),
                                t.declared)
            return Verdict(r, r, (("expectation", 0, r),), {"expectation": r})
        return verifier(t)

    def check(round: int) -> float:
        """Self-verified success of the current policy on the held-out adapt cards and held-out
        proposals (greedy; the verifier, or a proposal's own expectation)."""
        cards = [*check_cards, *check_proposed]
        if not cards:
            return 0.0
        with greedy(agents):
            res = runner.run(cards, k=1, round=round, phase=CHECK)
        trajs = collect(store, res.trajectories, res.episode_ids, cards, 1)
        ps = [judge(t).p or 0.0 for t in trajs]
        return sum(ps) / len(ps) if ps else 0.0

    def keep_or_roll_back(r: int, snapshot: Any) -> tuple[float, bool, float]:
        """The self-check after round `r`'s update: keep it, or restore `snapshot` (the adapter
        before it). Saves the adapter either way; returns the check, whether it was kept, seconds."""
        nonlocal best
        t0 = time.monotonic()
        say("check", {"round": r, "kind": kind})
        score = check(r + 1)
        kept = score >= best - cfg.rollback_margin
        if kept:
            best = max(best, score)
        else:
            policy.load_adapter_state(snapshot)
            what = f"consolidation pass {len(passes) + 1}" if kind == CONSOLIDATE else f"round {r + 1}"
            log.info("%s made the self-check worse (%.3f < %.3f - %.2f): rolled back", what, score, best,
                     cfg.rollback_margin)
        save_adapter(policy, adapter_dir, app, memory)
        trainer.save_optimizer(optimizer_file)
        return score, kept, round(time.monotonic() - t0, 1)

    def used() -> float:
        """Seconds of the budget spent so far, earlier work (exploration, earlier processes) included."""
        return spent_s + time.monotonic() - started

    def out_of_time(need: float) -> bool:
        """Whether `need` more seconds, projected BUDGET_MARGIN longer, would pass max_minutes."""
        return used() + need * BUDGET_MARGIN > cfg.max_minutes * 60

    # ------------------------------------------------------------------ resume
    done_rounds = [r for r in store.rounds(PHASE) if r.status in ("finished", "rolled_back")]
    history: list[dict[str, Any]] = [json.loads(r.metrics) if isinstance(r.metrics, str) else dict(r.metrics or {})
                                     for r in done_rounds]
    if done_rounds and (adapter_dir / "adapter_config.json").is_file():
        policy.load_adapter_weights(adapter_dir)
        trainer.load_optimizer(optimizer_file)
        counted = [h["visits"] for h in history if "visits" in h]
        visits.counts.update(counted[-1] if counted else {})
        log.info("resuming after round %d of %d", done_rounds[-1].round + 1, cfg.rounds)
    best = history[-1]["best_check"] if history else check(0)
    say("start", {"rounds": cfg.rounds, "done": len(done_rounds), "check": best})
    passes = [h for h in history if h.get("kind") == CONSOLIDATE]
    kind = "rollouts"

    for r in range(len(done_rounds), 0 if passes else cfg.rounds):
        # Checked before each round, not after, so a resumed run whose rounds stopped for the
        # budget does not start another one.
        if history and out_of_time(round_seconds(history)):
            log.info("stopping after round %d of %d: the %.1f-minute budget would run out", r, cfg.rounds,
                     cfg.max_minutes)
            break
        if not history and out_of_time(0.0):  # the first round runs whatever the budget: a run adapts
            log.warning("the %.1f-minute budget was spent before the first round (%.0f s on exploration and "
                        "the first check); running that round anyway, and no other", cfg.max_minutes, used())
        t_round = time.monotonic()
        store.start_round(PHASE, r)
        # ------------------------------------------------------------------ rollouts
        cards = [c.replace(max_steps=cfg.horizon_at(r, c.max_steps)) for c in [*train_cards, *proposed]]
        res = runner.run(cards, k=cfg.group_size, round=r, phase=PHASE,
                         progress=lambda e, d: say("episode" if e == "episode" else "round_start",
                                                   {**d, "round": r}))
        trajs = collect(store, res.trajectories, res.episode_ids, cards, cfg.group_size)

        # ------------------------------------------------------------------ verifier and gate
        # After `trusted_rounds` the verifier's positives on suite goals stop counting (its negatives
        # still do); a proposal's expectation is judge-free and always counts.
        trusted = cfg.trusted(r)
        verdicts: list[Verdict] = []
        decisions: list[str] = []
        for t in trajs:
            v = judge(t)
            verdicts.append(v)
            decisions.append(gate_attempt(v, gate_cfg, infra_error=t.infra_error,
                                          trusted=trusted or t.card.key in expectations))
            store.add_verdicts(t.episode_id, [(judge, i, vote, None) for judge, i, vote in v.votes])
            store.update_episode(t.episode_id, verifier_score=v.p, verifier_detail=json.dumps(
                {"progress": v.progress, "checks": v.checks}))

        # ------------------------------------------------------------------ hindsight relabelling
        relabels: list[tuple[Trajectory, Verdict]] = []
        positives = [(t.episode_id, t.card.key, t.goal) for t, d in zip(trajs, decisions) if d == ACCEPTED_POSITIVE]
        if cfg.relabel and trusted:
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
        samples: list[TrainSample] = list(demos)
        wandering, informative = [], []
        for t, d, a, reward in zip(trajs, decisions, advantages, rewards):
            facts = turn_facts(t)
            cur = analyse(t, weights, visits)
            wandering.append(cur.wandering_rate)
            informative.append(cur.information_rate)
            positive = d == ACCEPTED_POSITIVE
            if a is None and not positive:
                store.update_episode(t.episode_id, gate=d)
                continue
            per_step = step_advantages(a or 0.0, facts, turn_credit=cfg.turn_credit, discount=cfg.credit_discount)
            if cfg.curiosity:
                per_step = [x + cfg.curiosity_weight * c for x, c in zip(per_step, cur.rewards)]
            store.update_episode(t.episode_id, gate=d, advantage=a, reward=reward)
            store.set_step_advantages(t.episode_id, per_step, d)
            samples += train_samples(t, per_step, imitate=positive, memory=memory)
        anchored = [t for t, v in zip(trajs, verdicts) if cfg.anchor_weight > 0 and unlabelled_claim(t, v)]
        for t in anchored:
            samples += anchor_samples(t, memory)
        preserve: list[tuple[int, str, int]] = []
        if cfg.preserve_weight > 0 and cfg.preserve_turns and cfg.update:
            suite = [i for i, t in enumerate(trajs) if t.card.key not in expectations]
            skip = {t.episode_id for t in anchored} | {t.episode_id for t, _ in relabels}
            preserve = preserve_picks([trajs[i] for i in suite], [advantages[i] for i in suite],
                                      [decisions[i] for i in suite], skip, cfg.preserve_turns, cfg.seed * 1000 + r)
            by_id = {t.episode_id: t for t in trajs}
            samples += held_samples(preserve, lambda e, _: by_id[e], memory)
        for t, _ in relabels:  # imitation only: their tokens were sampled for another goal
            samples += train_samples(t, [0.0] * len(t.steps), imitate=True, memory=memory)
            positives.append((t.episode_id, t.card.key.split("~")[0], t.goal))

        # ------------------------------------------------------------------ update
        say("train", {"round": r, "samples": len(samples), "kind": kind})
        snapshot = policy.adapter_state()
        t_train = time.monotonic()
        metrics = trainer.update(samples, seed=cfg.seed * 1000 + r) if cfg.update else {"samples": len(samples)}
        train_seconds = round(time.monotonic() - t_train, 1)

        # ------------------------------------------------------------------ keep or roll back
        score, kept, check_seconds = keep_or_roll_back(r, snapshot)
        summary = {
            "round": r, "kind": kind, "horizon": max(c.max_steps for c in cards),
            "episodes": len(trajs), "infra_errors": res.infra_errors,
            "self_verified_success": sum(1 for v in verdicts if (v.p or 0) >= cfg.positive_threshold) / max(1, len(trajs)),
            **{name: decisions.count(name) for name in (ACCEPTED_POSITIVE, ACCEPTED_NEGATIVE, DROPPED_UNCERTAIN,
                                                         DROPPED_FLAT, DROPPED_INFRA)},
            "relabelled_positive": len(relabels), "trusted": trusted,
            "untrusted_positive": sum(1 for v, d in zip(verdicts, decisions)
                                      if d == DROPPED_UNCERTAIN and (v.p or 0) >= cfg.positive_threshold),
            "mean_progress": sum(v.progress for v in verdicts) / max(1, len(verdicts)),
            "wandering_rate": sum(wandering) / max(1, len(wandering)),
            "information_rate": sum(informative) / max(1, len(informative)),
            "proposed_cards": len(proposed), "check_proposals": len(check_proposed), "demo_samples": len(demos),
            "proposed_solved": sum(1 for t, v in zip(trajs, verdicts) if t.card.key in expectations and (v.p or 0) >= 1)
            / max(1, sum(1 for t in trajs if t.card.key in expectations)),
            "env_steps": sum(len(t.steps) for t in trajs), "check": score, "best_check": best, "kept": kept,
            "seconds": round(time.monotonic() - t_round, 1), "train_seconds": train_seconds,
            "check_seconds": check_seconds, **{f"train_{k}": v for k, v in metrics.items()},
            "positives": positives, "anchored": len(anchored),
            "anchors": [(t.episode_id, t.card.key) for t in anchored],
            "preserved": len(preserve), "preserve": preserve,
        }
        summary["verifier"] = [(t.episode_id, v.p, d) for t, v, d in zip(trajs, verdicts, decisions)]
        summary["visits"] = dict(visits.counts)  # saved with the round, so a resume's novelty counts go on from here
        store.finish_round(PHASE, r, status="finished" if kept else "rolled_back", adapter="adapter",
                           metrics=summary, kept=kept)
        for name in ("self_verified_success", "check", "train_loss", "train_kl", "mean_progress", "wandering_rate"):
            if isinstance(summary.get(name), (int, float)) and math.isfinite(summary[name]):
                store.log_metric(f"adapt/{name}", r, float(summary[name]))
        history.append(summary)
        say("round", summary)

    # ------------------------------------------------------------------ consolidation
    # What the budget has left goes to imitating every verified positive so far (the proposals'
    # replayed paths, accepted attempts, relabelled ones): each pass is one more update judged by
    # the same self-check, and the first pass that makes it worse is rolled back and ends them.
    kind = CONSOLIDATE
    ended = bool(passes) and not passes[-1]["kept"]
    pool: list[TrainSample] = []
    if cfg.update and cfg.consolidate and not ended and len(passes) < cfg.consolidate:
        pool = [*demos, *positive_samples(store, history, [*train_cards, *proposed], memory)]
    while pool and len(passes) < cfg.consolidate:
        if out_of_time(pass_seconds(history, len(pool))):
            log.info("consolidation stops after %d pass(es): the %.1f-minute budget would run out", len(passes),
                     cfg.max_minutes)
            break
        r = len(history)
        t_round = time.monotonic()
        store.start_round(PHASE, r)
        say("train", {"round": r, "samples": len(pool), "kind": kind, "pass": len(passes)})
        snapshot = policy.adapter_state()
        metrics = trainer.update(pool, seed=cfg.seed * 1000 + r)
        train_seconds = round(time.monotonic() - t_round, 1)
        score, kept, check_seconds = keep_or_roll_back(r, snapshot)
        summary = {"round": r, "kind": kind, "pass": len(passes), "samples": len(pool),
                   "held": sum(1 for s in pool if s.preserve or s.anchor), "episodes": 0, "env_steps": 0,
                   "check": score, "best_check": best, "kept": kept, "seconds": round(time.monotonic() - t_round, 1),
                   "train_seconds": train_seconds, "check_seconds": check_seconds,
                   **{f"train_{k}": v for k, v in metrics.items()}}
        store.finish_round(PHASE, r, status="finished" if kept else "rolled_back", adapter="adapter",
                           metrics=summary, kept=kept)
        for name in ("check", "train_loss", "train_kl"):
            if isinstance(summary.get(name), (int, float)) and math.isfinite(summary[name]):
                store.log_metric(f"adapt/{name}", r, float(summary[name]))
        history.append(summary)
        passes.append(summary)
        say("round", summary)
        if not kept:
            break
    if not (adapter_dir / "adapter_config.json").is_file():
        save_adapter(policy, adapter_dir, app, memory)
    return {"rounds": history, "best_check": best, "adapter": str(adapter_dir),
            "wall_clock_s": round(time.monotonic() - started, 1)}
