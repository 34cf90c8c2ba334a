"""Exploration: the scroll-proof screen key, the explorer and its graph, curiosity's hindsight
term, self-proposed tasks replayed from a fresh reset, exploration memory, `coadapt explore`."""

from __future__ import annotations

import json

import pytest

from coadapt.adaptation import explore_card
from coadapt.android_env.actions import Back, Done, Tap
from coadapt.android_env.env import AndroidEnv
from coadapt.android_env.sim import SimDevice
from coadapt.apps import label_map, make_apps
from coadapt.apps.expenses import ExpensesApp
from coadapt.explore.curiosity import INFORMATIVE, UNUSED, WANDERING, CuriosityWeights, VisitCounts, analyse
from coadapt.explore.explorer import Explorer
from coadapt.explore.graph import TransitionGraph
from coadapt.explore.job import explore_app
from coadapt.explore.memory import memory_lines
from coadapt.explore.propose import expectation_met, proposal_reward, replay
from coadapt.explore.screens import screen_facts, screen_key
from coadapt.policy.base import Decision
from coadapt.rollout.episode import run_episode

PKG = ExpensesApp.package


@pytest.fixture
def dev(expenses_long_list):
    return expenses_long_list


def tap(d, **kw):
    e = d.ui_tree().find(**kw)[0]
    d.tap(*e.bounds.center)


# ---------------------------------------------------------------------------------------------- screen key


def test_scrolling_a_long_list_keeps_the_screen_key(dev):
    first = screen_facts(dev.ui_tree())
    structure = {dev.ui_tree().structure_key()}
    for _ in range(3):
        dev.swipe(360, 1200, 360, 500)
        now = screen_facts(dev.ui_tree())
        structure.add(dev.ui_tree().structure_key())
        assert now.key == first.key
        assert now.fine_key != first.fine_key  # new rows were revealed
    assert len(structure) > 1  # the old structural key pays for plain scrolling; the new one does not


def test_adding_a_row_keeps_the_screen_key(dev):
    before = screen_key(dev.ui_tree())
    state = dev.read_app_state(PKG)
    state["expenses"] = state["expenses"][:3]
    dev.write_app_state(PKG, state)
    dev.launch(PKG)
    few = screen_key(dev.ui_tree())
    tap(dev, content_desc="More options")
    tap(dev, text="Log expense")
    dev.input_text("12.5")
    tap(dev, resource_id=f"{PKG}:id/note")
    dev.input_text("Snacks")
    tap(dev, text="Save")
    assert "Snacks" in dev.ui_tree().texts()
    assert screen_key(dev.ui_tree()) == few == before


@pytest.mark.parametrize("opener", ["menu", "drawer", "dialog"])
def test_opening_a_menu_a_drawer_or_a_dialog_changes_the_key(dev, opener):
    before = screen_key(dev.ui_tree())
    if opener == "menu":
        tap(dev, content_desc="More options")
    elif opener == "drawer":
        tap(dev, content_desc="Open navigation drawer")
    else:
        row = dev.ui_tree().find(resource_id=f"{PKG}:id/expense")[0]
        y = row.bounds.center[1]
        dev.swipe(650, y, 60, y)  # swipe-to-delete asks for confirmation
    assert screen_key(dev.ui_tree()) != before


# ---------------------------------------------------------------------------------------------- explorer


def _explore(app: str, strategy: str, steps: int = 200, seed: int = 0):
    env = AndroidEnv(SimDevice(make_apps()), label_map())
    return Explorer(env, explore_card(app, 0), strategy=strategy, seed=seed).run(steps)


def test_greedy_explorer_beats_monkey_and_dfs_on_expenses():
    ours = _explore(PKG, "greedy").coverage()
    monkey = _explore(PKG, "random").coverage()
    dfs = _explore(PKG, "dfs").coverage()
    assert ours["screens"] >= 1.5 * monkey["screens"], (ours, monkey)
    assert ours["screens"] >= dfs["screens"], (ours, dfs)
    assert 0.5 < ours["effective_share"] <= 1.0


def test_exploration_never_reads_app_state(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("exploration read app state")

    monkeypatch.setattr(SimDevice, "read_app_state", refuse)
    assert _explore("com.example.todo", "greedy", steps=60).coverage()["screens"] >= 3


def test_graph_round_trips_through_utg_json(tmp_path):
    ex = _explore("com.example.todo", "greedy", steps=60)
    ex.graph.save(tmp_path / "utg.json")
    data = json.loads((tmp_path / "utg.json").read_text())
    assert {"nodes", "edges"} <= set(data) and len(data["nodes"]) == len(ex.graph.nodes)
    again = TransitionGraph.load(tmp_path / "utg.json")
    assert again.coverage() == ex.graph.coverage()
    assert all(e["src"] in again.nodes and e["dst"] in again.nodes for e in data["edges"])


# ---------------------------------------------------------------------------------------------- curiosity


class Script:
    """An agent that plays a fixed list of actions, found by label on the screen it sees."""

    def __init__(self, plan):
        self.plan = list(plan)

    def act(self, obs):
        step = self.plan.pop(0)
        if isinstance(step, str):
            i = next(i for i, e in enumerate(obs.elements) if e.label == step)
            return Decision(Tap(index=i))
        return Decision(step)


def _play(plan):
    env = AndroidEnv(SimDevice(make_apps()), label_map())
    card = explore_card(PKG, 0).replace(goal="Log an expense", max_steps=20)
    return run_episode(env, Script(plan), card)


def test_hindsight_pays_a_detour_that_found_the_target_and_charges_an_unrelated_one():
    useful = analyse(_play(["More options", "Log expense", Done()]))
    assert useful.steps[0].kind == INFORMATIVE and useful.steps[0].reward > 0
    assert "log expense" in useful.steps[0].used
    wasted = analyse(_play(["Open navigation drawer", Back(), "More options", "Log expense", Done()]))
    assert wasted.steps[0].kind == UNUSED and wasted.steps[0].reward < 0  # opened a drawer nothing used
    assert wasted.steps[1].kind == WANDERING and wasted.steps[1].reward < 0  # back to where it was
    assert wasted.steps[2].kind == INFORMATIVE
    assert wasted.wandering_rate > useful.wandering_rate == 0.0
    assert sum(wasted.rewards) < sum(useful.rewards)


def test_count_novelty_decays_with_visits():
    visits = VisitCounts()
    w = CuriosityWeights(novelty=1.0, info_gain=0.0, used=0.0, unused=0.0, wandering=0.0)
    first = analyse(_play(["More options", Done()]), w, visits)
    again = analyse(_play(["More options", Done()]), w, visits)
    assert again.steps[0].novelty < first.steps[0].novelty


# ---------------------------------------------------------------------------------------------- proposals


@pytest.fixture(scope="module")
def todo_explored(tmp_path_factory):
    out = tmp_path_factory.mktemp("explore")
    result = explore_app(SimDevice(make_apps()), explore_card("com.example.todo", 0), app_names=label_map(),
                         steps=200, runs=2, out_dir=out)
    return out, result


def test_reverse_synthesised_tasks_replay_from_a_fresh_reset(todo_explored):
    _, result = todo_explored
    created = [p for p in result.proposals if p.kind == "create"]
    assert created, [p.goal for p in result.proposals]
    card = explore_card("com.example.todo", 0)
    for p in created:
        env = AndroidEnv(SimDevice(make_apps()), label_map())
        start = env.reset(card, seed=card.device_seed)
        final = replay(env, card, p.actions)
        assert final is not None and expectation_met(p.expect, final.tree), p.goal
        assert not expectation_met(p.expect, start.tree)
        typed = [v for kind, v in p.expect if kind == "shows"]
        assert typed and all(any(v in t.lower() for t in final.tree.texts()) for v in typed)
        assert proposal_reward(p.expect, final, "done") == 1.0 and proposal_reward(p.expect, final, None) == 0.0


def test_proposals_are_distinct_and_written_with_their_origin(todo_explored):
    out, result = todo_explored
    goals = [p.goal for p in result.proposals]
    assert len(goals) == len(set(goals)) >= 6
    saved = json.loads((out / "proposals.json").read_text())
    assert [d["goal"] for d in saved] == goals and all(d["origin"] and d["expect"] for d in saved)
    assert (out / "utg.json").is_file() and (out / "screens").is_dir()


def test_memory_names_what_a_menu_holds():
    ex = _explore(PKG, "greedy")
    lines = memory_lines(ex.steps, PKG)
    assert any(line.startswith('"More options" holds') and "log expense" in line for line in lines), lines


# ---------------------------------------------------------------------------------------------- CLI


def _cli(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "coadapt.cli", *args], capture_output=True, text=True, timeout=300)


def test_explore_command_writes_the_graph_proposals_and_report(tmp_path):
    out = tmp_path / "ex"
    r = _cli("explore", "--app", "to-do", "--steps", "60", "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "screens" in r.stdout and "proposals" in r.stdout
    utg = json.loads((out / "utg.json").read_text())
    assert utg["num_nodes"] == len(utg["nodes"]) >= 3 and utg["start"] in {n["key"] for n in utg["nodes"]}
    assert all((out / n["screenshot"]).is_file() for n in utg["nodes"])
    report = json.loads((out / "report.json").read_text())
    assert report["coverage"][0]["screens"] == utg["num_nodes"] and report["proposals"]
    assert all(p["origin"] for p in report["proposals"])


def test_explore_command_rejects_bad_input(tmp_path):
    (tmp_path / "afile").write_text("x")
    for args, words in ((["--app", "com.example.nope"], "unknown app"), (["--app", "to-do", "--policy", "bogus"], "bogus"),
                        (["--app", "to-do", "--out", str(tmp_path / "afile")], "not a folder")):
        r = _cli("explore", *args)
        assert r.returncode == 2 and words in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
        assert "Traceback" not in r.stderr


def test_a_search_field_is_not_refilled_on_every_visit():
    """A search box filters the list it sits above; filling it like a form on each arrival (as
    before) emptied the list every time, so no row was ever opened."""
    from coadapt.explore.explorer import Event, is_search

    assert is_search(Event("type", "type:search:search recipes", "Search recipes", 3, "x"))
    assert not is_search(Event("type", "type:name:e.g. lemon pasta", "e.g. Lemon pasta", 3, "x"))
    ex = _explore("com.example.recipes", "greedy", 60)
    titles = {n.title for n in ex.graph.nodes.values()}
    assert "Recipe" in titles, titles  # a recipe's own page, reached by tapping a row
    typed = [s for s in ex.steps if s.event.kind == "type" and is_search(s.event)]
    assert len(typed) <= 2
