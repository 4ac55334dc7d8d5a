"""A logical mesh of chips: a shape and one name per axis (:class:`nova.runtime.mesh.Mesh`,
which programs carry as data)."""

from nova.runtime.mesh import Mesh

__all__ = ["Mesh"]
