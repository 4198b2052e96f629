/* kernel-miner parse shim */
#include "hip_runtime.h"
