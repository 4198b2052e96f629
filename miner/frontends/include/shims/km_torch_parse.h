/* kernel-miner parse shim for ATen/c10/torch names that CUDA sources use.
 * Only for libclang parsing: declarations, no behaviour. The AT_DISPATCH_* macros expand the
 * lambda once per dispatched type, so every instantiation appears in the AST.
 */
#ifndef KM_TORCH_PARSE_H
#define KM_TORCH_PARSE_H
#include "cuda_fp16.h"
#include "cuda_bf16.h"

namespace c10 {
enum class ScalarType { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16 };
enum class DeviceType { CPU, CUDA };
enum class MemoryFormat { Contiguous, ChannelsLast };
struct Half { unsigned short x; __host__ __device__ Half() {} __host__ __device__ Half(float) {}
  __host__ __device__ operator float() const; };
struct BFloat16 { unsigned short x; __host__ __device__ BFloat16() {} __host__ __device__ BFloat16(float) {}
  __host__ __device__ operator float() const; };
struct Scalar { Scalar(double); template <class T> T to() const; };
struct Device { Device(DeviceType, int = 0); int index() const; };
struct IntArrayRef { IntArrayRef(...); long size() const; const long *data() const; };
template <class T> struct optional { bool has_value() const; T value() const; };
template <class T> struct ArrayRef { ArrayRef(...); long size() const; const T *data() const; };
template <class T, bool is_cuda = true> struct acc_type_s { typedef T type; };
template <> struct acc_type_s<Half, true> { typedef float type; };
template <> struct acc_type_s<BFloat16, true> { typedef float type; };
}  // namespace c10

namespace at {
using c10::BFloat16;
using c10::Half;
using c10::ScalarType;
using c10::Scalar;
using c10::Device;
using c10::IntArrayRef;
using c10::MemoryFormat;
using c10::optional;
using c10::ArrayRef;
constexpr ScalarType kFloat = ScalarType::Float, kDouble = ScalarType::Double, kHalf = ScalarType::Half,
    kInt = ScalarType::Int, kLong = ScalarType::Long, kBool = ScalarType::Bool, kByte = ScalarType::Byte,
    kChar = ScalarType::Char, kBFloat16 = ScalarType::BFloat16, kUInt8 = ScalarType::Byte;
constexpr c10::DeviceType kCPU = c10::DeviceType::CPU, kCUDA = c10::DeviceType::CUDA;
template <class T, bool is_cuda = true> using acc_type = typename c10::acc_type_s<T, is_cuda>::type;
template <typename T> struct DefaultPtrTraits { typedef T *PtrType; };
template <typename T> struct RestrictPtrTraits { typedef T *__restrict PtrType; };
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits,
          typename index_t = long>
struct TensorAccessor { __host__ __device__ T &operator[](index_t); __host__ __device__ index_t size(int) const; };
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits,
          typename index_t = long>
struct PackedTensorAccessor { __host__ __device__ TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t);
  __host__ __device__ index_t size(int) const; __host__ __device__ T *data(); };
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = PackedTensorAccessor<T, N, PtrTraits, int>;
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = PackedTensorAccessor<T, N, PtrTraits, long>;
struct TensorOptions { TensorOptions(...); TensorOptions dtype(ScalarType) const; TensorOptions device(...) const; };
struct Tensor {
  template <class T> T *data_ptr() const;
  void *data_ptr() const;
  template <class T> T *data() const;
  template <class T> T item() const;
  template <class T, unsigned long N, template <typename U> class P = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, P> packed_accessor64() const;
  template <class T, unsigned long N, template <typename U> class P = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, P> packed_accessor32() const;
  template <class T, unsigned long N> TensorAccessor<T, N> accessor() const;
  long size(long) const; IntArrayRef sizes() const; long stride(long) const; long numel() const;
  long dim() const; ScalarType scalar_type() const; TensorOptions options() const; Device device() const;
  bool is_cuda() const; bool is_contiguous() const; Tensor contiguous() const; Tensor view(...) const;
  Tensor reshape(...) const; Tensor permute(...) const; Tensor transpose(long, long) const;
  Tensor to(...) const; Tensor type_as(const Tensor &) const; Tensor zero_(); Tensor fill_(...);
  Tensor select(long, long) const; Tensor narrow(long, long, long) const; Tensor index_select(...) const;
  Tensor sum(...) const; Tensor mean(...) const; Tensor add_(...); Tensor copy_(...); Tensor resize_(...);
  Tensor clone() const; Tensor new_zeros(...) const; Tensor new_empty(...) const; Tensor cuda() const;
  Tensor cpu() const; Tensor slice(...) const; Tensor t() const; Tensor unsqueeze(long) const;
  Tensor squeeze(...) const; Tensor expand(...) const; Tensor operator[](long) const;
  Tensor sort(...) const; Tensor index(...) const; Tensor masked_select(...) const;
  bool defined() const; long element_size() const; Tensor &operator=(const Tensor &);
};
Tensor empty(...); Tensor zeros(...); Tensor ones(...); Tensor full(...); Tensor empty_like(...);
Tensor zeros_like(...); Tensor ones_like(...); Tensor arange(...); Tensor cat(...); Tensor stack(...);
Tensor from_blob(...); Tensor mm(...); Tensor mm_out(...); Tensor index_select_out(...);
Tensor unique_dim(...); Tensor _unique(...); Tensor where(...);
TensorOptions device(...); TensorOptions dtype(...);
namespace cuda {
cudaStream_t getCurrentCUDAStream(int device = -1);
cudaStream_t getDefaultCUDAStream(int device = -1);
cudaDeviceProp *getCurrentDeviceProperties();
int current_device();
struct CUDAGuard { CUDAGuard(...); };
struct OptionalCUDAGuard { OptionalCUDAGuard(...); };
template <class T> T ATenCeilDiv(T a, T b) { return (a + b - 1) / b; }
}  // namespace cuda
}  // namespace at

namespace c10 { namespace cuda {
using at::cuda::CUDAGuard;
using at::cuda::OptionalCUDAGuard;
cudaStream_t getCurrentCUDAStream(int device = -1);
}}  // namespace c10::cuda

namespace torch {
using namespace at;
namespace indexing { struct Slice { Slice(...); }; }
}  // namespace torch

/* fastAtomicAdd and THC's half atomicAdd come from torch headers in real builds. */
namespace at { namespace native {
template <class T, class I> __device__ void fastAtomicAdd(T *tensor, I index, I numel, T value, bool fast);
}}
__device__ c10::Half atomicAdd(c10::Half *, c10::Half);
__device__ c10::BFloat16 atomicAdd(c10::BFloat16 *, c10::BFloat16);
__device__ inline c10::Half gpuAtomicAdd(c10::Half *a, c10::Half b) { return atomicAdd(a, b); }
__device__ float gpuAtomicAdd(float *, float);
__device__ double gpuAtomicAdd(double *, double);
inline long THCCeilDiv(long a, long b) { return (a + b - 1) / b; }

void km_torch_check_impl(bool, ...);
#define TORCH_CHECK(cond, ...) km_torch_check_impl((cond))
#define TORCH_INTERNAL_ASSERT(cond, ...) km_torch_check_impl((cond))
#define AT_ASSERTM(cond, ...) km_torch_check_impl((cond))
#define AT_ASSERT(cond, ...) km_torch_check_impl((cond))
#define AT_ERROR(...) km_torch_check_impl(false)
#define AT_CUDA_CHECK(expr) ((void)(expr))
#define C10_CUDA_CHECK(expr) ((void)(expr))
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#define C10_HOST_DEVICE __host__ __device__
#define C10_DEVICE __device__
#define C10_LAUNCH_BOUNDS_1(m) __launch_bounds__(m)
#define C10_LAUNCH_BOUNDS_2(m, n) __launch_bounds__(m, n)
#define C10_WARP_SIZE 32
#define CHECK_CUDA(x) TORCH_CHECK((x).is_cuda())
#define CHECK_CONTIGUOUS(x) TORCH_CHECK((x).is_contiguous())
#define CHECK_INPUT(x) TORCH_CHECK((x).is_cuda())

/* One block per dispatched type: `scalar_t` is bound in each, so each launch instantiates. */
#define KM_DISPATCH_CASE(T, ...) { using scalar_t = T; __VA_ARGS__(); }
#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  [&] { KM_DISPATCH_CASE(float, __VA_ARGS__) KM_DISPATCH_CASE(double, __VA_ARGS__) }()
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...)                                   \
  [&] { KM_DISPATCH_CASE(float, __VA_ARGS__) KM_DISPATCH_CASE(double, __VA_ARGS__)             \
        KM_DISPATCH_CASE(at::Half, __VA_ARGS__) }()
#define AT_DISPATCH_FLOATING_TYPES_AND(S1, TYPE, NAME, ...)                                    \
  [&] { KM_DISPATCH_CASE(float, __VA_ARGS__) KM_DISPATCH_CASE(double, __VA_ARGS__)             \
        KM_DISPATCH_CASE(km_scalar_type_t<S1>, __VA_ARGS__) }()
#define AT_DISPATCH_FLOATING_TYPES_AND2(S1, S2, TYPE, NAME, ...)                               \
  [&] { KM_DISPATCH_CASE(float, __VA_ARGS__) KM_DISPATCH_CASE(double, __VA_ARGS__)             \
        KM_DISPATCH_CASE(km_scalar_type_t<S1>, __VA_ARGS__)                                    \
        KM_DISPATCH_CASE(km_scalar_type_t<S2>, __VA_ARGS__) }()
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...)                                    \
  [&] { KM_DISPATCH_CASE(at::Half, __VA_ARGS__) KM_DISPATCH_CASE(at::BFloat16, __VA_ARGS__) }()
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...)                                            \
  [&] { KM_DISPATCH_CASE(unsigned char, __VA_ARGS__) KM_DISPATCH_CASE(signed char, __VA_ARGS__) \
        KM_DISPATCH_CASE(short, __VA_ARGS__) KM_DISPATCH_CASE(int, __VA_ARGS__)                \
        KM_DISPATCH_CASE(long, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...)                                                 \
  [&] { KM_DISPATCH_CASE(unsigned char, __VA_ARGS__) KM_DISPATCH_CASE(signed char, __VA_ARGS__) \
        KM_DISPATCH_CASE(short, __VA_ARGS__) KM_DISPATCH_CASE(int, __VA_ARGS__)                \
        KM_DISPATCH_CASE(long, __VA_ARGS__) KM_DISPATCH_CASE(float, __VA_ARGS__)               \
        KM_DISPATCH_CASE(double, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES_AND_HALF(TYPE, NAME, ...)                                        \
  [&] { KM_DISPATCH_CASE(unsigned char, __VA_ARGS__) KM_DISPATCH_CASE(signed char, __VA_ARGS__) \
        KM_DISPATCH_CASE(short, __VA_ARGS__) KM_DISPATCH_CASE(int, __VA_ARGS__)                \
        KM_DISPATCH_CASE(long, __VA_ARGS__) KM_DISPATCH_CASE(float, __VA_ARGS__)               \
        KM_DISPATCH_CASE(double, __VA_ARGS__) KM_DISPATCH_CASE(at::Half, __VA_ARGS__) }()
#define AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(TYPE, NAME, ...) AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, __VA_ARGS__)
/* dispatch v2: AT_DISPATCH_V2(type, name, AT_WRAP(lambda), AT_EXPAND(AT_FLOATING_TYPES), kHalf) */
#define AT_WRAP(...) __VA_ARGS__
#define AT_EXPAND(...) __VA_ARGS__
#define AT_FLOATING_TYPES at::kDouble, at::kFloat
#define AT_INTEGRAL_TYPES at::kByte, at::kChar, at::kInt, at::kLong, at::kShort
#define AT_ALL_TYPES AT_FLOATING_TYPES, AT_INTEGRAL_TYPES
#define AT_DISPATCH_V2(TYPE, NAME, BODY, ...) km_dispatch_v2(BODY, __VA_ARGS__)
template <c10::ScalarType S> struct km_scalar_type_s { typedef float type; };
template <> struct km_scalar_type_s<c10::ScalarType::Double> { typedef double type; };
template <> struct km_scalar_type_s<c10::ScalarType::Half> { typedef c10::Half type; };
template <> struct km_scalar_type_s<c10::ScalarType::BFloat16> { typedef c10::BFloat16 type; };
template <> struct km_scalar_type_s<c10::ScalarType::Int> { typedef int type; };
template <> struct km_scalar_type_s<c10::ScalarType::Long> { typedef long type; };
template <> struct km_scalar_type_s<c10::ScalarType::Bool> { typedef bool type; };
template <> struct km_scalar_type_s<c10::ScalarType::Byte> { typedef unsigned char type; };
template <> struct km_scalar_type_s<c10::ScalarType::Char> { typedef signed char type; };
template <> struct km_scalar_type_s<c10::ScalarType::Short> { typedef short type; };
template <c10::ScalarType S> using km_scalar_type_t = typename km_scalar_type_s<S>::type;
template <class F, class... S> void km_dispatch_v2(F f, S...);

using at::Half;
using at::BFloat16;
#endif  // KM_TORCH_PARSE_H
