"""Source stage: what the repository is, before any parsing.

  discover       inputs to SourceFile records (file kinds, skipped folders, text checks)
  include_graph  `#include` lines resolved inside the project; which translation units reach a header
  compile_db     compile_commands.json: per-file defines and include paths
  context        project-wide parse context (include dirs, defines, the files a header needs first)
  provenance     git remote, commit and SPDX license of the kernel's repository
  missing_headers  build values that switch a conditional off a header found nowhere (`OPENFST_VER=10800`)
  cmake_version  CMake conditions on the CUDA toolkit's version, decided for the installed nvcc
  qualifier_macros  kernel qualifier macros nothing defines (`GLOBALQUALIFIER void k(`), told by the launches, and
                    those one framework branch defines as __global__ (`#ifdef CUDA`), with that branch's switch
"""
