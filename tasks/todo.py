"""Tasks on To-do (com.example.todo, unseen): lists switched in the drawer, adding through a
bottom sheet behind an icon-only button, swipe right to complete and left to remove, long-press
to edit or set a due date, and a confirmation before deleting a list."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from coadapt.apps.todo import SAMPLE_LISTS, TODAY, sample_lists

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.todo"
LIST_NAMES = tuple(SAMPLE_LISTS)
NEW_TASKS = ("Buy stamps", "Call grandma", "Order new glasses", "Clean the windows", "Pay phone bill", "Buy batteries",
             "Book haircut", "Renew gym pass", "Fix bike light", "Plan weekend trip")
NEW_LISTS = ("Holiday", "Garden", "Reading list", "Gym", "Birthday party", "Moving house", "Wedding", "Christmas gifts")
EMAILS = ("sam@example.com", "lee@example.org", "kim@example.net")


def _index(state: dict[str, Any]) -> dict[int, tuple[int, dict[str, Any]]]:
    """task id -> (list id, task)."""
    return {t["id"]: (l["id"], t) for l in state["lists"] for t in l["tasks"]}


def _names(state: dict[str, Any]) -> dict[int, str]:
    return {l["id"]: l["name"] for l in state["lists"]}


def _unchanged(before: dict[str, Any], after: dict[str, Any], skip: set[int] = frozenset()) -> bool:
    """Same lists, and every task not in `skip` is where it was, exactly as it was."""
    b = {k: v for k, v in _index(before).items() if k not in skip}
    a = {k: v for k, v in _index(after).items() if k not in skip}
    return _names(before) == _names(after) and a == b


def _find_task(state: dict[str, Any], title: str) -> tuple[int, dict[str, Any]]:
    return next((l["id"], t) for l in state["lists"] for t in l["tasks"] if t["title"] == title)


class _TodoTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, *, lists: tuple[str, ...] = (), extra: int | None = None,
              sizes: tuple[int, int] = (3, 7), must: dict[str, list[dict[str, Any]]] | None = None,
              current: str | None = None, show_completed: bool = True) -> dict[str, dict[str, Any]]:
        """Sample lists (including `lists`), put the `must` tasks (partial dicts, title required)
        into their lists, and renumber every id."""
        must = must or {}
        avoid = tuple(t["title"] for ts in must.values() for t in ts)
        others = [n for n in LIST_NAMES if n not in lists]
        names = list(lists) + rng.sample(others, rng.randint(1, 3) if extra is None else extra)
        rng.shuffle(names)
        data = sample_lists(rng, names, sizes=sizes, avoid=avoid)
        for lst in data:
            for t in must.get(lst["name"], []):
                lst["tasks"].insert(rng.randrange(len(lst["tasks"]) + 1), {"done": False, "due": None, **t})
        next_id = 1
        for lst in data:
            lst["id"] = next_id
            next_id += 1
            for t in lst["tasks"]:
                t["id"] = next_id
                next_id += 1
        cur = next((l["id"] for l in data if l["name"] == current), None) if current else rng.choice(data)["id"]
        return {APP: {"lists": data, "current": cur, "show_completed": show_completed, "sort": "manual", "next_id": next_id}}

    def _before(self) -> dict[str, Any]:
        return self.states()[APP]

    # Oracle building blocks ---------------------------------------------------------------

    def _switch(self, o: OracleCtx, name: str) -> Solution:
        if o.element(rid="toolbar_title").text != name:
            yield o.tap(desc="Open navigation drawer")
            yield o.tap(text=name)

    def _add_task(self, o: OracleCtx, title: str) -> Solution:
        yield o.tap(desc="Add")
        yield o.tap(text="New task")
        yield o.type(title, rid="task_title")
        yield o.tap(text="Save")


class TodoAddTask(_TodoTask):
    name = "TodoAddTask"
    template = 'Add a task "{title}" to my "{list}" list.'
    params = {"title": "title of the new task", "list": "the list to add it to"}
    kind = "entry"
    complexity = 3
    max_steps = 14

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(NEW_TASKS), "list": rng.choice(LIST_NAMES)}

    def initial_state(self, rng):
        return self._base(rng, lists=(self.values["list"],))

    def is_successful(self, device, answer):
        before, after = self._before(), device.read_app_state(APP)
        new = {k: v for k, v in _index(after).items() if k not in _index(before)}
        target = next(l["id"] for l in before["lists"] if l["name"] == self.values["list"])
        return float(len(new) == 1 and all(lid == target and t["title"] == self.values["title"] and not t["done"]
                                           for lid, t in new.values()) and _unchanged(before, after, set(new)))

    def solve(self, o):
        yield from self._switch(o, self.values["list"])
        yield from self._add_task(o, self.values["title"])
        yield o.done()


class _OneTaskTask(_TodoTask):
    """A task about one existing task ("title") in one list ("list")."""

    @classmethod
    def sample_params(cls, rng):
        lst = rng.choice(LIST_NAMES)
        return {"list": lst, "title": rng.choice(SAMPLE_LISTS[lst])}

    def initial_state(self, rng):
        return self._base(rng, lists=(self.values["list"],), must={self.values["list"]: [self._seed_task(rng)]})

    def _seed_task(self, rng: random.Random) -> dict[str, Any]:
        return {"title": self.values["title"]}

    def _changed_to(self, device, **changes: Any) -> bool:
        """The target task has exactly `changes` applied, in its list; nothing else changed."""
        before, after = self._before(), device.read_app_state(APP)
        lid, old = _find_task(before, self.values["title"])
        now = _index(after).get(old["id"])
        return now == (lid, {**old, **changes}) and _unchanged(before, after, {old["id"]})


class TodoCompleteTask(_OneTaskTask):
    name = "TodoCompleteTask"
    template = 'Mark "{title}" in my "{list}" list as done.'
    params = {"title": "an unfinished task", "list": "its list"}
    kind = "toggle"
    complexity = 2
    max_steps = 8

    def is_successful(self, device, answer):
        return float(self._changed_to(device, done=True))

    def solve(self, o):
        yield from self._switch(o, self.values["list"])
        yield o.swipe("right", text=self.values["title"], rid="title")
        yield o.done()


class TodoRemoveTask(_OneTaskTask):
    name = "TodoRemoveTask"
    template = 'Remove the task "{title}" from my "{list}" list.'
    params = {"title": "a task", "list": "its list"}
    kind = "delete"
    complexity = 2
    max_steps = 8

    def _seed_task(self, rng):
        return {"title": self.values["title"], "done": rng.random() < 0.3}

    def is_successful(self, device, answer):
        before, after = self._before(), device.read_app_state(APP)
        _, old = _find_task(before, self.values["title"])
        return float(old["id"] not in _index(after) and len(_index(after)) == len(_index(before)) - 1
                     and _unchanged(before, after, {old["id"]}))

    def solve(self, o):
        yield from self._switch(o, self.values["list"])
        yield o.swipe("left", text=self.values["title"], rid="title")
        yield o.done()


class TodoRenameTask(_OneTaskTask):
    name = "TodoRenameTask"
    template = 'In my "{list}" list, rename the task "{title}" to "{new}".'
    params = {"title": "current title", "list": "its list", "new": "the new title"}
    kind = "edit"
    complexity = 3
    max_steps = 14

    @classmethod
    def sample_params(cls, rng):
        return {**super().sample_params(rng), "new": rng.choice(NEW_TASKS)}

    def is_successful(self, device, answer):
        return float(self._changed_to(device, title=self.values["new"]))

    def solve(self, o):
        yield from self._switch(o, self.values["list"])
        yield o.long_press(text=self.values["title"], rid="title")
        yield o.tap(text="Edit")
        yield o.type(self.values["new"], rid="edit_title", clear=True)
        yield o.tap(text="Save")
        yield o.done()


class TodoSetDueDate(_OneTaskTask):
    name = "TodoSetDueDate"
    template = 'Set the due date of "{title}" in my "{list}" list to {day}.'
    params = {"title": "a task", "list": "its list", "date": "ISO date", "day": "the date in words"}
    kind = "edit"
    complexity = 4
    max_steps = 18

    @classmethod
    def sample_params(cls, rng):
        d = TODAY + dt.timedelta(days=rng.randint(1, 45))
        return {**super().sample_params(rng), "date": d.isoformat(), "day": d.strftime("%A, %B %-d, %Y")}

    def _seed_task(self, rng):
        due = None if rng.random() < 0.6 else (TODAY + dt.timedelta(days=rng.randint(-3, 20))).isoformat()
        return {"title": self.values["title"], "due": due if due != self.values["date"] else None}

    def is_successful(self, device, answer):
        return float(self._changed_to(device, due=self.values["date"]))

    def solve(self, o):
        target = dt.date.fromisoformat(self.values["date"])
        yield from self._switch(o, self.values["list"])
        yield o.long_press(text=self.values["title"], rid="title")
        yield o.tap(text="Set due date")
        for _ in range(12):
            shown = dt.datetime.strptime(o.element(rid="month_view").text, "%B %Y").date()
            if (shown.year, shown.month) == (target.year, target.month):
                break
            yield o.tap(desc="Next month" if (shown.year, shown.month) < (target.year, target.month) else "Previous month")
        yield o.tap(desc=target.strftime("%-d %B %Y"))
        yield o.tap(text="OK")
        yield o.done()


class TodoCountOpen(_TodoTask):
    name = "TodoCountOpen"
    template = 'How many unfinished tasks are in my "{list}" list? Answer with a number.'
    params = {"list": "a list"}
    kind = "retrieval"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"list": rng.choice(LIST_NAMES)}

    def initial_state(self, rng):
        # Short lists, so the answer is on one screen, with at least one task still open.
        state = self._base(rng, lists=(self.values["list"],), sizes=(2, 7))
        lst = next(l for l in state[APP]["lists"] if l["name"] == self.values["list"])
        if all(t["done"] for t in lst["tasks"]):
            lst["tasks"][0]["done"] = False
        return state

    def expected(self) -> int:
        lst = next(l for l in self._before()["lists"] if l["name"] == self.values["list"])
        return sum(1 for t in lst["tasks"] if not t["done"])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield from self._switch(o, self.values["list"])
        header = next((e for e in o.obs.elements if e.text.startswith("Completed (")), None)
        rows = [e for e in o.obs.elements if e.resource_id.endswith(":id/title") and e.package == APP
                and (header is None or e.bounds.top < header.bounds.top)]
        yield o.done(str(len(rows)))


class TodoCreateList(_TodoTask):
    name = "TodoCreateList"
    template = 'Create a new to-do list called "{name}".'
    params = {"name": "name of the new list"}
    kind = "entry"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NEW_LISTS)}

    def initial_state(self, rng):
        return self._base(rng)

    def is_successful(self, device, answer):
        before, after = self._before(), device.read_app_state(APP)
        old_ids = set(_names(before))
        new = [l for l in after["lists"] if l["id"] not in old_ids]
        kept = {**after, "lists": [l for l in after["lists"] if l["id"] in old_ids]}
        return float(len(new) == 1 and new[0]["name"] == self.values["name"] and not new[0]["tasks"]
                     and _unchanged(before, kept))

    def solve(self, o):
        yield o.tap(desc="Add")
        yield o.tap(text="Create list")
        yield o.type(self.values["name"], rid="list_name")
        yield o.tap(text="Create")
        yield o.done()


class TodoNewListWithTasks(_TodoTask):
    name = "TodoNewListWithTasks"
    template = 'Create a to-do list called "{name}" with two tasks in it: "{first}" and "{second}".'
    params = {"name": "name of the new list", "first": "a task", "second": "another task"}
    kind = "multi"
    complexity = 5
    max_steps = 26

    @classmethod
    def sample_params(cls, rng):
        first, second = rng.sample(NEW_TASKS, 2)
        return {"name": rng.choice(NEW_LISTS), "first": first, "second": second}

    def initial_state(self, rng):
        return self._base(rng)

    def is_successful(self, device, answer):
        before, after = self._before(), device.read_app_state(APP)
        old_ids = set(_names(before))
        new = [l for l in after["lists"] if l["id"] not in old_ids]
        kept = {**after, "lists": [l for l in after["lists"] if l["id"] in old_ids]}
        return float(len(new) == 1 and new[0]["name"] == self.values["name"]
                     and sorted(t["title"] for t in new[0]["tasks"]) == sorted([self.values["first"], self.values["second"]])
                     and not any(t["done"] for t in new[0]["tasks"]) and _unchanged(before, kept))

    def solve(self, o):
        yield o.tap(desc="Add")
        yield o.tap(text="Create list")
        yield o.type(self.values["name"], rid="list_name")
        yield o.tap(text="Create")
        yield from self._add_task(o, self.values["first"])
        yield from self._add_task(o, self.values["second"])
        yield o.done()


class TodoDeleteList(_TodoTask):
    name = "TodoDeleteList"
    template = 'Delete my "{list}" to-do list.'
    params = {"list": "the list to delete"}
    kind = "delete"
    complexity = 3
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"list": rng.choice(LIST_NAMES)}

    def initial_state(self, rng):
        return self._base(rng, lists=(self.values["list"],), extra=rng.randint(1, 3))

    def is_successful(self, device, answer):
        before, after = self._before(), device.read_app_state(APP)
        kept = {**before, "lists": [l for l in before["lists"] if l["name"] != self.values["list"]]}
        return float(len(after["lists"]) == len(before["lists"]) - 1 and _unchanged(kept, after))

    def solve(self, o):
        yield from self._switch(o, self.values["list"])
        yield o.tap(desc="Delete list")
        yield o.tap(text="Delete")
        yield o.done()


class TodoShowCompleted(_TodoTask):
    name = "TodoShowCompleted"
    template = "{verb} completed tasks in To-do."
    params = {"verb": "Show or Hide"}
    kind = "toggle"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"verb": rng.choice(["Show", "Hide"])}

    def initial_state(self, rng):
        return self._base(rng, show_completed=self.values["verb"] == "Hide")

    def is_successful(self, device, answer):
        before, after = self._before(), device.read_app_state(APP)
        return float(after["show_completed"] == (self.values["verb"] == "Show") and after["sort"] == before["sort"]
                     and _unchanged(before, after))

    def solve(self, o):
        yield o.tap(desc="Open navigation drawer")
        yield o.tap(text="Settings")
        yield o.tap(rid="show_completed")
        yield o.done()


class TodoShareList(_TodoTask):
    name = "TodoShareList"
    template = 'Share my "{list}" to-do list with {email}.'
    params = {"list": "a list", "email": "who to share it with"}
    kind = "infeasible"
    complexity = 1
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"list": rng.choice(LIST_NAMES), "email": rng.choice(EMAILS)}

    def initial_state(self, rng):
        return self._base(rng, lists=(self.values["list"],))

    def is_successful(self, device, answer):
        return 0.0  # To-do lists cannot be shared; only declaring the task infeasible succeeds.

    def solve(self, o):
        yield from self._switch(o, self.values["list"])
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    TodoAddTask, TodoCompleteTask, TodoRemoveTask, TodoRenameTask, TodoSetDueDate, TodoCountOpen, TodoCreateList,
    TodoNewListWithTasks, TodoDeleteList, TodoShowCompleted, TodoShareList,
)
