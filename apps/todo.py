"""To-do (com.example.todo), an unseen app: task lists switched through the navigation drawer,
"New task" and "Create list" offered in a bottom sheet behind an icon-only button, swipe a task
right to complete it or left to remove it, long-press a task to edit it or set its due date,
and a confirmation before a whole list is deleted."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import Route, SimApp
from coadapt.android_env.sim.widgets import (
    BottomSheet, Dialog, Drawer, DrawerItem, EditText, Header, IconButton, LayoutCtx, ListItem, ListView, MenuItem,
    Screen, Spinner, Switch, Toolbar, date_picker,
)

SORTS = {"manual": "My order", "due": "Due date"}
SAMPLE_LISTS: dict[str, tuple[str, ...]] = {
    "My tasks": ("Call the bank", "Book dentist appointment", "Renew passport", "Pay rent", "Reply to Anna",
                 "Back up laptop", "Return library books", "Schedule car service"),
    "Groceries": ("Buy milk", "Eggs", "Sourdough bread", "Bananas", "Coffee beans", "Olive oil", "Tomatoes",
                  "Greek yogurt", "Rice"),
    "Work": ("Send weekly report", "Prepare slides for Monday", "Review pull request", "Update project plan",
             "Book meeting room", "Email the client", "Submit expenses"),
    "Home": ("Fix the leaking tap", "Water the plants", "Clean the oven", "Change bed sheets", "Replace light bulb",
             "Take out recycling", "Vacuum the stairs"),
    "Errands": ("Pick up dry cleaning", "Post the parcel", "Buy birthday card", "Drop off donations", "Get keys cut",
                "Collect prescription"),
    "Packing": ("Passport", "Phone charger", "Sunglasses", "Swimsuit", "Toothbrush", "Travel adapter", "Hiking boots"),
}
TODAY = dt.date(2026, 10, 15)
"""The default device clock's date (SimConfig.start_time)."""


@dataclass
class Task:
    id: int
    title: str
    done: bool = False
    due: str | None = None  # ISO yyyy-mm-dd


@dataclass
class TaskList:
    id: int
    name: str
    tasks: list[Task] = field(default_factory=list)


@dataclass
class TodoState:
    lists: list[TaskList] = field(default_factory=lambda: [TaskList(1, "My tasks")])
    current: int = 1
    show_completed: bool = True
    sort: str = "manual"
    next_id: int = 2


def sample_lists(rng: random.Random, names: list[str], *, sizes: tuple[int, int] = (3, 7), done_rate: float = 0.3,
                 due_rate: float = 0.35, avoid: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Lists called `names` (keys of SAMPLE_LISTS), each with a random number of its sample tasks
    (none titled as in `avoid`), some done, some with due dates; ids are unique across lists."""
    out, next_id = [], 1
    for name in names:
        list_id = next_id
        next_id += 1
        pool = [t for t in SAMPLE_LISTS[name] if t not in avoid]
        tasks = []
        for title in rng.sample(pool, min(len(pool), rng.randint(*sizes))):
            due = None
            if rng.random() < due_rate:
                due = (TODAY + dt.timedelta(days=rng.randint(-4, 30))).isoformat()
            tasks.append({"id": next_id, "title": title, "done": rng.random() < done_rate, "due": due})
            next_id += 1
        out.append({"id": list_id, "name": name, "tasks": tasks})
    return out


def due_text(due: str | None, today: dt.date) -> str:
    """'Due Fri, Oct 16', 'Due today' or 'Overdue · Mon, Oct 12' ('' when there is no due date)."""
    if not due:
        return ""
    d = dt.date.fromisoformat(due)
    if d == today:
        return "Due today"
    label = d.strftime("%a, %b %-d") + (d.strftime(", %Y") if d.year != today.year else "")
    return f"Overdue · {label}" if d < today else f"Due {label}"


class TodoApp(SimApp):
    package = "com.example.todo"
    label = "To-do"
    icon = "check"
    color = "#512DA8"

    def reset_state(self) -> None:
        self.state = TodoState()
        self.text = ""  # what is typed in the open dialog's field
        self.picker: dict = {}

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        lists = [TaskList(l["id"], l["name"], [Task(**t) for t in l.get("tasks", [])]) for l in data.get("lists", [])]
        ids = [l.id for l in lists] + [t.id for l in lists for t in l.tasks]
        current = data.get("current", lists[0].id if lists else 0)
        self.state = TodoState(lists=lists, current=current if any(l.id == current for l in lists) else (lists[0].id if lists else 0),
                               show_completed=bool(data.get("show_completed", True)), sort=data.get("sort", "manual"),
                               next_id=data.get("next_id", max(ids, default=0) + 1))
        self.stack = [Route("main")]

    # ------------------------------------------------------------------ actions

    def _list(self) -> TaskList | None:
        return next((l for l in self.state.lists if l.id == self.state.current), None)

    def _new_id(self) -> int:
        self.state.next_id += 1
        return self.state.next_id - 1

    def _set_text(self, v: str) -> None:
        self.text = v

    def _text_dialog(self, title: str, field_id: str, hint: str, value: str, ok: str, on_ok) -> None:
        """A dialog with one text field; `on_ok(text)` returns False to keep the dialog open."""
        self.text = value

        def submit() -> None:
            if not self.text.strip():
                self.toast("Type a name first")
                self.dialog(lambda: build())  # a new builder, so the button's close-on-click leaves it open
                return
            on_ok(self.text.strip())

        def build() -> Dialog:
            return Dialog(title, body=[EditText(field_id, self.text, self._set_text, hint=hint)],
                          buttons=[(ok, submit), ("Cancel", lambda: None)])

        self.dialog(build)
        self.focus(field_id)

    def _add_sheet(self) -> None:
        self.sheet(lambda: BottomSheet([
            MenuItem("New task", self._new_task, icon="add"),
            MenuItem("Create list", self._new_list, icon="list"),
        ]))

    def _new_task(self) -> None:
        def add(title: str) -> None:
            lst = self._list()
            if lst is not None:
                lst.tasks.append(Task(self._new_id(), title))

        self._text_dialog("New task", "task_title", "Task title", "", "Save", add)

    def _new_list(self) -> None:
        def create(name: str) -> None:
            lst = TaskList(self._new_id(), name)
            self.state.lists.append(lst)
            self.state.current = lst.id
            self.route.scroll.clear()

        self._text_dialog("Create list", "list_name", "List name", "", "Create", create)

    def _confirm_delete_list(self) -> None:
        lst = self._list()
        if lst is None:
            return
        if len(self.state.lists) == 1:
            self.toast("You need at least one list")
            return
        n = len(lst.tasks)

        def delete() -> None:
            self.state.lists = [l for l in self.state.lists if l.id != lst.id]
            self.state.current = self.state.lists[0].id
            self.route.scroll.clear()
            self.snackbar(f"Deleted “{lst.name}”")

        self.dialog(lambda: Dialog(f"Delete list “{lst.name}”?",
                                   f"Its {n} task{'' if n == 1 else 's'} will be deleted too. This can't be undone.",
                                   buttons=[("Delete", delete), ("Cancel", lambda: None)]))

    def _toggle(self, t: Task) -> None:
        t.done = not t.done
        if t.done:
            self.snackbar("Task completed", "Undo", lambda: setattr(t, "done", False))

    def _remove(self, lst: TaskList, t: Task) -> None:
        i = lst.tasks.index(t)
        lst.tasks.remove(t)

        def undo() -> None:
            if t not in lst.tasks:
                lst.tasks.insert(min(i, len(lst.tasks)), t)

        self.snackbar("Task removed", "Undo", undo)

    def _task_menu(self, lst: TaskList, t: Task) -> None:
        def run(action) -> Any:
            def go() -> None:
                self.route.dialog = None
                action()
            return go

        def edit() -> None:
            self._text_dialog("Edit task", "edit_title", "Task title", t.title, "Save", lambda v: setattr(t, "title", v))

        def due() -> None:
            self.picker = {}
            start = dt.date.fromisoformat(t.due) if t.due else self.now().date()
            self.dialog(lambda: date_picker("Due date", start, lambda d: setattr(t, "due", d.isoformat()), self.picker))

        rows = [
            ListItem("Edit", on_click=run(edit), icon="edit", id="menu_edit"),
            ListItem("Set due date", on_click=run(due), icon="calendar", id="menu_due"),
        ]
        if t.due:
            rows.append(ListItem("Clear due date", on_click=run(lambda: setattr(t, "due", None)), icon="close", id="menu_clear_due"))
        rows.append(ListItem("Mark as not done" if t.done else "Mark as done", on_click=run(lambda: self._toggle(t)),
                             icon="check", id="menu_done"))
        rows.append(ListItem("Remove", on_click=run(lambda: self._remove(lst, t)), icon="delete", id="menu_remove"))
        self.dialog(lambda: Dialog(t.title, body=rows, buttons=[("Cancel", lambda: None)]))

    def _go(self, dest: str, list_id: int | None = None) -> None:
        self.stack = [Route("main")] if dest == "main" else [Route("main"), Route(dest)]
        if list_id is not None:
            self.state.current = list_id

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        if self.route.name == "settings":
            return self._settings()
        return self._main()

    def _drawer(self, on_settings: bool) -> Drawer:
        items = [DrawerItem(l.name, lambda l=l: self._go("main", l.id), icon="list",
                            selected=not on_settings and l.id == self.state.current) for l in self.state.lists]
        items.append(DrawerItem("Settings", lambda: self._go("settings"), icon="settings", selected=on_settings))
        return Drawer("To-do", items)

    def _row(self, lst: TaskList, t: Task, today: dt.date) -> ListItem:
        return ListItem(t.title, due_text(t.due, today), id="task", strike=t.done,
                        on_long_click=lambda: self._task_menu(lst, t),
                        on_swipe={"right": lambda: self._toggle(t), "left": lambda: self._remove(lst, t)})

    def _main(self) -> Screen:
        lst = self._list()
        today = self.now().date()
        items: list[Any] = []
        if lst is not None:
            open_tasks = [t for t in lst.tasks if not t.done]
            if self.state.sort == "due":
                open_tasks.sort(key=lambda t: (t.due is None, t.due or ""))
            done = [t for t in lst.tasks if t.done]
            items = [self._row(lst, t, today) for t in open_tasks]
            if done and self.state.show_completed:
                items.append(Header(f"Completed ({len(done)})"))
                items.extend(self._row(lst, t, today) for t in done)
        return Screen(
            toolbar=Toolbar(lst.name if lst else "To-do", nav="menu", on_nav=lambda: setattr(self.route, "drawer_open", True),
                            actions=[IconButton("add", "Add", self._add_sheet, id="add"),
                                     IconButton("delete", "Delete list", self._confirm_delete_list, id="delete_list")]),
            body=[ListView("tasks", items, empty_text="Nothing to do here.")],
            drawer=self._drawer(False),
        )

    def _settings(self) -> Screen:
        labels = {v: k for k, v in SORTS.items()}
        return Screen(
            toolbar=Toolbar("Settings", nav="menu", on_nav=lambda: setattr(self.route, "drawer_open", True)),
            body=[
                Switch("Show completed tasks", self.state.show_completed, lambda v: setattr(self.state, "show_completed", v),
                       id="show_completed", summary="List finished tasks under each list"),
                Spinner("sort", list(labels), SORTS[self.state.sort], lambda v: setattr(self.state, "sort", labels[v]),
                        label="Sort tasks by"),
            ],
            drawer=self._drawer(True),
        )


APP = TodoApp
GROUP = "unseen"
