/* kernel-miner parse shim: declarations live in km_cuda_parse.h */
#include "cuda_fp16.h"
#include "cuda_bf16.h"
