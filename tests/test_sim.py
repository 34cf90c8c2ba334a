"""The simulated phone: conformance, determinism, every widget, system UI and popups."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest

from coadapt.android_env.check import check_device
from coadapt.android_env.errors import AppError, ConfigError, DeviceError
from coadapt.android_env.observation import indexed_elements
from coadapt.android_env.sim import LAUNCHER, SimApp, SimConfig, SimDevice
from coadapt.android_env.sim import widgets as W
from coadapt.android_env.uitree import parse_xml
from coadapt.apps import make_apps


class Gallery(SimApp):
    """A test app that uses every widget of the toolkit."""

    package = "com.example.gallery"
    label = "Gallery"
    color = "#1A73E8"

    def reset_state(self) -> None:
        self.s = {"name": "", "wifi": False, "agree": False, "size": "M", "level": 50, "choice": "Red",
                  "tab": 0, "nav": 0, "clicked": [], "date": dt.date(2026, 10, 15), "time": (7, 30), "chip": False}
        self.picker: dict = {}

    def state_dict(self):
        s = dict(self.s)
        s["date"] = s["date"].isoformat()
        return s

    def load_state(self, data):
        self.s.update(data)

    def _click(self, what: str):
        return lambda: self.s["clicked"].append(what)

    def build(self, ctx):
        s = self.s
        if self.route.name == "detail":
            return W.Screen(toolbar=W.Toolbar("Detail", nav="back", on_nav=self.pop), body=[W.Text("Detail page", id="detail")])

        def set_name(v):
            s["name"] = v

        def open_date():
            self.picker = {}
            self.dialog(lambda: W.date_picker("Pick a date", s["date"], lambda d: s.__setitem__("date", d), self.picker))

        def open_time():
            self.picker = {}
            self.dialog(lambda: W.time_picker("Pick a time", *s["time"], lambda h, m: s.__setitem__("time", (h, m)), self.picker))

        def confirm():
            self.dialog(lambda: W.Dialog("Delete everything?", "This cannot be undone.",
                                         buttons=[("Delete", self._click("deleted")), ("Cancel", lambda: None)]))

        def sheet():
            self.sheet(lambda: W.BottomSheet([W.MenuItem("Share", self._click("share"), icon="share"),
                                              W.MenuItem("Remove", self._click("remove"), icon="delete")], title="Actions"))

        rows = [W.ListItem(f"Row {i:02d}", f"subtitle {i}", on_click=self._click(f"row{i}"),
                           on_long_click=self._click(f"long{i}"), on_swipe={"left": self._click(f"swiped{i}")},
                           icon="file") for i in range(25)]
        body = [
            W.EditText("name", s["name"], set_name, hint="Your name", label="Name", on_submit=self._click("submitted")),
            W.Row([W.Chip("Urgent", s["chip"], lambda: s.__setitem__("chip", not s["chip"])),
                   W.Button("Date", open_date, kind="tonal"), W.Button("Time", open_time, kind="outlined")]),
            W.ButtonRow([W.Button("Confirm", confirm), W.Button("Sheet", sheet, kind="text"),
                         W.Button("Disabled", self._click("disabled"), enabled=False)]),
            W.Spinner("choice", ["Red", "Green", "Blue"], s["choice"], lambda v: s.__setitem__("choice", v), label="Colour"),
            W.Switch("Wi-Fi", s["wifi"], lambda v: s.__setitem__("wifi", v), id="wifi", summary="Connect automatically", icon="wifi"),
            W.CheckBox("I agree", s["agree"], lambda v: s.__setitem__("agree", v), id="agree"),
            W.RadioGroup(["S", "M", "L"], s["size"], lambda v: s.__setitem__("size", v), id="size"),
            W.SeekBar("Level", s["level"], lambda v: s.__setitem__("level", v), id="level", icon="brightness"),
            W.Card([W.Text("Card title", "subtitle"), W.KeyValue("Amount", "$12.50", id="amount")],
                   on_click=lambda: self.push("detail"), desc="Open detail"),
            W.ImageView("A picture", height=80),
            W.ProgressBar(),
            W.Divider(),
        ]
        if s["tab"] == 1:
            body = [W.Header("Rows"), W.ListView("rows", rows)]
        return W.Screen(
            toolbar=W.Toolbar("Gallery", nav="menu", on_nav=lambda: setattr(self.route, "drawer_open", True),
                              actions=[W.IconButton("search", "Search", self._click("search"))],
                              menu=[W.MenuItem("Settings", self._click("settings")), W.MenuItem("Help", self._click("help"))]),
            tabs=W.Tabs(["One", "Two"], s["tab"], lambda i: s.__setitem__("tab", i)),
            body=body,
            fab=W.Fab("add", "Add item", lambda: self.snackbar("Item added", "Undo", self._click("undo"))),
            bottom_nav=W.BottomNav([("home", "Home"), ("star", "Starred")], s["nav"], lambda i: s.__setitem__("nav", i)),
            drawer=W.Drawer("Gallery", [W.DrawerItem("Inbox", self._click("inbox"), icon="message", selected=True),
                                        W.DrawerItem("Toast", lambda: self.toast("Hello toast"))]),
        )


@pytest.fixture
def gal():
    d = SimDevice([Gallery(), *make_apps()])
    d.launch(Gallery.package)
    return d


def el(d: SimDevice, **kw):
    """The element matching `kw`, scrolling the screen's body down to find it if needed."""
    for _ in range(4):
        found = d.ui_tree().find(**kw)
        if found:
            return found[0]
        body = d.ui_tree().find(resource_id="com.example.gallery:id/scroll")
        if not body or not body[0].scrollable:
            break
        b = body[0].bounds
        d.swipe(b.center[0], b.bottom - 10, b.center[0], b.center[1])
    raise AssertionError(f"no element {kw} on screen; texts: {d.ui_tree().texts()}")


def tap(d: SimDevice, **kw):
    d.tap(*el(d, **kw).bounds.center)


def state(d: SimDevice):
    return d.app(Gallery.package).s


def test_check_device_passes_on_sim(sim):
    report = check_device(sim)
    report.raise_if_failed()
    assert len(report.results) >= 9


def test_sim_dump_parses_back_to_the_same_tree(gal):
    screens = []
    screens.append(gal.ui_tree())
    tap(gal, content_desc="More options")
    screens.append(gal.ui_tree())
    gal.key("back")
    tap(gal, text="Confirm")
    screens.append(gal.ui_tree())
    gal.key("back")
    tap(gal, resource_id="com.example.gallery:id/name")
    screens.append(gal.ui_tree())
    for tree in screens:
        assert parse_xml(tree.to_xml("u2")).elements == tree.elements
    assert parse_xml(gal.dump_xml("u2")).elements == gal.ui_tree().elements
    stock = parse_xml(gal.dump_xml("stock"))
    assert stock.packages == (Gallery.package,)


def test_tree_bounds_match_screenshot(gal):
    w, h = gal.screen_size()
    assert gal.screenshot().size == (w, h)
    for e in gal.ui_tree():
        b = e.bounds
        assert 0 <= b.left <= b.right <= w and 0 <= b.top <= b.bottom <= h, e


def _digest(d: SimDevice) -> str:
    return hashlib.sha256(d.screenshot().tobytes() + d.dump_xml().encode()).hexdigest()


def test_deterministic_for_a_seed():
    def run(seed: int) -> list[str]:
        d = SimDevice(make_apps(), SimConfig(seed=seed, popups=True, popup_rate=0.5))
        out = [_digest(d)]
        d.launch("com.example.notes")
        for _ in range(6):
            fab = d.ui_tree().find(content_desc="New note")
            if fab:
                d.tap(*fab[0].bounds.center)
            d.input_text("x")
            d.key("back")
            out.append(_digest(d))
        return out

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_text_field_focus_keyboard_and_typing(gal):
    assert not gal.keyboard_visible
    tap(gal, resource_id="com.example.gallery:id/name")
    assert gal.keyboard_visible
    field = el(gal, resource_id="com.example.gallery:id/name")
    assert field.focused and field.editable
    gal.input_text("Ada")
    # Tapping keys on the on-screen keyboard types too (shift makes one capital).
    tree = gal.ui_tree()
    kb = [e for e in tree if e.package == "com.google.android.inputmethod.latin"][0]
    from coadapt.android_env.sim.keyboard import key_layout

    keys = {k.value: k for k in key_layout(kb.bounds.width, kb.bounds.height, gal.density)}
    for ch in " ", "shift", "l":
        l, t, r, b = keys[ch].box
        gal.tap(kb.bounds.left + (l + r) // 2, kb.bounds.top + (t + b) // 2)
    assert state(gal)["name"] == "Ada L"
    gal.key("delete")
    assert state(gal)["name"] == "Ada "
    gal.key("enter")
    assert state(gal)["clicked"] == ["submitted"]
    gal.key("back")  # hides the keyboard, stays on screen
    assert not gal.keyboard_visible and gal.current_package() == Gallery.package
    gal.input_text("!")  # the field keeps focus, as on Android
    assert state(gal)["name"] == "Ada !"


def test_toggles(gal):
    tap(gal, resource_id="com.example.gallery:id/wifi")
    tap(gal, text="I agree")
    tap(gal, text="L")
    s = state(gal)
    assert s["wifi"] and s["agree"] and s["size"] == "L"
    sw = el(gal, resource_id="com.example.gallery:id/wifi")
    assert sw.checkable and sw.checked
    tap(gal, text="Connect automatically")  # the whole row toggles
    assert not state(gal)["wifi"]
    tap(gal, text="Urgent")
    assert state(gal)["chip"]


def test_seekbar_tap_sets_value(gal):
    bar = el(gal, resource_id="com.example.gallery:id/level")
    gal.tap(bar.bounds.left + bar.bounds.width // 4, bar.bounds.center[1])
    assert 15 < state(gal)["level"] < 35
    assert el(gal, resource_id="com.example.gallery:id/level").text == str(state(gal)["level"])


def test_spinner_dropdown(gal):
    tap(gal, resource_id="com.example.gallery:id/choice")
    assert gal.ui_tree().find(text="Blue")
    tap(gal, text="Blue")
    assert state(gal)["choice"] == "Blue"
    assert not gal.ui_tree().find(text="Green")


def test_overflow_menu_and_outside_tap(gal):
    tap(gal, content_desc="More options")
    tap(gal, text="Help")
    assert state(gal)["clicked"] == ["help"]
    tap(gal, content_desc="More options")
    gal.tap(5, gal.height // 2)  # outside the menu: closes it, reaches nothing else
    assert not gal.ui_tree().find(text="Settings")
    assert state(gal)["clicked"] == ["help"]


def test_dialog_buttons_and_modality(gal):
    tap(gal, text="Confirm")
    tree = gal.ui_tree()
    assert tree.find(resource_id="android:id/alertTitle")[0].text == "Delete everything?"
    assert tree.find(resource_id="android:id/button1")[0].text == "Delete"
    behind = el(gal, content_desc="Search")
    gal.tap(*behind.bounds.center)  # modal: the tap outside cancels the dialog only
    assert state(gal)["clicked"] == []
    assert not gal.ui_tree().find(text="Delete everything?")
    tap(gal, text="Confirm")
    tap(gal, text="Delete")
    assert state(gal)["clicked"] == ["deleted"]
    assert not gal.ui_tree().find(text="Delete everything?")


def test_date_and_time_pickers(gal):
    tap(gal, text="Date")
    tap(gal, content_desc="Next month")
    assert gal.ui_tree().find(text="November 2026")
    tap(gal, content_desc="3 November 2026")
    tap(gal, text="OK")
    assert state(gal)["date"] == dt.date(2026, 11, 3)
    tap(gal, text="Time")
    tap(gal, content_desc="Increase hour")
    tap(gal, resource_id="com.example.gallery:id/minute")
    gal.key("delete")
    gal.key("delete")
    gal.input_text("45")
    tap(gal, text="OK")
    assert state(gal)["time"] == (8, 45)


def test_bottom_sheet(gal):
    tap(gal, text="Sheet")
    assert gal.ui_tree().find(text="Actions")
    tap(gal, text="Remove")
    assert state(gal)["clicked"] == ["remove"]


def test_tabs_bottom_nav_card_and_back(gal):
    tap(gal, content_desc="Starred")
    scroll = el(gal, resource_id="com.example.gallery:id/scroll")
    gal.swipe(300, scroll.bounds.bottom - 10, 300, scroll.bounds.top + 10)
    tap(gal, content_desc="Open detail")
    assert gal.ui_tree().find(text="Detail page")
    gal.key("back")
    assert gal.ui_tree().find(text="Gallery")
    tap(gal, content_desc="Two")
    assert state(gal)["tab"] == 1 and state(gal)["nav"] == 1
    gal.key("back")  # back at the first screen leaves the app
    assert gal.current_package() == LAUNCHER


def test_drawer_by_button_and_edge_swipe(gal):
    tap(gal, content_desc="Open navigation drawer")
    tap(gal, text="Inbox")
    assert state(gal)["clicked"] == ["inbox"]
    gal.swipe(2, gal.height // 2, gal.width // 2, gal.height // 2)
    assert gal.ui_tree().find(text="Toast")
    tap(gal, text="Toast")
    assert gal.ui_tree().find(text="Hello toast")
    for _ in range(4):
        gal.wait(1)
    assert not gal.ui_tree().find(text="Hello toast")


def test_fab_snackbar_action(gal):
    tap(gal, content_desc="Add item")
    assert el(gal, resource_id="com.example.gallery:id/snackbar_text").text == "Item added"
    tap(gal, text="UNDO")
    assert state(gal)["clicked"] == ["undo"]


def test_disabled_button_takes_no_click(gal):
    b = el(gal, text="Disabled")
    assert not b.enabled
    gal.tap(*b.bounds.center)
    assert state(gal)["clicked"] == []


def test_body_scrolls_when_taller_than_the_screen(gal):
    scroll = el(gal, resource_id="com.example.gallery:id/scroll")
    assert scroll.scrollable
    assert not gal.ui_tree().find(content_desc="A picture")
    gal.swipe(300, scroll.bounds.bottom - 10, 300, scroll.bounds.top + 10)
    assert gal.ui_tree().find(content_desc="A picture")


def test_list_scrolls_clips_and_swipes(gal):
    tap(gal, content_desc="Two")
    def visible_rows():
        return [e.text for e in gal.ui_tree() if e.text.startswith("Row ")]

    first = visible_rows()
    assert first and "Row 24" not in first
    lst = el(gal, resource_id="com.example.gallery:id/rows")
    assert lst.scrollable
    for _ in range(10):
        cx, cy = lst.bounds.center
        gal.swipe(cx, lst.bounds.bottom - 5, cx, lst.bounds.top + 5)
    last = visible_rows()
    assert "Row 24" in last and "Row 00" not in last
    for e in gal.ui_tree():
        if e.text.startswith("Row "):
            assert lst.bounds.top <= e.bounds.top and e.bounds.bottom <= lst.bounds.bottom
    row = el(gal, text="Row 24")
    gal.long_press(*row.bounds.center)
    gal.swipe(row.bounds.center[0], row.bounds.center[1], 10, row.bounds.center[1])
    gal.tap(*row.bounds.center)
    assert state(gal)["clicked"] == ["long24", "swiped24", "row24"]


def test_launcher_recents_home(sim):
    assert sim.current_package() == LAUNCHER
    icon = sim.ui_tree().find(content_desc="Notes")[0]
    assert icon.clickable
    sim.tap(*icon.bounds.center)
    assert sim.current_package() == "com.example.notes"
    sim.key("recents")
    assert sim.current_package() == LAUNCHER
    card = sim.ui_tree().find(content_desc="Notes")[0]
    sim.tap(*card.bounds.center)
    assert sim.current_package() == "com.example.notes"
    nav_home = sim.ui_tree().find(content_desc="Home")[0]
    sim.tap(*nav_home.bounds.center)
    assert sim.current_package() == LAUNCHER


def test_system_ui_is_not_indexed(sim):
    sim.launch("com.example.notes")
    els = indexed_elements(sim.ui_tree())
    assert els and all(e.package == "com.example.notes" for e in els)


def test_popups(gal):
    gal.show_popup("permission")
    assert gal.current_package() == "com.google.android.permissioncontroller"
    tap(gal, text="Allow")
    assert gal.current_package() == Gallery.package
    gal.show_popup("loading")
    tap_target = el(gal, text="Loading…")
    assert tap_target
    gal.tap(10, 10)  # swallowed while loading
    assert state(gal)["clicked"] == []
    gal.wait(3)
    assert not gal.ui_tree().find(text="Loading…")
    gal.show_popup("rate")
    assert gal.ui_tree().find(text="Enjoying Gallery?")
    gal.key("back")
    assert not gal.ui_tree().find(text="Enjoying Gallery?")


def test_random_popups_appear_only_when_enabled():
    def count(popups: bool) -> int:
        d = SimDevice(make_apps(), SimConfig(popups=popups, popup_rate=0.3))
        d.launch("com.example.notes")
        n = 0
        for _ in range(40):
            if d.ui_tree().find(text="Not now") or d.ui_tree().find(text="Allow") or d.ui_tree().find(text="Loading…"):
                n += 1
                d.key("back")
            d.wait(0.5)
            d.swipe(300, 900, 300, 500)
        return n

    assert count(False) == 0
    assert count(True) > 0


def test_errors():
    with pytest.raises(ConfigError, match="two apps"):
        SimDevice([*make_apps(), *make_apps()])
    with pytest.raises(ConfigError, match="density"):
        SimConfig(density=10)
    d = SimDevice(make_apps())
    with pytest.raises(AppError, match="not installed"):
        d.launch("com.nope")
    with pytest.raises(DeviceError, match="unknown key"):
        d.key("volume_up")
    d.close()
    with pytest.raises(DeviceError, match="closed"):
        d.tap(1, 1)


def test_clock_is_virtual(sim):
    t0 = sim.now()
    sim.tap(1, 1)
    sim.wait(30)
    assert sim.now() - t0 == dt.timedelta(seconds=31)


def test_shell_commands(sim):
    assert sim.shell("wm size").strip() == "Physical size: 720x1600"
    assert sim.shell("getprop ro.build.version.sdk").strip() == "34"
    sim.shell("monkey -p com.example.notes -c android.intent.category.LAUNCHER 1")
    assert sim.current_package() == "com.example.notes"
    assert "com.example.notes/" in sim.shell("dumpsys window windows | grep mCurrentFocus")
    assert "package:com.example.notes" in sim.shell("pm list packages")
    sim.shell("input text Hello%sthere")  # no focus: nothing happens, no error
    assert "UI hierchary dumped to" in sim.shell("uiautomator dump /sdcard/window_dump.xml")
    assert parse_xml(sim.files["/sdcard/window_dump.xml"]).packages == ("com.example.notes",)
    assert sim.shell("nosuchcmd").startswith("/system/bin/sh: nosuchcmd")
