/* kernel-miner parse shim for the toolkit's cuComplex.h: declarations only, for libclang (the parse does not
 * see the toolkit's headers), so the closure sees where `cuFloatComplex` and `cuCmulf` come from; a unit keeps
 * `#include <cuComplex.h>` and nvcc finds the real one. */
#ifndef KM_CUCOMPLEX_H
#define KM_CUCOMPLEX_H
typedef float2 cuFloatComplex;
typedef double2 cuDoubleComplex;
typedef cuFloatComplex cuComplex;
#define KM_CUCOMPLEX_F(T, R, suffix)                                                               \
  __host__ __device__ static __inline__ R cuCreal##suffix(T x);                                    \
  __host__ __device__ static __inline__ R cuCimag##suffix(T x);                                    \
  __host__ __device__ static __inline__ T cuConj##suffix(T x);                                     \
  __host__ __device__ static __inline__ T cuCadd##suffix(T x, T y);                                \
  __host__ __device__ static __inline__ T cuCsub##suffix(T x, T y);                                \
  __host__ __device__ static __inline__ T cuCmul##suffix(T x, T y);                                \
  __host__ __device__ static __inline__ T cuCdiv##suffix(T x, T y);                                \
  __host__ __device__ static __inline__ R cuCabs##suffix(T x);                                     \
  __host__ __device__ static __inline__ T cuCfma##suffix(T x, T y, T d);
KM_CUCOMPLEX_F(cuFloatComplex, float, f)
KM_CUCOMPLEX_F(cuDoubleComplex, double, )
#undef KM_CUCOMPLEX_F
__host__ __device__ static __inline__ cuFloatComplex make_cuFloatComplex(float r, float i);
__host__ __device__ static __inline__ cuDoubleComplex make_cuDoubleComplex(double r, double i);
__host__ __device__ static __inline__ cuComplex make_cuComplex(float x, float y);
__host__ __device__ static __inline__ cuDoubleComplex cuComplexFloatToDouble(cuFloatComplex c);
__host__ __device__ static __inline__ cuFloatComplex cuComplexDoubleToFloat(cuDoubleComplex c);
#endif
