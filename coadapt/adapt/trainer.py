"""The LoRA update: a clipped importance-ratio objective over action tokens, KL to the reference
(the adapter switched off), and self-imitation on accepted positives."""

from __future__ import annotations

import random
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from coadapt.policy.model import LoraSettings, VLMPolicy
from coadapt.policy.prompt import PolicyInput
from coadapt.rollout.runner import fresh_pixels

from .config import AdaptConfig


@dataclass(frozen=True, eq=False)
class TrainSample:
    """One decision to learn from: the prompt input, the sampled tokens and how they were sampled."""

    inp: PolicyInput
    token_ids: tuple[int, ...]
    behaviour: tuple[float, ...]
    """Behaviour log-prob per token, recorded at sampling time."""
    advantage: float
    """Policy-gradient weight of this turn (0: imitation only)."""
    imitate: bool = False
    """An accepted positive: also trained on with the supervised term."""
    anchor: bool = False
    """An unlabelled turn held where the reference policy has it: only a KL term, weighted by
    cfg.anchor_weight (see AdaptConfig.anchor_weight)."""
    preserve: bool = False
    """A turn that taught nothing, held where the reference policy has it: only a KL term, weighted
    by cfg.preserve_weight (see AdaptConfig.preserve_weight)."""


WINDOW = 8
"""Batches drawn together from one shuffled window of WINDOW × batch_size samples are cut from it
sorted by length, so a batch pads its rows to a similar width."""


def length_batches(lengths: Sequence[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """One epoch's batches of sample indices: shuffled, then within each window of WINDOW batches
    sorted by length and cut, the batches themselves in random order. Every index appears once."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    span = batch_size * WINDOW
    batches = []
    for start in range(0, len(order), span):
        window = sorted(order[start : start + span], key=lambda i: lengths[i])
        batches += [window[b : b + batch_size] for b in range(0, len(window), batch_size)]
    rng.shuffle(batches)
    return batches


class LoraTrainer:
    """Owns the adapter and its optimizer; `update` runs the round's epochs."""

    def __init__(self, policy: VLMPolicy, cfg: AdaptConfig):
        self.policy = policy
        self.cfg = cfg
        if not policy.has_adapter:
            # LoRA's A matrices start random: drawn from a generator seeded by the config, not from
            # whatever the process did before, so the same config adapts the same way in any process.
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(cfg.seed)
                policy.add_adapter(LoraSettings(r=cfg.lora_r, alpha=cfg.lora_alpha))
        self.params = policy.trainable_parameters()
        self.opt = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=0.0)
        # The reference (adapter off) never changes: a sample's log-probs under it are computed once,
        # and kept while the sample lives (a consolidation pool is trained on pass after pass).
        self._refs: weakref.WeakKeyDictionary[TrainSample, torch.Tensor] = weakref.WeakKeyDictionary()

    def save_optimizer(self, path: Path) -> None:
        """Keep the optimizer's state (AdamW's moments carry from round to round), written atomically,
        so a resumed run's next update is the one the unkilled run would have made."""
        tmp = path.with_suffix(path.suffix + ".tmp")
        torch.save(self.opt.state_dict(), tmp)
        tmp.replace(path)

    def load_optimizer(self, path: Path) -> bool:
        """Restore `save_optimizer`'s state when the file exists; whether it did."""
        if not path.is_file():
            return False
        self.opt.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        return True

    def update(self, samples: Sequence[TrainSample], seed: int = 0) -> dict[str, Any]:
        """Train on `samples` for cfg.epochs; returns loss, KL, clipped share and counts."""
        cfg, policy = self.cfg, self.policy
        samples = [s for s in samples if s.token_ids and policy.scorable(s.token_ids)]
        if not samples:
            return {"samples": 0, "optimizer_steps": 0}
        # Each prompt is processed once (a fresh decode of its screenshot, dropped after use).
        parts = [policy.prepare(PolicyInput(fresh_pixels(s.inp.observation), s.inp.goal, s.inp.history, s.inp.memory), s.token_ids)
                 for s in samples]
        refs = self._reference(samples, parts)
        rng = random.Random(seed)
        totals = {"loss": 0.0, "kl": 0.0, "clipped": 0.0, "pg": 0.0, "sft": 0.0, "anchor": 0.0, "preserve": 0.0}
        steps = 0
        lengths = [p["input_ids"].shape[1] + len(p["answer_ids"]) for p in parts]
        for _ in range(cfg.epochs):
            for idx in length_batches(lengths, cfg.batch_size, rng):
                batch = [samples[i] for i in idx]
                with policy.lock:
                    policy.model.train()
                    logp, mask = policy.score_batch(policy.collate([parts[i] for i in idx]), [s.inp for s in batch])
                    loss, stats = self._loss(batch, [refs[i] for i in idx], logp, mask)
                    self.opt.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(self.params, 1.0)
                    self.opt.step()
                    policy.model.eval()
                steps += 1
                for k, v in stats.items():
                    totals[k] += v
        return {"samples": len(samples), "optimizer_steps": steps,
                **{k: round(v / max(1, steps), 5) for k, v in totals.items()}}

    @torch.no_grad()
    def _reference(self, samples: Sequence[TrainSample], parts: Sequence[dict]) -> list[torch.Tensor]:
        """Log-probs of the sampled tokens under the reference policy (adapter off); those of a
        sample an earlier update scored are reused."""
        todo = [i for i, s in enumerate(samples) if s not in self._refs]
        with self.policy.adapter_disabled():
            for start in range(0, len(todo), self.cfg.batch_size):
                idx = todo[start : start + self.cfg.batch_size]
                logp, mask = self.policy.score_batch(self.policy.collate([parts[i] for i in idx]),
                                                     [samples[i].inp for i in idx])
                for i, row, m in zip(idx, logp, mask):
                    self._refs[samples[i]] = row[m.bool()].detach()
        return [self._refs[s] for s in samples]

    def _loss(self, batch: Sequence[TrainSample], refs: Sequence[torch.Tensor], logp: torch.Tensor,
              mask: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
        cfg = self.cfg
        pg_terms, kl_terms, sft_terms, anchor_terms, preserve_terms = [], [], [], [], []
        clipped = 0.0
        for row, s in enumerate(batch):
            m = mask[row].bool()
            new = logp[row][m]
            finite = torch.isfinite(new)
            if not bool(finite.all()):
                # a token the constrained decoder could never emit (e.g. typed text found neither in
                # the goal nor on the screen): it cannot be learnt, and would make the loss infinite
                new = new[finite]
                if new.numel() == 0:
                    continue
            old = torch.tensor(s.behaviour[: len(new)], dtype=new.dtype)
            if len(old) != len(new) or not bool(finite.all()):  # no usable behaviour record: on-policy
                old = new.detach()
            ref = refs[row][: len(finite)][finite] if not bool(finite.all()) else refs[row][: len(new)]
            ref = torch.where(torch.isfinite(ref), ref, new.detach())
            diff = ref - new
            kl_row = (torch.exp(diff) - diff - 1).mean()  # k3 estimator of KL(new || ref)
            if s.anchor or s.preserve:  # held at the reference, no policy-gradient or supervised term
                (anchor_terms if s.anchor else preserve_terms).append(kl_row)
                continue
            kl_terms.append(kl_row)
            ratio = torch.exp(new - old)
            a = torch.full_like(new, s.advantage)
            surrogate = torch.minimum(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)
            pg_terms.append(-surrogate.mean())
            clipped += float(((ratio - 1).abs() > cfg.clip).float().mean())
            if s.imitate and cfg.self_imitation > 0:
                sft_terms.append(-new.mean())
        if not pg_terms and not anchor_terms and not preserve_terms:  # nothing learnable in this batch
            zero = logp.sum() * 0.0
            return zero, {"loss": 0.0, "pg": 0.0, "kl": 0.0, "sft": 0.0, "anchor": 0.0, "preserve": 0.0,
                          "clipped": 0.0}
        pg = torch.stack(pg_terms).mean() if pg_terms else torch.zeros(())
        kl = torch.stack(kl_terms).mean() if kl_terms else torch.zeros(())
        sft = torch.stack(sft_terms).mean() if sft_terms else torch.zeros(())
        anchor = torch.stack(anchor_terms).mean() if anchor_terms else torch.zeros(())
        preserve = torch.stack(preserve_terms).mean() if preserve_terms else torch.zeros(())
        loss = (pg + cfg.kl_weight * kl + cfg.self_imitation * sft + cfg.anchor_weight * anchor
                + cfg.preserve_weight * preserve)
        return loss, {"loss": loss.item(), "pg": pg.item(), "kl": kl.item(), "sft": sft.item(),
                      "anchor": anchor.item(), "preserve": preserve.item(), "clipped": clipped / len(batch)}
