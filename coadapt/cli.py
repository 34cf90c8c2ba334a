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


def _set_threads(threads: Optional[int]) -> None:
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


def _print_eval_report(report: dict, title: str) -> None:
    table = Table(title=title)
    for col in ("app", "episodes", "success rate", "mean steps"):
        table.add_column(col, justify="left" if col == "app" else "right")
    for app_name, row in report["per_app"].items():
        table.add_row(app_name, str(row["n"]), f"{row['success_rate']:.2f}", f"{row['mean_steps']:.1f}")
    table.add_section()
    table.add_row("all", str(report["n_episodes"]), f"{report['success_rate']:.3f}", f"{report['mean_steps']:.1f}")
    console.print(table)
    extra = [f"instances {report['n_instances']}", f"invalid actions {report['invalid_action_rate']:.3f}",
             f"infra errors {report['infra_errors']}"]
    if "pass_at_k" in report:
        extra.append(f"pass@{report['k']} {report['pass_at_k']:.3f}")
    if report.get("wall_seconds") is not None:
        extra.append(f"wall {report['wall_seconds']:.1f} s")
    console.print("  ".join(extra))


@app.command("tasks")
def tasks_cmd(
    app_name: Optional[str] = typer.Option(None, "--app", help="Only this app (package or label)."),
    group: Optional[str] = typer.Option(None, help="Only seen or unseen apps."),
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
    table = Table(title=f"{len(chosen)} task templates")
    for col in ("name", "app", "group", "kind", "cx", "steps", "goal template"):
        table.add_column(col)
    for t in sorted(chosen, key=lambda t: (t.app, t.name)):
        table.add_row(t.name, t.app.removeprefix("com.example."), "seen" if t.app in SEEN_APPS else "unseen", t.kind,
                      str(t.complexity), str(t.max_steps), t.template)
    console.print(table)


@app.command("eval")
def eval_cmd(
    suite: str = typer.Option(..., help="Suite YAML file, or a bundled suite name: smoke, seen, unseen, all."),
    policy: str = typer.Option("default", "--policy", "--model",
                               help="oracle, random, default (the bundled tiny VLM), or a model folder / hub id."),
    adapter: Optional[str] = typer.Option(None, help="A peft LoRA adapter folder to load on the model."),
    threads: Optional[int] = typer.Option(None, help="torch CPU threads for the model (default: torch's choice)."),
    devices: Optional[str] = typer.Option(None, help="Comma-separated ADB serials; default: simulated phones."),
    out: Optional[Path] = typer.Option(None, help="Run folder (reuse it to resume a killed run). Default: runs/eval-<suite>-<policy>-<time>."),
    k: int = typer.Option(1, help="Attempts per instance; pass@k is reported when k > 1."),
    workers: int = typer.Option(2, help="Simulated phones in parallel (one worker per device with --devices)."),
    seed: int = typer.Option(0, help="Seed of the simulated phones and of the random policy."),
    screenshots: bool = typer.Option(True, help="Save each step's screenshot in the run folder."),
) -> None:
    """Run every instance of a suite and report success rates (AndroidWorld-style)."""
    import time as _time

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from coadapt.evaluation import EvalConfig, run_suite
    from coadapt.policies import make_policy
    from coadapt.runs import RunStore, RunStoreError
    from coadapt.tasks.suite import Suite

    EvalConfig(suite=suite, policy=policy, k=k, workers=workers, screenshots=screenshots)  # validates the options
    s = Suite.load(suite)
    _set_threads(threads)
    pol = make_policy(policy, seed=seed, adapter=adapter)
    folder = out or Path("runs") / f"eval-{s.name}-{Path(policy).name}-{_time.strftime('%Y%m%d-%H%M%S')}"
    store = RunStore(folder, save_screens=screenshots)
    identity = {"suite": s.name, "tasks": list(s.tasks), "seed": s.seed, "instances_per_task": s.instances_per_task,
                "policy": policy, "adapter": adapter, "k": k}
    previous = store.get_meta("eval")
    if previous is not None and previous != identity:
        raise RunStoreError(f"{folder} holds a different evaluation ({previous['suite']} / {previous['policy']}); use another --out")
    store.set_meta("eval", identity)
    store.write_json("config.json", {"kind": "eval", **identity, "screenshots": screenshots})
    from coadapt.devices import make_pool

    devs = make_pool(devices, workers, seed)
    t0 = _time.perf_counter()
    with Progress(TextColumn("[bold]eval[/] {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as bar:
        tid = bar.add_task(f"{s.name} / {pol.name}", total=None)

        def progress(event: str, data: dict) -> None:
            if event == "start":
                bar.update(tid, total=data["total"], completed=data["done"])
            else:
                bar.advance(tid)

        report = run_suite(s, pol, devs, store, k=k, progress=progress)
    report["wall_seconds"] = round(_time.perf_counter() - t0, 2)
    report["run_folder"] = str(folder)
    store.write_json("report.json", report)
    _print_eval_report(report, f"{s.name} — {pol.name}")
    console.print(f"report: {folder / 'report.json'}")


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
    resume: bool = typer.Option(False, help="Continue the run whose state is in <out>.train/."),
    overwrite: bool = typer.Option(False, help="Replace an existing model in --out."),
) -> None:
    """Behaviour cloning of the tiny VLM on oracle demonstrations from the SEEN apps only."""
    import yaml
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from coadapt.android_env.errors import ConfigError
    from coadapt.pretrain import PretrainConfig, run_pretrain

    data: dict = {}
    if config is not None:
        try:
            data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"cannot read pretrain config {config}: {e}") from e
    overrides = {"out": out, "steps": steps, "minutes": minutes, "batch_size": batch_size, "lr": lr, "seed": seed,
                 "threads": threads}
    data.update({k: v for k, v in overrides.items() if v is not None})
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
) -> None:
    """Start devices that `adb devices` lists and `coadapt eval --devices` drives."""
    from coadapt.android_env.errors import ConfigError

    if bool(virtual) == bool(avd):
        raise ConfigError("give either --virtual N or --avd NAME (with -n N)")
    if virtual:
        from coadapt.emulator.manager import start_virtual_devices

        records = start_virtual_devices(virtual, seed=seed)
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
    """Virtual devices started here (with their health) and every device the adb server sees."""
    from coadapt.emulator.manager import list_virtual_devices

    table = Table(title="virtual devices")
    for col in ("serial", "address", "pid", "seed", "process", "answering", "adb state"):
        table.add_column(col, no_wrap=col in ("serial", "address"), overflow="fold")
    for st in list_virtual_devices():
        r = st.record
        table.add_row(r.serial, r.address, str(r.pid), str(r.seed), "alive" if st.process_alive else "dead",
                      "yes" if st.answering else "no", st.adb_state or "-")
    console.print(table)


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


def main() -> None:
    """Entry point: runs the app and turns coadapt errors into a one-line message and exit code 2."""
    try:
        app()
    except CoadaptError as e:
        console.print(f"[bold red]error:[/] {e}")
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
