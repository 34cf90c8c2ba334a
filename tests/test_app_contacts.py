"""Contacts app: state round trip, form save/discard, favourites tab, call log, delete with undo."""

from __future__ import annotations

import json
import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.contacts import MAX_CONTACTS, sample_contacts

PKG = "com.example.contacts"
RID = PKG + ":id/"


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    contacts = sample_contacts(random.Random(7), 5)
    for c in contacts:
        c["favourite"] = False
    contacts[1]["favourite"] = True
    d.write_app_state(PKG, {"contacts": contacts, "calls": [], "next_id": 6})
    d.launch(PKG)
    return d


def tap(d, **kw):
    found = d.ui_tree().find(**kw)
    assert found, f"no {kw}; on screen: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def contacts(d):
    return d.read_app_state(PKG)["contacts"]


def test_state_round_trips_through_json(dev):
    tap(dev, text=contacts(dev)[0]["name"])
    tap(dev, text="Call")
    state = dev.read_app_state(PKG)
    again = json.loads(json.dumps(state))
    other = SimDevice(make_apps([PKG]))
    other.write_app_state(PKG, again)
    assert other.read_app_state(PKG) == state
    assert len(state["calls"]) == 1


def test_sample_contacts_are_distinct_and_fit_on_screen():
    for seed in range(20):
        cs = sample_contacts(random.Random(seed), MAX_CONTACTS)
        assert len({c["name"].split()[0] for c in cs}) == MAX_CONTACTS
        assert len({c["phone"] for c in cs}) == MAX_CONTACTS
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, {"contacts": sample_contacts(random.Random(1), MAX_CONTACTS)})
    d.launch(PKG)
    fab = d.ui_tree().find(content_desc="Add contact")[0]
    rows = [e for e in d.ui_tree() if e.resource_id == RID + "title"]
    assert len(rows) == MAX_CONTACTS
    assert all(r.bounds.bottom <= fab.bounds.top for r in rows)  # no row hides under the button


def test_new_contact_opens_its_page_and_empty_name_is_refused(dev):
    tap(dev, text="Add contact")
    tap(dev, text="Save")
    assert dev.ui_tree().find(text="Enter a name")
    dev.input_text("Zoe Quinn")  # the name field has focus
    tap(dev, resource_id=RID + "phone")
    dev.input_text("+1 202 555 0199")
    tap(dev, text="Save")
    assert dev.ui_tree().find(resource_id=RID + "name")[0].text == "Zoe Quinn"
    assert any(c["name"] == "Zoe Quinn" and c["phone"] == "+1 202 555 0199" for c in contacts(dev))


def test_back_discards_an_edit(dev):
    before = contacts(dev)
    tap(dev, text=before[0]["name"])
    tap(dev, text="Edit")
    tap(dev, resource_id=RID + "email")
    dev.input_text("x")
    dev.key("back")  # hides the keyboard
    dev.key("back")  # leaves the form without saving
    assert contacts(dev) == before
    assert dev.ui_tree().find(text="Call")


def test_favourites_tab_and_toggle(dev):
    cs = contacts(dev)
    tap(dev, content_desc="Favourites")
    assert [e.text for e in dev.ui_tree() if e.resource_id == RID + "title"] == [cs[1]["name"]]
    tap(dev, content_desc="All")
    tap(dev, text=cs[3]["name"])
    tap(dev, text="Add to favourites")
    assert dev.ui_tree().find(text="Remove from favourites")
    dev.key("back")
    tap(dev, content_desc="Favourites")
    names = {e.text for e in dev.ui_tree() if e.resource_id == RID + "title"}
    assert names == {cs[1]["name"], cs[3]["name"]}


def test_delete_then_undo(dev):
    before = contacts(dev)
    tap(dev, text=before[2]["name"])
    tap(dev, text="Delete")
    assert len(contacts(dev)) == len(before) - 1
    assert not dev.ui_tree().find(text=before[2]["name"])
    tap(dev, text="UNDO")
    assert contacts(dev) == before
