"""Recipes (unseen app): state round trip, search, long-press context menu, icon-only
controls, bottom sheets and the remove confirmation."""

from __future__ import annotations

import json
import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.recipes import RecipesApp, fmt_qty, ingredient_text, parse_ingredient, sample_recipes

PKG = RecipesApp.package


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    recipes = sample_recipes(random.Random(4), 22, must=("Spaghetti carbonara", "Pad thai"))
    for r in recipes:
        r["favourite"] = False
    d.write_app_state(PKG, {"recipes": recipes})
    d.launch(PKG)
    return d


def find(d, **kw):
    hits = d.ui_tree().find(**kw)
    return hits[0] if hits else None


def tap(d, **kw):
    e = find(d, **kw)
    assert e is not None, f"no {kw} on screen: {d.ui_tree().texts()}"
    d.tap(*e.bounds.center)


def rid(name):
    return f"{PKG}:id/{name}"


def titles(d):
    return [e.text for e in d.ui_tree() if e.resource_id == rid("title")]


def recipe(d, name):
    return next(r for r in d.read_app_state(PKG)["recipes"] if r["name"] == name)


def search(d, text):
    tap(d, resource_id=rid("search"))
    d.input_text(text)


def test_state_round_trips_through_json(dev):
    state = dev.read_app_state(PKG)
    dev.write_app_state(PKG, json.loads(json.dumps(state)))
    assert dev.read_app_state(PKG) == state


def test_ingredients_parse_and_scale():
    assert parse_ingredient("200 g flour") == {"qty": 200.0, "unit": "g", "item": "flour"}
    assert parse_ingredient("2 eggs") == {"qty": 2.0, "unit": "", "item": "eggs"}
    assert parse_ingredient("salt to taste") == {"qty": None, "unit": "", "item": "salt to taste"}
    assert ingredient_text(parse_ingredient("400 g spaghetti"), 6, 4) == "600 g spaghetti"
    assert fmt_qty(1000 / 3) == "333.33" and fmt_qty(2.0) == "2"


def test_search_filters_by_name_cuisine_and_ingredient(dev):
    assert len(titles(dev)) < 22  # the full catalogue needs scrolling
    search(dev, "carbo")
    assert titles(dev) == ["Spaghetti carbonara"]
    tap(dev, resource_id=rid("search"))
    for _ in range(5):
        dev.key("delete")
    dev.input_text("Thai")
    state = dev.read_app_state(PKG)
    assert set(titles(dev)) == {r["name"] for r in state["recipes"] if r["cuisine"] == "Thai"}


def test_long_press_menu_favourites_and_removes_after_confirming(dev):
    search(dev, "Pad thai")
    row = find(dev, text="Pad thai", resource_id=rid("title"))
    dev.tap(*row.bounds.center)  # a tap opens the recipe, it is not the menu
    assert find(dev, text="Add to favourites") is None and find(dev, content_desc="Add to favourites") is not None
    dev.key("back")
    dev.long_press(*find(dev, text="Pad thai", resource_id=rid("title")).bounds.center)
    tap(dev, text="Add to favourites")
    assert recipe(dev, "Pad thai")["favourite"]
    dev.long_press(*find(dev, text="Pad thai", resource_id=rid("title")).bounds.center)
    tap(dev, text="Remove", resource_id=rid("title"))
    assert find(dev, text="Remove recipe?") is not None
    assert any(r["name"] == "Pad thai" for r in dev.read_app_state(PKG)["recipes"])
    tap(dev, text="Remove")
    assert all(r["name"] != "Pad thai" for r in dev.read_app_state(PKG)["recipes"])


def test_icon_only_controls_scale_and_favourite(dev):
    search(dev, "carbonara")
    tap(dev, text="Spaghetti carbonara", resource_id=rid("title"))
    icons = [e for e in dev.ui_tree() if e.class_name == "android.widget.ImageButton" and e.package == PKG]
    assert icons and all(not e.text and e.content_desc for e in icons)
    assert find(dev, text="• 400 g spaghetti") is not None
    tap(dev, content_desc="Increase servings")
    tap(dev, content_desc="Increase servings")
    assert find(dev, text="Serves 6") is not None and find(dev, text="• 600 g spaghetti") is not None
    tap(dev, content_desc="Add to favourites")
    r = recipe(dev, "Spaghetti carbonara")
    assert r["servings"] == 6 and r["base_servings"] == 4 and r["favourite"]


def test_sheets_sort_and_add(dev):
    tap(dev, content_desc="Sort recipes")
    tap(dev, text="Cooking time")
    assert dev.read_app_state(PKG)["sort"] == "time"
    mins = [r["minutes"] for r in sorted(dev.read_app_state(PKG)["recipes"], key=lambda r: r["minutes"])]
    assert find(dev, text="22 recipes · sorted by cooking time") is not None
    first = find(dev, resource_id=rid("subtitle")).text
    assert f"· {mins[0]} min" in first
    tap(dev, content_desc="Add recipe")
    tap(dev, text="Write a recipe")
    dev.input_text("Lemon pasta")
    tap(dev, resource_id=rid("minutes"))
    dev.input_text("20")
    tap(dev, resource_id=rid("ingredients"))
    dev.input_text("200 g spaghetti\n1 lemon")
    tap(dev, content_desc="Save recipe")
    r = recipe(dev, "Lemon pasta")
    assert r["minutes"] == 20 and r["servings"] == 4 and [i["item"] for i in r["ingredients"]] == ["spaghetti", "lemon"]
