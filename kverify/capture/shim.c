/* kverify capture shim: an LD_PRELOAD library that records every CUDA kernel launch.
 *
 * It interposes the CUDA driver entry points kernels are launched through (cuLaunchKernel,
 * cuLaunchKernelEx, cuLaunchCooperativeKernel and their _ptsz forms), the calls that name
 * the launched function (cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction), load
 * modules (cuModuleLoadData[Ex], cuModuleLoadFatBinary, cuLibraryLoadData), allocate device
 * memory (cuMemAlloc_v2, cuMemAllocAsync, cuMemAllocManaged, cuMemFree_v2) and encode tensor
 * maps (cuTensorMapEncodeTiled/Im2col).  The CUDA runtime reaches the driver through
 * cuGetProcAddress, which it finds with dlsym on its own handle of libcuda.so.1: both are
 * interposed, and hand out the wrappers for the symbols above.
 *
 * Records go to $KVERIFY_CAPTURE_DIR/records.<pid>.jsonl (one JSON object a line); module
 * images to $KVERIFY_CAPTURE_DIR/module_<pid>_<n>.<ptx|cubin|fatbin>.  kverify.capture turns
 * them into launch specs.
 *
 * With KVERIFY_CAPTURE_NOGPU=1 the shim is the driver itself (it is then also found as
 * libcuda.so.1): it answers initialization, device queries, contexts, module loads, memory
 * (device pointers are host memory) and copies, and every launch is recorded and not run.
 *
 * No CUDA header is needed to build it: the few types it uses are declared here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUlibrary, *CUkernel, *CUstream;
typedef unsigned long long CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef uint32_t cuuint32_t;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_FOUND 500
#define PTDS_FLAG 2

typedef struct { int id; int pad; union { char raw[64]; struct { unsigned x, y, z; } clusterDim; int cooperative; } value; } CUlaunchAttribute;
typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;
#define CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define CU_LAUNCH_ATTRIBUTE_COOPERATIVE 2

/* ---------------------------------------------------------------- state */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int nogpu = 0;
static int debug = 0;
static char outdir[4096] = ".";
static FILE *logf = NULL;
static int module_count = 0;
static int launch_count = 0;
static void *libcuda = NULL;

#define MAXMOD 4096
static struct { void *handle; int id; char *ptx; } modules[MAXMOD];
static int nmodules = 0;
#define MAXFN 65536
static struct { void *handle; char *name; int module; } fns[MAXFN];
static int nfns = 0;

static void *(*real_dlsym_p)(void *, const char *) = NULL;
static void *rdlsym(void *h, const char *s) {
  if (!real_dlsym_p) {
    real_dlsym_p = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym_p) real_dlsym_p = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!real_dlsym_p) return NULL;
  }
  return real_dlsym_p(h, s);
}

__attribute__((constructor)) static void kv_init(void) {
  const char *d = getenv("KVERIFY_CAPTURE_DIR");
  const char *n = getenv("KVERIFY_CAPTURE_NOGPU");
  nogpu = n && n[0] == '1';
  const char *g = getenv("KVERIFY_CAPTURE_DEBUG");
  debug = g && g[0] == '1';
  if (d && *d) snprintf(outdir, sizeof outdir, "%s", d);
}

/* Found with dlsym(RTLD_DEFAULT) by kverify.capture() (the Python context manager): the shim is
 * in the process, and its records go to this directory. */
__attribute__((visibility("default"))) const char *kverify_capture_dir(void) { return outdir; }

static FILE *logfile(void) {
  if (!logf) {
    char p[4200];
    snprintf(p, sizeof p, "%s/records.%d.jsonl", outdir, (int)getpid());
    logf = fopen(p, "a");
    if (logf) fprintf(logf, "{\"type\": \"process\", \"pid\": %d, \"nogpu\": %d}\n", (int)getpid(), nogpu);
  }
  return logf;
}

static void *real(const char *name) {
  if (nogpu) return NULL;
  if (!libcuda) libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  void *p = libcuda ? rdlsym(libcuda, name) : NULL;
  if (!p) p = rdlsym(RTLD_NEXT, name);
  return p;
}

static void put_hex(FILE *f, const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  fputc('"', f);
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x", b[i]);
  fputc('"', f);
}

static void put_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

/* ---------------------------------------------------------------- module images */

static size_t image_size(const unsigned char *p, const char **kind, const unsigned char **start) {
  *start = p;
  uint32_t magic;
  memcpy(&magic, p, 4);
  if (magic == 0x466243b1u) { /* __fatBinC_Wrapper_t {int magic, version; const void *data; ...} */
    const unsigned char *data;
    memcpy(&data, p + 8, sizeof data);
    return image_size(data, kind, start);
  }
  if (magic == 0xBA55ED50u) { /* fatbin: u32 magic, u16 version, u16 header size, u64 fat size */
    uint16_t hs; uint64_t fs;
    memcpy(&hs, p + 6, 2); memcpy(&fs, p + 8, 8);
    *kind = "fatbin";
    return (size_t)hs + (size_t)fs;
  }
  if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F' && p[4] == 2) {
    uint64_t shoff, phoff; uint16_t shentsize, shnum, phentsize, phnum;
    memcpy(&phoff, p + 0x20, 8); memcpy(&shoff, p + 0x28, 8);
    memcpy(&phentsize, p + 0x36, 2); memcpy(&phnum, p + 0x38, 2);
    memcpy(&shentsize, p + 0x3A, 2); memcpy(&shnum, p + 0x3C, 2);
    size_t a = shoff + (size_t)shnum * shentsize, b = phoff + (size_t)phnum * phentsize;
    *kind = "cubin";
    return a > b ? a : b;
  }
  *kind = "ptx";
  return strlen((const char *)p);
}

/* Saves a module image, registers handle -> module id; called with mu held. */
static int add_module(void *handle, const void *image, const char *api) {
  const char *kind; const unsigned char *start;
  size_t n = image ? image_size((const unsigned char *)image, &kind, &start) : 0;
  int id = module_count++;
  char fname[256] = "";
  if (image) {
    snprintf(fname, sizeof fname, "module_%d_%d.%s", (int)getpid(), id, kind);
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", outdir, fname);
    FILE *f = fopen(p, "wb");
    if (f) { fwrite(start, 1, n, f); fclose(f); }
  } else kind = "none";
  if (nmodules < MAXMOD) {
    modules[nmodules].handle = handle;
    modules[nmodules].id = id;
    modules[nmodules].ptx = NULL;
    if (image && !strcmp(kind, "ptx")) modules[nmodules].ptx = strdup((const char *)start);
    nmodules++;
  }
  FILE *f = logfile();
  if (f) {
    fprintf(f, "{\"type\": \"module\", \"id\": %d, \"api\": \"%s\", \"kind\": \"%s\", \"size\": %zu, \"file\": ", id, api, kind, n);
    put_str(f, fname);
    fprintf(f, "}\n");
    fflush(f);
  }
  return id;
}

static int module_index(void *handle) {
  for (int i = nmodules - 1; i >= 0; i--)
    if (modules[i].handle == handle) return i;
  return -1;
}

static void add_function(void *handle, const char *name, int module_id) {
  if (nfns < MAXFN) {
    fns[nfns].handle = handle;
    fns[nfns].name = strdup(name ? name : "");
    fns[nfns].module = module_id;
    nfns++;
  }
}

static int function_index(void *handle) {
  for (int i = nfns - 1; i >= 0; i--)
    if (fns[i].handle == handle) return i;
  return -1;
}

/* ---------------------------------------------------------------- PTX parameter layout */

static int ptx_type_size(const char *t, size_t n) {
  if (n < 3) return 0;
  int bits = atoi(t + 2);
  if (t[0] != '.') return 0;
  if (!strchr("usbf", t[1])) return 0;
  return bits >= 8 ? bits / 8 : 0;
}

/* Offsets and sizes of the parameters of .entry `name` in `ptx`; returns their number or -1. */
static int ptx_params(const char *ptx, const char *name, size_t *off, size_t *size, int max) {
  size_t ln = strlen(name);
  const char *p = ptx;
  while ((p = strstr(p, ".entry")) != NULL) {
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t') q++;
    if (!strncmp(q, name, ln) && (q[ln] == '(' || q[ln] == ' ' || q[ln] == '\t' || q[ln] == '\n' || q[ln] == '\r')) {
      q += ln;
      while (*q && *q != '(' && *q != '{') q++;
      if (*q != '(') return 0;
      q++;
      int count = 0;
      size_t cur = 0;
      while (*q && *q != ')' && count < max) {
        const char *e = q;
        while (*e && *e != ',' && *e != ')') e++;
        /* one declaration in [q, e) */
        size_t align = 0, tsize = 0, n = 1;
        const char *t = q;
        while (t < e) {
          while (t < e && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')) t++;
          const char *w = t;
          while (t < e && !(*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')) t++;
          size_t wl = (size_t)(t - w);
          if (wl == 0) break;
          if (wl == 6 && !strncmp(w, ".align", 6)) {
            while (t < e && (*t == ' ' || *t == '\t')) t++;
            size_t a = strtoul(t, NULL, 10);
            if (!tsize) align = a;
            while (t < e && *t >= '0' && *t <= '9') t++;
          } else if (!tsize && w[0] == '.' && strncmp(w, ".param", 6) && strncmp(w, ".ptr", 4)) {
            int s = ptx_type_size(w, wl);
            if (s) tsize = (size_t)s;
          } else if (w[0] != '.') {
            const char *br = memchr(w, '[', wl);
            if (br) n = strtoul(br + 1, NULL, 10);
          }
        }
        if (!tsize) return -1;
        if (!align) align = tsize;
        cur = (cur + align - 1) / align * align;
        off[count] = cur;
        size[count] = tsize * n;
        cur += tsize * n;
        count++;
        q = *e == ',' ? e + 1 : e;
      }
      return count;
    }
    p = q;
  }
  return -1;
}

/* ---------------------------------------------------------------- launch records */

#define MAXPARAM 512

static void record_launch(const char *api, CUfunction f, const unsigned grid[3], const unsigned block[3],
                          const unsigned cluster[3], unsigned smem, void **params, void **extra) {
  pthread_mutex_lock(&mu);
  int fi = function_index(f);
  const char *name = fi >= 0 ? fns[fi].name : NULL;
  int mid = fi >= 0 ? fns[fi].module : -1;
  if (!name && !nogpu) {
    CUresult (*fgn)(const char **, CUfunction) = (CUresult(*)(const char **, CUfunction))real("cuFuncGetName");
    if (!fgn || fgn(&name, f) != CUDA_SUCCESS) {
      fgn = (CUresult(*)(const char **, CUfunction))real("cuKernelGetName");
      if (!fgn || fgn(&name, f) != CUDA_SUCCESS) name = NULL;
    }
  }
  static size_t off[MAXPARAM], size[MAXPARAM];
  int np = -1, zero_ok = 0;
  const char *source = "unknown";
  if (!nogpu) {
    CUresult (*gpi)(CUfunction, size_t, size_t *, size_t *) =
        (CUresult(*)(CUfunction, size_t, size_t *, size_t *))real("cuFuncGetParamInfo");
    if (gpi) {
      np = 0;
      while (np < MAXPARAM && gpi(f, (size_t)np, &off[np], &size[np]) == CUDA_SUCCESS) np++;
      source = "cuFuncGetParamInfo";
      if (np == 0) { /* a CUkernel handle, a function the driver does not know, or no parameters */
        CUresult (*kpi)(CUfunction, size_t, size_t *, size_t *) =
            (CUresult(*)(CUfunction, size_t, size_t *, size_t *))real("cuKernelGetParamInfo");
        while (kpi && np < MAXPARAM && kpi(f, (size_t)np, &off[np], &size[np]) == CUDA_SUCCESS) np++;
        if (np) source = "cuKernelGetParamInfo";
        else { np = -1; zero_ok = 1; }
      }
    }
  }
  if (np < 0 && name && fi >= 0) {
    int mi = -1;
    for (int i = 0; i < nmodules; i++)
      if (modules[i].id == mid) mi = i;
    if (mi >= 0 && modules[mi].ptx) {
      np = ptx_params(modules[mi].ptx, name, off, size, MAXPARAM);
      source = "ptx";
    }
  }
  if (np < 0 && zero_ok) { np = 0; source = "cuFuncGetParamInfo"; }
  FILE *lf = logfile();
  if (lf) {
    fprintf(lf, "{\"type\": \"launch\", \"seq\": %d, \"api\": \"%s\", \"function\": \"%p\", \"name\": ", launch_count++, api, f);
    if (name) put_str(lf, name); else fputs("null", lf);
    fprintf(lf, ", \"module\": %d, \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"cluster\": [%u, %u, %u], "
                "\"dynamic_smem\": %u, \"param_source\": \"%s\", \"params\": ",
            mid, grid[0], grid[1], grid[2], block[0], block[1], block[2], cluster[0], cluster[1], cluster[2], smem,
            np < 0 ? "unknown" : source);
    if (np < 0) {
      fputs("null", lf);
    } else {
      /* extra = {CU_LAUNCH_PARAM_BUFFER_POINTER (1), buf, CU_LAUNCH_PARAM_BUFFER_SIZE (2), &size, END (0)} */
      const unsigned char *buf = NULL;
      size_t bufsize = 0;
      for (void **e = extra; e && *e; e += 2) {
        if (*e == (void *)1) buf = (const unsigned char *)e[1];
        else if (*e == (void *)2) bufsize = *(size_t *)e[1];
      }
      fputc('[', lf);
      for (int i = 0; i < np; i++) {
        fprintf(lf, "%s{\"offset\": %zu, \"size\": %zu, \"hex\": ", i ? ", " : "", off[i], size[i]);
        if (params) put_hex(lf, params[i], size[i]);
        else if (buf && off[i] + size[i] <= bufsize) put_hex(lf, buf + off[i], size[i]);
        else fputs("null", lf);
        fputc('}', lf);
      }
      fputc(']', lf);
    }
    fputs("}\n", lf);
    fflush(lf);
  }
  pthread_mutex_unlock(&mu);
}

/* ---------------------------------------------------------------- the no-GPU driver */

static CUresult fake_ok(void) { return CUDA_SUCCESS; }
static int fake_ctx_dummy;

CUresult cuInit(unsigned flags) {
  CUresult (*r)(unsigned) = (CUresult(*)(unsigned))real("cuInit");
  return r ? r(flags) : nogpu ? CUDA_SUCCESS : 3;
}

#define FAKE(ret_if_real, decl, args, call, body)                                       \
  CUresult decl args {                                                                  \
    if (!nogpu) {                                                                       \
      CUresult(*r) args = (CUresult(*) args)real(#decl);                                \
      return r ? r call : 999;                                                          \
    }                                                                                   \
    body                                                                                \
  }

FAKE(0, cuDriverGetVersion, (int *v), (v), { *v = 13000; return CUDA_SUCCESS; })
FAKE(0, cuDeviceGetCount, (int *c), (c), { *c = 1; return CUDA_SUCCESS; })
FAKE(0, cuDeviceGet, (CUdevice *d, int o), (d, o), { if (o) return 101; *d = 0; return CUDA_SUCCESS; })
FAKE(0, cuDeviceGetName, (char *n, int len, CUdevice d), (n, len, d),
     { (void)d; snprintf(n, (size_t)len, "kverify capture (no GPU, sm_90)"); return CUDA_SUCCESS; })
FAKE(0, cuDeviceComputeCapability, (int *ma, int *mi, CUdevice d), (ma, mi, d),
     { (void)d; *ma = 9; *mi = 0; return CUDA_SUCCESS; })
FAKE(0, cuDeviceTotalMem_v2, (size_t *b, CUdevice d), (b, d), { (void)d; *b = (size_t)80 << 30; return CUDA_SUCCESS; })
FAKE(0, cuMemGetInfo_v2, (size_t *fr, size_t *t), (fr, t),
     { *fr = (size_t)79 << 30; *t = (size_t)80 << 30; return CUDA_SUCCESS; })
FAKE(0, cuDeviceGetAttribute, (int *v, int attr, CUdevice d), (v, attr, d), {
  (void)d;
  switch (attr) {
    case 1: *v = 1024; break;                       /* max threads per block */
    case 2: case 3: *v = 1024; break; case 4: *v = 64; break;
    case 5: *v = 2147483647; break; case 6: case 7: *v = 65535; break;
    case 8: *v = 49152; break;                      /* max shared per block */
    case 10: *v = 32; break;                        /* warp size */
    case 12: *v = 65536; break; case 13: *v = 1980000; break;
    case 16: *v = 132; break;                       /* multiprocessors */
    case 39: *v = 2048; break;                      /* max threads per SM */
    case 75: *v = 9; break; case 76: *v = 0; break; /* compute capability */
    case 81: *v = 233472; break;                    /* shared per SM */
    case 97: *v = 232448; break;                    /* max shared per block opt-in */
    case 106: *v = 32; break;
    default: *v = 0;
  }
  return CUDA_SUCCESS;
})
FAKE(0, cuDevicePrimaryCtxRetain, (CUcontext *c, CUdevice d), (c, d), { (void)d; *c = &fake_ctx_dummy; return CUDA_SUCCESS; })
FAKE(0, cuDevicePrimaryCtxRelease_v2, (CUdevice d), (d), { (void)d; return CUDA_SUCCESS; })
FAKE(0, cuCtxCreate_v2, (CUcontext *c, unsigned f, CUdevice d), (c, f, d), { (void)f; (void)d; *c = &fake_ctx_dummy; return CUDA_SUCCESS; })
FAKE(0, cuCtxCreate_v3, (CUcontext *c, void *p, int n, unsigned f, CUdevice d), (c, p, n, f, d),
     { (void)p; (void)n; (void)f; (void)d; *c = &fake_ctx_dummy; return CUDA_SUCCESS; })
FAKE(0, cuCtxCreate_v4, (CUcontext *c, void *p, unsigned f, CUdevice d), (c, p, f, d),
     { (void)p; (void)f; (void)d; *c = &fake_ctx_dummy; return CUDA_SUCCESS; })
FAKE(0, cuCtxDestroy_v2, (CUcontext c), (c), { (void)c; return CUDA_SUCCESS; })
FAKE(0, cuCtxSetCurrent, (CUcontext c), (c), { (void)c; return CUDA_SUCCESS; })
FAKE(0, cuCtxGetCurrent, (CUcontext *c), (c), { *c = &fake_ctx_dummy; return CUDA_SUCCESS; })
FAKE(0, cuCtxPushCurrent_v2, (CUcontext c), (c), { (void)c; return CUDA_SUCCESS; })
FAKE(0, cuCtxPopCurrent_v2, (CUcontext *c), (c), { if (c) *c = &fake_ctx_dummy; return CUDA_SUCCESS; })
FAKE(0, cuCtxSynchronize, (void), (), { return fake_ok(); })
FAKE(0, cuModuleUnload, (CUmodule m), (m), { (void)m; return CUDA_SUCCESS; })
FAKE(0, cuLibraryUnload, (CUlibrary m), (m), { (void)m; return CUDA_SUCCESS; })
FAKE(0, cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), (d, s, n),
     { memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; })
FAKE(0, cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), (d, s, n),
     { memcpy(d, (void *)(uintptr_t)s, n); return CUDA_SUCCESS; })
FAKE(0, cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n),
     { memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return CUDA_SUCCESS; })
FAKE(0, cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void *s, size_t n, CUstream st), (d, s, n, st),
     { (void)st; memcpy((void *)(uintptr_t)d, s, n); return CUDA_SUCCESS; })
FAKE(0, cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st),
     { (void)st; memcpy(d, (void *)(uintptr_t)s, n); return CUDA_SUCCESS; })
FAKE(0, cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n),
     { memset((void *)(uintptr_t)d, v, n); return CUDA_SUCCESS; })
FAKE(0, cuMemsetD32_v2, (CUdeviceptr d, unsigned v, size_t n), (d, v, n), {
  for (size_t i = 0; i < n; i++) ((unsigned *)(uintptr_t)d)[i] = v;
  return CUDA_SUCCESS;
})
FAKE(0, cuStreamCreate, (CUstream *s, unsigned f), (s, f), { (void)f; *s = NULL; return CUDA_SUCCESS; })
FAKE(0, cuStreamSynchronize, (CUstream s), (s), { (void)s; return CUDA_SUCCESS; })
FAKE(0, cuStreamDestroy_v2, (CUstream s), (s), { (void)s; return CUDA_SUCCESS; })
FAKE(0, cuFuncSetAttribute, (CUfunction f, int a, int v), (f, a, v), { (void)f; (void)a; (void)v; return CUDA_SUCCESS; })
FAKE(0, cuFuncGetAttribute, (int *v, int a, CUfunction f), (v, a, f), { (void)f; (void)a; *v = 0; return CUDA_SUCCESS; })
FAKE(0, cuGetErrorString, (CUresult e, const char **s), (e, s),
     { *s = e ? "error (kverify capture, no GPU)" : "no error"; return CUDA_SUCCESS; })
FAKE(0, cuGetErrorName, (CUresult e, const char **s), (e, s),
     { *s = e ? "CUDA_ERROR (kverify capture, no GPU)" : "CUDA_SUCCESS"; return CUDA_SUCCESS; })
FAKE(0, cuFuncGetName, (const char **n, CUfunction f), (n, f), {
  pthread_mutex_lock(&mu);
  int i = function_index(f);
  *n = i >= 0 ? fns[i].name : NULL;
  pthread_mutex_unlock(&mu);
  return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
})

/* ---------------------------------------------------------------- interposed calls */

typedef CUresult (*launch_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
typedef CUresult (*launchex_t)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*coop_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           CUstream, void **);

/* one slot of real entry points per interposed symbol: [0] default stream, [1] per-thread */
enum { S_LAUNCH, S_LAUNCHEX, S_COOP, S_MODLOAD, S_MODLOADEX, S_MODFAT, S_LIBLOAD, S_MODGETFN, S_LIBGETK,
       S_KGETFN, S_MALLOC, S_MALLOCASYNC, S_MALLOCMANAGED, S_FREE, S_TMTILED, S_TMIM2COL, S_GETPROC, S_N };
static void *reals[S_N][2];

static void *real_slot(int s, int ptds, const char *name) {
  if (!reals[s][ptds]) reals[s][ptds] = real(name);
  return reals[s][ptds];
}

static void launch_common(const char *api, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, const unsigned cl[3], unsigned smem, void **params, void **extra) {
  unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  record_launch(api, f, g, b, cl, smem, params, extra);
}

static const unsigned one3[3] = {1, 1, 1};

#define LAUNCH_WRAPPER(NAME, SLOT, PTDS)                                                                      \
  CUresult NAME(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
                unsigned smem, CUstream st, void **params, void **extra) {                                    \
    launch_common(#NAME, f, gx, gy, gz, bx, by, bz, one3, smem, params, extra);                               \
    if (nogpu) return CUDA_SUCCESS;                                                                           \
    launch_t r = (launch_t)real_slot(SLOT, PTDS, #NAME);                                                      \
    return r ? r(f, gx, gy, gz, bx, by, bz, smem, st, params, extra) : 999;                                   \
  }
LAUNCH_WRAPPER(cuLaunchKernel, S_LAUNCH, 0)
LAUNCH_WRAPPER(cuLaunchKernel_ptsz, S_LAUNCH, 1)

#define COOP_WRAPPER(NAME, SLOT, PTDS)                                                                        \
  CUresult NAME(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
                unsigned smem, CUstream st, void **params) {                                                  \
    launch_common(#NAME, f, gx, gy, gz, bx, by, bz, one3, smem, params, NULL);                                \
    if (nogpu) return CUDA_SUCCESS;                                                                           \
    coop_t r = (coop_t)real_slot(SLOT, PTDS, #NAME);                                                          \
    return r ? r(f, gx, gy, gz, bx, by, bz, smem, st, params) : 999;                                          \
  }
COOP_WRAPPER(cuLaunchCooperativeKernel, S_COOP, 0)
COOP_WRAPPER(cuLaunchCooperativeKernel_ptsz, S_COOP, 1)

#define LAUNCHEX_WRAPPER(NAME, SLOT, PTDS)                                                                    \
  CUresult NAME(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {                         \
    unsigned cl[3] = {1, 1, 1};                                                                               \
    int coop = 0;                                                                                             \
    for (unsigned i = 0; c->attrs && i < c->numAttrs; i++) {                                                  \
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {                                          \
        cl[0] = c->attrs[i].value.clusterDim.x; cl[1] = c->attrs[i].value.clusterDim.y;                       \
        cl[2] = c->attrs[i].value.clusterDim.z;                                                               \
      }                                                                                                       \
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative) coop = 1;      \
    }                                                                                                         \
    launch_common(coop ? #NAME "+cooperative" : #NAME, f, c->gridDimX, c->gridDimY, c->gridDimZ,            \
                  c->blockDimX, c->blockDimY, c->blockDimZ, cl, c->sharedMemBytes, params, extra);            \
    if (nogpu) return CUDA_SUCCESS;                                                                           \
    launchex_t r = (launchex_t)real_slot(SLOT, PTDS, #NAME);                                                  \
    return r ? r(c, f, params, extra) : 999;                                                                  \
  }
LAUNCHEX_WRAPPER(cuLaunchKernelEx, S_LAUNCHEX, 0)
LAUNCHEX_WRAPPER(cuLaunchKernelEx_ptsz, S_LAUNCHEX, 1)

static uintptr_t fake_handle_next = 0x10000;
static void *fake_handle(void) {
  fake_handle_next += 0x10;
  return (void *)fake_handle_next;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) *m = fake_handle();
  else {
    CUresult (*f)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))real_slot(S_MODLOAD, 0, "cuModuleLoadData");
    r = f ? f(m, image) : 999;
  }
  if (r == CUDA_SUCCESS) { pthread_mutex_lock(&mu); add_module(*m, image, "cuModuleLoadData"); pthread_mutex_unlock(&mu); }
  return r;
}

CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, void *o, void **ov) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) *m = fake_handle();
  else {
    CUresult (*f)(CUmodule *, const void *, unsigned, void *, void **) =
        (CUresult(*)(CUmodule *, const void *, unsigned, void *, void **))real_slot(S_MODLOADEX, 0, "cuModuleLoadDataEx");
    r = f ? f(m, image, n, o, ov) : 999;
  }
  if (r == CUDA_SUCCESS) { pthread_mutex_lock(&mu); add_module(*m, image, "cuModuleLoadDataEx"); pthread_mutex_unlock(&mu); }
  return r;
}

CUresult cuModuleLoadFatBinary(CUmodule *m, const void *image) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) *m = fake_handle();
  else {
    CUresult (*f)(CUmodule *, const void *) = (CUresult(*)(CUmodule *, const void *))real_slot(S_MODFAT, 0, "cuModuleLoadFatBinary");
    r = f ? f(m, image) : 999;
  }
  if (r == CUDA_SUCCESS) { pthread_mutex_lock(&mu); add_module(*m, image, "cuModuleLoadFatBinary"); pthread_mutex_unlock(&mu); }
  return r;
}

CUresult cuLibraryLoadData(CUlibrary *l, const void *code, void *jo, void **jov, unsigned nj, void *lo, void **lov,
                           unsigned nl) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) *l = fake_handle();
  else {
    CUresult (*f)(CUlibrary *, const void *, void *, void **, unsigned, void *, void **, unsigned) =
        (CUresult(*)(CUlibrary *, const void *, void *, void **, unsigned, void *, void **, unsigned))real_slot(
            S_LIBLOAD, 0, "cuLibraryLoadData");
    r = f ? f(l, code, jo, jov, nj, lo, lov, nl) : 999;
  }
  if (r == CUDA_SUCCESS) { pthread_mutex_lock(&mu); add_module(*l, code, "cuLibraryLoadData"); pthread_mutex_unlock(&mu); }
  return r;
}

CUresult cuModuleGetFunction(CUfunction *fn, CUmodule m, const char *name) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) *fn = fake_handle();
  else {
    CUresult (*f)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))real_slot(S_MODGETFN, 0, "cuModuleGetFunction");
    r = f ? f(fn, m, name) : 999;
  }
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&mu);
    int i = module_index(m);
    add_function(*fn, name, i >= 0 ? modules[i].id : -1);
    pthread_mutex_unlock(&mu);
  }
  return r;
}

CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *name) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) *k = fake_handle();
  else {
    CUresult (*f)(CUkernel *, CUlibrary, const char *) =
        (CUresult(*)(CUkernel *, CUlibrary, const char *))real_slot(S_LIBGETK, 0, "cuLibraryGetKernel");
    r = f ? f(k, l, name) : 999;
  }
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&mu);
    int i = module_index(l);
    add_function(*k, name, i >= 0 ? modules[i].id : -1);
    pthread_mutex_unlock(&mu);
  }
  return r;
}

CUresult cuKernelGetFunction(CUfunction *fn, CUkernel k) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) *fn = (CUfunction)k;
  else {
    CUresult (*f)(CUfunction *, CUkernel) = (CUresult(*)(CUfunction *, CUkernel))real_slot(S_KGETFN, 0, "cuKernelGetFunction");
    r = f ? f(fn, k) : 999;
  }
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&mu);
    int i = function_index(k);
    if (i >= 0 && *fn != (CUfunction)k) add_function(*fn, fns[i].name, fns[i].module);
    pthread_mutex_unlock(&mu);
  }
  return r;
}

CUresult cuFuncGetParamInfo(CUfunction fn, size_t index, size_t *off, size_t *size) {
  if (!nogpu) {
    CUresult (*f)(CUfunction, size_t, size_t *, size_t *) =
        (CUresult(*)(CUfunction, size_t, size_t *, size_t *))real("cuFuncGetParamInfo");
    return f ? f(fn, index, off, size) : 999;
  }
  CUresult res = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&mu);
  int i = function_index(fn);
  if (i >= 0) {
    for (int j = 0; j < nmodules; j++)
      if (modules[j].id == fns[i].module && modules[j].ptx) {
        static size_t o[MAXPARAM], s[MAXPARAM];
        int n = ptx_params(modules[j].ptx, fns[i].name, o, s, MAXPARAM);
        if ((int)index < n) { *off = o[index]; *size = s[index]; res = CUDA_SUCCESS; }
      }
  }
  pthread_mutex_unlock(&mu);
  return res;
}

static void record_alloc(const char *api, CUdeviceptr p, size_t n) {
  pthread_mutex_lock(&mu);
  FILE *f = logfile();
  if (f) { fprintf(f, "{\"type\": \"alloc\", \"api\": \"%s\", \"ptr\": %llu, \"size\": %zu}\n", api, p, n); fflush(f); }
  pthread_mutex_unlock(&mu);
}

static CUresult fake_alloc(CUdeviceptr *p, size_t n) {
  void *m = NULL;
  if (posix_memalign(&m, 256, n ? n : 1)) return 2;
  memset(m, 0, n);
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  CUresult r;
  if (nogpu) r = fake_alloc(p, n);
  else {
    CUresult (*f)(CUdeviceptr *, size_t) = (CUresult(*)(CUdeviceptr *, size_t))real_slot(S_MALLOC, 0, "cuMemAlloc_v2");
    r = f ? f(p, n) : 999;
  }
  if (r == CUDA_SUCCESS) record_alloc("cuMemAlloc", *p, n);
  return r;
}

CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned fl) {
  CUresult r;
  if (nogpu) r = fake_alloc(p, n);
  else {
    CUresult (*f)(CUdeviceptr *, size_t, unsigned) =
        (CUresult(*)(CUdeviceptr *, size_t, unsigned))real_slot(S_MALLOCMANAGED, 0, "cuMemAllocManaged");
    r = f ? f(p, n, fl) : 999;
  }
  if (r == CUDA_SUCCESS) record_alloc("cuMemAllocManaged", *p, n);
  return r;
}

#define ALLOCASYNC_WRAPPER(NAME, PTDS)                                                                  \
  CUresult NAME(CUdeviceptr *p, size_t n, CUstream s) {                                                 \
    CUresult r;                                                                                         \
    if (nogpu) r = fake_alloc(p, n);                                                                    \
    else {                                                                                              \
      CUresult (*f)(CUdeviceptr *, size_t, CUstream) =                                                  \
          (CUresult(*)(CUdeviceptr *, size_t, CUstream))real_slot(S_MALLOCASYNC, PTDS, #NAME);          \
      r = f ? f(p, n, s) : 999;                                                                         \
    }                                                                                                   \
    if (r == CUDA_SUCCESS) record_alloc("cuMemAllocAsync", *p, n);                                      \
    return r;                                                                                           \
  }
ALLOCASYNC_WRAPPER(cuMemAllocAsync, 0)
ALLOCASYNC_WRAPPER(cuMemAllocAsync_ptsz, 1)

CUresult cuMemFree_v2(CUdeviceptr p) {
  CUresult r = CUDA_SUCCESS;
  if (!nogpu) {
    CUresult (*f)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))real_slot(S_FREE, 0, "cuMemFree_v2");
    r = f ? f(p) : 999;
  } /* no-GPU: the host block is kept, so a recorded address is never reused */
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&mu);
    FILE *f = logfile();
    if (f) { fprintf(f, "{\"type\": \"free\", \"ptr\": %llu}\n", p); fflush(f); }
    pthread_mutex_unlock(&mu);
  }
  return r;
}

static void put_u64s(FILE *f, const cuuint64_t *v, unsigned n) {
  fputc('[', f);
  for (unsigned i = 0; v && i < n; i++) fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
  fputc(']', f);
}
static void put_u32s(FILE *f, const cuuint32_t *v, unsigned n) {
  fputc('[', f);
  for (unsigned i = 0; v && i < n; i++) fprintf(f, "%s%u", i ? ", " : "", v[i]);
  fputc(']', f);
}
static void put_i32s(FILE *f, const int *v, unsigned n) {
  fputc('[', f);
  for (unsigned i = 0; v && i < n; i++) fprintf(f, "%s%d", i ? ", " : "", v[i]);
  fputc(']', f);
}

static unsigned fake_map_count = 0;
static void fake_map(void *map, void *addr) {
  /* a recognizable, unique 128-byte map: "KVTM", a counter, the global address */
  memset(map, 0, 128);
  memcpy(map, "KVTM", 4);
  unsigned c = ++fake_map_count;
  memcpy((char *)map + 4, &c, 4);
  memcpy((char *)map + 8, &addr, sizeof addr);
}

CUresult cuTensorMapEncodeTiled(void *map, int dtype, cuuint32_t rank, void *addr, const cuuint64_t *dims,
                                const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *estrides,
                                int interleave, int swizzle, int l2, int oob) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) fake_map(map, addr);
  else {
    CUresult (*f)(void *, int, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                  const cuuint32_t *, int, int, int, int) =
        (CUresult(*)(void *, int, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                     const cuuint32_t *, int, int, int, int))real_slot(S_TMTILED, 0, "cuTensorMapEncodeTiled");
    r = f ? f(map, dtype, rank, addr, dims, strides, box, estrides, interleave, swizzle, l2, oob) : 999;
  }
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&mu);
    FILE *f = logfile();
    if (f) {
      fprintf(f, "{\"type\": \"tensormap\", \"api\": \"cuTensorMapEncodeTiled\", \"map\": ");
      put_hex(f, map, 128);
      fprintf(f, ", \"dtype\": %d, \"rank\": %u, \"addr\": %llu, \"dims\": ", dtype, rank, (unsigned long long)(uintptr_t)addr);
      put_u64s(f, dims, rank);
      fputs(", \"strides\": ", f);
      put_u64s(f, strides, rank > 0 ? rank - 1 : 0);
      fputs(", \"box\": ", f);
      put_u32s(f, box, rank);
      fputs(", \"element_strides\": ", f);
      put_u32s(f, estrides, rank);
      fprintf(f, ", \"interleave\": %d, \"swizzle\": %d, \"l2_promotion\": %d, \"oob_fill\": %d}\n", interleave, swizzle, l2, oob);
      fflush(f);
    }
    pthread_mutex_unlock(&mu);
  }
  return r;
}

CUresult cuTensorMapEncodeIm2col(void *map, int dtype, cuuint32_t rank, void *addr, const cuuint64_t *dims,
                                 const cuuint64_t *strides, const int *lower, const int *upper, cuuint32_t cpp,
                                 cuuint32_t ppc, const cuuint32_t *estrides, int interleave, int swizzle, int l2,
                                 int oob) {
  CUresult r = CUDA_SUCCESS;
  if (nogpu) fake_map(map, addr);
  else {
    CUresult (*f)(void *, int, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *, const int *, const int *,
                  cuuint32_t, cuuint32_t, const cuuint32_t *, int, int, int, int) =
        (CUresult(*)(void *, int, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *, const int *,
                     const int *, cuuint32_t, cuuint32_t, const cuuint32_t *, int, int, int, int))
            real_slot(S_TMIM2COL, 0, "cuTensorMapEncodeIm2col");
    r = f ? f(map, dtype, rank, addr, dims, strides, lower, upper, cpp, ppc, estrides, interleave, swizzle, l2, oob) : 999;
  }
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&mu);
    FILE *f = logfile();
    if (f) {
      fprintf(f, "{\"type\": \"tensormap\", \"api\": \"cuTensorMapEncodeIm2col\", \"map\": ");
      put_hex(f, map, 128);
      fprintf(f, ", \"dtype\": %d, \"rank\": %u, \"addr\": %llu, \"dims\": ", dtype, rank, (unsigned long long)(uintptr_t)addr);
      put_u64s(f, dims, rank);
      fputs(", \"strides\": ", f);
      put_u64s(f, strides, rank > 0 ? rank - 1 : 0);
      fputs(", \"lower_corner\": ", f);
      put_i32s(f, lower, rank > 2 ? rank - 2 : 0);
      fputs(", \"upper_corner\": ", f);
      put_i32s(f, upper, rank > 2 ? rank - 2 : 0);
      fprintf(f, ", \"channels_per_pixel\": %u, \"pixels_per_column\": %u, \"element_strides\": ", cpp, ppc);
      put_u32s(f, estrides, rank);
      fprintf(f, ", \"interleave\": %d, \"swizzle\": %d, \"l2_promotion\": %d, \"oob_fill\": %d}\n", interleave, swizzle, l2, oob);
      fflush(f);
    }
    pthread_mutex_unlock(&mu);
  }
  return r;
}

/* ---------------------------------------------------------------- the runtime API (shared cudart) */

/* A program linked against the shared libcudart reaches these; the statically linked runtime
 * (nvcc's default) does not, and is seen through the driver calls it makes instead. Either way
 * the launch itself is recorded at the driver, where the function's name and parameters are known. */
typedef struct { unsigned x, y, z; } dim3_t;
int cudaLaunchKernel(const void *func, dim3_t g, dim3_t b, void **args, size_t smem, void *stream) {
  int (*r)(const void *, dim3_t, dim3_t, void **, size_t, void *) =
      (int (*)(const void *, dim3_t, dim3_t, void **, size_t, void *))rdlsym(RTLD_NEXT, "cudaLaunchKernel");
  return r ? r(func, g, b, args, smem, stream) : 35 /* cudaErrorInsufficientDriver */;
}
int cudaLaunchKernelExC(const void *config, const void *func, void **args) {
  int (*r)(const void *, const void *, void **) = (int (*)(const void *, const void *, void **))rdlsym(RTLD_NEXT, "cudaLaunchKernelExC");
  return r ? r(config, func, args) : 35;
}

/* ---------------------------------------------------------------- cuGetProcAddress and dlsym */

static const struct { const char *name; int slot; int min_version; void *wrap[2]; } table[] = {
    {"cuLaunchKernel", S_LAUNCH, 4000, {(void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz}},
    {"cuLaunchKernelEx", S_LAUNCHEX, 11060, {(void *)cuLaunchKernelEx, (void *)cuLaunchKernelEx_ptsz}},
    {"cuLaunchCooperativeKernel", S_COOP, 9000, {(void *)cuLaunchCooperativeKernel, (void *)cuLaunchCooperativeKernel_ptsz}},
    {"cuModuleLoadData", S_MODLOAD, 2000, {(void *)cuModuleLoadData, (void *)cuModuleLoadData}},
    {"cuModuleLoadDataEx", S_MODLOADEX, 2010, {(void *)cuModuleLoadDataEx, (void *)cuModuleLoadDataEx}},
    {"cuModuleLoadFatBinary", S_MODFAT, 2000, {(void *)cuModuleLoadFatBinary, (void *)cuModuleLoadFatBinary}},
    {"cuLibraryLoadData", S_LIBLOAD, 12000, {(void *)cuLibraryLoadData, (void *)cuLibraryLoadData}},
    {"cuModuleGetFunction", S_MODGETFN, 2000, {(void *)cuModuleGetFunction, (void *)cuModuleGetFunction}},
    {"cuLibraryGetKernel", S_LIBGETK, 12000, {(void *)cuLibraryGetKernel, (void *)cuLibraryGetKernel}},
    {"cuKernelGetFunction", S_KGETFN, 12000, {(void *)cuKernelGetFunction, (void *)cuKernelGetFunction}},
    {"cuMemAlloc", S_MALLOC, 3020, {(void *)cuMemAlloc_v2, (void *)cuMemAlloc_v2}},
    {"cuMemAllocAsync", S_MALLOCASYNC, 11020, {(void *)cuMemAllocAsync, (void *)cuMemAllocAsync_ptsz}},
    {"cuMemAllocManaged", S_MALLOCMANAGED, 6000, {(void *)cuMemAllocManaged, (void *)cuMemAllocManaged}},
    {"cuMemFree", S_FREE, 3020, {(void *)cuMemFree_v2, (void *)cuMemFree_v2}},
    {"cuTensorMapEncodeTiled", S_TMTILED, 12000, {(void *)cuTensorMapEncodeTiled, (void *)cuTensorMapEncodeTiled}},
    {"cuTensorMapEncodeIm2col", S_TMIM2COL, 12000, {(void *)cuTensorMapEncodeIm2col, (void *)cuTensorMapEncodeIm2col}},
};
#define NTABLE (sizeof table / sizeof table[0])

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status);

static void *self_symbol(const char *name) {
  Dl_info info;
  if (!dladdr((void *)cuGetProcAddress_v2, &info)) return NULL;
  void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  void *p = h ? rdlsym(h, name) : NULL;
  return p;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags, int *status) {
  int ptds = (flags & PTDS_FLAG) ? 1 : 0;
  if (!strcmp(symbol, "cuGetProcAddress") && version >= 12000) {
    *pfn = (void *)cuGetProcAddress_v2;
    if (status) *status = 0;
    return CUDA_SUCCESS;
  }
  if (nogpu) {
    for (size_t i = 0; i < NTABLE; i++)
      if (!strcmp(symbol, table[i].name)) {
        *pfn = table[i].wrap[ptds];
        if (status) *status = 0;
        return CUDA_SUCCESS;
      }
    char vname[256];
    const char *suffixes[] = {"_v4", "_v3", "_v2", ""};
    for (int k = 0; k < 4; k++) {
      snprintf(vname, sizeof vname, "%s%s", symbol, suffixes[k]);
      void *p = self_symbol(vname);
      if (p) { *pfn = p; if (status) *status = 0; return CUDA_SUCCESS; }
    }
    *pfn = NULL;
    if (status) *status = 1;
    if (debug) fprintf(stderr, "kverify capture (no GPU): driver symbol %s not provided\n", symbol);
    return CUDA_ERROR_NOT_FOUND;
  }
  CUresult (*r)(const char *, void **, int, cuuint64_t, int *) =
      (CUresult(*)(const char *, void **, int, cuuint64_t, int *))real_slot(S_GETPROC, 0, "cuGetProcAddress_v2");
  if (!r) return 999;
  CUresult res = r(symbol, pfn, version, flags, status);
  if (res != CUDA_SUCCESS || !*pfn) return res;
  for (size_t i = 0; i < NTABLE; i++)
    if (!strcmp(symbol, table[i].name) && version >= table[i].min_version) {
      pthread_mutex_lock(&mu);
      if (!reals[table[i].slot][ptds]) reals[table[i].slot][ptds] = *pfn;
      int same = reals[table[i].slot][ptds] == *pfn;
      pthread_mutex_unlock(&mu);
      if (same) *pfn = table[i].wrap[ptds];
      break;
    }
  return res;
}

/* The runtime finds cuGetProcAddress with dlsym on its own handle of libcuda.so.1, which an
 * LD_PRELOAD definition does not reach: hand out ours for the symbols we interpose. */
void *dlsym(void *handle, const char *symbol) {
  void *r = rdlsym(handle, symbol);
  if (debug && symbol[0] == 'c' && symbol[1] == 'u') fprintf(stderr, "kverify capture: dlsym %s -> %p\n", symbol, r);
  if (!r || symbol[0] != 'c' || symbol[1] != 'u' || handle == RTLD_NEXT || handle == RTLD_DEFAULT) return r;
  static const struct { const char *name; int slot; int ptds; } direct[] = {
      {"cuGetProcAddress_v2", S_GETPROC, 0},
      {"cuLaunchKernel", S_LAUNCH, 0}, {"cuLaunchKernel_ptsz", S_LAUNCH, 1},
      {"cuLaunchKernelEx", S_LAUNCHEX, 0}, {"cuLaunchKernelEx_ptsz", S_LAUNCHEX, 1},
      {"cuLaunchCooperativeKernel", S_COOP, 0}, {"cuLaunchCooperativeKernel_ptsz", S_COOP, 1},
      {"cuModuleLoadData", S_MODLOAD, 0}, {"cuModuleLoadDataEx", S_MODLOADEX, 0},
      {"cuModuleLoadFatBinary", S_MODFAT, 0}, {"cuLibraryLoadData", S_LIBLOAD, 0},
      {"cuModuleGetFunction", S_MODGETFN, 0}, {"cuLibraryGetKernel", S_LIBGETK, 0},
      {"cuKernelGetFunction", S_KGETFN, 0}, {"cuMemAlloc_v2", S_MALLOC, 0},
      {"cuMemAllocAsync", S_MALLOCASYNC, 0}, {"cuMemAllocAsync_ptsz", S_MALLOCASYNC, 1},
      {"cuMemAllocManaged", S_MALLOCMANAGED, 0}, {"cuMemFree_v2", S_FREE, 0},
      {"cuTensorMapEncodeTiled", S_TMTILED, 0}, {"cuTensorMapEncodeIm2col", S_TMIM2COL, 0},
  };
  for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
    if (!strcmp(symbol, direct[i].name)) {
      void *mine = self_symbol(symbol);
      if (!mine || mine == r) return r;
      pthread_mutex_lock(&mu);
      if (!reals[direct[i].slot][direct[i].ptds]) reals[direct[i].slot][direct[i].ptds] = r;
      pthread_mutex_unlock(&mu);
      return mine;
    }
  return r;
}
