"""A small Android shell for the simulated phone: the commands ADB clients send, answered
the way a real device answers them (same output formats, same exit codes).

Besides the stock commands, `cmd coadapt ...` exposes what tasks need on simulated apps:
`cmd coadapt state get PKG` prints the app's state as JSON, `cmd coadapt state put PKG FILE`
loads it from a file, `cmd coadapt reset [SEED]` resets the device (keeping /data/local/tmp,
as a real reset would), `cmd coadapt wait SECONDS` advances the virtual clock.

The interpreter also understands what clients chain around commands: `;`, `&&`, `||`, `$?`,
quote-aware pipes into grep/head/cat, and `>`/`2>` redirections (stdout and stderr are one
stream here). A device object may offer optional attributes that virtual devices
(coadapt.emulator) use for fault injection: `extra_props` (getprop overrides, e.g. an
unfinished boot), `focused_window_title` (what `dumpsys window` shows for a system dialog,
such as "Application Not Responding: PKG") and `inject_fault(args)` (what
`cmd coadapt fault ...` runs).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import shlex
import struct
from typing import TYPE_CHECKING, Callable

from ..device import KEY_NAMES
from ..errors import AppError, CoadaptError, UiTreeError

if TYPE_CHECKING:
    from .device import SimDevice

ANDROID_RELEASE = "14"
ANDROID_SDK = "34"
_KEYCODES = {code: name for name, code in KEY_NAMES.items()}
_KEYCODES.update({f"KEYCODE_{name.upper()}": name for name in KEY_NAMES})
_KEYCODES.update({"KEYCODE_DEL": "delete", "KEYCODE_APP_SWITCH": "recents", "KEYCODE_MOVE_END": "move_end"})
# `input keyevent` also takes names without the KEYCODE_ prefix (KeyEvent.keyCodeFromString).
_KEYCODES.update({k.removeprefix("KEYCODE_"): v for k, v in list(_KEYCODES.items()) if isinstance(k, str)})


ADB_KEYBOARD_IME = "com.android.adbkeyboard/.AdbIME"
"""ADBKeyboard (senzhk/ADBKeyBoard): the IME agents install to type non-ASCII text through
`am broadcast -a ADB_INPUT_B64 --es msg BASE64`; the simulated phone has it installed."""
LATIN_IME = "com.android.inputmethod.latin/.LatinIME"
TOOLS_DIR = "/data/local/tmp/"
"""Files under here (pushed tools such as u2.jar) survive `cmd coadapt reset`."""


def _props(dev: "SimDevice") -> dict[str, str]:
    props = _base_props(dev)
    props.update(getattr(dev, "extra_props", None) or {})
    return props


def _base_props(dev: "SimDevice") -> dict[str, str]:
    return {
        "ro.build.version.release": ANDROID_RELEASE,
        "ro.build.version.sdk": ANDROID_SDK,
        "ro.product.model": "coadapt-sim",
        "ro.product.manufacturer": "coadapt",
        "ro.product.name": "sim",
        "ro.product.device": "sim",
        "ro.product.cpu.abi": "x86_64",
        "ro.serialno": dev.serial,
        "ro.sf.lcd_density": str(round(dev.density * 160)),
        "sys.boot_completed": "1",
        "init.svc.bootanim": "stopped",
        "ro.kernel.qemu": "1",
    }


LONG_PRESS_MS = 400
"""A touch held this long without moving is a long press (Android's default timeout)."""


def _input_text_arg(arg: str) -> str:
    # `input text` takes %s for a space; adbutils and AndroidWorld send it that way.
    return arg.replace("%s", " ")


def run_shell(dev: "SimDevice", cmdline: str) -> tuple[bytes, int]:
    """Run one command line; returns (output, exit code). Supports `;`, `&&`, `||`, `$?`,
    pipes into grep/head/cat and `>`/`2>` redirections, which is what clients chain."""
    out = io.BytesIO()
    code = 0
    for part, op in _split(cmdline):
        if (op == "&&" and code != 0) or (op == "||" and code == 0):
            continue
        part = part.replace("$?", str(code))
        pipe = _split_pipes(part)
        data, code = _run_one(dev, pipe[0].strip())
        for filt in pipe[1:]:
            data, code = _filter(data, filt.strip())
        out.write(data)
    return out.getvalue(), code


def _split(cmdline: str) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []
    op = ";"
    buf = ""
    i = 0
    quote = ""
    while i < len(cmdline):
        ch = cmdline[i]
        if quote:
            if ch == quote:
                quote = ""
            buf += ch
        elif ch in "'\"":
            quote = ch
            buf += ch
        elif cmdline.startswith("&&", i) or cmdline.startswith("||", i):
            parts.append((buf, op))
            buf, op = "", cmdline[i : i + 2]
            i += 1
        elif ch in ";\n":
            parts.append((buf, op))
            buf, op = "", ";"
        else:
            buf += ch
        i += 1
    parts.append((buf, op))
    return [(p.strip(), o) for p, o in parts if p.strip()]


def _split_pipes(part: str) -> list[str]:
    pieces, buf, quote = [], "", ""
    for ch in part:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "|":
            pieces.append(buf)
            buf = ""
            continue
        buf += ch
    pieces.append(buf)
    return pieces


def _filter(data: bytes, filt: str) -> tuple[bytes, int]:
    try:
        argv = shlex.split(filt)
    except ValueError:
        return b"", 2
    if argv and argv[0] in ("grep", "egrep"):
        flags: set[str] = {"-E"} if argv[0] == "egrep" else set()
        patterns: list[str] = []
        words: list[str] = []
        args = iter(argv[1:])
        for a in args:
            if a == "-e":
                patterns.append(next(args, ""))
            elif a == "-m":
                next(args, None)
            elif a.startswith("-") and len(a) > 1:
                flags.update(f"-{c}" for c in a[1:])
            else:
                words.append(a)
        if not patterns and words:
            patterns = words[:1]
        if not patterns:
            return b"", 2
        re_flags = re.IGNORECASE if "-i" in flags else 0
        if "-E" in flags:
            regexes = [re.compile(p, re_flags) for p in patterns]
        else:
            regexes = [re.compile(re.escape(p), re_flags) for p in patterns]
        invert = "-v" in flags
        lines = [ln for ln in data.decode(errors="replace").splitlines(True)
                 if any(r.search(ln) for r in regexes) != invert]
        return "".join(lines).encode(), 0 if lines else 1
    if argv and argv[0] == "head":
        n = 10
        for i, a in enumerate(argv[1:], 1):
            if a == "-n" and i + 1 < len(argv):
                n = int(argv[i + 1])
            elif a.startswith("-") and a[1:].isdigit():
                n = int(a[1:])
        return b"".join(data.splitlines(True)[:n]), 0
    if argv and argv[0] in ("cat", "tr"):
        return data, 0
    return f"/system/bin/sh: {argv[0] if argv else ''}: inaccessible or not found\n".encode(), 127


def _run_one(dev: "SimDevice", cmd: str) -> tuple[bytes, int]:
    try:
        argv = shlex.split(cmd)
    except ValueError as e:
        return f"/system/bin/sh: syntax error: {e}\n".encode(), 2
    argv, target = _redirections(argv)
    while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]):
        argv = argv[1:]  # VAR=value prefixes set the command's environment; nothing reads it
    if not argv:
        return b"", 0
    handler = _COMMANDS.get(argv[0])
    if handler is None:
        return f"/system/bin/sh: {argv[0]}: inaccessible or not found\n".encode(), 127
    try:
        out, code = handler(dev, argv[1:])
    except CoadaptError as e:
        out, code = f"Error: {e}\n".encode(), 1
    if target is None:
        return out, code
    if target != "/dev/null":
        dev.files[target] = out
    return b"", code


def _redirections(argv: list[str]) -> tuple[list[str], str | None]:
    """Strip `> F`, `>F`, `>> F`, `2>&1`, `2>/dev/null`; returns (argv, stdout target)."""
    kept: list[str] = []
    target: str | None = None
    it = iter(argv)
    for a in it:
        if a in ("2>&1", "1>&2", ">&2") or a.startswith("2>"):
            if a == "2>":
                next(it, None)
            continue
        if a in (">", ">>", "1>"):
            target = next(it, "/dev/null")
        elif a.startswith((">>", ">", "1>")):
            target = a.lstrip("1>")
        else:
            kept.append(a)
    return kept, target


def _echo(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    return (" ".join(args) + "\n").encode(), 0


def _getprop(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    props = _props(dev)
    if args:
        return (props.get(args[0], "") + "\n").encode(), 0
    return "".join(f"[{k}]: [{v}]\n" for k, v in sorted(props.items())).encode(), 0


def _wm(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if args[:1] == ["size"]:
        return f"Physical size: {dev.width}x{dev.height}\n".encode(), 0
    if args[:1] == ["density"]:
        return f"Physical density: {round(dev.density * 160)}\n".encode(), 0
    return b"usage: wm [size|density]\n", 1


def _input(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if args and args[0] in ("touchscreen", "keyboard", "mouse", "trackball"):
        args = args[1:]
    if not args:
        return b"Usage: input [<source>] <command> [<arg>...]\n", 1
    cmd, rest = args[0], args[1:]
    try:
        if cmd == "tap" and len(rest) == 2:
            dev.tap(round(float(rest[0])), round(float(rest[1])))
        elif cmd in ("swipe", "draganddrop") and len(rest) in (4, 5):
            x1, y1, x2, y2 = (round(float(v)) for v in rest[:4])
            ms = int(rest[4]) if len(rest) == 5 else 300
            slop = 8 * dev.density  # Android's touch slop: closer than this is not a move
            if abs(x2 - x1) < slop and abs(y2 - y1) < slop and ms >= LONG_PRESS_MS:
                dev.long_press(x1, y1, ms)  # `input swipe x y x y 1000` is the long-press idiom
            else:
                dev.swipe(x1, y1, x2, y2, ms)
        elif cmd == "longpress" and len(rest) == 2:
            dev.long_press(round(float(rest[0])), round(float(rest[1])))
        elif cmd == "text" and rest:
            dev.input_text(_input_text_arg(" ".join(rest)))
        elif cmd == "keyevent" and rest:
            for code in rest:
                if code == "--longpress":
                    continue
                name = _KEYCODES.get(int(code) if code.isdigit() else code)
                if name is None:
                    continue  # real devices ignore keys with no effect here
                dev.key(name)
        else:
            return f"Error: bad arguments for input {cmd}\n".encode(), 1
    except ValueError:
        return f"Error: bad arguments for input {cmd}\n".encode(), 1
    return b"", 0


def _package_of_component(comp: str) -> str:
    return comp.split("/", 1)[0]


def _am(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if not args:
        return b"usage: am [start|force-stop|broadcast]\n", 1
    if args[0] in ("start", "start-activity"):
        pkg = None
        it = iter(args[1:])
        for a in it:
            if a == "-n":
                pkg = _package_of_component(next(it, ""))
            elif a in ("-a", "-c", "-d", "-t", "-f", "--user", "-e", "--es"):
                nxt = next(it, "")
                if a in ("-e", "--es"):
                    next(it, "")
                _ = nxt
            elif a.startswith("-"):
                continue
            elif "/" in a:
                pkg = _package_of_component(a)
            elif "." in a:
                pkg = a
        if pkg is None:
            return b"Error: no component given\n", 1
        try:
            dev.launch(pkg)
        except AppError:
            return (f"Starting: Intent {{ cmp={pkg} }}\nError type 3\n"
                    f"Error: Activity class {{{pkg}/{pkg}.MainActivity}} does not exist.\n").encode(), 1
        return f"Starting: Intent {{ cmp={pkg}/.MainActivity }}\n".encode(), 0
    if args[0] == "broadcast":
        return _broadcast(dev, args[1:])
    if args[0] == "force-stop" and len(args) > 1:
        if dev.current_package() == args[1]:
            dev.key("home")
        return b"", 0
    return f"Error: unknown am command {args[0]}\n".encode(), 1


def _broadcast(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    action = None
    extras: dict[str, str] = {}
    it = iter(args)
    for a in it:
        if a == "-a":
            action = next(it, "")
        elif a in ("--es", "-e", "--ei"):
            key = next(it, "")
            extras[key] = next(it, "")
        elif a in ("-n", "-p", "--user", "-f"):
            next(it, None)
    head = f"Broadcasting: Intent {{ act={action} flg=0x400000 }}\n"
    ime = dev.settings.get(("secure", "default_input_method"), LATIN_IME)
    if action in ("ADB_INPUT_TEXT", "ADB_INPUT_B64") and ime == ADB_KEYBOARD_IME:
        msg = extras.get("msg", "")
        if action == "ADB_INPUT_B64":
            try:
                msg = base64.b64decode(msg).decode("utf-8")
            except ValueError:
                return (head + "Broadcast completed: result=0\n").encode(), 0
        dev.input_text(msg)
    elif action == "ADB_INPUT_CODE" and ime == ADB_KEYBOARD_IME:
        code = extras.get("code", "")
        name = _KEYCODES.get(int(code) if code.isdigit() else code)
        if name is not None:
            dev.key(name)
    # ADBKeyboard sets no result code, and nobody answers when it is not the current IME:
    # either way the broadcast just completes with result=0, as on a real phone.
    return (head + "Broadcast completed: result=0\n").encode(), 0


def _ime(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    installed = [LATIN_IME, ADB_KEYBOARD_IME]
    enabled = dev.settings.setdefault(("secure", "enabled_input_methods"), LATIN_IME).split(":")
    if args[:1] == ["list"]:
        shown = installed if "-a" in args else [i for i in installed if i in enabled]
        if "-s" in args:
            return "".join(f"{i}\n" for i in shown).encode(), 0
        return "".join(f"{i}:\n  mId={i}\n" for i in shown).encode(), 0
    if args[:1] in (["enable"], ["disable"]) and len(args) > 1:
        ime = args[-1]
        if ime not in installed:
            return f"Unknown input method {ime} cannot be enabled for user #0\n".encode(), 255
        if args[0] == "enable" and ime not in enabled:
            enabled.append(ime)
        elif args[0] == "disable" and ime in enabled:
            enabled.remove(ime)
        dev.settings[("secure", "enabled_input_methods")] = ":".join(enabled)
        return f"Input method {ime}: {'now enabled' if args[0] == 'enable' else 'now disabled'}\n".encode(), 0
    if args[:1] == ["set"] and len(args) > 1:
        ime = args[-1]
        if ime not in enabled:
            return f"Unknown input method {ime} cannot be selected for user #0\n".encode(), 255
        dev.settings[("secure", "default_input_method")] = ime
        return f"Input method {ime} selected for user #0\n".encode(), 0
    if args[:1] == ["reset"]:
        dev.settings[("secure", "default_input_method")] = LATIN_IME
        return b"", 0
    return b"usage: ime [list|enable|disable|set|reset] ...\n", 1


def _md5sum(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    out, code = b"", 0
    for p in args:
        if p.startswith("-"):
            continue
        if p not in dev.files:
            out += f"md5sum: {p}: No such file or directory\n".encode()
            code = 1
            continue
        out += f"{hashlib.md5(dev.files[p]).hexdigest()}  {p}\n".encode()
    return out, code


def _toybox(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if not args:
        return b"usage: toybox COMMAND [ARGS...]\n", 1
    handler = _COMMANDS.get(args[0])
    if handler is None or handler is _toybox:
        return f"toybox: Unknown command {args[0]}\n".encode(), 1
    return handler(dev, args[1:])


def _monkey(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if "-p" not in args:
        return b"** Error: monkey needs -p PACKAGE here\n", 1
    pkg = args[args.index("-p") + 1]
    try:
        dev.launch(pkg)
    except AppError:
        return b"** No activities found to run, monkey aborted.\n", 252
    return b"Events injected: 1\n## Network stats: elapsed time=10ms (0ms mobile, 0ms wifi, 10ms not connected)\n", 0


def _window_line(dev: "SimDevice") -> str:
    pkg = dev.current_package()
    act = f"{pkg}/{pkg}.MainActivity" if pkg.startswith("com.example") else f"{pkg}/.Main"
    return act


def _dumpsys(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    act = _window_line(dev)
    if args[:1] == ["window"]:
        focus = getattr(dev, "focused_window_title", None) or act
        text = (f"WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
                f"  mCurrentFocus=Window{{5e1a2b3 u0 {focus}}}\n"
                f"  mFocusedApp=ActivityRecord{{7c2d4e5 u0 {act} t12}}\n")
        return text.encode(), 0
    if args[:1] == ["activity"]:
        return (f"  mResumedActivity: ActivityRecord{{7c2d4e5 u0 {act} t12}}\n"
                f"  ResumedActivity: ActivityRecord{{7c2d4e5 u0 {act} t12}}\n").encode(), 0
    if args[:1] == ["display"]:
        return (f"  mBaseDisplayInfo=DisplayInfo{{\"Built-in Screen\", real {dev.width} x {dev.height}, rotation 0}}\n"
                f"  mDefaultViewport=DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, "
                f"orientation=0, logicalFrame=Rect(0, 0 - {dev.width}, {dev.height}), deviceWidth={dev.width}, "
                f"deviceHeight={dev.height}}}\n").encode(), 0
    return b"", 0


def _pm(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if args[:2] == ["list", "packages"]:
        pkgs = [a.package for a in dev.apps]
        if "-3" not in args:
            pkgs = ["android", "com.android.systemui", "com.android.launcher3", "com.android.settings", *pkgs]
        filt = [a for a in args[2:] if not a.startswith("-")]
        if filt:
            pkgs = [p for p in pkgs if filt[0] in p]
        return "".join(f"package:{p}\n" for p in sorted(pkgs)).encode(), 0
    if args[:1] == ["clear"] and len(args) > 1:
        dev.app(args[-1]).reset()
        return b"Success\n", 0
    if args[:1] == ["path"] and len(args) > 1:
        dev.app(args[1])
        return f"package:/data/app/{args[1]}/base.apk\n".encode(), 0
    return f"Error: unknown pm command {' '.join(args)}\n".encode(), 1


_SETTING_DEFAULTS = {
    ("secure", "default_input_method"): LATIN_IME,
    ("secure", "enabled_input_methods"): LATIN_IME,
    ("global", "window_animation_scale"): "1.0",
    ("global", "transition_animation_scale"): "1.0",
    ("global", "animator_duration_scale"): "1.0",
}


def _settings(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    store = dev.settings
    if len(args) >= 3 and args[0] == "get":
        return (store.get((args[1], args[2]), _SETTING_DEFAULTS.get((args[1], args[2]), "null")) + "\n").encode(), 0
    if len(args) >= 4 and args[0] == "put":
        store[(args[1], args[2])] = args[3]
        return b"", 0
    return b"usage: settings [get|put] NAMESPACE KEY [VALUE]\n", 1


def _uiautomator(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if not args or args[0] != "dump":
        return b"Usage: uiautomator dump [--compressed] [FILE]\n", 1
    paths = [a for a in args[1:] if not a.startswith("--")]
    path = paths[0] if paths else "/sdcard/window_dump.xml"
    try:
        xml = dev.dump_xml("stock").encode()
    except UiTreeError as e:
        # Like the real tool: the error goes out, no file is written, the exit code stays 0.
        return f"ERROR: {e}\n".encode(), 0
    if path == "/dev/tty":
        return xml + b"UI hierchary dumped to: /dev/tty\n", 0
    dev.files[path] = xml
    return f"UI hierchary dumped to: {path}\n".encode(), 0


def _screencap(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    # Like the real tool: PNG with -p or a *.png file name, else the raw frame buffer with its
    # header (width, height, pixel format 1 = RGBA_8888, dataspace; u32 LE each, Android 12+).
    paths = [a for a in args if not a.startswith("-")]
    img = dev.screenshot()
    if "-p" in args or (paths and paths[0].endswith(".png")):
        buf = io.BytesIO()
        img.save(buf, format="PNG", compress_level=1)
        data = buf.getvalue()
    else:
        data = struct.pack("<4I", img.width, img.height, 1, 0) + img.tobytes("raw", "RGBX")  # X packs as 255
    if paths:
        dev.files[paths[0]] = data
        return b"", 0
    return data, 0


def _cat(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    out = b""
    for p in args:
        if p not in dev.files:
            return out + f"cat: {p}: No such file or directory\n".encode(), 1
        out += dev.files[p]
    return out, 0


def _rm(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    for p in args:
        if p.startswith("-"):
            continue
        dev.files.pop(p, None)
    return b"", 0


def _ls(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    paths = [a for a in args if not a.startswith("-")] or ["/sdcard"]
    out = []
    for p in paths:
        if p in dev.files:
            out.append(p)
            continue
        prefix = p.rstrip("/") + "/"
        names = sorted({k[len(prefix):].split("/", 1)[0] for k in dev.files if k.startswith(prefix)})
        if not names and p not in ("/sdcard", "/sdcard/", "/data/local/tmp", "/data/local/tmp/"):
            return f"ls: {p}: No such file or directory\n".encode(), 1
        out.extend(names)
    return "".join(f"{n}\n" for n in out).encode(), 0


def _cmd(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    if args[:1] != ["coadapt"]:
        return f"cmd: Can't find service: {args[0] if args else ''}\n".encode(), 20
    rest = args[1:]
    if rest[:2] == ["state", "get"] and len(rest) == 3:
        return (json.dumps(dev.read_app_state(rest[2]), ensure_ascii=False) + "\n").encode(), 0
    if rest[:2] == ["state", "put"] and len(rest) == 4:
        data = dev.files.get(rest[3])
        if data is None:
            return f"Error: no file {rest[3]}\n".encode(), 1
        try:
            state = json.loads(data)
        except json.JSONDecodeError as e:
            return f"Error: {rest[3]} is not JSON: {e}\n".encode(), 1
        dev.write_app_state(rest[2], state)
        return b"", 0
    if rest[:1] == ["reset"]:
        tools = {p: data for p, data in dev.files.items() if p.startswith(TOOLS_DIR)}
        dev.reset(seed=int(rest[1]) if len(rest) > 1 else None)
        dev.files.update(tools)
        return b"", 0
    if rest[:1] == ["fault"]:
        inject = getattr(dev, "inject_fault", None)
        if inject is None:
            return b"Error: this device has no fault injection (virtual devices do)\n", 1
        return inject(rest[1:])
    if rest[:1] == ["wait"] and len(rest) == 2:
        dev.wait(float(rest[1]))
        return b"", 0
    return b"usage: cmd coadapt [state get PKG | state put PKG FILE | reset [SEED] | wait SECONDS | fault ...]\n", 1


def _true(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    return b"", 0


def _false(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    return b"", 1


def _id(dev: "SimDevice", args: list[str]) -> tuple[bytes, int]:
    return b"uid=2000(shell) gid=2000(shell) groups=2000(shell) context=u:r:shell:s0\n", 0


_COMMANDS: dict[str, Callable[["SimDevice", list[str]], tuple[bytes, int]]] = {
    "echo": _echo, "getprop": _getprop, "wm": _wm, "input": _input, "am": _am, "monkey": _monkey,
    "dumpsys": _dumpsys, "pm": _pm, "settings": _settings, "uiautomator": _uiautomator,
    "screencap": _screencap, "cat": _cat, "rm": _rm, "ls": _ls, "cmd": _cmd, "true": _true, "id": _id,
    "sleep": _true, "mkdir": _true, "chmod": _true,
    "ime": _ime, "md5sum": _md5sum, "toybox": _toybox, "false": _false,
}
