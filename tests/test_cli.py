"""The command line, run as a user runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from PIL import Image


def run(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coadapt.cli", *args], capture_output=True, text=True, cwd=cwd)


COMMANDS = {"show": "--app", "tasks": "--group", "eval": "--suite", "adapt": "--ablations", "explore": "--policy", "pretrain": "--steps",
            "verifier": "train", "emulator": "start"}


def test_help_lists_commands_and_each_has_help():
    out = run("--help")
    assert out.returncode == 0
    as_module = subprocess.run([sys.executable, "-m", "coadapt", "--help"], capture_output=True, text=True)
    assert as_module.returncode == 0 and "python -m coadapt [OPTIONS]" in as_module.stdout  # the same command
    assert all(command in as_module.stdout for command in COMMANDS)
    for command, option in COMMANDS.items():
        assert command in out.stdout, command
        sub = run(command, "--help")
        assert sub.returncode == 0 and option in sub.stdout, (command, sub.stdout)


def test_bad_options_are_one_line_errors(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "run.db").write_bytes(b"this is not a database" * 10)
    cases = [
        (("eval", "--suite", "smoke", "--policy", "random", "--threads", "0"), "threads must be >= 1"),
        (("eval", "--suite", "smoke", "--policy", "random", "--out", str(tmp_path / "file")), "is a file"),
        (("eval", "--suite", "smoke", "--policy", "random", "--out", str(tmp_path / "bad")), "run.db"),
        (("eval", "--suite", "smoke", "--policy", str(tmp_path / "no" / "model")), "no model folder"),
        (("eval", "--suite", "smoke", "--policy", "random", "--device", "tpu"), "must be one of cpu, cuda, auto"),
        (("adapt", "--app", "com.example.nope"), "unknown app"),
    ]
    import torch

    if not torch.cuda.is_available():  # a CPU build: asking for the GPU was a traceback
        cases.append((("eval", "--suite", "smoke", "--device", "cuda"), "sees no CUDA GPU"))
    for args, message in cases:
        out = run(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert message in out.stdout and "Traceback" not in out.stdout + out.stderr, (args, out.stdout)


def test_piped_task_list_is_one_tab_separated_line_per_template():
    out = run("tasks", "--app", "com.example.expenses")
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and lines[0].split("\t") == ["name", "group", "kind", "cx", "steps", "goal template"]
    rows = [ln.split("\t") for ln in lines[1:]]
    assert len(rows) == 10 and all(len(r) == 6 and r[0].startswith("Expenses") for r in rows)
    assert any("{category}" in r[5] for r in rows)  # whole goals, never wrapped or cut


def test_show_prints_elements_and_writes_files(tmp_path):
    png, xml = tmp_path / "screen.png", tmp_path / "screen.xml"
    out = run("show", "--app", "com.example.notes", "--out", str(png), "--xml", str(xml))
    assert out.returncode == 0, out.stderr
    assert "New note" in out.stdout
    assert out.stdout.splitlines()[0].startswith("  ") and "Notes (com.example.notes)" in out.stdout.splitlines()[0], \
        "the table's title is centred over it"
    assert Image.open(png).size == (720, 1600)
    assert "<hierarchy" in xml.read_text()


def test_unknown_app_is_a_clear_error():
    out = run("show", "--app", "com.example.nope")
    assert out.returncode == 2
    assert "unknown app 'com.example.nope'" in out.stdout
    assert "Traceback" not in out.stdout + out.stderr


def test_pretrain_bad_settings_are_clear_errors(tmp_path):
    out = run("pretrain", "--lr", "-1", "--out", str(tmp_path / "m"))
    assert out.returncode == 2 and "lr must be a positive number" in out.stdout
    cfg = tmp_path / "p.yaml"
    cfg.write_text("stepz: 10\n")
    out = run("pretrain", "--config", str(cfg))
    assert out.returncode == 2 and "unknown key 'stepz'" in out.stdout


def test_show_task_prints_the_goal_and_the_first_screen_an_agent_meets():
    out = run("show", "--task", "ExpensesLogExpense", "--seed", "3")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("goal: Log a ") and "expense" in out.stdout
    assert "No expenses yet" not in out.stdout and "More options" in out.stdout  # the task's data is installed
    bad = run("show", "--task", "NoSuchTask")
    assert bad.returncode == 2 and "unknown task" in bad.stdout


def test_eval_screens_changed_stores_repeated_attempts_once_and_reports_its_size(tmp_path):
    counts = {}
    for mode in ("all", "changed", "none"):
        out = run("eval", "--suite", "smoke", "--policy", "oracle", "--k", "2", "--screens", mode,
                  "--out", str(tmp_path / mode))
        assert out.returncode == 0, out.stdout + out.stderr
        report = json.loads((tmp_path / mode / "report.json").read_text())
        assert report["disk_mb"] > 0 and "disk" in out.stdout
        counts[mode] = len(list((tmp_path / mode).glob("screens/**/*.png")))
        steps, episodes = report["env_steps"], report["n_episodes"]
    assert counts["all"] == steps + episodes and counts["none"] == 0  # each step's screen, and each episode's last
    assert counts["changed"] <= steps / 2, counts  # the oracle's two attempts see the same screens
    bad = run("eval", "--suite", "smoke", "--screens", "some", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "devices.screens must be all, changed or none" in bad.stdout


def test_piped_output_shows_progress_lines_and_no_third_party_bars(tmp_path):
    out = run("eval", "--suite", "smoke", "--out", str(tmp_path / "run"), "--workers", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Loading weights" not in out.stdout + out.stderr
    assert "eval smoke / default: 12/12" in out.stdout


def test_hostile_input_is_refused_with_one_line_errors(tmp_path):
    """Bad suites, configs and options end in one `error:` line and exit 2, before any work."""
    # A "billion laughs": nine levels of nine aliases (9**9 strings once expanded).
    ALIAS_BOMB = "name: bomb\ntasks: [NotesAddNote]\ndescription:\n  - &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"  - &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))
    (tmp_path / "evil.yaml").write_text("name: ../../evil\ntasks: [NotesAddNote]\n")
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00binary\x80\x81")
    (tmp_path / "bomb.yaml").write_text(ALIAS_BOMB)
    (tmp_path / "workers0.yaml").write_text("devices:\n  workers: 0\n")
    (tmp_path / "no_suite.yaml").write_text("eval:\n  k: 1\n")  # once ran the smoke suite, unasked
    (tmp_path / "bomb_config.yaml").write_text(
        "model:\n  model:\n" + "".join("    " + line + "\n" for line in ALIAS_BOMB.splitlines()[3:]))
    ev = ("eval", "--policy", "random")
    cases = [
        ((*ev, "--suite", "evil.yaml"), "must be a plain name"),
        ((*ev, "--suite", "bin.yaml"), "not UTF-8 text"),
        ((*ev, "--suite", "bomb.yaml"), "aliases"),
        ((*ev, "--suite", "smoke", "--config", "bin.yaml"), "not UTF-8 text"),
        ((*ev, "--suite", "smoke", "--config", "bomb_config.yaml"), "aliases"),
        ((*ev, "--suite", "smoke", "--k", "100000"), "eval.k must be at most 1000"),
        (("adapt", "--app", "com.example.expenses", "--k", "5000"), "adapt.group_size must be at most 1000"),
        # a bad value from an option names the option; the same value from a file names the key only
        (("adapt", "--app", "com.example.expenses", "--k", "1"), "error: --k: adapt.group_size must be >= 2"),
        ((*ev, "--suite", "smoke", "--seed", "-1"), "error: --seed: devices.seed must be >= 0"),
        ((*ev, "--suite", "smoke", "--config", "workers0.yaml"), "error: devices.workers must be >= 1"),
        ((*ev, "--config", "no_suite.yaml"), "no_suite.yaml sets no eval.suite"),
        ((*ev, "--suite", "smoke", "--workers", "0"), "workers must be >= 1"),
        ((*ev, "--suite", "smoke", "--threads", "0"), "threads must be >= 1"),
        ((*ev, "--suite", "smoke", "--devices", "emulator-5554,emulator-5556,emulator-5554"),
         "emulator-5554 is listed twice"),
        (("verifier", "train", "--workers", "0", "--out", "w.json"), "--workers must be >= 1"),
        (("pretrain", "--threads", "0", "--out", "m"), "threads must be a positive integer"),
        (("pretrain", "--config", "bin.yaml"), "not UTF-8 text"),
        (("pretrain", "--config", "bomb.yaml"), "aliases"),
    ]
    for args, message in cases:
        try:
            out = subprocess.run([sys.executable, "-m", "coadapt.cli", *args], capture_output=True, text=True,
                                 cwd=tmp_path, timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{args} did not fail fast") from None
        assert out.returncode == 2, (args, out.stdout, out.stderr[-2000:])
        lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], (args, out.stdout)
        assert "Traceback" not in out.stderr, (args, out.stderr[-2000:])
    assert not (tmp_path / "runs").exists() and not any(tmp_path.parent.glob("evil*"))


def test_eval_run_folder_names_the_adaptation_of_an_adapter():
    from coadapt.cli import _run_label
    from coadapt.config import ModelSettings

    assert _run_label(ModelSettings()) == "default"
    assert _run_label(ModelSettings(adapter="runs/adapt-expenses-20261204-101500/adapter")) == \
        "default+adapt-expenses-20261204-101500"
    assert _run_label(ModelSettings(adapter="adapters/notes-r16")) == "default+notes-r16"


def test_adapt_seed_is_the_runs_seed(tmp_path):
    """`coadapt adapt --seed N` reaches adapt.seed (instances, exploration, sampling): the phones'
    seed alone would leave every run identical, since each episode resets to its card's seed."""
    from unittest import mock

    from typer.testing import CliRunner

    from coadapt import adaptation
    from coadapt.cli import app as cli

    seen = {}

    def capture(package, cfg, folder, **kw):
        seen.update(package=package, adapt_seed=cfg.adapt.seed, devices_seed=cfg.devices.seed,
                    explore=(cfg.adapt.explore_runs, cfg.adapt.explore_steps))
        raise SystemExit(0)

    with mock.patch.object(adaptation, "run_adapt_job", capture):
        CliRunner().invoke(cli, ["adapt", "--app", "com.example.todo", "--seed", "3", "--out", str(tmp_path / "r")])
        assert seen == {"package": "com.example.todo", "adapt_seed": 3, "devices_seed": 3, "explore": (4, 200)}
        seen.clear()
        CliRunner().invoke(cli, ["adapt", "--app", "com.example.todo", "--out", str(tmp_path / "r2"),
                                 "--explore-runs", "2", "--explore-steps", "50"])
        assert seen["adapt_seed"] == 0 and seen["explore"] == (2, 50)
    bad = CliRunner().invoke(cli, ["adapt", "--app", "com.example.todo", "--explore-runs", "0", "--out", str(tmp_path / "r3")])
    assert "explore_runs must be >= 1" in str(bad.exception)  # printed as one line by main()


def test_adapt_without_report_prints_no_empty_table(tmp_path):
    """`--no-report` measures no success: the summary holds the adaptation's line, no empty table."""
    from unittest import mock

    from typer.testing import CliRunner

    from coadapt import adaptation
    from coadapt.cli import app as cli

    result = {"rounds": [{"round": 0, "kept": True}], "env_steps": 12, "adapt_wall_clock_s": 30.0,
              "peak_rss_mb": 500.0, "adapter": str(tmp_path / "r" / "adapter")}
    with mock.patch.object(adaptation, "run_adapt_job", lambda *a, **kw: result):
        out = CliRunner().invoke(cli, ["adapt", "--app", "com.example.todo", "--no-report", "--out", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    assert "rounds 1" in out.output and "adapting 30 s" in out.output and "budget" not in out.output
    assert "success" not in out.output and "adapt com.example.todo" not in out.output
    result.update(adapt_wall_clock_s=303.0, config={"max_minutes": 1.0})  # the first round always runs
    with mock.patch.object(adaptation, "run_adapt_job", lambda *a, **kw: result):
        out = CliRunner().invoke(cli, ["adapt", "--app", "com.example.todo", "--no-report", "--out", str(tmp_path / "r")])
    assert "adapting 303 s (over the 1-minute budget)" in out.output, out.output


def test_paths_and_ports_users_get_wrong_are_one_line_errors(tmp_path):
    """Brackets in paths survive into the message; files the user owns are never overwritten; a
    failed adapt leaves no folder that would refuse the corrected command."""
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "config.json").write_text('{"mine": true}')
    cases = [
        (("eval", "--suite", "smoke", "--adapter", "runs/sweep[lr=1e-3]/adapter"), "runs/sweep[lr=1e-3]/adapter"),
        (("eval", "--suite", "[/draft].yaml"), "[/draft].yaml"),
        (("eval", "--suite", "smoke", "--policy", "oracle", "--out", "mine"), "holds files but no run"),
        (("show", "--app", "notes", "--out", "nodir/s.png"), "does not exist"),
        (("show", "--app", "notes", "--out", "s.txt"), "ending in .png"),
        (("show", "--app", "notes", "--xml", "nodir/s.xml"), "does not exist"),
        (("dashboard", "--runs", ".", "--port", "70000"), "not a TCP port"),
        (("adapt", "--app", "com.example.todo", "--model", "nope", "--out", "typo"), "no model folder"),
        (("adapt", "--app", "com.example.todo", "--adapter", "nope", "--out", "typo"), "no adapter folder"),
    ]
    for args, message in cases:
        out = run(*args, cwd=tmp_path)
        assert out.returncode == 2, (args, out.stdout, out.stderr[-2000:])
        lines = [ln for ln in out.stdout.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], (args, out.stdout)
    assert json.loads((tmp_path / "mine" / "config.json").read_text()) == {"mine": True}
    assert not (tmp_path / "typo").exists(), "the second adapt above was not refused as 'a different adapt run'"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_a_busy_dashboard_port_is_a_one_line_error(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        out = run("dashboard", "--runs", str(tmp_path), "--port", str(s.getsockname()[1]))
    assert out.returncode == 2 and out.stdout.startswith("error: cannot serve on 127.0.0.1:"), out.stdout + out.stderr
    assert "--port" in out.stdout and "Traceback" not in out.stderr


def test_a_finished_eval_run_again_keeps_its_wall_clock_and_memory(tmp_path):
    first = run("eval", "--suite", "smoke", "--policy", "oracle", "--out", "e", cwd=tmp_path)
    report = json.loads((tmp_path / "e" / "report.json").read_text())
    again = run("eval", "--suite", "smoke", "--policy", "oracle", "--out", "e", cwd=tmp_path)
    rerun = json.loads((tmp_path / "e" / "report.json").read_text())
    assert first.returncode == again.returncode == 0, first.stdout + again.stdout
    assert report["wall_seconds"] > 0 and rerun["wall_seconds"] >= report["wall_seconds"]
    assert rerun["peak_rss_mb"] >= report["peak_rss_mb"] > 0


def test_piped_log_records_stay_one_line_each(capsys):
    import logging

    from coadapt import cli

    root, ours = logging.getLogger(), logging.getLogger("coadapt")
    saved = root.handlers[:], root.level, ours.level
    try:
        cli._root(verbose=False)  # as every command starts; stdout here is not a terminal
        message = "a long path " + "/deep" * 60
        logging.getLogger("coadapt.test").info(message)
        logging.getLogger("other.library").info("not shown below WARNING")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        ours.setLevel(saved[2])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"INFO     coadapt.test: {message}"]


def test_a_run_folder_the_command_chose_is_named_first(tmp_path, monkeypatch):
    """Without --out the folder is named before any work, so a run killed before its last line can be resumed."""
    from unittest import mock

    from typer.testing import CliRunner

    from coadapt import adaptation
    from coadapt.cli import app as cli

    monkeypatch.chdir(tmp_path)
    result = {"rounds": [], "env_steps": 0, "adapt_wall_clock_s": 1.0, "peak_rss_mb": 1.0, "adapter": "x"}
    with mock.patch.object(adaptation, "run_adapt_job", lambda *a, **kw: result):
        out = CliRunner().invoke(cli, ["adapt", "--app", "com.example.todo", "--no-report"])
        first = out.output.splitlines()[0]
        assert first.startswith("run folder: runs/adapt-todo-") and "--out runs/adapt-todo-" in first, out.output
        out = CliRunner().invoke(cli, ["adapt", "--app", "com.example.todo", "--no-report", "--out", "mine"])
        assert out.exit_code == 0 and "run folder" not in out.output


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_an_eval_cleanly_and_names_the_folder_to_resume(tmp_path, sig):
    """SIGINT (Ctrl+C) or SIGTERM (kill, a job scheduler) mid-eval: the rollout workers leave their
    episodes at the next step, the command exits 130 saying how to resume, and never aborts in
    native code. Before, the interpreter exited under workers still inside torch ("terminate called
    without an active exception", SIGABRT) in about a quarter of tries, and printed nothing; SIGTERM
    killed the process where it stood."""
    import sqlite3
    import time

    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "coadapt.cli", "eval", "--suite", "seen", "--threads", "1",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            # a shell's background job ignores SIGINT, and so would the child: restore it
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:  # interrupt once episodes are being played
        try:
            with sqlite3.connect(f"file:{out / 'run.db'}?mode=ro", uri=True, timeout=1) as db:
                if db.execute("SELECT COUNT(*) FROM episodes WHERE status='finished'").fetchone()[0] >= 3:
                    break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    proc.send_signal(sig)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output[-2000:]
    assert "terminate called" not in output
    assert f"interrupted: the same command with --out {out} resumes it" in output
    with sqlite3.connect(f"file:{out / 'run.db'}?mode=ro", uri=True) as db:
        running = db.execute("SELECT COUNT(*) FROM episodes WHERE status='running'").fetchone()[0]
    assert running <= 2  # at most one cut episode per worker, replayed by the resume


def test_explore_never_writes_over_another_run(tmp_path):
    """`coadapt explore --out` refuses a folder holding an eval or adapt run, other files, or another
    app's exploration (before, it replaced their report.json); it redoes its own app's."""
    from coadapt.runs import RunStore

    RunStore(tmp_path / "eval").close()
    (tmp_path / "eval" / "report.json").write_text('{"suite": "smoke"}')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    for folder, message in (("eval", "holds an eval or adapt run"), ("other", "no exploration")):
        out = run("explore", "--app", "notes", "--steps", "5", "--out", str(tmp_path / folder))
        assert out.returncode == 2 and message in out.stdout, out.stdout + out.stderr
    assert (tmp_path / "eval" / "report.json").read_text() == '{"suite": "smoke"}'
    assert run("explore", "--app", "notes", "--steps", "5", "--out", str(tmp_path / "x")).returncode == 0
    assert run("explore", "--app", "notes", "--steps", "5", "--out", str(tmp_path / "x")).returncode == 0
    out = run("explore", "--app", "contacts", "--steps", "5", "--out", str(tmp_path / "x"))
    assert out.returncode == 2 and "holds an exploration of com.example.notes" in out.stdout
