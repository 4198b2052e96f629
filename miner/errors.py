"""Errors that end in one clean line on stderr and a defined exit code."""


class MinerError(Exception):
    """Base class: carries the exit code the CLI returns."""

    exit_code = 1


class UsageError(MinerError):
    """Bad arguments or configuration: nothing could be done (exit 2)."""

    exit_code = 2


class InputError(MinerError):
    """One input could not be processed; others may still be (exit 1)."""

    exit_code = 1


class BuildError(MinerError, RuntimeError):
    """A unit did not compile: nvcc missing, failed or past its time limit.

    Also a RuntimeError, as it was when the harness raised it from its own nvcc call."""

    exit_code = 1
