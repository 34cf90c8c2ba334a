"""The policy's token distribution, shared by generation and re-scoring so the two cannot drift.

At each answer position the model's logits go through, in this order: the constraint masks
(`constraint_processors`, replayed by `constrain`), the temperature, and the nucleus (`top_p`);
`step_logprobs` returns the log-probabilities of that final, renormalised distribution. Sampling
(`RowSampler`, run inside Hugging Face `generate`) draws from it and records the chosen token's
log-prob; `VLMPolicy.score` recomputes it from teacher-forced logits with the same functions.

Greedy decoding (temperature 0) picks the argmax of the masked logits; its log-probs are those of
the masked distribution at temperature 1 (no nucleus), so they stay finite and comparable.

Each batch row draws with its own `torch.Generator`, re-seeded at every position from
(row seed, position): a row's draws do not depend on what else is in the batch or how long the
other rows' answers are, and no process-global random state is touched.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING, Sequence

import torch
from transformers import LogitsProcessor

if TYPE_CHECKING:
    from .constrain import TokenBytes
    from .model import PolicyConfig
    from .prompt import PolicyInput


def constraint_processors(config: "PolicyConfig", table: "TokenBytes", inputs: Sequence["PolicyInput"],
                          prompt_len: int) -> list[LogitsProcessor]:
    """The constraint masks `config` asks for (text style only), for batch rows `inputs`.

    `prompt_len` is where the answer starts in the `input_ids` the processors will be called with.
    Every processor returned only sets disallowed tokens to -inf (`constrain` relies on that).
    """
    from .constrain import CopyConstraint, ElementNameConstraint

    if config.prompt.style != "text":
        return []
    observations = [inp.observation for inp in inputs]
    out: list[LogitsProcessor] = []
    if config.constrain_names:
        out.append(ElementNameConstraint(table, observations, prompt_len, config.prompt.max_label_chars))
    if config.constrain_text:
        out.append(CopyConstraint(table, [inp.goal for inp in inputs], observations, prompt_len))
    return out


def constrain(processors: Sequence[LogitsProcessor], input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """`scores` (batch, vocab) with the tokens the processors disallow after `input_ids` set to -inf.

    The processors run on a detached copy; the result is `scores` masked, so gradients flow to the
    allowed entries when `scores` requires them.
    """
    if not processors:
        return scores
    with torch.no_grad():
        out = scores.detach().clone()
        for p in processors:
            out = p(input_ids, out)
        blocked = torch.isneginf(out)
    return scores.masked_fill(blocked, float("-inf"))


def step_logprobs(scores: torch.Tensor, temperature: float, top_p: float, keep: torch.Tensor | None = None
                  ) -> torch.Tensor:
    """Log-probabilities (float32, same shape as `scores`: (..., vocab)) of the distribution tokens are drawn from.

    `scores` are constrained logits. With temperature > 0 they are divided by it; then, when
    top_p < 1, only the nucleus survives (the most likely tokens, in order, while the mass of the
    tokens before each is below top_p; the top token always) and the rest is renormalised.
    Temperature 0 (greedy) gives the distribution at temperature 1, without a nucleus.

    `keep` (..., token ids) marks tokens kept even outside the nucleus: re-scoring passes the
    recorded tokens, because logits recomputed in another batch differ in the last bits and a
    token at the nucleus edge could otherwise drop out and get log-prob -inf. When it was inside
    at sampling time (always, up to such rounding) the log-prob is unchanged.
    """
    greedy = temperature <= 0
    logp = torch.log_softmax(scores.float() / (1.0 if greedy else temperature), dim=-1)
    if greedy or top_p >= 1:
        return logp
    with torch.no_grad():
        probs = logp.detach().exp()
        sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)
        inside_sorted = (sorted_p.cumsum(dim=-1) - sorted_p) < top_p
        inside_sorted[..., 0] = True
        inside = torch.zeros_like(inside_sorted).scatter(-1, order, inside_sorted)
        if keep is not None:
            inside.scatter_(-1, keep.unsqueeze(-1), True)
    return torch.log_softmax(logp.masked_fill(~inside, float("-inf")), dim=-1)


def fresh_seeds(n: int) -> list[int]:
    """`n` nondeterministic row seeds (from the OS), for callers that give none."""
    return [secrets.randbits(63) for _ in range(n)]


def position_seed(seed: int, position: int) -> int:
    """The generator seed for answer token `position` (0-based) of a row seeded `seed`."""
    digest = hashlib.blake2b(f"{int(seed)}/{int(position)}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1  # 63 bits: manual_seed takes a signed 64-bit range


class RowSampler(LogitsProcessor):
    """The last (and only) logits processor of a policy `generate` call: picks each row's token.

    Hugging Face runs greedy decoding around it; it masks the raw scores with `processors`, draws
    the token from `step_logprobs` (or takes the argmax when greedy) and returns scores that are
    -inf everywhere but the chosen token, which greedy argmax then picks. `logprobs[b]` and
    `tokens[b]` record, per step, row b's chosen token and its log-prob (rows that already ended
    keep being recorded; the caller cuts at the end token). `prompt_len` is the prompt's length
    in the `input_ids` generate passes; `seeds[b]` row b's seed (ignored when greedy).
    """

    def __init__(self, processors: Sequence[LogitsProcessor], temperature: float, top_p: float,
                 seeds: Sequence[int], prompt_len: int):
        self.processors = list(processors)
        self.temperature = temperature
        self.top_p = top_p
        self.seeds = [int(s) for s in seeds]
        self.prompt_len = prompt_len
        self.generator = torch.Generator(device="cpu")
        self.logprobs: list[list[float]] = [[] for _ in self.seeds]
        self.tokens: list[list[int]] = [[] for _ in self.seeds]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        masked = constrain(self.processors, input_ids, scores)
        logp = step_logprobs(masked, self.temperature, self.top_p)
        if self.temperature <= 0:
            chosen = masked.argmax(dim=-1)
        else:
            chosen = self._draw(logp, position=input_ids.shape[1] - self.prompt_len)
        picked = logp.gather(-1, chosen.unsqueeze(-1)).squeeze(-1)
        for row, (token, lp) in enumerate(zip(chosen.tolist(), picked.tolist())):
            self.tokens[row].append(token)
            self.logprobs[row].append(lp)
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(-1, chosen.unsqueeze(-1), 0.0)
        return out

    def _draw(self, logp: torch.Tensor, position: int) -> torch.Tensor:
        """Inverse-CDF draws, one uniform per row from its (seed, position) generator; the CDF runs
        in vocabulary order, so a near-tie between two tokens' ranks cannot change the pick."""
        uniforms = []
        for seed in self.seeds:
            self.generator.manual_seed(position_seed(seed, position))
            uniforms.append(torch.rand((), generator=self.generator, dtype=torch.float64))
        u = torch.stack(uniforms).to(logp.device)
        probs = logp.double().exp()
        cdf = probs.cumsum(dim=-1)
        chosen = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(-1), right=True).squeeze(-1)
        # u * total rounds to total once in ~2^53 draws: fall back to the last token with mass.
        last = probs.shape[-1] - 1 - (probs > 0).flip(-1).int().argmax(dim=-1)
        return torch.minimum(chosen, last)
