/* kernel-miner parse shim for cuRAND's host API (curand.h): declarations only, for libclang. A unit keeps
 * `#include <curand.h>`; the build finds the real header in the toolkit or the nvidia-curand wheel. */
#ifndef KM_CURAND_H
#define KM_CURAND_H
typedef enum curandStatus { CURAND_STATUS_SUCCESS = 0 } curandStatus_t;
typedef enum curandRngType { CURAND_RNG_PSEUDO_DEFAULT = 100 } curandRngType_t;
typedef struct curandGenerator_st *curandGenerator_t;
curandStatus_t curandCreateGenerator(curandGenerator_t *, curandRngType_t);
curandStatus_t curandDestroyGenerator(curandGenerator_t);
curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t, unsigned long long);
curandStatus_t curandGenerateUniform(curandGenerator_t, float *, size_t);
curandStatus_t curandGenerateNormal(curandGenerator_t, float *, size_t, float, float);
#endif
