/* kernel-miner parse shim: declarations live in km_cuda_parse.h */
#include "cuda_runtime.h"
