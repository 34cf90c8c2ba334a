"""Tasks on Recipes (com.example.recipes, unseen): the search box, long-press context menus,
icon-only controls (favourite, remove, scale servings), bottom sheets to add and sort, and a
confirmation before removing."""

from __future__ import annotations

import random
import re
from typing import Any

from coadapt.apps.recipes import CATALOGUE, CUISINES, SORTS, parse_ingredient, sample_recipes, scaled

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.recipes"
NAMES = tuple(r[0] for r in CATALOGUE)
UNIT_WORDS = {"g": "grams", "ml": "millilitres", "tbsp": "tablespoons", "tsp": "teaspoons"}
NEW_RECIPES = (
    ("Lemon pasta", "Italian", 20, 2, ("200 g spaghetti", "1 lemon", "50 g parmesan")),
    ("Veggie chili", "Mexican", 45, 4, ("400 g kidney beans", "1 onion", "2 tsp chili powder")),
    ("Butter chicken", "Indian", 50, 4, ("600 g chicken thighs", "200 ml cream", "50 g butter")),
    ("Salmon rice bowl", "Japanese", 25, 2, ("2 salmon fillets", "300 g rice", "2 tbsp soy sauce")),
    ("Quiche lorraine", "French", 60, 6, ("1 pastry case", "200 g bacon", "4 eggs")),
    ("Sloppy joes", "American", 30, 4, ("500 g beef mince", "4 buns", "3 tbsp ketchup")),
    ("Thai basil stir-fry", "Thai", 20, 2, ("300 g pork mince", "2 tbsp oyster sauce", "1 cup basil")),
    ("Spanakopita", "Greek", 75, 6, ("500 g spinach", "200 g feta", "8 filo sheets")),
    ("Lentil soup", "Middle Eastern", 40, 4, ("250 g red lentils", "1 onion", "1 tsp cumin")),
)


def _recipes(device) -> list[dict[str, Any]]:
    return device.read_app_state(APP)["recipes"]


def _others_unchanged(before: list[dict[str, Any]], after: list[dict[str, Any]], skip: set[int]) -> bool:
    """Every recipe not in `skip` is still there exactly as it was, and none was added."""
    return {r["id"]: r for r in before if r["id"] not in skip} == {r["id"]: r for r in after if r["id"] not in skip}


def _by_name(recipes: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in recipes if r["name"] == name)


def _entry(name: str) -> tuple:
    return next(r for r in CATALOGUE if r[0] == name)


class _RecipesTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, n: int, *, must: tuple[str, ...] = (), avoid: tuple[str, ...] = (),
              fav: dict[str, bool] | None = None, sort: str = "name") -> dict[str, dict[str, Any]]:
        recipes = sample_recipes(rng, n, must=must, avoid=avoid)
        for r in recipes:
            if fav and r["name"] in fav:
                r["favourite"] = fav[r["name"]]
        return {APP: {"recipes": recipes, "sort": sort, "next_id": len(recipes) + 1}}

    def _target(self) -> dict[str, Any]:
        return _by_name(self.states()[APP]["recipes"], self.values["name"])

    def _unchanged_except(self, device, **changes: Any) -> bool:
        """The target has exactly `changes` applied, and every other recipe is untouched."""
        before = self.states()[APP]["recipes"]
        after = _recipes(device)
        old = self._target()
        now = [r for r in after if r["id"] == old["id"]]
        return len(now) == 1 and now[0] == {**old, **changes} and _others_unchanged(before, after, {old["id"]})

    # Oracle building blocks ---------------------------------------------------------------

    def _search(self, o: OracleCtx, query: str) -> Solution:
        yield o.type(query, rid="search", clear=True)

    def _open(self, o: OracleCtx, name: str) -> Solution:
        yield from self._search(o, name)
        yield o.tap(text=name, rid="title")

    def _scale_to(self, o: OracleCtx, n: int) -> Solution:
        for _ in range(30):
            shown = int(o.element(rid="servings").text.split()[-1])
            if shown == n:
                return
            yield o.tap(desc="Increase servings" if shown < n else "Decrease servings")


class RecipesFavouriteRecipe(_RecipesTask):
    name = "RecipesFavouriteRecipe"
    template = 'Add "{name}" to my favourite recipes.'
    params = {"name": "recipe to mark as a favourite"}
    kind = "toggle"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NAMES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(16, 26), must=(self.values["name"],), fav={self.values["name"]: False})

    def is_successful(self, device, answer):
        return float(self._unchanged_except(device, favourite=True))

    def solve(self, o):
        yield from self._search(o, self.values["name"])
        yield o.long_press(text=self.values["name"], rid="title")
        yield o.tap(text="Add to favourites")
        yield o.done()


class RecipesUnfavouriteRecipe(_RecipesTask):
    name = "RecipesUnfavouriteRecipe"
    template = 'Take "{name}" off my favourite recipes.'
    params = {"name": "a favourite recipe"}
    kind = "toggle"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NAMES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(16, 26), must=(self.values["name"],), fav={self.values["name"]: True})

    def is_successful(self, device, answer):
        return float(self._unchanged_except(device, favourite=False))

    def solve(self, o):
        yield from self._open(o, self.values["name"])
        yield o.tap(desc="Remove from favourites")
        yield o.done()


class RecipesRemoveRecipe(_RecipesTask):
    name = "RecipesRemoveRecipe"
    template = 'Remove the recipe "{name}" from my recipes.'
    params = {"name": "recipe to remove"}
    kind = "delete"
    complexity = 3
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NAMES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(18, 26), must=(self.values["name"],))

    def is_successful(self, device, answer):
        before = self.states()[APP]["recipes"]
        after = _recipes(device)
        return float(all(r["name"] != self.values["name"] for r in after) and len(after) == len(before) - 1
                     and _others_unchanged(before, after, {self._target()["id"]}))

    def solve(self, o):
        yield from o.scroll_to(text=self.values["name"], rid="title")
        yield o.long_press(text=self.values["name"], rid="title")
        yield o.tap(text="Remove", rid="title")
        yield o.tap(text="Remove")
        yield o.done()


class RecipesScaleServings(_RecipesTask):
    name = "RecipesScaleServings"
    template = 'Scale the recipe "{name}" to {servings} servings.'
    params = {"name": "a recipe", "servings": "the number of servings wanted"}
    kind = "edit"
    complexity = 3
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        name = rng.choice(NAMES)
        base = _entry(name)[3]
        options = [n for n in range(max(1, base - 3), base + 5) if n != base]
        return {"name": name, "servings": rng.choice(options)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(14, 24), must=(self.values["name"],))

    def is_successful(self, device, answer):
        return float(self._unchanged_except(device, servings=self.values["servings"]))

    def solve(self, o):
        yield from self._open(o, self.values["name"])
        yield from self._scale_to(o, self.values["servings"])
        yield o.done()


class RecipesIngredientAmount(_RecipesTask):
    name = "RecipesIngredientAmount"
    template = 'How much {item} do I need to make "{name}" for {servings} people? Answer with the number of {unit_word}.'
    params = {"name": "a recipe", "item": "one of its ingredients", "servings": "number of people",
              "unit_word": "the unit to answer in"}
    kind = "retrieval"
    complexity = 3
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        name = rng.choice([r[0] for r in CATALOGUE if any(parse_ingredient(i)["unit"] in UNIT_WORDS for i in r[4])])
        entry = _entry(name)
        ing = rng.choice([parse_ingredient(i) for i in entry[4] if parse_ingredient(i)["unit"] in UNIT_WORDS])
        base = entry[3]
        servings = rng.choice([n for n in range(max(1, base - 2), base + 5) if n != base])
        return {"name": name, "item": ing["item"], "servings": servings, "unit_word": UNIT_WORDS[ing["unit"]]}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(14, 24), must=(self.values["name"],))

    def expected(self) -> float:
        r = self._target()
        ing = next(i for i in r["ingredients"] if i["item"] == self.values["item"])
        q = scaled(ing, self.values["servings"], r["base_servings"])
        assert q is not None
        return q

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield from self._open(o, self.values["name"])
        yield from self._scale_to(o, self.values["servings"])
        line = next(e.text for e in o.obs.elements if e.resource_id.endswith(":id/ingredient") and e.text.endswith(" " + self.values["item"]))
        yield o.done(re.search(r"\d+(?:\.\d+)?", line).group(0))  # type: ignore[union-attr]


class RecipesCookingTime(_RecipesTask):
    name = "RecipesCookingTime"
    template = 'How many minutes does "{name}" take to make? Answer with a number.'
    params = {"name": "a recipe"}
    kind = "search"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NAMES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(18, 26), must=(self.values["name"],))

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self._target()["minutes"]))

    def solve(self, o):
        yield from self._search(o, self.values["name"])
        i = o.index(text=self.values["name"], rid="title")
        sub = next(e.text for e in o.obs.elements[i:] if e.resource_id.endswith(":id/subtitle"))
        yield o.done(re.search(r"(\d+) min", sub).group(1))  # type: ignore[union-attr]


class RecipesQuickestCuisine(_RecipesTask):
    name = "RecipesQuickestCuisine"
    template = "Which {cuisine} recipe in my collection is the quickest to make? Answer with its name."
    params = {"cuisine": "a cuisine"}
    kind = "search"
    complexity = 3
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        return {"cuisine": rng.choice([c for c in CUISINES if sum(r[1] == c for r in CATALOGUE) >= 2])}

    def initial_state(self, rng):
        # Two or more recipes of the cuisine; within a cuisine the catalogue's times differ, so
        # the quickest is unique.
        own = [r[0] for r in CATALOGUE if r[1] == self.values["cuisine"]]
        must = tuple(rng.sample(own, rng.randint(2, len(own))))
        return self._base(rng, rng.randint(14, 22), must=must)

    def expected(self) -> str:
        own = [r for r in self.states()[APP]["recipes"] if r["cuisine"] == self.values["cuisine"]]
        return min(own, key=lambda r: r["minutes"])["name"]

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield o.tap(desc="Sort recipes")
        yield o.tap(text="Cooking time")
        yield from self._search(o, self.values["cuisine"])
        first = next(i for i, e in enumerate(o.obs.elements) if e.resource_id.endswith(":id/subtitle")
                     and e.text.startswith(self.values["cuisine"] + " "))
        yield o.done(o.obs.elements[first - 1].text)


class RecipesSortRecipes(_RecipesTask):
    name = "RecipesSortRecipes"
    template = "Sort my recipes by {order}."
    params = {"sort": "sort mode", "order": "how it reads"}
    kind = "toggle"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        mode = rng.choice(["time", "favourites"])
        return {"sort": mode, "order": SORTS[mode]}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(10, 20), sort="name")

    def is_successful(self, device, answer):
        s = device.read_app_state(APP)
        return float(s["sort"] == self.values["sort"] and s["recipes"] == self.states()[APP]["recipes"])

    def solve(self, o):
        yield o.tap(desc="Sort recipes")
        yield o.tap(text={"time": "Cooking time", "favourites": "Favourites first"}[self.values["sort"]])
        yield o.done()


class RecipesAddRecipe(_RecipesTask):
    name = "RecipesAddRecipe"
    template = 'Add a new {cuisine} recipe "{name}" that takes {minutes} minutes and serves {servings}, with the ingredients {listed}.'
    params = {"name": "recipe name", "cuisine": "its cuisine", "minutes": "cooking time", "servings": "servings",
              "ingredients": "ingredient lines", "listed": "the ingredients as a phrase"}
    kind = "multi"
    complexity = 5
    max_steps = 24

    @classmethod
    def sample_params(cls, rng):
        name, cuisine, minutes, servings, ingredients = rng.choice(NEW_RECIPES)
        listed = ", ".join(ingredients[:-1]) + " and " + ingredients[-1]
        return {"name": name, "cuisine": cuisine, "minutes": minutes, "servings": servings,
                "ingredients": list(ingredients), "listed": listed}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(8, 20))

    def is_successful(self, device, answer):
        before = self.states()[APP]["recipes"]
        after = _recipes(device)
        new = [r for r in after if r["id"] not in {b["id"] for b in before}]
        if len(new) != 1 or not _others_unchanged(before, after, {new[0]["id"]}):
            return 0.0
        r = new[0]
        want = [parse_ingredient(i) for i in self.values["ingredients"]]

        def norm(i: dict[str, Any]) -> tuple:
            return i["qty"], i["unit"], i["item"].strip().lower()

        return float(r["name"] == self.values["name"] and r["cuisine"] == self.values["cuisine"]
                     and r["minutes"] == self.values["minutes"] and r["servings"] == self.values["servings"]
                     and sorted(map(norm, r["ingredients"]), key=str) == sorted(map(norm, want), key=str))

    def solve(self, o):
        yield o.tap(desc="Add recipe")
        yield o.tap(text="Write a recipe")
        yield o.type(self.values["name"], rid="name")
        yield o.tap(rid="cuisine")
        yield o.tap(text=self.values["cuisine"], rid="title")
        yield o.type(str(self.values["minutes"]), rid="minutes")
        yield o.type(str(self.values["servings"]), rid="servings", clear=True)
        yield from o.scroll_to(rid="ingredients")
        yield o.type("\n".join(self.values["ingredients"]), rid="ingredients")
        yield o.tap(desc="Save recipe")
        yield o.done()


class RecipesCalories(_RecipesTask):
    name = "RecipesCalories"
    template = 'How many calories are in one serving of "{name}"?'
    params = {"name": "a recipe"}
    kind = "infeasible"
    complexity = 1
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NAMES)}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(10, 20), must=(self.values["name"],))

    def is_successful(self, device, answer):
        return 0.0  # Recipes keeps no nutrition facts; only declaring the task infeasible succeeds.

    def solve(self, o):
        yield from self._open(o, self.values["name"])
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    RecipesFavouriteRecipe, RecipesUnfavouriteRecipe, RecipesRemoveRecipe, RecipesScaleServings, RecipesIngredientAmount,
    RecipesCookingTime, RecipesQuickestCuisine, RecipesSortRecipes, RecipesAddRecipe, RecipesCalories,
)
