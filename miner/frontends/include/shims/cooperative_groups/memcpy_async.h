/* kernel-miner parse shim */
#include <cooperative_groups.h>
