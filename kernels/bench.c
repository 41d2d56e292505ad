/* Kernel benchmark (see bench.h). */
#include "kernels/bench.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/device_impl.h"
#include "kernels/model.h"
#include "kernels/optim.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of 5 square SGEMMs of size n on dev, in GFLOP/s. */
static double bench_sgemm_gflops(device *dev, int n) {
    size_t count = (size_t)n * n;
    float *host = ss_malloc(count * sizeof(float));
    rng r;
    rng_seed(&r, 7, RNG_STREAM_DATA);
    for (size_t i = 0; i < count; i++)
        host[i] = (float)rng_uniform(&r) - 0.5f;
    float *a = device_alloc(dev, count), *b = device_alloc(dev, count),
          *c = device_alloc(dev, count);
    device_upload(dev, a, host, count);
    device_upload(dev, b, host, count);
    dev->ops->gemm(dev, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n); /* warm-up */
    device_sync(dev);
    double best_s = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s();
        dev->ops->gemm(dev, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        device_sync(dev);
        double dt = now_s() - t0;
        if (dt < best_s) best_s = dt;
    }
    device_free(dev, a);
    device_free(dev, b);
    device_free(dev, c);
    free(host);
    return 2.0 * (double)n * n * n / best_s * 1e-9;
}

typedef struct bench_result {
    double samples_per_s;
    double gflops;      /* achieved, counted FLOPs */
    double step_mflops; /* counted FLOPs of one training step */
} bench_result;

/* Trains on one fixed random batch (after 2 warm-up steps) in 5 windows of min_s / 5 seconds
 * and at least 2 steps each; reports the best window. */
static int bench_model(device *dev, model_arch arch, int batch, double min_s, bench_result *res) {
    model_spec spec;
    model_spec_default(&spec, arch, 1, 28, 28, 10);
    model *m;
    int status = model_create(dev, &spec, 1, batch, &m);
    if (status != SS_OK) return status;
    const size_t d = 28 * 28;
    float *x = ss_malloc((size_t)batch * d * sizeof(float));
    uint8_t *y = ss_malloc((size_t)batch);
    rng r;
    rng_seed(&r, 3, RNG_STREAM_DATA);
    for (size_t i = 0; i < (size_t)batch * d; i++)
        x[i] = (float)rng_uniform(&r);
    for (int i = 0; i < batch; i++)
        y[i] = (uint8_t)rng_below(&r, 10);
    const float lr = 0.01f, mu = 0.9f, wd = 5e-4f;
    sgd_state *opt = sgd_create(dev, model_param_count(m));
    for (int i = 0; i < 2; i++) {
        model_forward_backward(m, x, y, batch);
        sgd_step(opt, model_params(m), model_grads(m), lr, mu, wd);
    }
    device_sync(dev);
    /* best of 5 windows, as for SGEMM: on a shared machine the best window is the one least
     * disturbed by other work */
    double best_rate = 0.0; /* steps per second */
    for (int window = 0; window < 5; window++) {
        long steps = 0;
        double t0 = now_s(), dt;
        do {
            model_forward_backward(m, x, y, batch);
            sgd_step(opt, model_params(m), model_grads(m), lr, mu, wd);
            device_sync(dev);
            steps++;
            dt = now_s() - t0;
        } while (dt < min_s / 5 || steps < 2);
        if ((double)steps / dt > best_rate) best_rate = (double)steps / dt;
    }
    double step_flops =
        batch * (model_forward_flops_per_sample(m) + model_backward_flops_per_sample(m)) +
        sgd_step_flops(model_param_count(m), mu, wd);
    res->samples_per_s = best_rate * batch;
    res->gflops = best_rate * step_flops * 1e-9;
    res->step_mflops = step_flops * 1e-6;
    sgd_destroy(opt);
    model_destroy(m);
    free(x);
    free(y);
    return SS_OK;
}

/* The SGEMM line and one row per model at the device's current thread count. */
static int bench_table(device *dev, int batch, const char *label, FILE *out) {
    const int sgemm_n = 2048;
    double sgemm = bench_sgemm_gflops(dev, sgemm_n);
    fprintf(out, "%s\nsgemm %dx%dx%d: %.1f GFLOP/s (best of 5)\n", label, sgemm_n, sgemm_n, sgemm_n,
            sgemm);
    fprintf(out, "%-8s %6s %14s %12s %10s %10s\n", "model", "batch", "MFLOP/step", "samples/s",
            "GFLOP/s", "vs sgemm");
    for (int a = MODEL_ARCH_LOGREG; a <= MODEL_ARCH_CNN; a++) {
        bench_result res;
        int status = bench_model(dev, (model_arch)a, batch, 2.0, &res);
        if (status != SS_OK) return status;
        fprintf(out, "%-8s %6d %14.2f %12.0f %10.2f %9.1f%%\n", model_arch_name((model_arch)a),
                batch, res.step_mflops, res.samples_per_s, res.gflops, 100.0 * res.gflops / sgemm);
    }
    return SS_OK;
}

int bench_kernels(const char *device_request, int batch, FILE *out) {
    if (batch < 1) return ss_error_set(SS_EUSAGE, "bench: batch must be positive (got %d)", batch);
    device *dev;
    char notice[256];
    int status = device_open(device_request, &dev, notice, sizeof notice);
    if (status != SS_OK) return status;
    if (notice[0]) fprintf(out, "%s\n", notice);
    fprintf(out, "device: %s\n", device_name(dev));
    const int threads = dev->kind == DEVICE_KIND_CPU ? openblas_get_num_threads() : 0;
    char label[64];
    if (threads)
        snprintf(label, sizeof label, "-- %d BLAS thread%s", threads, threads > 1 ? "s" : "");
    else
        snprintf(label, sizeof label, "-- %s", device_name(dev));
    status = bench_table(dev, batch, label, out);
    /* the CPU on one thread as well: the figures a comparison with another framework's
     * single-thread run needs (bench/pytorch_compare.py) */
    if (status == SS_OK && threads > 1) {
        openblas_set_num_threads(1);
        status = bench_table(dev, batch, "-- 1 BLAS thread", out);
        openblas_set_num_threads(threads);
    }
    device_close(dev);
    return status;
}
