"""Recipes (com.example.recipes), an unseen app: a recipe catalogue with a search box, a recipe
page with icon-only controls (favourite, remove, scale servings), long-press context menus on
the list, bottom sheets to add a recipe or change the sort order, and a confirmation before a
recipe is removed."""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import Route, SimApp
from coadapt.android_env.sim.widgets import (
    BottomSheet, Dialog, EditText, Header, IconButton, LayoutCtx, ListItem, ListView, MenuItem, Row, Screen,
    Spinner, Text, Toolbar,
)

CUISINES = ("Italian", "Mexican", "Indian", "Japanese", "French", "American", "Thai", "Greek", "Middle Eastern")
SORTS = {"name": "name", "time": "cooking time", "favourites": "favourites first"}
UNITS = ("g", "kg", "ml", "l", "tbsp", "tsp", "cup", "cups")

# name, cuisine, minutes, servings, ingredients "qty unit item" (unit may be absent), steps
CATALOGUE: tuple[tuple[str, str, int, int, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Spaghetti carbonara", "Italian", 25, 4, ("400 g spaghetti", "150 g pancetta", "4 eggs", "80 g parmesan", "1 tsp black pepper"),
     ("Boil the spaghetti in salted water.", "Fry the pancetta until crisp.", "Whisk the eggs with the parmesan and pepper.",
      "Toss the hot pasta with the pancetta and egg mix off the heat.")),
    ("Margherita pizza", "Italian", 40, 2, ("250 g pizza dough", "120 g tomato sauce", "125 g mozzarella", "6 basil leaves", "1 tbsp olive oil"),
     ("Heat the oven as hot as it goes.", "Stretch the dough and spread the sauce.", "Top with torn mozzarella and bake for 10 minutes.",
      "Finish with basil and olive oil.")),
    ("Mushroom risotto", "Italian", 45, 4, ("300 g arborio rice", "250 g mushrooms", "1000 ml vegetable stock", "1 onion", "50 g parmesan"),
     ("Soften the onion and mushrooms.", "Toast the rice, then add the stock a ladle at a time.", "Stir in the parmesan and rest for 2 minutes.")),
    ("Minestrone", "Italian", 50, 6, ("2 carrots", "2 celery sticks", "400 g chopped tomatoes", "150 g small pasta", "400 g cannellini beans"),
     ("Chop the carrots and celery and soften them.", "Add the tomatoes, beans and 1 litre of water.", "Simmer 20 minutes, add the pasta and cook until tender.")),
    ("Tiramisu", "Italian", 30, 6, ("250 g mascarpone", "3 eggs", "200 ml coffee", "200 g ladyfingers", "2 tbsp cocoa"),
     ("Beat the yolks with sugar, then the mascarpone.", "Dip the ladyfingers in coffee and layer with the cream.", "Chill overnight and dust with cocoa.")),
    ("Chicken tacos", "Mexican", 30, 4, ("500 g chicken thighs", "8 tortillas", "1 avocado", "2 limes", "100 g salsa"),
     ("Season and grill the chicken.", "Slice it and warm the tortillas.", "Fill with chicken, avocado and salsa; squeeze over lime.")),
    ("Bean burritos", "Mexican", 25, 4, ("400 g black beans", "4 tortillas", "200 g rice", "100 g cheddar", "1 tsp cumin"),
     ("Cook the rice.", "Warm the beans with the cumin.", "Roll rice, beans and cheese in the tortillas and toast them.")),
    ("Guacamole", "Mexican", 10, 4, ("3 avocados", "1 lime", "1 red onion", "2 tbsp coriander"),
     ("Mash the avocados.", "Stir in the chopped onion, coriander and lime juice.", "Season with salt.")),
    ("Chicken tikka masala", "Indian", 60, 4, ("600 g chicken breast", "200 g yogurt", "400 g chopped tomatoes", "200 ml cream", "2 tbsp tikka paste"),
     ("Marinate the chicken in yogurt and paste.", "Grill the chicken until charred.", "Simmer the tomatoes and cream, then add the chicken.")),
    ("Chana masala", "Indian", 35, 4, ("800 g chickpeas", "1 onion", "400 g chopped tomatoes", "2 tsp garam masala", "1 tbsp ginger"),
     ("Fry the onion and ginger.", "Add the spices and tomatoes.", "Add the chickpeas and simmer for 15 minutes.")),
    ("Dal tadka", "Indian", 40, 4, ("250 g red lentils", "1000 ml water", "1 tsp turmeric", "2 garlic cloves", "1 tbsp ghee"),
     ("Boil the lentils with turmeric until soft.", "Fry the garlic in ghee.", "Pour the garlic over the dal.")),
    ("Chicken teriyaki", "Japanese", 25, 2, ("400 g chicken thighs", "4 tbsp soy sauce", "2 tbsp mirin", "1 tbsp honey", "300 g rice"),
     ("Cook the rice.", "Pan-fry the chicken skin side down.", "Add soy, mirin and honey and reduce to a glaze.")),
    ("Miso soup", "Japanese", 15, 4, ("1000 ml dashi", "3 tbsp miso paste", "200 g tofu", "2 spring onions"),
     ("Heat the dashi without boiling.", "Whisk in the miso.", "Add cubed tofu and sliced spring onions.")),
    ("Vegetable ramen", "Japanese", 35, 2, ("200 g ramen noodles", "800 ml vegetable stock", "2 eggs", "100 g spinach", "2 tbsp soy sauce"),
     ("Soft-boil the eggs for 6 minutes.", "Simmer the stock with soy sauce.", "Cook the noodles and spinach, then top with halved eggs.")),
    ("French onion soup", "French", 75, 4, ("1000 g onions", "50 g butter", "1200 ml beef stock", "4 baguette slices", "100 g gruyere"),
     ("Cook the onions in butter for 45 minutes until brown.", "Add the stock and simmer.", "Top with bread and cheese and grill.")),
    ("Ratatouille", "French", 60, 4, ("1 aubergine", "2 courgettes", "2 peppers", "400 g chopped tomatoes", "3 tbsp olive oil"),
     ("Cut all the vegetables into chunks.", "Fry them in batches in olive oil.", "Simmer everything with the tomatoes for 30 minutes.")),
    ("Crêpes", "French", 30, 4, ("125 g flour", "2 eggs", "300 ml milk", "25 g butter"),
     ("Whisk the flour, eggs and milk.", "Rest the batter for 10 minutes.", "Cook thin crêpes in a buttered pan.")),
    ("Classic pancakes", "American", 20, 4, ("200 g flour", "2 eggs", "300 ml milk", "2 tbsp sugar", "2 tsp baking powder"),
     ("Mix the dry ingredients.", "Whisk in the eggs and milk.", "Cook ladles of batter until bubbles appear, then flip.")),
    ("Cheeseburger", "American", 30, 4, ("500 g beef mince", "4 buns", "4 cheddar slices", "1 tomato", "4 lettuce leaves"),
     ("Shape four patties.", "Grill them 3 minutes a side, adding cheese at the end.", "Build the burgers in toasted buns.")),
    ("Mac and cheese", "American", 35, 4, ("300 g macaroni", "250 g cheddar", "500 ml milk", "40 g butter", "40 g flour"),
     ("Cook the macaroni.", "Make a sauce with butter, flour and milk; melt in the cheese.", "Mix with the pasta and bake for 15 minutes.")),
    ("Banana bread", "American", 70, 8, ("3 bananas", "250 g flour", "100 g sugar", "100 g butter", "2 eggs"),
     ("Mash the bananas.", "Beat in the butter, sugar and eggs, then fold in the flour.", "Bake for 55 minutes.")),
    ("Pad thai", "Thai", 30, 2, ("200 g rice noodles", "200 g prawns", "2 eggs", "3 tbsp tamarind paste", "50 g peanuts"),
     ("Soak the noodles.", "Stir-fry the prawns, then scramble in the eggs.", "Toss in the noodles and tamarind; top with peanuts.")),
    ("Green curry", "Thai", 35, 4, ("500 g chicken breast", "400 ml coconut milk", "3 tbsp green curry paste", "150 g green beans", "1 tbsp fish sauce"),
     ("Fry the curry paste.", "Add the chicken and coconut milk.", "Simmer with the beans and season with fish sauce.")),
    ("Tom yum soup", "Thai", 25, 4, ("1000 ml chicken stock", "300 g prawns", "150 g mushrooms", "2 lemongrass stalks", "3 tbsp lime juice"),
     ("Simmer the stock with bruised lemongrass.", "Add the mushrooms and prawns.", "Finish with lime juice.")),
    ("Greek salad", "Greek", 15, 2, ("2 tomatoes", "1 cucumber", "100 g feta", "50 g olives", "2 tbsp olive oil"),
     ("Chop the tomatoes and cucumber.", "Add the olives and a slab of feta.", "Dress with olive oil and oregano.")),
    ("Moussaka", "Greek", 90, 6, ("2 aubergines", "500 g lamb mince", "400 g chopped tomatoes", "500 ml white sauce", "50 g parmesan"),
     ("Fry the aubergine slices.", "Make a lamb and tomato sauce.", "Layer, cover with white sauce and parmesan, and bake 45 minutes.")),
    ("Shakshuka", "Middle Eastern", 30, 2, ("4 eggs", "400 g chopped tomatoes", "1 red pepper", "1 onion", "1 tsp paprika"),
     ("Soften the onion and pepper with paprika.", "Add the tomatoes and simmer.", "Make wells, crack in the eggs and cover until set.")),
    ("Falafel wraps", "Middle Eastern", 40, 4, ("400 g chickpeas", "4 flatbreads", "100 g hummus", "1 cucumber", "2 tbsp tahini"),
     ("Blend the chickpeas with herbs and shape balls.", "Fry the falafel until golden.", "Wrap with hummus, cucumber and tahini.")),
)
NAMES = tuple(r[0] for r in CATALOGUE)


@dataclass
class Recipe:
    id: int
    name: str
    cuisine: str
    minutes: int
    servings: int
    base_servings: int
    ingredients: list[dict[str, Any]]  # {"qty": float | None, "unit": str, "item": str}, for base_servings
    steps: list[str]
    favourite: bool = False


@dataclass
class RecipesState:
    recipes: list[Recipe] = field(default_factory=list)
    sort: str = "name"
    next_id: int = 1


@dataclass
class _Draft:
    name: str = ""
    cuisine: str = "Italian"
    minutes: str = ""
    servings: str = "4"
    ingredients: str = ""
    steps: str = ""


def parse_ingredient(line: str) -> dict[str, Any]:
    """'200 g flour' -> {"qty": 200.0, "unit": "g", "item": "flour"}; '2 eggs' has no unit;
    a line without a leading number ("salt to taste") has qty None."""
    m = re.match(r"^\s*(\d+(?:[.,]\d+)?)\s*(?:(" + "|".join(UNITS) + r")\b\s*)?(.*)$", line)
    if not m or not m.group(3).strip():
        return {"qty": None, "unit": "", "item": line.strip()}
    return {"qty": float(m.group(1).replace(",", ".")), "unit": m.group(2) or "", "item": m.group(3).strip()}


def fmt_qty(q: float) -> str:
    """2.0 -> '2', 2.5 -> '2.5', 333.333 -> '333.33'."""
    return f"{round(q, 2):.2f}".rstrip("0").rstrip(".")


def scaled(ingredient: dict[str, Any], servings: int, base: int) -> float | None:
    q = ingredient["qty"]
    return None if q is None else round(q * servings / base, 2)


def ingredient_text(ingredient: dict[str, Any], servings: int, base: int) -> str:
    q = scaled(ingredient, servings, base)
    if q is None:
        return ingredient["item"]
    return " ".join(p for p in (fmt_qty(q), ingredient["unit"], ingredient["item"]) if p)


def recipe_dict(entry: tuple, rid: int, favourite: bool = False) -> dict[str, Any]:
    name, cuisine, minutes, servings, ingredients, steps = entry
    return {"id": rid, "name": name, "cuisine": cuisine, "minutes": minutes, "servings": servings, "base_servings": servings,
            "ingredients": [parse_ingredient(i) for i in ingredients], "steps": list(steps), "favourite": favourite}


def sample_recipes(rng: random.Random, n: int, *, must: tuple[str, ...] = (), avoid: tuple[str, ...] = (),
                   fav_rate: float = 0.25) -> list[dict[str, Any]]:
    """`n` recipes from the catalogue (including every name in `must`, none in `avoid`) as
    state dicts with ids 1..n, some marked favourite."""
    rest = [r for r in CATALOGUE if r[0] not in must and r[0] not in avoid]
    picked = [r for r in CATALOGUE if r[0] in must] + rng.sample(rest, n - len(must))
    rng.shuffle(picked)
    return [recipe_dict(r, i + 1, rng.random() < fav_rate) for i, r in enumerate(picked)]


class RecipesApp(SimApp):
    package = "com.example.recipes"
    label = "Recipes"
    icon = "recipe"
    color = "#AD1457"

    def reset_state(self) -> None:
        self.state = RecipesState()
        self.query = ""
        self.draft: _Draft | None = None

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        recipes = [Recipe(**r) for r in data.get("recipes", [])]
        self.state = RecipesState(recipes=recipes, sort=data.get("sort", "name"),
                                  next_id=data.get("next_id", max((r.id for r in recipes), default=0) + 1))
        self.query = ""
        self.draft = None
        self.stack = [Route("main")]

    # ------------------------------------------------------------------ actions

    def _find(self, rid: Any) -> Recipe | None:
        return next((r for r in self.state.recipes if r.id == rid), None)

    def _shown(self) -> list[Recipe]:
        q = self.query.strip().lower()
        out = [r for r in self.state.recipes
               if not q or q in r.name.lower() or q in r.cuisine.lower() or any(q in i["item"].lower() for i in r.ingredients)]
        out.sort(key=lambda r: r.name.lower())
        if self.state.sort == "time":
            out.sort(key=lambda r: r.minutes)
        elif self.state.sort == "favourites":
            out.sort(key=lambda r: not r.favourite)
        return out

    def _toggle_favourite(self, r: Recipe) -> None:
        r.favourite = not r.favourite
        self.toast("Added to favourites" if r.favourite else "Removed from favourites")

    def _confirm_remove(self, r: Recipe) -> None:
        def remove() -> None:
            self.state.recipes = [x for x in self.state.recipes if x.id != r.id]
            if self.route.name == "detail":
                self.pop()
            self.snackbar(f"Removed {r.name}")

        self.dialog(lambda: Dialog("Remove recipe?", f"“{r.name}” will be removed from your recipes.",
                                   buttons=[("Remove", remove), ("Cancel", lambda: None)]))

    def _context_menu(self, r: Recipe) -> None:
        """The long-press menu: a floating list titled with the recipe's name."""
        def run(action) -> Any:
            def go() -> None:
                self.route.dialog = None
                action()
            return go

        fav = "Remove from favourites" if r.favourite else "Add to favourites"
        self.dialog(lambda: Dialog(r.name, body=[
            ListItem("Open", on_click=run(lambda: self.push("detail", id=r.id)), icon="forward", id="menu_open"),
            ListItem(fav, on_click=run(lambda: self._toggle_favourite(r)), icon="star", id="menu_favourite"),
            ListItem("Remove", on_click=run(lambda: self._confirm_remove(r)), icon="delete", id="menu_remove"),
        ], buttons=[("Cancel", lambda: None)]))

    def _scale(self, r: Recipe, delta: int) -> None:
        r.servings = min(24, max(1, r.servings + delta))

    def _add_sheet(self) -> None:
        def write() -> None:
            self.draft = _Draft()
            self.push("form")
            self.focus("name")

        self.sheet(lambda: BottomSheet([
            MenuItem("Write a recipe", write, icon="edit"),
            MenuItem("Paste from clipboard", lambda: self.toast("Nothing to paste: the clipboard is empty"), icon="file"),
        ], title="Add a recipe"))

    def _sort_sheet(self) -> None:
        def set_sort(mode: str) -> Any:
            return lambda: setattr(self.state, "sort", mode)

        self.sheet(lambda: BottomSheet([
            MenuItem("Name", set_sort("name"), icon="sort"),
            MenuItem("Cooking time", set_sort("time"), icon="timer"),
            MenuItem("Favourites first", set_sort("favourites"), icon="star"),
        ], title="Sort by"))

    def _save(self) -> None:
        d = self.draft
        if d is None:
            return
        try:
            minutes, servings = int(d.minutes.strip()), int(d.servings.strip())
        except ValueError:
            self.toast("Enter the time and servings as numbers")
            return
        if not d.name.strip():
            self.toast("Give the recipe a name")
            return
        if not (0 < minutes < 1000 and 0 < servings <= 24):
            self.toast("Enter the time and servings as numbers")
            return
        ingredients = [parse_ingredient(line) for line in d.ingredients.splitlines() if line.strip()]
        steps = [line.strip() for line in d.steps.splitlines() if line.strip()]
        self.state.recipes.append(Recipe(self.state.next_id, d.name.strip(), d.cuisine, minutes, servings, servings,
                                         ingredients, steps))
        self.state.next_id += 1
        self.draft = None
        self.pop()
        self.toast("Recipe saved")

    def _discard(self) -> None:
        self.draft = None
        self.pop()

    def on_back(self) -> bool:
        if self.route.name == "form" and not self.route.has_overlay():
            self._discard()
            return True
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        if self.route.name == "form" and self.draft is not None:
            return self._form()
        r = self._find(self.route.params.get("id")) if self.route.name == "detail" else None
        if r is not None:
            return self._detail(r)
        return self._list()

    def _list(self) -> Screen:
        def set_query(v: str) -> None:
            self.query = v
            self.route.scroll.clear()

        shown = self._shown()
        items = [ListItem(r.name, f"{r.cuisine} · {r.minutes} min · serves {r.servings}", id="recipe",
                          icon="star" if r.favourite else "recipe", on_click=lambda r=r: self.push("detail", id=r.id),
                          on_long_click=lambda r=r: self._context_menu(r)) for r in shown]
        count = f"{len(shown)} recipe{'' if len(shown) == 1 else 's'} · sorted by {SORTS[self.state.sort]}"
        return Screen(
            toolbar=Toolbar("Recipes", actions=[IconButton("sort", "Sort recipes", self._sort_sheet, id="sort"),
                                                IconButton("add", "Add recipe", self._add_sheet, id="add")]),
            body=[
                EditText("search", self.query, set_query, hint="Search recipes", kind="search", icon="search",
                         on_submit=lambda: self.focus(None)),
                Text(count, "caption", id="count", vpad=2),
                ListView("recipes_list", items,
                         empty_text=f"No recipes match “{self.query.strip()}”." if self.query.strip() else "No recipes yet."),
            ],
        )

    def _detail(self, r: Recipe) -> Screen:
        fav_desc = "Remove from favourites" if r.favourite else "Add to favourites"
        body: list[Any] = [
            Text(r.name, "headline", max_lines=2, id="recipe_name", vpad=8),
            Text(f"{r.cuisine} · {r.minutes} min", "body2", id="info", vpad=0),
            Row([Text(f"Serves {r.servings}", "subtitle", id="servings", vpad=12),
                 IconButton("expand_more", "Decrease servings", lambda: self._scale(r, -1), id="servings_down"),
                 IconButton("expand_less", "Increase servings", lambda: self._scale(r, 1), id="servings_up")]),
            Header("Ingredients"),
            *[Text("• " + ingredient_text(i, r.servings, r.base_servings), id="ingredient", vpad=4, max_lines=2) for i in r.ingredients],
            Header("Steps"),
            *[Text(f"{n}. {s}", id="step", vpad=4, max_lines=4) for n, s in enumerate(r.steps, 1)],
        ]
        return Screen(
            toolbar=Toolbar("Recipe", nav="back", on_nav=self.pop, actions=[
                IconButton("star" if r.favourite else "star_border", fav_desc, lambda: self._toggle_favourite(r), id="favourite"),
                IconButton("delete", "Remove recipe", lambda: self._confirm_remove(r), id="remove"),
            ]),
            body=body,
        )

    def _form(self) -> Screen:
        d = self.draft
        assert d is not None

        def setter(attr: str):
            return lambda v: setattr(d, attr, v)

        return Screen(
            toolbar=Toolbar("New recipe", nav="close", on_nav=self._discard,
                            actions=[IconButton("check", "Save recipe", self._save, id="save")]),
            body=[
                EditText("name", d.name, setter("name"), hint="e.g. Lemon pasta", label="Name"),
                Spinner("cuisine", CUISINES, d.cuisine, setter("cuisine"), label="Cuisine"),
                EditText("minutes", d.minutes, setter("minutes"), hint="Minutes", label="Cooking time (minutes)"),
                EditText("servings", d.servings, setter("servings"), hint="Servings", label="Servings"),
                EditText("ingredients", d.ingredients, setter("ingredients"), hint="One per line, e.g. 200 g flour",
                         label="Ingredients", multiline=True, lines=3),
                EditText("steps", d.steps, setter("steps"), hint="One step per line", label="Steps", multiline=True, lines=3),
            ],
        )


APP = RecipesApp
GROUP = "unseen"
