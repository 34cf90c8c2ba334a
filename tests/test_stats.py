"""The paired comparison: sign test, template-cluster bootstrap, mean over apps."""

from __future__ import annotations

import pytest

from coadapt.stats import by_template, interval, mean_interval, paired, sign_test_p, template_of


def test_sign_test_matches_the_binomial_tails():
    assert sign_test_p(0, 0) == 1.0
    assert sign_test_p(9, 0) == pytest.approx(2 / 2**9)
    assert sign_test_p(0, 9) == pytest.approx(2 / 2**9)
    assert sign_test_p(3, 1) == pytest.approx(2 * (1 + 4) / 16)
    assert sign_test_p(5, 5) == 1.0


def _instances(template: str, outcomes: list[float]) -> dict[str, float]:
    return {f"{template}#eval{i}": v for i, v in enumerate(outcomes)}


def test_paired_gain_counts_only_instances_both_evaluated():
    base = {**_instances("a", [0, 0, 1, 1]), **_instances("b", [0, 0])}
    other = {**_instances("a", [1, 0, 1, 0]), "b#eval0": 1.0, "c#eval0": 1.0}
    c = paired(base, other)
    assert c["instances"] == 5 and c["templates"] == 2
    assert (c["wins"], c["losses"]) == (2, 1) and c["gain"] == pytest.approx(1 / 5)
    assert c["by_template"] == {"a": [4, 2.0, 2.0], "b": [1, 0.0, 1.0]}
    assert c["ci95"][0] <= c["gain"] <= c["ci95"][1]


def test_no_discordant_pair_gives_a_zero_width_interval():
    same = {**_instances("a", [0, 1]), **_instances("b", [1, 1])}
    c = paired(same, dict(same))
    assert c["gain"] == 0 and c["ci95"] == [0, 0] and c["p_value"] == 1.0


def test_gains_in_one_template_are_not_read_as_many_independent_ones():
    # 9 wins, all on one template of 10: the sign test (episode pairs) calls it significant, the
    # template-cluster interval does not exclude zero, since a resample can leave that template out.
    base, other = {}, {}
    for t in range(10):
        base.update(_instances(f"t{t}", [0.0] * 10))
        other.update(_instances(f"t{t}", [1.0] * 9 + [0.0] if t == 0 else [0.0] * 10))
    c = paired(base, other)
    assert c["p_value"] < 0.01 and c["gain"] == pytest.approx(0.09)
    assert c["ci95"][0] == 0.0 and c["ci95"][1] > c["gain"]


def test_a_gain_spread_over_templates_excludes_zero():
    base, other = {}, {}
    for t in range(10):
        base.update(_instances(f"t{t}", [0.0] * 10))
        other.update(_instances(f"t{t}", [1.0] * 3 + [0.0] * 7))
    c = paired(base, other)
    assert c["gain"] == pytest.approx(0.3) and c["ci95"] == [0.3, 0.3] and c["p_value"] < 1e-6


def test_mean_interval_over_apps():
    up = paired(_instances("a", [0] * 4) | _instances("b", [0] * 4), _instances("a", [1] * 4) | _instances("b", [0] * 4))
    flat = paired(_instances("c", [1] * 4), _instances("c", [1] * 4))
    lo, hi = mean_interval([up, flat])
    assert lo == 0.0 and hi == 0.5  # app 1's gain is 0, 0.5 or 1 by resample; app 2's is 0
    assert mean_interval([up, {"gain": 0.1}]) is None  # an app without per-template rows


def test_helpers():
    assert template_of("todo_add#eval3") == "todo_add" and template_of("plain") == "plain"
    assert interval([float(i) for i in range(101)]) == [2.0, 98.0]
    assert by_template({"a#1": 1.0}, {"b#1": 1.0}) == {}
    assert "ci95" not in paired({}, {})
