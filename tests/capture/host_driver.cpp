// A CUDA driver-API host program for kverify capture's tests: loads tma_scale.ptx (argv[1]),
// encodes a 2-D tensor map over a 64x64 float matrix, launches tma_scale on a 2x2 grid and
// checks the result. Link with -lcuda.
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                               \
  do {                                                                      \
    CUresult r_ = (x);                                                      \
    if (r_ != CUDA_SUCCESS) {                                               \
      const char* s_ = "?";                                                 \
      cuGetErrorString(r_, &s_);                                            \
      std::fprintf(stderr, "%s:%d: %s: %d %s\n", __FILE__, __LINE__, #x, r_, s_); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s tma_scale.ptx\n", argv[0]);
    return 2;
  }
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) { std::perror(argv[1]); return 2; }
  std::vector<char> ptx;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) ptx.insert(ptx.end(), buf, buf + n);
  std::fclose(f);
  ptx.push_back(0);

  const int W = 64, H = 64;
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  char name[256];
  CK(cuDeviceGetName(name, sizeof name, dev));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUmodule mod;
  CK(cuModuleLoadData(&mod, ptx.data()));
  CUfunction fn;
  CK(cuModuleGetFunction(&fn, mod, "tma_scale"));
  CUdeviceptr din, dout;
  CK(cuMemAlloc(&din, W * H * sizeof(float)));
  CK(cuMemAlloc(&dout, W * H * sizeof(float)));
  std::vector<float> h(W * H), o(W * H);
  for (int i = 0; i < W * H; i++) h[i] = (float)i;
  CK(cuMemcpyHtoD(din, h.data(), h.size() * sizeof(float)));
  CUtensorMap tmap;
  cuuint64_t dims[2] = {(cuuint64_t)W, (cuuint64_t)H};
  cuuint64_t strides[1] = {W * sizeof(float)};
  cuuint32_t box[2] = {32, 32}, estr[2] = {1, 1};
  CK(cuTensorMapEncodeTiled(&tmap, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, (void*)din, dims, strides, box, estr,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  int width = W;
  float scale = 2.0f;
  void* params[] = {&tmap, &dout, &width, &scale};
  CK(cuLaunchKernel(fn, W / 32, H / 32, 1, 128, 1, 1, 0, 0, params, nullptr));
  CK(cuCtxSynchronize());
  CK(cuMemcpyDtoH(o.data(), dout, o.size() * sizeof(float)));
  int bad = 0;
  for (int i = 0; i < W * H; i++) bad += o[i] != 2.0f * h[i];
  std::printf("%s: tma_scale %s (%d of %d wrong)\n", name, bad ? "WRONG" : "ok", bad, W * H);
  CK(cuMemFree(din));
  CK(cuMemFree(dout));
  return 0;
}
