"""Oracles that need no LLM, run on the launches a passing test made.

- determinism: the same launch on the same bytes, run twice, leaves the same bytes (not checked
  when the unit's text uses atomics: their float additions legitimately change order);
- instantiations_agree: where the kernel has a float and a double instantiation whose parameters
  differ only float <-> double, the launch run on the other one with the same values converted
  gives the same floating outputs within tolerance and the same integer outputs;
- half_vs_float / bf16_vs_float: where the kernel has a half (bfloat16) instantiation and a float one
  whose parameters differ only half (bfloat16) <-> float, both run the launch on the same values
  (the float side's inputs rounded to the reduced type first) and the reduced run's floating
  outputs must agree with the float run's within an error model (MODEL below): what rounding to the
  reduced type can explain, measured per element by rerunning the float kernel on inputs perturbed
  by one unit roundoff of the reduced type. Only what no rounding explains fails: a non-finite
  value where float is finite (overflow), or more than a few elements beyond the model. The
  measured error (max, median and 99th percentile, absolute and in ULPs of the reduced type) is
  recorded in every entry.

How: while a test runs, a launch hook (harness.set_launch_hook) records the first launches of each
unit: grid, block, shared memory and, for every tensor argument, a copy of its whole storage taken
just before the launch, on the launch's stream. Once the test has passed (the plugin's
pytest_runtest_call, last), each recorded launch is replayed on fresh copies of those bytes: a
pointer keeps its byte offset inside its storage and arguments that share a storage share the copy,
so views and in-place kernels replay exactly. Launches with pointers passed as raw addresses, or with
struct arguments (which may hold pointers), cannot be replayed and are reported as skipped.

Works for any kernel that has tests, whatever the test does: nothing here knows the kernel.

One module per job, in the order a test's launches go through them:
  capture      launches recorded while a test runs (hook, storage copies, Recorder)
  pairs        instantiation pairs that differ only in a floating type; partner lookup
  replay       a recorded launch replayed on fresh bytes; element-wise comparison of two runs
  determinism  the determinism oracle
  agreement    the instantiations_agree oracle (float vs double)
  error_model  the reduced-precision error model: roundoff, ULPs, perturbations, statistics
  reduced      the half_vs_float and bf16_vs_float oracles
  record       run every oracle on a test's launches; summarize into the validation record
"""

from miner.validate.oracles.agreement import ATOL_SCALE, MAX_MISMATCH, RTOL, check_agreement
from miner.validate.oracles.capture import MAX_BYTES, PER_TEST, PER_UNIT, ArgRef, Buffer, Launch, Recorder, capture
from miner.validate.oracles.determinism import check_determinism
from miner.validate.oracles.error_model import (
    MODEL,
    PERTURBATIONS,
    STATS_SAMPLE,
    UNIT_ROUNDOFF,
    compare_reduced,
    error_stats,
    explained,
    ulps,
)
from miner.validate.oracles.pairs import find_partner, is_pair
from miner.validate.oracles.record import KEPT, ORACLES, failure_message, run, summarize
from miner.validate.oracles.reduced import (
    REDUCED_ORACLE,
    check_reduced,
    find_reduced_partners,
    reduced_kind,
    round_scalar,
)
from miner.validate.oracles.replay import replay

__all__ = [
    "ATOL_SCALE", "ArgRef", "Buffer", "KEPT", "Launch", "MAX_BYTES", "MAX_MISMATCH", "MODEL", "ORACLES",
    "PERTURBATIONS", "PER_TEST", "PER_UNIT", "REDUCED_ORACLE", "RTOL", "Recorder", "STATS_SAMPLE", "UNIT_ROUNDOFF",
    "capture", "check_agreement", "check_determinism", "check_reduced", "compare_reduced", "error_stats",
    "explained", "failure_message", "find_partner", "find_reduced_partners", "is_pair", "reduced_kind", "replay",
    "round_scalar", "run", "summarize", "ulps",
]
