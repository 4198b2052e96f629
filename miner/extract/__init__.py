"""The extract command's pipeline: source → frontends → units → dataset, per-file failure isolation.

Modules, one job each:
  options    `ExtractOptions` (what the command takes), `ExtractReport` (what it gives back)
  pipeline   `extract`: Triton and CUDA/HIP inputs, then the CUDA/HIP stages
  stages     those stages as a named list with gates over one context (`STAGES`, `CudaRun`): discover,
             project context, configure, parse, hip variants, write; `--no-units` is the `units` gate
  parse      translation units parsed in worker processes through the parse cache, tree-sitter beside
             them, kernels of inactive #if branches parsed again in their configuration
  unit_data  the workers' closures, launches and explicit instantiations merged across translation units
  metadata   a kernel's metadata before the units stage (source, signature, parse context, build flags)
  cache      what a rerun reuses: kernel folders and tree-sitter results by content
  run_record a whole run keyed by everything it reads, checked against what it wrote: an unchanged rerun
             into the same folder returns the recorded report without running the stages
  run_inputs that key: every file under the folders a run may read (content hashes, stat-cached), the git
             state, the options and the environment the stages consult
  build_record `extract --build` as a whole: the run record's key plus the build's inputs (--arch, nvcc, the
             CUDA library wheels), every file of each kernel folder checked: an unchanged rerun compiles nothing
"""

from miner.extract.options import FRONTENDS, LANGUAGES, ExtractOptions, ExtractReport
from miner.extract.pipeline import extract

__all__ = ["FRONTENDS", "LANGUAGES", "ExtractOptions", "ExtractReport", "extract"]
