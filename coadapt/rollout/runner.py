"""The rollout runner: K attempts per task card over the device pool, stored and returned.

Evaluation and adaptation both play episodes through here; they differ only in the scorer
they inject (ground truth for evaluation, none for adaptation, whose verifier judges the
returned trajectories afterwards) and in `guard` (adaptation's phones refuse to show app state).
Every (phase, round, key, attempt) is played once: a rerun on the same store skips what
finished and replays what a kill or a device fault cut.
"""

from __future__ import annotations

import io
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

from PIL import Image

from coadapt.android_env.actions import from_dict
from coadapt.android_env.device import Device
from coadapt.android_env.env import AndroidEnv, StepInfo
from coadapt.android_env.errors import DeviceError
from coadapt.android_env.observation import PNG_INFO, Observation, png_screenshot
from coadapt.android_env.pool import DevicePool, NoDeviceError
from coadapt.policy.base import Decision, Policy
from coadapt.runs import RunStore

from .cards import TaskCard, episode_seed
from .episode import StepRecord, Trajectory, run_episode
from .firewall import GuardedDevice

log = logging.getLogger(__name__)

Scorer = Callable[[TaskCard, Trajectory, Device], "float | None"]
"""Scores a finished episode while its device still shows the final state (ground truth in
evaluation). Raising DeviceError makes the episode an infra error."""

ProgressFn = Callable[[str, dict[str, Any]], None]


class HostLostError(DeviceError):
    """The process playing an episode elsewhere died (or became unreachable) mid-episode: the
    episode is an infra error and is replayed on another host."""


class HostSession(Protocol):
    """Episode hosts bound to one `run` call's policy, scorer and settings."""

    slots: int
    """How many episodes the hosts can play at once (their devices)."""

    def play(self, card: TaskCard, attempt: int, round: int | None, seed: int) -> tuple[Trajectory, str | None]:
        """Play one episode on some host's device and return it (screenshots compacted, `score`
        set by the scorer on the host) with the device's serial. Blocks until a device is free.
        Raises HostLostError when the host died mid-episode, NoDeviceError when none is left."""
        ...


class EpisodeHosts(Protocol):
    """Devices owned by other processes that play whole episodes and hand them back, so the
    runner only stores them (coadapt.scale: device-host actors on Ray)."""

    @property
    def recoveries(self) -> int: ...

    @property
    def retired(self) -> list[str]: ...

    def session(self, policy: Policy, scorer: "Scorer | None", settings: "RolloutSettings",
                app_names: Mapping[str, str]) -> HostSession: ...


@dataclass(frozen=True)
class RolloutSettings:
    """How the runner plays episodes."""

    run_seed: int = 0
    """Seed of every episode's sampling generator, with (instance, attempt, round)."""
    max_infra_retries: int = 2
    """How often an episode cut by a device fault is replayed before its instance counts as lost."""
    settle_seconds: float = 0.0
    """Wait after each action for a real device's UI to settle (0 for simulated phones)."""
    guard: bool = False
    """Phones refuse `read_app_state` (adaptation: the learning side never sees ground truth)."""
    store_trees: bool = True
    """Keep each step's UI tree (XML) in the run store, so training prompts can be rebuilt."""


@dataclass
class RolloutResult:
    """What a `run` call produced."""

    trajectories: dict[tuple[str, int], Trajectory] = field(default_factory=dict)
    """(key, attempt) -> the episode played by this call."""
    episode_ids: dict[tuple[str, int], int] = field(default_factory=dict)
    """(key, attempt) -> stored episode id, for every finished episode of the round (earlier calls too)."""
    lost: list[str] = field(default_factory=list)
    """Keys whose episode kept failing on the devices (max_infra_retries exceeded)."""
    infra_errors: int = 0


STOP_WAIT_S = 30.0
"""How long an interrupted run waits for its workers to leave their episodes (one step each)."""


def _wait_exited(threads: Sequence[threading.Thread], timeout: float = 2.0) -> None:
    """Wait until the OS threads behind `threads` are gone, not only their Python part (where /proc
    shows them): a thread that ran torch still runs its thread-local destructors after `join`
    returns, and an interpreter exiting meanwhile aborts (std::terminate, SIGABRT)."""
    deadline = time.monotonic() + timeout
    for t in threads:
        task = f"/proc/self/task/{t.native_id}"
        while t.native_id is not None and os.path.exists(task) and time.monotonic() < deadline:
            time.sleep(0.005)


class Stopped(Exception):
    """Raised inside a worker to leave its episode when the run is interrupted."""


class RolloutRunner:
    """Plays task cards with a policy on a device pool and records every step in a run store."""

    def __init__(self, pool: DevicePool | Sequence[Device] | None, policy: Policy, store: RunStore, *,
                 scorer: Scorer | None = None, settings: RolloutSettings = RolloutSettings(),
                 app_names: Mapping[str, str] | None = None, adapter: str | None = None,
                 annotate: Callable[[Trajectory], dict[str, float]] | None = None,
                 hosts: EpisodeHosts | None = None):
        if pool is None and hosts is None:
            raise ValueError("a rollout runner needs a device pool or episode hosts")
        self.pool = pool if isinstance(pool, DevicePool) or pool is None else DevicePool.of(pool)
        self.hosts = hosts
        """When set, episodes are played by these hosts (on their own devices) and only stored here."""
        self.policy = policy
        self.store = store
        self.scorer = scorer
        self.settings = settings
        if app_names is None:
            from coadapt.apps import label_map

            app_names = label_map()
        self.app_names = dict(app_names)
        self.adapter = adapter
        """Tag of the adapter the policy carries (stored with each episode)."""
        self.annotate = annotate
        """Per finished episode, extra episode columns to store (e.g. curiosity's wandering and
        informative rates); computed from what the agent saw, never from app state."""

    def run(self, cards: Sequence[TaskCard], *, k: int = 1, round: int | None = None, phase: str = "eval",
            progress: ProgressFn | None = None, keep: bool = True) -> RolloutResult:
        """Play every (card, attempt < k) of this (phase, round) not finished in the store yet,
        one worker thread per device. Raises the first policy/task error; device faults are
        replayed (then counted in `lost`). With `keep` off the played trajectories are not
        returned (evaluation reads the store; a round's screenshots would cost gigabytes)."""
        store = self.store
        dropped = store.discard_unfinished(phase, round)
        if dropped:
            log.info("dropped %d episode(s) a killed run left unfinished; they are replayed", dropped)
        done = store.finished_keys(phase, round)
        result = RolloutResult()
        todo = [(c, a) for c in cards for a in range(k) if (c.key, a) not in done]
        jobs: queue.Queue[tuple[TaskCard, int, int]] = queue.Queue()
        for card, a in todo:
            jobs.put((card, a, 0))
        if progress:
            progress("start", {"total": len(cards) * k, "done": len(cards) * k - len(todo)})
        lock = threading.Lock()
        errors: list[BaseException] = []
        stop = threading.Event()  # set on Ctrl+C: workers leave their episode at the next step
        session = (self.hosts.session(self.policy, self.scorer, self.settings, self.app_names)
                   if self.hosts is not None else None)

        def play(card: TaskCard, attempt: int) -> Trajectory | None:
            """One episode on the local pool or on a host; None when no device is left."""
            if session is not None:
                try:
                    played, serial = session.play(card, attempt, round,
                                                  episode_seed(self.settings.run_seed, card.key, attempt, round))
                except NoDeviceError:
                    return None
                except HostLostError as e:
                    played = Trajectory(card, attempt=attempt, round=round, infra_error=True, error=str(e))
                    serial = None
                return self._store_played(played, phase, serial)
            assert self.pool is not None
            try:
                slot = self.pool.acquire()
            except NoDeviceError:
                return None
            try:
                traj = self._play(card, attempt, round, phase, slot.device, stop)
            except BaseException:
                self.pool.release(slot)
                raise
            self.pool.release(slot, faulty=traj.infra_error)
            return traj

        def worker() -> None:
            while not errors:
                try:
                    card, attempt, tries = jobs.get_nowait()
                except queue.Empty:
                    return
                try:
                    traj = play(card, attempt)
                except BaseException as e:  # a policy or task bug: stop everyone, report it
                    errors.append(e)
                    return
                if traj is None:  # every device failed
                    jobs.put((card, attempt, tries))
                    return
                with lock:
                    if traj.infra_error:
                        result.infra_errors += 1
                        if tries < self.settings.max_infra_retries:
                            jobs.put((card, attempt, tries + 1))
                        else:
                            result.lost.append(card.key)
                    elif keep:
                        result.trajectories[(card.key, attempt)] = compact(traj)
                if progress:
                    try:
                        progress("episode", {"key": card.key, "attempt": attempt,
                                             "outcome": "infra_error" if traj.infra_error else "finished",
                                             "score": traj.score, "steps": len(traj.steps)})
                    except BaseException as e:  # e.g. Ctrl-C in the progress display
                        errors.append(e)
                        return

        slots = session.slots if session is not None else len(self.pool.slots)  # type: ignore[union-attr]
        threads = [threading.Thread(target=worker, name=f"rollout-{i}", daemon=True)
                   for i in range(max(1, min(slots, len(todo))))]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except BaseException:  # Ctrl+C reaches this thread only: stop the workers before leaving, or the
            stop.set()         # interpreter exits under threads still inside torch (std::terminate, SIGABRT)
            for t in threads:
                t.join(timeout=STOP_WAIT_S)
            _wait_exited(threads)
            raise
        if errors:
            raise errors[0]
        if not jobs.empty():
            retired = self.hosts.retired if self.hosts is not None else self.pool.retired  # type: ignore[union-attr]
            raise NoDeviceError(f"every device failed ({', '.join(retired)}); {jobs.qsize()} episode(s) "
                                "not played (rerun with the same --out to resume)")
        result.episode_ids = store.finished_keys(phase, round)
        return result

    # ------------------------------------------------------------------ one episode

    def _play(self, card: TaskCard, attempt: int, round: int | None, phase: str, device: Device,
              stop: threading.Event | None = None) -> Trajectory:
        seed = episode_seed(self.settings.run_seed, card.key, attempt, round)
        episode_id = self._start(card, attempt, round, phase, getattr(device, "serial", None))

        def on_step(i: int, rec: StepRecord) -> None:
            self._record(episode_id, i, rec)
            if stop is not None and stop.is_set():  # the episode stays "running": a resume replays it
                raise Stopped(f"episode {episode_id} stopped at step {i}")

        traj = play_episode(device, self.policy, self.scorer, self.settings, self.app_names, card, attempt, round,
                            seed, on_step=on_step)
        traj.episode_id = episode_id
        self._finish(traj)
        return traj

    def _store_played(self, traj: Trajectory, phase: str, device: str | None) -> Trajectory:
        """Store an episode a host played (steps, screenshots, outcome) as `_play` stores its own."""
        traj.episode_id = self._start(traj.card, traj.attempt, traj.round, phase, device)
        for i, rec in enumerate(traj.steps):
            self._record(traj.episode_id, i, rec)
        self._finish(traj)
        return traj

    def _start(self, card: TaskCard, attempt: int, round: int | None, phase: str, device: str | None) -> int:
        return self.store.start_episode(key=card.key, attempt=attempt, task=card.task or card.source, app=card.app,
                                        goal=card.goal, seed=card.seed, policy=self.policy.name, device=device,
                                        phase=phase, round=round, adapter=self.adapter, source=card.source)

    def _record(self, episode_id: int, i: int, rec: StepRecord) -> None:
        d = rec.decision
        self.store.add_step(episode_id, i, action=rec.action, screenshot=rec.obs.screenshot, package=rec.obs.package,
                            elements=rec.obs.describe_elements(), element=rec.info.element, invalid=rec.info.invalid,
                            error=rec.info.error, raw_output=d.raw_output, seconds=rec.info.seconds,
                            history=d.history, token_ids=d.token_ids, logprobs=d.logprobs,
                            tree_xml=rec.obs.tree.to_xml() if self.settings.store_trees else None)

    def _finish(self, traj: Trajectory) -> None:
        assert traj.episode_id is not None
        if traj.infra_error:
            self.store.finish_episode(traj.episode_id, status="infra_error", steps=len(traj.steps),
                                      invalid_steps=traj.n_invalid, error=traj.error)
        else:
            if traj.final_obs is not None:
                final = traj.final_obs
                self.store.add_final(traj.episode_id, len(traj.steps), screenshot=final.screenshot, package=final.package,
                                     tree_xml=final.tree.to_xml() if self.settings.store_trees else None)
            extra = self.annotate(traj) if self.annotate is not None and traj.steps else {}
            self.store.finish_episode(traj.episode_id, status="finished", steps=len(traj.steps),
                                      invalid_steps=traj.n_invalid, declared=traj.declared, answer=traj.answer,
                                      success=traj.score, **extra)


def play_episode(device: Device, policy: Policy, scorer: Scorer | None, settings: RolloutSettings,
                 app_names: Mapping[str, str], card: TaskCard, attempt: int, round: int | None, seed: int, *,
                 on_step: Callable[[int, StepRecord], None] | None = None) -> Trajectory:
    """One episode on `device`, scored there while it shows the final state (a scorer's
    DeviceError makes it an infra error); the runner and the Ray device hosts both play this way."""
    env_device = GuardedDevice(device) if settings.guard else device
    env = AndroidEnv(env_device, app_names=dict(app_names), settle_seconds=settings.settle_seconds)
    traj = run_episode(env, policy.start(card, seed), card, attempt=attempt, round=round, seed=seed, on_step=on_step)
    if not traj.infra_error and scorer is not None:
        try:
            traj.score = scorer(card, traj, device)
        except DeviceError as e:
            traj.infra_error, traj.error = True, f"scoring failed: {e}"
    return traj


def _lazy(image: Image.Image) -> Image.Image:
    """The screenshot encoded as PNG and held that way until its pixels are asked for."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    return png_screenshot(buf.getvalue())


def fresh_pixels(obs: Observation) -> Observation:
    """A copy of a compacted observation whose screenshot decodes into a new image (dropped
    after use), so decoding for training never pins the whole round's pixels in memory."""
    png = obs.screenshot.info.get(PNG_INFO)
    if png is None:
        return obs
    return Observation(Image.open(io.BytesIO(png)), obs.tree, obs.elements, obs.package, obs.step)


def compact_obs(obs: Observation) -> Observation:
    """The observation with its screenshot held compressed until used."""
    return Observation(_lazy(obs.screenshot), obs.tree, obs.elements, obs.package, obs.step)


def compact(traj: Trajectory) -> Trajectory:
    """The trajectory with every screenshot held compressed until used."""
    traj.steps = [StepRecord(compact_obs(s.obs), s.decision, s.info) for s in traj.steps]
    if traj.final_obs is not None:
        traj.final_obs = compact_obs(traj.final_obs)
    return traj


def load_trajectory(store: RunStore, episode_id: int, card: TaskCard) -> Trajectory:
    """Rebuild a finished episode from the run store (observations from the saved screenshots
    and UI trees, decisions with their tokens and behaviour log-probs), e.g. after a resume.
    Screenshots stay the stored PNG bytes, as a played round holds them: a pool of rebuilt
    positives (hundreds of steps) would otherwise pin ~3.4 MB of pixels per step."""
    row = store.episode(episode_id)
    steps = []
    for s in store.steps(episode_id):
        obs = store.load_observation(episode_id, s["step"], compressed=True)
        decision = Decision(from_dict(s["action"]), s["raw_output"], tuple(s["token_ids"] or ()),
                            tuple(s["logprobs"] or ()), tuple(s["history"] or ()))
        info = StepInfo(decision.action, None, bool(s["invalid"]), s["error"], False, s["seconds"] or 0.0)
        steps.append(StepRecord(obs, decision, info))
    final = store.load_final(episode_id, compressed=True)
    if final is None:  # a folder written before the final screen was stored: the last one seen
        final = steps[-1].obs if steps else None
    return Trajectory(card, attempt=row.attempt, round=row.round, steps=steps, final_obs=final,
                      declared=row.declared, answer=row.answer, episode_id=episode_id, score=row.success)
