"""A small convolutional network (conv2d + ReLU + pooling-free head)."""
from __future__ import annotations

import torch
from torch import nn


class SmallCNN(nn.Module):
    def __init__(self, in_channels: int = 3, classes: int = 10, size: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 8, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, stride=2, padding=1)
        self.head = nn.Linear(16 * (size // 2) * (size // 2), classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.head(x.flatten(1))
