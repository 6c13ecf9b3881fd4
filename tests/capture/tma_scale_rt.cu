// A CUDA runtime-API program: the same tma_scale kernel launched with <<<>>>, the tensor map
// encoded through the driver entry point the runtime hands out (no -lcuda needed).
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include "tma_scale.cu"

typedef CUresult (*encode_t)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                             const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                             CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

int main() {
  const int W = 128, H = 64;
  float *din, *dout;
  if (cudaMalloc(&din, W * H * sizeof(float)) != cudaSuccess) { std::puts("cudaMalloc failed"); return 1; }
  cudaMalloc(&dout, W * H * sizeof(float));
  std::vector<float> h(W * H), o(W * H);
  for (int i = 0; i < W * H; i++) h[i] = (float)(i % 1000);
  cudaMemcpy(din, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess || !fn) {
    std::puts("no cuTensorMapEncodeTiled");
    return 1;
  }
  CUtensorMap tmap;
  cuuint64_t dims[2] = {(cuuint64_t)W, (cuuint64_t)H};
  cuuint64_t strides[1] = {W * sizeof(float)};
  cuuint32_t box[2] = {32, 32}, estr[2] = {1, 1};
  if (((encode_t)fn)(&tmap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, din, dims, strides, box, estr,
                     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    std::puts("encode failed");
    return 1;
  }
  tma_scale<<<dim3(W / 32, H / 32), NUM_THREADS>>>(tmap, dout, W, 0.5f);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(o.data(), dout, o.size() * sizeof(float), cudaMemcpyDeviceToHost);
  int bad = 0;
  for (int i = 0; i < W * H; i++) bad += o[i] != 0.5f * h[i];
  std::printf("tma_scale_rt: %s (%s, %d of %d wrong)\n", bad ? "WRONG" : "ok", cudaGetErrorString(e), bad, W * H);
  return 0;
}
