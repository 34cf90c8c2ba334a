"""Tasks on Music (com.example.music, unseen): drawer-only sections, a long song list,
long-press context menus, "New mix" behind the overflow menu, confirmations and icon-only
player controls."""

from __future__ import annotations

import random
from typing import Any

from coadapt.apps.music import ALBUMS, PLAYLIST_NAMES, REPEAT_MODES, SONG_TITLES, fmt_time, sample_state

from .base import OracleCtx, Solution, TaskTemplate, answer_matches

APP = "com.example.music"
NEW_NAMES = ("Gym mix", "Coffee shop", "Night owl", "Sunday brunch", "Deep focus", "Summer 2026", "Good vibes",
             "Commute", "Lazy afternoon", "Party starters", "Calm down", "Garden work")
SETTINGS = {"Crossfade": "crossfade", "Gapless playback": "gapless", "Normalize volume": "normalize"}


def _state(device) -> dict[str, Any]:
    return device.read_app_state(APP)


def _song(state: dict[str, Any], title: str) -> dict[str, Any]:
    return next(s for s in state["songs"] if s["title"] == title)


def _playlist(state: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((p for p in state["playlists"] if p["name"] == name), None)


def _library(state: dict[str, Any]) -> list[tuple[int, str, bool]]:
    return [(s["id"], s["title"], s["liked"]) for s in state["songs"]]


class _MusicTask(TaskTemplate):
    app = APP

    def _base(self, rng: random.Random, *, songs: tuple[str, ...] = (), **kw: Any) -> dict[str, Any]:
        """A sampled library that has the given song titles (random library songs are renamed to
        the missing ones). The player holds some other song, so the mini player at the bottom
        never shows a title the task is about."""
        state = sample_state(rng, **kw)
        for title in songs:
            if all(s["title"] != title for s in state["songs"]):
                rng.choice([s for s in state["songs"] if s["title"] not in songs])["title"] = title
        player = state["player"]
        current = next(s for s in state["songs"] if s["id"] == player["song_id"])
        if current["title"] in songs:
            current = rng.choice([s for s in state["songs"] if s["title"] not in songs])
            player["song_id"], player["position"] = current["id"], min(player["position"], current["duration"] - 40)
        return state

    def _drawer(self, o: OracleCtx, section: str) -> Solution:
        yield o.tap(desc="Open navigation drawer")
        yield o.tap(text=section)

    def _song_menu(self, o: OracleCtx, title: str, entry: str) -> Solution:
        """Scroll the list to a song, long-press it and pick `entry` from its menu."""
        yield from o.scroll_to(text=title, rid="title")
        yield o.long_press(text=title, rid="title")
        yield o.tap(text=entry)


class MusicPlaySong(_MusicTask):
    name = "MusicPlaySong"
    template = 'Play the song "{title}" in the Music app.'
    params = {"title": "song title"}
    kind = "navigation"
    complexity = 2
    max_steps = 26

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SONG_TITLES)}

    def initial_state(self, rng):
        return {APP: self._base(rng, songs=(self.values["title"],))}

    def is_successful(self, device, answer):
        s = _state(device)
        target = _song(self.states()[APP], self.values["title"])["id"]
        return float(s["player"]["song_id"] == target and s["player"]["playing"])

    def solve(self, o):
        yield from o.scroll_to(text=self.values["title"], rid="title")
        yield o.tap(text=self.values["title"], rid="title")
        yield o.done()


class MusicLikeSong(_MusicTask):
    name = "MusicLikeSong"
    template = 'Add "{title}" to my Liked songs in the Music app.'
    params = {"title": "song title"}
    kind = "toggle"
    complexity = 2
    max_steps = 28

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SONG_TITLES)}

    def initial_state(self, rng):
        state = self._base(rng, songs=(self.values["title"],))
        _song(state, self.values["title"])["liked"] = False
        return {APP: state}

    def is_successful(self, device, answer):
        want = [(i, t, liked or t == self.values["title"]) for i, t, liked in _library(self.states()[APP])]
        return float(_library(_state(device)) == want)

    def solve(self, o):
        yield from self._song_menu(o, self.values["title"], "Like")
        yield o.done()


class MusicAddToPlaylist(_MusicTask):
    name = "MusicAddToPlaylist"
    template = 'In the Music app, add the song "{title}" to my playlist "{playlist}".'
    params = {"title": "song title", "playlist": "playlist name"}
    kind = "edit"
    complexity = 3
    max_steps = 30

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SONG_TITLES), "playlist": rng.choice(PLAYLIST_NAMES)}

    def initial_state(self, rng):
        state = self._base(rng, songs=(self.values["title"],), n_playlists=rng.randint(2, 4),
                           avoid_playlists=(self.values["playlist"],))
        sid = _song(state, self.values["title"])["id"]
        others = [s["id"] for s in state["songs"] if s["id"] != sid]
        target = {"id": len(state["playlists"]) + 1, "name": self.values["playlist"],
                  "song_ids": rng.sample(others, rng.randint(2, 8))}
        state["playlists"].insert(rng.randrange(len(state["playlists"]) + 1), target)
        state["next_playlist_id"] = target["id"] + 1
        return {APP: state}

    def is_successful(self, device, answer):
        sid = _song(self.states()[APP], self.values["title"])["id"]
        want = [{**p, "song_ids": p["song_ids"] + [sid]} if p["name"] == self.values["playlist"] else p
                for p in self.states()[APP]["playlists"]]
        return float(_state(device)["playlists"] == want)

    def solve(self, o):
        yield from self._song_menu(o, self.values["title"], "Add to playlist")
        yield o.tap(text=self.values["playlist"])
        yield o.done()


class MusicCreatePlaylist(_MusicTask):
    name = "MusicCreatePlaylist"
    template = 'Create a new, empty playlist called "{name}" in the Music app.'
    params = {"name": "name of the new playlist"}
    kind = "entry"
    complexity = 3
    max_steps = 14

    @classmethod
    def sample_params(cls, rng):
        return {"name": rng.choice(NEW_NAMES)}

    def initial_state(self, rng):
        return {APP: self._base(rng, n_playlists=rng.randint(1, 4))}

    def is_successful(self, device, answer):
        now = _state(device)["playlists"]
        before = self.states()[APP]["playlists"]
        return float(now[:-1] == before and len(now) == len(before) + 1 and now[-1]["name"] == self.values["name"]
                     and not now[-1]["song_ids"])

    def solve(self, o):
        yield from self._drawer(o, "Playlists")
        yield o.tap(desc="More options")
        yield o.tap(text="New mix")
        yield o.type(self.values["name"], rid="playlist_name")
        yield o.tap(text="Create")
        yield o.done()


class MusicRemoveFromPlaylist(_MusicTask):
    name = "MusicRemoveFromPlaylist"
    template = 'Remove "{title}" from my playlist "{playlist}" in the Music app.'
    params = {"title": "song title", "playlist": "playlist name"}
    kind = "delete"
    complexity = 3
    max_steps = 14

    @classmethod
    def sample_params(cls, rng):
        return {"title": rng.choice(SONG_TITLES), "playlist": rng.choice(PLAYLIST_NAMES)}

    def initial_state(self, rng):
        state = self._base(rng, songs=(self.values["title"],), n_playlists=rng.randint(1, 3),
                           avoid_playlists=(self.values["playlist"],))
        sid = _song(state, self.values["title"])["id"]
        ids = rng.sample([s["id"] for s in state["songs"] if s["id"] != sid], rng.randint(3, 8))
        ids.insert(rng.randrange(len(ids) + 1), sid)
        target = {"id": len(state["playlists"]) + 1, "name": self.values["playlist"], "song_ids": ids}
        state["playlists"].insert(rng.randrange(len(state["playlists"]) + 1), target)
        state["next_playlist_id"] = target["id"] + 1
        return {APP: state}

    def is_successful(self, device, answer):
        sid = _song(self.states()[APP], self.values["title"])["id"]
        want = [{**p, "song_ids": [i for i in p["song_ids"] if i != sid]} if p["name"] == self.values["playlist"] else p
                for p in self.states()[APP]["playlists"]]
        now = _state(device)
        return float(now["playlists"] == want and len(now["songs"]) == len(self.states()[APP]["songs"]))

    def solve(self, o):
        yield from self._drawer(o, "Playlists")
        yield o.tap(text=self.values["playlist"])
        yield from self._song_menu(o, self.values["title"], "Remove from playlist")
        yield o.tap(text="Remove")
        yield o.done()


class MusicRenamePlaylist(_MusicTask):
    name = "MusicRenamePlaylist"
    template = 'Rename my Music playlist "{old}" to "{new}".'
    params = {"old": "current playlist name", "new": "new name"}
    kind = "edit"
    complexity = 3
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        return {"old": rng.choice(PLAYLIST_NAMES), "new": rng.choice(NEW_NAMES)}

    def initial_state(self, rng):
        state = self._base(rng, n_playlists=rng.randint(2, 4), avoid_playlists=(self.values["old"],))
        rng.choice(state["playlists"])["name"] = self.values["old"]
        return {APP: state}

    def is_successful(self, device, answer):
        want = [{**p, "name": self.values["new"]} if p["name"] == self.values["old"] else p
                for p in self.states()[APP]["playlists"]]
        return float(_state(device)["playlists"] == want)

    def solve(self, o):
        yield from self._drawer(o, "Playlists")
        yield o.tap(text=self.values["old"])
        yield o.tap(desc="More options")
        yield o.tap(text="Rename")
        yield o.type(self.values["new"], rid="playlist_name", clear=True)
        yield o.tap(text="Rename")
        yield o.done()


class MusicShuffleRepeat(_MusicTask):
    name = "MusicShuffleRepeat"
    template = "In the Music player, turn shuffle {shuffle} and set repeat to {repeat}."
    params = {"shuffle": "on or off", "repeat": "off, all or one"}
    kind = "toggle"
    complexity = 3
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        return {"shuffle": rng.choice(("on", "off")), "repeat": rng.choice(REPEAT_MODES)}

    def initial_state(self, rng):
        state = self._base(rng, playing=rng.random() < 0.5)
        state["player"]["shuffle"] = self.values["shuffle"] == "off"
        return {APP: state}

    def is_successful(self, device, answer):
        p = _state(device)["player"]
        return float(p["shuffle"] == (self.values["shuffle"] == "on") and p["repeat"] == self.values["repeat"]
                     and p["song_id"] == self.states()[APP]["player"]["song_id"])

    def solve(self, o):
        yield o.tap(desc="Now playing")
        if o.element(desc="Shuffle").checked != (self.values["shuffle"] == "on"):
            yield o.tap(desc="Shuffle")
        for _ in range(len(REPEAT_MODES)):
            if o.element(rid="play_mode").text.endswith(f"Repeat {self.values['repeat']}"):
                break
            yield o.tap(desc="Repeat")
        yield o.done()


class MusicPlaybackPosition(_MusicTask):
    name = "MusicPlaybackPosition"
    template = "The Music player is paused. How far into the song is it? Answer as minutes:seconds, like 1:05."
    params: dict[str, str] = {}
    kind = "retrieval"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        return {APP: self._base(rng, playing=False)}

    def expected(self) -> str:
        return fmt_time(self.states()[APP]["player"]["position"])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield o.tap(desc="Now playing")
        yield o.done(o.element(rid="elapsed").text)


class MusicCountPlaylistSongs(_MusicTask):
    name = "MusicCountPlaylistSongs"
    template = 'How many songs are in my Music playlist "{playlist}"? Answer with a number.'
    params = {"playlist": "playlist name"}
    kind = "retrieval"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"playlist": rng.choice(PLAYLIST_NAMES)}

    def initial_state(self, rng):
        state = self._base(rng, n_playlists=rng.randint(2, 5), avoid_playlists=(self.values["playlist"],))
        rng.choice(state["playlists"])["name"] = self.values["playlist"]
        return {APP: state}

    def expected(self) -> int:
        p = _playlist(self.states()[APP], self.values["playlist"])
        assert p is not None
        return len(p["song_ids"])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield from self._drawer(o, "Playlists")
        title = o.element(text=self.values["playlist"], rid="title")
        subtitle = next(e for e in o.obs.elements if e.parent == title.parent and e.resource_id.endswith(":id/subtitle"))
        yield o.done(subtitle.text.split()[0])


class MusicToggleSetting(_MusicTask):
    name = "MusicToggleSetting"
    template = "Turn {value} {setting} in the Music app's settings."
    params = {"setting": "a playback setting", "value": "on or off"}
    kind = "toggle"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"setting": rng.choice(list(SETTINGS)), "value": rng.choice(("on", "off"))}

    def initial_state(self, rng):
        state = self._base(rng)
        state["settings"] = {"crossfade": rng.random() < 0.5, "gapless": rng.random() < 0.5,
                             "normalize": rng.random() < 0.5, "quality": rng.choice(("Normal", "High"))}
        state["settings"][SETTINGS[self.values["setting"]]] = self.values["value"] == "off"
        return {APP: state}

    def is_successful(self, device, answer):
        want = {**self.states()[APP]["settings"], SETTINGS[self.values["setting"]]: self.values["value"] == "on"}
        return float(_state(device)["settings"] == want)

    def solve(self, o):
        yield from self._drawer(o, "Settings")
        yield o.tap(rid=SETTINGS[self.values["setting"]])
        yield o.done()


class MusicCreateMixWithSongs(_MusicTask):
    name = "MusicCreateMixWithSongs"
    template = 'In the Music app, make a new playlist called "{name}" with the songs "{first}" and "{second}" in it.'
    params = {"name": "new playlist name", "first": "a song title", "second": "another song title"}
    kind = "multi"
    complexity = 5
    max_steps = 36

    @classmethod
    def sample_params(cls, rng):
        first, second = rng.sample(SONG_TITLES, 2)
        return {"name": rng.choice(NEW_NAMES), "first": first, "second": second}

    def initial_state(self, rng):
        return {APP: self._base(rng, songs=(self.values["first"], self.values["second"]), n_playlists=rng.randint(1, 4))}

    def is_successful(self, device, answer):
        now = _state(device)["playlists"]
        before = self.states()[APP]["playlists"]
        if now[:-1] != before or len(now) != len(before) + 1 or now[-1]["name"] != self.values["name"]:
            return 0.0
        want = {_song(self.states()[APP], self.values[k])["id"] for k in ("first", "second")}
        return float(sorted(now[-1]["song_ids"]) == sorted(want))

    def solve(self, o):
        v = self.values
        yield from self._drawer(o, "Playlists")
        yield o.tap(desc="More options")
        yield o.tap(text="New mix")
        yield o.type(v["name"], rid="playlist_name")
        yield o.tap(text="Create")
        yield from self._drawer(o, "Songs")
        yield o.tap(desc="Search")
        for title in (v["first"], v["second"]):
            yield o.type(title, rid="search", clear=True)
            yield o.long_press(text=title, rid="title")
            yield o.tap(text="Add to playlist")
            yield o.tap(text=v["name"])
        yield o.done()


class MusicDownloadAlbum(_MusicTask):
    name = "MusicDownloadAlbum"
    template = 'Download the album "{album}" in the Music app so I can listen offline.'
    params = {"album": "album title"}
    kind = "infeasible"
    complexity = 2
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        return {"album": rng.choice(ALBUMS)[0]}

    def initial_state(self, rng):
        state = self._base(rng)
        if all(s["album"] != self.values["album"] for s in state["songs"]):
            artist = dict(ALBUMS)[self.values["album"]]
            old = rng.choice(sorted({s["album"] for s in state["songs"]}))
            for s in state["songs"]:
                if s["album"] == old:
                    s["album"], s["artist"] = self.values["album"], artist
        return {APP: state}

    def is_successful(self, device, answer):
        return 0.0  # the app has no downloads; only declaring it infeasible succeeds

    def solve(self, o):
        yield from self._drawer(o, "Albums")
        yield from o.scroll_to(text=self.values["album"], rid="title")
        yield o.tap(text=self.values["album"], rid="title")
        yield o.tap(desc="More options")
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    MusicPlaySong, MusicLikeSong, MusicAddToPlaylist, MusicCreatePlaylist, MusicRemoveFromPlaylist, MusicRenamePlaylist,
    MusicShuffleRepeat, MusicPlaybackPosition, MusicCountPlaylistSongs, MusicToggleSetting, MusicCreateMixWithSongs,
    MusicDownloadAlbum,
)
