"""Tasks on Shop (com.example.shopping, unseen): icon-only cart buttons, a long catalogue, a
search box, swipe-to-remove, a sort/filter bottom sheet and confirmations."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from coadapt.apps.shopping import (
    ADDRESSES, CLOTHING_SIZES, COLOURS, DELIVERY_LABELS, PAYMENTS, PRODUCT_POOL, SHOE_SIZES, SORTS, TODAY, format_date,
    pick_variant, sample_state,
)

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.shopping"
SIZED = tuple(p[0] for p in PRODUCT_POOL if p[1] in ("Clothing", "Shoes"))
CATEGORY = {p[0]: p[1] for p in PRODUCT_POOL}
SIZES = {"Clothing": CLOTHING_SIZES, "Shoes": SHOE_SIZES}
MENU_TITLE = "android:id/title"  # the text of an item in a dropdown or overflow menu


def _state(device) -> dict[str, Any]:
    return device.read_app_state(APP)


def _product(state: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in state["products"] if p["name"] == name)


def _lines(state: dict[str, Any]) -> list[tuple[int, int, str, str]]:
    return [(c["product_id"], c["qty"], c["size"], c["color"]) for c in state["cart"]]


def _offer(state: dict[str, Any], name: str, size: str = "", color: str = "") -> None:
    """Make the product `name` in stock and offered in `size` and `color` (where given)."""
    p = _product(state, name)
    p["in_stock"] = True
    if size and size not in p["sizes"]:
        p["sizes"] = [s for s in SIZES[p["category"]] if s in p["sizes"] or s == size]
    if color and color not in p["colors"]:
        p["colors"].append(color)


def _spinner_value(o: OracleCtx, desc: str) -> str:
    """The option a dropdown (found by its content-desc) shows."""
    spinner = o.element(desc=desc)
    return next((e.text for e in o.obs.elements if e.parent == spinner.index), "")


class _ShopTask(TaskTemplate):
    app = APP

    def _with_cart(self, rng: random.Random, state: dict[str, Any], names: list[str]) -> None:
        """Put one line of each named product (in stock, some variant) into the cart."""
        for name in names:
            p = _product(state, name)
            p["in_stock"] = True
            size, color = pick_variant(rng, p)
            state["cart"].append({"product_id": p["id"], "qty": rng.randint(1, 3), "size": size, "color": color})

    def _pick_product(self, o: OracleCtx, name: str, size: str, color: str, qty: int) -> Solution:
        """On a product page: choose size and colour, set the quantity, add to cart."""
        if size:
            yield from o.scroll_to(desc="Size")
            yield o.tap(desc="Size")
            yield o.tap(text=size, rid=MENU_TITLE)
        if color and _spinner_value(o, "Colour") != color:
            yield from o.scroll_to(desc="Colour")
            yield o.tap(desc="Colour")
            yield o.tap(text=color, rid=MENU_TITLE)
        for _ in range(qty - 1):
            yield from o.scroll_to(desc="Increase quantity")
            yield o.tap(desc="Increase quantity")
        yield o.tap(desc="Add to cart")

    def _checkout(self, o: OracleCtx, address: str, payment: str, delivery: str) -> Solution:
        """From the cart: fill in checkout and confirm the order."""
        yield o.tap(text="Checkout")
        yield o.type(address, rid="address", clear=True)
        yield from o.scroll_to(text=payment)
        yield o.tap(text=payment)
        if delivery != "Standard":
            yield from o.scroll_to(text=DELIVERY_LABELS[delivery])
            yield o.tap(text=DELIVERY_LABELS[delivery])
        yield o.tap(text="Buy now")
        yield o.tap(text="Place order")


class ShopAddToCart(_ShopTask):
    name = "ShopAddToCart"
    template = 'Add {qty} of the "{product}" in size {size} and colour {color} to my cart in the Shop app.'
    params = {"product": "product name", "qty": "quantity, 1 to 3", "size": "size to choose", "color": "colour to choose"}
    kind = "entry"
    complexity = 3
    max_steps = 28

    @classmethod
    def sample_params(cls, rng):
        product = rng.choice(SIZED)
        return {"product": product, "qty": rng.randint(1, 3), "size": rng.choice(SIZES[CATEGORY[product]][1:-1]),
                "color": rng.choice(COLOURS)}

    def initial_state(self, rng):
        v = self.values
        state = sample_state(rng, must=(v["product"],))
        _offer(state, v["product"], v["size"], v["color"])
        others = [q["name"] for q in state["products"] if q["name"] != v["product"]]
        self._with_cart(rng, state, rng.sample(others, rng.randint(0, 2)))
        return {APP: state}

    def is_successful(self, device, answer):
        v = self.values
        before = _lines(self.states()[APP])
        pid = _product(self.states()[APP], v["product"])["id"]
        return float(_lines(_state(device)) == before + [(pid, v["qty"], v["size"], v["color"])])

    def solve(self, o):
        v = self.values
        yield from o.scroll_to(text=v["product"], rid="title")
        yield o.tap(text=v["product"], rid="title")
        yield from self._pick_product(o, v["product"], v["size"], v["color"], v["qty"])
        yield o.done()


class ShopRemoveFromCart(_ShopTask):
    name = "ShopRemoveFromCart"
    template = 'Remove the "{product}" from my shopping cart.'
    params = {"product": "product to remove"}
    kind = "delete"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"product": rng.choice(PRODUCT_POOL)[0]}

    def initial_state(self, rng):
        state = sample_state(rng, must=(self.values["product"],))
        others = [p["name"] for p in state["products"] if p["name"] != self.values["product"]]
        names = rng.sample(others, rng.randint(1, 3))
        names.insert(rng.randrange(len(names) + 1), self.values["product"])
        self._with_cart(rng, state, names)
        return {APP: state}

    def is_successful(self, device, answer):
        pid = _product(self.states()[APP], self.values["product"])["id"]
        want = [line for line in _lines(self.states()[APP]) if line[0] != pid]
        return float(_lines(_state(device)) == want)

    def solve(self, o):
        yield o.tap(desc="Cart")
        yield o.swipe("left", text=self.values["product"], rid="title")
        yield o.done()


class ShopChangeQuantity(_ShopTask):
    name = "ShopChangeQuantity"
    template = 'In my Shop cart, change the quantity of "{product}" to {qty}.'
    params = {"product": "product in the cart", "qty": "new quantity, 1 to 5"}
    kind = "edit"
    complexity = 2
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        return {"product": rng.choice(PRODUCT_POOL)[0], "qty": rng.randint(1, 5)}

    def initial_state(self, rng):
        state = sample_state(rng, must=(self.values["product"],))
        others = [p["name"] for p in state["products"] if p["name"] != self.values["product"]]
        names = rng.sample(others, rng.randint(1, 2)) + [self.values["product"]]
        rng.shuffle(names)
        self._with_cart(rng, state, names)
        line = next(c for c in state["cart"] if c["product_id"] == _product(state, self.values["product"])["id"])
        line["qty"] = rng.choice([q for q in range(1, 6) if q != self.values["qty"]])
        return {APP: state}

    def is_successful(self, device, answer):
        pid = _product(self.states()[APP], self.values["product"])["id"]
        want = [(p, self.values["qty"] if p == pid else q, s, c) for p, q, s, c in _lines(self.states()[APP])]
        return float(_lines(_state(device)) == want)

    def solve(self, o):
        name = self.values["product"]
        yield o.tap(desc="Cart")
        plus = o.element(desc=f"Increase quantity of {name}")
        shown = next(e for e in o.obs.elements if e.parent == plus.parent and e.resource_id.endswith(":id/qty"))
        diff = self.values["qty"] - int(shown.text)
        for _ in range(abs(diff)):
            yield o.tap(desc=f"{'Increase' if diff > 0 else 'Decrease'} quantity of {name}")
        yield o.done()


class ShopCheckoutCart(_ShopTask):
    name = "ShopCheckoutCart"
    template = 'Check out my Shop cart: ship it to "{address}", pay with {payment} and choose {delivery} delivery.'
    params = {"address": "shipping address", "payment": "payment method", "delivery": "Standard or Express"}
    kind = "multi"
    complexity = 4
    max_steps = 18

    @classmethod
    def sample_params(cls, rng):
        return {"address": rng.choice(ADDRESSES), "payment": rng.choice(PAYMENTS),
                "delivery": rng.choice(("Standard", "Express"))}

    def initial_state(self, rng):
        state = sample_state(rng, n_orders=rng.randint(0, 4))
        state["address"] = rng.choice([a for a in ADDRESSES if a != self.values["address"]])
        self._with_cart(rng, state, [p["name"] for p in rng.sample(state["products"], rng.randint(1, 3))])
        return {APP: state}

    def is_successful(self, device, answer):
        v, before, now = self.values, self.states()[APP], _state(device)
        if now["cart"] or now["orders"][:-1] != before["orders"] or len(now["orders"]) != len(before["orders"]) + 1:
            return 0.0
        order = now["orders"][-1]
        items = [(it["product_id"], it["qty"], it["size"], it["color"]) for it in order["items"]]
        return float(items == _lines(before) and order["address"].strip() == v["address"] and order["payment"] == v["payment"]
                     and order["delivery"] == v["delivery"])

    def solve(self, o):
        v = self.values
        yield o.tap(desc="Cart")
        yield from self._checkout(o, v["address"], v["payment"], v["delivery"])
        yield o.done()


class ShopBuyProduct(_ShopTask):
    name = "ShopBuyProduct"
    template = ('Buy {qty} of the "{product}" in size {size} from the Shop app, delivered to "{address}" and paid '
                'with {payment}.')
    params = {"product": "product name", "qty": "quantity, 1 to 3", "size": "size", "address": "shipping address",
              "payment": "payment method"}
    kind = "multi"
    complexity = 5
    max_steps = 30

    @classmethod
    def sample_params(cls, rng):
        product = rng.choice(SIZED)
        return {"product": product, "qty": rng.randint(1, 3), "size": rng.choice(SIZES[CATEGORY[product]][1:-1]),
                "address": rng.choice(ADDRESSES), "payment": rng.choice(PAYMENTS)}

    def initial_state(self, rng):
        state = sample_state(rng, must=(self.values["product"],), n_orders=rng.randint(0, 3))
        _offer(state, self.values["product"], self.values["size"])
        return {APP: state}

    def is_successful(self, device, answer):
        v, before, now = self.values, self.states()[APP], _state(device)
        if now["orders"][:-1] != before["orders"] or len(now["orders"]) != len(before["orders"]) + 1:
            return 0.0
        order = now["orders"][-1]
        pid = _product(before, v["product"])["id"]
        items = [(it["product_id"], it["qty"], it["size"]) for it in order["items"]]
        return float(items == [(pid, v["qty"], v["size"])] and order["address"].strip() == v["address"]
                     and order["payment"] == v["payment"])

    def solve(self, o):
        v = self.values
        yield o.type(v["product"], rid="search")
        yield o.tap(text=v["product"], rid="title")
        yield from self._pick_product(o, v["product"], v["size"], "", v["qty"])
        yield o.tap(desc="Cart")
        yield from self._checkout(o, v["address"], v["payment"], "Standard")
        yield o.done()


class ShopProductRating(_ShopTask):
    name = "ShopProductRating"
    template = 'What is the customer rating of the "{product}" in the Shop app? Answer with the number of stars.'
    params = {"product": "product name"}
    kind = "search"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"product": rng.choice(PRODUCT_POOL)[0]}

    def initial_state(self, rng):
        return {APP: sample_state(rng, must=(self.values["product"],))}

    def expected(self) -> float:
        return _product(self.states()[APP], self.values["product"])["rating"]

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield o.type(self.values["product"], rid="search")
        yield o.tap(text=self.values["product"], rid="title")
        yield o.done(o.element(rid="rating").text.split()[0])


class ShopOrderTotal(_ShopTask):
    name = "ShopOrderTotal"
    template = "How much did I pay in total for the Shop order I placed on {date}? Answer with the amount."
    params = {"date": "date the order was placed, e.g. Sep 28, 2026"}
    kind = "retrieval"
    complexity = 3
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"date": format_date(TODAY - dt.timedelta(days=rng.randint(3, 80)))}

    def initial_state(self, rng):
        ago = (TODAY - dt.datetime.strptime(self.values["date"], "%b %d, %Y").date()).days
        return {APP: sample_state(rng, n_orders=rng.randint(5, 9), must_days=(ago,))}

    def expected(self) -> float:
        return next(o["total"] for o in self.states()[APP]["orders"] if o["date"] == self.values["date"])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield o.tap(desc="More options")
        yield o.tap(text="Your orders")
        marker = f"{self.values['date']} ·"
        yield from o.scroll_to(contains=marker)
        yield o.tap(contains=marker)
        yield from o.scroll_to(rid="total")
        yield o.done(o.element(rid="total").text)


class ShopCancelOrder(_ShopTask):
    name = "ShopCancelOrder"
    template = "Cancel my Shop order #{number}."
    params = {"number": "number of an order that is still processing"}
    kind = "delete"
    complexity = 3
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        return {"number": rng.randint(20420, 20480)}

    def initial_state(self, rng):
        state = sample_state(rng, n_orders=rng.randint(4, 7), recent=2)
        orders = state["orders"]
        which = rng.randint(0, 1)  # the newest order or the one before: both are still processing
        shift = self.values["number"] - orders[-1 - which]["number"]
        for order in orders:
            order["number"] += shift  # keeps the numbers rising with the dates
        state["next_order"] = orders[-1]["number"] + 1
        return {APP: state}

    def is_successful(self, device, answer):
        before, now = self.states()[APP]["orders"], _state(device)["orders"]
        want = [{**o, "status": "Cancelled"} if o["number"] == self.values["number"] else o for o in before]
        return float(now == want)

    def solve(self, o):
        label = f"Order #{self.values['number']}"
        yield o.tap(desc="More options")
        yield o.tap(text="Your orders")
        yield from o.scroll_to(text=label)
        yield o.tap(text=label)
        yield from o.scroll_to(text="Cancel this order")
        yield o.tap(text="Cancel this order")
        yield o.tap(text="Cancel order")
        yield o.done()


class ShopSortAndFilter(_ShopTask):
    name = "ShopSortAndFilter"
    template = "In the Shop app, sort the products by {order} and hide the items that are out of stock."
    params = {"order": "how to sort"}
    kind = "toggle"
    complexity = 2
    max_steps = 10
    ORDERS = {"price, lowest first": "price_low", "price, highest first": "price_high", "rating": "rating"}

    @classmethod
    def sample_params(cls, rng):
        return {"order": rng.choice(list(cls.ORDERS))}

    def initial_state(self, rng):
        return {APP: sample_state(rng)}

    def is_successful(self, device, answer):
        s = _state(device)
        return float(s["sort"] == self.ORDERS[self.values["order"]] and s["hide_out_of_stock"]
                     and s["cart"] == self.states()[APP]["cart"])

    def solve(self, o):
        yield o.tap(desc="Sort and filter")
        yield o.tap(text=SORTS[self.ORDERS[self.values["order"]]])
        yield o.tap(desc="Sort and filter")
        yield o.tap(text="Hide out-of-stock items")
        yield o.done()


class ShopAddSoldOut(_ShopTask):
    name = "ShopAddSoldOut"
    template = 'Add the "{product}" to my cart in the Shop app.'
    params = {"product": "a product that is out of stock"}
    kind = "infeasible"
    complexity = 2
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        return {"product": rng.choice(PRODUCT_POOL)[0]}

    def initial_state(self, rng):
        state = sample_state(rng, must=(self.values["product"],))
        _product(state, self.values["product"])["in_stock"] = False
        return {APP: state}

    def is_successful(self, device, answer):
        return 0.0  # sold out: "Add to cart" is disabled, so only declaring it infeasible succeeds

    def solve(self, o):
        yield from o.scroll_to(text=self.values["product"], rid="title")
        yield o.tap(text=self.values["product"], rid="title")
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    ShopAddToCart, ShopRemoveFromCart, ShopChangeQuantity, ShopCheckoutCart, ShopBuyProduct, ShopProductRating,
    ShopOrderTotal, ShopCancelOrder, ShopSortAndFilter, ShopAddSoldOut,
)
