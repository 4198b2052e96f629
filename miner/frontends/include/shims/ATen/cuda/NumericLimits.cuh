/* kernel-miner parse shim */
#include <km_torch_parse.h>
