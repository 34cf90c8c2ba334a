"""Tasks on Expenses (com.example.expenses, unseen): logging through the overflow menu,
swipe-to-delete with confirmation, scrolling a long list, and the drawer-only summary and settings."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from coadapt.apps.expenses import CATEGORIES, CURRENCIES, SAMPLE_NOTES, TODAY, money, month_totals, sample_expenses

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.expenses"
NOTE_CATEGORY = {note: cat for cat, (notes, _) in SAMPLE_NOTES.items() for note in notes}
MONTHS = {(2026, 9): "September 2026", (2026, 10): "October 2026"}


def _expenses(device) -> list[dict[str, Any]]:
    return device.read_app_state(APP)["expenses"]


def _amount(rng: random.Random, lo: float = 5, hi: float = 120) -> str:
    return f"{round(rng.uniform(lo, hi), 2):.2f}"


def _others_unchanged(before: list[dict[str, Any]], after: list[dict[str, Any]], skip: set[int]) -> bool:
    """Every expense not in `skip` is still there, exactly as it was, and nothing was added."""
    b = {e["id"]: e for e in before if e["id"] not in skip}
    a = {e["id"]: e for e in after if e["id"] not in skip}
    return a == b


def _target(state: dict[str, Any], note: str) -> dict[str, Any]:
    return next(e for e in state["expenses"] if e["note"] == note)


class _ExpensesTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, n: int, *, must: tuple[dict[str, Any], ...] = (), avoid: tuple[str, ...] = (),
              budget: float | None = None, currency: str = "USD", alerts: bool = False) -> dict[str, dict[str, Any]]:
        """`n` sampled expenses plus the `must` ones (partial dicts: note required) at random places."""
        expenses = sample_expenses(rng, n, avoid=tuple(m["note"] for m in must) + avoid)
        for m in must:
            lo, hi = SAMPLE_NOTES[NOTE_CATEGORY.get(m["note"], "Food")][1]
            full = {"amount": round(rng.uniform(lo, hi), 2), "category": NOTE_CATEGORY.get(m["note"], "Food"),
                    "date": (TODAY - dt.timedelta(days=rng.randint(0, 70))).isoformat(), **m}
            expenses.insert(rng.randrange(len(expenses) + 1), full)
        for i, e in enumerate(expenses):
            e["id"] = i + 1
        if budget is None:
            budget = float(rng.choice([600, 750, 800, 900, 1000, 1200]))
        return {APP: {"expenses": expenses, "currency": currency, "budget": budget, "alerts": alerts, "next_id": len(expenses) + 1}}

    @staticmethod
    def _old_date(rng: random.Random) -> str:
        """A date far enough back that the row sits below the first screenful."""
        return (dt.date(2026, 8, 3) + dt.timedelta(days=rng.randint(0, 38))).isoformat()

    # Oracle building blocks ---------------------------------------------------------------

    def _drawer_to(self, o: OracleCtx, dest: str) -> Solution:
        yield o.tap(desc="Open navigation drawer")
        yield o.tap(text=dest)

    def _open_expense(self, o: OracleCtx, note: str) -> Solution:
        yield from o.scroll_to(text=note, rid="title")
        yield o.tap(text=note, rid="title")

    def _summary_month(self, o: OracleCtx, ym: tuple[int, int]) -> Solution:
        yield from self._drawer_to(o, "Summary")
        for _ in range(12):
            shown = o.element(rid="month").text
            if shown == MONTHS[ym]:
                return
            shown_ym = dt.datetime.strptime(shown, "%B %Y")
            yield o.tap(desc="Previous month" if (shown_ym.year, shown_ym.month) > ym else "Next month")


class ExpensesLogExpense(_ExpensesTask):
    name = "ExpensesLogExpense"
    template = 'Log a {category} expense of {shown} with the note "{note}".'
    params = {"category": "category of the expense", "amount": "amount, e.g. 23.40", "shown": "the amount in dollars",
              "note": "note of the new expense"}
    kind = "entry"
    complexity = 3
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        note = rng.choice(sorted(NOTE_CATEGORY))
        amount = _amount(rng, *SAMPLE_NOTES[NOTE_CATEGORY[note]][1])
        return {"category": NOTE_CATEGORY[note], "amount": amount, "shown": money(float(amount)), "note": note}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(18, 28), avoid=(self.values["note"],))

    def is_successful(self, device, answer):
        before = self.states()[APP]["expenses"]
        after = _expenses(device)
        new = [e for e in after if e["id"] not in {b["id"] for b in before}]
        return float(len(new) == 1 and new[0]["note"] == self.values["note"] and new[0]["category"] == self.values["category"]
                     and abs(new[0]["amount"] - float(self.values["amount"])) < 0.005
                     and _others_unchanged(before, after, {new[0]["id"]}))

    def solve(self, o):
        yield o.tap(desc="More options")
        yield o.tap(text="Log expense")
        yield o.type(self.values["amount"], rid="amount")
        yield o.tap(rid="category")
        yield o.tap(text=self.values["category"], rid="title")
        yield o.type(self.values["note"], rid="note")
        yield o.tap(text="Save")
        yield o.done()


class ExpensesDeleteExpense(_ExpensesTask):
    name = "ExpensesDeleteExpense"
    template = 'Delete the expense "{note}".'
    params = {"note": "note of the expense to delete"}
    kind = "delete"
    complexity = 3
    max_steps = 18

    @classmethod
    def sample_params(cls, rng):
        return {"note": rng.choice(sorted(NOTE_CATEGORY))}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(22, 30), must=({"note": self.values["note"], "date": self._old_date(rng)},))

    def is_successful(self, device, answer):
        before = self.states()[APP]["expenses"]
        after = _expenses(device)
        target = _target(self.states()[APP], self.values["note"])
        return float(all(e["note"] != self.values["note"] for e in after) and len(after) == len(before) - 1
                     and _others_unchanged(before, after, {target["id"]}))

    def solve(self, o):
        yield from o.scroll_to(text=self.values["note"], rid="title")
        yield o.swipe("left", text=self.values["note"], rid="title")
        yield o.tap(text="Delete")
        yield o.done()


class ExpensesEditAmount(_ExpensesTask):
    name = "ExpensesEditAmount"
    template = 'Change the amount of the expense "{note}" to {shown}.'
    params = {"note": "note of the expense", "amount": "new amount, e.g. 23.40", "shown": "the new amount in dollars"}
    kind = "edit"
    complexity = 3
    max_steps = 20

    @classmethod
    def sample_params(cls, rng):
        note = rng.choice(sorted(NOTE_CATEGORY))
        amount = _amount(rng, *SAMPLE_NOTES[NOTE_CATEGORY[note]][1])
        return {"note": note, "amount": amount, "shown": money(float(amount))}

    def initial_state(self, rng):
        old = float(self.values["amount"]) + rng.choice([-3.5, -1.25, 2.0, 4.75, 10.0])
        return self._base(rng, rng.randint(22, 30), must=({"note": self.values["note"], "date": self._old_date(rng),
                                                          "amount": round(max(1.0, old), 2)},))

    def is_successful(self, device, answer):
        before = self.states()[APP]["expenses"]
        after = _expenses(device)
        old = _target(self.states()[APP], self.values["note"])
        now = [e for e in after if e["id"] == old["id"]]
        return float(len(now) == 1 and abs(now[0]["amount"] - float(self.values["amount"])) < 0.005
                     and {**now[0], "amount": old["amount"]} == old and _others_unchanged(before, after, {old["id"]}))

    def solve(self, o):
        yield from self._open_expense(o, self.values["note"])
        yield o.tap(desc="Edit expense")
        yield o.type(self.values["amount"], rid="amount", clear=True)
        yield o.tap(text="Save")
        yield o.done()


class ExpensesFixExpense(_ExpensesTask):
    name = "ExpensesFixExpense"
    template = 'The expense "{note}" was filed wrong: change its category to {category} and its amount to {shown}.'
    params = {"note": "note of the expense", "category": "the right category", "amount": "the right amount",
              "shown": "the right amount in dollars"}
    kind = "multi"
    complexity = 4
    max_steps = 24

    @classmethod
    def sample_params(cls, rng):
        note = rng.choice(sorted(NOTE_CATEGORY))
        category = rng.choice([c for c in CATEGORIES if c != NOTE_CATEGORY[note]])
        amount = _amount(rng, 6, 90)
        return {"note": note, "category": category, "amount": amount, "shown": money(float(amount))}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(22, 30), must=({"note": self.values["note"], "date": self._old_date(rng),
                                                          "category": NOTE_CATEGORY[self.values["note"]],
                                                          "amount": round(float(self.values["amount"]) + 5.5, 2)},))

    def is_successful(self, device, answer):
        before = self.states()[APP]["expenses"]
        after = _expenses(device)
        old = _target(self.states()[APP], self.values["note"])
        now = [e for e in after if e["id"] == old["id"]]
        return float(len(now) == 1 and now[0]["category"] == self.values["category"]
                     and abs(now[0]["amount"] - float(self.values["amount"])) < 0.005
                     and now[0]["date"] == old["date"] and now[0]["note"] == old["note"]
                     and _others_unchanged(before, after, {old["id"]}))

    def solve(self, o):
        yield from self._open_expense(o, self.values["note"])
        yield o.tap(desc="Edit expense")
        yield o.type(self.values["amount"], rid="amount", clear=True)
        yield o.tap(rid="category")
        yield o.tap(text=self.values["category"], rid="title")
        yield o.tap(text="Save")
        yield o.done()


class ExpensesCategoryTotal(_ExpensesTask):
    name = "ExpensesCategoryTotal"
    template = "How much did I spend on {category} in {month}? Answer with the amount."
    params = {"category": "a category", "month": "a month, e.g. September 2026"}
    kind = "retrieval"
    complexity = 3
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        return {"category": rng.choice(CATEGORIES), "month": rng.choice(sorted(MONTHS.values()))}

    def _ym(self) -> tuple[int, int]:
        return next(k for k, v in MONTHS.items() if v == self.values["month"])

    def initial_state(self, rng):
        # At least one expense of that category in that month, so the answer is not zero.
        year, month = self._ym()
        last = TODAY.day if (year, month) == (TODAY.year, TODAY.month) else 30
        note = rng.choice(SAMPLE_NOTES[self.values["category"]][0])
        return self._base(rng, rng.randint(18, 28), must=({"note": note, "date": dt.date(year, month, rng.randint(1, last)).isoformat()},))

    def expected(self) -> float:
        year, month = self._ym()
        return month_totals(self.states()[APP]["expenses"], year, month)[self.values["category"]]

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield from self._summary_month(o, self._ym())
        yield from o.scroll_to(text=self.values["category"], rid="title")
        i = o.index(text=self.values["category"], rid="title")
        total = next(e.text for e in o.obs.elements[i:] if e.resource_id.endswith(":id/category_total"))
        yield o.done(total)


class ExpensesBudgetLeft(_ExpensesTask):
    name = "ExpensesBudgetLeft"
    template = "How much of my monthly budget is left for {month}? Answer with the amount."
    params = {"month": "a month, e.g. October 2026"}
    kind = "retrieval"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"month": rng.choice(sorted(MONTHS.values()))}

    def _ym(self) -> tuple[int, int]:
        return next(k for k, v in MONTHS.items() if v == self.values["month"])

    def initial_state(self, rng):
        state = self._base(rng, rng.randint(18, 28))
        spent = max(sum(month_totals(state[APP]["expenses"], *ym).values()) for ym in MONTHS)
        state[APP]["budget"] = float((int(spent) // 100 + 1) * 100 + rng.choice([0, 100, 200, 300]))
        return state

    def expected(self) -> float:
        s = self.states()[APP]
        return round(s["budget"] - sum(month_totals(s["expenses"], *self._ym()).values()), 2)

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield from self._summary_month(o, self._ym())
        yield o.done(o.element(rid="remaining").text)


class ExpensesSetBudget(_ExpensesTask):
    name = "ExpensesSetBudget"
    template = "Set my monthly budget to {shown}."
    params = {"budget": "the new budget", "shown": "the budget in dollars"}
    kind = "edit"
    complexity = 3
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        budget = rng.choice([450, 550, 650, 700, 850, 950, 1100, 1250, 1500])
        return {"budget": str(budget), "shown": money(budget)}

    def initial_state(self, rng):
        state = self._base(rng, rng.randint(10, 20))
        state[APP]["budget"] = float(rng.choice([600, 800, 1000, 1200]))
        return state

    def is_successful(self, device, answer):
        s = device.read_app_state(APP)
        first = self.states()[APP]
        return float(abs(s["budget"] - float(self.values["budget"])) < 0.005 and s["currency"] == first["currency"]
                     and s["expenses"] == first["expenses"])

    def solve(self, o):
        yield from self._drawer_to(o, "Settings")
        yield o.tap(text="Monthly budget")
        yield o.type(self.values["budget"], rid="budget_input", clear=True)
        yield o.tap(text="Set")
        yield o.done()


class ExpensesToggleAlerts(_ExpensesTask):
    name = "ExpensesToggleAlerts"
    template = "Turn budget alerts {state} in Expenses."
    params = {"state": "on or off"}
    kind = "toggle"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"state": rng.choice(["on", "off"])}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(8, 16), alerts=self.values["state"] == "off")

    def is_successful(self, device, answer):
        s = device.read_app_state(APP)
        first = self.states()[APP]
        return float(s["alerts"] == (self.values["state"] == "on") and s["budget"] == first["budget"]
                     and s["currency"] == first["currency"] and s["expenses"] == first["expenses"])

    def solve(self, o):
        yield from self._drawer_to(o, "Settings")
        yield o.tap(rid="alerts")
        yield o.done()


class ExpensesCurrencyAndBudget(_ExpensesTask):
    name = "ExpensesCurrencyAndBudget"
    template = "In Expenses, switch the currency to the {currency_name} and set the monthly budget to {budget}."
    params = {"currency": "currency code", "currency_name": "its name", "budget": "the new budget"}
    kind = "multi"
    complexity = 4
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        code = rng.choice(["EUR", "GBP"])
        return {"currency": code, "currency_name": {"EUR": "euro", "GBP": "British pound"}[code],
                "budget": str(rng.choice([500, 650, 700, 900, 1000, 1300]))}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(10, 20), budget=float(rng.choice([600, 800, 1200])))

    def is_successful(self, device, answer):
        s = device.read_app_state(APP)
        return float(s["currency"] == self.values["currency"] and abs(s["budget"] - float(self.values["budget"])) < 0.005
                     and s["expenses"] == self.states()[APP]["expenses"])

    def solve(self, o):
        yield from self._drawer_to(o, "Settings")
        yield o.tap(rid="currency")
        yield o.tap(text=CURRENCIES[self.values["currency"]][1])
        yield o.tap(text="Monthly budget")
        yield o.type(self.values["budget"], rid="budget_input", clear=True)
        yield o.tap(text="Set")
        yield o.done()


class ExpensesExportCsv(_ExpensesTask):
    name = "ExpensesExportCsv"
    template = "Export my {month} expenses from Expenses to a CSV file."
    params = {"month": "a month"}
    kind = "infeasible"
    complexity = 1
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"month": rng.choice(sorted(MONTHS.values()))}

    def initial_state(self, rng):
        return self._base(rng, rng.randint(10, 20))

    def is_successful(self, device, answer):
        return 0.0  # Expenses has no export; only declaring the task infeasible succeeds.

    def solve(self, o):
        yield o.tap(desc="More options")
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    ExpensesLogExpense, ExpensesDeleteExpense, ExpensesEditAmount, ExpensesFixExpense, ExpensesCategoryTotal,
    ExpensesBudgetLeft, ExpensesSetBudget, ExpensesToggleAlerts, ExpensesCurrencyAndBudget, ExpensesExportCsv,
)
