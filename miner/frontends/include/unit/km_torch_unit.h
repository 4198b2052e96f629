/* kernel-miner unit shim: the few ATen/c10 names device code uses, for nvcc alone.
 * Inlined into units instead of torch headers (which cost ~128 s to compile and need libtorch). */
#include <cuda_fp16.h>
// Guarded: hipify renames it to <hip/hip_bf16.h>, which HIP releases before 5.7 do not have.
#if __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#endif
#include <stdint.h>
#include <tuple>
#include <type_traits>
// c10/macros/Macros.h names device code uses; a repo that defines one itself keeps its own.
#ifndef C10_WARP_SIZE
#if defined(__HIP_PLATFORM_AMD__)
#define C10_WARP_SIZE warpSize  // as c10 defines it under USE_ROCM: 64 lanes on CDNA, 32 on RDNA
#else
#define C10_WARP_SIZE 32
#endif
#endif
#ifndef C10_HOST_DEVICE
#define C10_HOST_DEVICE __host__ __device__
#endif
#ifndef C10_DEVICE
#define C10_DEVICE __device__
#endif
#ifndef C10_HOST
#define C10_HOST __host__
#endif
#ifndef C10_MAX_THREADS_PER_BLOCK
#define C10_MAX_THREADS_PER_BLOCK(val) (((val) <= 1024) ? (val) : 256)
#endif
#ifndef C10_MIN_BLOCKS_PER_SM
#define C10_MIN_BLOCKS_PER_SM(threads_per_block, blocks_per_sm) \
  ((((threads_per_block) * (blocks_per_sm) <= 2048) ? (blocks_per_sm) : ((2048 + (threads_per_block) - 1) / (threads_per_block))))
#endif
#ifndef C10_LAUNCH_BOUNDS_0
#define C10_LAUNCH_BOUNDS_0 __launch_bounds__(256, 4)
#endif
#ifndef C10_LAUNCH_BOUNDS_1
#define C10_LAUNCH_BOUNDS_1(max_threads_per_block) __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((max_threads_per_block))))
#endif
#ifndef C10_LAUNCH_BOUNDS_2
#define C10_LAUNCH_BOUNDS_2(max_threads_per_block, min_blocks_per_sm) \
  __launch_bounds__((C10_MAX_THREADS_PER_BLOCK((max_threads_per_block))),                  \
                    (C10_MIN_BLOCKS_PER_SM((max_threads_per_block), (min_blocks_per_sm))))
#endif
#ifndef C10_LIKELY
#define C10_LIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 1))
#define C10_UNLIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 0))
#endif
#ifndef C10_RESTRICT
#define C10_RESTRICT __restrict
#endif
namespace c10 {
struct alignas(2) Half {
  unsigned short x;
  Half() = default;
  __host__ __device__ Half(float f) { __half h = __float2half(f); x = *reinterpret_cast<unsigned short *>(&h); }
  __host__ __device__ Half(__half h) { x = *reinterpret_cast<unsigned short *>(&h); }
  __host__ __device__ operator float() const { return __half2float(*reinterpret_cast<const __half *>(&x)); }
  __host__ __device__ operator __half() const { return *reinterpret_cast<const __half *>(&x); }
};
struct alignas(2) BFloat16 {
  unsigned short x;
  BFloat16() = default;
  // As torch/headeronly/util/BFloat16.h converts: cuda_bf16's intrinsics on the device (the native cvt on
  // sm_80+, `kernel-miner verify` compares the PTX), else the bits of c10::detail::round_to_nearest_even
  // (round to nearest even, NaN kept), so hosts and HIP units convert alike without a bf16 header.
#if defined(__CUDACC__) && !defined(__HIP__)
  __host__ __device__ BFloat16(float f)
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      : x(__bfloat16_as_ushort(__float2bfloat16(f))) {}
#else
      : x(rne(f)) {}
  // c10::detail::round_to_nearest_even as written there: std::isnan first, the bits read in the other
  // branch (`f != f`, or reading them first, gives other PTX).
  // c10::bit_cast: a template without `inline` (the inliner's hint counts).
  template <class F> static __host__ __device__ unsigned int bits(const F &f) {
    unsigned int u;
    __builtin_memcpy(&u, &f, sizeof(u));
    return u;
  }
  static __host__ __device__ unsigned short rne(float f) {
    if (__builtin_isnan(f)) {
      return 0x7fc0;
    } else {
      unsigned int u = bits(f);
      unsigned int bias = ((u >> 16) & 1u) + 0x7fffu;
      return static_cast<unsigned short>((u + bias) >> 16);
    }
  }
#endif
  __host__ __device__ operator float() const { return __bfloat162float(*reinterpret_cast<const __nv_bfloat16 *>(&x)); }
  __host__ __device__ BFloat16(const __nv_bfloat16 &v) { x = *reinterpret_cast<const unsigned short *>(&v); }
  __host__ __device__ explicit operator __nv_bfloat16() const { return *reinterpret_cast<const __nv_bfloat16 *>(&x); }
#else
  __host__ __device__ BFloat16(float f) {
    unsigned int u; __builtin_memcpy(&u, &f, 4);
    x = (f != f) ? (unsigned short)0x7fc0 : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); }
  __host__ __device__ operator float() const { unsigned int u = (unsigned int)x << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }
#endif
};
// c10's own arithmetic: exact matches that keep Half op Half from being ambiguous between the float
// and __half conversions (as in c10/util/Half-inl.h). No member `+= float`: c10 has none, so `h += f`
// rounds f to Half first, as the original does (`kernel-miner verify` tells the two apart in the PTX).
#define KM_HALF_OPS(H)                                                                                       \
  __host__ __device__ inline H operator+(const H &a, const H &b) { return float(a) + float(b); }           \
  __host__ __device__ inline H operator-(const H &a, const H &b) { return float(a) - float(b); }           \
  __host__ __device__ inline H operator*(const H &a, const H &b) { return float(a) * float(b); }           \
  __host__ __device__ inline H operator/(const H &a, const H &b) { return float(a) / float(b); }           \
  __host__ __device__ inline H &operator+=(H &a, const H &b) { return a = a + b; }                         \
  __host__ __device__ inline H &operator-=(H &a, const H &b) { return a = a - b; }                         \
  __host__ __device__ inline H &operator*=(H &a, const H &b) { return a = a * b; }                         \
  __host__ __device__ inline H &operator/=(H &a, const H &b) { return a = a / b; }                         \
  __host__ __device__ inline float operator+(H a, float b) { return float(a) + b; }                        \
  __host__ __device__ inline float operator-(H a, float b) { return float(a) - b; }                        \
  __host__ __device__ inline float operator*(H a, float b) { return float(a) * b; }                        \
  __host__ __device__ inline float operator/(H a, float b) { return float(a) / b; }                        \
  __host__ __device__ inline float operator+(float a, H b) { return a + float(b); }                        \
  __host__ __device__ inline float operator-(float a, H b) { return a - float(b); }                        \
  __host__ __device__ inline float operator*(float a, H b) { return a * float(b); }                        \
  __host__ __device__ inline float operator/(float a, H b) { return a / float(b); }                        \
  __host__ __device__ inline float &operator+=(float &a, const H &b) { return a += float(b); }            \
  __host__ __device__ inline float &operator-=(float &a, const H &b) { return a -= float(b); }            \
  __host__ __device__ inline float &operator*=(float &a, const H &b) { return a *= float(b); }            \
  __host__ __device__ inline float &operator/=(float &a, const H &b) { return a /= float(b); }            \
  __host__ __device__ inline double operator+(H a, double b) { return double(float(a)) + b; }              \
  __host__ __device__ inline double operator-(H a, double b) { return double(float(a)) - b; }              \
  __host__ __device__ inline double operator*(H a, double b) { return double(float(a)) * b; }              \
  __host__ __device__ inline double operator/(H a, double b) { return double(float(a)) / b; }              \
  __host__ __device__ inline double operator+(double a, H b) { return a + double(float(b)); }              \
  __host__ __device__ inline double operator-(double a, H b) { return a - double(float(b)); }              \
  __host__ __device__ inline double operator*(double a, H b) { return a * double(float(b)); }              \
  __host__ __device__ inline double operator/(double a, H b) { return a / double(float(b)); }              \
  __host__ __device__ inline H operator+(H a, int b) { return a + H(float(b)); }                           \
  __host__ __device__ inline H operator-(H a, int b) { return a - H(float(b)); }                           \
  __host__ __device__ inline H operator*(H a, int b) { return a * H(float(b)); }                           \
  __host__ __device__ inline H operator/(H a, int b) { return a / H(float(b)); }                           \
  __host__ __device__ inline H operator+(int a, H b) { return H(float(a)) + b; }                           \
  __host__ __device__ inline H operator-(int a, H b) { return H(float(a)) - b; }                           \
  __host__ __device__ inline H operator*(int a, H b) { return H(float(a)) * b; }                           \
  __host__ __device__ inline H operator/(int a, H b) { return H(float(a)) / b; }                           \
  __host__ __device__ inline H operator+(H a, int64_t b) { return a + H(float(b)); }                       \
  __host__ __device__ inline H operator-(H a, int64_t b) { return a - H(float(b)); }                       \
  __host__ __device__ inline H operator*(H a, int64_t b) { return a * H(float(b)); }                       \
  __host__ __device__ inline H operator/(H a, int64_t b) { return a / H(float(b)); }                       \
  __host__ __device__ inline H operator+(int64_t a, H b) { return H(float(a)) + b; }                       \
  __host__ __device__ inline H operator-(int64_t a, H b) { return H(float(a)) - b; }                       \
  __host__ __device__ inline H operator*(int64_t a, H b) { return H(float(a)) * b; }                       \
  __host__ __device__ inline H operator/(int64_t a, H b) { return H(float(a)) / b; }
KM_HALF_OPS(Half)
KM_HALF_OPS(BFloat16)
// Negation as torch/headeronly/util/Half.h and BFloat16.h write it: the native f16 negation where the
// device has one (an exact sign flip either way, but other PTX, which `kernel-miner verify` compares).
__host__ __device__ inline Half operator-(const Half &a) {
#if (defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530) || defined(__HIP_DEVICE_COMPILE__)
  return __hneg(a);
#else
  return -float(a);
#endif
}
__host__ __device__ inline BFloat16 operator-(const BFloat16 &a) { return -float(a); }
#undef KM_HALF_OPS
// c10::complex as torch/headeronly/util/complex.h defines it (layout, public real_/imag_, the bodies of its
// operators), every function __host__ __device__ so a unit needs no --expt-relaxed-constexpr for them.
template <typename T> struct alignas(sizeof(T) * 2) complex {
  using value_type = T;
  T real_ = T(0);
  T imag_ = T(0);
  constexpr complex() = default;
  __host__ __device__ constexpr complex(const T &re, const T &im = T()) : real_(re), imag_(im) {}
  template <typename U = T> __host__ __device__ explicit constexpr complex(
      const std::enable_if_t<std::is_same_v<U, float>, complex<double>> &o) : real_(o.real_), imag_(o.imag_) {}
  template <typename U = T> __host__ __device__ constexpr complex(
      const std::enable_if_t<std::is_same_v<U, double>, complex<float>> &o) : real_(o.real_), imag_(o.imag_) {}
  __host__ __device__ constexpr complex<T> &operator=(T re) { real_ = re; imag_ = 0; return *this; }
  __host__ __device__ constexpr complex<T> &operator+=(T re) { real_ += re; return *this; }
  __host__ __device__ constexpr complex<T> &operator-=(T re) { real_ -= re; return *this; }
  __host__ __device__ constexpr complex<T> &operator*=(T re) { real_ *= re; imag_ *= re; return *this; }
  __host__ __device__ constexpr complex<T> &operator/=(T re) { real_ /= re; imag_ /= re; return *this; }
  template <typename U> __host__ __device__ constexpr complex<T> &operator=(const complex<U> &r) {
    real_ = r.real(); imag_ = r.imag(); return *this; }
  template <typename U> __host__ __device__ constexpr complex<T> &operator+=(const complex<U> &r) {
    real_ += r.real(); imag_ += r.imag(); return *this; }
  template <typename U> __host__ __device__ constexpr complex<T> &operator-=(const complex<U> &r) {
    real_ -= r.real(); imag_ -= r.imag(); return *this; }
  template <typename U> __host__ __device__ constexpr complex<T> &operator*=(const complex<U> &r) {
    T a = real_; T b = imag_; U c = r.real(); U d = r.imag();
    real_ = a * c - b * d; imag_ = a * d + b * c; return *this; }
  template <typename U> __host__ __device__ constexpr complex<T> &operator/=(const complex<U> &r) {
    T a = real_; T b = imag_; U c = r.real(); U d = r.imag();
    auto abs_c = c < 0 ? -c : c;  // torch's non-GCC branch: what nvcc's device pass compiles
    auto abs_d = d < 0 ? -d : d;
    if (abs_c >= abs_d) {
      if (abs_c == U(0) && abs_d == U(0)) { real_ = a / abs_c; imag_ = b / abs_d; }
      else { auto rat = d / c; auto scl = U(1.0) / (c + d * rat); real_ = (a + b * rat) * scl; imag_ = (b - a * rat) * scl; }
    } else {
      auto rat = c / d; auto scl = U(1.0) / (d + c * rat); real_ = (a * rat + b) * scl; imag_ = (b * rat - a) * scl;
    }
    return *this; }
  __host__ __device__ explicit constexpr operator bool() const { return real() || imag(); }
  __host__ __device__ constexpr T real() const { return real_; }
  __host__ __device__ constexpr void real(T value) { real_ = value; }
  __host__ __device__ constexpr T imag() const { return imag_; }
  __host__ __device__ constexpr void imag(T value) { imag_ = value; }
};
#define KM_CX template <typename T> __host__ __device__ constexpr complex<T>
KM_CX operator+(const complex<T> &v) { return v; }
KM_CX operator-(const complex<T> &v) { return complex<T>(-v.real(), -v.imag()); }
KM_CX operator+(const complex<T> &l, const complex<T> &r) { complex<T> x = l; return x += r; }
KM_CX operator+(const complex<T> &l, const T &r) { complex<T> x = l; return x += r; }
KM_CX operator+(const T &l, const complex<T> &r) { return complex<T>(l + r.real(), r.imag()); }
KM_CX operator-(const complex<T> &l, const complex<T> &r) { complex<T> x = l; return x -= r; }
KM_CX operator-(const complex<T> &l, const T &r) { complex<T> x = l; return x -= r; }
KM_CX operator-(const T &l, const complex<T> &r) { complex<T> x = -r; return x += l; }
KM_CX operator*(const complex<T> &l, const complex<T> &r) { complex<T> x = l; return x *= r; }
KM_CX operator*(const complex<T> &l, const T &r) { complex<T> x = l; return x *= r; }
KM_CX operator*(const T &l, const complex<T> &r) { complex<T> x = r; return x *= l; }
KM_CX operator/(const complex<T> &l, const complex<T> &r) { complex<T> x = l; return x /= r; }
KM_CX operator/(const complex<T> &l, const T &r) { complex<T> x = l; return x /= r; }
KM_CX operator/(const T &l, const complex<T> &r) { complex<T> x(l, T()); return x /= r; }
#undef KM_CX
// complex op integer: the integer becomes the complex's scalar type first, as in torch.
#define KM_CXI(OP)                                                                                               \
  template <typename F, typename I, std::enable_if_t<std::is_floating_point_v<F> && std::is_integral_v<I>, int> = 0> \
  __host__ __device__ constexpr complex<F> operator OP(const complex<F> &a, const I &b) { return a OP static_cast<F>(b); } \
  template <typename F, typename I, std::enable_if_t<std::is_floating_point_v<F> && std::is_integral_v<I>, int> = 0> \
  __host__ __device__ constexpr complex<F> operator OP(const I &a, const complex<F> &b) { return static_cast<F>(a) OP b; }
KM_CXI(+) KM_CXI(-) KM_CXI(*) KM_CXI(/)
#undef KM_CXI
template <typename T> __host__ __device__ constexpr bool operator==(const complex<T> &l, const complex<T> &r) {
  return (l.real() == r.real()) && (l.imag() == r.imag()); }
template <typename T> __host__ __device__ constexpr bool operator!=(const complex<T> &l, const complex<T> &r) {
  return !(l == r); }
template <typename T> struct is_complex : public std::false_type {};
template <typename T> struct is_complex<complex<T>> : public std::true_type {};
template <typename T> struct scalar_value_type { using type = T; };
template <typename T> struct scalar_value_type<complex<T>> { using type = T; };
template <class T, bool is_cuda = true> struct km_acc { typedef T type; };
template <> struct km_acc<Half, true> { typedef float type; };
template <> struct km_acc<BFloat16, true> { typedef float type; };
template <> struct km_acc<float, true> { typedef float type; };
}  // namespace c10
// c10/util/complex.h's std overloads that need no thrust. In a build batch this block sits in the batch's
// namespace: the using-directive keeps the rest of std visible through that inner `std`.
namespace std {
using namespace ::std;
template <typename T> __host__ __device__ constexpr T real(const c10::complex<T> &z) { return z.real(); }
template <typename T> __host__ __device__ constexpr T imag(const c10::complex<T> &z) { return z.imag(); }
template <typename T> __host__ __device__ constexpr T norm(const c10::complex<T> &z) {
  return z.real() * z.real() + z.imag() * z.imag(); }
template <typename T> __host__ __device__ constexpr c10::complex<T> conj(const c10::complex<T> &z) {
  return c10::complex<T>(z.real(), -z.imag()); }
}  // namespace std
// Declared before at::native::fastAtomicAdd, whose dependent call must find it by ordinary lookup.
#if defined(__HIP__)
// HIP has no 16-bit float atomicAdd: a CAS loop on the 32-bit word holding the value, as ATen's AtomicFPOp.
template <class H> __device__ inline H km_atomic_add16(H *p, H v) {
  unsigned int hi = (unsigned int)((size_t)p & 2) * 8;
  unsigned int *word = (unsigned int *)((char *)p - ((size_t)p & 2));
  unsigned int old = *word, assumed;
  H cur;
  do {
    assumed = old;
    cur.x = (unsigned short)(old >> hi);
    H sum(float(cur) + float(v));
    old = atomicCAS(word, assumed, (old & ~(0xffffu << hi)) | ((unsigned int)sum.x << hi));
  } while (assumed != old);
  return cur;
}
#endif
// A repo that defines its own overload gets none of these (the renderer cuts the marked block out).
// km:atomicAdd-Half-begin
#if defined(__HIP__)
__device__ inline c10::Half atomicAdd(c10::Half *p, c10::Half v) { return km_atomic_add16(p, v); }
#else
// The value's bits go to the native 16-bit atomic as they are (ATen/cuda/Atomic.cuh: gpuAtomicAdd for
// sm_70+); a round trip through float costs two conversions `kernel-miner verify` sees in the PTX.
__device__ inline c10::Half atomicAdd(c10::Half *p, c10::Half v) {
  return c10::Half(atomicAdd(reinterpret_cast<__half *>(p), static_cast<__half>(v))); }
#endif
// km:atomicAdd-Half-end
// km:atomicAdd-BFloat16-begin
#if defined(__HIP__)
__device__ inline c10::BFloat16 atomicAdd(c10::BFloat16 *p, c10::BFloat16 v) { return km_atomic_add16(p, v); }
#else
// As ATen/cuda/Atomic.cuh's gpuAtomicAdd: the native bf16 atomic on sm_80+, before it AtomicFPOp's CAS
// loop on the 32-bit word holding the value, written as there (a functor called with a lambda: inlined in
// that order, nvcc keeps the NaN test a branch).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
struct km_atomic_fp_op_bf16 {
  template <typename func_t>
  inline __device__ c10::BFloat16 operator()(c10::BFloat16 *address, c10::BFloat16 val, const func_t &func) {
    unsigned int *address_as_ui = (unsigned int *)((char *)address - ((size_t)address & 2));
    unsigned int old = *address_as_ui;
    unsigned int assumed;
    c10::BFloat16 bsum;
    do {
      assumed = old;
      bsum.x = (size_t)address & 2 ? (old >> 16) : (old & 0xffff);
      bsum = func(bsum, val);
      old = (size_t)address & 2 ? (old & 0xffff) | (bsum.x << 16) : (old & 0xffff0000) | bsum.x;
      old = atomicCAS(address_as_ui, assumed, old);
    } while (assumed != old);
    bsum.x = (size_t)address & 2 ? (old >> 16) : (old & 0xffff);
    return bsum.x;  // as ATen: the bits become a float, then a BFloat16
  }
};
#endif
__device__ inline c10::BFloat16 atomicAdd(c10::BFloat16 *p, c10::BFloat16 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  return km_atomic_fp_op_bf16()(p, v, [](c10::BFloat16 bsum, c10::BFloat16 val) { return bsum + val; });
#else
  __nv_bfloat16 r = atomicAdd(reinterpret_cast<__nv_bfloat16 *>(p), *reinterpret_cast<__nv_bfloat16 *>(&v));
  return *reinterpret_cast<c10::BFloat16 *>(&r);
#endif
}
#endif
// km:atomicAdd-BFloat16-end
// __ldg as torch/headeronly/util/Half.h and BFloat16.h overload it (bf16's native load needs sm_80).
// km:__ldg-Half-begin
#if !defined(__HIP__)
__device__ inline c10::Half __ldg(const c10::Half *p) { return c10::Half(__ldg(reinterpret_cast<const __half *>(p))); }
#endif
// km:__ldg-Half-end
// km:__ldg-BFloat16-begin
__device__ inline c10::BFloat16 __ldg(const c10::BFloat16 *p) {
#if !defined(__HIP__) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __nv_bfloat16 r = __ldg(reinterpret_cast<const __nv_bfloat16 *>(p));
  return *reinterpret_cast<c10::BFloat16 *>(&r);
#else
  return *p;
#endif
}
// km:__ldg-BFloat16-end
namespace at {
using c10::BFloat16;
using c10::Half;
template <class T, bool is_cuda = true> using acc_type = typename c10::km_acc<T, is_cuda>::type;
// ATen/cuda/NumericLimits.cuh: std::numeric_limits for device code. lowest/max are the finite extremes;
// lower_bound/upper_bound are -inf/+inf for floating types and lowest/max for integers. Half and BFloat16 are
// given by their bits (fp16 0xFBFF/0x7BFF, infinities 0xFC00/0x7C00; bf16 0xFF7F/0x7F7F, 0xFF80/0x7F80).
template <typename T> struct numeric_limits {};
#define KM_INT_LIMITS(T, LO, HI)                                                                      \
  template <> struct numeric_limits<T> {                                                              \
    static inline __host__ __device__ T lowest() { return LO; }                                       \
    static inline __host__ __device__ T max() { return HI; }                                          \
    static inline __host__ __device__ T lower_bound() { return LO; }                                  \
    static inline __host__ __device__ T upper_bound() { return HI; }                                  \
  };
KM_INT_LIMITS(bool, false, true)
KM_INT_LIMITS(uint8_t, 0, 255)
KM_INT_LIMITS(int8_t, -128, 127)
KM_INT_LIMITS(int16_t, -32768, 32767)
KM_INT_LIMITS(int32_t, (-2147483647 - 1), 2147483647)
KM_INT_LIMITS(int64_t, (-9223372036854775807LL - 1), 9223372036854775807LL)
#undef KM_INT_LIMITS
template <> struct numeric_limits<float> {
  static inline __host__ __device__ float lowest() { return -3.40282347e+38F; }
  static inline __host__ __device__ float max() { return 3.40282347e+38F; }
  static inline __host__ __device__ float lower_bound() { return -__builtin_huge_valf(); }
  static inline __host__ __device__ float upper_bound() { return __builtin_huge_valf(); }
};
template <> struct numeric_limits<double> {
  static inline __host__ __device__ double lowest() { return -1.7976931348623157e+308; }
  static inline __host__ __device__ double max() { return 1.7976931348623157e+308; }
  static inline __host__ __device__ double lower_bound() { return -__builtin_huge_val(); }
  static inline __host__ __device__ double upper_bound() { return __builtin_huge_val(); }
};
#define KM_BITS_LIMITS(T, LO, HI, NINF, PINF)                                                          \
  template <> struct numeric_limits<T> {                                                               \
    static inline __host__ __device__ T bits(unsigned short b) { T v; v.x = b; return v; }             \
    static inline __host__ __device__ T lowest() { return bits(LO); }                                  \
    static inline __host__ __device__ T max() { return bits(HI); }                                     \
    static inline __host__ __device__ T lower_bound() { return bits(NINF); }                           \
    static inline __host__ __device__ T upper_bound() { return bits(PINF); }                           \
  };
KM_BITS_LIMITS(Half, 0xFBFF, 0x7BFF, 0xFC00, 0x7C00)
KM_BITS_LIMITS(BFloat16, 0xFF7F, 0x7F7F, 0xFF80, 0x7F80)
#undef KM_BITS_LIMITS
template <class T> struct OpMathType { using type = T; };
template <> struct OpMathType<Half> { using type = float; };
template <> struct OpMathType<BFloat16> { using type = float; };
template <class T> using opmath_type = typename OpMathType<T>::type;
template <typename T> struct DefaultPtrTraits { typedef T *PtrType; };
template <typename T> struct RestrictPtrTraits { typedef T *__restrict__ PtrType; };
// The accessors as torch writes them (torch/headeronly/core/TensorAccessor.h): the same members, constructors,
// non-const and const operator[] (the const one of a `const` kernel parameter yields `const T &`), sizes and
// strides indexed by index_t, the item accessor built from named `new_sizes`/`new_strides` pointers. An
// aggregate with only a const operator[] holds the same data but nvcc orders the loads differently.
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
struct TensorAccessorBase {
  typedef typename PtrTraits<T>::PtrType PtrType;
  __host__ __device__ TensorAccessorBase(PtrType data_, const index_t *sizes_, const index_t *strides_)
      : data_(data_), sizes_(sizes_), strides_(strides_) {}
  __host__ __device__ index_t stride(index_t i) const { return strides_[i]; }
  __host__ __device__ index_t size(index_t i) const { return sizes_[i]; }
  __host__ __device__ PtrType data() { return data_; }
  __host__ __device__ const PtrType data() const { return data_; }
  PtrType data_; const index_t *sizes_; const index_t *strides_;
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
struct TensorAccessor : TensorAccessorBase<T, N, PtrTraits, index_t> {
  typedef typename PtrTraits<T>::PtrType PtrType;
  __host__ __device__ TensorAccessor(PtrType data_, const index_t *sizes_, const index_t *strides_)
      : TensorAccessorBase<T, N, PtrTraits, index_t>(data_, sizes_, strides_) {}
  __host__ __device__ TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, this->sizes_ + 1,
                                                        this->strides_ + 1);
  }
  __host__ __device__ const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, this->sizes_ + 1,
                                                        this->strides_ + 1);
  }
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
struct TensorAccessor<T, 1, PtrTraits, index_t> : TensorAccessorBase<T, 1, PtrTraits, index_t> {
  typedef typename PtrTraits<T>::PtrType PtrType;
  __host__ __device__ TensorAccessor(PtrType data_, const index_t *sizes_, const index_t *strides_)
      : TensorAccessorBase<T, 1, PtrTraits, index_t>(data_, sizes_, strides_) {}
  __host__ __device__ T &operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  __host__ __device__ const T &operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
struct GenericPackedTensorAccessorBase {
  typedef typename PtrTraits<T>::PtrType PtrType;
  GenericPackedTensorAccessorBase() = default;  // torch has none; the unit's host wrapper value-initializes
  __host__ GenericPackedTensorAccessorBase(PtrType data, const index_t *sizes, const index_t *strides) : data_(data) {
    for (size_t i = 0; i < N; ++i) { sizes_[i] = sizes[i]; strides_[i] = strides[i]; }
  }
  __host__ __device__ index_t stride(index_t i) const { return strides_[i]; }
  __host__ __device__ index_t size(index_t i) const { return sizes_[i]; }
  __host__ __device__ PtrType data() { return data_; }
  __host__ __device__ const PtrType data() const { return data_; }
  PtrType data_; index_t sizes_[N]; index_t strides_[N];
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
struct GenericPackedTensorAccessor : GenericPackedTensorAccessorBase<T, N, PtrTraits, index_t> {
  typedef typename PtrTraits<T>::PtrType PtrType;
  GenericPackedTensorAccessor() = default;
  __host__ GenericPackedTensorAccessor(PtrType data, const index_t *sizes, const index_t *strides)
      : GenericPackedTensorAccessorBase<T, N, PtrTraits, index_t>(data, sizes, strides) {}
  __device__ TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) {
    index_t *new_sizes = this->sizes_ + 1;
    index_t *new_strides = this->strides_ + 1;
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, new_sizes, new_strides);
  }
  __device__ const TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t i) const {
    const index_t *new_sizes = this->sizes_ + 1;
    const index_t *new_strides = this->strides_ + 1;
    return TensorAccessor<T, N - 1, PtrTraits, index_t>(this->data_ + this->strides_[0] * i, new_sizes, new_strides);
  }
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
struct GenericPackedTensorAccessor<T, 1, PtrTraits, index_t> : GenericPackedTensorAccessorBase<T, 1, PtrTraits, index_t> {
  typedef typename PtrTraits<T>::PtrType PtrType;
  GenericPackedTensorAccessor() = default;
  __host__ GenericPackedTensorAccessor(PtrType data, const index_t *sizes, const index_t *strides)
      : GenericPackedTensorAccessorBase<T, 1, PtrTraits, index_t>(data, sizes, strides) {}
  __device__ T &operator[](index_t i) { return this->data_[this->strides_[0] * i]; }
  __device__ const T &operator[](index_t i) const { return this->data_[this->strides_[0] * i]; }
};
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int32_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, int64_t>;
template <typename T, size_t N, template <typename U> class PtrTraits = DefaultPtrTraits, typename index_t = int64_t>
using PackedTensorAccessor = GenericPackedTensorAccessor<T, N, PtrTraits, index_t>;
namespace cuda { namespace detail {
// ATen's layout (ATen/cuda/detail/TensorInfo.cuh): kernels take it by value.
template <typename T, typename IndexType> struct TensorInfo {
  T *data; IndexType sizes[25]; IndexType strides[25]; int dims;
  __host__ __device__ bool isContiguous() const { return dims == 1 && strides[0] == 1; }
};
template <typename T, typename IndexType, int Dims> struct IndexToOffset {
  static __host__ __device__ IndexType get(IndexType linearId, const TensorInfo<T, IndexType> &info) {
    IndexType offset = 0;
    for (int i = (Dims < 0 ? info.dims : Dims) - 1; i > 0; --i) {
      offset += (linearId % info.sizes[i]) * info.strides[i];
      linearId /= info.sizes[i];
    }
    return offset + linearId * info.strides[0];
  }
};
}}  // namespace cuda::detail
// ATen/cuda/detail/PhiloxCudaStateRaw.cuh's layout (random kernels take it by value: dropout, sampling) and
// UnpackRaw.cuh's unpack, the only device use of it.
struct PhiloxCudaState {
  PhiloxCudaState() = default;
  PhiloxCudaState(uint64_t seed, uint64_t offset) { seed_.val = seed; offset_.val = offset; }
  PhiloxCudaState(int64_t *seed, int64_t *offset_extragraph, uint64_t offset_intragraph) {
    seed_.ptr = seed; offset_.ptr = offset_extragraph; offset_intragraph_ = offset_intragraph; captured_ = true;
  }
  union Payload { uint64_t val; int64_t *ptr; };
  Payload seed_{};
  Payload offset_{};
  uint64_t offset_intragraph_ = 0;
  bool captured_ = false;
};
namespace cuda { namespace philox {
__host__ __device__ __forceinline__ std::tuple<uint64_t, uint64_t> unpack(at::PhiloxCudaState arg) {
  if (arg.captured_)
    return std::make_tuple(static_cast<uint64_t>(*arg.seed_.ptr),
                           static_cast<uint64_t>(*(arg.offset_.ptr) + arg.offset_intragraph_));
  return std::make_tuple(arg.seed_.val, arg.offset_.val);
}
}}  // namespace cuda::philox
namespace native {
// ATen/native/cuda/KernelUtils.cuh, as written there for CUDA: with fast atomics a 16-bit value is added
// as one half of an aligned 32-bit pair (the other half zero) where the pair lies inside the tensor.
template <class T, class I>
__device__ __forceinline__ void fastSpecializedAtomicAdd(T *tensor, I index, const I numel, T value) {
  atomicAdd(tensor + index, value);
}
#if !defined(__HIP__)
template <class I>
__device__ __forceinline__ void fastSpecializedAtomicAdd(c10::Half *tensor, I index, const I numel, c10::Half value) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 700)
  atomicAdd(tensor + index, value);
#else
  __half *target_addr = reinterpret_cast<__half *>(tensor + index);
  bool low_byte = (reinterpret_cast<uintptr_t>(target_addr) % sizeof(__half2) == 0);
  if (low_byte && index < (numel - 1)) {
    __half2 value2;
    value2.x = static_cast<__half>(value);
    value2.y = __int2half_rz(0);
    atomicAdd(reinterpret_cast<__half2 *>(target_addr), value2);
  } else if (!low_byte && index > 0) {
    __half2 value2;
    value2.x = __int2half_rz(0);
    value2.y = static_cast<__half>(value);
    atomicAdd(reinterpret_cast<__half2 *>(target_addr - 1), value2);
  } else {
    atomicAdd(reinterpret_cast<__half *>(tensor) + index, static_cast<__half>(value));
  }
#endif
}
#if __has_include(<cuda_bf16.h>)
template <class I>
__device__ __forceinline__ void fastSpecializedAtomicAdd(c10::BFloat16 *tensor, I index, const I numel,
                                                         c10::BFloat16 value) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ < 800)
  atomicAdd(tensor + index, value);
#else
  __nv_bfloat16 *target_addr = reinterpret_cast<__nv_bfloat16 *>(tensor + index);
  bool low_byte = (reinterpret_cast<uintptr_t>(target_addr) % sizeof(__nv_bfloat162) == 0);
  if (low_byte && index < (numel - 1)) {
    __nv_bfloat162 value2;
    value2.x = *reinterpret_cast<__nv_bfloat16 *>(&value);
    value2.y = __int2bfloat16_rz(0);
    atomicAdd(reinterpret_cast<__nv_bfloat162 *>(target_addr), value2);
  } else if (!low_byte && index > 0) {
    __nv_bfloat162 value2;
    value2.x = __int2bfloat16_rz(0);
    value2.y = *reinterpret_cast<__nv_bfloat16 *>(&value);
    atomicAdd(reinterpret_cast<__nv_bfloat162 *>(target_addr - 1), value2);
  } else {
    atomicAdd(reinterpret_cast<__nv_bfloat16 *>(tensor) + index, *reinterpret_cast<__nv_bfloat16 *>(&value));
  }
#endif
}
#endif
#endif
template <class T, class I>
__device__ __forceinline__ void fastAtomicAdd(T *tensor, I index, const I numel, T value, bool fast_atomics) {
  if (fast_atomics) {
    fastSpecializedAtomicAdd(tensor, index, numel, value);
  } else {
    atomicAdd(tensor + index, value);
  }
}
}  // namespace native
}  // namespace at
namespace c10 { struct intrusive_ptr_target {}; }
// Parameter structs registered as torch classes derive from it; device code uses only their static
// constants and nested enums (their at::Tensor members are left out of the unit).
namespace torch { using namespace at; struct CustomClassHolder : c10::intrusive_ptr_target {}; }
// THC/THCDeviceUtils.cuh's ceil-division, host and device: older ops size their tiles with it in device code.
template <typename T> __host__ __device__ __forceinline__ T THCCeilDiv(T a, T b) { return (a + b - 1) / b; }
// ATen/cuda/Atomic.cuh's int64_t overload (CUDA has only unsigned long long): the value's bits as they are.
// km:atomicAdd-int64_t-begin
#if !defined(__HIP__)
__device__ inline void atomicAdd(int64_t *p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long *>(p), static_cast<unsigned long long>(v)); }
#endif
// km:atomicAdd-int64_t-end
// ATen/cuda/Atomic.cuh's 8- and 16-bit integer adds: a compare-and-swap loop on the 32-bit word holding the
// value (AtomicAddIntegerImpl<T, 1 / 2>, func `a + b`; bool's is `a || b`).
template <class T, class F> __device__ inline void km_atomic_int_op(T *address, T val, F func) {
  if constexpr (sizeof(T) == 1) {
    size_t offset = (size_t)address & 3;
    uint32_t *address_as_ui = (uint32_t *)((char *)address - offset);
    uint32_t old = *address_as_ui, shift = offset * 8, old_byte, newval, assumed;
    do {
      assumed = old;
      old_byte = (old >> shift) & 0xff;
      newval = static_cast<uint8_t>(func(val, static_cast<T>(old_byte)));
      newval = (old & ~(0x000000ff << shift)) | (newval << shift);
      old = atomicCAS(address_as_ui, assumed, newval);
    } while (assumed != old);
  } else {
    size_t offset = (size_t)address & 2;
    uint32_t *address_as_ui = (uint32_t *)((char *)address - offset);
    bool is_32_align = offset;
    uint32_t old = *address_as_ui, old_bytes, newval, assumed;
    do {
      assumed = old;
      old_bytes = is_32_align ? old >> 16 : old & 0xffff;
      newval = static_cast<uint16_t>(func(val, static_cast<T>(old_bytes)));
      newval = is_32_align ? (old & 0xffff) | (newval << 16) : (old & 0xffff0000) | newval;
      old = atomicCAS(address_as_ui, assumed, newval);
    } while (assumed != old);
  }
}
#define KM_ATOMIC_ADD_INT(T)                                                                                    \
  __device__ inline void gpuAtomicAdd(T *address, T val) {                                                      \
    km_atomic_int_op(address, val, [](T a, T b) { return a + b; }); }                                          \
  __device__ inline void atomicAdd(T *address, T val) { gpuAtomicAdd(address, val); }
// km:atomicAdd-uint8_t-begin
KM_ATOMIC_ADD_INT(uint8_t)
// km:atomicAdd-uint8_t-end
// km:atomicAdd-int8_t-begin
KM_ATOMIC_ADD_INT(int8_t)
// km:atomicAdd-int8_t-end
// km:atomicAdd-int16_t-begin
KM_ATOMIC_ADD_INT(int16_t)
// km:atomicAdd-int16_t-end
// km:atomicAdd-bool-begin
__device__ inline void gpuAtomicAdd(bool *address, bool val) {
  km_atomic_int_op(address, val, [](bool a, bool b) { return a || b; }); }
__device__ inline void atomicAdd(bool *address, bool val) { gpuAtomicAdd(address, val); }
// km:atomicAdd-bool-end
#undef KM_ATOMIC_ADD_INT
template <class T> __device__ inline T gpuAtomicAdd(T *p, T v) { return atomicAdd(p, v); }
#if !defined(__HIP__)
__device__ inline void gpuAtomicAdd(int64_t *p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long *>(p), static_cast<unsigned long long>(v)); }
#endif
// ATen/cuda/Atomic.cuh's gpuAtomicMul: compare-and-swap loops, written as there.
__device__ inline float gpuAtomicMul(float *address, float val) {
  unsigned int *address_as_ull = (unsigned int *)address;
  unsigned int old = *address_as_ull, assumed;
  do {
    assumed = old;
    old = atomicCAS(address_as_ull, assumed, __float_as_int(val * __int_as_float(assumed)));
  } while (assumed != old);
  return __int_as_float(old);
}
__device__ inline double gpuAtomicMul(double *address, double val) {
  unsigned long long int *address_as_ull = (unsigned long long int *)address;
  unsigned long long int old = *address_as_ull, assumed;
  do {
    assumed = old;
    old = atomicCAS(address_as_ull, assumed, __double_as_longlong(val * __longlong_as_double(assumed)));
  } while (assumed != old);
  return __longlong_as_double(old);
}
template <class H> __device__ inline H km_atomic_mul16(H *address, H val) {
  unsigned int *address_as_ui = (unsigned int *)((char *)address - ((size_t)address & 2));
  unsigned int old = *address_as_ui, assumed;
  H hsum;
  do {
    assumed = old;
    hsum.x = (size_t)address & 2 ? (old >> 16) : (old & 0xffff);
    hsum = hsum * val;
    old = (size_t)address & 2 ? (old & 0xffff) | (hsum.x << 16) : (old & 0xffff0000) | hsum.x;
    old = atomicCAS(address_as_ui, assumed, old);
  } while (assumed != old);
  hsum.x = (size_t)address & 2 ? (old >> 16) : (old & 0xffff);
  return hsum;
}
__device__ inline c10::Half gpuAtomicMul(c10::Half *address, c10::Half val) { return km_atomic_mul16(address, val); }
__device__ inline c10::BFloat16 gpuAtomicMul(c10::BFloat16 *address, c10::BFloat16 val) {
  return km_atomic_mul16(address, val); }
// ATen/cuda/Atomic.cuh: a complex is added part by part.
template <class T> __device__ inline void gpuAtomicAdd(c10::complex<T> *p, c10::complex<T> v) {
  gpuAtomicAdd(&p->real_, v.real_);
  gpuAtomicAdd(&p->imag_, v.imag_);
}
// ATen/cuda/DeviceUtils.cuh's warp helpers, with its two forms: the *_sync ones for CUDA and, as ATen has
// them under USE_ROCM, HIP's plain ones (HIP has no __syncwarp, and its *_sync forms, from ROCm 6.2 and only
// with HIP_ENABLE_WARP_SYNC_BUILTINS, take 64-bit masks). A unit translated to HIP compiles the second.
// Each sits between km:def-<name> markers: a repo that defines one itself at global scope (a helper header
// of its own in place of ATen's) keeps its own, and the renderer cuts the shim's out.
#if defined(__HIP_PLATFORM_AMD__)
// km:def-ACTIVE_MASK-begin
__device__ __forceinline__ unsigned int ACTIVE_MASK() { return 0xffffffff; }  // ATen: "ignored anyway"
// km:def-ACTIVE_MASK-end
// km:def-WARP_SYNC-begin
__device__ __forceinline__ void WARP_SYNC(unsigned mask = 0xffffffff) {}
// km:def-WARP_SYNC-end
// km:def-WARP_BALLOT-begin
__device__ __forceinline__ unsigned long long int WARP_BALLOT(int predicate) { return __ballot(predicate); }
// km:def-WARP_BALLOT-end
// km:def-WARP_SHFL-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL(T value, int srcLane, int width = warpSize,
                                                          unsigned int mask = 0xffffffff) {
  return __shfl(value, srcLane, width); }
// km:def-WARP_SHFL-end
// km:def-WARP_SHFL_XOR-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL_XOR(T value, int laneMask, int width = warpSize,
                                                              unsigned int mask = 0xffffffff) {
  return __shfl_xor(value, laneMask, width); }
// km:def-WARP_SHFL_XOR-end
// km:def-WARP_SHFL_UP-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL_UP(T value, unsigned int delta, int width = warpSize,
                                                             unsigned int mask = 0xffffffff) {
  return __shfl_up(value, delta, width); }
// km:def-WARP_SHFL_UP-end
// km:def-WARP_SHFL_DOWN-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL_DOWN(T value, unsigned int delta, int width = warpSize,
                                                               unsigned int mask = 0xffffffff) {
  return __shfl_down(value, delta, width); }
// km:def-WARP_SHFL_DOWN-end
#else
// km:def-ACTIVE_MASK-begin
__device__ __forceinline__ unsigned int ACTIVE_MASK() { return __activemask(); }
// km:def-ACTIVE_MASK-end
// km:def-WARP_SYNC-begin
__device__ __forceinline__ void WARP_SYNC(unsigned mask = 0xffffffff) { __syncwarp(mask); }
// km:def-WARP_SYNC-end
// km:def-WARP_BALLOT-begin
__device__ __forceinline__ unsigned int WARP_BALLOT(int predicate, unsigned int mask = 0xffffffff) {
  return __ballot_sync(mask, predicate); }
// km:def-WARP_BALLOT-end
// km:def-WARP_SHFL-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL(T value, int srcLane, int width = warpSize,
                                                          unsigned int mask = 0xffffffff) {
  return __shfl_sync(mask, value, srcLane, width); }
// km:def-WARP_SHFL-end
// km:def-WARP_SHFL_XOR-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL_XOR(T value, int laneMask, int width = warpSize,
                                                              unsigned int mask = 0xffffffff) {
  return __shfl_xor_sync(mask, value, laneMask, width); }
// km:def-WARP_SHFL_XOR-end
// km:def-WARP_SHFL_UP-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL_UP(T value, unsigned int delta, int width = warpSize,
                                                             unsigned int mask = 0xffffffff) {
  return __shfl_up_sync(mask, value, delta, width); }
// km:def-WARP_SHFL_UP-end
// km:def-WARP_SHFL_DOWN-begin
template <typename T> __device__ __forceinline__ T WARP_SHFL_DOWN(T value, unsigned int delta, int width = warpSize,
                                                               unsigned int mask = 0xffffffff) {
  return __shfl_down_sync(mask, value, delta, width); }
// km:def-WARP_SHFL_DOWN-end
#endif
using at::Half;
using at::BFloat16;
