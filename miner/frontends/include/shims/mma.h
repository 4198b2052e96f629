/* kernel-miner parse shim for the toolkit's mma.h (warp matrix functions): declarations only, for
 * libclang. Without it `using namespace nvcuda;` fails and every function naming wmma:: loses its body
 * in the AST, and with it the launches it holds. Units keep the real <mma.h>. */
#ifndef KM_MMA_H
#define KM_MMA_H
#include "cuda_fp16.h"
namespace nvcuda {
namespace wmma {
struct row_major;
struct col_major;
struct matrix_a;
struct matrix_b;
struct accumulator;
enum layout_t { mem_row_major, mem_col_major };
namespace experimental {
namespace precision { struct u4; struct s4; struct b1; }
enum bmmaBitOp { bmmaBitOpXOR = 1, bmmaBitOpAND = 2 };
enum bmmaAccumulateOp { bmmaAccumulateOpPOPC = 1 };
}
struct precision { struct tf32; };
template <typename T, int size> struct __frag_base {
  T x[size];
  enum { num_elements = size };
  typedef T element_type;
};
template <typename Use, int m, int n, int k, typename T, typename Layout = void>
struct fragment : __frag_base<T, 8> {};
template <typename Use, int m, int n, int k, typename T, typename Layout, typename V>
__device__ void fill_fragment(fragment<Use, m, n, k, T, Layout> &a, const V &v);
template <typename Use, int m, int n, int k, typename T, typename Layout, typename P>
__device__ void load_matrix_sync(fragment<Use, m, n, k, T, Layout> &a, const P *p, unsigned ldm);
template <typename Use, int m, int n, int k, typename T, typename P>
__device__ void load_matrix_sync(fragment<Use, m, n, k, T> &a, const P *p, unsigned ldm, layout_t layout);
template <int m, int n, int k, typename T, typename P>
__device__ void store_matrix_sync(P *p, const fragment<accumulator, m, n, k, T> &a, unsigned ldm, layout_t layout);
template <int m, int n, int k, typename Ta, typename La, typename Tb, typename Lb, typename Tc, typename Td>
__device__ void mma_sync(fragment<accumulator, m, n, k, Td> &d, const fragment<matrix_a, m, n, k, Ta, La> &a,
                         const fragment<matrix_b, m, n, k, Tb, Lb> &b, const fragment<accumulator, m, n, k, Tc> &c,
                         bool satf = false);
__device__ float __float_to_tf32(float);
}  // namespace wmma
}  // namespace nvcuda
#endif
