/* kernel-miner parse shim: cudaProfilerStart/Stop are declared in km_cuda_parse.h */
