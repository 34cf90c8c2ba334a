"""Per-row seeded sampling, recorded behaviour log-probs that re-scoring reproduces, and
thread-safe adapter switching (`VLMPolicy.generate(seeds=…)`, `score`, `adapter_disabled`)."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from coadapt.android_env.actions import OpenApp, Tap  # noqa: E402
from coadapt.android_env.env import AndroidEnv  # noqa: E402
from coadapt.android_env.errors import ConfigError  # noqa: E402
from coadapt.android_env.observation import Observation  # noqa: E402
from coadapt.android_env.sim.device import SimDevice  # noqa: E402
from coadapt.apps import label_map, make_apps  # noqa: E402
from coadapt.policy.agent import BUNDLED_MODEL  # noqa: E402
from coadapt.policy.model import Generation, LoraSettings, VLMPolicy  # noqa: E402
from coadapt.policy.processor import ModelLoadError  # noqa: E402
from coadapt.policy.prompt import PolicyInput  # noqa: E402
from coadapt.policy.sampling import step_logprobs  # noqa: E402
from coadapt.policy.tiny import TINY_POLICY_CONFIG, build_tiny_policy  # noqa: E402

pytestmark = [pytest.mark.skipif(not (BUNDLED_MODEL / "config.json").is_file(), reason="the bundled model is missing"),
              pytest.mark.usefixtures("one_thread")]

GOALS = ("add a note titled milk", "open the Zebra app", "how many notes are there?", "call Bob")



class _Task:
    goal = GOALS[0]
    max_steps = 4

    def setup(self, device) -> None:
        pass


@pytest.fixture(scope="module")
def screens() -> list[Observation]:
    """Launcher, Notes list, Notes editor."""
    env = AndroidEnv(SimDevice(make_apps(["com.example.notes"])), label_map())
    home = env.reset(_Task())
    notes = env.step(OpenApp("Notes")).observation
    fab = next(i for i, e in enumerate(notes.elements) if e.content_desc == "New note")
    return [home, notes, env.step(Tap(index=fab)).observation]


@pytest.fixture(scope="module")
def inputs(screens: list[Observation]) -> list[PolicyInput]:
    """Home and list screens under goals the bundled model is unsure about (it samples there)."""
    return [PolicyInput(obs, goal, ()) for obs in screens[:2] for goal in GOALS]


@pytest.fixture(scope="module")
def bundled() -> VLMPolicy:
    """The bundled model as shipped (text style, both constraints on), never modified by a test."""
    return VLMPolicy.load(BUNDLED_MODEL)


def _with(policy: VLMPolicy, **changes) -> VLMPolicy:
    """The same model and processor under another sampling config."""
    return VLMPolicy(policy.model, policy.processor, replace(policy.config, **changes))


@pytest.fixture(scope="module")
def fresh(screens: list[Observation]) -> VLMPolicy:
    """A random tiny model, no constraints: near-uniform scores, so samples spread widely."""
    corpus = list(GOALS) + [n for obs in screens for e in obs.elements for n in (e.text, e.content_desc) if n]
    return build_tiny_policy(corpus, policy_config=replace(TINY_POLICY_CONFIG, max_new_tokens=6, temperature=0.7,
                                                           top_p=0.8))


def _same(a: Generation, b: Generation) -> bool:
    return a.token_ids == b.token_ids and a.logprobs == b.logprobs


def _scored(policy: VLMPolicy, inputs: list[PolicyInput], gens: list[Generation]) -> list[torch.Tensor]:
    with torch.no_grad():
        logp, mask = policy.score(inputs, [g.token_ids for g in gens])
    return [row[m.bool()] for row, m in zip(logp, mask)]


# ---------------------------------------------------------------- seeds


def test_same_seeds_same_samples_other_seeds_other_samples(fresh: VLMPolicy, inputs: list[PolicyInput]) -> None:
    batch = inputs[:3]
    a = fresh.generate(batch, seeds=[1, 2, 3])
    b = fresh.generate(batch, seeds=[1, 2, 3])
    assert all(_same(x, y) for x, y in zip(a, b))
    assert all(len(g.logprobs) == len(g.token_ids) and all(lp <= 0 for lp in g.logprobs) for g in a)
    others = [fresh.generate(batch[:1], seeds=[s])[0].token_ids for s in range(10, 15)]
    assert len(set(others + [a[0].token_ids])) > 1
    unseeded = {fresh.generate(batch[:1])[0].token_ids for _ in range(3)}  # fresh OS seeds each call
    assert len(unseeded) > 1
    with pytest.raises(ConfigError):
        fresh.generate(batch, seeds=[1])


def test_a_rows_sample_does_not_depend_on_the_rest_of_the_batch(bundled: VLMPolicy, inputs: list[PolicyInput]) -> None:
    policy = _with(bundled, temperature=1.0)
    target = inputs[1]  # home screen, an app that is not there: the model hesitates
    texts = set()
    for seed in range(6):
        alone = policy.generate([target], seeds=[seed])[0]
        mixed = policy.generate([inputs[5], target, inputs[2]], seeds=[seed + 100, seed, seed + 200])[1]
        assert alone.token_ids == mixed.token_ids, seed
        assert alone.logprobs == pytest.approx(mixed.logprobs, abs=1e-5)
        texts.add(alone.text)
    assert len(texts) > 1  # the seed matters


def test_greedy_ignores_seeds(bundled: VLMPolicy, inputs: list[PolicyInput]) -> None:
    a = bundled.generate(inputs[:3], seeds=[1, 2, 3])
    b = bundled.generate(inputs[:3])
    assert all(_same(x, y) for x, y in zip(a, b))


# ---------------------------------------------------------------- behaviour log-probs


def test_scores_reproduce_the_recorded_sampling_logprobs(bundled: VLMPolicy, inputs: list[PolicyInput]) -> None:
    policy = _with(bundled, temperature=1.0, top_p=0.9)
    assert policy.config.constrain_names and policy.config.constrain_text and policy.config.prompt.style == "text"
    gens = policy.generate(inputs, seeds=list(range(len(inputs))))
    assert sum(lp < -0.01 for g in gens for lp in g.logprobs) >= 3  # something was actually random
    for g, s in zip(gens, _scored(policy, inputs, gens)):
        assert len(s) == len(g.token_ids)
        assert s.tolist() == pytest.approx(list(g.logprobs), abs=1e-4)
    # prepared, collated examples score the same (what a trainer revisiting steps reuses)
    prepared = [policy.prepare(i, g.token_ids) for i, g in zip(inputs, gens)]
    with torch.no_grad():
        direct, _ = policy.score(inputs, [g.token_ids for g in gens])
        again, _ = policy.score_batch(policy.collate(prepared), inputs)
    assert torch.allclose(direct, again, atol=1e-5)


def test_scores_follow_the_weights_and_carry_gradients(inputs: list[PolicyInput]) -> None:
    policy = _with(VLMPolicy.load(BUNDLED_MODEL), temperature=1.0, top_p=0.9)
    gens = policy.generate(inputs, seeds=list(range(len(inputs))))
    policy.add_adapter(LoraSettings(r=4, alpha=8))
    same = _scored(policy, inputs, gens)  # a fresh adapter (B = 0) changes nothing
    for g, s in zip(gens, same):
        assert s.tolist() == pytest.approx(list(g.logprobs), abs=1e-4)
    _perturb(policy, seed=0)
    moved = _scored(policy, inputs, gens)
    assert max((m - s).abs().max().item() for m, s in zip(moved, same)) > 1e-3
    logp, mask = policy.score(inputs[:2], [g.token_ids for g in gens[:2]])
    (logp * mask).sum().backward()
    assert any(p.grad is not None and bool(p.grad.abs().sum() > 0) for p in policy.trainable_parameters())


def test_nucleus_scores_on_a_high_entropy_model(fresh: VLMPolicy, inputs: list[PolicyInput]) -> None:
    gens = fresh.generate(inputs[:3], seeds=[4, 5, 6])
    for g, s in zip(gens, _scored(fresh, inputs[:3], gens)):
        assert s.tolist() == pytest.approx(list(g.logprobs), abs=1e-4)
        assert all(lp > -20 for lp in g.logprobs)


def test_constrained_greedy_logprobs_are_sane(bundled: VLMPolicy, inputs: list[PolicyInput]) -> None:
    gens = bundled.generate(inputs)
    plain = bundled.token_logprobs(inputs, [g.token_ids for g in gens])
    with torch.no_grad():
        scored = _scored(bundled, inputs, gens)
    for g, p, s in zip(gens, plain, scored):
        assert min(g.logprobs) > -20
        assert s.tolist() == pytest.approx(list(g.logprobs), abs=1e-4)
        assert bool((s >= p.detach() - 1e-5).all())  # masking only renormalises onto fewer tokens
    # a name the model would not have spelled unconstrained: the plain softmax calls it unlikely
    assert min(p.min().item() for p in plain) < -10


def test_nucleus_keeps_a_recorded_token_that_fell_outside() -> None:
    scores = torch.tensor([[3.0, 2.0, 0.0, -1.0]])
    inside = step_logprobs(scores, 1.0, 0.5)
    assert torch.isinf(inside[0, 2])
    kept = step_logprobs(scores, 1.0, 0.5, keep=torch.tensor([2]))
    assert torch.isfinite(kept[0, 2]) and torch.isfinite(kept[0, 0]) and torch.isinf(kept[0, 3])
    assert kept.exp().sum().item() == pytest.approx(1.0)
    greedy = step_logprobs(scores, 0.0, 0.5)  # temperature 0: temperature 1, no nucleus
    assert torch.allclose(greedy, torch.log_softmax(scores, dim=-1))


def test_the_checkpoints_generation_config_cannot_reshape_scores(inputs: list[PolicyInput]) -> None:
    policy = VLMPolicy.load(BUNDLED_MODEL)
    before = policy.generate(inputs[:2])
    gen_cfg = policy.model.generation_config
    gen_cfg.repetition_penalty = 50.0
    gen_cfg.suppress_tokens = [before[0].token_ids[0]]
    after = policy.generate(inputs[:2])
    assert all(_same(a, b) for a, b in zip(before, after))
    assert policy.model.generation_config.suppress_tokens == [before[0].token_ids[0]]  # left as it was


# ---------------------------------------------------------------- adapters


def _perturb(policy: VLMPolicy, seed: int, scale: float = 0.5) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn(p.shape, generator=gen) * scale)


@pytest.fixture(scope="module")
def adapted(inputs: list[PolicyInput]) -> tuple[VLMPolicy, list[Generation], list[Generation]]:
    """The bundled model with a noisy adapter whose greedy answers differ from the base model's."""
    policy = VLMPolicy.load(BUNDLED_MODEL)
    base = policy.generate(inputs)
    policy.add_adapter(LoraSettings(r=4, alpha=8))
    _perturb(policy, seed=1)
    on = policy.generate(inputs)
    assert any(a.token_ids != b.token_ids for a, b in zip(on, base))
    return policy, on, base


def test_generate_waits_while_another_thread_disables_the_adapter(adapted, inputs: list[PolicyInput]) -> None:
    policy, on, base = adapted
    entered, times = threading.Event(), {}
    out: list[Generation] = []

    def reference() -> None:
        with policy.adapter_disabled():
            entered.set()
            time.sleep(0.3)
            times["a_exit"] = time.monotonic()

    def rollout() -> None:
        entered.wait(5)
        times["b_start"] = time.monotonic()
        out.extend(policy.generate(inputs))
        times["b_end"] = time.monotonic()

    threads = [threading.Thread(target=reference), threading.Thread(target=rollout)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [g.token_ids for g in out] == [g.token_ids for g in on]  # ran with the adapter, not the base
    assert times["b_end"] >= times["a_exit"] and times["a_exit"] - times["b_start"] > 0.1  # B waited for A
    with policy.adapter_disabled():
        assert [g.token_ids for g in policy.generate(inputs)] == [g.token_ids for g in base]


def test_adapter_state_and_saved_folders_restore_generations_exactly(adapted, inputs: list[PolicyInput],
                                                                      tmp_path: Path) -> None:
    policy, on, _ = adapted
    state = policy.adapter_state()
    assert state and all("lora_" in n for n in state)
    sampler = _with(policy, temperature=1.0)
    sampled = sampler.generate(inputs, seeds=list(range(len(inputs))))
    policy.save_adapter(tmp_path / "adapter")
    try:
        _perturb(policy, seed=2)
        assert any(a.token_ids != b.token_ids for a, b in zip(policy.generate(inputs), on))
        policy.load_adapter_state(state)
        assert all(_same(a, b) for a, b in zip(policy.generate(inputs), on))
        assert all(_same(a, b) for a, b in zip(sampler.generate(inputs, seeds=list(range(len(inputs)))), sampled))

        _perturb(policy, seed=3)
        policy.load_adapter_weights(tmp_path / "adapter")  # rollback from disk, in place
        assert all(_same(a, b) for a, b in zip(policy.generate(inputs), on))
    finally:
        policy.load_adapter_state(state)
    reloaded = VLMPolicy.load(BUNDLED_MODEL, adapter=tmp_path / "adapter")
    assert all(_same(a, b) for a, b in zip(reloaded.generate(inputs), on))
    with pytest.raises(ConfigError):
        policy.load_adapter_state({k: v for k, v in list(state.items())[1:]})
    other = VLMPolicy.load(BUNDLED_MODEL)
    other.add_adapter(LoraSettings(r=2, alpha=4))
    other.save_adapter(tmp_path / "rank2")
    with pytest.raises(ModelLoadError, match="does not fit"):
        policy.load_adapter_weights(tmp_path / "rank2")
    assert all(torch.equal(v, state[k]) for k, v in policy.adapter_state().items())  # all or nothing
