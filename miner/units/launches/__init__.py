"""Launch sites and kernel references: `<<<...>>>`, cudaLaunchKernel*, hipLaunchKernelGGL, (void*) tables,
function pointers, and every other place a kernel is named with template arguments.

Besides launches, `find` returns *references*: a kernel named with template arguments outside a launch
(`spec = {(void*)k<T, 1, 24>, ...}`, `auto f = k<float, 256>;`, a file-scope table). Each is a `Launch`
with kind `reference` and an empty configuration; they fix instantiations even when the launch itself
goes through a pointer we cannot follow.

Template arguments that depend on an enclosing host function template are resolved through the host
call graph, as many levels up as it takes (A<T> calls B<T, 4>, which launches k<T, N>): every concrete
instantiation of a host template (calls with resolved arguments, `template R f<double>(...)` lines,
AT_DISPATCH lambdas) is pushed down through the dependent calls it makes until nothing changes.

The search is split by job (each module's docstring says more), roughly in the order `find` uses them:
  record      the Launch record; cursor kinds and patterns shared by the parts
  text        source text: tokens, template argument lists as written, macro expansion
  cursors     declarations behind references, template parameters/arguments, aliases, constant resolver
  state       one TU's search state; kernel keys, kernels named by an expression, written arguments
  tables      reference tables: definitions, class template instances, partial specializations, references
  host_chain  host-template chains: dependent calls, lambda dispatch lists, call-graph fixed point
  overload_fit  which overload of a host template a dependent call can reach, by its arguments' types
  finish      template arguments finished per host instantiation, conditional_t folded, defaults
  values      value folding: configuration values, constant branches
  dataflow    argument data flow: the kernel behind variables, assignments, struct members
  sites       launch sites: <<<>>> and the launch APIs, template arguments deduced from argument types
  deduced     explicit host instantiations whose arguments are deduced (`template R<float> f(...);`)
  functors    `__device__` lambdas passed to launching host templates, as functor structs; deduced calls
  helpers     the project's launch helpers (functions and launcher objects that launch a parameter)
  chosen      launches of a kernel pointer a function chose (`cudaLaunchKernel(pick<T>(p), ...)`), matched
              across translation units to the references inside the chooser
  stored      a kernel a method or constructor stores in a member that another function launches: the storing
              call is the launch (`obj.create("k", (const void *)&k)`, `props<F> p(k<P>, 128)`)
  typed_pointers  a `<<<>>>` through a function-pointer typedef's variable: the kernels the TU stores in that type
  macro_sites a launch through a project macro whose body holds the `<<<>>>`, read from its expansion where the parse
              has none (recovered calls it; also a definition in an `#if` branch the parse's configuration skips)
  walk        the walk over a translation unit and `find`, the entry point
"""

from miner.units.launches.functors import functors, redeclared
from miner.units.launches.record import MAX_HOST_INSTANTIATIONS, Launch
from miner.units.launches.text import expand_macros, substitute
from miner.units.launches.walk import find

__all__ = [
    "Launch", "MAX_HOST_INSTANTIATIONS", "expand_macros", "find", "functors", "redeclared", "substitute",
]
