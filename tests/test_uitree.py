"""uiautomator dumps: the real fixtures parse, round-trip, and bad input gives UiTreeError."""

from __future__ import annotations

from pathlib import Path

import pytest

from coadapt.android_env.errors import UiTreeError
from coadapt.android_env.uitree import Bounds, parse_file, parse_xml, write_xml

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.xml"))
EXPECTED_NODES = {
    "aena_onboarding.xml": 34, "gmaps_timeline_dialog.xml": 23, "gtasks_mytasks_u2.xml": 163,
    "openweather_london.xml": 110, "thunderbird_inbox.xml": 27, "whereismytrain_home.xml": 77,
}


def test_all_fixtures_present():
    assert {p.name for p in FIXTURES} == set(EXPECTED_NODES)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_real_dump_parses(path):
    tree = parse_file(str(path))
    assert len(tree) == EXPECTED_NODES[path.name]
    for e in tree:
        assert e.bounds.right >= e.bounds.left and e.bounds.bottom >= e.bounds.top
        if e.parent is not None:
            assert e.index in tree.children[e.parent]
            assert e.depth == tree.elements[e.parent].depth + 1


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_real_dump_round_trips(path):
    tree = parse_file(str(path))
    dialect = "u2" if tree.elements[0].display_id is not None else "stock"
    again = parse_xml(write_xml(tree, dialect))
    assert again.elements == tree.elements


def test_u2_multi_window_format():
    tree = parse_file(str(Path(__file__).parent / "fixtures" / "gtasks_mytasks_u2.xml"))
    assert len(tree.roots) == 2
    assert tree.packages == ("com.android.systemui", "com.google.android.apps.tasks")
    assert {e.window for e in tree} == {0, 1}
    assert all(e.drawing_order is not None for e in tree)
    assert tree.screen_bounds == Bounds(0, 0, 1600, 2560)
    clock = tree.find(resource_id="com.android.systemui:id/clock")[0]
    assert clock.text == "3:17" and clock.visible


def test_stock_format_details():
    train = parse_file(str(Path(__file__).parent / "fixtures" / "whereismytrain_home.xml"))
    assert any(e.naf and e.clickable and not e.label for e in train)
    dialog = parse_file(str(Path(__file__).parent / "fixtures" / "gmaps_timeline_dialog.xml"))
    # `uiautomator dump` dumps the active window only: here the dialog.
    assert dialog.screen_bounds == Bounds(157, 569, 922, 1286)
    done = dialog.find(text="Done")[0]
    assert dialog.elements[done.parent].clickable


def test_dump_to_tty_trailer_is_ignored():
    text = (Path(__file__).parent / "fixtures" / "thunderbird_inbox.xml").read_text()
    tree = parse_xml(text + "UI hierchary dumped to: /dev/tty\n")
    assert len(tree) == 27


@pytest.mark.parametrize(
    "raw, message",
    [
        ("", "empty"),
        ("   \n", "empty"),
        (b"", "empty"),
        ("ERROR: null root node returned by UiTestAutomationBridge.", "null root"),
        ("ERROR: could not get idle state.", "idle"),
        ("hello world", "not a uiautomator dump"),
        ("<hierarchy rotation='0'><node bounds='[0,0][1,1]'>", "malformed"),
        ("<hierarchy rotation='0'></hierarchy>", "no nodes"),
        ("<hierarchy><node text='x' /></hierarchy>", "without bounds"),
        ("<hierarchy><node bounds='0,0,10,10' /></hierarchy>", "bad bounds"),
    ],
)
def test_bad_dumps_raise_uitree_error(raw, message):
    with pytest.raises(UiTreeError, match=message):
        parse_xml(raw)


def test_missing_file_is_uitree_error(tmp_path):
    with pytest.raises(UiTreeError, match="cannot read"):
        parse_file(str(tmp_path / "nope.xml"))


def test_queries():
    tree = parse_file(str(Path(__file__).parent / "fixtures" / "thunderbird_inbox.xml"))
    compose = tree.find(content_desc="Compose")
    assert compose and compose[0].clickable
    assert "Inbox" in tree.texts() or any("Inbox" in t for t in tree.texts())
    root = tree.roots[0]
    assert len(list(tree.descendants(root))) == len(tree) - 1
    assert tree.structure_key() == parse_xml(tree.to_xml("stock")).structure_key()
