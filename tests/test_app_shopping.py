"""Shop (com.example.shopping): state round trip, search, chips, the sort sheet, icon-only cart
buttons, swipe-to-remove, the two-step checkout and order cancellation."""

from __future__ import annotations

import json
import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps.shopping import ShopApp, sample_state

PKG = ShopApp.package


@pytest.fixture
def shop():
    d = SimDevice([ShopApp()])
    state = sample_state(random.Random(7), n_orders=5, recent=1)
    for p in state["products"]:
        p["in_stock"] = True
    d.write_app_state(PKG, state)
    d.launch(PKG)
    return d


def els(d, **kw):
    return d.ui_tree().find(**kw)


def tap(d, **kw):
    found = els(d, **kw)
    assert found, f"no element {kw}; texts: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def rid(name: str) -> str:
    return f"{PKG}:id/{name}"


def state(d):
    return d.read_app_state(PKG)


def product(d, **kw):
    return next(p for p in state(d)["products"] if all(p[k] == v for k, v in kw.items()))


def titles(d):
    return [e.text for e in els(d, resource_id=rid("title"))]


def test_state_round_trips_through_json():
    app = ShopApp()
    data = sample_state(random.Random(3), n_orders=4)
    data["cart"] = [{"product_id": 2, "qty": 3, "size": "", "color": ""}]
    app.load_state(json.loads(json.dumps(data)))
    assert app.state_dict() == data
    again = ShopApp()
    again.load_state(app.state_dict())
    assert again.state_dict() == data


def test_catalogue_is_longer_than_the_screen(shop):
    names = [p["name"] for p in state(shop)["products"]]
    shown = titles(shop)
    assert shown == names[: len(shown)] and names[-1] not in shown
    lst = els(shop, resource_id=rid("products"))[0]
    assert lst.scrollable
    for _ in range(10):
        shop.swipe(lst.bounds.center[0], lst.bounds.bottom - 10, lst.bounds.center[0], lst.bounds.top + 10)
    assert names[-1] in titles(shop)


def test_search_box_and_category_chips_filter(shop):
    target = state(shop)["products"][-1]["name"]
    tap(shop, resource_id=rid("search"))
    shop.input_text(target.lower())
    assert titles(shop) == [target]
    shop.key("back")
    tap(shop, resource_id=rid("search"))
    for _ in target:
        shop.key("delete")
    tap(shop, text="Shoes")
    shoes = [p["name"] for p in state(shop)["products"] if p["category"] == "Shoes"]
    assert titles(shop) == shoes[: len(titles(shop))]
    tap(shop, text="Shoes")  # a second tap clears the filter
    names = [p["name"] for p in state(shop)["products"]]
    assert titles(shop) == names[: len(titles(shop))] and len(titles(shop)) >= 3


def test_sort_and_filter_sheet(shop):
    for p in state(shop)["products"][:3]:
        p["in_stock"] = False
    tap(shop, content_desc="Sort and filter")
    assert els(shop, text="Sort and filter")
    tap(shop, text="Price: low to high")
    assert state(shop)["sort"] == "price_low"
    prices = {p["name"]: p["price"] for p in state(shop)["products"]}
    shown = [prices[t] for t in titles(shop)]
    assert shown == sorted(shown)
    tap(shop, content_desc="Sort and filter")
    tap(shop, text="Hide out-of-stock items")
    assert state(shop)["hide_out_of_stock"]


def test_add_to_cart_is_icon_only_and_needs_a_size(shop):
    p = product(shop, category="Clothing")
    shop.app(PKG)._open_product(p["id"])
    add = els(shop, content_desc="Add to cart")[0]
    assert add.text == "" and add.class_name == "android.widget.ImageButton"
    tap(shop, content_desc="Add to cart")
    assert state(shop)["cart"] == [] and els(shop, text="Select a size first")
    tap(shop, content_desc="Size")
    tap(shop, text=p["sizes"][-1], resource_id="android:id/title")
    tap(shop, content_desc="Increase quantity")
    tap(shop, content_desc="Increase quantity")
    tap(shop, content_desc="Decrease quantity")
    tap(shop, content_desc="Add to cart")
    tap(shop, content_desc="Add to cart")  # the same options again: one line, more of it
    assert state(shop)["cart"] == [{"product_id": p["id"], "qty": 4, "size": p["sizes"][-1], "color": p["colors"][0]}]


def test_sold_out_product_cannot_be_added(shop):
    p = state(shop)["products"][0]
    shop.app(PKG).state.products[0].in_stock = False
    tap(shop, text=p["name"], resource_id=rid("title"))
    assert els(shop, text="Out of stock")
    add = els(shop, content_desc="Add to cart")[0]
    assert not add.enabled
    shop.tap(*add.bounds.center)
    assert state(shop)["cart"] == []


def _fill_cart(d):
    s = state(d)
    plain = [p for p in s["products"] if not p["sizes"]][:3]
    s["cart"] = [{"product_id": p["id"], "qty": 2, "size": "", "color": p["colors"][0] if p["colors"] else ""} for p in plain]
    d.write_app_state(PKG, s)
    d.launch(PKG)
    return plain


def test_cart_quantity_buttons_and_swipe_to_remove(shop):
    plain = _fill_cart(shop)
    tap(shop, content_desc="Cart")
    name = plain[1]["name"]
    tap(shop, content_desc=f"Increase quantity of {name}")
    assert state(shop)["cart"][1]["qty"] == 3
    for _ in range(4):
        tap(shop, content_desc=f"Decrease quantity of {name}")
    assert state(shop)["cart"][1]["qty"] == 1  # never below one: removing is a swipe
    row = els(shop, text=name, resource_id=rid("title"))[0]
    shop.swipe(row.bounds.center[0], row.bounds.center[1], 20, row.bounds.center[1])
    assert [c["product_id"] for c in state(shop)["cart"]] == [plain[0]["id"], plain[2]["id"]]
    tap(shop, text="UNDO")
    assert [c["product_id"] for c in state(shop)["cart"]] == [p["id"] for p in plain]


def test_checkout_asks_before_placing_the_order(shop):
    _fill_cart(shop)
    before = state(shop)
    tap(shop, content_desc="Cart")
    tap(shop, text="Checkout")
    tap(shop, text="Buy now")
    assert els(shop, text="Choose a payment method") and not els(shop, text="Place order?")
    tap(shop, text="PayPal")
    tap(shop, text="Buy now")
    assert els(shop, text="Place order?")
    tap(shop, text="Cancel")
    assert state(shop)["orders"] == before["orders"]
    tap(shop, text="Buy now")
    tap(shop, text="Place order")
    after = state(shop)
    assert after["cart"] == [] and len(after["orders"]) == len(before["orders"]) + 1
    order = after["orders"][-1]
    assert order["payment"] == "PayPal" and order["status"] == "Processing" and order["address"] == before["address"]
    assert order["total"] == round(sum(it["qty"] * it["price"] for it in order["items"]), 2)
    assert els(shop, text="Thank you for your order!")


def test_orders_are_behind_the_overflow_menu_and_cancel_needs_confirmation(shop):
    orders = state(shop)["orders"]
    newest = orders[-1]
    assert newest["status"] == "Processing"
    tap(shop, content_desc="More options")
    tap(shop, text="Your orders")
    tap(shop, text=f"Order #{newest['number']}")
    assert els(shop, text=f"${newest['total']:,.2f}")
    tap(shop, text="Cancel this order")
    tap(shop, text="Keep order")
    assert state(shop)["orders"] == orders
    tap(shop, text="Cancel this order")
    tap(shop, text="Cancel order")
    assert state(shop)["orders"][-1]["status"] == "Cancelled" and state(shop)["orders"][:-1] == orders[:-1]
    assert not els(shop, text="Cancel this order")
