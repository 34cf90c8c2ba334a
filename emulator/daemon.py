"""Entry point of one detached virtual-device process: `python -m coadapt.emulator.daemon`.

The manager starts it; it serves one VirtualDevice until SIGTERM/SIGINT, then drops every
connection and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path

from coadapt.android_env.sim import SimConfig

from .virtual import VirtualDevice

log = logging.getLogger(__name__)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m coadapt.emulator.daemon", description=__doc__)
    ap.add_argument("--port", type=int, required=True, help="TCP port to serve the ADB transport on")
    ap.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    ap.add_argument("--serial", required=True, help="ro.serialno the simulated phone reports")
    ap.add_argument("--seed", type=int, default=0, help="seed of the simulated phone")
    ap.add_argument("--apps", default="", help="comma-separated packages to install (default: all)")
    ap.add_argument("--popups", action="store_true", help="show random system popups")
    ap.add_argument("--boot-delay", type=float, default=0.0, help="seconds until sys.boot_completed=1")
    ap.add_argument("--auth-keys", type=Path, default=None,
                    help="require ADB authentication; allow only the keys in this adbkey.pub-style file")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    config = SimConfig(serial=args.serial, seed=args.seed, popups=args.popups)
    apps = [a for a in args.apps.split(",") if a] or None
    try:
        device = VirtualDevice(config, port=args.port, host=args.host, apps=apps, boot_delay_s=args.boot_delay,
                               auth_keys=args.auth_keys)
    except OSError as e:
        log.error("cannot read the allowed ADB keys: %s", e)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        device.start()
    except OSError as e:
        log.error("cannot listen on %s:%d: %s", args.host, args.port, e)
        return 2
    log.info("serving %s on %s", args.serial, device.address)
    while not stop.wait(1.0):
        if not device.running:
            log.error("the device thread died")
            return 1
    device.stop()
    log.info("stopped %s", args.serial)
    return 0


if __name__ == "__main__":
    sys.exit(main())
