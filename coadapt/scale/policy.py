"""The policy as a Ray actor: one server per GPU (or CPU) batches the generation requests of every host."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from coadapt.policy.episode_agent import Request, VLMAgent
from coadapt.rollout.cards import TaskCard

from .wire import WireInput

if TYPE_CHECKING:
    from coadapt.policy.agent import VLMAgentPolicy
    from coadapt.policy.model import Generation


@dataclass(frozen=True)
class ServerSpec:
    """How a policy server loads its model: the base model only (the adapter is published to it)."""

    model: str
    """"default" (the bundled tiny VLM) or a model folder / hub id reachable from the server's node."""
    device: str = "cpu"
    """cpu or cuda."""
    dtype: str = "auto"
    threads: int | None = None
    """torch CPU threads of the server (None: torch's choice)."""


class PolicyServer:
    """Holds the model and answers one generation request per call; calls that arrive together
    (from many hosts' threads, the actor being threaded) share a forward pass through the same
    `Batcher` the in-process policy uses, so batching is as across local workers."""

    def __init__(self, spec: ServerSpec):
        from coadapt.policy.agent import load_policy

        if spec.threads is not None:
            import torch

            torch.set_num_threads(spec.threads)
        self.agents = load_policy(spec.model, device=spec.device, dtype=spec.dtype)
        self.version: str | None = None

    def generate(self, request: WireInput, seed: int) -> "Generation":
        """One decision: the model's answer to `request`, sampled with the step's `seed`."""
        return self.agents.batcher((request.policy_input(), seed))

    def configure(self, config: dict[str, Any]) -> None:
        """Sample as the driver's policy does now (temperature, top_p, prompt settings)."""
        from coadapt.policy.model import PolicyConfig

        policy = self.agents.policy
        with policy.lock:
            policy.config = PolicyConfig.from_dict(config)

    def publish(self, version: str, lora: Any, state: Mapping[str, Any]) -> None:
        """Load the learner's LoRA weights (`state`, resolved from one object reference shared by
        every server), adding an adapter of the same shape (`lora`, a peft LoraConfig) first if
        this server has none yet."""
        policy = self.agents.policy
        with policy.lock:
            if not policy.has_adapter:
                from peft import get_peft_model

                policy.model = get_peft_model(policy.model, lora)
            policy.model.eval()  # no adapter dropout while serving
            policy.load_adapter_state(dict(state))
        self.version = version

    def stats(self) -> dict[str, Any]:
        import os

        return {"pid": os.getpid(), "batches": self.agents.batcher.batches, "requests": self.agents.batcher.items,
                "adapter_version": self.version}


def remote_generate(server: Any) -> Callable[[Request], Generation]:
    """Generation by a policy server, for the same `VLMAgent` the in-process policy starts, so an
    episode reproduces wherever it runs."""
    import ray

    def generate(request: Request) -> Generation:
        inp, seed = request
        return ray.get(server.generate.remote(WireInput.of(inp), seed))

    return generate


@dataclass(frozen=True)
class RemotePolicy:
    """The driver's model policy as the hosts see it: a name, the servers, the exploration memory.
    Episodes are spread over the servers by their seed."""

    name: str
    servers: tuple[Any, ...]
    memory: Mapping[str, str]

    def start(self, card: TaskCard, seed: int) -> VLMAgent:
        return VLMAgent(remote_generate(self.servers[seed % len(self.servers)]), card.goal, seed,
                        self.memory.get(card.app, ""))


def adapter_digest(state: Mapping[str, Any]) -> str:
    """A fingerprint of LoRA weights, to publish only what changed."""
    h = hashlib.blake2b(digest_size=16)
    for name in sorted(state):
        h.update(name.encode())
        h.update(state[name].detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class Publisher:
    """Keeps the servers' sampling settings and adapter weights equal to the driver's policy:
    called before each batch of episodes (every `run`), it sends only what changed."""

    def __init__(self, servers: list[Any]):
        self.servers = servers
        self.config: dict[str, Any] | None = None
        self.version: str | None = None
        self.published = 0
        """How many times weights were sent."""

    def sync(self, agents: "VLMAgentPolicy") -> None:
        import ray

        policy = agents.policy
        with policy.lock:
            config = policy.config.to_dict()
            state = policy.adapter_state() if policy.has_adapter else {}
            lora = policy.model.peft_config["default"] if state else None
        calls = []
        if config != self.config:
            calls += [s.configure.remote(config) for s in self.servers]
            self.config = config
        if state:
            version = adapter_digest(state)
            if version != self.version:
                ref = ray.put({n: t.detach().cpu() for n, t in state.items()})  # one copy, read by every server
                calls += [s.publish.remote(version, lora, ref) for s in self.servers]
                self.version = version
                self.published += 1
        ray.get(calls)
