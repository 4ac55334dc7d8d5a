"""PyTorch -> linalg-on-tensors import (torch.export + torch-mlir)."""
from nova.frontend.errors import NovaExportError
from nova.frontend.export import ImportedProgram, import_model
from nova.frontend.signature import TensorSpec

__all__ = ["ImportedProgram", "NovaExportError", "TensorSpec", "import_model"]
