/* kernel-miner parse shim for the TensorFlow and Eigen names that TensorFlow custom ops use
 * (`*_op_gpu.cu.cc` files including tensorflow/core/util/gpu_kernel_helper.h, op_kernel.h,
 * unsupported/Eigen/CXX11/Tensor). Only for libclang parsing: declarations, no behaviour; written
 * from TensorFlow's public API as kernels and their launchers use it. Every tensorflow/..., tsl/...,
 * third_party/eigen3/... and unsupported/Eigen/... header a source includes stands for this file
 * (frontends.config.framework_overlay). What device code uses has a definition in the unit shim,
 * unit/km_tf_unit.h.
 */
#ifndef KM_TF_PARSE_H
#define KM_TF_PARSE_H
#include "cuda_runtime.h"
#include "cuda_fp16.h"
#if __has_include(<vector>)
#include <cmath>
#include <cstdint>
#include <cstddef>
#include <cstring>
#include <climits>
#include <cfloat>
#include <complex>
#include <string>
#include <vector>
#include <limits>
#include <algorithm>
#include <type_traits>
#include <initializer_list>
#include <utility>
#include <memory>
#endif

/* As TensorFlow's CUDA build sets them. */
#ifndef GOOGLE_CUDA
#define GOOGLE_CUDA 1
#endif
#ifndef EIGEN_USE_GPU
#define EIGEN_USE_GPU
#endif
#define EIGEN_DEVICE_FUNC __host__ __device__
#define EIGEN_STRONG_INLINE inline
#define EIGEN_ALWAYS_INLINE inline

namespace Eigen {
typedef std::ptrdiff_t Index;
typedef std::ptrdiff_t DenseIndex;
enum { ColMajor = 0, RowMajor = 0x1 };
enum AlignmentType { Unaligned = 0, Aligned8 = 8, Aligned16 = 16, Aligned32 = 32, Aligned64 = 64,
                     Aligned128 = 128, Aligned = 16 };

struct half {
  unsigned short x;
  __host__ __device__ half();
  __host__ __device__ half(const __half &);
  __host__ __device__ half(const __half_raw &);
  __host__ __device__ explicit half(bool);
  __host__ __device__ explicit half(float);
  __host__ __device__ explicit half(double);
  template <class T, class = typename std::enable_if<std::is_integral<T>::value>::type>
  __host__ __device__ explicit half(T);
  __host__ __device__ explicit operator float() const;
  __host__ __device__ explicit operator double() const;
  __host__ __device__ explicit operator bool() const;
  __host__ __device__ explicit operator int() const;
  __host__ __device__ explicit operator long() const;
  __host__ __device__ explicit operator long long() const;
  __host__ __device__ explicit operator unsigned int() const;
  __host__ __device__ operator __half() const;
};
__host__ __device__ half operator+(const half &, const half &);
__host__ __device__ half operator-(const half &, const half &);
__host__ __device__ half operator*(const half &, const half &);
__host__ __device__ half operator/(const half &, const half &);
__host__ __device__ half operator-(const half &);
__host__ __device__ half &operator+=(half &, const half &);
__host__ __device__ half &operator-=(half &, const half &);
__host__ __device__ half &operator*=(half &, const half &);
__host__ __device__ half &operator/=(half &, const half &);
__host__ __device__ half operator/(const half &, Index);
__host__ __device__ bool operator==(const half &, const half &);
__host__ __device__ bool operator!=(const half &, const half &);
__host__ __device__ bool operator<(const half &, const half &);
__host__ __device__ bool operator<=(const half &, const half &);
__host__ __device__ bool operator>(const half &, const half &);
__host__ __device__ bool operator>=(const half &, const half &);

struct bfloat16 {
  unsigned short value;
  __host__ __device__ bfloat16();
  __host__ __device__ explicit bfloat16(float);
  __host__ __device__ explicit operator float() const;
};

namespace numext {
template <typename T> __host__ __device__ T mini(const T &x, const T &y);
template <typename T> __host__ __device__ T maxi(const T &x, const T &y);
template <typename T> __host__ __device__ T abs(const T &x);
template <typename T> __host__ __device__ T sqrt(const T &x);
template <typename T> __host__ __device__ T exp(const T &x);
template <typename T> __host__ __device__ T log(const T &x);
template <typename T> __host__ __device__ bool isnan(const T &x);
template <typename T> __host__ __device__ bool isinf(const T &x);
template <typename T> __host__ __device__ bool isfinite(const T &x);
template <typename X, typename Y> __host__ __device__ X pow(const X &x, const Y &y);
}  // namespace numext
template <typename T> struct NumTraits {
  enum { IsInteger = 0, IsSigned = 1, IsComplex = 0 };
  typedef T Real;
  static __host__ __device__ T highest();
  static __host__ __device__ T lowest();
  static __host__ __device__ T epsilon();
  static __host__ __device__ T infinity();
  static __host__ __device__ T quiet_NaN();
};
template <typename T> __host__ __device__ T divup(const T x, const T y);
template <typename T, typename X, typename Y> __host__ __device__ T divup(const X x, const Y y);

struct GpuStreamDevice;
struct GpuDevice {
  cudaStream_t stream() const;
  int getNumGpuMultiProcessors() const;
  int maxGpuThreadsPerBlock() const;
  int maxGpuThreadsPerMultiProcessor() const;
  int sharedMemPerBlock() const;
  int majorDeviceVersion() const;
  int minorDeviceVersion() const;
  void memset(void *, int, size_t) const;
  void memcpy(void *, const void *, size_t) const;
  void memcpyHostToDevice(void *, const void *, size_t) const;
  void memcpyDeviceToHost(void *, const void *, size_t) const;
  void synchronize() const;
  void *allocate(size_t) const;
  void deallocate(void *) const;
};
struct ThreadPoolDevice {};
struct DefaultDevice {};

template <typename IndexType, int N> struct DSizes {
  DSizes();
  template <typename... I> DSizes(I...);
  IndexType &operator[](int);
  IndexType operator[](int) const;
};
template <typename T, int N, int Options = 0, typename IndexType = DenseIndex> class Tensor;
template <typename Derived> struct TensorAssign {
  template <typename E> Derived &operator=(const E &);
};
template <typename PlainObjectType, int Options = 0> class TensorMap;
template <typename T, int N, int O, typename IndexType, int Options>
class TensorMap<Tensor<T, N, O, IndexType>, Options> {
 public:
  typedef T Scalar;
  TensorMap();
  TensorMap(T *, ...);
  T *data() const;
  IndexType dimension(int) const;
  IndexType size() const;
  DSizes<IndexType, N> dimensions() const;
  template <typename... I> T &operator()(I...) const;
  T &operator[](IndexType) const;
  template <typename D> TensorAssign<TensorMap> device(const D &) const;
  TensorMap constant(const T &) const;
  TensorMap setZero() const;
  TensorMap setConstant(const T &) const;
  template <typename E> TensorMap &operator=(const E &);
};
}  // namespace Eigen

namespace tensorflow {
typedef signed char int8;
typedef short int16;
typedef int int32;
typedef std::int64_t int64;
typedef unsigned char uint8;
typedef unsigned short uint16;
typedef unsigned int uint32;
typedef std::uint64_t uint64;
typedef std::complex<float> complex64;
typedef std::complex<double> complex128;
typedef Eigen::bfloat16 bfloat16;
typedef std::string tstring;

class Status {
 public:
  Status();
  bool ok() const;
  static Status OK();
  std::string ToString() const;
  std::string error_message() const;
};
Status OkStatus();
namespace errors {
template <typename... A> Status Internal(A...);
template <typename... A> Status InvalidArgument(A...);
template <typename... A> Status Unimplemented(A...);
template <typename... A> Status Unknown(A...);
template <typename... A> Status ResourceExhausted(A...);
template <typename... A> Status FailedPrecondition(A...);
template <typename... A> Status OutOfRange(A...);
}  // namespace errors

enum DataType { DT_INVALID = 0, DT_FLOAT = 1, DT_DOUBLE = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 5, DT_INT8 = 6,
                DT_STRING = 7, DT_COMPLEX64 = 8, DT_INT64 = 9, DT_BOOL = 10, DT_BFLOAT16 = 14, DT_UINT16 = 17,
                DT_COMPLEX128 = 18, DT_HALF = 19, DT_UINT32 = 22, DT_UINT64 = 23 };
template <typename T> struct DataTypeToEnum { static constexpr DataType value = DT_INVALID; static DataType v(); };
enum TensorFormat { FORMAT_NHWC = 0, FORMAT_NCHW = 1, FORMAT_NCHW_VECT_C = 2, FORMAT_NHWC_VECT_W = 3,
                    FORMAT_HWNC = 4, FORMAT_HWCN = 5 };

template <typename T, int NDIMS = 1, typename IndexType = Eigen::DenseIndex> struct TTypes {
  typedef Eigen::TensorMap<Eigen::Tensor<T, NDIMS, Eigen::RowMajor, IndexType>, Eigen::Aligned> Tensor;
  typedef Eigen::TensorMap<Eigen::Tensor<const T, NDIMS, Eigen::RowMajor, IndexType>, Eigen::Aligned> ConstTensor;
  typedef Eigen::TensorMap<Eigen::Tensor<T, NDIMS, Eigen::RowMajor, IndexType>> UnalignedTensor;
  typedef Eigen::TensorMap<Eigen::Tensor<const T, NDIMS, Eigen::RowMajor, IndexType>> UnalignedConstTensor;
  typedef Eigen::TensorMap<Eigen::Tensor<T, 0, Eigen::RowMajor, IndexType>, Eigen::Aligned> Scalar;
  typedef Eigen::TensorMap<Eigen::Tensor<const T, 0, Eigen::RowMajor, IndexType>, Eigen::Aligned> ConstScalar;
  typedef Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor, IndexType>, Eigen::Aligned> Flat;
  typedef Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor, IndexType>, Eigen::Aligned> ConstFlat;
  typedef Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor, IndexType>> UnalignedFlat;
  typedef Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor, IndexType>> UnalignedConstFlat;
  typedef Eigen::TensorMap<Eigen::Tensor<T, 1, Eigen::RowMajor, IndexType>, Eigen::Aligned> Vec;
  typedef Eigen::TensorMap<Eigen::Tensor<const T, 1, Eigen::RowMajor, IndexType>, Eigen::Aligned> ConstVec;
  typedef Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, IndexType>, Eigen::Aligned> Matrix;
  typedef Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, IndexType>, Eigen::Aligned> ConstMatrix;
};

class TensorShape {
 public:
  TensorShape();
  TensorShape(std::initializer_list<int64>);
  int dims() const;
  int64 dim_size(int) const;
  int64 num_elements() const;
  void AddDim(int64);
  std::string DebugString() const;
};
class Tensor {
 public:
  Tensor();
  DataType dtype() const;
  const TensorShape &shape() const;
  int dims() const;
  int64 dim_size(int) const;
  int64 NumElements() const;
  bool IsInitialized() const;
  template <typename T> typename TTypes<T>::Flat flat();
  template <typename T> typename TTypes<T>::ConstFlat flat() const;
  template <typename T> typename TTypes<T>::Vec vec();
  template <typename T> typename TTypes<T>::ConstVec vec() const;
  template <typename T> typename TTypes<T>::Matrix matrix();
  template <typename T> typename TTypes<T>::ConstMatrix matrix() const;
  template <typename T> typename TTypes<T>::Scalar scalar();
  template <typename T> typename TTypes<T>::ConstScalar scalar() const;
  template <typename T, size_t NDIMS> typename TTypes<T, NDIMS>::Tensor tensor();
  template <typename T, size_t NDIMS> typename TTypes<T, NDIMS>::ConstTensor tensor() const;
  template <typename T> typename TTypes<T>::Flat flat_inner_dims();
  template <typename T> typename TTypes<T>::ConstFlat flat_inner_dims() const;
  std::string DebugString() const;
};
struct AllocatorAttributes {
  void set_on_host(bool);
  void set_gpu_compatible(bool);
};
class DeviceContext {
 public:
  void *stream() const;
};
class OpKernelConstruction {
 public:
  template <typename T> Status GetAttr(const char *, T *) const;
  void CtxFailure(const Status &);
};
class OpKernelContext {
 public:
  template <typename D> const D &eigen_device() const;
  const Tensor &input(int);
  int num_inputs() const;
  Status allocate_temp(DataType, const TensorShape &, Tensor *);
  Status allocate_temp(DataType, const TensorShape &, Tensor *, AllocatorAttributes);
  Status allocate_output(int, const TensorShape &, Tensor **);
  void set_output(int, const Tensor &);
  void SetStatus(const Status &);
  void CtxFailure(const Status &);
  DeviceContext *op_device_context();
  Status status() const;
};
class OpKernel {
 public:
  explicit OpKernel(OpKernelConstruction *);
  virtual ~OpKernel();
  virtual void Compute(OpKernelContext *) = 0;
};
class AsyncOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
};
template <typename T>
int64 GetTensorDim(const T &, TensorFormat, char);

/* gpu_kernel_helper.h / gpu_launch_config.h */
struct GpuLaunchConfig {
  int virtual_thread_count = -1;
  int thread_per_block = -1;
  int block_count = -1;
};
typedef GpuLaunchConfig CudaLaunchConfig;
struct Gpu2DLaunchConfig {
  dim3 virtual_thread_count = dim3(0, 0, 0);
  dim3 thread_per_block = dim3(0, 0, 0);
  dim3 block_count = dim3(0, 0, 0);
};
typedef Gpu2DLaunchConfig Cuda2DLaunchConfig;
typedef Gpu2DLaunchConfig Gpu3DLaunchConfig;
typedef Gpu2DLaunchConfig Cuda3DLaunchConfig;
GpuLaunchConfig GetGpuLaunchConfig(int work_element_count, const Eigen::GpuDevice &d);
template <typename DeviceFunc>
GpuLaunchConfig GetGpuLaunchConfig(int work_element_count, const Eigen::GpuDevice &d, DeviceFunc func,
                                   size_t dynamic_shared_memory_size, int block_size_limit);
GpuLaunchConfig GetCudaLaunchConfig(int work_element_count, const Eigen::GpuDevice &d);
template <typename DeviceFunc>
GpuLaunchConfig GetCudaLaunchConfig(int work_element_count, const Eigen::GpuDevice &d, DeviceFunc func,
                                    size_t dynamic_shared_memory_size, int block_size_limit);
template <typename DeviceFunc>
GpuLaunchConfig GetGpuLaunchConfigFixedBlockSize(int work_element_count, const Eigen::GpuDevice &d,
                                                 DeviceFunc func, size_t dynamic_shared_memory_size,
                                                 int fixed_block_size);
Gpu2DLaunchConfig GetGpu2DLaunchConfig(int xdim, int ydim, const Eigen::GpuDevice &d);
Gpu2DLaunchConfig GetCuda2DLaunchConfig(int xdim, int ydim, const Eigen::GpuDevice &d);
template <typename DeviceFunc>
Gpu3DLaunchConfig GetGpu3DLaunchConfig(int xdim, int ydim, int zdim, const Eigen::GpuDevice &d, DeviceFunc func,
                                       size_t dynamic_shared_memory_size, int block_size_limit);
/* GpuLaunchKernel(kernel, grid, block, shared memory, stream, arguments...): a launch (units.launches.helpers). */
template <typename... Ts, typename... Args>
Status GpuLaunchKernel(void (*function)(Ts...), dim3 grid_dim, dim3 block_dim, size_t shared_memory_size_bytes,
                       cudaStream_t stream, Args... arguments);
template <typename... Ts, typename... Args>
Status CudaLaunchKernel(void (*function)(Ts...), dim3 grid_dim, dim3 block_dim, size_t shared_memory_size_bytes,
                        cudaStream_t stream, Args... arguments);

template <typename T> class GpuGridRange {
 public:
  struct Iterator {
    __device__ T operator*() const;
    __device__ Iterator &operator++();
    __device__ bool operator!=(const Iterator &) const;
  };
  __device__ GpuGridRange(T begin, T delta, T end);
  __device__ Iterator begin() const;
  __device__ Iterator end() const;
};
template <typename T> __device__ GpuGridRange<T> GpuGridRangeX(T count);
template <typename T> __device__ GpuGridRange<T> GpuGridRangeY(T count);
template <typename T> __device__ GpuGridRange<T> GpuGridRangeZ(T count);
template <typename T> __device__ GpuGridRange<T> CudaGridRangeX(T count);
template <typename T> __device__ GpuGridRange<T> CudaGridRangeY(T count);
template <typename T> __device__ GpuGridRange<T> CudaGridRangeZ(T count);

/* gpu_device_functions.h */
template <typename T> __host__ __device__ T ldg(const T *ptr);
template <typename T> __host__ __device__ T GpuLdg(const T *ptr);
const unsigned kCudaWarpAll = 0xffffffff;
const unsigned kGpuWarpAll = 0xffffffff;
__device__ unsigned GpuLaneId();
__device__ void GpuSyncWarp(unsigned mask = kCudaWarpAll);
__device__ unsigned GpuBallotSync(unsigned mask, int pred);
__device__ bool GpuAnySync(unsigned mask, int pred);
__device__ bool GpuAllSync(unsigned mask, int pred);
template <typename T> __device__ T GpuShuffleSync(unsigned mask, T value, int src_lane, int width = 32);
template <typename T> __device__ T GpuShuffleUpSync(unsigned mask, T value, unsigned delta, int width = 32);
template <typename T> __device__ T GpuShuffleDownSync(unsigned mask, T value, unsigned delta, int width = 32);
template <typename T> __device__ T GpuShuffleXorSync(unsigned mask, T value, int lane_mask, int width = 32);
template <typename T> __device__ T CudaShuffleSync(unsigned mask, T value, int src_lane, int width = 32);
template <typename T> __device__ T CudaShuffleUpSync(unsigned mask, T value, unsigned delta, int width = 32);
template <typename T> __device__ T CudaShuffleDownSync(unsigned mask, T value, unsigned delta, int width = 32);
template <typename T> __device__ T CudaShuffleXorSync(unsigned mask, T value, int lane_mask, int width = 32);
template <typename T, typename U> __device__ T GpuAtomicAdd(T *ptr, U value);
template <typename T, typename U> __device__ T GpuAtomicSub(T *ptr, U value);
template <typename T, typename U> __device__ T GpuAtomicMax(T *ptr, U value);
template <typename T, typename U> __device__ T GpuAtomicMin(T *ptr, U value);
template <typename T, typename U> __device__ T GpuAtomicMul(T *ptr, U value);
template <typename T, typename U> __device__ T GpuAtomicDiv(T *ptr, U value);
template <typename T, typename U> __device__ T CudaAtomicAdd(T *ptr, U value);
template <typename T, typename U> __device__ T CudaAtomicSub(T *ptr, U value);
template <typename T, typename U> __device__ T CudaAtomicMax(T *ptr, U value);
template <typename T, typename U> __device__ T CudaAtomicMin(T *ptr, U value);
template <typename T, typename U> __device__ T CudaAtomicMul(T *ptr, U value);
template <typename T, typename U> __device__ T CudaAtomicDiv(T *ptr, U value);
template <typename T> __host__ __device__ T tf_min(const T &x, const T &y);
template <typename T> __host__ __device__ T tf_max(const T &x, const T &y);
}  // namespace tensorflow
namespace stream_executor {}
namespace se = ::stream_executor;

#define GPU_1D_KERNEL_LOOP(i, n) for (int i : ::tensorflow::GpuGridRangeX<int>(n))
#define GPU_AXIS_KERNEL_LOOP(i, n, axis) for (int i : ::tensorflow::GpuGridRange##axis<int>(n))
#define CUDA_1D_KERNEL_LOOP(i, n) for (int i : ::tensorflow::GpuGridRangeX<int>(n))
#define CUDA_AXIS_KERNEL_LOOP(i, n, axis) for (int i : ::tensorflow::GpuGridRange##axis<int>(n))

#define TF_CHECK_OK(val) ((void)(val))
#define TF_RETURN_IF_ERROR(...) do { ::tensorflow::Status km_s_ = (__VA_ARGS__); if (!km_s_.ok()) return km_s_; } while (0)
#define OP_REQUIRES(CTX, EXP, STATUS) do { if (!(EXP)) { (CTX)->CtxFailure((STATUS)); return; } } while (0)
#define OP_REQUIRES_OK(CTX, ...) do { ::tensorflow::Status km_s_ = (__VA_ARGS__); if (!km_s_.ok()) { (CTX)->CtxFailure(km_s_); return; } } while (0)
#define OP_REQUIRES_ASYNC(CTX, EXP, STATUS, CALLBACK) do { if (!(EXP)) { (CTX)->CtxFailure((STATUS)); (CALLBACK)(); return; } } while (0)
#define OP_REQUIRES_OK_ASYNC(CTX, STATUS, CALLBACK) do { ::tensorflow::Status km_s_ = (STATUS); if (!km_s_.ok()) { (CTX)->CtxFailure(km_s_); (CALLBACK)(); return; } } while (0)
#define REGISTER_KERNEL_BUILDER(...)
#define REGISTER_OP(name) static int km_register_op_unused_
#define TF_DISALLOW_COPY_AND_ASSIGN(T) T(const T &) = delete; void operator=(const T &) = delete

/* register_types.h: the macro applied to each type of a documented set. */
#define TF_CALL_half(m) m(Eigen::half)
#define TF_CALL_bfloat16(m) m(::tensorflow::bfloat16)
#define TF_CALL_float(m) m(float)
#define TF_CALL_double(m) m(double)
#define TF_CALL_int8(m) m(::tensorflow::int8)
#define TF_CALL_int16(m) m(::tensorflow::int16)
#define TF_CALL_int32(m) m(::tensorflow::int32)
#define TF_CALL_int64(m) m(::tensorflow::int64)
#define TF_CALL_uint8(m) m(::tensorflow::uint8)
#define TF_CALL_uint16(m) m(::tensorflow::uint16)
#define TF_CALL_uint32(m) m(::tensorflow::uint32)
#define TF_CALL_uint64(m) m(::tensorflow::uint64)
#define TF_CALL_bool(m) m(bool)
#define TF_CALL_complex64(m) m(::tensorflow::complex64)
#define TF_CALL_complex128(m) m(::tensorflow::complex128)
#define TF_CALL_GPU_NUMBER_TYPES(m) TF_CALL_half(m) TF_CALL_float(m) TF_CALL_double(m)
#define TF_CALL_GPU_NUMBER_TYPES_NO_HALF(m) TF_CALL_float(m) TF_CALL_double(m)
#define TF_CALL_FLOAT_TYPES(m) TF_CALL_half(m) TF_CALL_bfloat16(m) TF_CALL_float(m) TF_CALL_double(m)
#define TF_CALL_INTEGRAL_TYPES_NO_INT32(m) TF_CALL_uint64(m) TF_CALL_int64(m) TF_CALL_uint32(m) TF_CALL_uint16(m) \
  TF_CALL_int16(m) TF_CALL_uint8(m) TF_CALL_int8(m)
#define TF_CALL_INTEGRAL_TYPES(m) TF_CALL_INTEGRAL_TYPES_NO_INT32(m) TF_CALL_int32(m)
#define TF_CALL_REAL_NUMBER_TYPES(m) TF_CALL_INTEGRAL_TYPES(m) TF_CALL_half(m) TF_CALL_bfloat16(m) TF_CALL_float(m) \
  TF_CALL_double(m)
#define TF_CALL_COMPLEX_TYPES(m) TF_CALL_complex64(m) TF_CALL_complex128(m)
#define TF_CALL_GPU_ALL_TYPES(m) TF_CALL_GPU_NUMBER_TYPES(m) TF_CALL_COMPLEX_TYPES(m) TF_CALL_bool(m)
#define TF_CALL_GPU_NUMBER_TYPES_NO_BF16(m) TF_CALL_half(m) TF_CALL_float(m) TF_CALL_double(m)
#endif
