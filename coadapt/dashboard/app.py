"""The Gradio app: runs, episode viewer, live view, training, exploration and compare tabs over a
runs folder, opened read-only."""

from __future__ import annotations

import functools
import logging
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no calls home: the machine may be offline

import gradio as gr  # noqa: E402
import pandas as pd  # noqa: E402

from coadapt.dashboard import charts, episodes, folders  # noqa: E402
from coadapt.dashboard.folders import DashboardError  # noqa: E402

log = logging.getLogger(__name__)

RUN_COLUMNS = ("run", "kind", "app", "status", "success", "episodes", "rounds", "started", "time")
LIVE_EVERY_S = 2.0
LOOPBACK = ("127.0.0.1", "localhost", "::1")

KEYS_JS = """
<script>
document.addEventListener('keydown', (e) => {
  const t = e.target.tagName;
  if (t === 'INPUT' || t === 'TEXTAREA' || e.target.isContentEditable) return;
  const id = {ArrowRight: 'next-step', ArrowLeft: 'prev-step', j: 'next-step', k: 'prev-step'}[e.key];
  if (!id) return;
  const b = document.getElementById(id);
  if (b) { e.preventDefault(); b.click(); }
});
</script>
"""
"""Right/left arrow (or j/k) step through an episode, unless a text field has the focus."""


def _guard(fn):
    """Show a DashboardError as a message in the page instead of a stack trace."""
    @functools.wraps(fn)  # keeps the signature: Gradio reads it to pass gr.SelectData
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except DashboardError as e:
            raise gr.Error(str(e)) from e
    return wrapped


def _when(t: float | None) -> str:
    return "" if t is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _duration(s: float | None) -> str:
    if s is None:
        return ""
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _goal(details: dict[str, Any]) -> str:
    """The episode's goal and how it ended, as one Markdown line above the screen."""
    ep, outcome = details.get("episode", {}), details.get("outcome", {})
    end = outcome.get("declared") or ("step limit" if outcome.get("status") == "finished" else outcome.get("status"))
    truth = outcome.get("success (ground truth)")
    verdict = details.get("verifier", {}).get("score")
    parts = [f"ended: {end}"] + ([f"ground truth {truth:g}"] if truth is not None else []) + (
        [f"verifier {verdict:.2f}"] if verdict is not None else [])
    return f"**Goal:** {ep.get('goal', '')}  \n{' · '.join(parts)}"


def build_app(root: str | Path) -> gr.Blocks:
    """The dashboard over the run folders under `root` (which must exist)."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise DashboardError(f"runs folder {root} does not exist")

    def runs_frame() -> tuple[pd.DataFrame, list[str]]:
        infos = folders.list_run_infos(root)
        rows = [[i.rel, i.kind, i.app, i.status, i.success, i.episodes, i.rounds, _when(i.started),
                 _duration(i.seconds)] for i in infos]
        return pd.DataFrame(rows, columns=list(RUN_COLUMNS)), [i.rel for i in infos if i.kind != "explore"]

    @_guard
    def refresh(current: str | None):
        frame, choices = runs_frame()
        value = current if current in choices else (choices[0] if choices else None)
        explored = charts.exploration_folders(root)
        return (frame, gr.Dropdown(choices=choices, value=value),
                gr.Dropdown(choices=explored, value=explored[0] if explored else None), compare())

    @_guard
    def pick_run(evt: gr.SelectData):
        rel = (evt.row_value or [None])[0]
        if rel is None:
            return gr.Dropdown(), gr.Tabs()
        kind = (evt.row_value or [None, None])[1]
        if kind == "explore":
            return gr.Dropdown(), gr.Tabs(selected="exploration")
        return gr.Dropdown(value=rel), gr.Tabs(selected="episodes")

    @_guard
    def episodes_of(rel: str | None):
        if not rel:
            return pd.DataFrame(columns=list(episodes.EPISODE_COLUMNS)), f"No run picked. Runs under {root}."
        with folders.open_run(root, rel) as store:
            rows = episodes.episode_rows(store)
        return (pd.DataFrame(rows, columns=list(episodes.EPISODE_COLUMNS)),
                f"**{rel}**: {len(rows)} episodes. Click one to step through it; ← → (or j k) move between steps.")

    @_guard
    def show_step(rel: str | None, episode: int | None, step: int):
        if not rel or episode is None:
            return None, "", [], "", {}, "Pick an episode.", "", step
        with folders.open_run(root, rel) as store:
            view = episodes.step_view(store, root, int(episode), int(step))
        label = (f"Episode {view.episode} · step {view.step + 1} of {view.n_steps}" if view.n_steps
                 else f"Episode {view.episode} · no steps yet")
        return (view.image, view.action, view.elements, view.raw_output, view.details, label, _goal(view.details),
                view.step)

    @_guard
    def pick_episode(rel: str | None, evt: gr.SelectData):
        episode = (evt.row_value or [None])[0]
        return (int(episode) if episode is not None else None, *show_step(rel, episode, 0))

    @_guard
    def live(rel: str | None):
        if not rel:
            return [], "No run picked."
        with folders.open_run(root, rel) as store:
            frames = episodes.live_frames(store, root)
            view = store.overview()
        running = folders.run_info(root, folders.inside(root, rel)).status
        gallery = [(f.image, f.caption) for f in frames if f.image is not None]
        text = (f"**{rel}** is {running}: {view['episodes']} episodes stored, {len(frames)} in progress"
                + ("" if frames else " (nothing is being played now)") + f"; refreshed every {LIVE_EVERY_S:g} s.")
        return gallery, text

    @_guard
    def training(rel: str | None):
        empty = pd.DataFrame(columns=["round", "label", "series", "value"])
        if not rel:
            return "No run picked.", empty, empty, empty, pd.DataFrame(columns=list(charts.ROUND_COLUMNS))
        report = folders.read_json(folders.inside(root, rel) / "report.json")
        with folders.open_run(root, rel) as store:
            rounds = charts.round_metrics(store, report)
        if not rounds:
            return ("This run has no adaptation rounds (an evaluation, or an adapt run before its first round "
                    "ends)."), empty, empty, empty, pd.DataFrame(columns=list(charts.ROUND_COLUMNS))
        frame = lambda series: pd.DataFrame(charts.long_rows(rounds, series) or None,  # noqa: E731
                                            columns=["round", "label", "series", "value"])
        return (charts.ground_truth_line(report), frame(charts.SUCCESS_SERIES), frame(charts.TRAIN_SERIES),
                frame(charts.GATE_SERIES), pd.DataFrame(charts.round_table(rounds), columns=list(charts.ROUND_COLUMNS)))

    @_guard
    def exploration(rel: str | None):
        if not rel:
            return "No exploration under this folder yet (`coadapt explore` or `coadapt adapt` makes one).", None, []
        graph = charts.load_graph(root, rel)
        return (charts.graph_summary(graph), charts.graph_image(root, rel, graph),
                charts.screen_gallery(root, rel, graph))

    def compare() -> pd.DataFrame:
        rows = charts.compare_rows(root)
        return gr.BarPlot(pd.DataFrame(rows or None, columns=["bar", "run", "policy", "success", "app"]),
                          sort=[r["bar"] for r in rows] or None)

    with gr.Blocks(title="coadapt dashboard", analytics_enabled=False) as demo:
        gr.Markdown(f"## coadapt dashboard · `{root}`")
        with gr.Row():
            run = gr.Dropdown(label="Run", choices=[], elem_id="run-picker", scale=4)
            refresh_btn = gr.Button("Refresh", elem_id="refresh", scale=1)
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("Runs", id="runs", elem_id="tab-runs"):
                runs_table = gr.Dataframe(headers=list(RUN_COLUMNS), interactive=False, elem_id="runs-table",
                                          label="Runs, newest first (click one to open it)")
            with gr.Tab("Episodes", id="episodes", elem_id="tab-episodes"):
                episodes_md = gr.Markdown(elem_id="episodes-caption")
                episodes_table = gr.Dataframe(headers=list(episodes.EPISODE_COLUMNS), interactive=False,
                                              elem_id="episodes-table", max_height=320)
                with gr.Row():
                    prev_btn = gr.Button("◀ Previous", elem_id="prev-step", scale=1)
                    step_md = gr.Markdown("Pick an episode.", elem_id="step-label")
                    next_btn = gr.Button("Next ▶", elem_id="next-step", scale=1)
                goal_md = gr.Markdown(elem_id="step-goal")
                with gr.Row():
                    image = gr.Image(type="pil", label="Screen, with the action", elem_id="step-image", height=640,
                                     interactive=False, buttons=["fullscreen"])
                    with gr.Column():
                        action = gr.Textbox(label="Action", elem_id="step-action", interactive=False)
                        raw = gr.Textbox(label="Model output", elem_id="raw-output", interactive=False, lines=2)
                        elements = gr.HighlightedText(label="Elements (the chosen one marked)", elem_id="elements",
                                                      color_map={"chosen": "#e6285a"}, combine_adjacent=False)
                        details = gr.JSON(label="Outcome, verifier, curiosity, gate and advantage",
                                          elem_id="step-details")
            with gr.Tab("Live", id="live", elem_id="tab-live"):
                live_md = gr.Markdown(elem_id="live-caption")
                live_gallery = gr.Gallery(label="Newest frame per device", elem_id="live-frames", columns=4,
                                          height=560, object_fit="contain")
            with gr.Tab("Training", id="training", elem_id="tab-training"):
                truth_md = gr.Markdown(elem_id="truth")
                with gr.Row():
                    rates_plot = gr.LinePlot(x="round", y="value", color="series", title="Per-round rates",
                                             elem_id="rates-plot")
                    loss_plot = gr.LinePlot(x="round", y="value", color="series", title="Loss and KL",
                                            elem_id="loss-plot")
                gates_plot = gr.BarPlot(x="label", y="value", color="series", title="Gate decisions per round",
                                        elem_id="gates-plot")
                rounds_table = gr.Dataframe(headers=list(charts.ROUND_COLUMNS), interactive=False,
                                            elem_id="rounds-table")
            with gr.Tab("Exploration", id="exploration", elem_id="tab-exploration"):
                explore_pick = gr.Dropdown(label="Exploration", choices=[], elem_id="explore-picker")
                explore_md = gr.Markdown(elem_id="explore-caption")
                graph_img = gr.Image(type="pil", label="UI transition graph (columns: distance from the start)",
                                     elem_id="graph", interactive=False)
                screens = gr.Gallery(label="Screens", columns=8, height=420, object_fit="contain",
                                     elem_id="explore-screens")
            with gr.Tab("Compare", id="compare", elem_id="tab-compare"):
                compare_plot = gr.BarPlot(x="bar", y="success", color="policy", elem_id="compare-plot",
                                          title="Ground-truth success on held-out instances, base vs adapted",
                                          x_title="app · policy", tooltip="all")
        episode = gr.State(None)
        step = gr.State(0)
        timer = gr.Timer(LIVE_EVERY_S)

        step_outputs = [image, action, elements, raw, details, step_md, goal_md, step]
        demo.load(refresh, [run], [runs_table, run, explore_pick, compare_plot])
        refresh_btn.click(refresh, [run], [runs_table, run, explore_pick, compare_plot])
        runs_table.select(pick_run, None, [run, tabs])
        run.change(episodes_of, [run], [episodes_table, episodes_md]) \
            .then(training, [run], [truth_md, rates_plot, loss_plot, gates_plot, rounds_table]) \
            .then(live, [run], [live_gallery, live_md])
        episodes_table.select(pick_episode, [run], [episode, *step_outputs])
        prev_btn.click(lambda r, e, s: show_step(r, e, max(0, s - 1)), [run, episode, step], step_outputs)
        next_btn.click(lambda r, e, s: show_step(r, e, s + 1), [run, episode, step], step_outputs)
        timer.tick(live, [run], [live_gallery, live_md], show_progress="hidden")
        explore_pick.change(exploration, [explore_pick], [explore_md, graph_img, screens])
    return demo


def serve(root: str | Path, *, host: str = "127.0.0.1", port: int | None = 7860,
          auth: tuple[str, str] | None = None) -> tuple[gr.Blocks, str]:
    """Start the dashboard in the background; returns the app (`.block_thread()` waits on it,
    `.close()` stops it) and its URL."""
    if host not in LOOPBACK and auth is None:
        log.warning("the dashboard is bound to %s without --auth: anyone who can reach this machine can read "
                    "every run under %s", host, root)
    demo = build_app(root)
    theme = gr.themes.Base(font=["ui-sans-serif", "system-ui", "sans-serif"], font_mono=["ui-monospace", "monospace"])
    _, url, _ = demo.launch(server_name=host, server_port=port, auth=auth, prevent_thread_lock=True, quiet=True,
                            ssr_mode=False, theme=theme, head=KEYS_JS, footer_links=[])
    return demo, url
