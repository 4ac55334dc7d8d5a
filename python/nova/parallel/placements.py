"""How a tensor is laid out along one mesh axis (:mod:`nova.runtime.mesh`, which
programs carry as data)."""

from nova.runtime.mesh import Partial, Placement, Replicate, Shard

__all__ = ["Partial", "Placement", "Replicate", "Shard"]
