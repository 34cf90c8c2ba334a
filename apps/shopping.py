"""Shop (com.example.shopping), an unseen app: a product catalogue with a search box, filter
chips and a sort/filter bottom sheet, product pages with size/colour dropdowns and an icon-only
"Add to cart" button, a cart whose rows are swiped away, checkout behind a "Place order?"
confirmation, and an order history (reached through the overflow menu) where orders can be
cancelled after another confirmation."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.canvas import TEXT_2, Canvas, hex_rgb
from coadapt.android_env.sim.widgets import (
    BottomSheet, Button, ButtonRow, Chip, Column, Dialog, Divider, EditText, Header, IconButton, ImageView, KeyValue,
    LayoutCtx, ListItem, ListView, MenuItem, RadioGroup, Row, Screen, Spacer, Spinner, Text, Toolbar,
)

CATEGORIES = ("Clothing", "Shoes", "Home", "Tech")
CLOTHING_SIZES = ("XS", "S", "M", "L", "XL")
SHOE_SIZES = ("38", "39", "40", "41", "42", "43", "44", "45")
COLOURS = ("Black", "White", "Navy", "Grey", "Olive", "Beige", "Red", "Blue", "Green", "Brown")
PAYMENTS = ("Credit card", "PayPal", "Cash on delivery")
DELIVERY_FEES = {"Standard": 0.0, "Express": 9.99}
DELIVERY_LABELS = {"Standard": "Standard delivery (free)", "Express": "Express delivery ($9.99)"}
SORTS = {"relevance": "Relevance", "price_low": "Price: low to high", "price_high": "Price: high to low",
         "rating": "Top rated"}
MAX_QTY = 10
TODAY = dt.date(2026, 10, 15)  # the simulated phone's date after a reset (SimConfig.start_time)
ADDRESSES = (
    "12 Elm Street, Springfield", "48 Harbour Road, Portsmouth", "7 Maple Avenue, Riverton", "301 King Street, Fairview",
    "22 Oak Lane, Lakeside", "9 Station Road, Milltown", "155 Park Avenue, Greenville", "63 Hill Crescent, Bridgeport",
)
ERROR_RED = "#B3261E"
OK_GREEN = "#1E7D34"
_NO_ICON = " "  # an empty icon slot: bottom-sheet labels line up with the one showing a check mark

# name, category, typical price, description
PRODUCT_POOL: tuple[tuple[str, str, float, str], ...] = (
    ("Linen shirt", "Clothing", 34.0, "Breathable linen shirt with a relaxed fit and a button-down collar."),
    ("Denim jacket", "Clothing", 69.0, "Classic trucker jacket in sturdy washed denim with chest pockets."),
    ("Wool sweater", "Clothing", 59.0, "Soft merino wool crew-neck sweater, warm without the bulk."),
    ("Cotton T-shirt", "Clothing", 14.0, "Everyday organic cotton tee with a regular fit."),
    ("Rain jacket", "Clothing", 79.0, "Waterproof, breathable shell with a packable hood."),
    ("Chino trousers", "Clothing", 44.0, "Slim chinos in stretch cotton twill."),
    ("Hooded sweatshirt", "Clothing", 39.0, "Brushed fleece hoodie with a kangaroo pocket."),
    ("Summer dress", "Clothing", 49.0, "Light viscose midi dress with a tie waist."),
    ("Puffer vest", "Clothing", 64.0, "Lightweight insulated vest that packs into its own pocket."),
    ("Flannel shirt", "Clothing", 36.0, "Brushed cotton flannel in a timeless check."),
    ("Running shoes", "Shoes", 89.0, "Cushioned road running shoes with a breathable mesh upper."),
    ("Leather boots", "Shoes", 129.0, "Full-grain leather ankle boots with a grippy rubber sole."),
    ("Canvas sneakers", "Shoes", 45.0, "Low-top canvas sneakers for every day."),
    ("Hiking boots", "Shoes", 119.0, "Waterproof hiking boots with ankle support."),
    ("Slip-on loafers", "Shoes", 74.0, "Suede loafers with a cushioned footbed."),
    ("Trail runners", "Shoes", 99.0, "Light trail shoes with a rock plate and deep lugs."),
    ("Sandals", "Shoes", 29.0, "Adjustable strap sandals with a contoured sole."),
    ("High-top sneakers", "Shoes", 65.0, "Padded high-top sneakers in smooth leather."),
    ("Ceramic mug", "Home", 12.0, "Stoneware mug that holds 350 ml, dishwasher safe."),
    ("Desk lamp", "Home", 39.0, "Adjustable LED desk lamp with three brightness levels."),
    ("Throw blanket", "Home", 42.0, "Chunky knit throw, 130 x 170 cm."),
    ("Scented candle", "Home", 18.0, "Soy wax candle with notes of cedar and fig, 40 hours."),
    ("Cotton towels", "Home", 24.0, "Set of two thick cotton bath towels."),
    ("Plant pot", "Home", 16.0, "Glazed ceramic pot with a drainage hole and saucer."),
    ("Wall clock", "Home", 32.0, "Silent quartz wall clock, 30 cm across."),
    ("Cushion cover", "Home", 15.0, "Washed linen cushion cover, 45 x 45 cm."),
    ("Glass vase", "Home", 27.0, "Hand-blown glass vase, 25 cm tall."),
    ("Cutting board", "Home", 22.0, "End-grain acacia cutting board."),
    ("Wireless earbuds", "Tech", 79.0, "Noise-cancelling earbuds with 24 hours of battery in the case."),
    ("Phone charger", "Tech", 19.0, "30 W USB-C fast charger."),
    ("USB-C cable", "Tech", 9.0, "Braided USB-C to USB-C cable, 2 m."),
    ("Bluetooth speaker", "Tech", 49.0, "Splash-proof speaker with 12 hours of play time."),
    ("Power bank", "Tech", 35.0, "10,000 mAh power bank with two ports."),
    ("Smart watch", "Tech", 149.0, "Fitness watch with heart-rate tracking and GPS."),
    ("Laptop sleeve", "Tech", 25.0, "Padded sleeve for 13 to 14 inch laptops."),
    ("Webcam", "Tech", 54.0, "Full HD webcam with a privacy shutter."),
    ("Mechanical keyboard", "Tech", 89.0, "Compact keyboard with tactile switches."),
)


@dataclass
class Product:
    id: int
    name: str
    category: str
    price: float
    rating: float
    reviews: int
    description: str
    sizes: list[str] = field(default_factory=list)
    colors: list[str] = field(default_factory=list)
    in_stock: bool = True


@dataclass
class CartLine:
    product_id: int
    qty: int = 1
    size: str = ""
    color: str = ""


@dataclass
class OrderItem:
    product_id: int
    name: str
    qty: int
    price: float
    size: str = ""
    color: str = ""


@dataclass
class Order:
    number: int
    date: str  # "Oct 3, 2026"
    status: str  # "Processing", "Shipped", "Delivered" or "Cancelled"
    items: list[OrderItem]
    address: str
    payment: str
    delivery: str
    total: float


@dataclass
class ShopState:
    products: list[Product] = field(default_factory=list)
    cart: list[CartLine] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    address: str = ""
    sort: str = "relevance"
    hide_out_of_stock: bool = False
    next_order: int = 20401


def money(v: float) -> str:
    return f"${v:,.2f}"


def format_date(d: dt.date) -> str:
    return f"{d.strftime('%b')} {d.day}, {d.year}"


def variant(size: str, color: str) -> str:
    """How a cart line or order item names its options: "M · Navy", "Navy" or ""."""
    return " · ".join(v for v in (size, color) if v)


# --------------------------------------------------------------------------- sample content


def sample_catalogue(rng: random.Random, n: int | None = None, must: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """A catalogue of `n` products (24 to 30 by default, always including the names in `must`),
    as state dicts with ids 1..n in catalogue order."""
    n = n if n is not None else rng.randint(24, 30)
    pool = {p[0]: p for p in PRODUCT_POOL}
    names = list(must) + rng.sample([nm for nm in pool if nm not in must], n - len(must))
    rng.shuffle(names)
    out = []
    for i, nm in enumerate(names):
        _, cat, base, desc = pool[nm]
        price = max(4.99, round(base * rng.uniform(0.8, 1.2)) - 0.01)
        if cat == "Clothing":
            sizes = list(CLOTHING_SIZES[rng.randint(0, 1):])
            colors = rng.sample(COLOURS, rng.randint(2, 4))
        elif cat == "Shoes":
            lo = rng.randint(0, 2)
            sizes = list(SHOE_SIZES[lo:lo + rng.randint(5, 6)])
            colors = rng.sample(COLOURS, rng.randint(1, 3))
        else:
            sizes = []
            colors = rng.sample(COLOURS, rng.randint(2, 3)) if rng.random() < 0.6 else []
        out.append({"id": i + 1, "name": nm, "category": cat, "price": round(price, 2),
                    "rating": round(rng.uniform(3.0, 4.9), 1), "reviews": rng.randint(3, 900), "description": desc,
                    "sizes": sizes, "colors": colors, "in_stock": rng.random() > 0.15})
    return out


def pick_variant(rng: random.Random, product: dict[str, Any]) -> tuple[str, str]:
    """A random (size, colour) of a product ("" where it has none)."""
    return (rng.choice(product["sizes"]) if product["sizes"] else "",
            rng.choice(product["colors"]) if product["colors"] else "")


def sample_orders(rng: random.Random, products: list[dict[str, Any]], n: int, today: dt.date, *,
                  first_number: int = 20301, recent: int = 0, must_days: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """`n` past orders on distinct dates before `today`, oldest first. Orders from the last four
    days are still processing (`recent` of them at least), older ones were shipped or delivered
    (a few cancelled); `must_days` are days-ago that must have an order."""
    must = list(dict.fromkeys(must_days))
    recent_days = rng.sample([d for d in range(1, 5) if d not in must], max(0, recent - sum(1 for d in must if d < 5)))
    taken = set(must) | set(recent_days)
    rest = rng.sample([d for d in range(5, 90) if d not in taken], n - len(taken))
    days = sorted(taken | set(rest), reverse=True)
    numbers = sorted(rng.sample(range(first_number, first_number + 90), n))
    orders = []
    for ago, number in zip(days, numbers):
        items = []
        for p in rng.sample(products, rng.randint(1, 3)):
            size, color = pick_variant(rng, p)
            items.append({"product_id": p["id"], "name": p["name"], "qty": rng.choice((1, 1, 1, 2, 3)), "price": p["price"],
                          "size": size, "color": color})
        delivery = rng.choice(("Standard", "Standard", "Express"))
        total = round(sum(it["qty"] * it["price"] for it in items) + DELIVERY_FEES[delivery], 2)
        if ago <= 4:
            status = "Processing"
        elif ago <= 9:
            status = "Shipped"
        else:
            status = "Cancelled" if rng.random() < 0.1 else "Delivered"
        orders.append({"number": number, "date": format_date(today - dt.timedelta(days=ago)), "status": status,
                       "items": items, "address": rng.choice(ADDRESSES), "payment": rng.choice(PAYMENTS),
                       "delivery": delivery, "total": total})
    return orders


def sample_state(rng: random.Random, *, must: tuple[str, ...] = (), n_orders: int = 0, recent: int = 0,
                 must_days: tuple[int, ...] = (), today: dt.date = TODAY) -> dict[str, Any]:
    """A complete app state: a catalogue (with `must`), an empty cart and `n_orders` past orders
    (see `sample_orders`)."""
    products = sample_catalogue(rng, must=must)
    orders = sample_orders(rng, products, n_orders, today, recent=recent, must_days=must_days) if n_orders else []
    return {"products": products, "cart": [], "orders": orders, "address": rng.choice(ADDRESSES),
            "sort": "relevance", "hide_out_of_stock": False,
            "next_order": max((o["number"] for o in orders), default=20400) + 1}


# --------------------------------------------------------------------------- custom views


def _paint_minus(c: Canvas, x: int, y: int, r: float, col, w: int) -> None:
    c.line([(x - r * 0.6, y), (x + r * 0.6, y)], col, w)


def _paint_add_to_cart(c: Canvas, x: int, y: int, r: float, col, w: int) -> None:
    c.icon("cart", round(x - r * 0.1), round(y + r * 0.1), round(r * 1.7), col)
    c.line([(x + r * 0.55, y - r * 0.95), (x + r * 0.55, y - r * 0.35)], col, max(2, w - 1))
    c.line([(x + r * 0.25, y - r * 0.65), (x + r * 0.85, y - r * 0.65)], col, max(2, w - 1))


@dataclass
class GlyphButton(IconButton):
    """An IconButton whose icon is drawn here (the toolkit has no minus or add-to-cart icon);
    `filled` puts it on a round button in the app's primary colour."""

    glyph: Callable[..., None] | None = None
    filled: bool = False

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int):
        node = super().layout(ctx, x, y, w)
        s = ctx.dp(48)
        th = ctx.theme
        col = hex_rgb(self.color) if self.color else TEXT_2
        if not self.enabled:
            col = hex_rgb("#BDBDBD")
        glyph, filled, enabled = self.glyph, self.filled, self.enabled

        def paint(c: Canvas) -> None:
            fg = col
            if filled:
                c.circle(x + s // 2, y + s // 2, ctx.dp(22), fill=th.primary if enabled else hex_rgb("#E0E0E0"))
                fg = th.on_primary if enabled else hex_rgb("#9E9E9E")
            if glyph is not None:
                glyph(c, x + s // 2, y + s // 2, ctx.dp(12), fg, max(2, round(ctx.dp(24) / 11)))

        node.paint = paint
        return node


@dataclass
class Stepper(Row):
    """Decrease / quantity / increase, as one fixed-width row (a list row's trailing widget)."""

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return sum(ch.wrap_width(ctx) or 0 for ch in self.children)


def _qty_text(qty: int, rid: str) -> Text:
    # vpad centres the number on the 48 dp buttons beside it.
    return Text(str(qty), "subtitle", id=rid, pad=6, vpad=12.5, align="center")


# --------------------------------------------------------------------------- the app


class ShopApp(SimApp):
    package = "com.example.shopping"
    label = "Shop"
    icon = "cart"
    color = "#E8710A"

    def reset_state(self) -> None:
        self.state = ShopState()
        self.query = ""
        self.category: str | None = None

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        orders = [Order(**{**o, "items": [OrderItem(**it) for it in o["items"]]}) for o in data.get("orders", [])]
        self.state = ShopState(
            products=[Product(**p) for p in data.get("products", [])],
            cart=[CartLine(**c) for c in data.get("cart", [])],
            orders=orders,
            address=data.get("address", ""),
            sort=data.get("sort", "relevance"),
            hide_out_of_stock=data.get("hide_out_of_stock", False),
            next_order=data.get("next_order", max((o.number for o in orders), default=20400) + 1),
        )
        self.query = ""
        self.category = None
        self.home_screen()

    # ------------------------------------------------------------------ helpers

    def _product(self, pid: int) -> Product | None:
        return next((p for p in self.state.products if p.id == pid), None)

    def _visible_products(self) -> list[Product]:
        q = self.query.strip().lower()
        items = [p for p in self.state.products
                 if (self.category is None or p.category == self.category)
                 and (not q or q in p.name.lower() or q in p.category.lower())
                 and (p.in_stock or not self.state.hide_out_of_stock)]
        if self.state.sort == "price_low":
            items.sort(key=lambda p: p.price)
        elif self.state.sort == "price_high":
            items.sort(key=lambda p: -p.price)
        elif self.state.sort == "rating":
            items.sort(key=lambda p: -p.rating)
        return items

    def _subtotal(self) -> float:
        total = 0.0
        for line in self.state.cart:
            p = self._product(line.product_id)
            if p is not None:
                total += p.price * line.qty
        return round(total, 2)

    def _line_label(self, line: CartLine) -> str:
        """The product name, plus its options when the same product is in the cart twice."""
        p = self._product(line.product_id)
        name = p.name if p else "Unavailable item"
        if sum(1 for other in self.state.cart if other.product_id == line.product_id) > 1:
            return f"{name} ({variant(line.size, line.color)})"
        return name

    # ------------------------------------------------------------------ actions

    def _set_query(self, v: str) -> None:
        self.query = v
        self.route.scroll.pop("products", None)

    def _toggle_category(self, c: str) -> None:
        self.category = None if self.category == c else c
        self.route.scroll.pop("products", None)

    def _open_product(self, pid: int) -> None:
        p = self._product(pid)
        if p is None:
            return
        self.push("product", pid=pid, size="", color=p.colors[0] if p.colors else "", qty=1)

    def _open_cart(self) -> None:
        if self.route.name != "cart":
            self.push("cart")

    def _add_to_cart(self) -> None:
        params = self.route.params
        p = self._product(params["pid"])
        if p is None or not p.in_stock:
            return
        if p.sizes and not params["size"]:
            self.toast("Select a size first")
            return
        for line in self.state.cart:
            if (line.product_id, line.size, line.color) == (p.id, params["size"], params["color"]):
                line.qty = min(MAX_QTY, line.qty + params["qty"])
                break
        else:
            self.state.cart.append(CartLine(p.id, params["qty"], params["size"], params["color"]))
        self.snackbar("Added to cart", "View cart", self._open_cart)

    def _remove_line(self, line: CartLine) -> None:
        if line not in self.state.cart:
            return
        idx = self.state.cart.index(line)
        label = self._line_label(line)
        self.state.cart.remove(line)

        def undo() -> None:
            self.state.cart.insert(min(idx, len(self.state.cart)), line)

        self.snackbar(f"Removed {label}", "Undo", undo)

    def _bump(self, line: CartLine, delta: int) -> None:
        line.qty = min(MAX_QTY, max(1, line.qty + delta))

    def _open_sheet(self) -> None:
        def set_sort(key: str) -> None:
            self.state.sort = key
            self.route.scroll.pop("products", None)

        def toggle_stock() -> None:
            self.state.hide_out_of_stock = not self.state.hide_out_of_stock

        def build() -> BottomSheet:
            items = [MenuItem(label, (lambda k=key: set_sort(k)), icon="check" if self.state.sort == key else _NO_ICON,
                              checked=self.state.sort == key) for key, label in SORTS.items()]
            stock = "Show out-of-stock items" if self.state.hide_out_of_stock else "Hide out-of-stock items"
            items.append(MenuItem(stock, toggle_stock, icon="filter"))
            return BottomSheet(items, title="Sort and filter")

        self.sheet(build)

    def _start_checkout(self) -> None:
        if not self.state.cart:
            return
        self.push("checkout", address=self.state.address, payment="", delivery="Standard")

    def _confirm_order(self) -> None:
        params = self.route.params
        address = params["address"].strip()
        if not address:
            self.toast("Enter a shipping address")
            return
        if not params["payment"]:
            self.toast("Choose a payment method")
            return
        total = round(self._subtotal() + DELIVERY_FEES[params["delivery"]], 2)
        self.dialog(lambda: Dialog(
            "Place order?", f"You will pay {money(total)} by {params['payment']}. We will ship to {address}.",
            buttons=[("Place order", self._place_order), ("Cancel", lambda: None)]))

    def _place_order(self) -> None:
        params = self.route.params
        items = []
        for line in self.state.cart:
            p = self._product(line.product_id)
            if p is not None:
                items.append(OrderItem(p.id, p.name, line.qty, p.price, line.size, line.color))
        if not items:
            return
        total = round(sum(it.price * it.qty for it in items) + DELIVERY_FEES[params["delivery"]], 2)
        number = self.state.next_order
        self.state.orders.append(Order(number, format_date(self.now().date()), "Processing", items, params["address"].strip(),
                                       params["payment"], params["delivery"], total))
        self.state.next_order += 1
        self.state.address = params["address"].strip()
        self.state.cart.clear()
        self.home_screen()
        self.push("placed", number=number)

    def _order(self, number: int) -> Order | None:
        return next((o for o in self.state.orders if o.number == number), None)

    def _confirm_cancel(self, order: Order) -> None:
        def cancel() -> None:
            order.status = "Cancelled"
            self.toast(f"Order #{order.number} cancelled")

        self.dialog(lambda: Dialog(
            "Cancel order?",
            f"Order #{order.number} will be cancelled and {money(order.total)} refunded to your {order.payment}.",
            buttons=[("Cancel order", cancel), ("Keep order", lambda: None)]))

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        name = self.route.name
        if name == "product" and self._product(self.route.params["pid"]) is not None:
            return self._product_screen()
        if name == "cart":
            return self._cart_screen()
        if name == "checkout":
            return self._checkout_screen()
        if name == "placed":
            return self._placed_screen()
        if name == "orders":
            return self._orders_screen()
        if name == "order" and self._order(self.route.params["number"]) is not None:
            return self._order_screen()
        return self._catalogue()

    def _toolbar_actions(self) -> list[IconButton]:
        return [IconButton("cart", "Cart", self._open_cart, id="cart")]

    def _catalogue(self) -> Screen:
        products = self._visible_products()
        rows = [ListItem(p.name, f"{money(p.price)} · {p.rating:.1f} stars", on_click=lambda p=p: self._open_product(p.id),
                         icon="image", meta="" if p.in_stock else "Out of stock", id="product") for p in products]
        summary = [f"{len(products)} product{'s' if len(products) != 1 else ''}", SORTS[self.state.sort]]
        if self.state.hide_out_of_stock:
            summary.append("in stock only")
        return Screen(
            toolbar=Toolbar("Shop", actions=[IconButton("filter", "Sort and filter", self._open_sheet, id="sort_filter"),
                                             *self._toolbar_actions()],
                            menu=[MenuItem("Your orders", lambda: self.push("orders"))]),
            body=[
                EditText("search", self.query, self._set_query, hint="Search products", kind="search", icon="search"),
                Row([Chip(c, self.category == c, (lambda c=c: self._toggle_category(c)), id=f"chip_{c.lower()}")
                     for c in CATEGORIES], pad=8),
                Text(" · ".join(summary), "caption", id="summary", vpad=4),
                ListView("products", rows, empty_text="No products match your search."),
            ],
        )

    def _product_screen(self) -> Screen:
        params = self.route.params
        p = self._product(params["pid"])
        assert p is not None

        def setter(key: str):
            def set_value(v: Any) -> None:
                params[key] = v

            return set_value

        def bump(delta: int) -> None:
            params["qty"] = min(MAX_QTY, max(1, params["qty"] + delta))

        qty = params["qty"]
        body: list[Any] = [
            ImageView(f"Photo of {p.name}", height=140),
            Text(p.name, "title", max_lines=2, id="name"),
            Text(money(p.price), "headline", id="price", vpad=2),
            Row([Text(f"{p.rating:.1f} stars", "body2", id="rating"),
                 Text(f"{p.reviews} reviews", "body2", id="reviews", pad=0)]),
            Text(p.description, "body2", max_lines=4, id="description"),
        ]
        if p.sizes:
            body.append(Spinner("size", p.sizes, params["size"] or "Select size", setter("size"), label="Size"))
        if p.colors:
            body.append(Spinner("color", p.colors, params["color"], setter("color"), label="Colour"))
        body.append(Row([
            Text("Quantity", "body", vpad=12.5), Spacer(),
            GlyphButton("remove", "Decrease quantity", lambda: bump(-1), id="decrease", glyph=_paint_minus, enabled=qty > 1),
            _qty_text(qty, "quantity"),
            IconButton("add", "Increase quantity", lambda: bump(1), id="increase", enabled=qty < MAX_QTY),
        ], pad=8))
        body.append(Text("In stock" if p.in_stock else "Out of stock", "label", color=OK_GREEN if p.in_stock else ERROR_RED,
                         id="stock"))
        bar = Column([Divider(), Row([
            Text(money(p.price * qty), "title", id="line_total", vpad=12.5), Spacer(),
            GlyphButton("add_shopping_cart", "Add to cart", self._add_to_cart, id="add_to_cart", glyph=_paint_add_to_cart,
                        filled=True, enabled=p.in_stock),
        ], pad=8)])
        return Screen(toolbar=Toolbar(p.category, nav="back", on_nav=self.pop, actions=self._toolbar_actions()),
                      body=body, bottom_bar=bar)

    def _cart_screen(self) -> Screen:
        rows = []
        for line in self.state.cart:
            p = self._product(line.product_id)
            if p is None:
                continue
            label = self._line_label(line)
            sub = " · ".join(v for v in (line.size and f"Size {line.size}", line.color, f"{money(p.price)} each") if v)
            stepper = Stepper([
                GlyphButton("remove", f"Decrease quantity of {label}", lambda line=line: self._bump(line, -1),
                            glyph=_paint_minus, enabled=line.qty > 1, id="decrease"),
                _qty_text(line.qty, "qty"),
                IconButton("add", f"Increase quantity of {label}", lambda line=line: self._bump(line, 1),
                           enabled=line.qty < MAX_QTY, id="increase"),
            ])
            rows.append(ListItem(p.name, sub, on_click=lambda pid=p.id: self._open_product(pid),
                                 on_swipe={"left": lambda line=line: self._remove_line(line)}, icon="image", trailing=stepper,
                                 id="cart_line"))
        count = sum(line.qty for line in self.state.cart)
        bar = Column([Divider(), Row([
            Text(f"Total {money(self._subtotal())}", "title", id="total", vpad=12.5), Spacer(),
            Button("Checkout", self._start_checkout, id="checkout", enabled=bool(self.state.cart)),
        ], pad=8)])
        return Screen(
            toolbar=Toolbar("Cart", nav="back", on_nav=self.pop, subtitle=f"{count} item{'s' if count != 1 else ''}"),
            body=[ListView("cart", rows, empty_text="Your cart is empty.")],
            bottom_bar=bar,
        )

    def _checkout_screen(self) -> Screen:
        params = self.route.params
        subtotal = self._subtotal()
        fee = DELIVERY_FEES[params["delivery"]]
        count = sum(line.qty for line in self.state.cart)

        def set_address(v: str) -> None:
            params["address"] = v

        def set_payment(v: str) -> None:
            params["payment"] = v

        def set_delivery(label: str) -> None:
            params["delivery"] = next(k for k, v in DELIVERY_LABELS.items() if v == label)

        body = [
            Header("Shipping address"),
            EditText("address", params["address"], set_address, label="Address", hint="Street and town"),
            Header("Payment method"),
            RadioGroup(PAYMENTS, params["payment"] or None, set_payment, id="payment"),
            Header("Delivery"),
            RadioGroup(list(DELIVERY_LABELS.values()), DELIVERY_LABELS[params["delivery"]], set_delivery, id="delivery"),
            Header("Summary"),
            KeyValue("Items", f"{count} item{'s' if count != 1 else ''} · {money(subtotal)}", id="summary_items"),
            KeyValue("Delivery", "Free" if not fee else money(fee), id="summary_delivery"),
        ]
        bar = Column([Divider(), Row([
            Text(f"Total {money(subtotal + fee)}", "title", id="total", vpad=12.5), Spacer(),
            Button("Buy now", self._confirm_order, id="buy_now"),
        ], pad=8)])
        return Screen(toolbar=Toolbar("Checkout", nav="back", on_nav=self.pop), body=body, bottom_bar=bar)

    def _placed_screen(self) -> Screen:
        number = self.route.params["number"]
        order = self._order(number)

        def view() -> None:
            self.home_screen()
            self.push("orders")
            self.push("order", number=number)

        return Screen(
            toolbar=Toolbar("Order placed", nav="close", on_nav=self.home_screen),
            body=[
                ImageView("Order confirmed", icon="check", height=140),
                Text("Thank you for your order!", "headline", align="center", max_lines=2),
                Text(f"Order #{number} is being prepared. We will let you know when it ships.", "body2", align="center",
                     max_lines=3),
                KeyValue("Total paid", money(order.total) if order else "", id="total"),
                ButtonRow([Button("View order", view, kind="outlined", id="view_order"),
                           Button("Keep shopping", self.home_screen, id="keep_shopping")], align="center"),
            ],
        )

    def _orders_screen(self) -> Screen:
        rows = []
        for o in reversed(self.state.orders):
            n = sum(it.qty for it in o.items)
            rows.append(ListItem(f"Order #{o.number}", f"{o.date} · {n} item{'s' if n != 1 else ''}", meta=o.status, icon="cart",
                                 on_click=lambda o=o: self.push("order", number=o.number), id="order"))
        return Screen(toolbar=Toolbar("Your orders", nav="back", on_nav=self.pop),
                      body=[ListView("orders", rows, empty_text="You have not ordered anything yet.")])

    def _order_screen(self) -> Screen:
        o = self._order(self.route.params["number"])
        assert o is not None
        body: list[Any] = [
            KeyValue("Status", o.status, id="status"),
            KeyValue("Placed on", o.date, id="date"),
            KeyValue("Ship to", o.address, id="address"),
            KeyValue("Payment", o.payment, id="payment"),
            KeyValue("Delivery", DELIVERY_LABELS[o.delivery], id="delivery"),
            Header("Items"),
        ]
        for it in o.items:
            opts = variant(it.size, it.color)
            body.append(ListItem(f"{it.qty} × {it.name}", opts, meta=money(it.qty * it.price), icon="image", id="order_item"))
        body.append(KeyValue("Order total", money(o.total), id="total"))
        if o.status == "Processing":
            body.append(ButtonRow([Button("Cancel this order", lambda: self._confirm_cancel(o), kind="outlined", id="cancel")]))
        return Screen(toolbar=Toolbar(f"Order #{o.number}", nav="back", on_nav=self.pop), body=body)


APP = ShopApp
GROUP = "unseen"
