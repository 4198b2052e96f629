/* kernel-miner parse shim for ATen/c10/torch names that CUDA sources use.
 * Only for libclang parsing: declarations, no behaviour. The AT_DISPATCH_* macros expand the
 * lambda once per dispatched type, so every instantiation appears in the AST.
 */
#ifndef KM_TORCH_PARSE_H
#define KM_TORCH_PARSE_H
/* What torch.utils.cpp_extension passes to nvcc for every CUDA extension; unless the project's build
 * undoes some (-U), then the parse is given the ones it keeps (KM_BUILD_HALF_FLAGS). */
#ifndef KM_BUILD_HALF_FLAGS
#ifndef __CUDA_NO_HALF_OPERATORS__
#define __CUDA_NO_HALF_OPERATORS__
#endif
#ifndef __CUDA_NO_HALF_CONVERSIONS__
#define __CUDA_NO_HALF_CONVERSIONS__
#endif
#ifndef __CUDA_NO_BFLOAT16_CONVERSIONS__
#define __CUDA_NO_BFLOAT16_CONVERSIONS__
#endif
#ifndef __CUDA_NO_HALF2_OPERATORS__
#define __CUDA_NO_HALF2_OPERATORS__
#endif
#endif
#include "cuda_runtime.h"
/* torch/extension.h brings most of the standard library; code relies on it. */
#if __has_include(<vector>)
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <vector>
#include <string>
#include <tuple>
#include <utility>
#include <limits>
#include <cfloat>
#include <climits>
#include <cstdint>
#include <algorithm>
#include <type_traits>
#include <initializer_list>
#include <optional>
#include <memory>
#include <map>
#include <unordered_map>
#include <functional>
#include <array>
#include <ostream>
#include <sstream>
#endif

namespace c10 {
enum class ScalarType { Byte, Char, Short, Int, Long, Half, Float, Double, ComplexHalf, ComplexFloat,
  ComplexDouble, Bool, QInt8, QUInt8, QInt32, BFloat16, QUInt4x2, QUInt2x4, Bits1x8, Bits2x4, Bits4x2,
  Bits8, Bits16, Float8_e5m2, Float8_e4m3fn, UInt16, UInt32, UInt64, Undefined, NumOptions };
#if __has_include(<vector>)
/* Dispatch macros report the type they cannot handle: `oss << "no kernel for " << tensor.scalar_type()`. */
std::ostream &operator<<(std::ostream &, ScalarType);
#endif
enum class DeviceType : signed char { CPU = 0, CUDA = 1, MKLDNN = 2, OPENGL = 3, OPENCL = 4, IDEEP = 5,
  HIP = 6, FPGA = 7, MAIA = 8, XLA = 9, Vulkan = 10, Metal = 11, XPU = 12, MPS = 13, Meta = 14, HPU = 15,
  VE = 16, Lazy = 17, IPU = 18, MTIA = 19, PrivateUse1 = 20, COMPILE_TIME_MAX_DEVICE_TYPES = 21 };
enum class MemoryFormat : signed char { Contiguous, Preserve, ChannelsLast, ChannelsLast3d };
enum class Layout : signed char { Strided, Sparse };
typedef signed char DeviceIndex;
struct Half {
  unsigned short x;
  Half() = default;
  __host__ __device__ Half(float);
  __host__ __device__ Half(const __half &);
  __host__ __device__ operator float() const;
  __host__ __device__ operator __half() const;
};
struct BFloat16 {
  unsigned short x;
  BFloat16() = default;
  __host__ __device__ BFloat16(float);
  __host__ __device__ BFloat16(const __nv_bfloat16 &);
  __host__ __device__ operator float() const;
  __host__ __device__ operator __nv_bfloat16() const;
};
/* c10/util/Half-inl.h: exact matches keep `h op x` from being ambiguous between the conversions. */
#define KM_HALF_OPS(H)                                                                           \
  __host__ __device__ H operator+(const H &, const H &);                                         \
  __host__ __device__ H operator-(const H &, const H &);                                         \
  __host__ __device__ H operator*(const H &, const H &);                                         \
  __host__ __device__ H operator/(const H &, const H &);                                         \
  __host__ __device__ H operator-(const H &);                                                    \
  __host__ __device__ H &operator+=(H &, const H &);                                             \
  __host__ __device__ H &operator-=(H &, const H &);                                             \
  __host__ __device__ H &operator*=(H &, const H &);                                             \
  __host__ __device__ H &operator/=(H &, const H &);                                             \
  KM_HALF_MIXED(H, float, float) KM_HALF_MIXED(H, double, double) KM_HALF_MIXED(H, int, H)       \
  KM_HALF_MIXED(H, long, H) KM_HALF_MIXED(H, long long, H)                                       \
  __host__ __device__ float &operator+=(float &, const H &);                                     \
  __host__ __device__ float &operator-=(float &, const H &);                                     \
  __host__ __device__ float &operator*=(float &, const H &);                                     \
  __host__ __device__ float &operator/=(float &, const H &);
#define KM_HALF_MIXED(H, T, R)                                                                   \
  __host__ __device__ R operator+(H, T); __host__ __device__ R operator-(H, T);                  \
  __host__ __device__ R operator*(H, T); __host__ __device__ R operator/(H, T);                  \
  __host__ __device__ R operator+(T, H); __host__ __device__ R operator-(T, H);                  \
  __host__ __device__ R operator*(T, H); __host__ __device__ R operator/(T, H);
KM_HALF_OPS(Half)
KM_HALF_OPS(BFloat16)
#undef KM_HALF_OPS
#undef KM_HALF_MIXED
template <class T> struct complex { T real_, imag_; __host__ __device__ complex(T r = T(), T i = T());
  __host__ __device__ T real() const; __host__ __device__ T imag() const; };
struct Scalar {
  Scalar();
  template <class T> Scalar(T);
  template <class T> T to() const;
  double toDouble() const; float toFloat() const; long toLong() const; int toInt() const; bool toBool() const;
};
struct Device {
  Device(DeviceType, DeviceIndex = -1);
  DeviceIndex index() const; bool has_index() const; DeviceType type() const;
  bool is_cuda() const; bool is_cpu() const; std::string str() const;
  bool operator==(const Device &) const; bool operator!=(const Device &) const;
};
template <class T> struct ArrayRef {
  ArrayRef();
  ArrayRef(const T &);
  ArrayRef(const T *, size_t);
  ArrayRef(std::initializer_list<T>);
  template <class A> ArrayRef(const std::vector<T, A> &);
  size_t size() const; bool empty() const; const T *data() const; const T *begin() const; const T *end() const;
  const T &operator[](size_t) const; const T &front() const; const T &back() const;
  std::vector<T> vec() const;
  bool operator==(const ArrayRef &) const; bool operator!=(const ArrayRef &) const;
};
typedef ArrayRef<long> IntArrayRef;
template <class T, unsigned N = 4> struct SmallVector : std::vector<T> { using std::vector<T>::vector; };
struct nullopt_t { constexpr explicit nullopt_t(int) {} };
constexpr nullopt_t nullopt{0};
template <class T> struct optional {
  optional(); optional(nullopt_t); optional(const T &);
  bool has_value() const; explicit operator bool() const; const T &value() const; T value_or(const T &) const;
  const T &operator*() const; const T *operator->() const;
};
template <class T, bool is_cuda = true> struct acc_type_s { typedef T type; };
template <> struct acc_type_s<Half, true> { typedef float type; };
template <> struct acc_type_s<BFloat16, true> { typedef float type; };
template <> struct acc_type_s<float, true> { typedef float type; };
const char *toString(ScalarType);
std::string DeviceTypeName(DeviceType, bool = false);
size_t elementSize(ScalarType);
}  // namespace c10

namespace at {
using c10::BFloat16;
using c10::Half;
using c10::ScalarType;
/* ATen/cuda/NumericLimits.cuh */
template <typename T> struct numeric_limits {
  static __host__ __device__ T lowest();
  static __host__ __device__ T max();
  static __host__ __device__ T lower_bound();
  static __host__ __device__ T upper_bound();
};
using c10::Scalar;
using c10::Device;
using c10::DeviceType;
using c10::DeviceIndex;
using c10::IntArrayRef;
using c10::MemoryFormat;
using c10::Layout;
using c10::optional;
using c10::ArrayRef;
using c10::SmallVector;
constexpr ScalarType kFloat = ScalarType::Float, kDouble = ScalarType::Double, kHalf = ScalarType::Half,
    kInt = ScalarType::Int, kLong = ScalarType::Long, kBool = ScalarType::Bool, kByte = ScalarType::Byte,
    kChar = ScalarType::Char, kShort = ScalarType::Short, kBFloat16 = ScalarType::BFloat16,
    kUInt8 = ScalarType::Byte, kInt8 = ScalarType::Char, kInt16 = ScalarType::Short, kInt32 = ScalarType::Int,
    kInt64 = ScalarType::Long, kFloat16 = ScalarType::Half, kFloat32 = ScalarType::Float,
    kFloat64 = ScalarType::Double, kComplexFloat = ScalarType::ComplexFloat,
    kComplexDouble = ScalarType::ComplexDouble, kUInt16 = ScalarType::UInt16, kUInt32 = ScalarType::UInt32,
    kUInt64 = ScalarType::UInt64;
constexpr DeviceType kCPU = DeviceType::CPU, kCUDA = DeviceType::CUDA, kHIP = DeviceType::HIP,
    kXLA = DeviceType::XLA, kMPS = DeviceType::MPS, kMeta = DeviceType::Meta, kXPU = DeviceType::XPU,
    kPrivateUse1 = DeviceType::PrivateUse1;
constexpr Layout kStrided = Layout::Strided;
template <class T, bool is_cuda = true> using acc_type = typename c10::acc_type_s<T, is_cuda>::type;
/* ATen/OpMathType.h: the type arithmetic on T is done in (float for the 16-bit types). */
template <class T> struct OpMathType { using type = T; };
template <> struct OpMathType<Half> { using type = float; };
template <> struct OpMathType<BFloat16> { using type = float; };
template <class T> using opmath_type = typename OpMathType<T>::type;
template <typename T> struct DefaultPtrTraits { typedef T *PtrType; };
template <typename T> struct RestrictPtrTraits { typedef T *__restrict PtrType; };
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits,
          typename index_t = long>
struct TensorAccessor {
  __host__ __device__ TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t) const;
  __host__ __device__ index_t size(int) const; __host__ __device__ index_t stride(int) const;
  __host__ __device__ T *data() const;
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
struct TensorAccessor<T, 1, PtrTraits, index_t> {
  __host__ __device__ T &operator[](index_t) const;
  __host__ __device__ index_t size(int) const; __host__ __device__ index_t stride(int) const;
  __host__ __device__ T *data() const;
};
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits,
          typename index_t = long>
struct GenericPackedTensorAccessor {
  __host__ __device__ TensorAccessor<T, N - 1, PtrTraits, index_t> operator[](index_t) const;
  __host__ __device__ index_t size(int) const; __host__ __device__ index_t stride(int) const;
  __host__ __device__ T *data() const;
};
template <typename T, template <typename U> class PtrTraits, typename index_t>
struct GenericPackedTensorAccessor<T, 1, PtrTraits, index_t> {
  __host__ __device__ T &operator[](index_t) const;
  __host__ __device__ index_t size(int) const; __host__ __device__ index_t stride(int) const;
  __host__ __device__ T *data() const;
};
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits,
          typename index_t = long>
using PackedTensorAccessor = GenericPackedTensorAccessor<T, N, PtrTraits, index_t>;
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor32 = GenericPackedTensorAccessor<T, N, PtrTraits, int>;
template <typename T, unsigned long N, template <typename U> class PtrTraits = DefaultPtrTraits>
using PackedTensorAccessor64 = GenericPackedTensorAccessor<T, N, PtrTraits, long>;
struct TypeMeta { ScalarType toScalarType() const; bool operator==(const TypeMeta &) const;
  bool operator!=(const TypeMeta &) const; bool operator==(ScalarType) const; bool operator!=(ScalarType) const;
  const char *name() const; size_t itemsize() const; };
#if __has_include(<vector>)
std::ostream &operator<<(std::ostream &, const TypeMeta &);
#endif
/* `torch::TensorOptions().dtype(x.dtype())` passes a TypeMeta: without that overload the options, and every
   variable initialized from them, are invalid in the parse, and launches that use them lose their types. */
struct TensorOptions {
  TensorOptions(); TensorOptions(ScalarType); TensorOptions(TypeMeta); TensorOptions(Device); TensorOptions(DeviceType);
  TensorOptions(MemoryFormat); TensorOptions(Layout);
  TensorOptions dtype(ScalarType) const; TensorOptions dtype(TypeMeta) const; TensorOptions device(Device) const; TensorOptions device(DeviceType, int = -1) const;
  TensorOptions layout(Layout) const; TensorOptions requires_grad(bool) const;
  TensorOptions memory_format(MemoryFormat) const; TensorOptions pinned_memory(bool) const;
  TypeMeta dtype() const; Device device() const;
};
struct Tensor;
typedef ArrayRef<Tensor> TensorList;
/* Methods that take sizes accept a braced list (IntArrayRef) or separate values. */
#define KM_SIZES(R, name, Q)                                                                     \
  R name(IntArrayRef, TensorOptions = {}) Q; template <class... A> R name(A...) Q;
namespace indexing { struct TensorIndex; }
struct Tensor {
  Tensor(); Tensor(const Tensor &); Tensor &operator=(const Tensor &); ~Tensor();
  template <class T> T *data_ptr() const;
  void *data_ptr() const;
  template <class T> T *data() const;
  template <class T> T *mutable_data_ptr() const;
  template <class T> const T *const_data_ptr() const;
  template <class T> T item() const;
  Scalar item() const;
  template <class T, unsigned long N, template <typename U> class P = DefaultPtrTraits>
  PackedTensorAccessor64<T, N, P> packed_accessor64() const;
  template <class T, unsigned long N, template <typename U> class P = DefaultPtrTraits>
  PackedTensorAccessor32<T, N, P> packed_accessor32() const;
  template <class T, unsigned long N> TensorAccessor<T, N> accessor() const;
  long size(long) const; IntArrayRef sizes() const; long stride(long) const; IntArrayRef strides() const;
  long numel() const; long dim() const; long ndimension() const; ScalarType scalar_type() const;
  TypeMeta dtype() const; TensorOptions options() const; Device device() const; Layout layout() const;
  bool is_cuda() const; bool is_cpu() const; bool is_contiguous(MemoryFormat = MemoryFormat::Contiguous) const;
  bool is_non_overlapping_and_dense() const; bool defined() const; bool requires_grad() const;
  long element_size() const; long itemsize() const; long nbytes() const; long storage_offset() const;
  MemoryFormat suggest_memory_format(bool = false) const;
  Tensor contiguous(MemoryFormat = MemoryFormat::Contiguous) const;
  KM_SIZES(Tensor, view, const) KM_SIZES(Tensor, reshape, const) KM_SIZES(Tensor, permute, const)
  KM_SIZES(Tensor, expand, const) KM_SIZES(Tensor, repeat, const) KM_SIZES(const Tensor &, resize_, const)
  KM_SIZES(Tensor, new_zeros, const) KM_SIZES(Tensor, new_ones, const) KM_SIZES(Tensor, new_empty, const)
  KM_SIZES(Tensor, sum, const) KM_SIZES(Tensor, mean, const) KM_SIZES(Tensor, flip, const)
  KM_SIZES(Tensor, squeeze, const) KM_SIZES(Tensor, amax, const) KM_SIZES(Tensor, amin, const)
  template <class... A> Tensor to(A...) const; Tensor to(TensorOptions, bool = false, bool = false) const;
  Tensor type_as(const Tensor &) const; Tensor view_as(const Tensor &) const; Tensor expand_as(const Tensor &) const;
  Tensor transpose(long, long) const; Tensor select(long, long) const; Tensor narrow(long, long, long) const;
  Tensor unsqueeze(long) const; Tensor flatten(long = 0, long = -1) const; Tensor t() const;
  Tensor slice(long = 0, long = 0, long = 9223372036854775807L, long = 1) const;
  Tensor index_select(long, const Tensor &) const; Tensor masked_select(const Tensor &) const;
  Tensor masked_fill(const Tensor &, Scalar) const; Tensor &masked_fill_(const Tensor &, Scalar) const;
  Tensor gather(long, const Tensor &) const; Tensor nonzero() const; Tensor clone(MemoryFormat = MemoryFormat::Preserve) const;
  Tensor detach() const; Tensor cuda() const; Tensor cpu() const; Tensor abs() const; Tensor sqrt() const;
  Tensor exp() const; Tensor log() const; Tensor sigmoid() const; Tensor relu() const; Tensor neg() const;
  Tensor floor() const; Tensor ceil() const; Tensor round() const; Tensor argmax(long = 0, bool = false) const;
  Tensor max() const; std::tuple<Tensor, Tensor> max(long, bool = false) const;
  Tensor min() const; std::tuple<Tensor, Tensor> min(long, bool = false) const;
  std::tuple<Tensor, Tensor> sort(long = -1, bool = false) const;
  std::tuple<Tensor, Tensor> topk(long, long = -1, bool = true, bool = true) const;
  Tensor any() const; Tensor all() const; Tensor any(long, bool = false) const; Tensor all(long, bool = false) const; Tensor cumsum(long) const; Tensor clamp(Scalar, Scalar) const;
  Tensor clamp_min(Scalar) const; Tensor clamp_max(Scalar) const; Tensor pow(Scalar) const;
  Tensor lt(Scalar) const; Tensor gt(Scalar) const; Tensor le(Scalar) const; Tensor ge(Scalar) const;
  Tensor eq(Scalar) const; Tensor ne(Scalar) const; Tensor lt(const Tensor &) const; Tensor gt(const Tensor &) const;
  Tensor le(const Tensor &) const; Tensor ge(const Tensor &) const; Tensor eq(const Tensor &) const;
  Tensor ne(const Tensor &) const; bool equal(const Tensor &) const;
  Tensor add(const Tensor &, Scalar = 1) const; Tensor sub(const Tensor &, Scalar = 1) const;
  Tensor mul(const Tensor &) const; Tensor div(const Tensor &) const; Tensor mm(const Tensor &) const;
  Tensor matmul(const Tensor &) const; Tensor bmm(const Tensor &) const;
  Tensor &zero_() const; Tensor &fill_(Scalar) const; Tensor &copy_(const Tensor &, bool = false) const;
  Tensor &add_(const Tensor &, Scalar = 1) const; Tensor &add_(Scalar, Scalar = 1) const;
  Tensor &sub_(const Tensor &, Scalar = 1) const; Tensor &mul_(const Tensor &) const; Tensor &mul_(Scalar) const;
  Tensor &div_(const Tensor &) const; Tensor &div_(Scalar) const; Tensor &clamp_(Scalar, Scalar) const;
  Tensor &index_put_(ArrayRef<Tensor>, const Tensor &, bool = false) const;
  Tensor &index_put_(ArrayRef<Tensor>, Scalar) const;
  Tensor &index_fill_(long, const Tensor &, Scalar) const; Tensor &scatter_(long, const Tensor &, const Tensor &) const;
  Tensor &set_requires_grad(bool) const; Tensor &uniform_(double = 0, double = 1) const;
  Tensor index(ArrayRef<Tensor>) const; Tensor index(std::initializer_list<indexing::TensorIndex>) const;
  Tensor &index_put_(std::initializer_list<indexing::TensorIndex>, const Tensor &) const;
  Tensor &index_put_(std::initializer_list<indexing::TensorIndex>, Scalar) const;
  Tensor operator[](long) const; Tensor operator[](const Tensor &) const;
  template <class T> Tensor &operator+=(const T &); template <class T> Tensor &operator-=(const T &);
  template <class T> Tensor &operator*=(const T &); template <class T> Tensor &operator/=(const T &);
};
#undef KM_SIZES
#define KM_TENSOR_OP(op)                                                                         \
  Tensor operator op(const Tensor &, const Tensor &); Tensor operator op(const Tensor &, Scalar);  \
  Tensor operator op(Scalar, const Tensor &);
KM_TENSOR_OP(+) KM_TENSOR_OP(-) KM_TENSOR_OP(*) KM_TENSOR_OP(/) KM_TENSOR_OP(<) KM_TENSOR_OP(>)
KM_TENSOR_OP(<=) KM_TENSOR_OP(>=) KM_TENSOR_OP(==) KM_TENSOR_OP(!=) KM_TENSOR_OP(&) KM_TENSOR_OP(|)
KM_TENSOR_OP(^) KM_TENSOR_OP(%)
#undef KM_TENSOR_OP
Tensor operator-(const Tensor &); Tensor operator~(const Tensor &); Tensor operator!(const Tensor &);
#define KM_FACTORY(name) Tensor name(IntArrayRef, TensorOptions = {}, optional<MemoryFormat> = {});
KM_FACTORY(empty) KM_FACTORY(zeros) KM_FACTORY(ones) KM_FACTORY(rand) KM_FACTORY(randn)
#undef KM_FACTORY
Tensor full(IntArrayRef, Scalar, TensorOptions = {});
Tensor empty_strided(IntArrayRef, IntArrayRef, TensorOptions = {});
Tensor empty_like(const Tensor &, TensorOptions = {}, optional<MemoryFormat> = {});
Tensor zeros_like(const Tensor &, TensorOptions = {}); Tensor ones_like(const Tensor &, TensorOptions = {});
Tensor full_like(const Tensor &, Scalar, TensorOptions = {});
Tensor arange(Scalar, TensorOptions = {}); Tensor arange(Scalar, Scalar, TensorOptions = {});
Tensor arange(Scalar, Scalar, Scalar, TensorOptions = {});
Tensor from_blob(void *, IntArrayRef, TensorOptions = {});
Tensor from_blob(void *, IntArrayRef, IntArrayRef, TensorOptions = {});
Tensor cat(TensorList, long = 0); Tensor stack(TensorList, long = 0);
Tensor mm(const Tensor &, const Tensor &); Tensor &mm_out(Tensor &, const Tensor &, const Tensor &);
Tensor matmul(const Tensor &, const Tensor &); Tensor bmm(const Tensor &, const Tensor &);
Tensor &index_select_out(Tensor &, const Tensor &, long, const Tensor &);
Tensor index_select(const Tensor &, long, const Tensor &);
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor &, long, bool = true, bool = false, bool = false);
std::tuple<Tensor, Tensor> _unique(const Tensor &, bool = true, bool = false);
std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor &, bool = true, bool = false, bool = false);
Tensor where(const Tensor &, const Tensor &, const Tensor &); Tensor where(const Tensor &, Scalar, Scalar);
Tensor nonzero(const Tensor &); Tensor sqrt(const Tensor &); Tensor exp(const Tensor &); Tensor abs(const Tensor &);
Tensor max(const Tensor &, const Tensor &); Tensor min(const Tensor &, const Tensor &);
Tensor clamp(const Tensor &, Scalar, Scalar); Tensor sigmoid(const Tensor &);
TensorOptions device(Device); TensorOptions device(DeviceType, int = -1); TensorOptions dtype(ScalarType);
TensorOptions dtype(TypeMeta);
optional<Device> device_of(const Tensor &);
namespace indexing {
struct EllipsisIndexType {};
constexpr EllipsisIndexType Ellipsis{};
struct Slice { Slice(optional<long> = {}, optional<long> = {}, optional<long> = {}); };
struct TensorIndex { template <class T> TensorIndex(T); TensorIndex(std::initializer_list<TensorIndex>); };
}  // namespace indexing
namespace cuda {
/* c10::cuda::CUDAStream: converts to cudaStream_t, and `getCurrentCUDAStream().stream()` is a cudaStream_t too
 * (a plain cudaStream_t here made that declaration invalid, and every statement naming its variable, a
 * dispatch's call of the host template that launches, was dropped from the parse). */
struct CUDAStream {
  operator cudaStream_t() const;
  cudaStream_t stream() const;
  DeviceIndex device_index() const;
  long id() const;
  void synchronize() const;
};
CUDAStream getCurrentCUDAStream(int device = -1);
CUDAStream getDefaultCUDAStream(int device = -1);
CUDAStream getStreamFromPool(bool = false, int device = -1);
cudaDeviceProp *getCurrentDeviceProperties();
cudaDeviceProp *getDeviceProperties(int);
int current_device();
int device_count();
struct CUDAGuard { explicit CUDAGuard(Device); explicit CUDAGuard(DeviceIndex); explicit CUDAGuard(int); };
struct OptionalCUDAGuard { OptionalCUDAGuard(); explicit OptionalCUDAGuard(optional<Device>);
  explicit OptionalCUDAGuard(Device); explicit OptionalCUDAGuard(int); };
struct CUDAStreamGuard { explicit CUDAStreamGuard(cudaStream_t); explicit CUDAStreamGuard(CUDAStream); };
template <class T> __host__ __device__ T ATenCeilDiv(T a, T b) { return (a + b - 1) / b; }
}  // namespace cuda
struct DeviceGuard { explicit DeviceGuard(Device); };
struct OptionalDeviceGuard { OptionalDeviceGuard(); explicit OptionalDeviceGuard(optional<Device>); };
}  // namespace at

namespace c10 {
using at::TensorOptions;
/* c10/util/intrusive_ptr.h and torch/custom_class.h: classes a project registers with TorchScript derive
 * from torch::CustomClassHolder; without these their declarations, and every method body (launches
 * included), were invalid in the parse. */
struct intrusive_ptr_target { virtual ~intrusive_ptr_target() = default; };
template <class T, class NullType = void> struct intrusive_ptr {
  intrusive_ptr() noexcept;
  template <class U> intrusive_ptr(const intrusive_ptr<U> &) noexcept;
  T *get() const noexcept;
  T *operator->() const noexcept;
  T &operator*() const noexcept;
  explicit operator bool() const noexcept;
  T *release() noexcept;
  static intrusive_ptr reclaim(T *);
};
template <class T, class... Args> intrusive_ptr<T> make_intrusive(Args &&...args);
namespace cuda {
using at::cuda::CUDAGuard;
using at::cuda::OptionalCUDAGuard;
using at::cuda::CUDAStreamGuard;
using at::cuda::CUDAStream;
using at::cuda::getCurrentCUDAStream;
using at::cuda::getDefaultCUDAStream;
using at::cuda::getStreamFromPool;
}  // namespace cuda
}  // namespace c10

namespace torch {
using namespace at;
struct CustomClassHolder : c10::intrusive_ptr_target {};
template <class T> using intrusive_ptr = c10::intrusive_ptr<T>;
using c10::make_intrusive;
using at::indexing::Slice;
namespace indexing { using namespace at::indexing; }
namespace autograd { struct Variable : at::Tensor {}; }
}  // namespace torch

/* ATen/cuda/detail/TensorInfo.cuh: a tensor's data, sizes and strides passed by value to kernels. */
#define MAX_TENSORINFO_DIMS 25
namespace at { namespace cuda { namespace detail {
template <typename T, typename IndexType> struct TensorInfo {
  TensorInfo(); TensorInfo(T *p, int dim, IndexType sz[MAX_TENSORINFO_DIMS], IndexType st[MAX_TENSORINFO_DIMS]);
  void reduceDim(int dim); int collapseDims(const int excludeDim = -1);
  __host__ __device__ bool isContiguous() const;
  T *data; IndexType sizes[MAX_TENSORINFO_DIMS]; IndexType strides[MAX_TENSORINFO_DIMS]; int dims;
};
template <typename T, typename IndexType, int Dims> struct IndexToOffset {
  static __host__ __device__ IndexType get(IndexType linearId, const TensorInfo<T, IndexType> &info);
};
template <typename scalar, typename IndexType> TensorInfo<scalar, IndexType> getTensorInfo(const at::Tensor &t);
bool canUse32BitIndexMath(const at::Tensor &t, long max_elem = 2147483647);
}}}  // namespace at::cuda::detail

/* fastAtomicAdd and THC's half atomicAdd come from torch headers in real builds. */
namespace at { namespace native {
template <class T, class I> __device__ void fastAtomicAdd(T *tensor, I index, I numel, T value, bool fast);
}}
__device__ c10::Half atomicAdd(c10::Half *, c10::Half);
/* torch/headeronly/util/Half.h and BFloat16.h overload __ldg for their types. */
__device__ c10::Half __ldg(const c10::Half *);
__device__ c10::BFloat16 __ldg(const c10::BFloat16 *);
__device__ c10::BFloat16 atomicAdd(c10::BFloat16 *, c10::BFloat16);
__device__ inline c10::Half gpuAtomicAdd(c10::Half *a, c10::Half b) { return atomicAdd(a, b); }
__device__ c10::BFloat16 gpuAtomicAdd(c10::BFloat16 *, c10::BFloat16);
__device__ float gpuAtomicAdd(float *, float);
__device__ double gpuAtomicAdd(double *, double);
__device__ int gpuAtomicAdd(int *, int);
/* ATen/cuda/Atomic.cuh: integer atomicAdd overloads CUDA lacks, and the atomic multiply. */
__device__ void atomicAdd(int64_t *, int64_t);
__device__ void atomicAdd(uint8_t *, uint8_t);
__device__ void atomicAdd(int8_t *, int8_t);
__device__ void atomicAdd(int16_t *, int16_t);
__device__ void atomicAdd(bool *, bool);
__device__ void gpuAtomicAdd(int64_t *, int64_t);
__device__ float gpuAtomicMul(float *, float);
__device__ double gpuAtomicMul(double *, double);
__device__ c10::Half gpuAtomicMul(c10::Half *, c10::Half);
__device__ c10::BFloat16 gpuAtomicMul(c10::BFloat16 *, c10::BFloat16);
template <typename T> __host__ __device__ inline T THCCeilDiv(T a, T b) { return (a + b - 1) / b; }
/* ATen/cuda/DeviceUtils.cuh: warp helpers kernels call by name (templates, so any lane type). */
__device__ unsigned int ACTIVE_MASK();
__device__ void WARP_SYNC(unsigned mask = 0xffffffff);
__device__ unsigned int WARP_BALLOT(int predicate, unsigned int mask = 0xffffffff);
template <typename T> __device__ T WARP_SHFL(T value, int srcLane, int width = 32, unsigned int mask = 0xffffffff);
template <typename T> __device__ T WARP_SHFL_XOR(T value, int laneMask, int width = 32, unsigned int mask = 0xffffffff);
template <typename T> __device__ T WARP_SHFL_UP(T value, unsigned int delta, int width = 32, unsigned int mask = 0xffffffff);
template <typename T> __device__ T WARP_SHFL_DOWN(T value, unsigned int delta, int width = 32, unsigned int mask = 0xffffffff);

/* Like torch's, a check is an `if` block (code leaves out the `;`) and its message parts are
 * expressions that must type-check. */
template <class... A> [[noreturn]] void km_torch_check_fail(const A &...);
#define TORCH_CHECK(cond, ...) if (!(cond)) { km_torch_check_fail(__VA_ARGS__); }
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define TORCH_WARN(...) ((void)0)
#define AT_ASSERTM(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define AT_ASSERT(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#define AT_ERROR(...) km_torch_check_fail(__VA_ARGS__)
#define AT_CUDA_CHECK(expr) ((void)(expr))
#define C10_CUDA_CHECK(expr) ((void)(expr))
#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#define C10_HOST_DEVICE __host__ __device__
#define C10_DEVICE __device__
#define C10_HOST __host__
#define C10_MAX_THREADS_PER_BLOCK(val) (((val) <= 1024) ? (val) : 256)
#define C10_MIN_BLOCKS_PER_SM(t, b) ((((t) * (b) <= 2048) ? (b) : ((2048 + (t) - 1) / (t))))
#define C10_LAUNCH_BOUNDS_0 __launch_bounds__(256, 4)
#define C10_LIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 1))
#define C10_UNLIKELY(expr) (__builtin_expect(static_cast<bool>(expr), 0))
#define C10_RESTRICT __restrict
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
#define KM_DISPATCH_ALL(...)                                                                     \
  KM_DISPATCH_CASE(unsigned char, __VA_ARGS__) KM_DISPATCH_CASE(signed char, __VA_ARGS__)         \
  KM_DISPATCH_CASE(short, __VA_ARGS__) KM_DISPATCH_CASE(int, __VA_ARGS__)                         \
  KM_DISPATCH_CASE(long, __VA_ARGS__) KM_DISPATCH_CASE(float, __VA_ARGS__)                        \
  KM_DISPATCH_CASE(double, __VA_ARGS__)
#define AT_DISPATCH_FLOATING_TYPES_AND3(S1, S2, S3, TYPE, NAME, ...)                           \
  [&] { KM_DISPATCH_CASE(float, __VA_ARGS__) KM_DISPATCH_CASE(double, __VA_ARGS__)             \
        KM_DISPATCH_CASE(km_scalar_type_t<S1>, __VA_ARGS__)                                    \
        KM_DISPATCH_CASE(km_scalar_type_t<S2>, __VA_ARGS__)                                    \
        KM_DISPATCH_CASE(km_scalar_type_t<S3>, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES_AND(S1, TYPE, NAME, ...)                                         \
  [&] { KM_DISPATCH_ALL(__VA_ARGS__) KM_DISPATCH_CASE(km_scalar_type_t<S1>, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES_AND2(S1, S2, TYPE, NAME, ...)                                    \
  [&] { KM_DISPATCH_ALL(__VA_ARGS__) KM_DISPATCH_CASE(km_scalar_type_t<S1>, __VA_ARGS__)       \
        KM_DISPATCH_CASE(km_scalar_type_t<S2>, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES_AND3(S1, S2, S3, TYPE, NAME, ...)                                \
  [&] { KM_DISPATCH_ALL(__VA_ARGS__) KM_DISPATCH_CASE(km_scalar_type_t<S1>, __VA_ARGS__)       \
        KM_DISPATCH_CASE(km_scalar_type_t<S2>, __VA_ARGS__)                                    \
        KM_DISPATCH_CASE(km_scalar_type_t<S3>, __VA_ARGS__) }()
#define AT_DISPATCH_ALL_TYPES_AND_COMPLEX(TYPE, NAME, ...) AT_DISPATCH_ALL_TYPES(TYPE, NAME, __VA_ARGS__)
#define AT_DISPATCH_INTEGRAL_TYPES_AND(S1, TYPE, NAME, ...)                                    \
  [&] { KM_DISPATCH_CASE(unsigned char, __VA_ARGS__) KM_DISPATCH_CASE(signed char, __VA_ARGS__) \
        KM_DISPATCH_CASE(short, __VA_ARGS__) KM_DISPATCH_CASE(int, __VA_ARGS__)                \
        KM_DISPATCH_CASE(long, __VA_ARGS__) KM_DISPATCH_CASE(km_scalar_type_t<S1>, __VA_ARGS__) }()
/* ATen binds `index_t` here, not scalar_t. */
#define AT_DISPATCH_INDEX_TYPES(TYPE, NAME, ...)                                               \
  [&] { { using index_t = int; __VA_ARGS__(); } { using index_t = long; __VA_ARGS__(); } }()
#define AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(TYPE, NAME, ...) AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, __VA_ARGS__)
/* The switch form (ATen's Dispatch.h, and vLLM-style project macros built on it):
 * AT_DISPATCH_SWITCH(t, name, AT_DISPATCH_CASE(at::ScalarType::Float, lambda) ...). Each case binds scalar_t
 * as the other dispatch macros do; undefined, the whole launcher body was one invalid call without launches. */
#define AT_DISPATCH_CASE(enum_type, ...) { using scalar_t = km_scalar_type_t<enum_type>; __VA_ARGS__(); }
#define AT_DISPATCH_SWITCH(TYPE, NAME, ...) [&] { __VA_ARGS__ }()
#define AT_DISPATCH_CASE_FLOATING_TYPES(...) \
  AT_DISPATCH_CASE(at::ScalarType::Double, __VA_ARGS__) AT_DISPATCH_CASE(at::ScalarType::Float, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(...) \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(at::ScalarType::Half, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND(S1, ...) \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(S1, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND2(S1, S2, ...) \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(S1, __VA_ARGS__) AT_DISPATCH_CASE(S2, __VA_ARGS__)
#define AT_DISPATCH_CASE_REDUCED_FLOATING_TYPES(...) \
  AT_DISPATCH_CASE(at::ScalarType::Half, __VA_ARGS__) AT_DISPATCH_CASE(at::ScalarType::BFloat16, __VA_ARGS__)
#define AT_DISPATCH_CASE_INTEGRAL_TYPES(...)                                                                  \
  AT_DISPATCH_CASE(at::ScalarType::Byte, __VA_ARGS__) AT_DISPATCH_CASE(at::ScalarType::Char, __VA_ARGS__)     \
  AT_DISPATCH_CASE(at::ScalarType::Int, __VA_ARGS__) AT_DISPATCH_CASE(at::ScalarType::Long, __VA_ARGS__)      \
  AT_DISPATCH_CASE(at::ScalarType::Short, __VA_ARGS__)
#define AT_DISPATCH_CASE_ALL_TYPES(...) \
  AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)
#define AT_DISPATCH_CASE_ALL_TYPES_AND(S1, ...) AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(S1, __VA_ARGS__)
/* dispatch v2: AT_DISPATCH_V2(type, name, AT_WRAP(lambda), AT_EXPAND(AT_FLOATING_TYPES), kHalf) */
#define AT_WRAP(...) __VA_ARGS__
#define AT_EXPAND(...) __VA_ARGS__
#define AT_FLOATING_TYPES at::kDouble, at::kFloat
#define AT_INTEGRAL_TYPES at::kByte, at::kChar, at::kInt, at::kLong, at::kShort
#define AT_ALL_TYPES AT_FLOATING_TYPES, AT_INTEGRAL_TYPES
/* The body once per dispatched type (up to 8; fewer repeat the first), with scalar_t bound as in ATen:
 * handed to a function instead, a body that names scalar_t was invalid and empty in the AST, and its
 * launches were lost. The body is used directly (it holds unprotected commas: `k<scalar_t, acc_t>`). */
#define KM_V2_CALL(M, ...) M(__VA_ARGS__)
#define KM_V2_T0(a, ...) a
#define KM_V2_T1(a, b, ...) b
#define KM_V2_T2(a, b, c, ...) c
#define KM_V2_T3(a, b, c, d, ...) d
#define KM_V2_T4(a, b, c, d, e, ...) e
#define KM_V2_T5(a, b, c, d, e, f, ...) f
#define KM_V2_T6(a, b, c, d, e, f, g, ...) g
#define KM_V2_T7(a, b, c, d, e, f, g, h, ...) h
#define KM_V2_FIRST(...) KM_V2_CALL(KM_V2_T0, __VA_ARGS__, )
#define KM_V2_TY(i, ...) km_scalar_type_t<KM_V2_CALL(KM_V2_T##i, __VA_ARGS__, KM_V2_FIRST(__VA_ARGS__),   \
  KM_V2_FIRST(__VA_ARGS__), KM_V2_FIRST(__VA_ARGS__), KM_V2_FIRST(__VA_ARGS__), KM_V2_FIRST(__VA_ARGS__), \
  KM_V2_FIRST(__VA_ARGS__), KM_V2_FIRST(__VA_ARGS__), KM_V2_FIRST(__VA_ARGS__))>
#define AT_DISPATCH_V2(TYPE, NAME, BODY, ...)                                                          \
  [&] { { using scalar_t = KM_V2_TY(0, __VA_ARGS__); BODY(); } { using scalar_t = KM_V2_TY(1, __VA_ARGS__); BODY(); } \
        { using scalar_t = KM_V2_TY(2, __VA_ARGS__); BODY(); } { using scalar_t = KM_V2_TY(3, __VA_ARGS__); BODY(); } \
        { using scalar_t = KM_V2_TY(4, __VA_ARGS__); BODY(); } { using scalar_t = KM_V2_TY(5, __VA_ARGS__); BODY(); } \
        { using scalar_t = KM_V2_TY(6, __VA_ARGS__); BODY(); } { using scalar_t = KM_V2_TY(7, __VA_ARGS__); BODY(); } }()
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

/* ATen's Philox state (ATen/cuda/detail/PhiloxCudaStateRaw.cuh, UnpackRaw.cuh) and the generator host code
 * that makes one (ATen/cuda/CUDAGeneratorImpl.h): random kernels take the state by value. Without these
 * the kernel's parameter was an unknown `at` and its launcher's body was invalid. */
#include <mutex>
namespace at {
struct PhiloxCudaState {
  PhiloxCudaState() = default;
  PhiloxCudaState(uint64_t seed, uint64_t offset);
  PhiloxCudaState(int64_t *seed, int64_t *offset_extragraph, uint64_t offset_intragraph);
  union Payload { uint64_t val; int64_t *ptr; };
  Payload seed_{};
  Payload offset_{};
  uint64_t offset_intragraph_ = 0;
  bool captured_ = false;
};
namespace cuda { namespace philox {
__host__ __device__ std::tuple<uint64_t, uint64_t> unpack(at::PhiloxCudaState arg);
}}  // namespace cuda::philox
struct GeneratorImpl { std::mutex mutex_; uint64_t current_seed() const; void set_current_seed(uint64_t); };
struct Generator { GeneratorImpl *operator->() const; bool defined() const; };
struct CUDAGeneratorImpl : GeneratorImpl {
  PhiloxCudaState philox_cuda_state(uint64_t increment);
  std::pair<uint64_t, uint64_t> philox_engine_inputs(uint64_t increment);
};
namespace cuda { namespace detail { const Generator &getDefaultCUDAGenerator(int device = -1); }}
template <class T> T *get_generator_or_default(const optional<Generator> &gen, const Generator &default_gen);
template <class T> T *check_generator(optional<Generator> gen);
}  // namespace at

using at::Half;
using at::BFloat16;
#endif  // KM_TORCH_PARSE_H
