"""Expenses (unseen app): state round trip, overflow-menu logging, swipe-to-delete with
confirmation, a list that scrolls, and the drawer-only summary and settings."""

from __future__ import annotations

import json
import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.expenses import ExpensesApp, month_totals, parse_amount, sample_expenses

PKG = ExpensesApp.package


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, {"expenses": sample_expenses(random.Random(5), 28), "budget": 900.0})
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


def test_state_round_trips_through_json(dev):
    state = dev.read_app_state(PKG)
    again = json.loads(json.dumps(state))
    dev.write_app_state(PKG, again)
    assert dev.read_app_state(PKG) == state
    assert len(state["expenses"]) == 28 and len({e["note"] for e in state["expenses"]}) == 28


def test_log_expense_is_only_in_the_overflow_menu(dev):
    assert find(dev, text="Log expense") is None
    assert not any(e.class_name.endswith("Button") and "expense" in (e.text + e.content_desc).lower() for e in dev.ui_tree())
    tap(dev, content_desc="More options")
    tap(dev, text="Log expense")
    dev.input_text("12.5")  # the amount field has focus
    tap(dev, resource_id=rid("note"))
    dev.input_text("Snacks")
    tap(dev, text="Save")
    new = [e for e in dev.read_app_state(PKG)["expenses"] if e["note"] == "Snacks"]
    assert len(new) == 1 and new[0]["amount"] == 12.5 and new[0]["category"] == "Food" and new[0]["date"] == "2026-10-15"


def test_swipe_left_asks_before_deleting(dev):
    row = [e for e in dev.ui_tree() if e.resource_id == rid("title")][0]
    x, y = row.bounds.center
    dev.swipe(x, y, x - 300, y)
    assert find(dev, text="Delete expense?") is not None
    tap(dev, text="Cancel")
    assert len(dev.read_app_state(PKG)["expenses"]) == 28
    dev.swipe(x, y, x - 300, y)
    tap(dev, text="Delete")
    notes = {e["note"] for e in dev.read_app_state(PKG)["expenses"]}
    assert len(notes) == 27 and row.text not in notes


def test_oldest_expense_needs_scrolling(dev):
    oldest = min(dev.read_app_state(PKG)["expenses"], key=lambda e: (e["date"], e["id"]))
    assert find(dev, text=oldest["note"]) is None
    lst = find(dev, resource_id=rid("expenses_list"))
    assert lst.scrollable
    for _ in range(10):
        if find(dev, text=oldest["note"]):
            break
        cx, cy = lst.bounds.center
        dev.swipe(cx, cy + 300, cx, cy - 300)
    assert find(dev, text=oldest["note"]) is not None


def test_summary_and_settings_only_through_the_drawer(dev):
    assert find(dev, text="Settings") is None and find(dev, text="Summary") is None
    tap(dev, content_desc="Open navigation drawer")
    tap(dev, text="Summary")
    state = dev.read_app_state(PKG)
    spent = sum(month_totals(state["expenses"], 2026, 10).values())
    assert find(dev, text="October 2026") is not None
    assert find(dev, resource_id=rid("spent")).text == f"${spent:,.2f}"
    tap(dev, content_desc="Previous month")
    assert find(dev, text="September 2026") is not None
    tap(dev, content_desc="Open navigation drawer")
    tap(dev, text="Settings")
    tap(dev, text="Monthly budget")
    tap(dev, resource_id=rid("budget_input"))
    for _ in range(10):
        dev.key("delete")
    dev.input_text("1,250")
    tap(dev, text="Set")
    tap(dev, resource_id=rid("currency"))
    tap(dev, text="Euro (€)")
    state = dev.read_app_state(PKG)
    assert state["budget"] == 1250.0 and state["currency"] == "EUR"
    assert find(dev, text="€1,250.00") is not None
    dev.key("back")  # back from a drawer destination returns to the expense list
    assert find(dev, text="Expenses") is not None and find(dev, resource_id=rid("expenses_list")) is not None


def test_bad_amount_is_refused():
    assert parse_amount("$1,200.50") == 1200.5 and parse_amount("abc") is None and parse_amount("0") is None
