"""The uiautomator2 server of a virtual device: HTTP on device port 9008, JSON-RPC on /jsonrpc/0.

Answers what uiautomator2 3.7.1 sends (`u2.connect`, `dump_hierarchy`, `click`, `long_click`,
`swipe`, `press`, `screenshot`, `info`, `send_keys` through the clipboard, `d(text=...)`
selectors, `touch.down/up`), in the shapes the Java server (openatx/android-uiautomator-server,
`AutomatorServiceImpl`) returns. Errors use its JSON-RPC error shape, code -32001 plus the Java
exception name, which the client maps to its exceptions.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import re
from typing import Any, Callable

from coadapt.android_env.device import KEY_NAMES
from coadapt.android_env.uitree import UiElement, parse_xml

from .phone import Phone

log = logging.getLogger(__name__)

DEFAULT_PORT = 9008
ERROR_CODE = -32001
_KEY_ALIASES = {"recent": "recents", "del": "delete", "back": "back", "home": "home", "enter": "enter", "delete": "delete"}
_CODE_TO_KEY = {code: name for name, code in KEY_NAMES.items()}


class RpcError(Exception):
    """A JSON-RPC error reply: `message` names the Java exception, as the real server does."""

    def __init__(self, message: str, code: int = ERROR_CODE):
        super().__init__(message)
        self.code = code


def http_response(status: int, body: bytes, content_type: str = "text/plain") -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 500: "Internal Server Error"}.get(status, "OK")
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n")
    return head.encode() + body


def parse_request(raw: bytes) -> tuple[str, str, dict[str, str], int]:
    """(method, path, headers, header length) of an HTTP request head ending in CRLFCRLF."""
    end = raw.index(b"\r\n\r\n")
    lines = raw[:end].decode("latin-1").split("\r\n")
    method, path, _version = (lines[0].split(" ") + ["", ""])[:3]
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return method, path, headers, end + 4


class U2Rpc:
    """The JSON-RPC methods, run on the phone's worker thread (one call at a time)."""

    def __init__(self, phone: Phone):
        self.phone = phone
        self._down: tuple[int, int] | None = None
        self._methods: dict[str, Callable[..., Any]] = {
            "dumpWindowHierarchy": self.dump_window_hierarchy,
            "takeScreenshot": self.take_screenshot,
            "deviceInfo": self.device_info,
            "click": self.click,
            "swipe": self.swipe,
            "swipePoints": self.swipe_points,
            "drag": self.drag,
            "pressKey": self.press_key,
            "pressKeyCode": self.press_key_code,
            "setClipboard": self.set_clipboard,
            "getClipboard": lambda: self.phone.clipboard,
            "pasteClipboard": self.paste_clipboard,
            "clearInputText": self.clear_input_text,
            "injectInputEvent": self.inject_input_event,
            "waitForExists": self.wait_for_exists,
            "waitUntilGone": lambda sel, timeout=0: not self._find(sel),
            "exist": lambda sel: bool(self._find(sel)),
            "objInfo": self.obj_info,
            "count": lambda sel: len(self._find(sel)),
            "wakeUp": lambda: True,
            "sleep": lambda: True,
            "isScreenOn": lambda: True,
            "freezeRotation": lambda freeze=True: True,
            "setOrientation": lambda orientation: True,
            "getLastToast": lambda: None,
            "clearLastToast": lambda: True,
            "getLastTraversedText": lambda: None,
            "clearLastTraversedText": lambda: True,
        }

    def call(self, method: str, params: Any) -> Any:
        fn = self._methods.get(method)
        if fn is None:
            raise RpcError(f"Method not found: {method}", code=-32601)
        if isinstance(params, dict):
            return fn(**params) if params else fn()
        return fn(*(params or []))

    # ------------------------------------------------------------------ methods

    def dump_window_hierarchy(self, compressed: bool = False, max_depth: int = 50, root_in_active: bool = False) -> str:
        return self.phone.u2_dump(bool(root_in_active))

    def take_screenshot(self, scale: float = 1, quality: int = 80) -> str:
        img = self.phone.screenshot()
        if scale != 1:
            img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))))
        buf = io.BytesIO()
        img.save(buf, format="JPEG", quality=int(quality))
        return base64.b64encode(buf.getvalue()).decode()

    def device_info(self) -> dict[str, Any]:
        p = self.phone
        return {
            "currentPackageName": p.current_package(),
            "displayWidth": p.width,
            "displayHeight": p.height,
            "displayRotation": 0,
            "displaySizeDpX": round(p.width / p.density),
            "displaySizeDpY": round(p.height / p.density),
            "productName": "sim",
            "naturalOrientation": True,
            "screenOn": True,
            "sdkInt": 34,
        }

    def click(self, x: int, y: int, duration_ms: int | None = None) -> bool:
        if duration_ms is not None and duration_ms >= 400:
            self.phone.long_press(int(x), int(y), int(duration_ms))
        else:
            self.phone.tap(int(x), int(y))
        return True

    def swipe(self, fx: int, fy: int, tx: int, ty: int, steps: int = 10) -> bool:
        # uiautomator throttles each step to 5 ms.
        self.phone.swipe(int(fx), int(fy), int(tx), int(ty), max(1, int(steps)) * 5)
        return True

    def swipe_points(self, points: list[int], steps: int = 10) -> bool:
        if len(points) < 4:
            return False
        return self.swipe(points[0], points[1], points[-2], points[-1], steps)

    def drag(self, sx: int, sy: int, ex: int, ey: int, steps: int = 100) -> bool:
        return self.swipe(sx, sy, ex, ey, steps)

    def press_key(self, key: str) -> bool:
        name = _KEY_ALIASES.get(str(key).lower(), str(key).lower())
        if name not in KEY_NAMES:
            return False  # keys the phone has no use for (menu, volume) do nothing
        self.phone.key(name)
        return True

    def press_key_code(self, code: int, meta: int = 0) -> bool:
        name = _CODE_TO_KEY.get(int(code))
        if name is None:
            return False
        self.phone.key(name)
        return True

    def set_clipboard(self, label: str | None, text: str) -> None:
        self.phone.clipboard = text

    def paste_clipboard(self) -> None:
        if self.phone.clipboard:
            self.phone.input_text(self.phone.clipboard)

    def clear_input_text(self) -> None:
        focused = [e for e in parse_xml(self.phone.dump_xml("u2")) if e.focused and e.editable]
        for _ in range(len(focused[0].text) if focused else 0):
            self.phone.key("delete")

    def inject_input_event(self, action: int, x: float, y: float, meta: int = 0) -> bool:
        if action == 0:  # ACTION_DOWN
            self._down = (int(x), int(y))
        elif action == 1 and self._down is not None:  # ACTION_UP
            (x0, y0), self._down = self._down, None
            if abs(x - x0) < 8 * self.phone.density and abs(y - y0) < 8 * self.phone.density:
                self.phone.tap(x0, y0)
            else:
                self.phone.swipe(x0, y0, int(x), int(y), 300)
        return True

    def wait_for_exists(self, selector: dict, timeout: int = 0) -> bool:
        # Virtual time does not pass while nobody acts, so looking once is the whole wait.
        return bool(self._find(selector))

    def obj_info(self, selector: dict) -> dict[str, Any]:
        found = self._find(selector)
        if not found:
            raise RpcError(f"androidx.test.uiautomator.UiObjectNotFoundException: UiSelector{selector}")
        e, kids = found[0]
        b = {"left": e.bounds.left, "top": e.bounds.top, "right": e.bounds.right, "bottom": e.bounds.bottom}
        return {
            "bounds": b, "visibleBounds": dict(b), "checkable": e.checkable, "checked": e.checked, "childCount": kids,
            "className": e.class_name, "clickable": e.clickable, "contentDescription": e.content_desc or None,
            "enabled": e.enabled, "focusable": e.focusable, "focused": e.focused, "longClickable": e.long_clickable,
            "packageName": e.package, "resourceName": e.resource_id or None, "scrollable": e.scrollable,
            "selected": e.selected, "text": e.text,
        }

    def _find(self, selector: dict) -> list[tuple[UiElement, int]]:
        tree = parse_xml(self.phone.dump_xml("u2"))
        hits = [(e, len(tree.children[e.index])) for e in tree if _matches(e, selector)]
        instance = selector.get("instance")
        if isinstance(instance, int) and hits:
            hits = hits[instance : instance + 1]
        return hits


_FIELDS: dict[str, Callable[[UiElement, Any], bool]] = {
    "text": lambda e, v: e.text == v,
    "textContains": lambda e, v: v in e.text,
    "textMatches": lambda e, v: re.fullmatch(v, e.text) is not None,
    "textStartsWith": lambda e, v: e.text.startswith(v),
    "className": lambda e, v: e.class_name == v,
    "classNameMatches": lambda e, v: re.fullmatch(v, e.class_name) is not None,
    "description": lambda e, v: e.content_desc == v,
    "descriptionContains": lambda e, v: v in e.content_desc,
    "descriptionMatches": lambda e, v: re.fullmatch(v, e.content_desc) is not None,
    "descriptionStartsWith": lambda e, v: e.content_desc.startswith(v),
    "resourceId": lambda e, v: e.resource_id == v,
    "resourceIdMatches": lambda e, v: re.fullmatch(v, e.resource_id) is not None,
    "packageName": lambda e, v: e.package == v,
    "packageNameMatches": lambda e, v: re.fullmatch(v, e.package) is not None,
    "checkable": lambda e, v: e.checkable == v,
    "checked": lambda e, v: e.checked == v,
    "clickable": lambda e, v: e.clickable == v,
    "longClickable": lambda e, v: e.long_clickable == v,
    "scrollable": lambda e, v: e.scrollable == v,
    "enabled": lambda e, v: e.enabled == v,
    "focusable": lambda e, v: e.focusable == v,
    "focused": lambda e, v: e.focused == v,
    "selected": lambda e, v: e.selected == v,
    "index": lambda e, v: e.sibling_index == v,
}
_IGNORED = {"mask", "childOrSibling", "childOrSiblingSelector", "instance"}


def _matches(e: UiElement, selector: dict) -> bool:
    for key, value in selector.items():
        if key in _IGNORED:
            continue
        test = _FIELDS.get(key)
        if test is None or not test(e, value):
            return False
    return True


def handle_http(rpc: U2Rpc, method: str, path: str, body: bytes) -> bytes:
    """Answer one HTTP request (run on the phone's worker thread)."""
    if method == "GET" and path == "/ping":
        return http_response(200, b"pong")
    if method == "POST" and path.startswith("/jsonrpc/0"):
        try:
            req = json.loads(body or b"{}")
        except json.JSONDecodeError as e:
            return http_response(400, f"bad JSON: {e}".encode())
        rid = req.get("id", 1)
        try:
            result = rpc.call(req.get("method", ""), req.get("params"))
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "result": result}
        except RpcError as e:
            reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": e.code, "message": str(e), "data": str(e)}}
        except (TypeError, ValueError, KeyError) as e:
            name = "java.lang.IllegalArgumentException"
            reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": ERROR_CODE, "message": f"{name}: {e}", "data": repr(e)}}
        except Exception as e:  # the real server reports any Java exception this way
            log.exception("u2 rpc %s failed", req.get("method"))
            reply = {"jsonrpc": "2.0", "id": rid, "error": {"code": ERROR_CODE, "message": f"java.lang.RuntimeException: {e}", "data": repr(e)}}
        return http_response(200, json.dumps(reply, ensure_ascii=False).encode(), "application/json")
    if method == "GET" and path == "/info":
        return http_response(200, json.dumps(rpc.device_info()).encode(), "application/json")
    return http_response(404, b"Not Found")
