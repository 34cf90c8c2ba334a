"""Constrained decoding of element names: only names on the screen can be written between quotes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from coadapt.android_env.actions import OpenApp, Tap  # noqa: E402
from coadapt.android_env.env import AndroidEnv  # noqa: E402
from coadapt.android_env.sim import SimDevice  # noqa: E402
from coadapt.apps import label_map, make_apps  # noqa: E402
from coadapt.policy.constrain import (  # noqa: E402
    CopyConstraint, ElementNameConstraint, TokenBytes, open_name, open_text, screen_names,
)
from coadapt.policy.tiny import build_tokenizer  # noqa: E402


class _Home:
    goal = "open notes"
    max_steps = 5

    def setup(self, device) -> None:
        pass


@pytest.fixture(scope="module")
def editor():
    env = AndroidEnv(SimDevice(make_apps(["com.example.notes"])), label_map())
    env.reset(_Home())
    notes = env.step(OpenApp("Notes")).observation
    fab = next(i for i, e in enumerate(notes.elements) if e.label == "New note")
    return env.step(Tap(index=fab)).observation


@pytest.fixture(scope="module")
def tokenizer(editor):
    corpus = ['tap "Save"', 'type "milk" into "Title"', "Navigate up", "Label", "Pinned", "Note"]
    corpus += [e.label for e in editor.elements if e.label]
    return build_tokenizer(corpus, vocab_size=400)


@pytest.mark.parametrize("text, partial", [
    ('tap "', b""), ('tap "Sa', b"Sa"), ('long_press "No', b"No"), ('swipe left "A', b"A"), ('scroll down "', b""),
    ('type "milk" into "Ti', b"Ti"), ('type "mi', None), ('tap "Save"', None), ('done "4', None), ("back", None),
    ('open_app "No', None),
])
def test_open_name_finds_name_positions_only(text: str, partial: bytes | None) -> None:
    assert open_name(text.encode()) == partial


def test_only_tokens_continuing_a_screen_name_survive(editor, tokenizer) -> None:
    table = TokenBytes(tokenizer)
    names = screen_names(editor)
    assert b'Save"' in names and b'Title"' in names
    prompt = tokenizer("<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
    answer = tokenizer('tap "Sa', add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + answer])
    scores = torch.zeros(1, len(tokenizer))
    out = ElementNameConstraint(table, [editor], len(prompt))(ids, scores.clone())
    kept = [tokenizer.decode([i]) for i in torch.nonzero(out[0] > float("-inf")).flatten().tolist()]
    assert kept and all('ve"'.startswith(k) for k in kept)
    # outside a name nothing is masked
    free = tokenizer('type "mi', add_special_tokens=False)["input_ids"]
    out = ElementNameConstraint(table, [editor], len(prompt))(torch.tensor([prompt + free]), scores.clone())
    assert bool((out == 0).all())


def test_greedy_decoding_under_the_constraint_writes_a_screen_name(editor, tokenizer) -> None:
    table = TokenBytes(tokenizer)
    proc = ElementNameConstraint(table, [editor], 0)
    ids = tokenizer('tap "', add_special_tokens=False)["input_ids"]
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        scores = proc(torch.tensor([ids]), torch.randn(1, len(tokenizer), generator=gen))
        ids.append(int(scores[0].argmax()))
        if open_name(b"".join(table.by_id.get(t, b"") for t in ids)) is None:
            break
    text = tokenizer.decode(ids)
    name = text[len('tap "'):-1]
    assert text.endswith('"') and name in {n for e in editor.elements for n in (e.text, e.content_desc, e.hint) if n}


@pytest.mark.parametrize("text, partial", [
    ('type "', b""), ('type "mi', b"mi"), ('done "4', b"4"), ('type "milk" into "Ti', None), ('tap "Sa', None),
    ('done "4"', None), ("done", None), ('open_app "No', None),
])
def test_open_text_finds_typed_text_and_answers_only(text: str, partial: bytes | None) -> None:
    assert open_text(text.encode()) == partial


def test_copied_text_is_a_piece_of_the_goal_or_the_screen_or_a_number(editor, tokenizer) -> None:
    table = TokenBytes(tokenizer)
    goal = "Add a note titled milk"
    proc = CopyConstraint(table, [goal], [editor], 0)
    gen = torch.Generator().manual_seed(0)
    names = [n for e in editor.elements for n in (e.text, e.content_desc, e.hint) if n]

    def valid(piece: str) -> bool:
        return piece in goal or any(piece in n for n in names) or all(c in "0123456789.,:+-$%" for c in piece)

    for seed_text in ('type "', 'type "mi', 'done "'):
        for trial in range(5):
            ids = tokenizer(seed_text, add_special_tokens=False)["input_ids"]
            for _ in range(12):
                scores = proc(torch.tensor([ids]), torch.randn(1, len(tokenizer), generator=gen))
                ids.append(int(scores[0].argmax()))
                partial = open_text(b"".join(table.by_id.get(t, b"") for t in ids))
                if partial is not None:
                    assert valid(partial.decode("utf-8", "replace")), tokenizer.decode(ids)
                    continue
                text = tokenizer.decode(ids)
                assert text.endswith('"') and valid(text[text.index('"') + 1 : -1]), text
                break
    # a remembered string that is nowhere on screen or in the goal cannot start
    ids = tokenizer('type "', add_special_tokens=False)["input_ids"]
    scores = proc(torch.tensor([ids]), torch.zeros(1, len(tokenizer)))
    kept = {tokenizer.decode([i]) for i in torch.nonzero(scores[0] > float("-inf")).flatten().tolist()}
    assert "milk" in "".join(kept) or any("milk".startswith(k) for k in kept)
    assert not any(k.startswith("Save") for k in kept if "Save" not in goal) or "Save" in [e.text for e in editor.elements]
