/* kernel-miner parse shim */
#include <nvtx3/nvToolsExt.h>
