"""Units stage: from a parsed kernel to standalone, compilable units and their metadata.

  analysis        what the parse worker runs on the live TU (passed into the clang frontend as a callable)
  records         the typed records the analysis hands back: closures, launches, explicit instantiations
  closure         the declarations, macros and includes a kernel needs (its dependency closure)
  launches        launch sites, their argument data flow, host-template chains and reference tables
  instantiations  which template arguments to instantiate the kernel with, and where each came from
  weak_args       why a template kernel's arguments are only defaults, where the sources hold none
  macro_text      the project's macros expanded in text, to read the template lines they write
  render          unit.cu / host_wrapper.cu written from templates/ for each instantiation
  assemble        one kernel's closure, launches and instantiations into metadata blocks and units
"""
