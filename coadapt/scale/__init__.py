"""Scale-out on Ray: device-host actors that play whole episodes and a policy server that batches generation.

Nothing outside this package imports ray; `coadapt.scale.cluster.ray_hosts` is the one entry point
the commands use (`--ray`, `--ray-address`). Install the extra with `pip install 'coadapt[ray]'`.
"""

from .cluster import RaySettings, ray_hosts

__all__ = ["RaySettings", "ray_hosts"]
