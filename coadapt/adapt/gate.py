"""The gate: which attempts are learned from. Confident positives and confident negatives only."""

from __future__ import annotations

from dataclasses import dataclass

from coadapt.runs import GATES

from .verifier import Verdict

# The run store's vocabulary of gate decisions, named.
ACCEPTED_POSITIVE, ACCEPTED_NEGATIVE, DROPPED_UNCERTAIN, DROPPED_INFRA, DROPPED_FLAT = GATES


@dataclass(frozen=True)
class GateSettings:
    """Thresholds of the gate (from AdaptConfig)."""

    enabled: bool = True
    positive: float = 0.95
    negative: float = 0.25


def gate_attempt(verdict: Verdict | None, settings: GateSettings, *, infra_error: bool = False,
                 trusted: bool = True) -> str:
    """The gate decision of one attempt. With the gate off every judged attempt is accepted,
    labelled by which side of 0.5 its p falls (the no-gate ablation). An untrusted attempt's
    confident positive is "no label" (see AdaptConfig.trusted_rounds)."""
    if infra_error or verdict is None:
        return DROPPED_INFRA
    if verdict.p is None:
        return DROPPED_UNCERTAIN
    if not settings.enabled:
        return ACCEPTED_POSITIVE if verdict.p >= 0.5 else ACCEPTED_NEGATIVE
    if verdict.p >= settings.positive:
        return ACCEPTED_POSITIVE if trusted else DROPPED_UNCERTAIN
    if verdict.p <= settings.negative:
        return ACCEPTED_NEGATIVE
    return DROPPED_UNCERTAIN


def outcome(decision: str, verdict: Verdict, settings: GateSettings) -> float:
    """The outcome reward the gate lets through: 1 / 0 for confident verdicts, the raw p without the gate."""
    if not settings.enabled:
        return float(verdict.p or 0.0)
    return 1.0 if decision == ACCEPTED_POSITIVE else 0.0


def accepted(decision: str) -> bool:
    return decision in (ACCEPTED_POSITIVE, ACCEPTED_NEGATIVE)
