"""Scale-out on Ray: a local 2-node cluster runs eval and adapt as in-process runs do, and a killed
device host loses no episode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("torch")

from coadapt.config import DeviceSettings  # noqa: E402
from coadapt.evaluation import run_suite, suite_tasks  # noqa: E402
from coadapt.policy.baselines import OraclePolicy  # noqa: E402
from coadapt.runs import RunStore  # noqa: E402
from coadapt.scale import RaySettings, ray_hosts  # noqa: E402
from coadapt.scale.cluster import DEVICE_RESOURCE  # noqa: E402
from coadapt.tasks.suite import Suite  # noqa: E402

pytestmark = pytest.mark.slow

TINY_ADAPT = """\
model: {threads: 1}
adapt: {rounds: 1, instances_per_template: 1, group_size: 2, horizon: [3], eval_instances: 1, epochs: 1,
        batch_size: 8, max_minutes: 5, explore_steps: 40, explore_runs: 1, proposals: 3, consolidate: 0}
"""


@pytest.fixture(scope="module")
def cluster():
    """Two Ray nodes on this machine, each running 2 devices; the test process is connected."""
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {DEVICE_RESOURCE: 2},
                                                      "include_dashboard": False})
    c.add_node(num_cpus=1, resources={DEVICE_RESOURCE: 2})
    ray.init(address=c.address, logging_level="WARNING", log_to_driver=False)
    yield c.address
    ray.shutdown()
    c.shutdown()


def cli(*args: str, address: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    if address:
        env["RAY_ADDRESS"] = address
    r = subprocess.run([sys.executable, "-m", "coadapt.cli", *args], capture_output=True, text=True, env=env,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def episodes(folder: Path, phase: str = "eval") -> dict:
    """(key, attempt) -> what happened, for every finished episode of a phase."""
    store = RunStore.open_readonly(folder)
    out = {(e.key, e.attempt, e.round): (e.success, e.declared, e.steps,
                                         [s["action"] for s in store.steps(e.id)])
           for e in store.episodes(phase=phase) if e.status == "finished"}
    store.close()
    return out


def shape(x):
    """The structure of a report: keys and value types, not values."""
    if isinstance(x, dict):
        return {k: shape(v) for k, v in x.items()}
    if isinstance(x, list):
        return [shape(v) for v in x[:1]]
    return "number" if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__


def close(a, b) -> bool:
    """Equal, numbers up to float summation order (episodes finish in another order on Ray)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


def test_smoke_eval_on_ray_equals_the_in_process_run(cluster, tmp_path):
    cli("eval", "--suite", "smoke", "--threads", "1", "--out", str(tmp_path / "local"))
    r = cli("eval", "--suite", "smoke", "--threads", "1", "--ray", "--out", str(tmp_path / "ray"), address=cluster)
    assert "ray: 2 device host(s)" in r.stdout
    local, remote = episodes(tmp_path / "local"), episodes(tmp_path / "ray")
    assert len(local) == 12 and remote == local  # greedy: every action of every episode is the same
    a, b = (json.loads((tmp_path / d / "report.json").read_text()) for d in ("local", "ray"))
    assert b["success_rate"] == a["success_rate"] and b["infra_errors"] == 0
    assert {e.device for e in RunStore.open_readonly(tmp_path / "ray").episodes()} == {"sim-0", "sim-1"}


def test_one_round_adapt_on_ray_matches_the_in_process_report(cluster, tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_ADAPT)
    common = ("adapt", "--app", "com.example.todo", "--config", str(config))
    cli(*common, "--out", str(tmp_path / "local"))
    cli(*common, "--ray", "--out", str(tmp_path / "ray"), address=cluster)
    a, b = (json.loads((tmp_path / d / "report.json").read_text()) for d in ("local", "ray"))
    assert shape(b) == shape(a)
    assert close(b["base"], a["base"])  # greedy, before any update
    assert len(b["rounds"]) == 1 and b["rounds"][0]["infra_errors"] == 0
    assert (tmp_path / "ray" / "adapter" / "adapter_config.json").is_file()
    assert (tmp_path / "ray" / "explore" / "utg.json").read_text() == (tmp_path / "local" / "explore" / "utg.json").read_text()
    # the rollouts ran on the hosts, the checks and the adapted eval with the weights published
    # to the policy server after the update: the same episodes as in-process
    for phase in ("adapt", "adapt_check", "eval_adapted"):
        assert episodes(tmp_path / "ray", phase) == episodes(tmp_path / "local", phase), phase
    assert close(b["adapted"], a["adapted"])


@pytest.mark.parametrize("kill", ["process", "actor"])
def test_a_killed_device_host_loses_no_episode(cluster, tmp_path, kill):
    suite = Suite.load("smoke")
    _, templates = suite_tasks(suite)
    store = RunStore(tmp_path / "run")
    killed: list[int] = []
    with ray_hosts(RaySettings(), DeviceSettings(workers=4)) as hosts:
        pids = hosts.pids()
        assert len(pids) == 4 and len({st.node for st in hosts.status()}) == 2  # spread over both nodes

        def progress(event: str, data: dict) -> None:
            busy = [i for i, n in hosts.in_flight.items() if n > 0]
            if event == "episode" and not killed and busy:
                killed.append(busy[0])
                if kill == "process":  # the host's process dies mid-episode
                    os.kill(pids[busy[0]], signal.SIGKILL)
                else:  # Ray kills the actor (and may restart it)
                    ray.kill(hosts.hosts[busy[0]], no_restart=False)

        report = run_suite(suite, OraclePolicy(templates), None, store, templates=templates, progress=progress,
                           hosts=hosts)
        assert killed and hosts.pids().get(killed[0]) not in (None, pids[killed[0]])  # Ray restarted it
    assert report["n_episodes"] == 12 and report["lost_instances"] == []
    assert report["success_rate"] == 1.0
    assert report["infra_errors"] >= 1
    lost = [e for e in store.episodes() if e.status == "infra_error"]
    assert lost and all("died" in (e.error or "") for e in lost)
    store.close()
