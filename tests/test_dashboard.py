"""The dashboard: its data functions on real run folders, its HTTP surface, and a real headless
Chromium driving it (skipped, with the reason, where no browser can be found)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from coadapt.android_env.actions import Back, Scroll, Tap, to_dict
from coadapt.android_env.uitree import Bounds, UiElement
from coadapt.cli import app as cli
from coadapt.dashboard import charts, episodes, folders
from coadapt.dashboard.folders import DashboardError, inside
from coadapt.runs import RunStore

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = Path(os.environ.get("COADAPT_TEST_ARTIFACTS", ROOT / "tests" / "artifacts"))
CHROMIUM = next((p for p in (os.environ.get("COADAPT_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser",
                             shutil.which("chromium") or "", shutil.which("chromium-browser") or "") if p
                 and Path(p).is_file()), None)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A runs folder holding one real evaluation (the oracle on the smoke suite)."""
    root = tmp_path_factory.mktemp("runs")
    result = CliRunner().invoke(cli, ["eval", "--suite", "smoke", "--policy", "oracle", "--out", str(root / "eval-smoke")])
    assert result.exit_code == 0, result.output
    return root


def _element(text: str, box: tuple[int, int, int, int]) -> UiElement:
    return UiElement(index=0, text=text, content_desc="", resource_id="com.example.notes:id/x",
                     class_name="android.widget.Button", package="com.example.notes", bounds=Bounds(*box),
                     clickable=True)


def _running_store(root: Path) -> RunStore:
    """A run being written: one finished episode and one in progress, the writer left open."""
    store = RunStore(root / "eval-live")
    store.write_json("config.json", {"kind": "eval", "suite": "live"})
    shot = Image.new("RGB", (360, 800), (240, 240, 250))
    done = store.start_episode(key="A#0", attempt=0, task="A", app="com.example.notes", goal="Add a note.", seed=1,
                               policy="oracle", device="sim-0")
    store.add_step(done, 0, action=Back(), screenshot=shot, package="com.example.notes", elements=["[0] Button 'Add'"])
    store.finish_episode(done, status="finished", steps=1, success=1.0)
    live = store.start_episode(key="B#0", attempt=0, task="B", app="com.example.notes", goal="Delete a note.",
                               seed=2, policy="oracle", device="sim-1")
    store.add_step(live, 0, action=Tap(index=0), screenshot=shot, package="com.example.notes",
                   elements=["[0] Button 'Delete'"], element=_element("Delete", (100, 300, 260, 360)))
    return store


# ---------------------------------------------------------------- paths


def test_inside_refuses_paths_outside_the_runs_folder(tmp_path):
    root = tmp_path / "runs"
    (root / "a").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("no")
    os.symlink(tmp_path / "secret.txt", root / "a" / "link.txt")
    assert inside(root, "a") == (root / "a").resolve()
    for bad in ("../secret.txt", "a/../../secret.txt", str(tmp_path / "secret.txt"), "/etc/passwd", "a/link.txt"):
        with pytest.raises(DashboardError, match="outside the runs folder"):
            inside(root, bad)


def test_a_screen_path_stored_outside_the_run_is_refused(tmp_path):
    root = tmp_path / "runs"
    store = _running_store(root)
    store.close()
    (tmp_path / "outside.png").write_bytes((root / "eval-live" / "screens" / "1" / "000.png").read_bytes())
    with sqlite3.connect(root / "eval-live" / "run.db") as db:
        db.execute("UPDATE steps SET screen='../../outside.png' WHERE episode_id=1")
    with RunStore.open_readonly(root / "eval-live") as ro, pytest.raises(DashboardError, match="outside"):
        episodes.step_view(ro, root, 1, 0)
    with pytest.raises(DashboardError, match="outside"):
        folders.open_run(root, "../")


# ---------------------------------------------------------------- views as data


def test_runs_view_tells_running_finished_and_killed(tmp_path, runs):
    root = tmp_path / "runs"
    shutil.copytree(runs / "eval-smoke", root / "eval-smoke")
    store = _running_store(root)
    killed = RunStore(root / "eval-killed")
    killed.write_json("config.json", {"kind": "eval"})
    killed.start_episode(key="C#0", attempt=0, task="C", app="com.example.notes", goal="g", seed=3, policy="oracle",
                          device="sim-0")
    played = killed.start_episode(key="C#1", attempt=0, task="C", app="com.example.notes", goal="g", seed=4,
                                  policy="oracle", device="sim-0")
    killed.finish_episode(played, status="finished", steps=3, success=0.0)
    killed.close()  # no report: the process ended without finishing
    try:
        info = {i.rel: i for i in folders.list_run_infos(root)}
        assert info["eval-live"].status == "running"
        assert info["eval-smoke"].status == "finished" and info["eval-smoke"].kind == "eval"
        assert info["eval-smoke"].success == "1.000" and info["eval-smoke"].episodes == 12
        assert info["eval-killed"].status == "killed"
        # one failed episode of a stopped run is not its result: the row says how few were scored
        assert info["eval-killed"].success == "0.000 on 1 so far"
    finally:
        store.close()
    assert {i.rel: i.status for i in folders.list_run_infos(root)}["eval-live"] == "killed"


def test_step_view_draws_the_action_and_marks_the_element(runs):
    with RunStore.open_readonly(runs / "eval-smoke") as store:
        ep = next(e for e in store.episodes() if e.steps >= 2)
        view = episodes.step_view(store, runs, ep.id, 1)
        second = store.steps(ep.id)[1]
        raw = Image.open(runs / "eval-smoke" / second["screen"]).convert("RGB")
    assert view.step == 1 and view.n_steps == ep.steps
    assert view.image is not None and view.image.size == raw.size and view.image.tobytes() != raw.tobytes()
    assert view.action.startswith(second["action_text"])
    assert view.details["episode"]["goal"] == ep.goal
    assert view.details["outcome"]["success (ground truth)"] == ep.success
    chosen = [line for line, label in view.elements if label == "chosen"]
    index = second["action"].get("index")
    assert len(chosen) == (index is not None) and all(c.startswith(f"[{index}]") for c in chosen)
    # Stepping past the end is clamped to the last step.
    with RunStore.open_readonly(runs / "eval-smoke") as store:
        assert episodes.step_view(store, runs, ep.id, 999).step == ep.steps - 1


def test_draw_action_marks_the_tap_point_and_the_swipe_path():
    base = Image.new("RGB", (400, 800), (255, 255, 255))
    tapped = episodes.draw_action(base, {"action_type": "click", "index": 0}, {"bounds": [100, 100, 300, 200]}, "tap(0)")
    r, g, b = tapped.getpixel((200, 150))
    assert r > 200 and g < 200 and b < 220, "the tap point is drawn in the accent colour"
    assert tapped.getpixel((396, 798)) == (20, 20, 24), "the banner carries the action text"
    assert tapped.getpixel((20, 20)) == (255, 255, 255)
    scrolled = episodes.draw_action(base, {"action_type": "scroll", "direction": "down"}, None,
                                    "scroll(down)")
    column = [scrolled.getpixel((200, y)) for y in range(200, 600, 20)]
    assert sum(1 for px in column if px != (255, 255, 255)) >= 10, "an arrow along the finger's path"
    assert to_dict(Scroll(direction="down")) == {"action_type": "scroll", "direction": "down"}


def test_live_view_shows_a_frame_of_a_run_still_being_written(tmp_path):
    root = tmp_path / "runs"
    store = _running_store(root)
    try:
        with RunStore.open_readonly(root / "eval-live") as ro:
            frames = episodes.live_frames(ro, root)
        assert [f.device for f in frames] == ["sim-1"]
        assert frames[0].image is not None and frames[0].key == "B#0" and "tap(0)" in frames[0].caption
        # The viewer never blocked the writer: it goes on writing the same episode.
        store.add_step(2, 1, action=Back(), screenshot=Image.new("RGB", (360, 800)), package="com.example.notes",
                       elements=[])
        with RunStore.open_readonly(root / "eval-live") as ro:
            assert episodes.live_frames(ro, root)[0].step == 1
        store.finish_episode(2, status="finished", steps=2, success=0.0)
        with RunStore.open_readonly(root / "eval-live") as ro:
            assert episodes.live_frames(ro, root) == []
    finally:
        store.close()


def test_training_rows_merge_the_store_and_the_report(tmp_path):
    store = RunStore(tmp_path / "adapt")
    store.start_round("adapt", 0)
    store.finish_round("adapt", 0, status="finished", metrics={"self_verified_success": 0.25, "train_loss": 1.5,
                                                                "accepted_positive": 3}, kept=True)
    store.start_round("adapt", 1)
    store.finish_round("adapt", 1, status="rolled_back", metrics={"self_verified_success": 0.5}, kept=False)
    report = {"rounds": [{"round": 0, "check": 0.4}], "base": {"success_rate": 0.1},
              "adapted": {"success_rate": 0.2, "n_episodes": 50}, "gain": 0.1}
    rounds = charts.round_metrics(store, report)
    store.close()
    assert [(m["round"], m["status"], m["kept"]) for m in rounds] == [(0, "finished", True), (1, "rolled_back", False)]
    assert rounds[0]["check"] == 0.4 and rounds[0]["train_loss"] == 1.5
    rates = charts.long_rows(rounds, charts.SUCCESS_SERIES)
    assert {(r["round"], r["series"], r["value"]) for r in rates} == {
        (0, "self_verified_success", 0.25), (0, "check", 0.4), (1, "self_verified_success", 0.5)}
    assert "base **0.100**" in charts.ground_truth_line(report) and "+0.100" in charts.ground_truth_line(report)
    assert "not reported" in charts.ground_truth_line(None)
    report["comparison"] = {"adapted": {"ci95": [-0.02, 0.22], "wins": 6, "losses": 1, "instances": 50}}
    assert "(95% CI -0.020 to +0.220, won 6, lost 1 of 50 instances)" in charts.ground_truth_line(report)


def test_compare_and_exploration_views(tmp_path):
    root = tmp_path / "runs"
    for app, base, adapted in (("com.example.todo", 0.1, 0.3), ("com.example.music", 0.2, 0.2)):
        store = RunStore(root / f"adapt-{app}")
        store.write_json("config.json", {"kind": "adapt", "app": app})
        store.write_json("report.json", {"app": app, "base": {"success_rate": base},
                                         "adapted": {"success_rate": adapted}})
        store.close()
    rows = charts.compare_rows(root)
    assert sorted((r["app"], r["policy"], r["success"]) for r in rows) == [
        ("music", "adapted", 0.2), ("music", "base", 0.2), ("todo", "adapted", 0.3), ("todo", "base", 0.1)]
    result = CliRunner().invoke(cli, ["explore", "--app", "com.example.todo", "--steps", "25",
                                      "--out", str(root / "explore-todo")])
    assert result.exit_code == 0, result.output
    assert charts.exploration_folders(root) == ["explore-todo"]
    graph = charts.load_graph(root, "explore-todo")
    gallery = charts.screen_gallery(root, "explore-todo", graph)
    assert len(gallery) == len(graph["nodes"]) >= 2
    image = charts.graph_image(root, "explore-todo", graph)
    assert image.width > 200 and image.height > 100
    assert "screens" in charts.graph_summary(graph)
    assert {i.rel: i.kind for i in folders.list_run_infos(root)}["explore-todo"] == "explore"
    with pytest.raises(DashboardError):
        charts.load_graph(root, "../")


# ---------------------------------------------------------------- the server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_default_bind_is_loopback_and_files_outside_are_refused(tmp_path, runs, caplog):
    import typer.main

    from coadapt.dashboard.app import serve

    params = {p.name: p.default for p in typer.main.get_command(cli).commands["dashboard"].params}
    assert params["host"] == "127.0.0.1"
    (tmp_path / "secret.txt").write_text("top secret")
    demo, url = serve(runs, port=_free_port())
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200
        for path in ("/etc/passwd", str(tmp_path / "secret.txt"), str(runs / "eval-smoke" / "report.json")):
            for route in ("gradio_api/file=", "file="):
                try:
                    with urllib.request.urlopen(url + route + path, timeout=10) as r:
                        body = r.read()
                except urllib.error.HTTPError as e:
                    assert e.code in (403, 404), (route, path, e.code)
                    continue
                assert b"root:" not in body and b"top secret" not in body and b"success_rate" not in body
    finally:
        demo.close()
    with caplog.at_level("WARNING"):
        demo, _ = serve(runs, host="0.0.0.0", port=_free_port())
        demo.close()
    assert "without --auth" in caplog.text


def test_dashboard_cli_refuses_a_missing_folder_and_bad_auth(tmp_path):
    for args, message in ((["--runs", str(tmp_path / "nope")], "does not exist"),
                          (["--runs", str(tmp_path), "--auth", "nopassword"], "user:password")):
        out = subprocess.run([sys.executable, "-m", "coadapt.cli", "dashboard", *args], capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stdout, (args, out.stdout, out.stderr)


@pytest.mark.browser
@pytest.mark.slow
def test_a_real_browser_steps_through_an_episode_and_watches_a_live_run(tmp_path, runs):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if CHROMIUM is None:
        pytest.skip("no Chromium found (apt-get install chromium, or set COADAPT_CHROMIUM)")
    from coadapt.dashboard.app import serve

    root = tmp_path / "runs"
    shutil.copytree(runs / "eval-smoke", root / "eval-smoke")
    live = _running_store(root)
    os.utime(root / "eval-smoke" / "run.db")  # newest first: the finished eval heads the list
    with RunStore.open_readonly(root / "eval-smoke") as store:
        rows = episodes.episode_rows(store)
        row = next(i for i, r in enumerate(rows[:8]) if r[7] >= 2)
        second = store.steps(rows[row][0])[1]["action_text"]
    demo, url = serve(root, port=_free_port())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(url)
            # Runs view: both runs listed; open the evaluation.
            page.locator("#runs-table [role=gridcell]", has_text="eval-live").first.wait_for(timeout=30_000)
            page.locator("#runs-table [role=gridcell]", has_text="eval-smoke").first.click()
            # Episode viewer: open an episode, then step to its second step with the keyboard.
            page.locator(f"#episodes-table [data-testid=cell-{row}-0]").click(timeout=30_000)
            sync_api.expect(page.locator("#step-label")).to_contain_text("step 1 of", timeout=30_000)
            page.locator("body").click(position={"x": 5, "y": 5})
            page.keyboard.press("ArrowRight")
            sync_api.expect(page.locator("#step-label")).to_contain_text("step 2 of", timeout=30_000)
            sync_api.expect(page.locator("#step-action textarea")).to_have_value(re.compile("^" + re.escape(second)),
                                                                                timeout=30_000)
            screen = page.locator("#step-image img")
            screen.wait_for(timeout=30_000)
            assert page.evaluate("(img) => img.complete && img.naturalWidth > 0", screen.element_handle())
            sync_api.expect(page.locator("#step-goal")).to_contain_text("Goal:")
            page.screenshot(path=str(ARTIFACTS / "dashboard-episode.png"), full_page=True)
            # Live view: the run still being written shows its newest frame.
            page.locator("#run-picker input").click()
            page.get_by_role("option", name="eval-live").click()
            page.get_by_role("tab", name="Live").click()
            page.locator("#live-frames img").first.wait_for(timeout=30_000)
            sync_api.expect(page.locator("#live-caption")).to_contain_text("running")
            page.screenshot(path=str(ARTIFACTS / "dashboard-live.png"), full_page=True)
            browser.close()
    finally:
        demo.close()
        live.close()
    assert (ARTIFACTS / "dashboard-episode.png").stat().st_size > 10_000
