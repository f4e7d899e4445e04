// Tessera GPU matmul epilogue helpers, embedded (after the block libraries)
// into every CUDA kernel that contains tile.matmul, and the slab helpers alone
// into kernels that move or fold slabs. The epilogue reads the
// block back from shared memory as slabs: [R, C] row-major tiles in the tile
// library's layout (thread t's TSR_VEC contiguous lanes of each part lie in one
// row, since C is a multiple of TSR_VEC), and moves them to and from memory.
namespace tsr {

// A slab of the f32 block in shared memory (plain loads: __ldg is for global memory).
template <class T, int N> __device__ __forceinline__ tile<T, N> load_shared(const float* p) {
  tile<T, N> r;
#pragma unroll
  for (int c = 0; c < tile<T, N>::P; ++c) {
    const float* q = p + lane0<N>(c);
#pragma unroll
    for (int v = 0; v < TSR_VEC; ++v) r.v[c * TSR_VEC + v] = T(q[v]);
  }
  return r;
}

// Lane (r, c) = p[r*RS + c*CS], 0 past rows/cols. CS is 1 (contiguous columns:
// one vector load where aligned) or 0 (one value per row, broadcast).
template <class T, int R, int C, long long RS, long long CS, bool ALIGNED, class S>
__device__ __forceinline__ tile<T, R * C> load2d(const S* p, i64 rows, i64 cols) {
  static_assert(C % TSR_VEC == 0, "a thread's lanes must lie in one row");
  static_assert(CS == 0 || CS == 1, "slab columns are contiguous or broadcast");
  tile<T, R * C> out;
#pragma unroll
  for (int c = 0; c < tile<T, R * C>::P; ++c) {
    const i64 l = lane0<R * C>(c), r = l / C, col = l % C;
    T* o = &out.v[c * TSR_VEC];
    if (r < rows && CS == 1 && ALIGNED && col + TSR_VEC <= cols) {
      load_part<T>(p + r * RS + col, o);
    } else {
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v) o[v] = (r < rows && col + v < cols) ? T(widen(p[r * RS + (col + v) * CS])) : T(0);
    }
  }
  return out;
}

// load2d from shared memory (the C block with padded rows, as the TMA block
// leaves it): whole vectors where they lie in the slab, plain loads.
template <class T, int R, int C, long long RS, long long CS, bool ALIGNED>
__device__ __forceinline__ tile<T, R * C> load2d_shared(const float* p, i64 rows, i64 cols) {
  static_assert(C % TSR_VEC == 0 && CS == 1 && ALIGNED && RS % 4 == 0, "padded C rows: contiguous, 16-byte rows");
  tile<T, R * C> out;
#pragma unroll
  for (int c = 0; c < tile<T, R * C>::P; ++c) {
    const i64 l = lane0<R * C>(c), r = l / C, col = l % C;
    T* o = &out.v[c * TSR_VEC];
    if (r < rows && col + TSR_VEC <= cols) {
      const float* q = p + r * RS + col;
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v) o[v] = T(q[v]);
    } else {
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v) o[v] = (r < rows && col + v < cols) ? T(p[r * RS + col + v]) : T(0);
    }
  }
  return out;
}

// `into` with lanes (r, c), LO <= c < HI, r < rows, read from p[r*RS + c - LO]:
// one operand of a concat along the columns. A thread's part lies in one
// operand (LO and HI are whole vectors), so it is one vector load or none.
template <int R, int C, long long RS, long long LO, long long HI, bool ALIGNED, class T, class S>
__device__ __forceinline__ tile<T, R * C> load2d_piece(tile<T, R * C> into, const S* p, i64 rows) {
  static_assert(C % TSR_VEC == 0 && LO % TSR_VEC == 0 && HI % TSR_VEC == 0, "a piece is whole vectors of lanes");
#pragma unroll
  for (int c = 0; c < tile<T, R * C>::P; ++c) {
    const i64 l = lane0<R * C>(c), r = l / C, col = l % C;
    if (r >= rows || col < LO || col >= HI) continue;
    T* o = &into.v[c * TSR_VEC];
    const S* q = p + r * RS + (col - LO);
    if (ALIGNED) {
      load_part<T>(q, o);
    } else {
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v) o[v] = T(widen(q[v]));
    }
  }
  return into;
}

template <int R, int C, long long RS, bool ALIGNED, class S, class T>
__device__ __forceinline__ void store2d(S* p, i64 rows, i64 cols, const tile<T, R * C>& t) {
  static_assert(C % TSR_VEC == 0, "a thread's lanes must lie in one row");
#pragma unroll
  for (int c = 0; c < tile<T, R * C>::P; ++c) {
    const i64 l = lane0<R * C>(c), r = l / C, col = l % C;
    if (r >= rows) continue;
    const T* in = &t.v[c * TSR_VEC];
    if (ALIGNED && col + TSR_VEC <= cols) {
      store_part(p + r * RS + col, in);
    } else {
#pragma unroll
      for (int v = 0; v < TSR_VEC; ++v)
        if (col + v < cols) p[r * RS + col + v] = narrow<S>(in[v]);
    }
  }
}

// fold_rows_*: every row of an [R, C] slab becomes the combine of its R rows
// in row order, for each column (a slab's rows are spread over the threads,
// so through shared memory; one slab at a time in a block). Deterministic.
#define TSR_FOLD_ROWS(NAME)                                                                  \
  template <int R, int C, class T> __device__ __forceinline__ tile<T, R * C> fold_rows_##NAME(tile<T, R * C> t) { \
    static_assert(TSR_CLUSTER == 1, "fold_rows works within one block");                      \
    __shared__ T slab[R * C];                                                                  \
    __syncthreads(); /* an earlier fold's readers are done */                                  \
    _Pragma("unroll") for (int c = 0; c < tile<T, R * C>::P; ++c)                              \
      _Pragma("unroll") for (int v = 0; v < TSR_VEC; ++v) slab[lane0<R * C>(c) + v] = t.v[c * TSR_VEC + v]; \
    __syncthreads();                                                                           \
    _Pragma("unroll") for (int c = 0; c < tile<T, R * C>::P; ++c)                              \
      _Pragma("unroll") for (int v = 0; v < TSR_VEC; ++v) {                                    \
        const int col = int((lane0<R * C>(c) + v) % C);                                        \
        T x = slab[col];                                                                       \
        for (int r = 1; r < R; ++r) x = combine_##NAME(x, slab[r * C + col]);                  \
        t.v[c * TSR_VEC + v] = x;                                                              \
      }                                                                                        \
    return t;                                                                                  \
  }
TSR_FOLD_ROWS(sum)
TSR_FOLD_ROWS(prod)
TSR_FOLD_ROWS(max)
TSR_FOLD_ROWS(min)
#undef TSR_FOLD_ROWS

}  // namespace tsr
