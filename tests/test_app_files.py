"""Files app: folders and storage tabs, rename/move/delete a file, new folder, sizes as shown."""

from __future__ import annotations

import random

import pytest

from coadapt.android_env.sim import SimDevice
from coadapt.apps import make_apps
from coadapt.apps.files import FilesApp, human_size, sample_files

PKG = FilesApp.package
STATE = {
    "folders": [
        {"name": "Download", "files": [{"name": "invoice_0923.pdf", "size": 245_000, "modified": "2026-09-23"},
                                       {"name": "photos_backup.zip", "size": 120_400_000, "modified": "2026-08-01"}]},
        {"name": "Documents", "files": [{"name": "Resume.docx", "size": 48_200, "modified": "2026-10-02"}]},
        {"name": "Pictures", "files": [{"name": "Resume.docx", "size": 1_000, "modified": "2026-10-01"}]},
        {"name": "Music", "files": []},
    ],
    "capacity": 64_000_000_000,
    "system": 14_300_000_000,
}


@pytest.fixture
def dev():
    d = SimDevice(make_apps([PKG]))
    d.write_app_state(PKG, STATE)
    d.launch(PKG)
    return d


def tap(d, **kw):
    found = d.ui_tree().find(**kw)
    assert found, f"no {kw}; texts: {d.ui_tree().texts()}"
    d.tap(*found[0].bounds.center)


def texts(d):
    return d.ui_tree().texts()


def folders(d):
    return {f["name"]: [x["name"] for x in f["files"]] for f in d.read_app_state(PKG)["folders"]}


def test_state_round_trip_sizes_and_sample_data():
    app = FilesApp()
    app.load_state(STATE)
    assert app.state_dict() == STATE
    assert [human_size(n) for n in (512, 48_200, 2_449_999, 1_270_000_000)] == ["512 B", "48 kB", "2.4 MB", "1.3 GB"]
    s = sample_files(random.Random(2), must={"Music": ("Lullaby.mp3",)}, extra=("Receipts",))
    names = {f["name"]: [x["name"] for x in f["files"]] for f in s["folders"]}
    assert "Lullaby.mp3" in names["Music"] and names["Receipts"] == []
    assert all(2 <= len(v) <= 5 for k, v in names.items() if k != "Receipts")


def test_folder_list_and_storage_tab(dev):
    assert "2 files · 120.6 MB" in texts(dev) and "Empty" in texts(dev)
    tap(dev, content_desc="Storage")
    t = texts(dev)
    assert "14.4 GB used of 64 GB" in t and "49.6 GB free" in t and "120.6 MB" in t and "System and apps" in t
    assert not dev.ui_tree().find(text="New folder")  # the FAB belongs to the Folders tab


def test_file_page_shows_details(dev):
    tap(dev, text="Download")
    assert "245 kB · Sep 23, 2026" in texts(dev)
    tap(dev, text="invoice_0923.pdf")
    t = texts(dev)
    assert "PDF document" in t and "Internal storage/Download" in t and "September 23, 2026" in t


def test_rename_refuses_a_taken_name(dev):
    tap(dev, text="Download")
    tap(dev, text="invoice_0923.pdf")
    tap(dev, text="Rename")
    field = dev.ui_tree().find(resource_id=f"{PKG}:id/file_name")[0]
    assert field.text == "invoice_0923.pdf" and field.focused
    for _ in range(len(field.text)):
        dev.key("delete")
    dev.input_text("photos_backup.zip")
    tap(dev, resource_id=f"{PKG}:id/confirm_rename")
    assert "Download already has a file named photos_backup.zip" in texts(dev)
    for _ in range(len("photos_backup.zip")):
        dev.key("delete")
    dev.input_text("Invoice September.pdf")
    dev.key("enter")
    assert folders(dev)["Download"] == ["Invoice September.pdf", "photos_backup.zip"]
    assert "File info" in texts(dev) and "Invoice September.pdf" in texts(dev)


def test_move_lists_other_folders_refuses_clash_and_undoes(dev):
    tap(dev, text="Documents")
    tap(dev, text="Resume.docx")
    tap(dev, text="Move")
    t = texts(dev)
    assert "Documents" not in t and "Download" in t and "Music" in t
    tap(dev, text="Pictures")
    assert "Pictures already has a file named Resume.docx" in texts(dev)
    tap(dev, text="Music")
    assert folders(dev)["Music"] == ["Resume.docx"] and folders(dev)["Documents"] == []
    assert "Moved to Music" in texts(dev) and "This folder is empty" in texts(dev)
    tap(dev, text="UNDO")
    assert folders(dev)["Documents"] == ["Resume.docx"] and folders(dev)["Music"] == []


def test_delete_then_undo_keeps_the_order(dev):
    tap(dev, text="Download")
    tap(dev, text="invoice_0923.pdf")
    tap(dev, text="Delete")
    assert folders(dev)["Download"] == ["photos_backup.zip"] and "File deleted" in texts(dev)
    tap(dev, text="UNDO")
    assert folders(dev)["Download"] == ["invoice_0923.pdf", "photos_backup.zip"]


def test_new_folder_validates_the_name(dev):
    tap(dev, text="New folder")
    tap(dev, text="Create")
    assert "Enter a folder name" in texts(dev)
    dev.input_text("music")
    tap(dev, text="Create")
    assert "A folder named music already exists" in texts(dev)
    for _ in range(5):
        dev.key("delete")
    dev.input_text("Receipts")
    tap(dev, text="Create")
    assert list(folders(dev)) == ["Download", "Documents", "Pictures", "Music", "Receipts"]
    assert "Receipts" in texts(dev) and "Folder Receipts created" in texts(dev)
