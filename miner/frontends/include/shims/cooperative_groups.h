/* kernel-miner parse shim for cooperative_groups.h: declarations only, for libclang. */
#ifndef KM_COOPERATIVE_GROUPS_H
#define KM_COOPERATIVE_GROUPS_H
namespace cooperative_groups {
struct thread_group {
  __device__ void sync() const; __device__ unsigned long long size() const;
  __device__ unsigned long long num_threads() const; __device__ unsigned long long thread_rank() const;
};
struct thread_block : thread_group {
  __device__ dim3 group_index() const; __device__ dim3 thread_index() const; __device__ dim3 group_dim() const;
  __device__ dim3 dim_threads() const; __device__ static void barrier_wait();
};
struct grid_group : thread_group {
  __device__ bool is_valid() const; __device__ dim3 group_dim() const; __device__ dim3 dim_blocks() const;
  __device__ dim3 block_index() const; __device__ unsigned long long block_rank() const;
  __device__ unsigned long long num_blocks() const;
};
struct cluster_group : thread_group {
  __device__ dim3 block_index() const; __device__ unsigned block_rank() const; __device__ unsigned num_blocks() const;
  template <class T> __device__ T *map_shared_rank(T *, int) const;
};
struct coalesced_group : thread_group {
  __device__ unsigned meta_group_rank() const; __device__ unsigned meta_group_size() const;
  template <class T> __device__ T shfl(T, int) const; template <class T> __device__ T shfl_down(T, unsigned) const;
  template <class T> __device__ T shfl_up(T, unsigned) const; template <class T> __device__ T shfl_xor(T, unsigned) const;
  __device__ int any(int) const; __device__ int all(int) const; __device__ unsigned ballot(int) const;
};
template <unsigned Size, class ParentT = void> struct thread_block_tile : thread_group {
  __device__ unsigned meta_group_rank() const; __device__ unsigned meta_group_size() const;
  template <class T> __device__ T shfl(T, int) const; template <class T> __device__ T shfl_down(T, unsigned) const;
  template <class T> __device__ T shfl_up(T, unsigned) const; template <class T> __device__ T shfl_xor(T, unsigned) const;
  __device__ int any(int) const; __device__ int all(int) const; __device__ unsigned ballot(int) const;
  template <class T> __device__ unsigned match_any(T) const;
  __device__ operator thread_block_tile<Size, void>() const;
};
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ cluster_group this_cluster();
__device__ coalesced_group coalesced_threads();
template <unsigned Size, class ParentT> __device__ thread_block_tile<Size, ParentT> tiled_partition(const ParentT &);
__device__ thread_group tiled_partition(const thread_group &, unsigned);
template <class G> __device__ void sync(const G &);
template <class T> struct plus { __device__ T operator()(const T &, const T &) const; };
template <class T> struct less { __device__ T operator()(const T &, const T &) const; };
template <class T> struct greater { __device__ T operator()(const T &, const T &) const; };
template <class T> struct bit_and { __device__ T operator()(const T &, const T &) const; };
template <class T> struct bit_or { __device__ T operator()(const T &, const T &) const; };
template <class T> struct bit_xor { __device__ T operator()(const T &, const T &) const; };
template <class G, class T, class Op> __device__ T reduce(const G &, T, Op);
template <class G, class T, class Op> __device__ void reduce_update_async(const G &, T &, const T &, Op);
template <class G, class T> __device__ T inclusive_scan(const G &, T);
template <class G, class T, class Op> __device__ T inclusive_scan(const G &, T, Op);
template <class G, class T> __device__ T exclusive_scan(const G &, T);
template <class G, class T, class Op> __device__ T exclusive_scan(const G &, T, Op);
template <class G, class T> __device__ void memcpy_async(const G &, T *, const T *, size_t);
template <class G> __device__ void wait(const G &);
template <unsigned N, class G> __device__ void wait_prior(const G &);
namespace details {}
}  // namespace cooperative_groups
#endif
