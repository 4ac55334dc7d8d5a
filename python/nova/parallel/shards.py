"""Per-chip pieces of a tensor placed on a mesh (:mod:`nova.runtime.splits`, which
programs use to split and reassemble their tensors)."""

from nova.runtime.splits import MeshSplit, assemble, local_shard

__all__ = ["MeshSplit", "assemble", "local_shard"]
