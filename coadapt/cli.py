"""The `coadapt` command line: one command per job."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from coadapt.android_env.errors import CoadaptError

app = typer.Typer(
    name="coadapt",
    help="Test-time adaptation of Android GUI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()


@app.callback()
def _root(verbose: bool = typer.Option(False, "-v", "--verbose", help="Log debug messages.")) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@app.command()
def show(
    app_name: str = typer.Option(..., "--app", help="Package or launcher label of the app to open, e.g. com.example.notes."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the screenshot here (PNG)."),
    xml: Optional[Path] = typer.Option(None, "--xml", help="Write the uiautomator dump here."),
    seed: int = typer.Option(0, help="Seed of the simulated phone."),
) -> None:
    """Open an app on a simulated phone and print what the agent sees: the indexed elements."""
    from coadapt.android_env.observation import Observation
    from coadapt.android_env.sim import SimConfig, SimDevice
    from coadapt.apps import app_class, make_apps

    cls = app_class(app_name)
    device = SimDevice(make_apps(), SimConfig(seed=seed))
    device.launch(cls.package)
    obs = Observation.build(device.screenshot(), device.ui_tree(), device.current_package(), 0)
    table = Table(title=f"{cls.label} ({cls.package}) — {obs.size[0]}x{obs.size[1]} px, {len(obs.tree)} nodes")
    table.add_column("#", justify="right")
    table.add_column("class")
    table.add_column("text / description")
    table.add_column("flags")
    table.add_column("bounds")
    for i, e in enumerate(obs.elements):
        flags = ",".join(f for f, on in (("click", e.clickable), ("edit", e.editable), ("scroll", e.scrollable),
                                         ("check", e.checkable), ("long", e.long_clickable)) if on)
        table.add_row(str(i), e.short_class, e.text or (f"[{e.content_desc}]" if e.content_desc else ""), flags, str(e.bounds))
    console.print(table)
    if out is not None:
        obs.screenshot.save(out)
        console.print(f"screenshot: {out}")
    if xml is not None:
        xml.write_text(device.dump_xml("u2"), encoding="utf-8")
        console.print(f"uiautomator dump: {xml}")


def main() -> None:
    """Entry point: runs the app and turns coadapt errors into a one-line message and exit code 2."""
    try:
        app()
    except CoadaptError as e:
        console.print(f"[bold red]error:[/] {e}")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
