"""Music (com.example.music), an unseen app: a music library whose sections (Songs, Albums,
Artists, Playlists, Liked songs, Settings) are reached only through the navigation drawer, a
long song list, long-press context menus on songs ("Add to playlist", "Like"), playlists created
as a "New mix" from the overflow menu, removals behind a confirmation, a search screen and a
player with icon-only controls (Play/Pause, Previous, Next, Shuffle, Repeat).

Playback follows the device's virtual clock: while a song plays its position advances one
second per second, and at its end the player moves on as repeat and shuffle say."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from coadapt.android_env.sim.app import Route, SimApp
from coadapt.android_env.sim.canvas import SURFACE_2, TEXT, TEXT_2, Canvas, hex_rgb
from coadapt.android_env.sim.node import Node
from coadapt.android_env.sim.widgets import (
    Column, Dialog, Divider, Drawer, DrawerItem, EditText, Header, IconButton, ImageView, LayoutCtx, ListItem, ListView,
    MenuItem, Row, Screen, Spinner, Switch, Text, Toolbar, View,
)

REPEAT_MODES = ("off", "all", "one")
CONTROL_DP = 68  # the player's control buttons: five in a row fill a phone's width
QUALITIES = ("Low", "Normal", "High", "Very high")
SECTIONS = ("Songs", "Albums", "Artists", "Playlists", "Liked songs", "Settings")
SECTION_ICONS = {"Songs": "music", "Albums": "image", "Artists": "person", "Playlists": "list", "Liked songs": "star",
                 "Settings": "settings"}

ALBUMS: tuple[tuple[str, str], ...] = (  # (album, artist)
    ("Paper Boats", "The Lanterns"), ("Night Ferry", "The Lanterns"), ("Sunday Light", "Mira Sol"),
    ("Concrete Garden", "Echo Park"), ("Signals", "Echo Park"), ("Afterglow", "Nova Lane"), ("Low Tide", "Blue Harbor"),
    ("Open Skies", "Kite Theory"), ("Wildwood", "Juniper & Ash"), ("Neon Rain", "Static Bloom"),
    ("Slow Motion", "Mira Sol"), ("Northern Lines", "Kite Theory"),
)
SONG_TITLES = (
    "Across the Water", "After Midnight", "Amber Sky", "Back Roads", "Blue Hour", "Borrowed Time", "Bright Lights",
    "Brick by Brick", "Candle Smoke", "Carousel", "Cold Coffee", "Copper Moon", "Daydreamer", "Driftwood", "Dust and Gold",
    "Electric Heart", "Empty Streets", "Evergreen", "Falling Slowly", "Fireflies", "First Snow", "Fool's Gold",
    "Ghost Town", "Glass House", "Golden Hour", "Gravity", "Half Light", "Harbour Lights", "Headlights", "Hold On",
    "Honey and Salt", "Hourglass", "Icarus", "Island Time", "July Rain", "Kaleidoscope", "Lantern Song", "Late Train",
    "Lemonade", "Lighthouse", "Little Victories", "Lost Signal", "Marigold", "Midnight Swim", "Mountain Air",
    "Neon Nights", "New Horizon", "Northern Star", "Ocean Eyes", "Open Road", "Orbit", "Paper Moons", "Parachute",
    "Polaroid", "Quiet Storm", "Radio Waves", "Red Balloon", "River Stones", "Rooftops", "Saltwater", "Satellite",
    "Seventeen", "Silver Lining", "Slow Dance", "Small Hours", "Snowglobe", "Solstice", "Starling", "Stay Awhile",
    "Summer Static", "Sunflower", "Tangerine", "Thunderbird", "Tidal", "Tightrope", "Undertow", "Velvet",
    "Waiting Room", "Weightless", "Wildfire", "Window Seat", "Winter Coat", "Yellow Bicycle", "Zero Gravity",
)
PLAYLIST_NAMES = ("Morning run", "Focus", "Road trip", "Chill evening", "Dinner party", "Workout", "Rainy day",
                  "Sunday cleaning", "Throwbacks", "Study session", "Beach day", "Late night drive")


@dataclass
class Song:
    id: int
    title: str
    artist: str
    album: str
    duration: int  # seconds
    liked: bool = False


@dataclass
class Playlist:
    id: int
    name: str
    song_ids: list[int] = field(default_factory=list)


@dataclass
class Player:
    song_id: int | None = None
    position: int = 0  # seconds into the song
    playing: bool = False
    shuffle: bool = False
    repeat: str = "off"  # one of REPEAT_MODES
    queue: list[int] = field(default_factory=list)  # the list the song was started from


@dataclass
class Settings:
    crossfade: bool = False
    gapless: bool = True
    normalize: bool = False
    quality: str = "Normal"


@dataclass
class MusicState:
    songs: list[Song] = field(default_factory=list)
    playlists: list[Playlist] = field(default_factory=list)
    player: Player = field(default_factory=Player)
    settings: Settings = field(default_factory=Settings)
    next_playlist_id: int = 1


def fmt_time(seconds: int) -> str:
    """Seconds as m:ss ("3:07")."""
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


# --------------------------------------------------------------------------- sample content


def sample_songs(rng: random.Random, n_albums: int | None = None) -> list[dict[str, Any]]:
    """A library of 8 to 10 albums with 4 to 7 songs each (about 50 songs, unique titles), as
    state dicts with ids in album order."""
    n_albums = n_albums if n_albums is not None else rng.randint(8, 10)
    albums = rng.sample(ALBUMS, n_albums)
    sizes = [rng.randint(4, 7) for _ in albums]
    titles = rng.sample(SONG_TITLES, sum(sizes))
    songs = []
    for (album, artist), k in zip(albums, sizes):
        for _ in range(k):
            songs.append({"id": len(songs) + 1, "title": titles[len(songs)], "artist": artist, "album": album,
                          "duration": rng.randint(150, 330), "liked": rng.random() < 0.15})
    return songs


def sample_playlists(rng: random.Random, songs: list[dict[str, Any]], n: int,
                     avoid: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """`n` playlists with distinct names (none in `avoid`) of 3 to 9 songs each."""
    names = rng.sample([p for p in PLAYLIST_NAMES if p not in avoid], n)
    return [{"id": i + 1, "name": name, "song_ids": [s["id"] for s in rng.sample(songs, rng.randint(3, 9))]}
            for i, name in enumerate(names)]


def sample_state(rng: random.Random, *, n_playlists: int = 3, playing: bool | None = None,
                 avoid_playlists: tuple[str, ...] = ()) -> dict[str, Any]:
    """A complete app state: a library, `n_playlists` playlists and a player holding a song
    (paused unless `playing`), with random shuffle/repeat."""
    songs = sample_songs(rng)
    playlists = sample_playlists(rng, songs, n_playlists, avoid_playlists)
    current = rng.choice(songs)
    queue = [s["id"] for s in sorted(songs, key=lambda s: s["title"].lower())]
    player = {"song_id": current["id"], "position": rng.randint(15, current["duration"] - 40),
              "playing": bool(playing), "shuffle": rng.random() < 0.3, "repeat": rng.choice(REPEAT_MODES), "queue": queue}
    return {"songs": songs, "playlists": playlists, "player": player,
            "settings": {"crossfade": False, "gapless": True, "normalize": False, "quality": "Normal"},
            "next_playlist_id": len(playlists) + 1}


# --------------------------------------------------------------------------- custom views


def _paint_skip(direction: int) -> Callable[..., None]:
    def paint(c: Canvas, x: int, y: int, r: float, col, w: int) -> None:
        tip, base = x + direction * r * 0.4, x - direction * r * 0.55
        c.polygon([(base, y - r * 0.6), (base, y + r * 0.6), (tip, y)], fill=col)
        bx = x + direction * r * 0.55
        c.line([(bx, y - r * 0.6), (bx, y + r * 0.6)], col, w + 1)

    return paint


def _paint_shuffle(c: Canvas, x: int, y: int, r: float, col, w: int) -> None:
    c.line([(x - r * 0.75, y + r * 0.5), (x + r * 0.6, y - r * 0.5)], col, w)
    c.line([(x - r * 0.75, y - r * 0.5), (x - r * 0.15, y - r * 0.07)], col, w)
    c.line([(x + r * 0.15, y + r * 0.15), (x + r * 0.6, y + r * 0.5)], col, w)
    for sy in (-1, 1):
        tip = (x + r * 0.8, y + sy * r * 0.5)
        c.polygon([tip, (x + r * 0.4, y + sy * r * 0.5 - r * 0.25), (x + r * 0.4, y + sy * r * 0.5 + r * 0.25)], fill=col)


def _paint_repeat(one: bool) -> Callable[..., None]:
    def paint(c: Canvas, x: int, y: int, r: float, col, w: int) -> None:
        c.rect((x - r * 0.7, y - r * 0.45, x + r * 0.7, y + r * 0.5), outline=col, radius=r * 0.25, width=w)
        c.polygon([(x + r * 0.05, y - r * 0.75), (x + r * 0.05, y - r * 0.15), (x + r * 0.4, y - r * 0.45)], fill=col)
        if one:
            box = (round(x - r), round(y - r * 0.4), round(x + r), round(y + r * 0.55))  # text needs whole pixels
            c.text_in(box, "1", max(8, round(r * 0.8)), col, "bold", "center")

    return paint


def _paint_icon(name: str) -> Callable[..., None]:
    def paint(c: Canvas, x: int, y: int, r: float, col, w: int) -> None:
        c.icon(name, x, y, round(r * 2), col)

    return paint


@dataclass
class GlyphButton(IconButton):
    """An IconButton whose icon is drawn here (the toolkit has no skip, shuffle or repeat icon).
    `filled` puts it on a round button in the app's colour; `checked` makes it a toggle
    (highlighted, and checkable in the accessibility tree, as Android's toggle buttons are)."""

    glyph: Callable[..., None] | None = None
    filled: bool = False
    checked: bool | None = None
    size: float = 48  # dp, square

    def wrap_width(self, ctx: LayoutCtx) -> int | None:
        return ctx.dp(self.size)

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        node = super().layout(ctx, x, y, w)
        s = ctx.dp(self.size)
        node.box = (x, y, x + s, y + s)
        th = ctx.theme
        col = hex_rgb(self.color) if self.color else TEXT_2
        if self.checked:
            col = th.primary
        glyph, filled = self.glyph, self.filled
        if self.checked is not None:
            node.checkable, node.checked = True, bool(self.checked)

        def paint(c: Canvas) -> None:
            fg = col
            if filled:
                c.circle(x + s // 2, y + s // 2, s // 2 - ctx.dp(4), fill=th.primary)
                fg = th.on_primary
            if glyph is not None:
                glyph(c, x + s // 2, y + s // 2, ctx.dp(16 if filled else 12), fg, max(2, round(ctx.dp(24) / 11)))

        node.paint = paint
        return node


@dataclass
class PositionBar(View):
    """The player's progress bar with elapsed and total time; a tap seeks there."""

    position: int
    duration: int
    on_seek: Callable[[int], None]

    def layout(self, ctx: LayoutCtx, x: int, y: int, w: int) -> Node:
        h = ctx.dp(64)
        pad = ctx.dp(24)
        track_l, track_r = x + pad, x + w - pad
        ty = y + ctx.dp(20)
        frac = min(1.0, self.position / max(1, self.duration))
        th = ctx.theme
        elapsed, total = fmt_time(self.position), fmt_time(self.duration)
        tb = y + ctx.dp(32), y + ctx.dp(56)

        def paint(c: Canvas) -> None:
            c.rect((track_l, ty - ctx.dp(2), track_r, ty + ctx.dp(2)), fill=SURFACE_2, radius=ctx.dp(2))
            kx = track_l + round(frac * (track_r - track_l))
            c.rect((track_l, ty - ctx.dp(2), kx, ty + ctx.dp(2)), fill=th.primary, radius=ctx.dp(2))
            c.circle(kx, ty, ctx.dp(8), fill=th.primary)

        def tap_at(px: int, py: int) -> None:
            f = min(1.0, max(0.0, (px - track_l) / max(1, track_r - track_l)))
            self.on_seek(round(f * self.duration))

        bar = Node("android.widget.SeekBar", (track_l - ctx.dp(8), ty - ctx.dp(16), track_r + ctx.dp(8), ty + ctx.dp(16)),
                   text=elapsed, desc="Playback position", rid="seek_bar", clickable=True, focusable=True, on_tap_at=tap_at)
        bar.on_swipe = lambda d: False
        left = Node("android.widget.TextView", (track_l, tb[0], track_l + ctx.dp(80), tb[1]), text=elapsed, rid="elapsed",
                    paint=lambda c: c.text_in((track_l, tb[0], track_l + ctx.dp(80), tb[1]), elapsed, ctx.dp(12), TEXT_2))
        right = Node("android.widget.TextView", (track_r - ctx.dp(80), tb[0], track_r, tb[1]), text=total, rid="duration",
                     paint=lambda c: c.text_in((track_r - ctx.dp(80), tb[0], track_r, tb[1]), total, ctx.dp(12), TEXT_2,
                                               align="right"))
        return Node("android.widget.LinearLayout", (x, y, x + w, y + h), paint=paint, children=[bar, left, right])


# --------------------------------------------------------------------------- the app


class MusicApp(SimApp):
    package = "com.example.music"
    label = "Music"
    icon = "music"
    color = "#7B1FA2"

    def reset_state(self) -> None:
        self.state = MusicState()
        self.section = "Songs"
        self.query = ""
        self.draft_name = ""
        self._tick_at: dt.datetime | None = None  # clock time the player's position was last advanced to

    def state_dict(self) -> dict[str, Any]:
        self._tick()
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        self.state = MusicState(
            songs=[Song(**s) for s in data.get("songs", [])],
            playlists=[Playlist(p["id"], p["name"], list(p["song_ids"])) for p in data.get("playlists", [])],
            player=Player(**{**asdict(Player()), **data.get("player", {})}),
            settings=Settings(**{**asdict(Settings()), **data.get("settings", {})}),
            next_playlist_id=data.get("next_playlist_id", max((p["id"] for p in data.get("playlists", [])), default=0) + 1),
        )
        self.section = "Songs"
        self.query = ""
        self._tick_at = self.now()
        self.home_screen()

    # ------------------------------------------------------------------ playback

    def _song(self, sid: int | None) -> Song | None:
        return next((s for s in self.state.songs if s.id == sid), None)

    def _tick(self) -> None:
        """Advance the playing song by the whole seconds passed on the clock since last time."""
        now = self.now()
        if self._tick_at is None or now < self._tick_at:  # first look, or the device clock was reset
            self._tick_at = now
        elapsed = int((now - self._tick_at).total_seconds())
        if elapsed <= 0:
            return
        self._tick_at += dt.timedelta(seconds=elapsed)
        pl = self.state.player
        song = self._song(pl.song_id)
        if not pl.playing or song is None:
            return
        pl.position += elapsed
        for _ in range(100):  # songs are minutes long, so a few loops at most
            song = self._song(pl.song_id)
            if song is None or pl.position < song.duration or not pl.playing:
                break
            extra = pl.position - song.duration
            if pl.repeat == "one":
                pl.position = extra
            elif not self._step(1, auto=True):
                pl.position, pl.playing = 0, False
            else:
                pl.position = extra

    def _step(self, delta: int, auto: bool = False) -> bool:
        """Move to the next (+1) or previous (-1) song of the queue; False at an end without repeat."""
        pl = self.state.player
        queue = [sid for sid in pl.queue if self._song(sid) is not None] or [s.id for s in self.state.songs]
        if not queue or pl.song_id is None:
            return False
        idx = queue.index(pl.song_id) if pl.song_id in queue else 0
        if pl.shuffle and delta > 0 and len(queue) > 1:
            pick = random.Random(f"{pl.song_id}:{len(queue)}:{pl.position}").choice([q for q in queue if q != pl.song_id])
            pl.song_id, pl.position = pick, 0
            return True
        nxt = idx + delta
        if not 0 <= nxt < len(queue):
            if pl.repeat != "all":
                if not auto:
                    pl.position = 0
                return False
            nxt %= len(queue)
        pl.song_id, pl.position = queue[nxt], 0
        return True

    def _play(self, song: Song, queue: list[Song]) -> None:
        self._tick()
        pl = self.state.player
        pl.song_id, pl.position, pl.playing = song.id, 0, True
        pl.queue = [s.id for s in queue]

    def _toggle_play(self) -> None:
        self._tick()
        pl = self.state.player
        if pl.song_id is not None:
            pl.playing = not pl.playing

    def _skip(self, delta: int) -> None:
        self._tick()
        self._step(delta)

    def _toggle_shuffle(self) -> None:
        self.state.player.shuffle = not self.state.player.shuffle
        self.toast("Shuffle on" if self.state.player.shuffle else "Shuffle off")

    def _cycle_repeat(self) -> None:
        pl = self.state.player
        pl.repeat = REPEAT_MODES[(REPEAT_MODES.index(pl.repeat) + 1) % len(REPEAT_MODES)]
        self.toast({"off": "Repeat off", "all": "Repeat all", "one": "Repeat one"}[pl.repeat])

    def _seek(self, seconds: int) -> None:
        self._tick()
        self.state.player.position = seconds

    def _shuffle_all(self, songs: list[Song]) -> None:
        if not songs:
            return
        self.state.player.shuffle = True
        start = random.Random(len(songs) * 7 + int(self.now().timestamp()) % 97).choice(songs)
        self._play(start, songs)

    # ------------------------------------------------------------------ library actions

    def _playlist(self, pid: int) -> Playlist | None:
        return next((p for p in self.state.playlists if p.id == pid), None)

    def _set_liked(self, song: Song, liked: bool) -> None:
        song.liked = liked
        self.toast("Added to Liked songs" if liked else "Removed from Liked songs")

    def _add_to_playlist(self, song: Song, playlist: Playlist) -> None:
        if song.id in playlist.song_ids:
            self.toast(f"Already in {playlist.name}")
            return
        playlist.song_ids.append(song.id)
        self.toast(f"Added to {playlist.name}")

    def _choose_playlist(self, song: Song) -> None:
        def build() -> Dialog:
            rows = [ListItem(p.name, f"{len(p.song_ids)} songs", icon="list", id="playlist_choice",
                             on_click=lambda p=p: self._close_then(lambda: self._add_to_playlist(song, p)))
                    for p in self.state.playlists]
            if not rows:
                rows = [Text("No playlists yet. Make one with New mix on the Playlists page.", "body2", max_lines=3)]
            return Dialog("Add to playlist", body=rows, buttons=[("Cancel", lambda: None)])

        self.dialog(build)

    def _close_then(self, fn: Callable[[], None]) -> None:
        self.route.dialog = None
        fn()

    def _context_menu(self, song: Song, playlist: Playlist | None = None) -> None:
        def build() -> Dialog:
            def entry(label: str, icon: str, fn: Callable[[], None]) -> ListItem:
                return ListItem(label, icon=icon, on_click=lambda: self._close_then(fn), id="context_item")

            rows = [
                entry("Play next", "play", lambda: self._play_next(song)),
                entry("Add to playlist", "list", lambda: self._choose_playlist(song)),
                entry("Unlike" if song.liked else "Like", "star_border" if song.liked else "star",
                      lambda: self._set_liked(song, not song.liked)),
                entry("Go to album", "image", lambda: self._open_album(song.album)),
                entry("Go to artist", "person", lambda: self._open_artist(song.artist)),
            ]
            if playlist is not None:
                rows.append(entry("Remove from playlist", "delete", lambda: self._confirm_remove(song, playlist)))
            return Dialog(song.title, f"{song.artist} · {song.album}", body=rows)

        self.dialog(build)

    def _play_next(self, song: Song) -> None:
        pl = self.state.player
        if pl.song_id is None:
            self._play(song, [song])
            return
        queue = [q for q in pl.queue if q != song.id]
        idx = queue.index(pl.song_id) if pl.song_id in queue else -1
        queue.insert(idx + 1, song.id)
        pl.queue = queue
        self.toast("Playing next")

    def _confirm_remove(self, song: Song, playlist: Playlist) -> None:
        def remove() -> None:
            if song.id in playlist.song_ids:
                playlist.song_ids.remove(song.id)
                self.toast(f"Removed from {playlist.name}")

        self.dialog(lambda: Dialog("Remove from playlist?", f"\u201c{song.title}\u201d will be removed from {playlist.name}.",
                                   buttons=[("Remove", remove), ("Cancel", lambda: None)]))

    def _name_dialog(self, title: str, action: str, initial: str, on_done: Callable[[str], bool]) -> None:
        """A dialog with one name field; `on_done(name)` returns False to keep it open."""
        self.draft_name = initial

        def set_name(v: str) -> None:
            self.draft_name = v

        def done() -> None:
            if not on_done(self.draft_name.strip()):
                self.dialog(lambda: build())  # a new builder, so the button's own close does not hide it

        def submit() -> None:  # the keyboard's enter key acts like the dialog's button
            self.route.dialog = None
            done()

        def build() -> Dialog:
            return Dialog(title, body=[EditText("playlist_name", self.draft_name, set_name, label="Name", hint="Playlist name",
                                                on_submit=submit)],
                          buttons=[(action, done), ("Cancel", lambda: None)])

        self.dialog(build)
        self.focus("playlist_name")

    def _name_taken(self, name: str, except_id: int | None = None) -> bool:
        return any(p.name.lower() == name.lower() and p.id != except_id for p in self.state.playlists)

    def _new_mix(self) -> None:
        def create(name: str) -> bool:
            if not name:
                self.toast("Give your mix a name")
                return False
            if self._name_taken(name):
                self.toast(f"You already have a playlist called {name}")
                return False
            self.state.playlists.append(Playlist(self.state.next_playlist_id, name))
            self.state.next_playlist_id += 1
            self.toast(f"Created {name}")
            return True

        self._name_dialog("New mix", "Create", "", create)

    def _rename(self, playlist: Playlist) -> None:
        def rename(name: str) -> bool:
            if not name:
                self.toast("Give your playlist a name")
                return False
            if self._name_taken(name, playlist.id):
                self.toast(f"You already have a playlist called {name}")
                return False
            playlist.name = name
            return True

        self._name_dialog("Rename playlist", "Rename", playlist.name, rename)

    def _confirm_delete(self, playlist: Playlist) -> None:
        def delete() -> None:
            self.state.playlists = [p for p in self.state.playlists if p.id != playlist.id]
            self.pop()
            self.toast(f"Deleted {playlist.name}")

        self.dialog(lambda: Dialog("Delete playlist?", f"{playlist.name} will be deleted. The songs stay in your library.",
                                   buttons=[("Delete", delete), ("Cancel", lambda: None)]))

    # ------------------------------------------------------------------ navigation

    def _go_section(self, section: str) -> None:
        self.section = section
        self.stack = [Route("main")]

    def _open_drawer(self) -> None:
        self.route.drawer_open = True

    def _open_album(self, album: str) -> None:
        self.push("album", album=album)

    def _open_artist(self, artist: str) -> None:
        self.push("artist", artist=artist)

    def _open_player(self) -> None:
        if self.state.player.song_id is not None and self.route.name != "player":
            self.push("player")

    def _open_search(self) -> None:
        self.query = ""
        self.push("search")
        self.focus("search")

    def on_back(self) -> bool:
        if len(self.stack) == 1 and not self.route.has_overlay() and self.section != "Songs":
            self._go_section("Songs")
            return True
        return super().on_back()

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        self._tick()
        name, params = self.route.name, self.route.params
        if name == "player" and self._song(self.state.player.song_id) is not None:
            return self._player_screen()
        if name == "album":
            return self._album_screen(params["album"])
        if name == "artist":
            return self._artist_screen(params["artist"])
        if name == "playlist" and self._playlist(params["pid"]) is not None:
            return self._playlist_screen(params["pid"])
        if name == "search":
            return self._search_screen()
        return {
            "Albums": self._albums_screen, "Artists": self._artists_screen, "Playlists": self._playlists_screen,
            "Liked songs": self._liked_screen, "Settings": self._settings_screen,
        }.get(self.section, self._songs_screen)()

    def _drawer(self) -> Drawer:
        return Drawer("Music", [DrawerItem(s, (lambda s=s: self._go_section(s)), icon=SECTION_ICONS[s],
                                           selected=self.section == s) for s in SECTIONS])

    def _root(self, title: str, body: list[View], actions: Sequence[IconButton] = (), menu: Sequence[MenuItem] = ()) -> Screen:
        return Screen(toolbar=Toolbar(title, nav="menu", on_nav=self._open_drawer, actions=actions, menu=menu),
                      body=body, drawer=self._drawer(), bottom_bar=self._mini_player())

    def _mini_player(self) -> View | None:
        pl = self.state.player
        song = self._song(pl.song_id)
        if song is None:
            return None
        button = GlyphButton("pause" if pl.playing else "play", "Pause" if pl.playing else "Play", self._toggle_play,
                             id="mini_play", glyph=_paint_icon("pause" if pl.playing else "play"))
        return Column([Divider(), ListItem(song.title, song.artist, on_click=self._open_player, icon="music", trailing=button,
                                           id="mini_player", selected=True, desc="Now playing")])

    def _song_rows(self, songs: list[Song], playlist: Playlist | None = None, show_album: bool = True) -> list[ListItem]:
        """Rows that play the song (with `songs` as the queue) on tap and open its menu on long-press."""
        current = self.state.player.song_id
        rows = []
        for s in songs:
            sub = f"{s.artist} · {s.album}" if show_album else s.artist
            rows.append(ListItem(s.title, sub, meta=fmt_time(s.duration), icon="play" if s.id == current else "music",
                                 on_click=lambda s=s: self._play(s, songs),
                                 on_long_click=lambda s=s: self._context_menu(s, playlist), id="song"))
        return rows

    def _sorted_songs(self) -> list[Song]:
        return sorted(self.state.songs, key=lambda s: s.title.lower())

    def _songs_screen(self) -> Screen:
        songs = self._sorted_songs()
        return self._root(
            "Songs", [Text(f"{len(songs)} songs", "caption", id="count", vpad=4),
                      ListView("songs", self._song_rows(songs), empty_text="Your library is empty.")],
            actions=[IconButton("search", "Search", self._open_search, id="search_button")],
            menu=[MenuItem("Shuffle all", lambda: self._shuffle_all(songs))])

    def _albums(self) -> list[tuple[str, str, list[Song]]]:
        out: dict[tuple[str, str], list[Song]] = {}
        for s in self.state.songs:
            out.setdefault((s.album, s.artist), []).append(s)
        return sorted(((a, r, ss) for (a, r), ss in out.items()), key=lambda t: t[0].lower())

    def _albums_screen(self) -> Screen:
        rows = [ListItem(album, f"{artist} · {len(songs)} songs", icon="image", id="album",
                         on_click=lambda album=album: self._open_album(album)) for album, artist, songs in self._albums()]
        return self._root("Albums", [ListView("albums", rows, empty_text="No albums.")],
                          actions=[IconButton("search", "Search", self._open_search, id="search_button")])

    def _artists_screen(self) -> Screen:
        by_artist: dict[str, list[Song]] = {}
        for s in self.state.songs:
            by_artist.setdefault(s.artist, []).append(s)
        rows = []
        for artist in sorted(by_artist, key=str.lower):
            songs = by_artist[artist]
            n_albums = len({s.album for s in songs})
            rows.append(ListItem(artist, f"{n_albums} album{'s' if n_albums != 1 else ''} · {len(songs)} songs", avatar=artist,
                                 id="artist", on_click=lambda artist=artist: self._open_artist(artist)))
        return self._root("Artists", [ListView("artists", rows, empty_text="No artists.")],
                          actions=[IconButton("search", "Search", self._open_search, id="search_button")])

    def _playlists_screen(self) -> Screen:
        rows = [ListItem(p.name, f"{len(p.song_ids)} song{'s' if len(p.song_ids) != 1 else ''}", icon="list", id="playlist",
                         on_click=lambda p=p: self.push("playlist", pid=p.id)) for p in self.state.playlists]
        return self._root("Playlists", [ListView("playlists", rows, empty_text="No playlists yet.")],
                          menu=[MenuItem("New mix", self._new_mix)])

    def _liked_screen(self) -> Screen:
        songs = [s for s in self._sorted_songs() if s.liked]
        return self._root("Liked songs", [ListView("liked", self._song_rows(songs), empty_text="Songs you like appear here.")],
                          menu=[MenuItem("Shuffle all", lambda: self._shuffle_all(songs))])

    def _settings_screen(self) -> Screen:
        st = self.state.settings

        def setter(key: str) -> Callable[[Any], None]:
            def set_value(v: Any) -> None:
                setattr(st, key, v)

            return set_value

        return self._root("Settings", [
            Header("Playback"),
            Switch("Crossfade", st.crossfade, setter("crossfade"), id="crossfade",
                   summary="Blend the end of a song into the next"),
            Switch("Gapless playback", st.gapless, setter("gapless"), id="gapless", summary="No silence between album tracks"),
            Switch("Normalize volume", st.normalize, setter("normalize"), id="normalize",
                   summary="Play every song at the same loudness"),
            Header("Streaming"),
            Spinner("quality", QUALITIES, st.quality, setter("quality"), label="Streaming quality"),
        ])

    def _detail(self, title: str, subtitle: str, body: list[View], menu: Sequence[MenuItem] = ()) -> Screen:
        return Screen(toolbar=Toolbar(title, nav="back", on_nav=self.pop, subtitle=subtitle, menu=menu),
                      body=body, bottom_bar=self._mini_player())

    def _album_screen(self, album: str) -> Screen:
        songs = [s for s in self.state.songs if s.album == album]
        artist = songs[0].artist if songs else ""
        return self._detail(album, artist, [ListView("album_songs", self._song_rows(songs, show_album=False),
                                                     empty_text="No songs.")],
                            menu=[MenuItem("Shuffle album", lambda: self._shuffle_all(songs))])

    def _artist_screen(self, artist: str) -> Screen:
        songs = sorted((s for s in self.state.songs if s.artist == artist), key=lambda s: s.title.lower())
        return self._detail(artist, f"{len(songs)} songs",
                            [ListView("artist_songs", self._song_rows(songs), empty_text="No songs.")])

    def _playlist_screen(self, pid: int) -> Screen:
        p = self._playlist(pid)
        assert p is not None
        songs = [s for s in (self._song(sid) for sid in p.song_ids) if s is not None]
        total = sum(s.duration for s in songs)
        return self._detail(p.name, f"{len(songs)} songs · {total // 60} min", [
            ListView("playlist_songs", self._song_rows(songs, playlist=p),
                     empty_text="This playlist is empty. Long-press a song to add it."),
        ], menu=[MenuItem("Play all", lambda: songs and self._play(songs[0], songs)),
                 MenuItem("Rename", lambda: self._rename(p)), MenuItem("Delete playlist", lambda: self._confirm_delete(p))])

    def _search_screen(self) -> Screen:
        q = self.query.strip().lower()
        songs = [s for s in self._sorted_songs()
                 if q and (q in s.title.lower() or q in s.artist.lower() or q in s.album.lower())]

        def set_query(v: str) -> None:
            self.query = v
            self.route.scroll.pop("results", None)

        return Screen(toolbar=Toolbar("Search", nav="back", on_nav=self.pop), body=[
            EditText("search", self.query, set_query, hint="Songs, artists or albums", kind="search", icon="search"),
            ListView("results", self._song_rows(songs), empty_text="Type to search your library." if not q else "No matches."),
        ])

    def _player_screen(self) -> Screen:
        pl = self.state.player
        song = self._song(pl.song_id)
        assert song is not None
        controls = Row([
            GlyphButton("shuffle", "Shuffle", self._toggle_shuffle, id="shuffle", glyph=_paint_shuffle, checked=pl.shuffle,
                        size=CONTROL_DP),
            GlyphButton("skip_previous", "Previous", lambda: self._skip(-1), id="previous", glyph=_paint_skip(-1),
                        color=_hex(TEXT), size=CONTROL_DP),
            GlyphButton("pause" if pl.playing else "play", "Pause" if pl.playing else "Play", self._toggle_play, id="play_pause",
                        glyph=_paint_icon("pause" if pl.playing else "play"), filled=True, size=CONTROL_DP),
            GlyphButton("skip_next", "Next", lambda: self._skip(1), id="next", glyph=_paint_skip(1), color=_hex(TEXT),
                        size=CONTROL_DP),
            GlyphButton("repeat", "Repeat", self._cycle_repeat, id="repeat", glyph=_paint_repeat(pl.repeat == "one"),
                        checked=pl.repeat != "off", size=CONTROL_DP),
        ], align="center")
        mode = f"Shuffle {'on' if pl.shuffle else 'off'} · Repeat {pl.repeat}"
        like = IconButton("star" if song.liked else "star_border", "Unlike" if song.liked else "Like",
                          lambda: self._set_liked(song, not song.liked), id="like")
        return Screen(
            toolbar=Toolbar("Now playing", nav="back", on_nav=self.pop, actions=[like],
                            menu=[MenuItem("Add to playlist", lambda: self._choose_playlist(song)),
                                  MenuItem("Go to album", lambda: self._open_album(song.album)),
                                  MenuItem("Go to artist", lambda: self._open_artist(song.artist))]),
            body=[
                ImageView(f"Album art for {song.album}", icon="music", height=240, id="album_art"),
                Text(song.title, "headline", align="center", id="song_title", max_lines=2),
                Text(song.artist, "body", align="center", id="song_artist", vpad=0),
                Text(song.album, "body2", align="center", id="song_album"),
                PositionBar(pl.position, song.duration, self._seek),
                controls,
                Text(mode, "caption", align="center", id="play_mode"),
            ],
        )


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#%02x%02x%02x" % rgb


APP = MusicApp
GROUP = "unseen"
