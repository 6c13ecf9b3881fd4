/* kverify capture shim: an LD_PRELOAD library that records every CUDA kernel launch.
 *
 * It interposes the CUDA driver entry points kernels are launched through (cuLaunchKernel,
 * cuLaunchKernelEx, cuLaunchCooperativeKernel and their _ptsz forms), the calls that name
 * the launched function (cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction), load
 * modules (cuModuleLoadData[Ex], cuModuleLoadFatBinary, cuLibraryLoadData), allocate and free
 * device and page-locked host memory (cuMemAlloc_v2, cuMemAllocAsync, cuMemAllocPitch_v2,
 * cuMemHostAlloc, cuMemFree_v2, cuMemFreeAsync, cuMemFreeHost, ...), look up module variables
 * (cuModuleGetGlobal_v2, cuLibraryGetGlobal), set function attributes (cuFuncSetAttribute),
 * launch graphs (cuGraphLaunch) and encode tensor maps (cuTensorMapEncodeTiled/Im2col).  Before
 * each launch the memory it reaches is copied to contents_<pid>_<seq>.bin (the snapshot); the
 * launch's record follows the driver's call, with its result.  The CUDA runtime reaches the driver through
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
static long long contents_limit = 256LL << 20; /* bytes copied per launch; 0: none */
static long long contents_launches = -1;        /* launches snapshotted; -1: every one */
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
  const char *cl = getenv("KVERIFY_CAPTURE_CONTENTS_LIMIT");
  if (cl && *cl) contents_limit = atoll(cl);
  const char *cn = getenv("KVERIFY_CAPTURE_CONTENTS_LAUNCHES");
  if (cn && *cn) contents_launches = atoll(cn);
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

/* ---------------------------------------------------------------- allocations, maps, variables */

/* What the shim saw allocated (newest last), the tensor maps it encoded and the module variables
 * the program looked up: a launch's snapshot copies the allocations its parameters reach and the
 * variables of its module. */
#define MAXALLOC 65536
static struct { CUdeviceptr ptr; size_t size; int live; } allocs[MAXALLOC];
static int nallocs = 0;
#define MAXTMAP 4096
static struct { unsigned char map[128]; CUdeviceptr addr; } tmaps[MAXTMAP];
static int ntmaps = 0;
#define MAXGLOBAL 4096
static struct { int module; char *name; CUdeviceptr ptr; size_t size; int uninit; } globals[MAXGLOBAL];
static int nglobals = 0;

/* the newest live allocation holding address a, or -1; called with mu held */
static int alloc_at(CUdeviceptr a) {
  for (int i = nallocs - 1; i >= 0; i--)
    if (allocs[i].live && allocs[i].ptr <= a && a < allocs[i].ptr + (allocs[i].size ? allocs[i].size : 1)) return i;
  return -1;
}

static void record_alloc(const char *api, CUdeviceptr p, size_t n) {
  pthread_mutex_lock(&mu);
  if (nallocs < MAXALLOC) { allocs[nallocs].ptr = p; allocs[nallocs].size = n; allocs[nallocs].live = 1; nallocs++; }
  FILE *f = logfile();
  if (f) { fprintf(f, "{\"type\": \"alloc\", \"api\": \"%s\", \"ptr\": %llu, \"size\": %zu}\n", api, p, n); fflush(f); }
  pthread_mutex_unlock(&mu);
}

static void record_free(const char *api, CUdeviceptr p) {
  pthread_mutex_lock(&mu);
  for (int i = nallocs - 1; i >= 0; i--)
    if (allocs[i].live && allocs[i].ptr == p) { allocs[i].live = 0; break; }
  FILE *f = logfile();
  if (f) { fprintf(f, "{\"type\": \"free\", \"api\": \"%s\", \"ptr\": %llu}\n", api, p); fflush(f); }
  pthread_mutex_unlock(&mu);
}

static void record_global(const char *api, void *module, const char *name, CUdeviceptr p, size_t n, int uninit) {
  pthread_mutex_lock(&mu);
  int mi = module_index(module), id = mi >= 0 ? modules[mi].id : -1, seen = 0;
  for (int i = 0; i < nglobals; i++)
    if (globals[i].module == id && !strcmp(globals[i].name, name)) seen = 1;
  if (!seen && nglobals < MAXGLOBAL) {
    globals[nglobals].module = id; globals[nglobals].name = strdup(name); globals[nglobals].ptr = p;
    globals[nglobals].size = n; globals[nglobals].uninit = uninit; nglobals++;
    FILE *f = logfile();
    if (f) {
      fprintf(f, "{\"type\": \"global\", \"api\": \"%s\", \"module\": %d, \"name\": ", api, id);
      put_str(f, name);
      fprintf(f, ", \"ptr\": %llu, \"size\": %zu}\n", p, n);
      fflush(f);
    }
  }
  pthread_mutex_unlock(&mu);
}

/* ---------------------------------------------------------------- launch records */

#define MAXPARAM 512
#define MAXBLOCK 512
#define CU_STREAM_PER_THREAD ((CUstream)0x2)


/* one launch, from before the driver's call (name, parameters, the snapshot) to its record */
typedef struct {
  int seq, mid, np, capturing, snapped, nblock;
  const char *api, *name, *source;
  CUfunction f;
  unsigned grid[3], block[3], cluster[3], smem;
  size_t off[MAXPARAM], size[MAXPARAM];
  const unsigned char *bytes[MAXPARAM];
  char file[256];
  struct { CUdeviceptr ptr; size_t size, at; const char *var, *skipped; } blk[MAXBLOCK];
} launch_rec;

/* the streams a no-GPU program is capturing into a graph */
#define MAXCAPT 64
static CUstream capturing[MAXCAPT];
static int ncapturing = 0;

static int stream_capturing(CUstream s) {
  if (nogpu) {
    for (int i = 0; i < ncapturing; i++)
      if (capturing[i] == s) return 1;
    return 0;
  }
  int st = 0;
  CUresult (*isc)(CUstream, int *) = (CUresult(*)(CUstream, int *))real("cuStreamIsCapturing");
  return isc && isc(s, &st) == CUDA_SUCCESS && st != 0;
}

/* copies n bytes at device address p to f; 0 or the driver's error */
static CUresult copy_out(FILE *f, CUdeviceptr p, size_t n) {
  if (nogpu) return fwrite((const void *)(uintptr_t)p, 1, n, f) == n ? CUDA_SUCCESS : 2;
  static unsigned char *buf = NULL;
  const size_t chunk = (size_t)16 << 20;
  CUresult (*cp)(CUdeviceptr, CUdeviceptr, size_t) = (CUresult(*)(CUdeviceptr, CUdeviceptr, size_t))real("cuMemcpy");
  if (!cp) return 999;
  if (!buf && !(buf = malloc(chunk))) return 2;
  for (size_t done = 0; done < n;) {
    size_t k = n - done < chunk ? n - done : chunk;
    CUresult r = cp((CUdeviceptr)(uintptr_t)buf, p + done, k);
    if (r != CUDA_SUCCESS) return r;
    if (fwrite(buf, 1, k, f) != k) return 2;
    done += k;
  }
  return CUDA_SUCCESS;
}

static void add_block(launch_rec *L, CUdeviceptr p, size_t n, const char *var) {
  for (int i = 0; i < L->nblock; i++)
    if (L->blk[i].ptr == p && L->blk[i].var == var) return;
  if (L->nblock >= MAXBLOCK) return;
  L->blk[L->nblock].ptr = p; L->blk[L->nblock].size = n; L->blk[L->nblock].var = var;
  L->blk[L->nblock].at = 0; L->blk[L->nblock].skipped = NULL;
  L->nblock++;
}

/* The bytes the launch starts from: its stream synchronized (earlier work on it done), every
 * allocation its parameters reach (8-byte aligned words inside one, 64-byte aligned runs equal
 * to an encoded tensor map) and its module's variables, copied to contents_<pid>_<seq>.bin up to
 * contents_limit bytes. Called with mu held. */
static void snapshot(launch_rec *L, CUstream stream) {
  if (contents_limit == 0 || (contents_launches >= 0 && L->seq >= contents_launches)) return;
  if (stream_capturing(stream)) { L->capturing = 1; return; }
  L->snapped = 1;
  for (int i = 0; i < L->np; i++) {
    const unsigned char *b = L->bytes[i];
    if (!b) continue;
    for (size_t o = 0; o + 8 <= L->size[i]; o += 8) {
      CUdeviceptr v;
      memcpy(&v, b + o, 8);
      int a = v ? alloc_at(v) : -1;
      if (a >= 0) add_block(L, allocs[a].ptr, allocs[a].size, NULL);
    }
    for (size_t o = 0; o + 128 <= L->size[i]; o += 64)
      for (int t = ntmaps - 1; t >= 0; t--)
        if (!memcmp(tmaps[t].map, b + o, 128)) {
          int a = alloc_at(tmaps[t].addr);
          if (a >= 0) add_block(L, allocs[a].ptr, allocs[a].size, NULL);
          break;
        }
  }
  for (int g = 0; g < nglobals; g++)
    if (globals[g].module == L->mid && L->mid >= 0) {
      add_block(L, globals[g].ptr, globals[g].size, globals[g].name);
      if (globals[g].uninit) L->blk[L->nblock - 1].skipped = "the no-GPU driver does not apply a variable's initializer";
    }
  if (!L->nblock) return;
  if (!nogpu) {
    CUresult (*sync)(CUstream) = (CUresult(*)(CUstream))real("cuStreamSynchronize");
    if (sync) sync(stream);
  }
  snprintf(L->file, sizeof L->file, "contents_%d_%d.bin", (int)getpid(), L->seq);
  char p[4400];
  snprintf(p, sizeof p, "%s/%s", outdir, L->file);
  FILE *f = fopen(p, "wb");
  size_t at = 0;
  for (int i = 0; i < L->nblock; i++) {
    if (L->blk[i].skipped) continue;
    if (!f) { L->blk[i].skipped = "the contents file could not be written"; continue; }
    if ((long long)(at + L->blk[i].size) > contents_limit) { L->blk[i].skipped = "over the --contents-limit"; continue; }
    CUresult r = copy_out(f, L->blk[i].ptr, L->blk[i].size);
    if (r != CUDA_SUCCESS) {
      L->blk[i].skipped = "copying it failed";
      fseek(f, (long)at, SEEK_SET);
      continue;
    }
    L->blk[i].at = at;
    at += L->blk[i].size;
  }
  if (f) fclose(f);
}

/* Before the driver's call: the function's name and module, its parameters' sizes and bytes, and
 * the snapshot of what the launch reads. */
static launch_rec *launch_begin(const char *api, CUfunction f, const unsigned grid[3], const unsigned block[3],
                                const unsigned cluster[3], unsigned smem, CUstream stream, void **params, void **extra) {
  launch_rec *L = calloc(1, sizeof *L);
  if (!L) return NULL;
  pthread_mutex_lock(&mu);
  L->seq = launch_count++;
  L->api = api; L->f = f; L->smem = smem;
  memcpy(L->grid, grid, sizeof L->grid); memcpy(L->block, block, sizeof L->block); memcpy(L->cluster, cluster, sizeof L->cluster);
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
  size_t *off = L->off, *size = L->size;
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
  L->name = name; L->mid = mid; L->np = np; L->source = np < 0 ? "unknown" : source;
  /* extra = {CU_LAUNCH_PARAM_BUFFER_POINTER (1), buf, CU_LAUNCH_PARAM_BUFFER_SIZE (2), &size, END (0)} */
  const unsigned char *buf = NULL;
  size_t bufsize = 0;
  for (void **e = extra; e && *e; e += 2) {
    if (*e == (void *)1) buf = (const unsigned char *)e[1];
    else if (*e == (void *)2) bufsize = *(size_t *)e[1];
  }
  for (int i = 0; i < np; i++)
    L->bytes[i] = params ? (const unsigned char *)params[i]
                         : buf && off[i] + size[i] <= bufsize ? buf + off[i] : NULL;
  snapshot(L, stream);
  pthread_mutex_unlock(&mu);
  return L;
}

/* After the driver's call: the launch's record, with the driver's answer (a launch it refused
 * did not run). */
static void launch_end(launch_rec *L, CUresult result) {
  if (!L) return;
  pthread_mutex_lock(&mu);
  FILE *lf = logfile();
  if (lf) {
    fprintf(lf, "{\"type\": \"launch\", \"seq\": %d, \"api\": \"%s\", \"function\": \"%p\", \"name\": ", L->seq, L->api, L->f);
    if (L->name) put_str(lf, L->name); else fputs("null", lf);
    fprintf(lf, ", \"module\": %d, \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], \"cluster\": [%u, %u, %u], "
                "\"dynamic_smem\": %u, \"result\": %d, \"capturing\": %d, \"param_source\": \"%s\", \"params\": ",
            L->mid, L->grid[0], L->grid[1], L->grid[2], L->block[0], L->block[1], L->block[2], L->cluster[0],
            L->cluster[1], L->cluster[2], L->smem, result, L->capturing, L->source);
    if (L->np < 0) {
      fputs("null", lf);
    } else {
      fputc('[', lf);
      for (int i = 0; i < L->np; i++) {
        fprintf(lf, "%s{\"offset\": %zu, \"size\": %zu, \"hex\": ", i ? ", " : "", L->off[i], L->size[i]);
        if (L->bytes[i]) put_hex(lf, L->bytes[i], L->size[i]); else fputs("null", lf);
        fputc('}', lf);
      }
      fputc(']', lf);
    }
    if (L->snapped) {
      fputs(", \"contents\": {\"file\": ", lf);
      put_str(lf, L->file);
      fputs(", \"blocks\": [", lf);
      for (int i = 0; i < L->nblock; i++) {
        fprintf(lf, "%s{\"ptr\": %llu, \"size\": %zu", i ? ", " : "", L->blk[i].ptr, L->blk[i].size);
        if (L->blk[i].var) { fputs(", \"var\": ", lf); put_str(lf, L->blk[i].var); }
        if (L->blk[i].skipped) { fputs(", \"skipped\": ", lf); put_str(lf, L->blk[i].skipped); }
        else fprintf(lf, ", \"at\": %zu", L->blk[i].at);
        fputc('}', lf);
      }
      fputs("]}", lf);
    }
    fputs("}\n", lf);
    fflush(lf);
  }
  pthread_mutex_unlock(&mu);
  free(L);
}

/* ---------------------------------------------------------------- the no-GPU driver */

static void *fake_handle(void);
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
FAKE(0, cuStreamCreate, (CUstream *s, unsigned f), (s, f), { (void)f; *s = fake_handle(); return CUDA_SUCCESS; })
FAKE(0, cuStreamBeginCapture_v2, (CUstream s, int mode), (s, mode), {
  (void)mode;
  pthread_mutex_lock(&mu);
  if (ncapturing < MAXCAPT) capturing[ncapturing++] = s;
  pthread_mutex_unlock(&mu);
  return CUDA_SUCCESS;
})
FAKE(0, cuStreamEndCapture, (CUstream s, void **graph), (s, graph), {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < ncapturing; i++)
    if (capturing[i] == s) capturing[i--] = capturing[--ncapturing];
  pthread_mutex_unlock(&mu);
  *graph = fake_handle();
  return CUDA_SUCCESS;
})
FAKE(0, cuStreamIsCapturing, (CUstream s, int *st), (s, st), { *st = stream_capturing(s); return CUDA_SUCCESS; })
FAKE(0, cuGraphInstantiateWithFlags, (void **exec, void *g, cuuint64_t fl), (exec, g, fl),
     { (void)g; (void)fl; *exec = fake_handle(); return CUDA_SUCCESS; })
FAKE(0, cuGraphExecDestroy, (void *e), (e), { (void)e; return CUDA_SUCCESS; })
FAKE(0, cuGraphDestroy, (void *g), (g), { (void)g; return CUDA_SUCCESS; })
FAKE(0, cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n),
     { memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n); return CUDA_SUCCESS; })
FAKE(0, cuStreamSynchronize, (CUstream s), (s), { (void)s; return CUDA_SUCCESS; })
FAKE(0, cuStreamDestroy_v2, (CUstream s), (s), { (void)s; return CUDA_SUCCESS; })
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
       S_KGETFN, S_MALLOC, S_MALLOCASYNC, S_MALLOCMANAGED, S_FREE, S_TMTILED, S_TMIM2COL, S_GETPROC,
       S_FREEASYNC, S_MALLOCPOOL, S_MALLOCPITCH, S_HOSTALLOC, S_MALLOCHOST, S_FREEHOST, S_HOSTREG, S_HOSTUNREG,
       S_GETGLOBAL, S_LIBGETGLOBAL, S_FUNCSETATTR, S_KSETATTR, S_GRAPHLAUNCH, S_N };
static void *reals[S_N][2];

static void *real_slot(int s, int ptds, const char *name) {
  if (!reals[s][ptds]) reals[s][ptds] = real(name);
  return reals[s][ptds];
}

/* the no-GPU driver refuses a launch whose shape the hardware has no room for, as the driver does */
static CUresult fake_launch(const unsigned g[3], const unsigned b[3], unsigned smem) {
  if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2] || g[1] > 65535 || g[2] > 65535 || b[2] > 64 ||
      (unsigned long long)b[0] * b[1] * b[2] > 1024 || smem > 232448)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static const unsigned one3[3] = {1, 1, 1};

#define LAUNCH_WRAPPER(NAME, SLOT, PTDS)                                                                      \
  CUresult NAME(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
                unsigned smem, CUstream st, void **params, void **extra) {                                    \
    unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};                                                        \
    launch_rec *L = launch_begin(#NAME, f, g, b, one3, smem, PTDS && !st ? CU_STREAM_PER_THREAD : st,         \
                                 params, extra);                                                              \
    CUresult r;                                                                                               \
    if (nogpu) r = fake_launch(g, b, smem);                                                                   \
    else {                                                                                                    \
      launch_t fn = (launch_t)real_slot(SLOT, PTDS, #NAME);                                                   \
      r = fn ? fn(f, gx, gy, gz, bx, by, bz, smem, st, params, extra) : 999;                                  \
    }                                                                                                         \
    launch_end(L, r);                                                                                         \
    return r;                                                                                                 \
  }
LAUNCH_WRAPPER(cuLaunchKernel, S_LAUNCH, 0)
LAUNCH_WRAPPER(cuLaunchKernel_ptsz, S_LAUNCH, 1)

#define COOP_WRAPPER(NAME, SLOT, PTDS)                                                                        \
  CUresult NAME(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,  \
                unsigned smem, CUstream st, void **params) {                                                  \
    unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};                                                        \
    launch_rec *L = launch_begin(#NAME, f, g, b, one3, smem, PTDS && !st ? CU_STREAM_PER_THREAD : st,         \
                                 params, NULL);                                                               \
    CUresult r;                                                                                               \
    if (nogpu) r = fake_launch(g, b, smem);                                                                   \
    else {                                                                                                    \
      coop_t fn = (coop_t)real_slot(SLOT, PTDS, #NAME);                                                       \
      r = fn ? fn(f, gx, gy, gz, bx, by, bz, smem, st, params) : 999;                                         \
    }                                                                                                         \
    launch_end(L, r);                                                                                         \
    return r;                                                                                                 \
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
    unsigned g[3] = {c->gridDimX, c->gridDimY, c->gridDimZ}, b[3] = {c->blockDimX, c->blockDimY, c->blockDimZ}; \
    launch_rec *L = launch_begin(coop ? #NAME "+cooperative" : #NAME, f, g, b, cl, c->sharedMemBytes,        \
                                 PTDS && !c->hStream ? CU_STREAM_PER_THREAD : c->hStream, params, extra);     \
    CUresult r;                                                                                               \
    if (nogpu) r = fake_launch(g, b, c->sharedMemBytes);                                                      \
    else {                                                                                                    \
      launchex_t fn = (launchex_t)real_slot(SLOT, PTDS, #NAME);                                               \
      r = fn ? fn(c, f, params, extra) : 999;                                                                 \
    }                                                                                                         \
    launch_end(L, r);                                                                                         \
    return r;                                                                                                 \
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
  if (r == CUDA_SUCCESS) record_free("cuMemFree", p);
  return r;
}

#define FREEASYNC_WRAPPER(NAME, PTDS)                                                                   \
  CUresult NAME(CUdeviceptr p, CUstream s) {                                                            \
    CUresult r = CUDA_SUCCESS;                                                                          \
    if (!nogpu) {                                                                                       \
      CUresult (*f)(CUdeviceptr, CUstream) = (CUresult(*)(CUdeviceptr, CUstream))real_slot(S_FREEASYNC, PTDS, #NAME); \
      r = f ? f(p, s) : 999;                                                                            \
    }                                                                                                   \
    if (r == CUDA_SUCCESS) record_free("cuMemFreeAsync", p);                                            \
    return r;                                                                                           \
  }
FREEASYNC_WRAPPER(cuMemFreeAsync, 0)
FREEASYNC_WRAPPER(cuMemFreeAsync_ptsz, 1)

#define ALLOCPOOL_WRAPPER(NAME, PTDS)                                                                   \
  CUresult NAME(CUdeviceptr *p, size_t n, void *pool, CUstream s) {                                     \
    CUresult r;                                                                                         \
    if (nogpu) r = fake_alloc(p, n);                                                                    \
    else {                                                                                              \
      CUresult (*f)(CUdeviceptr *, size_t, void *, CUstream) =                                          \
          (CUresult(*)(CUdeviceptr *, size_t, void *, CUstream))real_slot(S_MALLOCPOOL, PTDS, #NAME);   \
      r = f ? f(p, n, pool, s) : 999;                                                                   \
    }                                                                                                   \
    if (r == CUDA_SUCCESS) record_alloc("cuMemAllocFromPoolAsync", *p, n);                              \
    return r;                                                                                           \
  }
ALLOCPOOL_WRAPPER(cuMemAllocFromPoolAsync, 0)
ALLOCPOOL_WRAPPER(cuMemAllocFromPoolAsync_ptsz, 1)

CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height, unsigned esize) {
  CUresult r;
  if (nogpu) {
    *pitch = (width + 511) / 512 * 512;
    r = fake_alloc(p, *pitch * height);
  } else {
    CUresult (*f)(CUdeviceptr *, size_t *, size_t, size_t, unsigned) =
        (CUresult(*)(CUdeviceptr *, size_t *, size_t, size_t, unsigned))real_slot(S_MALLOCPITCH, 0, "cuMemAllocPitch_v2");
    r = f ? f(p, pitch, width, height, esize) : 999;
  }
  if (r == CUDA_SUCCESS) record_alloc("cuMemAllocPitch", *p, *pitch * height);
  return r;
}

/* page-locked host memory: a kernel reaches it at the same address (unified addressing) */
CUresult cuMemHostAlloc(void **p, size_t n, unsigned fl) {
  CUresult r;
  if (nogpu) { CUdeviceptr d; r = fake_alloc(&d, n); if (r == CUDA_SUCCESS) *p = (void *)(uintptr_t)d; }
  else {
    CUresult (*f)(void **, size_t, unsigned) = (CUresult(*)(void **, size_t, unsigned))real_slot(S_HOSTALLOC, 0, "cuMemHostAlloc");
    r = f ? f(p, n, fl) : 999;
  }
  if (r == CUDA_SUCCESS) record_alloc("cuMemHostAlloc", (CUdeviceptr)(uintptr_t)*p, n);
  return r;
}

CUresult cuMemAllocHost_v2(void **p, size_t n) {
  CUresult r;
  if (nogpu) { CUdeviceptr d; r = fake_alloc(&d, n); if (r == CUDA_SUCCESS) *p = (void *)(uintptr_t)d; }
  else {
    CUresult (*f)(void **, size_t) = (CUresult(*)(void **, size_t))real_slot(S_MALLOCHOST, 0, "cuMemAllocHost_v2");
    r = f ? f(p, n) : 999;
  }
  if (r == CUDA_SUCCESS) record_alloc("cuMemAllocHost", (CUdeviceptr)(uintptr_t)*p, n);
  return r;
}

CUresult cuMemFreeHost(void *p) {
  CUresult r = CUDA_SUCCESS;
  if (!nogpu) {
    CUresult (*f)(void *) = (CUresult(*)(void *))real_slot(S_FREEHOST, 0, "cuMemFreeHost");
    r = f ? f(p) : 999;
  }
  if (r == CUDA_SUCCESS) record_free("cuMemFreeHost", (CUdeviceptr)(uintptr_t)p);
  return r;
}

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned fl) {
  CUresult r = CUDA_SUCCESS;
  if (!nogpu) {
    CUresult (*f)(void *, size_t, unsigned) = (CUresult(*)(void *, size_t, unsigned))real_slot(S_HOSTREG, 0, "cuMemHostRegister_v2");
    r = f ? f(p, n, fl) : 999;
  }
  if (r == CUDA_SUCCESS) record_alloc("cuMemHostRegister", (CUdeviceptr)(uintptr_t)p, n);
  return r;
}

CUresult cuMemHostUnregister(void *p) {
  CUresult r = CUDA_SUCCESS;
  if (!nogpu) {
    CUresult (*f)(void *) = (CUresult(*)(void *))real_slot(S_HOSTUNREG, 0, "cuMemHostUnregister");
    r = f ? f(p) : 999;
  }
  if (r == CUDA_SUCCESS) record_free("cuMemHostUnregister", (CUdeviceptr)(uintptr_t)p);
  return r;
}

/* Bytes of the .global or .const variable `name` declared in `ptx` (0 if not found); *init: it
 * has an initializer. The no-GPU driver's cuModuleGetGlobal. */
static size_t ptx_var_size(const char *ptx, const char *name, int *init) {
  size_t ln = strlen(name);
  for (const char *p = ptx ? strstr(ptx, name) : NULL; p; p = strstr(p + 1, name)) {
    char c = p[ln];
    if (p == ptx || !(p[-1] == ' ' || p[-1] == '\t') || !(c == '[' || c == ';' || c == ' ' || c == '=' || c == '\t')) continue;
    const char *ls = p;
    while (ls > ptx && ls[-1] != '\n') ls--;
    char head[512];
    size_t hn = (size_t)(p - ls) < sizeof head - 1 ? (size_t)(p - ls) : sizeof head - 1;
    memcpy(head, ls, hn);
    head[hn] = 0;
    if ((!strstr(head, ".global") && !strstr(head, ".const")) || strstr(head, ".entry") || strstr(head, ".func")) continue;
    size_t esize = 0, vec = 1, count = 1;
    for (const char *t = head; (t = strchr(t, '.')); t++) {
      if (t[1] == 'v' && t[2] >= '2' && t[2] <= '8') vec = (size_t)(t[2] - '0');
      else if (t[1] && strchr("busf", t[1]) && t[2] >= '0' && t[2] <= '9' && atoi(t + 2) >= 8) esize = (size_t)atoi(t + 2) / 8;
    }
    const char *q = p + ln;
    while (*q == '[') {
      char *e;
      count *= strtoul(q + 1, &e, 10);
      q = strchr(q, ']');
      if (!q) break;
      q++;
    }
    const char *le = strchr(p, ';');
    const char *eq = strchr(p, '=');
    *init = eq && (!le || eq < le);
    return esize * vec * count;
  }
  return 0;
}

static CUresult fake_global(CUdeviceptr *dptr, size_t *bytes, void *module, const char *name, const char *api) {
  pthread_mutex_lock(&mu);
  int mi = module_index(module), id = mi >= 0 ? modules[mi].id : -1;
  for (int i = 0; i < nglobals; i++)
    if (globals[i].module == id && !strcmp(globals[i].name, name)) {
      if (dptr) *dptr = globals[i].ptr;
      if (bytes) *bytes = globals[i].size;
      pthread_mutex_unlock(&mu);
      return CUDA_SUCCESS;
    }
  int init = 0;
  size_t n = mi >= 0 ? ptx_var_size(modules[mi].ptx, name, &init) : 0;
  pthread_mutex_unlock(&mu);
  CUdeviceptr p;
  if (!n || fake_alloc(&p, n) != CUDA_SUCCESS) return CUDA_ERROR_NOT_FOUND;
  record_global(api, module, name, p, n, init);
  if (dptr) *dptr = p;
  if (bytes) *bytes = n;
  return CUDA_SUCCESS;
}

/* a module variable's address (cudaMemcpyToSymbol and cudaGetSymbolAddress come here) */
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule m, const char *name) {
  if (nogpu) return fake_global(dptr, bytes, m, name, "cuModuleGetGlobal");
  CUresult (*f)(CUdeviceptr *, size_t *, CUmodule, const char *) =
      (CUresult(*)(CUdeviceptr *, size_t *, CUmodule, const char *))real_slot(S_GETGLOBAL, 0, "cuModuleGetGlobal_v2");
  CUdeviceptr p = 0;
  size_t n = 0;
  CUresult r = f ? f(&p, &n, m, name) : 999;
  if (r == CUDA_SUCCESS) {
    record_global("cuModuleGetGlobal", m, name, p, n, 0);
    if (dptr) *dptr = p;
    if (bytes) *bytes = n;
  }
  return r;
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary l, const char *name) {
  if (nogpu) return fake_global(dptr, bytes, l, name, "cuLibraryGetGlobal");
  CUresult (*f)(CUdeviceptr *, size_t *, CUlibrary, const char *) =
      (CUresult(*)(CUdeviceptr *, size_t *, CUlibrary, const char *))real_slot(S_LIBGETGLOBAL, 0, "cuLibraryGetGlobal");
  CUdeviceptr p = 0;
  size_t n = 0;
  CUresult r = f ? f(&p, &n, l, name) : 999;
  if (r == CUDA_SUCCESS) {
    record_global("cuLibraryGetGlobal", l, name, p, n, 0);
    if (dptr) *dptr = p;
    if (bytes) *bytes = n;
  }
  return r;
}

static void record_attribute(const char *api, void *f, int attr, int value) {
  pthread_mutex_lock(&mu);
  FILE *lf = logfile();
  if (lf) {
    fprintf(lf, "{\"type\": \"func_attribute\", \"api\": \"%s\", \"function\": \"%p\", \"attribute\": %d, \"value\": %d}\n",
            api, f, attr, value);
    fflush(lf);
  }
  pthread_mutex_unlock(&mu);
}

/* function attributes (cudaFuncSetAttribute comes here): the required cluster shape is one */
CUresult cuFuncSetAttribute(CUfunction fn, int attr, int value) {
  CUresult r = CUDA_SUCCESS;
  if (!nogpu) {
    CUresult (*f)(CUfunction, int, int) = (CUresult(*)(CUfunction, int, int))real_slot(S_FUNCSETATTR, 0, "cuFuncSetAttribute");
    r = f ? f(fn, attr, value) : 999;
  }
  if (r == CUDA_SUCCESS) record_attribute("cuFuncSetAttribute", fn, attr, value);
  return r;
}

CUresult cuKernelSetAttribute(int attr, int value, CUkernel k, CUdevice dev) {
  CUresult r = CUDA_SUCCESS;
  if (!nogpu) {
    CUresult (*f)(int, int, CUkernel, CUdevice) = (CUresult(*)(int, int, CUkernel, CUdevice))real_slot(S_KSETATTR, 0, "cuKernelSetAttribute");
    r = f ? f(attr, value, k, dev) : 999;
  }
  if (r == CUDA_SUCCESS) record_attribute("cuKernelSetAttribute", k, attr, value);
  return r;
}

/* graphs: the kernels a graph launch runs are not recorded; each launch is counted */
#define GRAPHLAUNCH_WRAPPER(NAME, PTDS)                                                                 \
  CUresult NAME(void *exec, CUstream s) {                                                               \
    CUresult r = CUDA_SUCCESS;                                                                          \
    if (!nogpu) {                                                                                       \
      CUresult (*f)(void *, CUstream) = (CUresult(*)(void *, CUstream))real_slot(S_GRAPHLAUNCH, PTDS, #NAME); \
      r = f ? f(exec, s) : 999;                                                                         \
    }                                                                                                   \
    pthread_mutex_lock(&mu);                                                                            \
    FILE *lf = logfile();                                                                               \
    if (lf) { fprintf(lf, "{\"type\": \"graph_launch\", \"api\": \"%s\", \"result\": %d}\n", #NAME, r); fflush(lf); } \
    pthread_mutex_unlock(&mu);                                                                          \
    return r;                                                                                           \
  }
GRAPHLAUNCH_WRAPPER(cuGraphLaunch, 0)
GRAPHLAUNCH_WRAPPER(cuGraphLaunch_ptsz, 1)

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
    if (ntmaps < MAXTMAP) { memcpy(tmaps[ntmaps].map, map, 128); tmaps[ntmaps].addr = (CUdeviceptr)(uintptr_t)addr; ntmaps++; }
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
    if (ntmaps < MAXTMAP) { memcpy(tmaps[ntmaps].map, map, 128); tmaps[ntmaps].addr = (CUdeviceptr)(uintptr_t)addr; ntmaps++; }
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
    {"cuMemFreeAsync", S_FREEASYNC, 11020, {(void *)cuMemFreeAsync, (void *)cuMemFreeAsync_ptsz}},
    {"cuMemAllocFromPoolAsync", S_MALLOCPOOL, 11020, {(void *)cuMemAllocFromPoolAsync, (void *)cuMemAllocFromPoolAsync_ptsz}},
    {"cuMemAllocPitch", S_MALLOCPITCH, 3020, {(void *)cuMemAllocPitch_v2, (void *)cuMemAllocPitch_v2}},
    {"cuMemHostAlloc", S_HOSTALLOC, 2020, {(void *)cuMemHostAlloc, (void *)cuMemHostAlloc}},
    {"cuMemAllocHost", S_MALLOCHOST, 3020, {(void *)cuMemAllocHost_v2, (void *)cuMemAllocHost_v2}},
    {"cuMemFreeHost", S_FREEHOST, 2000, {(void *)cuMemFreeHost, (void *)cuMemFreeHost}},
    {"cuMemHostRegister", S_HOSTREG, 6050, {(void *)cuMemHostRegister_v2, (void *)cuMemHostRegister_v2}},
    {"cuMemHostUnregister", S_HOSTUNREG, 4000, {(void *)cuMemHostUnregister, (void *)cuMemHostUnregister}},
    {"cuModuleGetGlobal", S_GETGLOBAL, 3020, {(void *)cuModuleGetGlobal_v2, (void *)cuModuleGetGlobal_v2}},
    {"cuLibraryGetGlobal", S_LIBGETGLOBAL, 12000, {(void *)cuLibraryGetGlobal, (void *)cuLibraryGetGlobal}},
    {"cuFuncSetAttribute", S_FUNCSETATTR, 9000, {(void *)cuFuncSetAttribute, (void *)cuFuncSetAttribute}},
    {"cuKernelSetAttribute", S_KSETATTR, 12000, {(void *)cuKernelSetAttribute, (void *)cuKernelSetAttribute}},
    {"cuGraphLaunch", S_GRAPHLAUNCH, 10000, {(void *)cuGraphLaunch, (void *)cuGraphLaunch_ptsz}},
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
      {"cuMemFreeAsync", S_FREEASYNC, 0}, {"cuMemFreeAsync_ptsz", S_FREEASYNC, 1},
      {"cuMemAllocFromPoolAsync", S_MALLOCPOOL, 0}, {"cuMemAllocFromPoolAsync_ptsz", S_MALLOCPOOL, 1},
      {"cuMemAllocPitch_v2", S_MALLOCPITCH, 0}, {"cuMemHostAlloc", S_HOSTALLOC, 0},
      {"cuMemAllocHost_v2", S_MALLOCHOST, 0}, {"cuMemFreeHost", S_FREEHOST, 0},
      {"cuMemHostRegister_v2", S_HOSTREG, 0}, {"cuMemHostUnregister", S_HOSTUNREG, 0},
      {"cuModuleGetGlobal_v2", S_GETGLOBAL, 0}, {"cuLibraryGetGlobal", S_LIBGETGLOBAL, 0},
      {"cuFuncSetAttribute", S_FUNCSETATTR, 0}, {"cuKernelSetAttribute", S_KSETATTR, 0},
      {"cuGraphLaunch", S_GRAPHLAUNCH, 0}, {"cuGraphLaunch_ptsz", S_GRAPHLAUNCH, 1},
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
