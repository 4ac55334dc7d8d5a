"""nova.compile's keywords: Nova's options, the model's keyword inputs, and an
error naming the valid options for anything else."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

import nova
from nova.api import COMPILE_OPTIONS
from nova.compiler.errors import NovaOptionError


class Scaled(nn.Module):
    def forward(self, x, scale=None):
        return x * 2 if scale is None else x * scale


class OpenEnded(nn.Module):
    def forward(self, x, **kwargs):
        return x + kwargs["bias"] if "bias" in kwargs else x


def test_the_option_list_is_compiles_signature():
    keyword_only = [p.name for p in inspect.signature(nova.compile).parameters.values()
                    if p.kind is p.KEYWORD_ONLY]
    assert sorted(keyword_only) == sorted(COMPILE_OPTIONS)


def test_a_misspelt_option_is_an_error_naming_the_options():
    with pytest.raises(NovaOptionError) as info:
        nova.compile(Scaled(), torch.randn(3), tragte="nova-t1")
    message = str(info.value)
    assert "'tragte'" in message and "did you mean target=?" in message
    assert "target, tile_search" in message and "(x, scale)" in message
    assert isinstance(info.value, nova.NovaModelCompileError)


def test_a_misspelt_option_is_refused_even_when_the_forward_takes_kwargs():
    with pytest.raises(NovaOptionError, match="did you mean dump_dir="):
        nova.compile(OpenEnded(), torch.randn(3), dumpdir="out")


def test_keyword_inputs_of_the_forward_reach_the_model():
    x, scale, bias = torch.randn(3), torch.randn(3), torch.randn(3)
    program = nova.compile(Scaled(), x, scale=scale)
    torch.testing.assert_close(program(x, scale=scale), x * scale, rtol=1e-4, atol=1e-5)
    program = nova.compile(OpenEnded(), x, bias=bias)
    torch.testing.assert_close(program(x, bias=bias), x + bias, rtol=1e-4, atol=1e-5)


def test_a_functions_keywords_are_checked_against_the_function():
    with pytest.raises(NovaOptionError, match="'chip'"):
        nova.compile(lambda a: a + 1, torch.randn(2), chip=1)
