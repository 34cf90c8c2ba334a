"""Expenses (com.example.expenses), an unseen app: a long, month-grouped list of expenses.
"Log expense" hides in the toolbar's overflow menu, a row is deleted by swiping it left and
confirming, and the summary (category totals, budget) and settings (currency, budget) are
reached only through the navigation drawer."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import Route, SimApp
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, Card, Dialog, Drawer, DrawerItem, EditText, Header, IconButton, KeyValue, LayoutCtx, ListItem,
    ListView, MenuItem, Row, Screen, Spinner, Switch, Text, Toolbar, date_picker,
)

CATEGORIES = ("Food", "Groceries", "Transport", "Shopping", "Bills", "Entertainment", "Health")
CURRENCIES = {"USD": ("$", "US dollar ($)"), "EUR": ("€", "Euro (€)"), "GBP": ("£", "British pound (£)")}
TODAY = dt.date(2026, 10, 15)
"""The default device clock's date (SimConfig.start_time); sample data ends here."""

# Notes per category, and what such an expense usually costs (low, high).
SAMPLE_NOTES: dict[str, tuple[tuple[str, ...], tuple[float, float]]] = {
    "Food": (("Lunch at Noodle Bar", "Coffee with Sam", "Pizza night", "Sushi takeaway", "Bakery breakfast",
              "Burrito lunch", "Ramen dinner", "Smoothie", "Thai takeaway", "Bagels", "Team lunch", "Ice cream"), (4, 45)),
    "Groceries": (("FreshMart weekly shop", "Farmers market", "Corner shop milk", "Costco run", "Organic veg box",
                   "Bread and cheese", "Fruit stand", "Spice shop"), (8, 140)),
    "Transport": (("Taxi to airport", "Monthly bus pass", "Train to Boston", "Parking downtown", "Fuel refill",
                   "Bike repair", "Ride home", "Toll road"), (3, 95)),
    "Shopping": (("Running shoes", "Birthday gift", "Phone case", "Winter jacket", "Books", "Desk lamp",
                  "Kitchen towels", "Headphones"), (9, 180)),
    "Bills": (("Electricity bill", "Internet bill", "Phone plan", "Water bill", "Gym membership",
               "Streaming subscription", "Renter's insurance"), (12, 120)),
    "Entertainment": (("Cinema tickets", "Concert tickets", "Museum entry", "Bowling night", "Board game",
                       "Escape room", "Comedy show"), (8, 90)),
    "Health": (("Pharmacy", "Dentist co-pay", "Vitamins", "Eye drops", "Physio session", "Sunscreen"), (5, 80)),
}


@dataclass
class Expense:
    id: int
    amount: float
    category: str
    date: str  # ISO yyyy-mm-dd
    note: str


@dataclass
class ExpensesState:
    expenses: list[Expense] = field(default_factory=list)
    currency: str = "USD"
    budget: float = 800.0
    alerts: bool = False
    next_id: int = 1


@dataclass
class _Draft:
    expense_id: int | None
    amount: str = ""
    category: str = "Food"
    date: dt.date = TODAY
    note: str = ""


def money(amount: float, currency: str = "USD") -> str:
    """"$1,234.50": the amount as the app shows it."""
    return f"{CURRENCIES.get(currency, CURRENCIES['USD'])[0]}{amount:,.2f}"


def parse_amount(text: str) -> float | None:
    """The amount typed in a field ("12.5", "$12.50", "1,200"), or None if it is not one."""
    t = text.strip().replace(",", "")
    for sym, _ in CURRENCIES.values():
        t = t.replace(sym, "")
    try:
        v = round(float(t.strip()), 2)
    except ValueError:
        return None
    return v if 0 < v < 1_000_000 else None


def sample_expenses(rng: random.Random, n: int, *, start: dt.date = dt.date(2026, 8, 1), end: dt.date = TODAY,
                    avoid: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """`n` plausible expenses with distinct notes (none in `avoid`) dated from `start` to `end`,
    as state dicts with ids 1..n."""
    pool = [(cat, note) for cat, (notes, _) in SAMPLE_NOTES.items() for note in notes if note not in avoid]
    picks = rng.sample(pool, n)
    days = (end - start).days
    out = []
    for i, (cat, note) in enumerate(picks):
        lo, hi = SAMPLE_NOTES[cat][1]
        amount = round(rng.uniform(lo, hi) * 4) / 4 if rng.random() < 0.5 else round(rng.uniform(lo, hi), 2)
        date = start + dt.timedelta(days=rng.randint(0, days))
        out.append({"id": i + 1, "amount": round(amount, 2), "category": cat, "date": date.isoformat(), "note": note})
    return out


def month_totals(expenses: list[dict[str, Any]], year: int, month: int) -> dict[str, float]:
    """Category -> total spent in that month (only categories with spending)."""
    totals: dict[str, float] = {}
    for e in expenses:
        d = dt.date.fromisoformat(e["date"])
        if (d.year, d.month) == (year, month):
            totals[e["category"]] = round(totals.get(e["category"], 0.0) + e["amount"], 2)
    return totals


def _count(n: int) -> str:
    return f"{n} expense" if n == 1 else f"{n} expenses"


class ExpensesApp(SimApp):
    package = "com.example.expenses"
    label = "Expenses"
    icon = "money"
    color = "#0B8043"

    def reset_state(self) -> None:
        self.state = ExpensesState()
        self.draft: _Draft | None = None
        self.picker: dict = {}
        self.budget_text = ""

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        expenses = [Expense(**e) for e in data.get("expenses", [])]
        self.state = ExpensesState(
            expenses=expenses, currency=data.get("currency", "USD"), budget=float(data.get("budget", 800.0)),
            alerts=bool(data.get("alerts", False)),
            next_id=data.get("next_id", max((e.id for e in expenses), default=0) + 1))
        self.draft = None
        self.stack = [Route("main")]

    # ------------------------------------------------------------------ actions

    def _fmt(self, amount: float) -> str:
        return money(amount, self.state.currency)

    def _find(self, expense_id: int | None) -> Expense | None:
        return next((e for e in self.state.expenses if e.id == expense_id), None)

    def _today(self) -> dt.date:
        return self.now().date()

    def _open_drawer(self) -> None:
        self.route.drawer_open = True

    def _go(self, dest: str) -> None:
        """Drawer navigation: the expense list is the start destination, the others sit on it."""
        self.stack = [Route("main")] if dest == "main" else [Route("main"), Route(dest)]
        if dest == "summary":
            t = self._today()
            self.route.params["month"] = (t.year, t.month)

    def _new(self) -> None:
        self.draft = _Draft(None, date=self._today())
        self.push("form")
        self.focus("amount")

    def _edit(self, e: Expense) -> None:
        self.draft = _Draft(e.id, f"{e.amount:.2f}", e.category, dt.date.fromisoformat(e.date), e.note)
        self.push("form")

    def _save(self) -> None:
        d = self.draft
        if d is None:
            return
        amount = parse_amount(d.amount)
        if amount is None:
            self.toast("Enter an amount")
            return
        if d.expense_id is None:
            self.state.expenses.append(Expense(self.state.next_id, amount, d.category, d.date.isoformat(), d.note.strip()))
            self.state.next_id += 1
            self.toast("Expense logged")
        else:
            e = self._find(d.expense_id)
            if e is not None:
                e.amount, e.category, e.date, e.note = amount, d.category, d.date.isoformat(), d.note.strip()
        self.draft = None
        self.pop()

    def _discard(self) -> None:
        self.draft = None
        self.pop()

    def _confirm_delete(self, e: Expense, leave: bool = False) -> None:
        def delete() -> None:
            self.state.expenses = [x for x in self.state.expenses if x.id != e.id]
            if leave:
                self.pop()
            self.snackbar("Expense deleted")

        self.dialog(lambda: Dialog("Delete expense?", f"“{e.note or e.category}” ({self._fmt(e.amount)}) will be deleted.",
                                   buttons=[("Delete", delete), ("Cancel", lambda: None)]))

    def _edit_budget(self) -> None:
        self.budget_text = f"{self.state.budget:.2f}"

        def set_text(v: str) -> None:
            self.budget_text = v

        def apply() -> None:
            v = parse_amount(self.budget_text)
            if v is None:
                self.toast("Enter an amount")
                return
            self.state.budget = v

        self.dialog(lambda: Dialog("Monthly budget", "How much do you plan to spend each month?",
                                   body=[EditText("budget_input", self.budget_text, set_text, hint="0.00", label="Budget")],
                                   buttons=[("Set", apply), ("Cancel", lambda: None)]))
        self.focus("budget_input")

    def on_back(self) -> bool:
        if self.route.name == "form" and not self.route.has_overlay():
            self._discard()
            return True
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        name = self.route.name
        if name == "form" and self.draft is not None:
            return self._form()
        if name == "detail" and self._find(self.route.params.get("id")) is not None:
            return self._detail(self._find(self.route.params["id"]))  # type: ignore[arg-type]
        if name == "summary":
            return self._summary()
        if name == "settings":
            return self._settings()
        return self._list()

    def _drawer(self, current: str) -> Drawer:
        return Drawer("Expenses", [
            DrawerItem("Expenses", lambda: self._go("main"), icon="list", selected=current == "main"),
            DrawerItem("Summary", lambda: self._go("summary"), icon="info", selected=current == "summary"),
            DrawerItem("Settings", lambda: self._go("settings"), icon="settings", selected=current == "settings"),
        ])

    def _list(self) -> Screen:
        expenses = sorted(self.state.expenses, key=lambda e: (e.date, e.id), reverse=True)
        items: list[Any] = []
        month = None
        for e in expenses:
            d = dt.date.fromisoformat(e.date)
            if (d.year, d.month) != month:
                month = (d.year, d.month)
                items.append(Header(d.strftime("%B %Y")))
            items.append(ListItem(
                e.note or e.category, f"{e.category} · {d.strftime('%a, %b %-d')}", icon="label", id="expense",
                trailing=Text(self._fmt(e.amount), "subtitle", id="amount", pad=8),
                on_click=lambda e=e: self.push("detail", id=e.id),
                on_swipe={"left": lambda e=e: self._confirm_delete(e)}))
        return Screen(
            toolbar=Toolbar("Expenses", nav="menu", on_nav=self._open_drawer,
                            menu=[MenuItem("Log expense", self._new),
                                  MenuItem("Help & feedback", lambda: self.toast("Help isn't available offline"))]),
            body=[ListView("expenses_list", items, empty_text="No expenses yet.")],
            drawer=self._drawer("main"),
        )

    def _detail(self, e: Expense) -> Screen:
        d = dt.date.fromisoformat(e.date)
        return Screen(
            toolbar=Toolbar("Expense", nav="back", on_nav=self.pop,
                            actions=[IconButton("edit", "Edit expense", lambda: self._edit(e), id="edit"),
                                     IconButton("delete", "Delete expense", lambda: self._confirm_delete(e, leave=True), id="delete")]),
            body=[
                Text(self._fmt(e.amount), "display", id="amount", vpad=16),
                KeyValue("Category", e.category, id="category"),
                KeyValue("Date", d.strftime("%A, %B %-d, %Y"), id="date"),
                KeyValue("Note", e.note, id="note"),
            ],
        )

    def _form(self) -> Screen:
        d = self.draft
        assert d is not None
        existing = d.expense_id is not None

        def set_amount(v: str) -> None:
            d.amount = v

        def set_category(v: str) -> None:
            d.category = v

        def set_note(v: str) -> None:
            d.note = v

        def set_date(v: dt.date) -> None:
            d.date = v

        def pick_date() -> None:
            self.picker = {}
            self.dialog(lambda: date_picker("Date", d.date, set_date, self.picker))

        return Screen(
            toolbar=Toolbar("Edit expense" if existing else "Log expense", nav="close", on_nav=self._discard),
            body=[
                EditText("amount", d.amount, set_amount, hint="0.00", label=f"Amount ({CURRENCIES[self.state.currency][0]})"),
                Spinner("category", CATEGORIES, d.category, set_category, label="Category"),
                ListItem("Date", d.date.strftime("%a, %b %-d, %Y"), icon="calendar", on_click=pick_date, id="date"),
                EditText("note", d.note, set_note, hint="What was it for?", label="Note"),
                ButtonRow([Button("Discard", self._discard, kind="text", id="discard"), Button("Save", self._save, id="save")]),
            ],
        )

    def _summary(self) -> Screen:
        year, month = self.route.params.get("month", (self._today().year, self._today().month))

        def move(delta: int) -> None:
            m = month + delta
            self.route.params["month"] = (year + (m - 1) // 12, (m - 1) % 12 + 1)

        data = [asdict(e) for e in self.state.expenses]
        totals = month_totals(data, year, month)
        spent = round(sum(totals.values()), 2)
        left = round(self.state.budget - spent, 2)
        rows: list[Any] = [
            ListItem(cat, _count(sum(1 for e in data if e["category"] == cat and e["date"][:7] == f"{year:04d}-{month:02d}")),
                     icon="label", trailing=Text(self._fmt(totals[cat]), "subtitle", id="category_total", pad=8))
            for cat in sorted(totals, key=lambda c: -totals[c])
        ]
        return Screen(
            toolbar=Toolbar("Summary", nav="menu", on_nav=self._open_drawer),
            body=[
                Row([IconButton("chevron_left", "Previous month", lambda: move(-1), id="prev_month"),
                     Text(dt.date(year, month, 1).strftime("%B %Y"), "subtitle", align="center", id="month", vpad=12),
                     IconButton("chevron_right", "Next month", lambda: move(1), id="next_month")], pad=8),
                Card([KeyValue("Monthly budget", self._fmt(self.state.budget), id="budget"),
                      KeyValue("Spent", self._fmt(spent), id="spent"),
                      KeyValue("Remaining" if left >= 0 else "Over budget by", self._fmt(abs(left)), id="remaining")]),
                Header("By category"),
                *(rows or [Text("No expenses this month", "body2", id="empty")]),
            ],
            drawer=self._drawer("summary"),
        )

    def _settings(self) -> Screen:
        labels = {v[1]: k for k, v in CURRENCIES.items()}

        def set_currency(label: str) -> None:
            self.state.currency = labels[label]

        def set_alerts(v: bool) -> None:
            self.state.alerts = v

        return Screen(
            toolbar=Toolbar("Settings", nav="menu", on_nav=self._open_drawer),
            body=[
                Spinner("currency", list(labels), CURRENCIES[self.state.currency][1], set_currency, label="Currency"),
                ListItem("Monthly budget", self._fmt(self.state.budget), on_click=self._edit_budget, id="budget"),
                Switch("Budget alerts", self.state.alerts, set_alerts, id="alerts", summary="Warn me at 80% of the budget"),
            ],
            drawer=self._drawer("settings"),
        )


APP = ExpensesApp
GROUP = "unseen"
