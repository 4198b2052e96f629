"""Errors that end in one clean line on stderr and a defined exit code.

Every error the miner raises on purpose is a MinerError: its class fixes the exit code (`exit_code`)
and says what to do about it (`HINT`, listed in `kernel-miner --help` by `exit_code_table`). An
instance may carry a specific hint too (`hint=`), which the command line appends to its one line.
Errors a stage records per item (a unit that does not build, an LLM request or an enrich stage that
fails for one kernel) have their own codes for the day one ends a command; a run that recorded them
still exits 1, "some inputs failed".
"""

from __future__ import annotations


class MinerError(Exception):
    """Base class: carries the exit code the CLI returns."""

    exit_code = 1
    MEANING = ""
    HINT = ""

    def __init__(self, message: str = "", *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def line(self) -> str:
        """The one line on stderr after `kernel-miner: error: `."""
        return f"{self}; {self.hint}" if self.hint else str(self)


class InputError(MinerError):
    """One input could not be processed; others may still be (exit 1)."""

    exit_code = 1
    MEANING = "some inputs failed, the others were processed"
    HINT = "the per-item error lines and the metadata name each failed input and why"


class UsageError(MinerError):
    """Bad arguments or configuration: nothing could be done (exit 2)."""

    exit_code = 2
    MEANING = "usage or configuration error: nothing was done"
    HINT = "see `kernel-miner COMMAND --help`"


class NothingToDo(MinerError):
    """The run selected nothing to work on: no kernel folders, --kernels matched none, nothing built yet
    (exit 3). Not a failure of any input, so scripts can tell it from exit 1."""

    exit_code = 3
    MEANING = "nothing to do: no kernel was selected or nothing is ready for this stage"
    HINT = "check the dataset path and --kernels, or run the stage before this one"


class BuildError(MinerError, RuntimeError):
    """A unit did not compile: nvcc missing, failed or past its time limit (exit 4).

    Also a RuntimeError, as it was when the harness raised it from its own nvcc call."""

    exit_code = 4
    MEANING = "a unit did not compile"
    HINT = "units/<inst>/build.log holds the compiler's output; `kernel-miner triage` writes a repro.sh"


class LLMError(MinerError):
    """A model request failed for good, after retries or on a non-retryable status (exit 5); the message
    is redacted."""

    exit_code = 5
    MEANING = "a model request failed for good"
    HINT = "check --base-url, --model and the API key; enrich records the error per kernel and stage"


class StageFailure(MinerError):
    """One kernel's enrich stage failed (an unusable answer, a failed check); recorded, never fatal to the
    run (exit 6)."""

    exit_code = 6
    MEANING = "an enrich stage failed for a kernel"
    HINT = "enrich/record.json of the kernel holds the error; --force reruns the stage"

    def __init__(self, message: str, meta: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.meta = meta or {}


INTERRUPTED = 130
# Not an error: validate ran, nothing failed, but some kernel's tests did not run (no CUDA GPU, no tests), so
# nothing about it was verified. A code of its own, so that `validate && publish` does not take it for success.
NOT_VERIFIED = 7


def exit_code_table() -> str:
    """The exit codes, one line each, for --help and the README."""
    rows = [(0, "all good", "")]
    tree = (InputError, UsageError, NothingToDo, BuildError, LLMError, StageFailure)
    rows += [(cls.exit_code, cls.MEANING, cls.HINT) for cls in tree]
    rows.append((NOT_VERIFIED, "validate: nothing failed, but some kernel was skipped (its tests did not run)",
                 "run on a machine with a CUDA GPU; a kernel without tests needs some (enrich writes them)"))
    rows.append((INTERRUPTED, "interrupted (Ctrl-C, SIGTERM); results recorded so far are kept", ""))
    return "\n".join(f"  {code:>3}  {what}" + (f"\n       ({hint})" if hint else "") for code, what, hint in rows)
