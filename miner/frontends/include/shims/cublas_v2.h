/* kernel-miner parse shim */
#include <cublas_api.h>
