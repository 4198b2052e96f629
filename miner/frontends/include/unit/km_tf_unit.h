/* kernel-miner unit shim: the TensorFlow and Eigen names device code of TensorFlow custom ops uses
 * (gpu_kernel_helper.h, gpu_device_functions.h, Eigen's half, numext and divup), for nvcc alone. Written for
 * kernel-miner from the documented behaviour of those names; no TensorFlow or Eigen source. Inlined into a
 * unit whose closure names one of them (frontends/frameworks.py); the parse sees shims/km_tf_parse.h. */
#include <cuda_fp16.h>
#include <stdint.h>
#include <stddef.h>
#include <type_traits>
#ifndef EIGEN_DEVICE_FUNC
#define EIGEN_DEVICE_FUNC __host__ __device__
#endif
#ifndef EIGEN_STRONG_INLINE
#define EIGEN_STRONG_INLINE inline
#endif
#ifndef EIGEN_ALWAYS_INLINE
#define EIGEN_ALWAYS_INLINE inline
#endif

namespace Eigen {
typedef ::ptrdiff_t Index;  // Eigen's default index type
typedef ::ptrdiff_t DenseIndex;

// Eigen::half: IEEE binary16 in 16 bits (`x` holds them). Conversions from float round to nearest even (a double
// goes through float, an integer through float); arithmetic is the fp16 instructions' on devices that have them
// (sm_53 and later), else float arithmetic rounded back; comparisons compare the values.
struct half {
  unsigned short x;
  __host__ __device__ constexpr half() : x(0) {}
  __host__ __device__ half(const __half_raw &r) : x(r.x) {}
  __host__ __device__ half(const __half &h) : x(static_cast<__half_raw>(h).x) {}
  __host__ __device__ explicit half(bool b) : x(b ? 0x3c00 : 0) {}
  __host__ __device__ explicit half(float f) : x(static_cast<__half_raw>(__float2half_rn(f)).x) {}
  __host__ __device__ explicit half(double d) : half(static_cast<float>(d)) {}
  template <class T, class = typename std::enable_if<std::is_integral<T>::value>::type>
  __host__ __device__ explicit half(T v) : half(static_cast<float>(v)) {}
  __host__ __device__ __half km_h() const { __half_raw r; r.x = x; return __half(r); }
  __host__ __device__ explicit operator float() const { return __half2float(km_h()); }
  __host__ __device__ explicit operator double() const { return static_cast<double>(__half2float(km_h())); }
  __host__ __device__ explicit operator bool() const { return (x & 0x7fff) != 0; }
  __host__ __device__ explicit operator int() const { return static_cast<int>(__half2float(km_h())); }
  __host__ __device__ explicit operator long() const { return static_cast<long>(__half2float(km_h())); }
  __host__ __device__ explicit operator long long() const { return static_cast<long long>(__half2float(km_h())); }
  __host__ __device__ explicit operator unsigned int() const {
    return static_cast<unsigned int>(__half2float(km_h())); }
  __host__ __device__ explicit operator signed char() const { return static_cast<signed char>(__half2float(km_h())); }
  __host__ __device__ explicit operator unsigned char() const {
    return static_cast<unsigned char>(__half2float(km_h())); }
  __host__ __device__ explicit operator short() const { return static_cast<short>(__half2float(km_h())); }
  __host__ __device__ operator __half() const { return km_h(); }
};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
__device__ inline half operator+(const half &a, const half &b) { return half(__hadd(a.km_h(), b.km_h())); }
__device__ inline half operator-(const half &a, const half &b) { return half(__hsub(a.km_h(), b.km_h())); }
__device__ inline half operator*(const half &a, const half &b) { return half(__hmul(a.km_h(), b.km_h())); }
__device__ inline half operator/(const half &a, const half &b) { return half(__hdiv(a.km_h(), b.km_h())); }
#else
__host__ __device__ inline half operator+(const half &a, const half &b) {
  return half(static_cast<float>(a) + static_cast<float>(b)); }
__host__ __device__ inline half operator-(const half &a, const half &b) {
  return half(static_cast<float>(a) - static_cast<float>(b)); }
__host__ __device__ inline half operator*(const half &a, const half &b) {
  return half(static_cast<float>(a) * static_cast<float>(b)); }
__host__ __device__ inline half operator/(const half &a, const half &b) {
  return half(static_cast<float>(a) / static_cast<float>(b)); }
#endif
__host__ __device__ inline half operator-(const half &a) { half r; r.x = a.x ^ 0x8000; return r; }
__host__ __device__ inline half &operator+=(half &a, const half &b) { a = a + b; return a; }
__host__ __device__ inline half &operator-=(half &a, const half &b) { a = a - b; return a; }
__host__ __device__ inline half &operator*=(half &a, const half &b) { a = a * b; return a; }
__host__ __device__ inline half &operator/=(half &a, const half &b) { a = a / b; return a; }
__host__ __device__ inline half operator/(const half &a, Index b) {
  return half(static_cast<float>(a) / static_cast<float>(b)); }
__host__ __device__ inline bool operator==(const half &a, const half &b) { return static_cast<float>(a) == static_cast<float>(b); }
__host__ __device__ inline bool operator!=(const half &a, const half &b) { return static_cast<float>(a) != static_cast<float>(b); }
__host__ __device__ inline bool operator<(const half &a, const half &b) { return static_cast<float>(a) < static_cast<float>(b); }
__host__ __device__ inline bool operator<=(const half &a, const half &b) { return static_cast<float>(a) <= static_cast<float>(b); }
__host__ __device__ inline bool operator>(const half &a, const half &b) { return static_cast<float>(a) > static_cast<float>(b); }
__host__ __device__ inline bool operator>=(const half &a, const half &b) { return static_cast<float>(a) >= static_cast<float>(b); }

namespace numext {
// std::min/std::max's choice (the first argument on ties); float and double as fmin/fmax, as Eigen's GPU build
// specializes them.
template <typename T> __host__ __device__ inline T mini(const T &x, const T &y) { return y < x ? y : x; }
template <typename T> __host__ __device__ inline T maxi(const T &x, const T &y) { return x < y ? y : x; }
template <> __host__ __device__ inline float mini(const float &x, const float &y) { return fminf(x, y); }
template <> __host__ __device__ inline double mini(const double &x, const double &y) { return fmin(x, y); }
template <> __host__ __device__ inline float maxi(const float &x, const float &y) { return fmaxf(x, y); }
template <> __host__ __device__ inline double maxi(const double &x, const double &y) { return fmax(x, y); }
template <typename T> __host__ __device__ inline T abs(const T &x) { return x < T(0) ? -x : x; }
template <typename T> __host__ __device__ inline bool isnan(const T &x) { return x != x; }
// Floating point through CUDA's math functions (a half through float); integers are never infinite.
template <typename T> __host__ __device__ inline bool isinf(const T &x) {
  if constexpr (std::is_floating_point<T>::value) { return ::isinf(x); } else { return false; } }
__host__ __device__ inline bool isinf(const half &x) { return (x.x & 0x7fff) == 0x7c00; }
template <typename T> __host__ __device__ inline bool isfinite(const T &x) {
  if constexpr (std::is_floating_point<T>::value) { return ::isfinite(x); } else { return true; } }
__host__ __device__ inline bool isfinite(const half &x) { return (x.x & 0x7c00) != 0x7c00; }
template <typename T> __host__ __device__ inline T sqrt(const T &x) { return ::sqrt(x); }
__host__ __device__ inline half sqrt(const half &x) { return half(::sqrtf(static_cast<float>(x))); }
template <typename T> __host__ __device__ inline T exp(const T &x) { return ::exp(x); }
__host__ __device__ inline half exp(const half &x) { return half(::expf(static_cast<float>(x))); }
template <typename T> __host__ __device__ inline T log(const T &x) { return ::log(x); }
__host__ __device__ inline half log(const half &x) { return half(::logf(static_cast<float>(x))); }
// x to the power y in x's type: integers by repeated squaring (a negative power of an integer is 0 unless x is
// 1 or -1), others through pow.
template <typename X, typename Y> __host__ __device__ inline X pow(const X &x, const Y &y) {
  if constexpr (std::is_integral<X>::value && std::is_integral<Y>::value) {
    if (y < 0) return x == 1 ? X(1) : (x == -1 ? (y % 2 ? X(-1) : X(1)) : X(0));
    X result = 1, base = x;
    for (Y e = y; e; e /= 2) {
      if (e % 2) result *= base;
      base *= base;
    }
    return result;
  } else {
    return static_cast<X>(::pow(x, static_cast<X>(y)));
  }
}
}  // namespace numext

// NumTraits: a scalar type's limits (highest/lowest finite values, epsilon, infinity, NaN).
template <typename T, class = void> struct NumTraits;
template <typename T> struct NumTraits<T, typename std::enable_if<std::is_integral<T>::value>::type> {
  enum { IsInteger = 1, IsSigned = std::is_signed<T>::value, IsComplex = 0 };
  typedef T Real;
  typedef typename std::make_unsigned<T>::type U;
  static __host__ __device__ constexpr T highest() {
    return IsSigned ? static_cast<T>(static_cast<U>(~U(0)) >> 1) : static_cast<T>(~U(0)); }
  static __host__ __device__ constexpr T lowest() { return IsSigned ? static_cast<T>(-highest() - 1) : T(0); }
  static __host__ __device__ constexpr T epsilon() { return T(0); }
};
template <> struct NumTraits<float> {
  enum { IsInteger = 0, IsSigned = 1, IsComplex = 0 };
  typedef float Real;
  static __host__ __device__ constexpr float highest() { return 3.40282346638528859811704183484516925e+38F; }
  static __host__ __device__ constexpr float lowest() { return -3.40282346638528859811704183484516925e+38F; }
  static __host__ __device__ constexpr float epsilon() { return 1.1920928955078125e-07F; }
  static __host__ __device__ constexpr float infinity() { return __builtin_huge_valf(); }
  static __host__ __device__ constexpr float quiet_NaN() { return __builtin_nanf(""); }
};
template <> struct NumTraits<double> {
  enum { IsInteger = 0, IsSigned = 1, IsComplex = 0 };
  typedef double Real;
  static __host__ __device__ constexpr double highest() { return 1.79769313486231570814527423731704357e+308; }
  static __host__ __device__ constexpr double lowest() { return -1.79769313486231570814527423731704357e+308; }
  static __host__ __device__ constexpr double epsilon() { return 2.220446049250313080847263336181640625e-16; }
  static __host__ __device__ constexpr double infinity() { return __builtin_huge_val(); }
  static __host__ __device__ constexpr double quiet_NaN() { return __builtin_nan(""); }
};
template <> struct NumTraits<half> {
  enum { IsInteger = 0, IsSigned = 1, IsComplex = 0 };
  typedef half Real;
  static __host__ __device__ half km_bits(unsigned short b) { half h; h.x = b; return h; }
  static __host__ __device__ half highest() { return km_bits(0x7bff); }
  static __host__ __device__ half lowest() { return km_bits(0xfbff); }
  static __host__ __device__ half epsilon() { return km_bits(0x1400); }
  static __host__ __device__ half infinity() { return km_bits(0x7c00); }
  static __host__ __device__ half quiet_NaN() { return km_bits(0x7e00); }
};
// Integer division rounded up.
template <typename T> __host__ __device__ inline T divup(const T x, const T y) { return (x + y - 1) / y; }
template <typename T, typename X, typename Y> __host__ __device__ inline T divup(const X x, const Y y) {
  return static_cast<T>((x + y - 1) / y); }

// The device a functor launches on; here only its stream.
struct GpuDevice {
  cudaStream_t stream_ = 0;
  cudaStream_t stream() const { return stream_; }
};
}  // namespace Eigen

namespace tensorflow {
typedef signed char int8;
typedef short int16;
typedef int int32;
typedef int64_t int64;
typedef unsigned char uint8;
typedef unsigned short uint16;
typedef unsigned int uint32;
typedef uint64_t uint64;

struct GpuLaunchConfig {
  int virtual_thread_count = -1;
  int thread_per_block = -1;
  int block_count = -1;
};
typedef GpuLaunchConfig CudaLaunchConfig;

// GpuGridRange: the indices begin, begin + delta, ... below end; a grid-stride loop in a range-for.
// km:def-GpuGridRange-begin
template <typename T> class GpuGridRange {
 public:
  class Iterator {
   public:
    __device__ Iterator(T index, T delta) : index_(index), delta_(delta) {}
    __device__ T operator*() const { return index_; }
    __device__ Iterator &operator++() { index_ += delta_; return *this; }
    // Compared with the range's end only: going on while the index is below it.
    __device__ bool operator!=(const Iterator &end) const { return index_ < end.index_; }
   private:
    T index_;
    const T delta_;
  };
  __device__ GpuGridRange(T begin, T delta, T end) : begin_(begin), delta_(delta), end_(end) {}
  __device__ Iterator begin() const { return Iterator(begin_, delta_); }
  __device__ Iterator end() const { return Iterator(end_, 0); }
 private:
  T begin_, delta_, end_;
};
// km:def-GpuGridRange-end
// km:def-GpuGridRangeX-begin
template <typename T> __device__ GpuGridRange<T> GpuGridRangeX(T count) {
  return GpuGridRange<T>(blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x, count); }
// km:def-GpuGridRangeX-end
// km:def-GpuGridRangeY-begin
template <typename T> __device__ GpuGridRange<T> GpuGridRangeY(T count) {
  return GpuGridRange<T>(blockIdx.y * blockDim.y + threadIdx.y, gridDim.y * blockDim.y, count); }
// km:def-GpuGridRangeY-end
// km:def-GpuGridRangeZ-begin
template <typename T> __device__ GpuGridRange<T> GpuGridRangeZ(T count) {
  return GpuGridRange<T>(blockIdx.z * blockDim.z + threadIdx.z, gridDim.z * blockDim.z, count); }
// km:def-GpuGridRangeZ-end
// km:def-CudaGridRangeX-begin
template <typename T> __device__ GpuGridRange<T> CudaGridRangeX(T count) { return GpuGridRangeX<T>(count); }
// km:def-CudaGridRangeX-end
// km:def-CudaGridRangeY-begin
template <typename T> __device__ GpuGridRange<T> CudaGridRangeY(T count) { return GpuGridRangeY<T>(count); }
// km:def-CudaGridRangeY-end
// km:def-CudaGridRangeZ-begin
template <typename T> __device__ GpuGridRange<T> CudaGridRangeZ(T count) { return GpuGridRangeZ<T>(count); }
// km:def-CudaGridRangeZ-end

// ldg: a read through the read-only data cache on the device, a plain read on the host; half and bool through
// their bits.
// km:def-ldg-begin
template <typename T> __host__ __device__ inline T ldg(const T *ptr) {
#if defined(__CUDA_ARCH__)
  return __ldg(ptr);
#else
  return *ptr;
#endif
}
__host__ __device__ inline Eigen::half ldg(const Eigen::half *ptr) {
  Eigen::half r;
#if defined(__CUDA_ARCH__)
  r.x = __ldg(reinterpret_cast<const unsigned short *>(ptr));
#else
  r.x = ptr->x;
#endif
  return r;
}
__host__ __device__ inline bool ldg(const bool *ptr) {
#if defined(__CUDA_ARCH__)
  return __ldg(reinterpret_cast<const unsigned char *>(ptr)) != 0;
#else
  return *ptr;
#endif
}
// km:def-ldg-end
// km:def-GpuLdg-begin
template <typename T> __host__ __device__ inline T GpuLdg(const T *ptr) { return ldg(ptr); }
// km:def-GpuLdg-end

const unsigned kCudaWarpAll = 0xffffffff;
const unsigned kGpuWarpAll = 0xffffffff;
// km:def-GpuLaneId-begin
__device__ inline unsigned GpuLaneId() { unsigned lane; asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane)); return lane; }
// km:def-GpuLaneId-end
// km:def-GpuSyncWarp-begin
__device__ inline void GpuSyncWarp(unsigned mask = kCudaWarpAll) { __syncwarp(mask); }
// km:def-GpuSyncWarp-end
// km:def-GpuBallotSync-begin
__device__ inline unsigned GpuBallotSync(unsigned mask, int pred) { return __ballot_sync(mask, pred); }
// km:def-GpuBallotSync-end
// km:def-GpuAnySync-begin
__device__ inline bool GpuAnySync(unsigned mask, int pred) { return __any_sync(mask, pred); }
// km:def-GpuAnySync-end
// km:def-GpuAllSync-begin
__device__ inline bool GpuAllSync(unsigned mask, int pred) { return __all_sync(mask, pred); }
// km:def-GpuAllSync-end
// km:def-GpuShuffleSync-begin
template <typename T> __device__ inline T GpuShuffleSync(unsigned mask, T value, int src_lane, int width = 32) {
  return __shfl_sync(mask, value, src_lane, width); }
// km:def-GpuShuffleSync-end
// km:def-GpuShuffleUpSync-begin
template <typename T> __device__ inline T GpuShuffleUpSync(unsigned mask, T value, unsigned delta, int width = 32) {
  return __shfl_up_sync(mask, value, delta, width); }
// km:def-GpuShuffleUpSync-end
// km:def-GpuShuffleDownSync-begin
template <typename T> __device__ inline T GpuShuffleDownSync(unsigned mask, T value, unsigned delta, int width = 32) {
  return __shfl_down_sync(mask, value, delta, width); }
// km:def-GpuShuffleDownSync-end
// km:def-GpuShuffleXorSync-begin
template <typename T> __device__ inline T GpuShuffleXorSync(unsigned mask, T value, int lane_mask, int width = 32) {
  return __shfl_xor_sync(mask, value, lane_mask, width); }
// km:def-GpuShuffleXorSync-end
// km:def-CudaShuffleSync-begin
template <typename T> __device__ inline T CudaShuffleSync(unsigned mask, T value, int src_lane, int width = 32) {
  return __shfl_sync(mask, value, src_lane, width); }
// km:def-CudaShuffleSync-end
// km:def-CudaShuffleUpSync-begin
template <typename T> __device__ inline T CudaShuffleUpSync(unsigned mask, T value, unsigned delta, int width = 32) {
  return __shfl_up_sync(mask, value, delta, width); }
// km:def-CudaShuffleUpSync-end
// km:def-CudaShuffleDownSync-begin
template <typename T> __device__ inline T CudaShuffleDownSync(unsigned mask, T value, unsigned delta, int width = 32) {
  return __shfl_down_sync(mask, value, delta, width); }
// km:def-CudaShuffleDownSync-end
// km:def-CudaShuffleXorSync-begin
template <typename T> __device__ inline T CudaShuffleXorSync(unsigned mask, T value, int lane_mask, int width = 32) {
  return __shfl_xor_sync(mask, value, lane_mask, width); }
// km:def-CudaShuffleXorSync-end

// Atomics: each returns the value before the update. Native atomics where CUDA has them; 64-bit integers through
// their unsigned counterparts (two's complement); other types (Eigen::half, float max/min, multiply, divide)
// through a compare-and-swap loop on the word that holds the value.
namespace km_tf_detail {
template <typename T, typename F> __device__ T CasLoop(T *ptr, F op) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "a 4- or 8-byte type");
  typedef typename std::conditional<sizeof(T) == 4, unsigned int, unsigned long long>::type W;
  W *address = reinterpret_cast<W *>(ptr);
  W old = *address, assumed;
  do {
    assumed = old;
    T cur;
    memcpy(&cur, &assumed, sizeof(T));
    T next = op(cur);
    W bits;
    memcpy(&bits, &next, sizeof(T));
    old = atomicCAS(address, assumed, bits);
  } while (assumed != old);
  T out;
  memcpy(&out, &old, sizeof(T));
  return out;
}
template <typename F> __device__ Eigen::half CasLoop(Eigen::half *ptr, F op) {
  unsigned int *word = reinterpret_cast<unsigned int *>(reinterpret_cast<size_t>(ptr) & ~static_cast<size_t>(3));
  const bool upper = (reinterpret_cast<size_t>(ptr) & 2) != 0;
  unsigned int old = *word, assumed;
  do {
    assumed = old;
    Eigen::half cur;
    cur.x = static_cast<unsigned short>(upper ? (assumed >> 16) : (assumed & 0xffffu));
    const Eigen::half next = op(cur);
    const unsigned int bits = upper ? ((assumed & 0x0000ffffu) | (static_cast<unsigned int>(next.x) << 16))
                                    : ((assumed & 0xffff0000u) | next.x);
    old = atomicCAS(word, assumed, bits);
  } while (assumed != old);
  Eigen::half out;
  out.x = static_cast<unsigned short>(upper ? (old >> 16) : (old & 0xffffu));
  return out;
}
template <typename T> __device__ inline T Add(T *p, T v) { return atomicAdd(p, v); }
__device__ inline long Add(long *p, long v) {
  return static_cast<long>(atomicAdd(reinterpret_cast<unsigned long long *>(p), static_cast<unsigned long long>(v))); }
__device__ inline long long Add(long long *p, long long v) {
  return static_cast<long long>(atomicAdd(reinterpret_cast<unsigned long long *>(p),
                                          static_cast<unsigned long long>(v))); }
__device__ inline unsigned long Add(unsigned long *p, unsigned long v) {
  return static_cast<unsigned long>(atomicAdd(reinterpret_cast<unsigned long long *>(p),
                                              static_cast<unsigned long long>(v))); }
__device__ inline Eigen::half Add(Eigen::half *p, Eigen::half v) {
  return CasLoop(p, [v](Eigen::half a) { return a + v; }); }
template <typename T> __device__ inline T Sub(T *p, T v) { return Add(p, static_cast<T>(-v)); }
__device__ inline int Sub(int *p, int v) { return atomicSub(p, v); }
__device__ inline unsigned Sub(unsigned *p, unsigned v) { return atomicSub(p, v); }
template <typename T> __device__ inline T Max(T *p, T v) { return atomicMax(p, v); }
__device__ inline long Max(long *p, long v) {
  return static_cast<long>(atomicMax(reinterpret_cast<long long *>(p), static_cast<long long>(v))); }
__device__ inline unsigned long Max(unsigned long *p, unsigned long v) {
  return static_cast<unsigned long>(atomicMax(reinterpret_cast<unsigned long long *>(p),
                                              static_cast<unsigned long long>(v))); }
__device__ inline float Max(float *p, float v) { return CasLoop(p, [v](float a) { return fmaxf(a, v); }); }
__device__ inline double Max(double *p, double v) { return CasLoop(p, [v](double a) { return fmax(a, v); }); }
__device__ inline Eigen::half Max(Eigen::half *p, Eigen::half v) {
  return CasLoop(p, [v](Eigen::half a) { return a < v ? v : a; }); }
template <typename T> __device__ inline T Min(T *p, T v) { return atomicMin(p, v); }
__device__ inline long Min(long *p, long v) {
  return static_cast<long>(atomicMin(reinterpret_cast<long long *>(p), static_cast<long long>(v))); }
__device__ inline unsigned long Min(unsigned long *p, unsigned long v) {
  return static_cast<unsigned long>(atomicMin(reinterpret_cast<unsigned long long *>(p),
                                              static_cast<unsigned long long>(v))); }
__device__ inline float Min(float *p, float v) { return CasLoop(p, [v](float a) { return fminf(a, v); }); }
__device__ inline double Min(double *p, double v) { return CasLoop(p, [v](double a) { return fmin(a, v); }); }
__device__ inline Eigen::half Min(Eigen::half *p, Eigen::half v) {
  return CasLoop(p, [v](Eigen::half a) { return v < a ? v : a; }); }
template <typename T> __device__ inline T Mul(T *p, T v) { return CasLoop(p, [v](T a) { return a * v; }); }
template <typename T> __device__ inline T Div(T *p, T v) { return CasLoop(p, [v](T a) { return a / v; }); }
}  // namespace km_tf_detail
// The value is converted to the pointee's type first, as the overloads TensorFlow picks take it.
// km:def-GpuAtomicAdd-begin
template <typename T, typename U> __device__ inline T GpuAtomicAdd(T *ptr, U value) {
  return km_tf_detail::Add(ptr, static_cast<T>(value)); }
// km:def-GpuAtomicAdd-end
// km:def-GpuAtomicSub-begin
template <typename T, typename U> __device__ inline T GpuAtomicSub(T *ptr, U value) {
  return km_tf_detail::Sub(ptr, static_cast<T>(value)); }
// km:def-GpuAtomicSub-end
// km:def-GpuAtomicMax-begin
template <typename T, typename U> __device__ inline T GpuAtomicMax(T *ptr, U value) {
  return km_tf_detail::Max(ptr, static_cast<T>(value)); }
// km:def-GpuAtomicMax-end
// km:def-GpuAtomicMin-begin
template <typename T, typename U> __device__ inline T GpuAtomicMin(T *ptr, U value) {
  return km_tf_detail::Min(ptr, static_cast<T>(value)); }
// km:def-GpuAtomicMin-end
// km:def-GpuAtomicMul-begin
template <typename T, typename U> __device__ inline T GpuAtomicMul(T *ptr, U value) {
  return km_tf_detail::Mul(ptr, static_cast<T>(value)); }
// km:def-GpuAtomicMul-end
// km:def-GpuAtomicDiv-begin
template <typename T, typename U> __device__ inline T GpuAtomicDiv(T *ptr, U value) {
  return km_tf_detail::Div(ptr, static_cast<T>(value)); }
// km:def-GpuAtomicDiv-end
// km:def-CudaAtomicAdd-begin
template <typename T, typename U> __device__ inline T CudaAtomicAdd(T *ptr, U value) {
  return km_tf_detail::Add(ptr, static_cast<T>(value)); }
// km:def-CudaAtomicAdd-end
// km:def-CudaAtomicSub-begin
template <typename T, typename U> __device__ inline T CudaAtomicSub(T *ptr, U value) {
  return km_tf_detail::Sub(ptr, static_cast<T>(value)); }
// km:def-CudaAtomicSub-end
// km:def-CudaAtomicMax-begin
template <typename T, typename U> __device__ inline T CudaAtomicMax(T *ptr, U value) {
  return km_tf_detail::Max(ptr, static_cast<T>(value)); }
// km:def-CudaAtomicMax-end
// km:def-CudaAtomicMin-begin
template <typename T, typename U> __device__ inline T CudaAtomicMin(T *ptr, U value) {
  return km_tf_detail::Min(ptr, static_cast<T>(value)); }
// km:def-CudaAtomicMin-end
// km:def-CudaAtomicMul-begin
template <typename T, typename U> __device__ inline T CudaAtomicMul(T *ptr, U value) {
  return km_tf_detail::Mul(ptr, static_cast<T>(value)); }
// km:def-CudaAtomicMul-end
// km:def-CudaAtomicDiv-begin
template <typename T, typename U> __device__ inline T CudaAtomicDiv(T *ptr, U value) {
  return km_tf_detail::Div(ptr, static_cast<T>(value)); }
// km:def-CudaAtomicDiv-end
// km:def-tf_min-begin
template <typename T> __host__ __device__ inline const T &tf_min(const T &x, const T &y) { return x < y ? x : y; }
// km:def-tf_min-end
// km:def-tf_max-begin
template <typename T> __host__ __device__ inline const T &tf_max(const T &x, const T &y) { return x < y ? y : x; }
// km:def-tf_max-end
}  // namespace tensorflow

// The kernel loops (gpu_kernel_helper.h): `i` over the grid-stride range of [0, n) along x (or `axis`).
#ifndef GPU_1D_KERNEL_LOOP
#define GPU_1D_KERNEL_LOOP(i, n) for (int i : tensorflow::GpuGridRangeX<int>(n))
#endif
#ifndef GPU_AXIS_KERNEL_LOOP
#define GPU_AXIS_KERNEL_LOOP(i, n, axis) for (int i : tensorflow::GpuGridRange##axis<int>(n))
#endif
#ifndef CUDA_1D_KERNEL_LOOP
#define CUDA_1D_KERNEL_LOOP(i, n) for (int i : tensorflow::GpuGridRangeX<int>(n))
#endif
#ifndef CUDA_AXIS_KERNEL_LOOP
#define CUDA_AXIS_KERNEL_LOOP(i, n, axis) for (int i : tensorflow::GpuGridRange##axis<int>(n))
#endif
