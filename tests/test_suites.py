"""Suite files: the bundled ones load; malformed ones give errors that name the problem."""

from __future__ import annotations

import pytest

from coadapt.android_env.errors import TaskError
from coadapt.tasks.registry import TEMPLATES
from coadapt.tasks.suite import SUITES_DIR, Suite


@pytest.mark.parametrize("name", ["smoke", "seen", "unseen", "all"])
def test_bundled_suites_load(name):
    s = Suite.load(name)
    assert s.name == name
    keys = [i.key for i in s.instances()]
    assert len(keys) == len(set(keys)) == len(s.tasks) * s.instances_per_task


def test_all_covers_every_template():
    assert set(Suite.load("all").tasks) == set(TEMPLATES)


def test_instances_are_reproducible():
    a, b = Suite.load("seen").instances(), Suite.load(SUITES_DIR / "seen.yaml").instances()
    assert a == b
    assert [i.build().goal for i in a[:5]] == [i.build().goal for i in b[:5]]


@pytest.mark.parametrize(
    "text, message",
    [
        ("name: x\ntasks: [NotesAddNote]\nfoo: 1\n", "unknown key"),
        ("tasks: [NotesAddNote]\n", "'name'"),
        ("name: x\ntasks: [NotesAddNot]\n", "unknown task 'NotesAddNot'; did you mean NotesAddNote"),
        ("name: x\napps: [com.example.nope]\n", "unknown app 'com.example.nope'"),
        ("name: x\ngroup: secret\n", "unknown app group"),
        ("name: x\n", "selects no tasks"),
        ("name: x\ntasks: NotesAddNote\n", "list of names"),
        ("name: x\ntasks: [NotesAddNote]\ninstances_per_task: 0\n", "instances_per_task"),
        ("name: x\ntasks: [NotesAddNote]\nseed: -1\n", "seed"),
        ("name: [unclosed\n", "not valid YAML"),
        ("- just\n- a list\n", "mapping"),
    ],
)
def test_malformed_suites(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TaskError, match=message) as info:
        Suite.load(path)
    assert str(path) in str(info.value)


def test_missing_suite_file():
    with pytest.raises(TaskError, match="cannot read suite 'nope.yaml': .*; bundled suites: all, seen, smoke, unseen"):
        Suite.load("nope.yaml")


def test_a_folder_named_like_a_bundled_suite_does_not_shadow_it(tmp_path, monkeypatch):
    (tmp_path / "unseen").mkdir()
    monkeypatch.chdir(tmp_path)
    assert Suite.load("unseen").name == Suite.load(SUITES_DIR / "unseen.yaml").name


# A "billion laughs": nine levels of nine aliases, 9**9 strings once expanded. The description is
# a valid key, so nothing refuses it before something walks it.
ALIAS_BOMB = "name: bomb\ntasks: [NotesAddNote]\ndescription:\n  - &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  - &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("data, message", [
    (b"name: ../../evil\ntasks: [NotesAddNote]\n", "'name' must be a plain name"),
    (b"name: a/b\ntasks: [NotesAddNote]\n", "'name' must be a plain name"),
    (b"name: a\\\\b\ntasks: [NotesAddNote]\n", "'name' must be a plain name"),
    (b"name: '..'\ntasks: [NotesAddNote]\n", "'name' must be a plain name"),
    (b"\xff\xfe\x00binary\x80\x81", "not UTF-8 text"),
    (ALIAS_BOMB.encode(), "aliases"),
    (b"name: x\ntasks: [NotesAddNote]\ndescription: " + b"y" * (2 << 20) + b"\n", "too large"),
])
def test_hostile_suite_files_are_refused_quickly(tmp_path, data, message):
    import time
    path = tmp_path / "bad.yaml"
    path.write_bytes(data)
    start = time.perf_counter()
    with pytest.raises(TaskError, match=message) as info:
        Suite.load(path)
    assert time.perf_counter() - start < 5.0
    assert str(path) in str(info.value)


def test_plain_suite_names_still_load():
    for name in ("my suite", "unseen-v2", "a.b_c+1"):
        assert Suite.from_dict({"name": name, "tasks": ["NotesAddNote"]}).name == name
