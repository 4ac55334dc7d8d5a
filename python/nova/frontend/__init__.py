"""PyTorch -> linalg-on-tensors import (torch.export + torch-mlir)."""
from nova.frontend.export import ImportedProgram, TensorSpec, import_model

__all__ = ["ImportedProgram", "TensorSpec", "import_model"]
