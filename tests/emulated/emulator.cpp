/* test_cuda_emulated's runtime: ss_emu_launch runs a kernel's blocks on CPU threads (see
 * kernels/cuda_common.h beside this file), and the tiled convolutions' source, rewritten by
 * tests/emulate_cuda.cmake, is compiled here, with an entry that launches the forward kernel at a
 * chosen number of pixels a thread. */
#include "kernels/cuda_common.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

thread_local uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim, gridDim;

static pthread_barrier_t emu_barrier;
static const std::function<void()> *emu_body;

void ss_emu_syncthreads(void) {
    pthread_barrier_wait(&emu_barrier);
}

/* thread t of every block in turn: thread 0 sets the block between two barriers */
static void *emu_thread(void *arg) {
    const unsigned t = (unsigned)(uintptr_t)arg;
    threadIdx = {t, 0, 0};
    const size_t blocks = (size_t)gridDim.x * gridDim.y * gridDim.z;
    for (size_t b = 0; b < blocks; b++) {
        if (t == 0)
            blockIdx = {(unsigned)(b % gridDim.x), (unsigned)(b / gridDim.x % gridDim.y),
                        (unsigned)(b / ((size_t)gridDim.x * gridDim.y))};
        pthread_barrier_wait(&emu_barrier);
        (*emu_body)();
        pthread_barrier_wait(&emu_barrier);
    }
    return NULL;
}

void ss_emu_launch(dim3 grid, unsigned threads, cudaStream_t stream,
                   const std::function<void()> &body) {
    (void)stream;
    gridDim = grid;
    blockDim = dim3(threads);
    emu_body = &body;
    pthread_t *ids = (pthread_t *)calloc(threads, sizeof *ids);
    pthread_attr_t attr;
    if (!ids || pthread_barrier_init(&emu_barrier, NULL, threads) || pthread_attr_init(&attr) ||
        pthread_attr_setstacksize(&attr, 1 << 20)) {
        fprintf(stderr, "ss_emu_launch: cannot set up %u threads\n", threads);
        abort();
    }
    for (unsigned t = 0; t < threads; t++)
        if (pthread_create(&ids[t], &attr, emu_thread, (void *)(uintptr_t)t)) {
            fprintf(stderr, "ss_emu_launch: cannot start thread %u of %u\n", t, threads);
            abort();
        }
    for (unsigned t = 0; t < threads; t++)
        pthread_join(ids[t], NULL);
    pthread_attr_destroy(&attr);
    pthread_barrier_destroy(&emu_barrier);
    free(ids);
}

#include "cuda_conv_tiled.emu.cpp"

/* the forward kernel with TM pixels a thread (4 or 8) and BN channels a block (16, 32, 64),
 * whatever the launcher would choose: the same bits are expected for any choice */
extern "C" int ss_emu_conv_tiled_fwd_tiles(conv_geom g, int oc, int bn, int tm, const float *x,
                                           const float *w, float *y) {
    if (!cuda_conv_tiled_takes(g, oc, CUDA_CONV_FWD) || oc % bn) return 0;
    const int pixels = g.batch * g.out_h * g.out_w;
#define SS_EMU_TILES(BN, TM)                                                                       \
    if (bn == BN && tm == TM) {                                                                    \
        const int bm = tc_shape<BN, TM>::bm;                                                       \
        ss_emu_launch(dim3((pixels + bm - 1) / bm, oc / BN), TC_THREADS, 0,                        \
                      [&] { conv_tiled_kernel<BN, TM>(g, oc, x, w, y); });                         \
        return 1;                                                                                  \
    }
    SS_EMU_TILES(16, 4)
    SS_EMU_TILES(16, 8)
    SS_EMU_TILES(32, 4)
    SS_EMU_TILES(32, 8)
    SS_EMU_TILES(64, 4)
    SS_EMU_TILES(64, 8)
#undef SS_EMU_TILES
    return 0;
}
