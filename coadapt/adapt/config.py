"""AdaptConfig: every knob of `coadapt adapt`, with units and the fix when a value is wrong."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from coadapt.android_env.errors import ConfigError

OBJECTIVES = ("grpo", "rloo", "reinforce_pp", "sft")


@dataclass(frozen=True)
class AdaptConfig:
    """Verifier-gated LoRA adaptation to one app (see coadapt/adapt/loop.py)."""

    rounds: int = 3
    """Rounds of (rollouts -> verifier -> gate -> update -> keep or roll back)."""
    instances_per_template: int = 1
    """Task instances per app template, drawn in the *adapt* seed space (never the eval one)."""
    group_size: int = 4
    """K: sampled attempts per task card in a round (one GRPO group)."""
    temperature: float = 1.0
    """Sampling temperature of the attempts (0 would make every attempt of a group identical)."""
    horizon: tuple[int, ...] = (8, 12, 0)
    """Step limit per round (ScalingInter): round r uses horizon[min(r, len-1)], capped by the task's
    own limit; 0 means the task's own limit."""
    holdout: float = 0.25
    """Share of the self-proposed tasks held out of training for the keep-or-roll-back check."""
    rollback_margin: float = 0.05
    """A round is rolled back only when the self-check falls more than this below its best (the
    check is noisy: a handful of greedy attempts)."""
    objective: Literal["grpo", "rloo", "reinforce_pp", "sft"] = "grpo"
    """Advantage estimator: GRPO (group-normalised), RLOO (leave-one-out), REINFORCE++ (batch-normalised),
    or sft (filtered self-imitation on accepted positives only)."""
    gate: bool = True
    """Learn only from confident verdicts (off: every finished attempt counts with its raw score)."""
    positive_threshold: float = 0.95
    """p(success) at or above this is a confident positive. 0.95: with each seen app held out of the
    judge's fit in turn, no held-out failure reached it (0 of 947; precision 1.00, recall 0.09). At
    0.85 precision there is 0.92 where 39 % of attempts succeed, but its false-positive rate (1.3 %)
    makes it 0.48 where 5 % do, as on an app the policy never saw (`coadapt verifier train` reports
    both)."""
    negative_threshold: float = 0.25
    """p(success) at or below this is a confident negative; between the two, no label."""
    trusted_rounds: int = 0
    """Rollout rounds whose suite-goal attempts the verifier may turn into positives (accepted or
    relabelled); later rounds' confident positives become "no label", their negatives still count.
    The judge's precision is measured on the unadapted policy's attempts only: an adapted policy
    drifts to where it was never measured (0: every round)."""
    judge_infeasible: bool = True
    """Let the judges score attempts that end by declaring the task infeasible. Off: such an attempt
    gets no label (never a positive, never a negative). Its screens cannot show that a task is
    impossible, and on seen apps the judge would accept such a claim on nearly any attempt; but
    adapting two seen apps without the labels erased the policy's right claims and cost more success
    than it saved (docs/adapt.md, "Infeasible claims"), so the judges score them by default."""
    anchor_weight: float = 0.0
    """With judge_infeasible off: weight of a KL-to-reference term on the last turn of attempts left
    without a label because they declared the task infeasible, so imitating paths that all end in
    `done` does not wear the claim away (0: off; on two seen apps it held some claims and did not
    hold success, docs/adapt.md)."""
    preserve_weight: float = 1.0
    """Weight of a KL-to-reference term on the policy's own turns at suite goals that taught nothing
    this round (no label, a flat group): learning without forgetting. Imitating an app's proposal
    paths alone takes a seen app's success from 0.32 to 0.09; holding these turns keeps it near 0.28
    while the paths are learnt as well (docs/adapt.md, "Preserving what was not taught"; 0: off)."""
    preserve_turns: int = 96
    """At most this many such turns per round (drawn at random; the consolidation passes reuse the
    last round's)."""
    turn_credit: bool = True
    """Reverse-turn credit: each turn's advantage is weighted by what followed it; turns that changed
    nothing get no positive credit."""
    credit_discount: float = 0.9
    """Per-turn discount of the reverse walk (1.0: every effective turn gets the episode's advantage)."""
    progress_weight: float = 0.3
    """Weight of the verifier's progress score (goal entities entered or shown) in an attempt's reward."""
    relabel: bool = True
    """Hindsight relabelling: an attempt that visibly achieved a sibling goal becomes a positive for it."""
    self_imitation: float = 1.0
    """Weight of the supervised term on accepted positives (0 turns it off)."""
    lora_r: int = 16
    """LoRA rank."""
    lora_alpha: int = 32
    """LoRA scale numerator (update x alpha / r)."""
    lr: float = 2e-3
    """Adapter learning rate (AdamW)."""
    epochs: int = 2
    """Passes over a round's accepted steps."""
    batch_size: int = 16
    """Steps per optimizer step."""
    clip: float = 0.2
    """PPO-style ratio clip epsilon."""
    kl_weight: float = 0.02
    """Weight of the KL to the reference policy (the adapter switched off)."""
    max_minutes: float = 15.0
    """Wall-clock budget of the adaptation (rounds stop when it runs out; evaluation excluded)."""
    eval_instances: int = 10
    """Eval-space instances per template for the before/after ground-truth report (never adapted on)."""
    grounding_instances: int = 2
    """Eval instances per template (the first of the `eval_instances`) on which the report measures
    teacher-forced step accuracy along the oracle's path, base and adapted (0: not measured)."""
    judge_weights: str = ""
    """Feature-judge weights written by `coadapt verifier train --out FILE` ("": the packaged ones)."""
    judge_votes: int = 4
    """Samples of a VLM judge per verdict (model judges only; the bundled setup uses the feature judge).
    0: no VLM judge, the feature judge alone, e.g. for a small model that cannot answer the question."""
    seed: int = 0
    """Seed of the run: instance choice, sampling, batch order."""
    explore_steps: int = 200
    """Actions per exploration of the app before the rounds (0: no exploration)."""
    explore_runs: int = 4
    """Explorations from a fresh reset, each with its own seed (their proposals are merged)."""
    proposals: int = 24
    """Self-proposed tasks added to the adapt cards (0: suite goals only)."""
    proposal_demos: bool = True
    """Imitate each proposal's verified path (a positive by construction) in every round."""
    curiosity: bool = True
    """Add the curiosity terms (novelty, information gain, hindsight) to accepted attempts' turns."""
    curiosity_weight: float = 0.5
    """Weight of a turn's curiosity reward next to its advantage."""
    consolidate: int = 8
    """After the rounds, at most this many consolidation passes while the time budget lasts: imitation
    of every verified positive so far (the proposals' paths, accepted and relabelled attempts), each
    pass kept or rolled back by the same self-check; the first rollback ends them (0: off)."""
    update: bool = True
    """Update the adapter each round; False keeps rollouts, verdicts and memory but never changes
    a weight (memory-only adaptation, an ablation)."""
    memory: bool = False
    """Show the exploration memory in the policy's prompt. Off by default: the bundled model was not
    pretrained to read it (see docs/explore.md)."""

    def __post_init__(self) -> None:
        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ConfigError(f"adapt.{msg}")

        need(self.explore_steps >= 0, f"explore_steps must be >= 0, got {self.explore_steps}")
        need(self.explore_runs >= 1, f"explore_runs must be >= 1, got {self.explore_runs}")
        need(self.proposals >= 0, f"proposals must be >= 0, got {self.proposals}")
        need(self.consolidate >= 0, f"consolidate must be >= 0, got {self.consolidate}")
        need(self.trusted_rounds >= 0, f"trusted_rounds must be >= 0 (0: every round), got {self.trusted_rounds}")
        need(self.seed >= 0, f"seed must be >= 0, got {self.seed}")
        need(self.rounds >= 1, f"rounds must be >= 1, got {self.rounds}")
        need(self.instances_per_template >= 1, f"instances_per_template must be >= 1, got {self.instances_per_template}")
        need(self.group_size >= 2, f"group_size must be >= 2 (a group compares attempts), got {self.group_size}")
        need(self.temperature > 0, f"temperature must be > 0 (sampled attempts), got {self.temperature}")
        need(bool(self.horizon) and all(h >= 0 for h in self.horizon), f"horizon must list step limits >= 0 (0: the task's own), got {self.horizon}")
        need(0 <= self.holdout < 1, f"holdout must be in [0, 1), got {self.holdout}")
        need(self.objective in OBJECTIVES, f"objective must be one of {', '.join(OBJECTIVES)}, got {self.objective!r}")
        need(0 <= self.negative_threshold < self.positive_threshold <= 1,
             f"need 0 <= negative_threshold < positive_threshold <= 1, got {self.negative_threshold}, {self.positive_threshold}")
        need(0 < self.credit_discount <= 1, f"credit_discount must be in (0, 1], got {self.credit_discount}")
        need(self.progress_weight >= 0, f"progress_weight must be >= 0, got {self.progress_weight}")
        need(self.self_imitation >= 0, f"self_imitation must be >= 0, got {self.self_imitation}")
        need(self.lora_r >= 1, f"lora_r must be >= 1, got {self.lora_r}")
        need(self.lora_alpha > 0, f"lora_alpha must be > 0, got {self.lora_alpha}")
        need(self.lr > 0, f"lr must be > 0, got {self.lr}")
        need(self.epochs >= 1, f"epochs must be >= 1, got {self.epochs}")
        need(self.batch_size >= 1, f"batch_size must be >= 1, got {self.batch_size}")
        need(0 < self.clip < 1, f"clip must be in (0, 1), got {self.clip}")
        need(self.kl_weight >= 0, f"kl_weight must be >= 0, got {self.kl_weight}")
        need(self.preserve_weight >= 0, f"preserve_weight must be >= 0, got {self.preserve_weight}")
        need(self.preserve_turns >= 0, f"preserve_turns must be >= 0, got {self.preserve_turns}")
        need(self.anchor_weight >= 0, f"anchor_weight must be >= 0, got {self.anchor_weight}")
        need(self.max_minutes > 0, f"max_minutes must be > 0, got {self.max_minutes}")
        need(self.eval_instances >= 1, f"eval_instances must be >= 1, got {self.eval_instances}")
        need(self.grounding_instances >= 0, f"grounding_instances must be >= 0, got {self.grounding_instances}")
        need(self.judge_votes >= 0, f"judge_votes must be >= 0 (0: no VLM judge), got {self.judge_votes}")

    def horizon_at(self, round: int, task_limit: int) -> int:
        """The step limit of a task in `round` (the task's own limit caps it)."""
        h = self.horizon[min(round, len(self.horizon) - 1)]
        return task_limit if h == 0 else min(h, task_limit)

    def trusted(self, round: int) -> bool:
        """Whether the verifier's positives count in rollout round `round` (see trusted_rounds)."""
        return self.trusted_rounds == 0 or round < self.trusted_rounds
