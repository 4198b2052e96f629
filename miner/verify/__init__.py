"""Verify stage: proof, without a GPU or an LLM, that a unit compiles to the same kernel as the original.

For each built instantiation, the original translation unit (with its real includes: the repo's
headers, the CUDA toolkit, torch's headers where the code includes torch) and the unit are compiled
to PTX with the same target; the kernel's `.entry` and what it reaches are compared after a
normalization that removes only position-dependent naming. Result per instantiation in
metadata `fidelity`: identical | differs | original_unbuildable | unit_unbuildable.

Parts, in the order a run uses them:
  original  where the original TU is, how its project compiles it, the wrapper for explicit instantiations
  store     content-addressed PTX compiles (cached by source, reached headers, flags, tool versions)
  ptx       PTX parsed, one kernel's listing cut out and normalized, first difference
  driver    the dataset-level stage: group by TU, sample, compile in parallel, judge, record metadata
"""
