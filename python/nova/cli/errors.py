"""Exceptions of the ``nova`` command line; ``main`` prints them as one line."""

from __future__ import annotations

from nova.errors import NovaError


class CliError(NovaError):
    """A command-line argument or a file named on the command line is unusable."""


class ModelFileError(CliError):
    """A ``nova compile`` model file is missing, fails to run or breaks the contract."""


class ProgramFileError(CliError):
    """A ``.novaprog`` / ``.nova`` file is missing or not a valid Nova program."""


class InputsFileError(CliError):
    """An ``--inputs`` ``.npz`` file does not match the program's inputs."""
