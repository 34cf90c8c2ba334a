"""Constrained decoding for text-style answers: quoted names are on the screen, quoted text is copied.

In `tap "Save"`, `long_press "…"`, `swipe left "…"`, `scroll down "…"` and `type "…" into "…"`
(the second quote), the quoted text names an element. While the model writes such a name, only
tokens that keep it a prefix of some element's name (as `format_action` would quote it: JSON
escapes, the prompt's cut at `max_label_chars` allowed too) followed by the closing quote are
allowed; the model's own scores choose among them. Everything else (verbs, typed text, answers)
is left free. A near miss ("Sav" for "Save") becomes the nearest name the model prefers instead
of an invalid action.

`CopyConstraint` does the same for free text: what `type "…"` types and what `done "…"`
answers must be a piece of the goal or of a name on the screen, or a number (counts, sums).
A small model that has learnt to copy still sometimes writes a string it remembers from
training instead; under this constraint it can only copy.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

import torch
from transformers import LogitsProcessor

from coadapt.android_env.observation import Observation

from .elements import element_names

_OPENERS = re.compile(rb'(?:^\s*(?:tap|long_press)|^\s*(?:swipe|scroll) (?:left|right|up|down)|" into) "$')
_QUOTE = re.compile(rb'(?<!\\)"')
_TEXT_OPENERS = re.compile(rb'\A\s*(?:type|done) "\Z')
_NUMBER = re.compile(rb'[0-9.,:+\-$%]*\Z')  # digits, separators, sign, $ and %


def _byte_decoder() -> dict[str, int]:
    """GPT-2 byte-level BPE's printable-character -> byte table (what Qwen2 tokens are written in)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class TokenBytes:
    """Each token id's bytes (byte-level BPE tokenizers), and a bytes -> ids index."""

    def __init__(self, tokenizer):
        dec = _byte_decoder()
        self.by_id: dict[int, bytes] = {}
        self.ids_of: dict[bytes, list[int]] = {}
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        for token, tid in tokenizer.get_vocab().items():
            if tid in special or not token or any(ch not in dec for ch in token):
                continue
            b = bytes(dec[ch] for ch in token)
            self.by_id[tid] = b
            self.ids_of.setdefault(b, []).append(tid)
        self.max_len = max((len(b) for b in self.ids_of), default=1)


def screen_names(obs: Observation, max_chars: int | None = None) -> list[bytes]:
    """Every element name as it would sit between the quotes (JSON-escaped), then the closing quote."""
    out: set[bytes] = set()
    for e in obs.elements:
        for name in element_names(e):
            for n in (name, name[:max_chars] if max_chars else name):
                if n.strip():
                    out.add(json.dumps(n, ensure_ascii=False)[1:].encode("utf-8"))
    return sorted(out)


def open_name(text: bytes) -> bytes | None:
    """The partial element name being written at the end of `text` (after the opening quote of
    a name position, with no closing quote yet), or None when the answer is not inside a name."""
    quotes = [m.start() for m in _QUOTE.finditer(text)]
    if not quotes:
        return None
    k = quotes[-1]
    if _OPENERS.search(text[: k + 1]):
        return text[k + 1 :]
    return None


class _QuotedConstraint(LogitsProcessor):
    """Masks, in each batch row, every token `allowed` does not list while the answer is inside
    a quoted span that `partial` recognises; `table` holds the tokenizer's token bytes and
    `prompt_len` the prompt's token count (the generated part starts there)."""

    table: TokenBytes
    prompt_len: int

    def partial(self, text: bytes) -> bytes | None:
        raise NotImplementedError

    def allowed(self, row: int, partial: bytes) -> list[int]:
        raise NotImplementedError

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        for row in range(input_ids.shape[0]):
            generated = input_ids[row, self.prompt_len :].tolist()
            partial = self.partial(b"".join(self.table.by_id.get(t, b"") for t in generated))
            if partial is None:
                continue
            allowed = self.allowed(row, partial)
            if not allowed:  # nothing fits: leave the model free (the parser will say why)
                continue
            keep = scores[row, allowed].clone()
            scores[row, :] = float("-inf")
            scores[row, allowed] = keep
        return scores


class ElementNameConstraint(_QuotedConstraint):
    """Masks tokens that would make a quoted element name no name on the screen.

    `observations[b]` is the screen of batch row b; `prompt_len` the prompt's token count (the
    generated part starts there); `table` holds the tokenizer's token bytes (build it once).
    """

    def __init__(self, table: TokenBytes, observations: Sequence[Observation], prompt_len: int,
                 max_chars: int | None = None):
        self.table = table
        self.names = [screen_names(o, max_chars) for o in observations]
        self.prompt_len = prompt_len

    def allowed(self, row: int, partial: bytes) -> list[int]:
        ids: set[int] = set()
        for name in self.names[row]:
            if not name.startswith(partial):
                continue
            rest = name[len(partial) :]
            for j in range(1, min(len(rest), self.table.max_len) + 1):
                ids.update(self.table.ids_of.get(rest[:j], ()))
        return sorted(ids)

    def partial(self, text: bytes) -> bytes | None:
        return open_name(text)


def open_text(text: bytes) -> bytes | None:
    """The partial free text being written at the end of `text` (typed text right after `type "`,
    or an answer after `done "`, with no closing quote yet), or None elsewhere."""
    quotes = [m.start() for m in _QUOTE.finditer(text)]
    if len(quotes) != 1:
        return None
    k = quotes[0]
    return text[k + 1 :] if _TEXT_OPENERS.search(text[: k + 1]) else None


def copy_sources(goal: str, obs: Observation) -> list[bytes]:
    """The texts free text may be copied from, JSON-escaped as they sit between quotes."""
    texts = {goal, *(n for e in obs.elements for n in element_names(e))}
    return sorted(json.dumps(t, ensure_ascii=False)[1:-1].encode("utf-8") for t in texts if t.strip())


class CopyConstraint(_QuotedConstraint):
    """Masks tokens that would make typed text or an answer no piece of the goal or of a screen
    name (numbers stay free). `goals[b]` and `observations[b]` are batch row b's; the rest as in
    `ElementNameConstraint`."""

    def __init__(self, table: TokenBytes, goals: Sequence[str], observations: Sequence[Observation], prompt_len: int):
        self.table = table
        self.sources = [copy_sources(g, o) for g, o in zip(goals, observations)]
        self.prompt_len = prompt_len
        self.numeric = sorted({t for b, ids in table.ids_of.items() if _NUMBER.match(b) for t in ids})
        self.numeric_closing = sorted({t for b, ids in table.ids_of.items()
                                       if b.endswith(b'"') and _NUMBER.match(b[:-1]) for t in ids})

    def allowed(self, row: int, partial: bytes) -> list[int]:
        ids: set[int] = set()
        ids_of = self.table.ids_of
        for source in self.sources[row]:
            at = source.find(partial)
            while at >= 0:
                rest = source[at + len(partial) :]
                for j in range(0, min(len(rest), self.table.max_len) + 1):
                    if j:
                        ids.update(ids_of.get(rest[:j], ()))
                    if partial or j:
                        ids.update(ids_of.get(rest[:j] + b'"', ()))
                at = source.find(partial, at + 1)
        if _NUMBER.match(partial):
            ids.update(self.numeric)
            if partial:
                ids.update(self.numeric_closing)
        return sorted(ids)

    def partial(self, text: bytes) -> bytes | None:
        return open_text(text)
