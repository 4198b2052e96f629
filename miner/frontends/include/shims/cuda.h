/* kernel-miner parse shim: the runtime's declarations live in km_cuda_parse.h; the driver API is the installed
 * toolkit's own cuda.h (config.toolkit_driver_header), a plain C header that parses as it is. */
#include "cuda_runtime.h"
#ifdef KM_TOOLKIT_CUDA_H
#include KM_TOOLKIT_CUDA_H
#endif
