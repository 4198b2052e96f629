/* kernel-miner parse shim for cuRAND's device API (curand_kernel.h): declarations only, for libclang, so
 * that the closure sees where `curandState_t` comes from (a unit then includes the real header). The
 * generators take any state type here: the parse needs the names, the real header the exact overloads. */
#ifndef KM_CURAND_KERNEL_H
#define KM_CURAND_KERNEL_H
#include <curand.h>
struct curandStateXORWOW { unsigned int d, v[5]; int boxmuller_flag, boxmuller_flag_double;
                           float boxmuller_extra; double boxmuller_extra_double; };
struct curandStatePhilox4_32_10 { uint4 ctr, output; uint2 key; unsigned int STATE; int boxmuller_flag,
                                  boxmuller_flag_double; float boxmuller_extra; double boxmuller_extra_double; };
struct curandStateMRG32k3a { unsigned int s1[3], s2[3]; int boxmuller_flag, boxmuller_flag_double;
                             float boxmuller_extra; double boxmuller_extra_double; };
typedef struct curandStateXORWOW curandStateXORWOW_t;
typedef struct curandStateXORWOW curandState_t;
typedef struct curandStateXORWOW curandState;
typedef struct curandStatePhilox4_32_10 curandStatePhilox4_32_10_t;
typedef struct curandStateMRG32k3a curandStateMRG32k3a_t;
template <class S> __host__ __device__ void curand_init(unsigned long long seed, unsigned long long subsequence,
                                                        unsigned long long offset, S *state);
template <class S> __device__ unsigned int curand(S *state);
template <class S> __device__ uint4 curand4(S *state);
template <class S> __device__ float curand_uniform(S *state);
template <class S> __device__ double curand_uniform_double(S *state);
template <class S> __device__ float4 curand_uniform4(S *state);
template <class S> __device__ float curand_normal(S *state);
template <class S> __device__ double curand_normal_double(S *state);
template <class S> __device__ float2 curand_normal2(S *state);
template <class S> __device__ float4 curand_normal4(S *state);
template <class S> __device__ float curand_log_normal(S *state, float mean, float stddev);
template <class S> __device__ unsigned int curand_poisson(S *state, double lambda);
#endif
