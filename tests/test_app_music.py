"""Music (com.example.music): state round trip, drawer-only sections, long-press menus,
"New mix" in the overflow menu, confirmed removal, search and the icon-only player."""

from __future__ import annotations

import json
import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps.music import MusicApp, sample_state

PKG = MusicApp.package


@pytest.fixture
def music():
    d = SimDevice([MusicApp()])
    data = sample_state(random.Random(11), n_playlists=3)
    data["player"].update(shuffle=False, repeat="off")
    d.write_app_state(PKG, data)
    d.launch(PKG)
    return d


def els(d, **kw):
    return d.ui_tree().find(**kw)


def tap(d, **kw):
    found = els(d, **kw)
    assert found, f"no element {kw}; texts: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def rid(name: str) -> str:
    return f"{PKG}:id/{name}"


def state(d):
    return d.read_app_state(PKG)


def first_song_row(d):
    return els(d, resource_id=rid("title"))[0]


def go(d, section: str):
    tap(d, content_desc="Open navigation drawer")
    tap(d, text=section)


def test_state_round_trips_through_json():
    app = MusicApp()
    data = sample_state(random.Random(2), n_playlists=4)
    app.load_state(json.loads(json.dumps(data)))
    assert app.state_dict() == data
    again = MusicApp()
    again.load_state(app.state_dict())
    assert again.state_dict() == data


def test_sections_only_through_the_drawer(music):
    tree = music.ui_tree()
    assert not [e for e in tree if e.class_name == "android.widget.HorizontalScrollView"]  # no tabs
    assert not els(music, text="Playlists")
    go(music, "Playlists")
    assert els(music, resource_id=rid("toolbar_title"), text="Playlists")
    for p in state(music)["playlists"]:
        assert els(music, text=p["name"])
    music.key("back")  # back from a section goes to Songs, not out of the app
    assert music.current_package() == PKG and els(music, resource_id=rid("toolbar_title"), text="Songs")


def test_song_list_needs_scrolling(music):
    songs = sorted(s["title"] for s in state(music)["songs"])
    visible = [e.text for e in els(music, resource_id=rid("title"))]
    assert songs[0] in visible and songs[-1] not in visible
    lst = els(music, resource_id=rid("songs"))[0]
    for _ in range(15):
        music.swipe(lst.bounds.center[0], lst.bounds.bottom - 10, lst.bounds.center[0], lst.bounds.top + 10)
    assert songs[-1] in [e.text for e in els(music, resource_id=rid("title"))]


def test_long_press_menu_likes_and_adds_to_playlist(music):
    row = first_song_row(music)
    song = next(s for s in state(music)["songs"] if s["title"] == row.text)
    music.tap(*row.bounds.center)  # a tap plays, it does not open the menu
    assert state(music)["player"]["song_id"] == song["id"] and not els(music, text="Add to playlist")
    music.long_press(*row.bounds.center)
    assert els(music, text="Add to playlist")
    tap(music, text="Unlike" if song["liked"] else "Like")
    assert next(s for s in state(music)["songs"] if s["id"] == song["id"])["liked"] != song["liked"]
    playlist = next(p for p in state(music)["playlists"] if song["id"] not in p["song_ids"])
    music.long_press(*row.bounds.center)
    tap(music, text="Add to playlist")
    tap(music, text=playlist["name"])
    after = next(p for p in state(music)["playlists"] if p["id"] == playlist["id"])
    assert after["song_ids"] == playlist["song_ids"] + [song["id"]]


def test_new_mix_is_in_the_overflow_menu(music):
    go(music, "Playlists")
    before = state(music)["playlists"]
    tap(music, content_desc="More options")
    tap(music, text="New mix")
    tap(music, text="Create")  # no name yet: the dialog stays
    assert els(music, text="New mix") and state(music)["playlists"] == before
    music.input_text(before[0]["name"].upper())  # names are unique, ignoring case
    tap(music, text="Create")
    assert state(music)["playlists"] == before
    tap(music, resource_id=rid("playlist_name"))
    for _ in before[0]["name"]:
        music.key("delete")
    music.input_text("Gym mix")
    music.key("enter")
    after = state(music)["playlists"]
    assert after[:-1] == before and after[-1]["name"] == "Gym mix" and after[-1]["song_ids"] == []
    assert not els(music, text="New mix") and els(music, text="Gym mix")


def test_removing_from_a_playlist_asks_first(music):
    go(music, "Playlists")
    playlist = state(music)["playlists"][0]
    tap(music, text=playlist["name"])
    row = first_song_row(music)
    music.long_press(*row.bounds.center)
    tap(music, text="Remove from playlist")
    assert els(music, text="Remove from playlist?")
    tap(music, text="Cancel")
    assert state(music)["playlists"][0] == playlist
    music.long_press(*row.bounds.center)
    tap(music, text="Remove from playlist")
    tap(music, text="Remove")
    assert state(music)["playlists"][0]["song_ids"] == playlist["song_ids"][1:]


def test_search_finds_songs_by_artist(music):
    artist = state(music)["songs"][0]["artist"]
    tap(music, content_desc="Search")
    music.input_text(artist.split()[-1].lower())
    found = {e.text for e in els(music, resource_id=rid("title"))}
    by_artist = {s["title"] for s in state(music)["songs"] if s["artist"] == artist}
    assert found and found <= {s["title"] for s in state(music)["songs"]} and found & by_artist


def test_player_controls_are_icons_and_playback_follows_the_clock(music):
    player = state(music)["player"]
    assert not player["playing"]
    tap(music, content_desc="Now playing")
    for desc in ("Shuffle", "Previous", "Play", "Next", "Repeat"):
        button = els(music, content_desc=desc)[0]
        assert button.text == "" and button.class_name == "android.widget.ImageButton"
    pos = state(music)["player"]["position"]
    music.wait(30)
    assert state(music)["player"]["position"] == pos  # paused
    tap(music, content_desc="Play")
    music.wait(30)
    assert state(music)["player"]["position"] == pos + 30 and els(music, content_desc="Pause")
    tap(music, content_desc="Shuffle")
    assert state(music)["player"]["shuffle"] and els(music, content_desc="Shuffle")[0].checked
    tap(music, content_desc="Shuffle")
    for mode in ("all", "one", "off", "all"):
        tap(music, content_desc="Repeat")
        assert state(music)["player"]["repeat"] == mode
    queue = player["queue"]
    idx = queue.index(player["song_id"])
    tap(music, content_desc="Next")
    assert state(music)["player"]["song_id"] == queue[(idx + 1) % len(queue)] and state(music)["player"]["position"] == 0
    tap(music, content_desc="Previous")
    assert state(music)["player"]["song_id"] == player["song_id"]


def test_song_end_follows_repeat_and_stops_at_the_end_of_the_queue(music):
    app = music.app(PKG)
    state(music)  # reading the state brings the player up to the clock before we change it
    songs = app.state.songs
    last = songs[-1]
    app.state.player.queue = [songs[-2].id, last.id]
    app.state.player.song_id, app.state.player.position, app.state.player.playing = last.id, last.duration - 5, True
    app.state.player.repeat = "one"
    music.wait(10)
    assert state(music)["player"]["song_id"] == last.id and state(music)["player"]["position"] == 5
    app.state.player.repeat = "all"
    app.state.player.position = last.duration - 2
    music.wait(4)
    assert state(music)["player"]["song_id"] == songs[-2].id and state(music)["player"]["position"] == 2
    app.state.player.repeat = "off"
    app.state.player.song_id, app.state.player.position = last.id, last.duration - 1
    music.wait(3)
    p = state(music)["player"]
    assert p["song_id"] == last.id and not p["playing"] and p["position"] == 0
