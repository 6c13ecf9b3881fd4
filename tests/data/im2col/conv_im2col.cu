// conv_im2col: the A-operand loads of an implicit-GEMM 3x3 convolution with TMA im2col mode
// (cp.async.bulk.tensor.4d ... .im2col), sm_90a.
//
// The tensor map `tmap` describes an NHWC float32 input of N=2 images, H=5, W=6, C=8
// (cuTensorMapEncodeIm2col, innermost first: C, W, H, N). Its bounding box is the set of
// positions of the filter's top-left tap for a 3x3 convolution with padding 1 and stride 1:
// lower corner (H, W) = (-1, -1), upper corner = 1 - (3 - 1) = (-1, -1), i.e. W in [-1, 4] and
// H in [-1, 3]: 6 x 5 = 30 output pixels per image, 60 in all. channelsPerPixel = 8 and
// pixelsPerColumn = 32: one load brings 32 output pixels' 8 channels (32 x 8 x 4 = 1024 bytes).
//
// CTA b owns GEMM rows (output pixels) 32*b .. 32*b+31 and issues one load per filter tap
// (r, s), with im2col offsets (s, r) (W, H) and the coordinates of its first pixel (channel 0,
// w = ow - 1, h = oh - 1, image n). Pixels 30 and 31 of CTA 0 wrap into image 1; CTA 1's last
// four pixels are past the last image; the taps that fall on the padding read zeros. Each CTA
// then writes its 32 x (9*8) slice of the im2col matrix A to `out` (64 rows x 72 columns,
// column (r*3 + s)*8 + c).
//
// Protocol: thread 0 initializes the mbarrier (count 1), fences the init, posts
// arrive.expect_tx(9 * 1024) and issues the nine loads; all threads wait phase 0.
// With -DBOX_BYTES the expected bytes assume a tile box of the whole 6 x 5 bounding box per
// tap (9 * 6*5*8*4 = 8640) instead of pixelsPerColumn x channelsPerPixel: the barrier's
// tx-count goes negative (mbarrier.tx-mismatch).
#include <cstdint>
#include <cuda.h>

#define C 8
#define W 6
#define H 5
#define OW 6  // output width = W + 2*1 - 3 + 1
#define OH 5
#define PIX 32  // pixelsPerColumn
#define TAPS 9
#define LOAD_BYTES (PIX * C * 4)
#ifdef BOX_BYTES
#define TX_BYTES (TAPS * OW * OH * C * 4)  // BUG: the bounding box, not pixelsPerColumn x channelsPerPixel
#else
#define TX_BYTES (TAPS * LOAD_BYTES)
#endif
#define NUM_THREADS 128

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "LAB_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
      "@!p bra LAB_WAIT_%=;\n\t"
      "}" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void tma_load_im2col_4d(void* dst, const CUtensorMap* tmap, int c, int w, int h, int n,
                                                   uint64_t* bar, uint16_t off_w, uint16_t off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(smem_u32(bar)), "h"(off_w),
      "h"(off_h)
      : "memory");
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS)
    conv_im2col(const __grid_constant__ CUtensorMap tmap, float* __restrict__ out) {
  __shared__ __align__(128) float a[TAPS][PIX * C];
  __shared__ __align__(8) uint64_t bar;

  const int m0 = blockIdx.x * PIX;  // first output pixel (GEMM row) of this CTA
  const int n = m0 / (OH * OW);
  const int oh = m0 % (OH * OW) / OW;
  const int ow = m0 % OW;

  if (threadIdx.x == 0) {
    mbar_init(&bar, 1);
    fence_mbarrier_init();
    mbar_arrive_expect_tx(&bar, TX_BYTES);
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int s = 0; s < 3; ++s)
        tma_load_im2col_4d(a[r * 3 + s], &tmap, 0, ow - 1, oh - 1, n, &bar, (uint16_t)s, (uint16_t)r);
  }
  __syncthreads();
  mbar_wait(&bar, 0);
  for (int k = threadIdx.x; k < PIX * TAPS * C; k += NUM_THREADS) {
    const int p = k / (TAPS * C), tap = k / C % TAPS, c = k % C;
    out[(size_t)(m0 + p) * (TAPS * C) + tap * C + c] = a[tap][p * C + c];
  }
}
