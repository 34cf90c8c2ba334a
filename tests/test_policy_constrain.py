"""Constrained decoding of element names: only names on the screen can be written between quotes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from coadapt.android_env.actions import OpenApp, Tap  # noqa: E402
from coadapt.android_env.env import AndroidEnv  # noqa: E402
from coadapt.android_env.sim import SimDevice  # noqa: E402
from coadapt.apps import label_map, make_apps  # noqa: E402
from coadapt.policy.constrain import ElementNameConstraint, TokenBytes, open_name, screen_names  # noqa: E402
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
