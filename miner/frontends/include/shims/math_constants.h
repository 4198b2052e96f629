/* kernel-miner parse shim: declarations live in km_cuda_parse.h; the constants are the installed toolkit's own
 * math_constants.h (config.toolkit_math_constants_header), a header of macros that parses as it is. The stub's
 * few stand-ins are dropped first so the toolkit's spellings (`__int_as_float(0x7f800000U)`) win silently. */
#include "cuda_fp16.h"
#include "cuda_bf16.h"
#ifdef KM_TOOLKIT_MATH_CONSTANTS_H
#undef CUDART_INF_F
#undef CUDART_INF
#undef CUDART_NAN_F
#undef CUDART_NAN
#undef CUDART_PI_F
#undef CUDART_PI
#undef CUDART_SQRT_2PI_F
#undef CUDART_MIN_DENORM_F
#include KM_TOOLKIT_MATH_CONSTANTS_H
#endif
