"""Tasks on Files (com.example.files, seen)."""

from __future__ import annotations

import random
from typing import Any

from coadapt.apps.files import DEFAULT_FOLDERS, SAMPLE_FILES, human_size, sample_files

from .base import OracleCtx, Solution, TaskTemplate, answer_matches, normalize_answer

APP = "com.example.files"
NEW_FOLDERS = ("Receipts", "Work", "Travel", "Invoices", "Wallpapers", "Podcasts", "School", "Backups", "Recipes", "Taxes")
NEW_STEMS = ("Keep", "Old copy", "Shared", "Final version", "Archive 2026", "For printing", "Backup", "Favourite")


def _state(device) -> dict[str, Any]:
    return device.read_app_state(APP)


def _folders(state: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {f["name"]: f["files"] for f in state["folders"]}


def _same_except(now: dict[str, Any], before: dict[str, Any], skip: set[str]) -> bool:
    """Every folder of `before` not in `skip` is still there with exactly the same files."""
    cur = _folders(now)
    return all(f["name"] in cur and cur[f["name"]] == f["files"] for f in before["folders"] if f["name"] not in skip)


def _pick_file(rng: random.Random, folder: str | None = None) -> tuple[str, str]:
    folder = folder or rng.choice(DEFAULT_FOLDERS)
    return folder, rng.choice(SAMPLE_FILES[folder])


def _size_matches(answer: str | None, expected: str) -> bool:
    """"2.4 MB", "2.4MB" and "2.4 mb" all match "2.4 MB"."""
    return normalize_answer(answer).replace(" ", "") == normalize_answer(expected).replace(" ", "")


class _FilesTask(TaskTemplate):
    app = APP

    def _initial(self) -> dict[str, Any]:
        return self.states()[APP]

    def _file0(self, folder: str, name: str) -> dict[str, Any]:
        return next(x for x in _folders(self._initial())[folder] if x["name"] == name)

    def _open_file(self, o: OracleCtx, folder: str, name: str) -> Solution:
        yield o.tap(text=folder)
        yield o.tap(text=name)


class FilesCreateFolder(_FilesTask):
    name = "FilesCreateFolder"
    template = 'Create a new folder named "{folder}".'
    params = {"folder": "name of the new folder"}
    kind = "entry"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        return {"folder": rng.choice(NEW_FOLDERS)}

    def initial_state(self, rng):
        extra = tuple(rng.sample([f for f in NEW_FOLDERS if f != self.values["folder"]], rng.randint(0, 1)))
        return {APP: sample_files(rng, extra=extra)}

    def is_successful(self, device, answer):
        now, before = _state(device), self._initial()
        names = [f["name"] for f in now["folders"]]
        return float(names.count(self.values["folder"]) == 1 and _folders(now)[self.values["folder"]] == []
                     and len(names) == len(before["folders"]) + 1 and _same_except(now, before, set()))

    def solve(self, o):
        yield o.tap(text="New folder")
        yield o.type(self.values["folder"], rid="folder_name")
        yield o.tap(text="Create")
        yield o.done()


class FilesRenameFile(_FilesTask):
    name = "FilesRenameFile"
    template = 'In the {folder} folder, rename "{old}" to "{new}".'
    params = {"folder": "folder holding the file", "old": "current file name", "new": "new file name"}
    kind = "edit"
    complexity = 3
    max_steps = 12

    @classmethod
    def sample_params(cls, rng):
        folder, old = _pick_file(rng)
        return {"folder": folder, "old": old, "new": f"{rng.choice(NEW_STEMS)}.{old.rsplit('.', 1)[1]}"}

    def initial_state(self, rng):
        return {APP: sample_files(rng, must={self.values["folder"]: (self.values["old"],)})}

    def is_successful(self, device, answer):
        v = self.values
        now, before = _state(device), self._initial()
        files = _folders(now).get(v["folder"], [])
        old = self._file0(v["folder"], v["old"])
        renamed = [x for x in files if x["name"] == v["new"]]
        return float(len(renamed) == 1 and renamed[0] == {**old, "name": v["new"]} and all(x["name"] != v["old"] for x in files)
                     and len(files) == len(_folders(before)[v["folder"]]) and len(now["folders"]) == len(before["folders"])
                     and _same_except(now, before, {v["folder"]}))

    def solve(self, o):
        yield from self._open_file(o, self.values["folder"], self.values["old"])
        yield o.tap(text="Rename")
        yield o.type(self.values["new"], rid="file_name", clear=True)
        yield o.tap(rid="confirm_rename")
        yield o.done()


class FilesDeleteFile(_FilesTask):
    name = "FilesDeleteFile"
    template = 'Delete the file "{file}" from the {folder} folder.'
    params = {"folder": "folder holding the file", "file": "file to delete"}
    kind = "delete"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        folder, file = _pick_file(rng)
        return {"folder": folder, "file": file}

    def initial_state(self, rng):
        return {APP: sample_files(rng, must={self.values["folder"]: (self.values["file"],)})}

    def is_successful(self, device, answer):
        v = self.values
        now, before = _state(device), self._initial()
        files = _folders(now).get(v["folder"], [])
        want = [x for x in _folders(before)[v["folder"]] if x["name"] != v["file"]]
        return float(files == want and len(now["folders"]) == len(before["folders"]) and _same_except(now, before, {v["folder"]}))

    def solve(self, o):
        yield from self._open_file(o, self.values["folder"], self.values["file"])
        yield o.tap(text="Delete")
        yield o.done()


class FilesMoveFile(_FilesTask):
    name = "FilesMoveFile"
    template = 'Move "{file}" from {src} to {dst}.'
    params = {"src": "folder holding the file", "file": "file to move", "dst": "destination folder"}
    kind = "edit"
    complexity = 3
    max_steps = 10

    @classmethod
    def sample_params(cls, rng):
        src, file = _pick_file(rng)
        return {"src": src, "file": file, "dst": rng.choice([f for f in DEFAULT_FOLDERS if f != src])}

    def initial_state(self, rng):
        return {APP: sample_files(rng, must={self.values["src"]: (self.values["file"],)})}

    def is_successful(self, device, answer):
        v = self.values
        now, before = _state(device), self._initial()
        cur, old = _folders(now), _folders(before)
        moved = self._file0(v["src"], v["file"])
        return float(cur.get(v["src"]) == [x for x in old[v["src"]] if x["name"] != v["file"]]
                     and sorted(cur.get(v["dst"], []), key=lambda x: x["name"]) == sorted(old[v["dst"]] + [moved], key=lambda x: x["name"])
                     and len(now["folders"]) == len(before["folders"]) and _same_except(now, before, {v["src"], v["dst"]}))

    def solve(self, o):
        yield from self._open_file(o, self.values["src"], self.values["file"])
        yield o.tap(text="Move")
        yield o.tap(text=self.values["dst"])
        yield o.done()


class FilesCountFiles(_FilesTask):
    name = "FilesCountFiles"
    template = "How many files are in the {folder} folder? Answer with a number."
    params = {"folder": "folder to count"}
    kind = "retrieval"
    complexity = 1
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"folder": rng.choice(DEFAULT_FOLDERS)}

    def initial_state(self, rng):
        return {APP: sample_files(rng, per_folder=(1, 6))}

    def expected(self) -> int:
        return len(_folders(self._initial())[self.values["folder"]])

    def is_successful(self, device, answer):
        return float(answer_matches(answer, self.expected()))

    def solve(self, o):
        yield o.tap(text=self.values["folder"])
        yield o.done(str(sum(1 for e in o.obs.elements if e.resource_id == f"{APP}:id/title")))


class FilesFileSize(_FilesTask):
    name = "FilesFileSize"
    template = 'How big is "{file}" in the {folder} folder? Answer with the size as Files shows it, like "2.4 MB".'
    params = {"folder": "folder holding the file", "file": "the file"}
    kind = "retrieval"
    complexity = 2
    max_steps = 8

    @classmethod
    def sample_params(cls, rng):
        folder, file = _pick_file(rng)
        return {"folder": folder, "file": file}

    def initial_state(self, rng):
        return {APP: sample_files(rng, must={self.values["folder"]: (self.values["file"],)})}

    def expected(self) -> str:
        return human_size(self._file0(self.values["folder"], self.values["file"])["size"])

    def is_successful(self, device, answer):
        return float(_size_matches(answer, self.expected()))

    def solve(self, o):
        yield from self._open_file(o, self.values["folder"], self.values["file"])
        yield o.done(o.element(rid="size").text)


class FilesLargestFolder(_FilesTask):
    name = "FilesLargestFolder"
    template = "Which folder takes up the most storage space? Answer with the folder's name."
    params: dict[str, str] = {}
    kind = "retrieval"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        # Pick the winner first so every folder wins as often: others shed their biggest files
        # until the winner leads clearly (also once sizes are rounded for display).
        winner = rng.choice(DEFAULT_FOLDERS)
        state = sample_files(rng, per_folder=(1, 4))
        total = {f["name"]: sum(x["size"] for x in f["files"]) for f in state["folders"]}
        for f in state["folders"]:
            while f["name"] != winner and f["files"] and sum(x["size"] for x in f["files"]) * 1.2 >= total[winner]:
                f["files"].remove(max(f["files"], key=lambda x: x["size"]))
        return {APP: state}

    def expected(self) -> str:
        return max(self._initial()["folders"], key=lambda f: sum(x["size"] for x in f["files"]))["name"]

    def is_successful(self, device, answer):
        return float(normalize_answer(answer) in {normalize_answer(self.expected()), normalize_answer(self.expected() + " folder")})

    def solve(self, o):
        yield o.tap(desc="Storage")
        rows = {}
        for e in o.obs.elements:
            if e.resource_id == f"{APP}:id/meta":
                title = next(t for t in o.obs.elements if t.parent == e.parent and t.resource_id == f"{APP}:id/title")
                rows[title.text] = e.text
        folders = {k: v for k, v in rows.items() if k in {f["name"] for f in self._initial()["folders"]}}
        yield o.done(max(folders, key=lambda k: _bytes(folders[k])))


def _bytes(shown: str) -> float:
    value, unit = shown.split()
    return float(value) * {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}[unit]


class FilesFreeSpace(_FilesTask):
    name = "FilesFreeSpace"
    template = 'How much free storage space is left? Answer with the amount as Files shows it, like "12.3 GB".'
    params: dict[str, str] = {}
    kind = "retrieval"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {}

    def initial_state(self, rng):
        state = sample_files(rng)
        state["system"] = rng.randint(9_000_000_000, 40_000_000_000)
        return {APP: state}

    def expected(self) -> str:
        s = self._initial()
        used = s["system"] + sum(x["size"] for f in s["folders"] for x in f["files"])
        return human_size(s["capacity"] - used)

    def is_successful(self, device, answer):
        a = normalize_answer(answer)
        return float(_size_matches(a.removesuffix(" free").removesuffix(" left"), self.expected()))

    def solve(self, o):
        yield o.tap(desc="Storage")
        yield o.done(o.element(rid="storage_free").text.removesuffix(" free"))


class FilesOrganizeIntoNewFolder(_FilesTask):
    name = "FilesOrganizeIntoNewFolder"
    template = 'Create a folder named "{new}" and move "{file}" from {src} into it.'
    params = {"new": "name of the new folder", "src": "folder holding the file", "file": "file to move"}
    kind = "multi"
    complexity = 4
    max_steps = 16

    @classmethod
    def sample_params(cls, rng):
        src, file = _pick_file(rng)
        return {"new": rng.choice(NEW_FOLDERS), "src": src, "file": file}

    def initial_state(self, rng):
        return {APP: sample_files(rng, must={self.values["src"]: (self.values["file"],)})}

    def is_successful(self, device, answer):
        v = self.values
        now, before = _state(device), self._initial()
        cur, old = _folders(now), _folders(before)
        return float(cur.get(v["new"]) == [self._file0(v["src"], v["file"])]
                     and cur.get(v["src"]) == [x for x in old[v["src"]] if x["name"] != v["file"]]
                     and len(now["folders"]) == len(before["folders"]) + 1 and _same_except(now, before, {v["src"]}))

    def solve(self, o):
        yield o.tap(text="New folder")
        yield o.type(self.values["new"], rid="folder_name")
        yield o.tap(text="Create")
        yield from self._open_file(o, self.values["src"], self.values["file"])
        yield o.tap(text="Move")
        yield o.tap(text=self.values["new"])
        yield o.done()


class FilesCompressFolder(_FilesTask):
    name = "FilesCompressFolder"
    template = "Compress the {folder} folder into a ZIP file."
    params = {"folder": "folder to compress"}
    kind = "infeasible"
    complexity = 2
    max_steps = 6

    @classmethod
    def sample_params(cls, rng):
        return {"folder": rng.choice(DEFAULT_FOLDERS)}

    def initial_state(self, rng):
        return {APP: sample_files(rng, per_folder=(1, 5))}

    def is_successful(self, device, answer):
        return 0.0  # Files has no compress action; only declaring the task infeasible succeeds

    def solve(self, o):
        yield o.tap(text=self.values["folder"])
        yield o.infeasible()


TASKS: tuple[type[TaskTemplate], ...] = (
    FilesCreateFolder, FilesRenameFile, FilesDeleteFile, FilesMoveFile, FilesCountFiles, FilesFileSize,
    FilesLargestFolder, FilesFreeSpace, FilesOrganizeIntoNewFolder, FilesCompressFolder,
)
