"""Files (com.example.files), a seen app: Folders and Storage tabs, a "New folder" button, a
folder's files (name, size, date), and a file page with Rename, Move and Delete buttons; moving
picks the destination from a short list of folders."""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from coadapt.android_env.sim.app import SimApp
from coadapt.android_env.sim.widgets import (
    Button, ButtonRow, Divider, EditText, Fab, Header, ImageView, KeyValue, LayoutCtx, ListItem, ListView, Screen,
    Tabs, Text, Toolbar,
)

CAPACITY = 64_000_000_000
"""Bytes of internal storage (decimal gigabytes, as Android counts them)."""
SYSTEM_BYTES = 14_300_000_000
"""Bytes taken by the system and apps, outside any folder."""
BASE_DAY = dt.date(2026, 10, 15)
"""The day the simulated phone's clock starts on; sample files are older."""
DEFAULT_FOLDERS = ("Download", "Documents", "Pictures", "Music", "Movies")

SAMPLE_FILES: dict[str, tuple[str, ...]] = {
    "Download": ("boarding_pass.pdf", "invoice_0923.pdf", "setup_guide.pdf", "photos_backup.zip", "bank_statement.pdf",
                 "recipe_book.pdf", "podcast_app.apk", "concert_tickets.pdf"),
    "Documents": ("Resume.docx", "Budget 2026.xlsx", "Lease agreement.pdf", "Meeting notes.txt", "Thesis draft.docx",
                  "Tax return 2025.pdf", "Packing list.txt"),
    "Pictures": ("IMG_20261003_1412.jpg", "Screenshot_20261012.png", "beach_sunset.jpg", "birthday_cake.jpg",
                 "passport_scan.jpg", "family_dinner.jpg", "mountain_view.jpg"),
    "Music": ("Morning Run.mp3", "Ocean Waves.mp3", "Jazz Evening.m4a", "Podcast Ep 12.mp3", "Lullaby.mp3",
              "Road Trip Mix.mp3"),
    "Movies": ("Holiday 2025.mp4", "Graduation.mp4", "Cat video.mp4", "Drone flight.mp4"),
}
# Extension -> (kind shown on the file page, list icon, size range in bytes).
TYPES: dict[str, tuple[str, str, tuple[int, int]]] = {
    "pdf": ("PDF document", "file", (80_000, 4_000_000)),
    "docx": ("Word document", "file", (20_000, 600_000)),
    "xlsx": ("Spreadsheet", "file", (15_000, 400_000)),
    "txt": ("Text document", "note", (1_000, 20_000)),
    "jpg": ("JPEG image", "image", (1_500_000, 6_000_000)),
    "png": ("PNG image", "image", (200_000, 2_000_000)),
    "mp3": ("Audio", "music", (3_000_000, 12_000_000)),
    "m4a": ("Audio", "music", (3_000_000, 12_000_000)),
    "mp4": ("Video", "play", (50_000_000, 900_000_000)),
    "zip": ("ZIP archive", "download", (20_000_000, 400_000_000)),
    "apk": ("Android app package", "download", (10_000_000, 80_000_000)),
}


@dataclass
class File:
    name: str
    size: int  # bytes
    modified: str  # ISO date


@dataclass
class Folder:
    name: str
    files: list[File] = field(default_factory=list)


@dataclass
class FilesState:
    folders: list[Folder] = field(default_factory=list)
    capacity: int = CAPACITY
    system: int = SYSTEM_BYTES


def human_size(n: int) -> str:
    """A size the way Android's Files shows it: decimal units, "845 kB", "2.4 MB", "1.3 GB"."""
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{round(n / 1000)} kB"
    if n < 1_000_000_000:
        return f"{n / 1_000_000:.1f} MB"
    return f"{n / 1_000_000_000:.1f} GB"


def file_kind(name: str) -> tuple[str, str]:
    """(kind, icon) of a file from its extension."""
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    kind, icon, _ = TYPES.get(ext, ("File", "file", (0, 0)))
    return kind, icon


def sample_file(rng: random.Random, name: str) -> dict[str, Any]:
    _, _, (lo, hi) = TYPES[name.rsplit(".", 1)[-1].lower()]
    day = BASE_DAY - dt.timedelta(days=rng.randint(0, 120))
    return {"name": name, "size": rng.randint(lo, hi), "modified": day.isoformat()}


def sample_files(rng: random.Random, *, per_folder: tuple[int, int] = (2, 5), extra: tuple[str, ...] = (),
                 must: dict[str, tuple[str, ...]] | None = None, avoid: tuple[str, ...] = ()) -> dict[str, Any]:
    """A plausible Files state: the default folders (plus empty `extra` folders), each with a few
    files from its sample pool, always including `must[folder]` and never a name in `avoid`."""
    must = must or {}
    folders = []
    for name in DEFAULT_FOLDERS:
        pool = [f for f in SAMPLE_FILES[name] if f not in must.get(name, ()) and f not in avoid]
        n = max(0, rng.randint(*per_folder) - len(must.get(name, ())))
        names = list(must.get(name, ())) + rng.sample(pool, min(n, len(pool)))
        rng.shuffle(names)
        folders.append({"name": name, "files": [sample_file(rng, f) for f in names]})
    folders.extend({"name": name, "files": []} for name in extra)
    return {"folders": folders, "capacity": CAPACITY, "system": SYSTEM_BYTES}


class FilesApp(SimApp):
    package = "com.example.files"
    label = "Files"
    icon = "folder"
    color = "#795548"

    def reset_state(self) -> None:
        self.state = FilesState(folders=[Folder(n) for n in DEFAULT_FOLDERS])
        self.tab = 0
        self.name_draft = ""

    def state_dict(self) -> dict[str, Any]:
        return asdict(self.state)

    def load_state(self, data: dict[str, Any]) -> None:
        self.state = FilesState(
            folders=[Folder(f["name"], [File(**x) for x in f.get("files", [])]) for f in data.get("folders", [])],
            capacity=data.get("capacity", CAPACITY), system=data.get("system", SYSTEM_BYTES))
        self.tab = 0
        self.name_draft = ""
        self.home_screen()

    # ------------------------------------------------------------------ actions

    def _folder(self, name: str) -> Folder | None:
        return next((f for f in self.state.folders if f.name == name), None)

    def _file(self, folder: str, name: str) -> File | None:
        f = self._folder(folder)
        return next((x for x in f.files if x.name == name), None) if f else None

    def _used(self, folder: Folder) -> int:
        return sum(x.size for x in folder.files)

    def _new_folder(self) -> None:
        self.name_draft = ""
        self.push("new_folder")
        self.focus("folder_name")

    def _create_folder(self) -> None:
        name = self.name_draft.strip()
        if not name:
            self.toast("Enter a folder name")
            return
        if any(f.name.lower() == name.lower() for f in self.state.folders):
            self.toast(f"A folder named {name} already exists")
            return
        self.state.folders.append(Folder(name))
        self.pop()
        self.toast(f"Folder {name} created")

    def _rename_start(self, folder: str, name: str) -> None:
        self.name_draft = name
        self.push("rename", folder=folder, file=name)
        self.focus("file_name")

    def _rename(self, folder: str, old: str) -> None:
        new = self.name_draft.strip()
        f, x = self._folder(folder), self._file(folder, old)
        if f is None or x is None:
            self.pop()
            return
        if not new or "/" in new:
            self.toast("Enter a valid file name")
            return
        if new != old and any(y.name == new for y in f.files):
            self.toast(f"{folder} already has a file named {new}")
            return
        x.name = new
        self.pop()  # back to the file page, which now shows the new name
        self.route.params["file"] = new
        self.toast("File renamed")

    def _move(self, src: str, name: str, dst: str) -> None:
        f, d, x = self._folder(src), self._folder(dst), self._file(src, name)
        if f is None or d is None or x is None:
            return
        if any(y.name == name for y in d.files):
            self.toast(f"{dst} already has a file named {name}")
            return
        f.files.remove(x)
        d.files.append(x)
        self.pop()  # the folder picker
        self.pop()  # the file page: it now lives elsewhere

        def undo() -> None:
            if x in d.files:
                d.files.remove(x)
                f.files.append(x)

        self.snackbar(f"Moved to {dst}", "Undo", undo)

    def _delete(self, folder: str, name: str) -> None:
        f, x = self._folder(folder), self._file(folder, name)
        self.pop()
        if f is None or x is None:
            return
        i = f.files.index(x)
        f.files.remove(x)

        def undo() -> None:
            f.files.insert(min(i, len(f.files)), x)

        self.snackbar("File deleted", "Undo", undo)

    # ------------------------------------------------------------------ screens

    def build(self, ctx: LayoutCtx) -> Screen:
        r = self.route
        if r.name == "folder" and self._folder(r.params["folder"]) is not None:
            return self._folder_screen(r.params["folder"])
        if r.name in ("file", "rename", "move") and self._file(r.params["folder"], r.params["file"]) is not None:
            return {"file": self._file_screen, "rename": self._rename_screen, "move": self._move_screen}[r.name](
                r.params["folder"], r.params["file"])
        if r.name == "new_folder":
            return self._new_folder_screen()
        if r.name != "main":
            self.pop()
            return self.build(ctx)
        return self._main()

    def _main(self) -> Screen:
        def select(i: int) -> None:
            self.tab = i

        tabs = Tabs(["Folders", "Storage"], self.tab, select)
        if self.tab == 1:
            return Screen(toolbar=Toolbar("Files"), tabs=tabs, body=self._storage())
        items = []
        for f in self.state.folders:
            n = len(f.files)
            sub = "Empty" if n == 0 else f"{n} file{'s' if n != 1 else ''} · {human_size(self._used(f))}"
            items.append(ListItem(f.name, sub, on_click=lambda f=f: self.push("folder", folder=f.name), icon="folder", id="folder"))
        return Screen(
            toolbar=Toolbar("Files"), tabs=tabs,
            body=[ListView("folders", items, empty_text="No folders")],
            fab=Fab("add", "New folder", self._new_folder, label="New folder"),
        )

    def _storage(self) -> list:
        s = self.state
        used = s.system + sum(self._used(f) for f in s.folders)
        rows = [ListItem(f.name, meta=human_size(self._used(f)), icon="folder", id="storage_folder") for f in s.folders]
        rows.append(ListItem("System and apps", meta=human_size(s.system), icon="settings", id="storage_system"))
        return [
            Text("Internal storage", "title", id="storage_title", vpad=10),
            Text(f"{human_size(used)} used of {s.capacity / 1e9:g} GB", "body", id="storage_used", vpad=2),
            Text(f"{human_size(max(0, s.capacity - used))} free", "body2", id="storage_free", vpad=4),
            Divider(),
            Header("By folder"),
            *rows,
        ]

    def _folder_screen(self, name: str) -> Screen:
        f = self._folder(name)
        assert f is not None
        items = []
        for x in f.files:
            _, icon = file_kind(x.name)
            when = dt.date.fromisoformat(x.modified).strftime("%b %-d, %Y")
            items.append(ListItem(x.name, f"{human_size(x.size)} · {when}", icon=icon, id="file",
                                  on_click=lambda x=x: self.push("file", folder=name, file=x.name)))
        return Screen(
            toolbar=Toolbar(name, nav="back", on_nav=self.pop),
            body=[ListView("files", items, empty_text="This folder is empty")],
        )

    def _file_screen(self, folder: str, name: str) -> Screen:
        x = self._file(folder, name)
        assert x is not None
        kind, icon = file_kind(x.name)
        return Screen(
            toolbar=Toolbar("File info", nav="back", on_nav=self.pop),
            body=[
                ImageView(f"Preview of {x.name}", icon=icon, height=128, id="preview"),
                KeyValue("Name", x.name, id="name"),
                KeyValue("Size", human_size(x.size), id="size"),
                KeyValue("Modified", dt.date.fromisoformat(x.modified).strftime("%B %-d, %Y"), id="modified"),
                KeyValue("Type", kind, id="type"),
                KeyValue("Location", f"Internal storage/{folder}", id="location"),
                ButtonRow([
                    Button("Rename", lambda: self._rename_start(folder, name), kind="tonal", id="rename"),
                    Button("Move", lambda: self.push("move", folder=folder, file=name), kind="tonal", id="move"),
                    Button("Delete", lambda: self._delete(folder, name), kind="outlined", id="delete"),
                ]),
            ],
        )

    def _rename_screen(self, folder: str, name: str) -> Screen:
        def set_name(v: str) -> None:
            self.name_draft = v

        return Screen(
            toolbar=Toolbar("Rename file", nav="back", on_nav=self.pop),
            body=[
                EditText("file_name", self.name_draft, set_name, label="File name", hint="File name",
                         on_submit=lambda: self._rename(folder, name)),
                ButtonRow([Button("Cancel", self.pop, kind="text", id="cancel"),
                           Button("Rename", lambda: self._rename(folder, name), id="confirm_rename")]),
            ],
        )

    def _move_screen(self, folder: str, name: str) -> Screen:
        items = [ListItem(f.name, "Empty" if not f.files else f"{len(f.files)} file{'s' if len(f.files) != 1 else ''}",
                          on_click=lambda f=f: self._move(folder, name, f.name), icon="folder", id="destination")
                 for f in self.state.folders if f.name != folder]
        return Screen(
            toolbar=Toolbar("Move to", nav="back", on_nav=self.pop),
            body=[Text(f"Choose a folder for {name}", "body2", max_lines=2, id="move_hint"),
                  ListView("destinations", items, empty_text="No other folders")],
        )

    def _new_folder_screen(self) -> Screen:
        def set_name(v: str) -> None:
            self.name_draft = v

        return Screen(
            toolbar=Toolbar("New folder", nav="back", on_nav=self.pop),
            body=[
                EditText("folder_name", self.name_draft, set_name, label="Folder name", hint="Folder name",
                         on_submit=self._create_folder),
                ButtonRow([Button("Cancel", self.pop, kind="text", id="cancel"),
                           Button("Create", self._create_folder, id="create")]),
            ],
        )


APP = FilesApp
GROUP = "seen"
