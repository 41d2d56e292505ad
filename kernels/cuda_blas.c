/* cuBLAS loaded at the first CUDA device (cuda_blas.h). */
#include "kernels/cuda_blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

static cuda_blas_api api;
static int loaded;
static char why[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The symbol's address into *slot; 0 (and the reason) when it is missing. */
static int resolve(void *lib, const char *name, void *slot, size_t slot_size) {
    void *p = dlsym(lib, name);
    if (!p) {
        snprintf(why, sizeof why, "cuBLAS: no symbol %s in libcublas.so.%d", name,
                 CUBLAS_VER_MAJOR);
        return 0;
    }
    /* a function pointer from dlsym's void *, as POSIX allows */
    if (slot_size == sizeof p) *(void **)slot = p;
    return slot_size == sizeof p;
}

static void load(void) {
    char name[64];
    snprintf(name, sizeof name, "libcublas.so.%d", CUBLAS_VER_MAJOR);
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "cuBLAS: cannot load %s (%s)", name, e ? e : "not found");
        return;
    }
    loaded = resolve(lib, "cublasCreate_v2", &api.create, sizeof api.create) &&
             resolve(lib, "cublasDestroy_v2", &api.destroy, sizeof api.destroy) &&
             resolve(lib, "cublasSetStream_v2", &api.set_stream, sizeof api.set_stream) &&
             resolve(lib, "cublasSgemm_v2", &api.sgemm, sizeof api.sgemm) &&
             resolve(lib, "cublasSgemmStridedBatched", &api.sgemm_strided_batched,
                     sizeof api.sgemm_strided_batched) &&
             resolve(lib, "cublasGetStatusString", &api.status_string, sizeof api.status_string);
    /* the library stays loaded until the process ends, as a linked one would */
}

const cuda_blas_api *cuda_blas(char *reason, size_t reason_size) {
    pthread_once(&once, load);
    if (!loaded && reason && reason_size) snprintf(reason, reason_size, "%s", why);
    return loaded ? &api : NULL;
}

const char *cuda_blas_status(cublasStatus_t st) {
    static __thread char text[48];
    const cuda_blas_api *b = cuda_blas(NULL, 0);
    if (b) return b->status_string(st);
    snprintf(text, sizeof text, "cuBLAS status %d", (int)st);
    return text;
}
