/* kernel-miner parse shim */
#include "hip_runtime.h"
#include "../cooperative_groups.h"
