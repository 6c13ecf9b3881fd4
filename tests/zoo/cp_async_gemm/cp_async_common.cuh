// Helpers shared by the cp_async_gemm kernels: 16-byte cp.async copies and
// the tile loader. Only included, never compiled on its own.
#pragma once

#define TILE 16

// One 16-byte asynchronous copy global -> shared (cache at all levels).
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
  unsigned dst = (unsigned)__cvta_generic_to_shared(smem_dst);
  size_t src = __cvta_generic_to_global(gmem_src);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Issue the copies of one TILE x TILE tile of A (rows block_row.., columns
// k0..) and one of B (rows k0.., columns block_col..). A tile is 64 chunks of
// 16 bytes: threads 0..63 copy the A chunks, threads 64..127 the B chunks.
__device__ __forceinline__ void load_tiles(float (*As)[TILE], float (*Bs)[TILE],
                                           const float* A, const float* B, int N, int K,
                                           int block_row, int block_col, int k0, int tid) {
  if (tid < 64) {
    int r = tid / 4;
    int c = (tid % 4) * 4;
    cp_async16(&As[r][c], &A[(block_row + r) * K + k0 + c]);
  } else if (tid < 128) {
    int r = (tid - 64) / 4;
    int c = ((tid - 64) % 4) * 4;
    cp_async16(&Bs[r][c], &B[(k0 + r) * N + block_col + c]);
  }
}
