"""The `coadapt` command line: one command per job."""

from __future__ import annotations

import json
import logging
import os
import re
import signal
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from coadapt.android_env.errors import CoadaptError, ConfigError
from coadapt.stats import describe

app = typer.Typer(
    name="coadapt",
    help="Test-time adaptation of Android GUI agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(markup=False, soft_wrap=True)  # printed paths and goals may hold [ ]; piped logs keep one line per message


_run_folder: list[Path] = []
"""The run folder the running command writes (for the resume hint printed on Ctrl+C)."""


def _say_folder(folder: Path) -> None:
    """Name a run folder the command chose, first, so a run stopped before its last line can be resumed."""
    console.print(f"run folder: {folder} (if it stops, the same command with --out {folder} resumes it)")


def _writes(folder: Path) -> None:
    """Remember `folder` as the run this command writes (named again if the command is interrupted)."""
    _run_folder[:] = [folder]


def _print_table(table: Table) -> None:
    """Print `table` laid out to the width, its title centred (plain lines are soft-wrapped)."""
    console.print(table, soft_wrap=False)


@app.callback()
def _root(verbose: bool = typer.Option(False, "-v", "--verbose", help="Log debug messages.")) -> None:
    from rich.logging import RichHandler

    # coadapt's own INFO lines (a device recovered, a round rolled back, a resume) are shown;
    # other libraries speak only at WARNING unless -v.
    # On a terminal rich lays each record out; piped or redirected, a record stays one plain line
    # (rich would wrap it at 80 columns inside a log file).
    handler: logging.Handler
    if console.is_terminal:
        handler = RichHandler(console=console, show_time=False, show_path=False, markup=False)
    else:
        handler = logging.StreamHandler(console.file)
        handler.setFormatter(logging.Formatter("%(levelname)-8s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(name)s: %(message)s",
                        handlers=[handler], force=True)
    logging.getLogger("coadapt").setLevel(logging.DEBUG if verbose else logging.INFO)
    # No "Loading weights" bars from transformers (read when it is first imported): a job prints
    # its own progress.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


@app.command()
def show(
    app_name: Optional[str] = typer.Option(None, "--app", help="Package or launcher label of the app to open, e.g. com.example.notes."),
    task: Optional[str] = typer.Option(None, "--task", help="A task template (see `coadapt tasks`): install its initial state and print its goal, so the screen is the one an agent meets."),
    out: Optional[Path] = typer.Option(None, "--out", help="Write the screenshot here (PNG)."),
    xml: Optional[Path] = typer.Option(None, "--xml", help="Write the uiautomator dump here."),
    seed: int = typer.Option(0, help="Seed of the simulated phone (and of the task instance with --task)."),
) -> None:
    """Open an app (or a task's first screen) on a simulated phone and print what the agent sees."""
    from coadapt.android_env.observation import Observation
    from coadapt.android_env.sim import SimConfig, SimDevice
    from coadapt.apps import app_class, make_apps

    if (app_name is None) == (task is None):
        raise typer.BadParameter("give one of --app or --task", param_hint="--app/--task")
    if out is not None and out.suffix.lower() != ".png":
        raise ConfigError(f"--out {out}: the screenshot is written as PNG; give a path ending in .png")
    for path, flag in ((out, "--out"), (xml, "--xml")):
        if path is not None and not path.parent.is_dir():
            raise ConfigError(f"{flag} {path}: folder {path.parent} does not exist")
    device = SimDevice(make_apps(), SimConfig(seed=seed))
    if task is not None:
        from coadapt.rollout import TaskCard
        from coadapt.tasks.registry import get_template

        instance = get_template(task).from_seed(seed)
        card = TaskCard.from_template(instance, f"{task}#{seed}")
        device.reset(seed=card.device_seed)
        card.setup(device)
        cls = app_class(card.app)
        console.print(f"goal: {card.goal}   (max {card.max_steps} steps)")
    else:
        cls = app_class(app_name)
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
    _print_table(table)
    if out is not None:
        obs.screenshot.save(out)
        console.print(f"screenshot: {out}")
    if xml is not None:
        xml.write_text(device.dump_xml("u2"), encoding="utf-8")
        console.print(f"uiautomator dump: {xml}")


def _print_eval_report(report: dict, title: str) -> None:
    table = Table(title=title)
    for col in ("app", "episodes", "success rate", "mean steps"):
        table.add_column(col, justify="left" if col == "app" else "right")
    for app_name, row in report["per_app"].items():
        table.add_row(app_name, str(row["n"]), f"{row['success_rate']:.2f}", f"{row['mean_steps']:.1f}")
    table.add_section()
    table.add_row("all", str(report["n_episodes"]), f"{report['success_rate']:.3f}", f"{report['mean_steps']:.1f}")
    _print_table(table)
    extra = [f"instances {report['n_instances']}", f"invalid actions {report['invalid_action_rate']:.3f}",
             f"infra errors {report['infra_errors']}"]
    if "pass_at_k" in report:
        extra.append(f"pass@{report['k']} {report['pass_at_k']:.3f}")
    if report.get("wall_seconds") is not None:
        extra.append(f"wall {report['wall_seconds']:.1f} s")
    if report.get("disk_mb") is not None:
        extra.append(f"disk {report['disk_mb']:.1f} MB")
    console.print("  ".join(extra))


@app.command("tasks")
def tasks_cmd(
    app_name: Optional[str] = typer.Option(None, "--app", help="Only this app (package or label)."),
    group: Optional[str] = typer.Option(None, help="Only seen or unseen apps (all: both)."),
) -> None:
    """List the task templates (names to use in suite files)."""
    from coadapt.apps import SEEN_APPS
    from coadapt.tasks.registry import TEMPLATES, templates_for_app, templates_for_group

    chosen = list(TEMPLATES.values())
    if app_name:
        chosen = templates_for_app(app_name)
    if group:
        keep = {t.name for t in templates_for_group(group)}
        chosen = [t for t in chosen if t.name in keep]
    # A column the filter already fixes is left out.
    cols = [c for c in ("name", "app", "group", "kind", "cx", "steps", "goal template")
            if not (c == "app" and app_name) and not (c == "group" and group)]
    rows = [[{"name": t.name, "app": t.app.removeprefix("com.example."),
              "group": "seen" if t.app in SEEN_APPS else "unseen", "kind": t.kind, "cx": str(t.complexity),
              "steps": str(t.max_steps), "goal template": t.template}[c] for c in cols]
            for t in sorted(chosen, key=lambda t: (t.app, t.name))]
    if not console.is_terminal:  # piped (grep, cut, a file): one tab-separated line per template, nothing wrapped
        for row in [cols, *rows]:
            print("\t".join(row))
        return
    # Only the goal wraps: names are what the user copies, so they are never cut, even on an
    # 80-column terminal.
    table = Table(title=f"{len(chosen)} task templates")
    for col in cols:
        table.add_column(col, no_wrap=col != "goal template", ratio=1 if col == "goal template" else None)
    for row in rows:
        table.add_row(*row)
    _print_table(table)


# Options shared by the commands that run a policy on phones; each maps onto a config field.
_CONFIG = typer.Option(None, "--config", help="YAML root config (sections model, devices, eval, adapt); options override it.")
_MODEL = typer.Option(None, "--policy", "--model", help="oracle, random, default (the bundled tiny VLM), or a model folder / hub id.")
_ADAPTER = typer.Option(None, help="A peft LoRA adapter folder to load on the model.")
_DEVICE = typer.Option(None, "--device", help="Where the model runs: cpu, cuda or auto.")
_TEMPERATURE = typer.Option(None, help="Sampling temperature (0: greedy). Default: the model folder's setting.")
_TOP_P = typer.Option(None, "--top-p", help="Nucleus sampling mass. Default: the model folder's setting.")
_THREADS = typer.Option(None, help="torch CPU threads for the model (default: torch's choice).")
_DEVICES = typer.Option(None, "--devices", help="Comma-separated ADB serials; default: simulated phones.")
_WORKERS = typer.Option(None, help="Simulated phones in parallel (one worker per device with --devices). Default 2.")
_SEED = typer.Option(None, help="Seed of the simulated phones and of every episode's sampling. Default 0.")
_SETTLE = typer.Option(None, help="Seconds to let a real device's UI settle after each action. Default 0.")
_POPUPS = typer.Option(None, "--popups/--no-popups", help="Random system popups on simulated phones. Default off.")
_ADB_PORT = typer.Option(None, "--adb-port", help="Port of the adb server for --devices (sets $ANDROID_ADB_SERVER_PORT; "
                         "default: that variable, else 5037). Use another port on a machine shared with other adb users.")
_KEEP_ADB = typer.Option(False, "--keep-adb-server", help="Leave running an adb server this command had to start "
                         "for --devices (by default it is stopped when the command ends).")
_RAY = typer.Option(False, "--ray", help="Play episodes on Ray: device-host actors (one per simulated phone or ADB "
                    "serial) and a policy server; joins the cluster in $RAY_ADDRESS, else starts a local Ray for the "
                    "job. Needs pip install 'coadapt\\[ray]' (docs/scale.md).")
_RAY_ADDRESS = typer.Option(None, "--ray-address", help="Join this Ray cluster (implies --ray), e.g. auto or "
                            "head-node:6379; its nodes declare the coadapt_devices resource.")
_SCREENS = typer.Option(None, "--screens", help="Screenshots saved in the run folder: all, changed (a screen identical to one "
                        "already saved is stored once; default) or none.")


_FLAGS = {"model.model": "--model", "model.adapter": "--adapter", "model.device": "--device",
          "model.temperature": "--temperature", "model.top_p": "--top-p", "model.threads": "--threads",
          "devices.devices": "--devices", "devices.workers": "--workers", "devices.seed": "--seed",
          "devices.settle": "--settle", "devices.screens": "--screens", "eval.suite": "--suite", "eval.k": "--k",
          "adapt.rounds": "--rounds", "adapt.group_size": "--k", "adapt.objective": "--objective",
          "adapt.max_minutes": "--minutes", "adapt.eval_instances": "--eval-instances", "adapt.seed": "--seed",
          "adapt.explore_steps": "--explore-steps", "adapt.explore_runs": "--explore-runs"}
"""The option that sets each config key, named in a config error the option caused."""


def _load_config(path: Optional[Path], overrides: dict):
    """`load_config`, its errors naming the option typed (`--k: adapt.group_size must be ...`) when
    an option, not the file, gave the value."""
    from coadapt.config import load_config

    try:
        return load_config(path, overrides)
    except ConfigError as e:
        message = str(e)
        key = message.split(" ", 1)[0].rstrip(":")
        if overrides.get(key) is not None and key in _FLAGS:
            raise ConfigError(f"{_FLAGS[key]}: {message}") from None
        raise


def _sets(path: Optional[Path], section: str, key: str) -> bool:
    """Whether the YAML config at `path` names `section.key` (a file load_config has read already)."""
    if path is None:
        return False
    from coadapt.tasks.suite import read_yaml_file

    data = read_yaml_file(path, ConfigError, "config") or {}
    return isinstance(data, dict) and isinstance(data.get(section), dict) and key in data[section]


def _common_overrides(model, adapter, device, temperature, top_p, threads, devices, workers, seed, settle, popups,
                      screens) -> dict:
    return {"model.model": model, "model.adapter": adapter, "model.device": device, "model.temperature": temperature,
            "model.top_p": top_p, "model.threads": threads, "devices.devices": devices, "devices.workers": workers,
            "devices.seed": seed, "devices.settle": settle, "devices.popups": popups,
            "devices.screens": screens}


class _ProgressLines:
    """The progress bar's stand-in when output is piped: a plain line every `every` items (and at
    the end), so a log file shows the run moving instead of nothing until it ends."""

    def __init__(self, label: str, every: int = 25):
        self.label, self.every, self.console = label, every, console
        self.tasks: dict[int, dict] = {}

    def __enter__(self) -> "_ProgressLines":
        return self

    def __exit__(self, *exc: object) -> None:
        for t in self.tasks.values():
            if t["completed"] != t["printed"]:
                self._line(t)

    def add_task(self, description: str, total: float | None = None, **_: object) -> int:
        self.tasks[len(self.tasks)] = {"description": description, "total": total, "completed": 0, "printed": 0}
        return len(self.tasks) - 1

    def update(self, tid: int, *, description: str | None = None, total: float | None = None,
               completed: float | None = None, advance: float | None = None, **_: object) -> None:
        t = self.tasks[tid]
        new_phase = (total is not None and total != t["total"]) or completed == 0
        if description is not None and description != t["description"]:
            t["description"] = description
            if new_phase:  # a new stage starts (not just a new loss figure in the same stage)
                t["printed"] = -1
        if total is not None:
            t["total"] = total
        if completed is not None:
            t["completed"] = completed
        if advance:
            t["completed"] += advance
        done = t["completed"] and (t["completed"] - max(t["printed"], 0) >= self.every or t["completed"] == t["total"])
        if done or t["printed"] == -1:
            self._line(t)

    def advance(self, tid: int, advance: float = 1) -> None:
        self.update(tid, advance=advance)

    def _line(self, t: dict) -> None:
        total = "" if t["total"] is None else f"/{int(t['total'])}"
        self.console.print(f"{self.label} {t['description']}: {int(t['completed'])}{total}", highlight=False)
        t["printed"] = t["completed"]


def _progress_bar(label: str):
    """A rich progress bar on a terminal; a line every few items when piped."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if not console.is_terminal:
        return _ProgressLines(label)
    return Progress(TextColumn(f"[bold]{label}[/] {{task.description}}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=True)


@app.command("eval")
def eval_cmd(
    suite: Optional[str] = typer.Option(None, help="Suite YAML file, or a bundled suite name: smoke, seen, unseen, all."),
    config: Optional[Path] = _CONFIG,
    policy: Optional[str] = _MODEL,
    adapter: Optional[str] = _ADAPTER,
    device: Optional[str] = _DEVICE,
    temperature: Optional[float] = _TEMPERATURE,
    top_p: Optional[float] = _TOP_P,
    threads: Optional[int] = _THREADS,
    devices: Optional[str] = _DEVICES,
    workers: Optional[int] = _WORKERS,
    seed: Optional[int] = _SEED,
    settle: Optional[float] = _SETTLE,
    popups: Optional[bool] = _POPUPS,
    screens: Optional[str] = _SCREENS,
    adb_port: Optional[int] = _ADB_PORT,
    keep_adb_server: bool = _KEEP_ADB,
    k: Optional[int] = typer.Option(None, help="Attempts per instance; pass@k is reported when k > 1. Default 1."),
    out: Optional[Path] = typer.Option(None, help="Run folder (reuse it to resume a killed run). Default: runs/eval-<suite>-<policy>-<time>."),
    ray: bool = _RAY,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """Run every instance of a suite and report success rates (AndroidWorld-style)."""
    import time as _time

    from coadapt.config import to_dict
    from coadapt.evaluation import suite_tasks
    from coadapt.runs import RunStore
    from coadapt.tasks.suite import Suite
    from coadapt.wiring import build_policy

    cfg = _load_config(config, {"eval.suite": suite, "eval.k": k,
                                **_common_overrides(policy, adapter, device, temperature, top_p, threads, devices,
                                                    workers, seed, settle, popups, screens)})
    if suite is None and not _sets(config, "eval", "suite"):
        where = f"{config} sets no eval.suite: " if config is not None else ""
        raise ConfigError(f"{where}give --suite (smoke, seen, unseen, all or a suite file) or a --config with eval.suite")
    s = Suite.load(cfg.eval.suite)
    _, templates = suite_tasks(s, cfg.eval.space)
    pol = build_policy(cfg.model, templates)
    folder = out or Path("runs") / _folder_name(f"eval-{s.name}-{_run_label(cfg.model)}-{_time.strftime('%Y%m%d-%H%M%S')}")
    if out is None:
        _say_folder(folder)
    _writes(folder)
    store = RunStore(folder, screens=cfg.devices.screens)
    identity = {"suite": s.name, "tasks": list(s.tasks), "seed": s.seed, "instances_per_task": s.instances_per_task,
                "policy": cfg.model.model, "adapter": cfg.model.adapter, "k": cfg.eval.k,
                "temperature": cfg.model.temperature, "run_seed": cfg.devices.seed}
    store.claim("eval", identity)
    store.write_json("config.json", {"kind": "eval", **identity, "config": to_dict(cfg)})
    with _adb_server(cfg.devices.devices, adb_port, keep_adb_server), _ray_hosts(ray, ray_address, cfg) as hosts:
        report = _eval_on_devices(cfg, s, pol, store, templates, hosts)
    report["run_folder"] = str(folder)
    report["model"], report["adapter"] = cfg.model.model, cfg.model.adapter  # what `policy` names, as paths
    report["disk_mb"] = round(store.disk_bytes() / 2**20, 1)
    store.write_json("report.json", report)
    store.close()
    if report["device_recoveries"]:
        console.print(f"device recoveries: {report['device_recoveries']}, retired: {report['devices_retired'] or 'none'}")
    _print_eval_report(report, f"{s.name} — {pol.name}")
    console.print(f"report: {folder / 'report.json'}")


def _adb_server(devices: str | None, port: int | None, keep: bool):
    """The adb server for --devices (started and stopped around the job when none runs); nothing
    for simulated phones."""
    from contextlib import nullcontext

    if port is not None:
        os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
    if not devices:
        return nullcontext()
    from coadapt.devices import adb_server_for

    return adb_server_for([d.strip() for d in devices.split(",") if d.strip()], keep=keep, say=console.print)


def _ray_hosts(use: bool, address: str | None, cfg):
    """Device hosts on Ray for the job when --ray or --ray-address is given; else nothing (the
    job plays in-process, as without Ray)."""
    from contextlib import nullcontext

    if not use and address is None:
        return nullcontext(None)
    from coadapt.scale import RaySettings, ray_hosts

    return ray_hosts(RaySettings(address=address), cfg.devices, cfg.model)


def _eval_on_devices(cfg, s, pol, store, templates, hosts=None) -> dict:
    """Play the suite on the configured devices (or Ray hosts) with a progress bar; the report with
    its wall time and peak RSS, summed and maxed over every process that played it."""
    from coadapt.evaluation import run_suite
    from coadapt.totals import JobTotals
    from coadapt.wiring import build_pool, rollout_settings

    pool = build_pool(cfg.devices) if hosts is None else None
    if cfg.devices.devices:
        console.print(f"devices: {cfg.devices.devices} (through the adb server)")
    if hosts is not None:
        console.print(f"ray: {len(hosts.hosts)} device host(s)")
    totals = JobTotals(store, "eval_job_totals")  # a resumed eval reports every process's time
    with _progress_bar("eval") as bar:
        tid = bar.add_task(f"{s.name} / {pol.name}", total=None)

        def show(event: str, data: dict) -> None:
            if event == "start":
                bar.update(tid, total=data["total"], completed=data["done"])
            else:
                bar.advance(tid)

        with totals.saved_on_error():
            report = run_suite(s, pol, pool, store, k=cfg.eval.k, space=cfg.eval.space, progress=totals.ticking(show),
                               settings=rollout_settings(cfg.devices), templates=templates,
                               adapter=cfg.model.adapter, hosts=hosts)
    report["wall_seconds"], report["peak_rss_mb"] = totals.save()
    return report


def _over_budget(result: dict) -> str:
    """" (over the N-minute budget)" when adapting took longer than max_minutes, else ""."""
    minutes = (result.get("config") or {}).get("max_minutes")
    if minutes is None or result["adapt_wall_clock_s"] <= minutes * 60:
        return ""
    return f" (over the {minutes:g}-minute budget)"


def _folder_name(name: str) -> str:
    """`name` as one path component: a default run folder stays directly under runs/."""
    return re.sub(r"[^\w.+-]", "_", name).lstrip(".") or "run"


def _run_label(model) -> str:
    """Run-folder label of a policy: the model's name, plus the adapter's when one is loaded."""
    label = Path(model.model).name or "model"
    if not model.adapter:
        return label
    adapter = Path(model.adapter)
    # `coadapt adapt` saves <run>/adapter: the run's name says which adaptation it was
    return f"{label}+{adapter.parent.name if adapter.name == 'adapter' and adapter.parent.name else adapter.name}"


@app.command()
def adapt(
    app_name: str = typer.Option(..., "--app", help="Package or launcher label of the app to adapt to, e.g. com.example.expenses."),
    config: Optional[Path] = _CONFIG,
    model: Optional[str] = typer.Option(None, "--model", help="default (the bundled tiny VLM), or a model folder / hub id."),
    adapter: Optional[str] = _ADAPTER,
    device: Optional[str] = _DEVICE,
    threads: Optional[int] = _THREADS,
    devices: Optional[str] = _DEVICES,
    workers: Optional[int] = _WORKERS,
    seed: Optional[int] = typer.Option(None, help="Seed of the run (adapt.seed: its adapt and eval instances, exploration, "
                                       "sampling and batch order) and of the simulated phones. Default 0."),
    settle: Optional[float] = _SETTLE,
    popups: Optional[bool] = _POPUPS,
    screens: Optional[str] = _SCREENS,
    adb_port: Optional[int] = _ADB_PORT,
    keep_adb_server: bool = _KEEP_ADB,
    rounds: Optional[int] = typer.Option(None, help="Adaptation rounds. Default 3."),
    group_size: Optional[int] = typer.Option(None, "--k", "--group-size", help="Sampled attempts per task card. Default 4."),
    objective: Optional[str] = typer.Option(None, help="grpo, rloo, reinforce_pp or sft. Default grpo."),
    minutes: Optional[float] = typer.Option(None, help="Wall-clock budget of the adaptation in minutes, exploration included. Default 15. "
                                          "A round or consolidation pass starts only if it is projected to fit; the first round always runs."),
    eval_instances: Optional[int] = typer.Option(None, help="Eval instances per template in the before/after report. Default 10."),
    explore_steps: Optional[int] = typer.Option(None, help="Actions per exploration of the app before the rounds (0: none). Default 200."),
    explore_runs: Optional[int] = typer.Option(None, help="Explorations, each from a fresh reset. Default 4."),
    report: bool = typer.Option(True, "--report/--no-report", help="Measure success by ground truth on fresh eval instances: the base policy before adapting, the adapted one after (report only)."),
    ceiling: bool = typer.Option(False, "--ceiling", help="Also report a ceiling: the loop's update budget spent imitating "
                                 "the oracle on the adapt instances (ground truth; a reference line, not the method)."),
    ablations: bool = typer.Option(False, "--ablations", help="Also adapt from scratch once per variant: no gate, no turn credit, no relabelling, each "
                                   "objective (rloo, reinforce_pp, sft), no curiosity, no proposals, memory, memory only."),
    out: Optional[Path] = typer.Option(None, help="Run folder (pass it again to resume a killed run). Default: runs/adapt-<app>-<time>."),
    ray: bool = _RAY,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """Adapt the policy to one app: rollouts, verifier, gate, LoRA update; report before/after."""
    import time as _time

    from coadapt.adaptation import run_adapt_job
    from coadapt.apps import app_class

    package = app_class(app_name).package
    overrides = _common_overrides(model, adapter, device, None, None, threads, devices, workers, seed, settle, popups, screens)
    # --seed is the run's seed here: the phones' seed alone changes nothing (each episode resets to its card's)
    overrides.update({"adapt.rounds": rounds, "adapt.group_size": group_size, "adapt.objective": objective,
                      "adapt.max_minutes": minutes, "adapt.eval_instances": eval_instances, "adapt.seed": seed,
                      "adapt.explore_steps": explore_steps, "adapt.explore_runs": explore_runs})
    cfg = _load_config(config, overrides)
    folder = out or Path("runs") / f"adapt-{package.split('.')[-1]}-{_time.strftime('%Y%m%d-%H%M%S')}"
    if out is None:
        _say_folder(folder)
    _writes(folder)
    with _progress_bar("adapt") as bar:
        tid = bar.add_task("starting", total=None)

        last_pass = [0]  # rounds can stop early on the budget: passes are numbered by the loop

        def progress(event: str, d: dict) -> None:
            if event == "eval":
                bar.update(tid, description=f"ground-truth eval ({d['phase']})", total=d["total"], completed=0)
            elif event == "eval_start" and d.get("done"):
                bar.update(tid, completed=d["done"])  # a resumed eval: those episodes are already played
            elif event == "explore":
                bar.update(tid, description=f"exploring the app ({d['runs']} × {d['steps']} actions)",
                           total=d["runs"] * d["steps"], completed=0)
            elif event == "explore_step":
                bar.update(tid, completed=d["run"] * d["total"] + d["step"])
            elif event == "explore_run":
                bar.console.print(f"exploration {d['run'] + 1}: {d['screens']} screens, "
                                  f"{d['proposals']} proposals so far")
            elif event in ("train", "check"):
                what = "updating the adapter" if event == "train" else "self-check on held-out goals"
                if event == "train" and "pass" in d:
                    last_pass[0] = d["pass"]  # the check that follows judges the same pass
                where = (f"consolidation {last_pass[0] + 1}" if d.get("kind") == "consolidate"
                         else f"round {d['round'] + 1}/{cfg.adapt.rounds}")
                bar.update(tid, description=f"{where} {what}", total=1, completed=0)
            elif event == "round_start":
                bar.update(tid, description=f"round {d['round'] + 1}/{cfg.adapt.rounds} rollouts", total=d["total"],
                           completed=d["done"])
            elif event == "episode":
                bar.advance(tid)
            elif event == "round" and d.get("kind") == "consolidate":
                held = d.get("held", 0)
                bar.console.print(f"consolidation pass {d['pass'] + 1}: imitated {d['samples'] - held} verified steps"
                                  + (f" and held {held} turns" if held else "") + ", "
                                  f"check {d['check']:.3f} ({'kept' if d['kept'] else 'rolled back'}), "
                                  f"{d['seconds']:.0f} s")
            elif event == "round":
                line = (f"round {d['round'] + 1}: self-verified {d['self_verified_success']:.2f}, accepted "
                        f"+{d['accepted_positive']}/-{d['accepted_negative']}, relabelled {d['relabelled_positive']}, "
                        + (f"untrusted +{d['untrusted_positive']}, " if not d.get("trusted", True) else "")
                        + (f"anchored {d['anchored']}, " if d.get("anchored") else "")
                        + (f"held {d['preserved']} turns, " if d.get("preserved") else "") +
                        f"check {d['check']:.3f} ({'kept' if d['kept'] else 'rolled back'}), {d['seconds']:.0f} s")
                bar.console.print(line)
            elif event == "start" and d.get("done"):
                bar.console.print(f"resuming after {d['done']} finished round(s)")
            elif event == "ceiling":
                bar.console.print("ceiling: imitating the oracle with the same update budget (reference only)")
            elif event == "ablation":
                acc, c = d.get("step_accuracy"), d.get("default_gain") or {}
                bar.console.print(f"ablation {d['name']}: adapted {d['adapted']:.3f}"
                                  + ("" if acc is None else f", step accuracy {acc:.2f}")
                                  + (f"; the default against it {c['gain']:+.3f} ({describe(c)})" if "ci95" in c else ""))

        with _adb_server(cfg.devices.devices, adb_port, keep_adb_server), \
                _ray_hosts(ray, ray_address, cfg) as hosts:
            result = run_adapt_job(package, cfg, folder, report=report, ablations=ablations, ceiling=ceiling,
                                   progress=progress, hosts=hosts)
    table = Table(title=f"adapt {package}")
    for col in ("", "success", "episodes", "mean steps", "ended done / infeasible / at limit", "step accuracy"):
        table.add_column(col, justify="left" if not col else "right")
    for name in ("base", "adapted", "ceiling"):
        if name in result:
            r = result[name]
            g = (r.get("grounding") or {}).get("accuracy")
            ends = r.get("declared") or {}
            table.add_row(name, f"{r['success_rate']:.3f}", str(r["n_episodes"]), f"{r['mean_steps']:.1f}",
                          " / ".join(str(ends.get(k, 0)) for k in ("done", "infeasible", "step_limit")),
                          "-" if g is None else f"{g:.2f}")
    if table.row_count:  # --no-report evaluates nothing: no empty table
        _print_table(table)
    passes = [r for r in result["rounds"] if r.get("kind") == "consolidate"]
    line = [f"rounds {len(result['rounds']) - len(passes)}"
            + (f" + {len(passes)} consolidation ({sum(1 for r in passes if r.get('kept'))} kept)" if passes else ""),
            f"env steps {result['env_steps']}",
            f"adapting {result['adapt_wall_clock_s']:.0f} s" + _over_budget(result),
            f"peak RSS {result['peak_rss_mb']:.0f} MB"]
    if "gain" in result:
        c = (result.get("comparison") or {}).get("adapted") or {}
        line.insert(0, f"gain {result['gain']:+.3f}"
                    + (f" ({describe(c)}, sign test p={c['p_value']:.2g})" if "ci95" in c else ""))
    v = result.get("verifier")
    if v:
        line.append(f"verifier precision {v['precision'] if v['precision'] is not None else '-'} "
                    f"on {v['accepted_positive']} accepted")
    console.print("  ".join(line))
    if result["rounds"] and not any(r.get("kept") for r in result["rounds"]):
        console.print("no round's update was kept (each made the self-check worse): the adapter is the fresh one, "
                      "which leaves the base model unchanged")
    console.print(f"adapter: {result['adapter']}   report: {folder / 'report.json'}")


@app.command()
def explore(
    app_name: str = typer.Option(..., "--app", help="Package or launcher label of the app to explore, e.g. com.example.expenses."),
    steps: int = typer.Option(200, "--steps", min=1, help="Actions per exploration (an app restart counts as one)."),
    policy: str = typer.Option("greedy", "--policy", help="greedy (ours), random (Monkey-like), events (random element events), dfs (DroidBot-style) or model."),
    runs: int = typer.Option(1, "--runs", min=1, help="Explorations from a fresh reset, seeds seed..seed+runs-1; proposals are merged."),
    proposals: int = typer.Option(60, "--proposals", min=0, help="At most this many self-proposed tasks in the report."),
    config: Optional[Path] = _CONFIG,
    model: Optional[str] = typer.Option(None, "--model", help="Policy for --policy model: default (bundled) or a model folder / hub id."),
    devices: Optional[str] = _DEVICES,
    seed: int = typer.Option(0, help="Seed of the exploration (and of the phone set-up)."),
    out: Optional[Path] = typer.Option(None, help="Folder for utg.json, screens/, proposals.json, memory.txt, report.json. Default: runs/explore-<app>-<time>."),
    ray: bool = _RAY,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """Explore an app: build its UI transition graph, propose tasks from it, write exploration memory."""
    import time as _time

    from coadapt.adaptation import explore_card
    from coadapt.apps import app_class, label_map
    from coadapt.explore.explorer import STRATEGIES
    from coadapt.explore.job import explore_app, write_explored
    from coadapt.wiring import build_policy, build_pool

    if policy not in STRATEGIES:
        raise typer.BadParameter(f"{policy!r}; valid: {', '.join(STRATEGIES)}", param_hint="--policy")
    package = app_class(app_name).package
    cfg = _load_config(config, {"model.model": model, "devices.devices": devices})
    folder = out or Path("runs") / f"explore-{package.split('.')[-1]}-{_time.strftime('%Y%m%d-%H%M%S')}"
    if folder.exists() and not folder.is_dir():
        raise typer.BadParameter(f"{folder} exists and is not a folder", param_hint="--out")
    _check_explore_folder(folder, package)
    agents = build_policy(cfg.model) if policy == "model" else None
    card = explore_card(package, seed)
    t0 = _time.monotonic()
    if ray or ray_address is not None:
        # One device host explores into a scratch folder; its files are written here (no shared filesystem).
        with _ray_hosts(ray, ray_address, cfg) as hosts:
            console.print(f"exploring on a Ray device host ({steps} actions x {runs} run(s))")
            result, files = hosts.explore(card, dict(steps=steps, runs=runs, seed=seed, strategy=policy,
                                                     proposals=proposals,
                                                     policy=hosts.remote_policy(agents) if agents else None))
        write_explored(folder, files)
        _explore_summary(folder, package, policy, steps, runs, seed, result, _time.monotonic() - t0)
        return
    pool = build_pool(cfg.devices)
    with _progress_bar("explore") as bar, pool.lease() as slot:
        tid = bar.add_task(f"run 1/{runs}", total=steps)

        def progress(event: str, d: dict) -> None:
            if event == "explore_step":
                bar.update(tid, description=f"run {d['run'] + 1}/{runs}", completed=d["step"])
            elif event == "explore_run":
                bar.console.print(f"run {d['run'] + 1}: {d['screens']} screens, {d['elements']} elements, "
                                  f"{d['effective_share']:.0%} effective; {d['proposals']} proposals so far")

        result = explore_app(slot.device, card, app_names=label_map(), steps=steps, runs=runs, seed=seed,
                             strategy=policy, out_dir=folder, proposals=proposals, policy=agents, progress=progress)
    _explore_summary(folder, package, policy, steps, runs, seed, result, _time.monotonic() - t0)


def _check_explore_folder(folder: Path, package: str) -> None:
    """Refuse an --out that holds anything but an earlier exploration of the same app (which the
    new one replaces): an eval or adapt run's report.json would be overwritten."""
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    if (folder / "run.db").exists():
        raise ConfigError(f"{folder} holds an eval or adapt run (run.db); give the exploration its own --out")
    report = folder / "report.json"
    if not (folder / "utg.json").is_file():
        raise ConfigError(f"{folder} holds files but no exploration (no utg.json); give the exploration its own --out")
    try:
        app = json.loads(report.read_text()).get("app") if report.is_file() else None
    except (OSError, ValueError, AttributeError):
        app = None
    if app is not None and app != package:
        raise ConfigError(f"{folder} holds an exploration of {app}; give {package}'s its own --out")


def _explore_summary(folder: Path, package: str, policy: str, steps: int, runs: int, seed: int, result,
                     seconds: float) -> None:
    """Write an exploration's report beside its graph and print its table."""
    from coadapt.explore.job import write_report

    write_report(folder, result, {"app": package, "policy": policy, "steps": steps, "runs": runs, "seed": seed,
                                  "wall_clock_s": round(seconds, 1)})
    cov = result.coverage[0]
    table = Table(title=f"explore {package} ({policy}, {steps} actions)")
    for col in ("unique screens", "unique elements", "effective actions", "restarts", "proposals", "memory lines"):
        table.add_column(col, justify="right")
    table.add_row(str(cov["screens"]), str(cov["elements"]), f"{cov['effective_share']:.0%}", str(cov["restarts"]),
                  str(len(result.proposals)), str(len(result.memory.splitlines())))
    _print_table(table)
    for p in result.proposals[:10]:
        console.print(f"  [{p.kind}] {p.goal}  ({len(p.actions)} action{'s' if len(p.actions) != 1 else ''})")
    if len(result.proposals) > 10:
        console.print(f"  ... {len(result.proposals) - 10} more in {folder / 'report.json'}")
    console.print(f"graph: {folder / 'utg.json'}   report: {folder / 'report.json'}")


@app.command()
def dashboard(
    runs: Path = typer.Option(Path("runs"), help="Folder of run folders to show (eval, adapt and explore runs)."),
    port: int = typer.Option(7860, help="Port to serve on."),
    host: str = typer.Option("127.0.0.1", help="Address to bind; anything but loopback without --auth is warned about."),
    auth: Optional[str] = typer.Option(None, help="user:password required to open the dashboard."),
) -> None:
    """Watch runs in a browser: episodes step by step, live devices, training rounds, exploration graphs."""
    from coadapt.dashboard.app import serve

    credentials = None
    if auth is not None:
        user, sep, password = auth.partition(":")
        if not sep or not user or not password:
            raise ConfigError("--auth must be user:password")
        credentials = (user, password)
    if not runs.is_dir():
        raise ConfigError(f"runs folder {runs} does not exist (give --runs DIR, the folder your runs are written to)")
    if not 0 < port < 65536:
        raise ConfigError(f"--port {port} is not a TCP port (1-65535)")
    try:
        demo, url = serve(runs, host=host, port=port, auth=credentials)
    except OSError as e:  # most often the port is taken (another dashboard, any Gradio app on 7860)
        raise ConfigError(f"cannot serve on {host}:{port} ({e.strerror or 'port in use'}); "
                          "pick another with --port") from None
    console.print(f"dashboard on {url} over {runs.resolve()} (read-only); Ctrl+C stops it")
    try:
        demo.block_thread()
    except KeyboardInterrupt:
        demo.close()


verifier_app = typer.Typer(help="The verifier's feature judge (fitted on seen apps only).", no_args_is_help=True)
app.add_typer(verifier_app, name="verifier")


@verifier_app.command("train")
def verifier_train(
    per_template: int = typer.Option(6, help="Seen-app instances per template (pretrain seed space)."),
    seed: int = typer.Option(0, help="Seed of the instances and of the sampled attempts."),
    workers: int = typer.Option(2, help="Simulated phones in parallel."),
    out: Optional[Path] = typer.Option(None, help="Where to write the weights (default: the packaged judge_weights.json)."),
    rows: Optional[Path] = typer.Option(None, help="Keep the labelled attempts' checks here; refit from them if present."),
    leave_out: list[str] = typer.Option([], "--leave-out", help="A seen app whose attempts the fit leaves out (repeatable): the judge for a development model that never trained on it."),
) -> None:
    """Fit the feature judge on the bundled policy's attempts at SEEN-app tasks, labelled by their checkers."""
    from coadapt.adapt.verifier import WEIGHTS_FILE
    from coadapt.judge_training import train_judge

    if workers < 1:
        raise ConfigError(f"--workers must be >= 1, got {workers}")
    if per_template < 1:
        raise ConfigError(f"--per-template must be >= 1, got {per_template}")

    with _progress_bar("verifier") as bar:
        tid = bar.add_task("seen-app attempts", total=None)

        def progress(event: str, d: dict) -> None:
            if event == "start":
                bar.update(tid, total=d["total"], completed=d["done"])
            else:
                bar.advance(tid)

        data = train_judge(per_template, seed, workers=workers, out=out or WEIGHTS_FILE, rows_file=rows, progress=progress,
                           leave_out=tuple(leave_out))
    console.print(f"{data['episodes']} attempts ({data['positives']} successes, {data['cut_short']} of them cut short)")
    for key, heading in (("quality_on_held_out_templates", "on templates held out of the fit:"),
                         ("quality_on_held_out_apps", "on apps held out of the fit (its transfer to an app it never saw):")):
        console.print(heading)
        for threshold, q in data.get(key, {}).items():
            at_rate = (f"; {q['precision_at_base_rate']} where {q['base_rate']:.0%} of attempts succeed"
                       if q.get("precision_at_base_rate") is not None else "")
            console.print(f"  p >= {threshold}: precision {q['precision']} on {q['accepted_positive']} accepted "
                          f"positives{at_rate}, recall {q['recall']}")
    c = data.get("infeasible_claims")
    if c:
        console.print(f"claims of infeasibility, made on every attempt ({c['right']} of {c['claims']} right; "
                      f"{c['real_claims']} made by the policy): AUC {c['auc']}, p >= {c['threshold']} accepts "
                      f"{c['accepted']} ({c['accepted_right']} right). With `adapt.judge_infeasible: false` "
                      "such claims get no label")
    console.print(f"weights: {out or WEIGHTS_FILE}")


@app.command()
def pretrain(
    config: Optional[Path] = typer.Option(None, help="YAML file with PretrainConfig fields (nested model/demos/prompt)."),
    out: Optional[str] = typer.Option(None, help="Output model folder (a Hugging Face folder)."),
    steps: Optional[int] = typer.Option(None, help="Optimizer steps (what reproduces a run)."),
    minutes: Optional[float] = typer.Option(None, help="Wall-clock cap in minutes (0: none; stopping on time is not reproducible)."),
    batch_size: Optional[int] = typer.Option(None, help="Decisions per optimizer step."),
    lr: Optional[float] = typer.Option(None, help="Peak learning rate."),
    seed: Optional[int] = typer.Option(None, help="Seed of the batch order."),
    threads: Optional[int] = typer.Option(None, help="torch CPU threads."),
    warmup_steps: Optional[int] = typer.Option(None, "--warmup-steps", help="Steps of linear lr warm-up (default 200, or a tenth of --steps when that is fewer)."),
    demos_per_task: Optional[int] = typer.Option(None, "--demos-per-task", min=1, help="Demonstration episodes per seen template (default 80); a few make a smoke run."),
    resume: bool = typer.Option(False, help="Continue the run whose state is in <out>.train/."),
    overwrite: bool = typer.Option(False, help="Replace an existing model in --out."),
) -> None:
    """Behaviour cloning of the tiny VLM on oracle demonstrations from the SEEN apps only."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from coadapt.android_env.errors import ConfigError
    from coadapt.pretrain import PretrainConfig, run_pretrain
    from coadapt.tasks.suite import read_yaml_file

    data: dict = {}
    if config is not None:
        data = read_yaml_file(config, ConfigError, "pretrain config") or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{config}: a pretrain config is a mapping of PretrainConfig fields")
    overrides = {"out": out, "steps": steps, "minutes": minutes, "batch_size": batch_size, "lr": lr, "seed": seed,
                 "threads": threads}
    data.update({k: v for k, v in overrides.items() if v is not None})
    if warmup_steps is not None:
        data["warmup_steps"] = warmup_steps
    elif "warmup_steps" not in data and steps is not None and 0 < steps <= PretrainConfig.warmup_steps:
        data["warmup_steps"] = steps // 10  # a short smoke run: warm up over a tenth of it
        console.print(f"warm-up: {data['warmup_steps']} steps (a tenth of --steps; set --warmup-steps to change)")
    if demos_per_task is not None:
        data["demos"] = {**(data.get("demos") or {}), "episodes_per_task": demos_per_task}
    if resume:
        data["resume"] = True
    if overwrite:
        data["overwrite"] = True
    cfg = PretrainConfig.from_dict(data)
    with Progress(TextColumn("[bold]pretrain[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as bar:
        tid = bar.add_task("demonstrations", total=None)

        def progress(event: str, d: dict) -> None:
            if event == "demos":
                bar.update(tid, description="demonstrations", total=d["total"], completed=d["done"])
            elif event == "prepare":
                bar.update(tid, description=f"preparing {d['what']}", total=None, completed=d["done"])
            elif event == "step":
                bar.update(tid, description=f"training  loss {d['loss']:.3f}", total=d["total"], completed=d["step"])
                if not bar.console.is_terminal:  # a log file gets plain lines instead of a bar
                    bar.console.print(f"step {d['step']}/{d['total']}: loss {d['loss']:.4f}, "
                                      f"{d['seconds_per_step']:.2f} s/step")
            elif event == "data" and not bar.console.is_terminal:
                bar.console.print(f"demonstrations: {d['examples']} training decisions in {d['seconds']:.0f} s")
            elif event == "validate":
                bar.console.print(f"step {d['step']}: validation success {d['success_rate']:.3f}, "
                                  f"exact match {d['exact_match']:.3f}" + ("  (best, saved)" if d.get("saved") else ""))

        folder = run_pretrain(cfg, progress=progress)
    console.print(f"model: {folder}")


emulator_app = typer.Typer(help="Start, list and stop virtual devices and Android emulators.", no_args_is_help=True)
app.add_typer(emulator_app, name="emulator")


@emulator_app.command("start")
def emulator_start(
    virtual: int = typer.Option(0, "--virtual", help="Start this many virtual devices (simulated phones on the ADB protocol)."),
    avd: Optional[str] = typer.Option(None, help="Start real emulators of this AVD (needs the Android SDK emulator)."),
    n: int = typer.Option(1, "-n", help="How many emulators of --avd to start."),
    snapshot: Optional[str] = typer.Option(None, help="Boot the emulators from this snapshot."),
    seed: int = typer.Option(0, help="Seed of the first virtual device (the i-th gets seed + i)."),
    boot_timeout: float = typer.Option(300.0, help="Seconds to wait for an emulator to boot."),
    auth: bool = typer.Option(False, "--auth", help="Virtual devices require ADB authentication, like a phone: only "
                              "the adb server of this machine (~/.android/adbkey.pub) may use them; others see "
                              "them 'unauthorized'."),
    auth_keys: Optional[Path] = typer.Option(None, "--auth-keys", help="With --auth: allow the keys in this "
                                             "adbkey.pub-style file instead."),
) -> None:
    """Start devices that `adb devices` lists and `coadapt eval --devices` drives."""
    from coadapt.android_env.errors import ConfigError

    if bool(virtual) == bool(avd):
        raise ConfigError("give either --virtual N or --avd NAME (with -n N)")
    if (auth or auth_keys) and not virtual:
        raise ConfigError("--auth applies to --virtual devices only")
    if auth_keys and not auth:
        raise ConfigError("--auth-keys needs --auth")
    if virtual:
        from coadapt.emulator.manager import start_virtual_devices

        keys = (auth_keys or Path.home() / ".android" / "adbkey.pub") if auth else None
        records = start_virtual_devices(virtual, seed=seed, auth_keys=keys)
        for r in records:
            console.print(f"{r.serial}\t{r.address}\tpid {r.pid}")
        console.print(f"use them with: coadapt eval --devices {','.join(r.serial for r in records)} ...")
        return
    from coadapt.emulator.avd import AvdConfig, start_avd
    from coadapt.emulator.manager import runtime_dir

    started = []
    for i in range(n):
        proc = start_avd(AvdConfig(avd, port=5554 + 2 * i, snapshot=snapshot), log_dir=runtime_dir() / "avd",
                         boot_timeout_s=boot_timeout)
        started.append(proc.serial)
        console.print(f"{proc.serial}\tbooted")
    console.print(f"use them with: coadapt eval --devices {','.join(started)} ...")


@emulator_app.command("list")
def emulator_list() -> None:
    """Virtual devices started here, with their health and the state the adb server gives them (`adb devices` lists the rest)."""
    from coadapt.emulator.manager import list_virtual_devices

    table = Table(title="virtual devices")
    for col in ("serial", "address", "pid", "seed", "process", "answering", "adb state"):
        table.add_column(col, no_wrap=col in ("serial", "address"), overflow="fold")
    for st in list_virtual_devices():
        r = st.record
        table.add_row(r.serial, r.address, str(r.pid), str(r.seed), "alive" if st.process_alive else "dead",
                      "yes" if st.answering else "no", st.adb_state or "-")
    _print_table(table)


@emulator_app.command("stop")
def emulator_stop(
    serials: Optional[list[str]] = typer.Argument(None, help="Serials to stop."),
    all_: bool = typer.Option(False, "--all", help="Stop every virtual device started here."),
) -> None:
    """Stop virtual devices (and real emulators, by serial)."""
    from coadapt.android_env.errors import ConfigError
    from coadapt.emulator.manager import read_records, stop_virtual_devices

    if not serials and not all_:
        raise ConfigError("name the serials to stop, or pass --all")
    virtual = {r.serial for r in read_records()}
    targets = None if all_ else [s for s in serials or [] if s in virtual]
    stopped = stop_virtual_devices(targets) if (all_ or targets) else []
    unknown = [s for s in serials or [] if s not in virtual]
    for s in unknown:
        # A real emulator: ask it to shut down through its console, as `adb emu kill` does.
        import subprocess

        from coadapt.emulator.avd import adb_binary

        done = subprocess.run([adb_binary(), "-s", s, "emu", "kill"], capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise ConfigError(f"{s} is neither a virtual device started here nor an emulator adb can stop: "
                              f"{(done.stderr or done.stdout).strip()}")
        stopped.append(s)
    console.print("stopped: " + (", ".join(stopped) or "nothing"))


def _interrupt(signum: int, frame: object) -> None:
    """A signal handler that stops the command as Ctrl+C does."""
    raise KeyboardInterrupt


def main() -> None:
    """Entry point: runs the app and turns coadapt errors into a one-line message and exit code 2."""
    from coadapt.malloc import tune_glibc_malloc

    tune_glibc_malloc()
    # SIGTERM (kill, a job scheduler's stop) takes Ctrl+C's path: workers leave their episodes at
    # the next step, the totals are saved, and the run folder to resume is named.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        app()
    except CoadaptError as e:
        console.print(f"[bold red]error:[/] {escape(str(e))}", markup=True)  # one line, however long
        raise SystemExit(2) from None
    except SystemExit as e:  # typer turns Ctrl+C into exit code 130, silently
        if e.code == 130 and _run_folder:
            console.print(f"interrupted: the same command with --out {_run_folder[0]} resumes it")
        raise


if __name__ == "__main__":
    main()
