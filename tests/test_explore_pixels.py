"""Pixel screen identity (coadapt.explore.pixels): scrolling keeps the screen, menus, drawers and
dialogs make another, and on random walks through the simulated apps it agrees with the UI
tree's coarse and fine screen keys."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("cv2")

from coadapt.android_env.sim import SimDevice  # noqa: E402
from coadapt.apps import make_apps  # noqa: E402
from coadapt.apps import contacts, expenses, music, notes, recipes, settings, shopping, todo  # noqa: E402
from coadapt.apps.expenses import ExpensesApp, sample_expenses  # noqa: E402
from coadapt.explore.pixels import (  # noqa: E402
    PixelIndex, PixelSignature, changed, pixel_signature, same_screen, screen_distance,
)
from coadapt.explore.screens import screen_facts  # noqa: E402

PKG = ExpensesApp.package


@pytest.fixture
def dev(expenses_long_list):
    return expenses_long_list


def sig(d: SimDevice) -> PixelSignature:
    return pixel_signature(d.screenshot())


def tap(d: SimDevice, **kw) -> None:
    hits = d.ui_tree().find(**kw)
    assert hits, f"no {kw} on screen: {d.ui_tree().texts()}"
    d.tap(*hits[0].bounds.center)


def scroll(d: SimDevice) -> None:
    d.swipe(360, 1200, 360, 500)


def test_scrolling_a_list_keeps_the_screen_but_changes_it(dev):
    first = prev = sig(dev)
    for _ in range(3):
        scroll(dev)
        now = sig(dev)
        assert same_screen(first, now), screen_distance(first, now)
        assert changed(first, now) and changed(prev, now)
        prev = now


def test_menu_drawer_and_dialog_are_other_screens(dev):
    base = sig(dev)
    tap(dev, content_desc="More options")
    assert dev.ui_tree().find(text="Log expense")
    menu = sig(dev)
    dev.key("back")
    tap(dev, content_desc="Open navigation drawer")
    drawer = sig(dev)
    dev.key("back")
    assert same_screen(base, sig(dev)), "closing the drawer should give the list back"
    row = [e for e in dev.ui_tree() if e.resource_id == f"{PKG}:id/title"][0]
    x, y = row.bounds.center
    dev.swipe(x, y, x - 300, y)
    assert dev.ui_tree().find(text="Delete expense?")
    dialog = sig(dev)
    for name, other in (("menu", menu), ("drawer", drawer), ("dialog", dialog)):
        assert not same_screen(base, other), f"{name}: distance {screen_distance(base, other):.2f}"
        assert changed(base, other)
    assert not same_screen(menu, drawer) and not same_screen(drawer, dialog) and not same_screen(menu, dialog)


def test_typing_is_a_change_and_the_keyboard_is_not_a_screen(dev):
    a = sig(dev)
    assert not changed(a, sig(dev)) and screen_distance(a, sig(dev)) == 0.0
    tap(dev, content_desc="More options")
    tap(dev, text="Log expense")  # the amount field has focus and the keyboard is up
    assert dev.keyboard_visible
    form = sig(dev)
    assert form.keyboard_top < 1.0 and a.keyboard_top == 1.0
    dev.input_text("7")
    typed = sig(dev)
    assert changed(form, typed) and same_screen(form, typed)
    dev.key("back")  # hides the keyboard only
    assert not dev.keyboard_visible and dev.ui_tree().find(text="Log expense")
    assert same_screen(typed, sig(dev)), "a keyboard that closes does not make another screen"


def test_switch_toggle_is_a_change_of_the_same_screen():
    d = SimDevice(make_apps([settings.APP.package]))
    d.launch(settings.APP.package)
    tap(d, text="Network & internet")
    for switch in [e for e in d.ui_tree() if e.checkable]:
        before, facts = sig(d), screen_facts(d.ui_tree())
        d.tap(*switch.bounds.center)
        after, again = sig(d), screen_facts(d.ui_tree())
        assert facts.key == again.key and facts.fine_key != again.fine_key
        assert changed(before, after) and same_screen(before, after)


def test_signature_is_frozen_and_resolution_free(dev):
    img = dev.screenshot()
    a = pixel_signature(img)
    with pytest.raises(Exception):
        a.phash = 0  # type: ignore[misc]
    assert not a.thumb.flags.writeable and not a.surface.flags.writeable
    assert 0 <= a.phash < 1 << 64
    big = pixel_signature(img.resize((1080, 2400)))
    assert same_screen(a, big) and not changed(a, big)
    assert np.array_equal(pixel_signature(np.asarray(img)).thumb, a.thumb)


def seeded_states(rng: random.Random) -> dict[str, dict]:
    return {
        expenses.APP.package: {"expenses": sample_expenses(rng, 28), "budget": 900.0},
        notes.APP.package: {"notes": notes.sample_notes(rng, 12)},
        music.APP.package: music.sample_state(rng, n_playlists=3),
        shopping.APP.package: shopping.sample_state(rng, n_orders=4),
        contacts.APP.package: {"contacts": contacts.sample_contacts(rng, contacts.MAX_CONTACTS)},
        recipes.APP.package: {"recipes": recipes.sample_recipes(rng, 12)},
        todo.APP.package: {"lists": todo.sample_lists(rng, list(todo.SAMPLE_LISTS)[:3], sizes=(6, 12))},
        settings.APP.package: settings.sample_settings(rng),
    }


def _actionable(tree):
    return [e for e in tree if e.visible and e.bounds.area > 0 and e.package != "com.android.systemui"
            and "inputmethod" not in e.package and (e.clickable or e.checkable or e.editable or e.long_clickable)]


def random_transitions(seed: int, steps: int) -> list[tuple]:
    """(tree before, image before, tree after, image after) of a seeded random walk per app:
    taps on actionable elements, text typed into a focused field, back, scrolls, row swipes."""
    rng = random.Random(seed)
    states = seeded_states(rng)
    d = SimDevice(make_apps(list(states)))
    for pkg, state in states.items():
        d.write_app_state(pkg, state)
    out = []
    for pkg in states:
        d.launch(pkg)
        for _ in range(steps):
            tree, img = d.ui_tree(), d.screenshot()
            r = rng.random()
            if r < 0.3 and any(e.editable and e.focused for e in tree):
                d.input_text(rng.choice(["abc", "Milk", "12"]))
            elif r < 0.55 and _actionable(tree):
                d.tap(*rng.choice(_actionable(tree)).bounds.center)
            elif r < 0.75:
                if rng.random() < 0.7:
                    d.swipe(360, 1200, 360, 560)
                else:
                    d.swipe(360, 560, 360, 1200)
            elif r < 0.9 or not [e for e in _actionable(tree) if e.bounds.width > 300]:
                d.key("back")
            else:
                x, y = rng.choice([e for e in _actionable(tree) if e.bounds.width > 300]).bounds.center
                d.swipe(x, y, x - 300, y)
            out.append((tree, img, d.ui_tree(), d.screenshot()))
            if d.current_package() != pkg:
                d.launch(pkg)
    return out


def test_agrees_with_the_tree_keys_on_random_walks():
    pairs = random_transitions(seed=7, steps=15)
    assert len(pairs) >= 40
    coarse = fine = 0
    kinds = set()
    for t1, i1, t2, i2 in pairs:
        f1, f2 = screen_facts(t1), screen_facts(t2)
        a, b = pixel_signature(i1), pixel_signature(i2)
        kinds.add((f1.key == f2.key, f1.fine_key == f2.fine_key))
        coarse += same_screen(a, b) == (f1.key == f2.key)
        fine += changed(a, b) == (f1.fine_key != f2.fine_key)
    assert len(kinds) == 3, f"the walk should hold new screens, changed screens and no-ops: {kinds}"
    n = len(pairs)
    assert coarse / n >= 0.85, f"same_screen agrees with the coarse key on {coarse}/{n} = {coarse / n:.3f}"
    assert fine / n >= 0.9, f"changed agrees with the fine key on {fine}/{n} = {fine / n:.3f}"


def test_index_gives_revisited_screens_their_id(dev):
    index = PixelIndex()
    home, new = index.lookup_or_add(sig(dev))
    assert new and home == 0
    scroll(dev)
    assert index.lookup_or_add(sig(dev)) == (home, False)
    tap(dev, content_desc="Open navigation drawer")
    drawer, new = index.lookup_or_add(sig(dev))
    assert new and drawer != home
    tap(dev, text="Settings")
    page, new = index.lookup_or_add(sig(dev))
    assert new and page not in (home, drawer)
    dev.key("back")
    assert index.lookup_or_add(sig(dev)) == (home, False)
    tap(dev, content_desc="Open navigation drawer")
    assert index.lookup_or_add(sig(dev)) == (drawer, False)
    assert len(index) == 3
