/* Kernel benchmark (see bench.h). */
#include "kernels/bench.h"

#include "common/rng.h"
#include "common/sorted.h"
#include "common/status.h"
#include "kernels/device_impl.h"
#include "kernels/model.h"
#include "kernels/optim.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double now_s(void) {
    return clock_s(CLOCK_MONOTONIC);
}

/* CPU seconds of the whole process (all BLAS threads). On one thread this is the time the
 * work itself took: a machine shared with other jobs preempts a long step many times, which
 * inflates wall time but not CPU time. */
static double cpu_s(void) {
    return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

typedef struct rate_pair {
    double wall, cpu; /* best rate over wall time and over process CPU time */
} rate_pair;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* 12 independent chains of fused multiply-adds on registers (no memory): n rounds, 12 * n FMAs */
#define FMA_CHAINS(VEC, SET1, FMADD, ADD)                                                          \
    VEC acc[12], m = SET1(0.999999f), c = SET1(1e-7f);                                             \
    for (int i = 0; i < 12; i++)                                                                   \
        acc[i] = SET1(1e-3f * (float)i);                                                           \
    for (long k = 0; k < n; k++)                                                                   \
        for (int i = 0; i < 12; i++)                                                               \
            acc[i] = FMADD(acc[i], m, c);                                                          \
    for (int i = 1; i < 12; i++)                                                                   \
        acc[0] = ADD(acc[0], acc[i]);                                                              \
    float lanes[sizeof(VEC) / sizeof(float)];                                                      \
    memcpy(lanes, &acc[0], sizeof lanes);                                                          \
    return lanes[0];

__attribute__((target("avx512f"))) static float fma_rounds_512(long n) {
    FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps)
}

__attribute__((target("avx2,fma"))) static float fma_rounds_256(long n) {
    FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps)
}

/* One core's fp32 fused multiply-add rate, the ceiling of any kernel on one thread: the chains
 * above in 512-bit vectors (AVX-512F) or 256-bit ones (AVX2 with FMA), best of 5 windows of 2^22
 * rounds over the thread's CPU time, in GFLOP/s; *isa names the vectors. 0 on other CPUs. */
static double fma_peak_gflops(const char **isa) {
    const int wide = __builtin_cpu_supports("avx512f");
    if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0.0;
    *isa = wide ? "AVX-512" : "AVX2";
    const long n = 1L << 22;
    const double flops = 2.0 * 12.0 * (wide ? 16.0 : 8.0) * (double)n;
    double best = 1e30;
    volatile float sink = 0.0f; /* keeps the chains' result */
    for (int rep = 0; rep < 5; rep++) {
        double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        sink += wide ? fma_rounds_512(n) : fma_rounds_256(n);
        double dt = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
        if (dt < best) best = dt;
    }
    (void)sink;
    return best > 0.0 ? flops / best * 1e-9 : 0.0;
}
#else
static double fma_peak_gflops(const char **isa) {
    (void)isa;
    return 0.0;
}
#endif

/* Best of 5 square SGEMMs of size n on dev, in GFLOP/s (wall and CPU time). */
static rate_pair bench_sgemm_gflops(device *dev, int n) {
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
    double best_s = 1e30, best_cpu_s = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = now_s(), c0 = cpu_s();
        dev->ops->gemm(dev, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        device_sync(dev);
        double dt = now_s() - t0, dc = cpu_s() - c0;
        if (dt < best_s) best_s = dt;
        if (dc < best_cpu_s) best_cpu_s = dc;
    }
    device_free(dev, a);
    device_free(dev, b);
    device_free(dev, c);
    free(host);
    double flops = 2.0 * (double)n * n * n;
    rate_pair rate = {flops / best_s * 1e-9, flops / best_cpu_s * 1e-9};
    return rate;
}

typedef struct bench_result {
    double samples_per_s;
    double samples_per_cpu_s; /* per second of process CPU time */
    double gflops;            /* achieved, counted FLOPs, over wall time */
    double cpu_gflops;        /* the same over CPU time */
    double step_mflops;       /* counted FLOPs of one training step */
} bench_result;

/* Trains on one fixed random batch (after 2 warm-up steps) in 5 windows of min_s / 5 seconds
 * and at least 2 steps each; reports the best window. */
/* A language model (gpt:...) is measured on random tokens of a vocabulary of this size (Penn
 * Treebank's); a sample is T tokens. */
#define BENCH_LM_VOCAB 10000

/* The timed steps' SGD: learning rate, momentum, weight decay */
static const float bench_lr = 0.01f, bench_mu = 0.9f, bench_wd = 5e-4f;

/* The layer table of bench_kernels' layers option: LAYER_STEPS steps with the layer clock
 * (model_set_layer_clock) after the timed windows, each layer's median seconds a pass and its
 * rate; then the convolutions together (forward and backward) against SGEMM. */
#define LAYER_STEPS 10

/* The median of v[0..n), n >= 1 (v is sorted in place). */
static double median_of(double *v, int n) {
    sorted_doubles(v, (size_t)n);
    return sorted_median(v, (size_t)n);
}

/* `steps` training steps with the layer clock, each followed by one without it: fwd_s[i] and
 * bwd_s[i] become the median seconds of layer i's passes over the clocked steps
 * (model_cost_layer_at's index), scaled by the ratio of the median step without the clock to the
 * median step with it; returns the median step without the clock, the optimizer's update included
 * (the wall clock, the device synchronized after each step, as train --compute measured times a
 * step). Medians, not means: a step that a busy machine preempts moves neither a layer's time
 * nor the scale (a preemption of 10 ms doubles the sum of ten 1 ms steps). On a GPU the clock's
 * events cost the host time to record them (about 140 a step for resnet:20's 69 layers), which a
 * host-bound step pays in full: its layers would add up to more than the step they time. *marked_s
 * (NULL: not wanted) gets the median step with the clock. */
static double clock_layers(device *dev, model *m, int batch, sgd_state *opt, const float *x,
                           const uint8_t *y, int steps, double *fwd_s, double *bwd_s,
                           double *marked_s) {
    const int n = model_cost_layer_count(m);
    double *lf = ss_calloc((size_t)steps * n, sizeof *lf); /* step s's layers at s * n */
    double *lb = ss_calloc((size_t)steps * n, sizeof *lb);
    double *marked = ss_malloc((size_t)steps * sizeof *marked);
    double *plain = ss_malloc((size_t)steps * sizeof *plain);
    double *col = ss_malloc((size_t)steps * sizeof *col);
    for (int i = 0; i < 2 * steps; i++) {
        const int clocked = i % 2 == 0, s = i / 2;
        model_set_layer_clock(m, clocked ? lf + (size_t)s * n : NULL,
                              clocked ? lb + (size_t)s * n : NULL);
        const double t0 = now_s();
        model_forward_backward(m, x, y, batch);
        sgd_step(opt, model_params(m), model_grads(m), bench_lr, bench_mu, bench_wd);
        device_sync(dev);
        (clocked ? marked : plain)[s] = now_s() - t0;
    }
    model_set_layer_clock(m, NULL, NULL);
    const double marked_med = median_of(marked, steps), plain_med = median_of(plain, steps);
    const double scale = marked_med > 0.0 ? plain_med / marked_med : 1.0;
    for (int l = 0; l < n; l++) {
        for (int s = 0; s < steps; s++)
            col[s] = lf[(size_t)s * n + l];
        fwd_s[l] = scale * median_of(col, steps);
        for (int s = 0; s < steps; s++)
            col[s] = lb[(size_t)s * n + l];
        bwd_s[l] = scale * median_of(col, steps);
    }
    if (marked_s) *marked_s = marked_med;
    free(lf);
    free(lb);
    free(marked);
    free(plain);
    free(col);
    return plain_med;
}

static void bench_layers(device *dev, model *m, int batch, sgd_state *opt, const float *x,
                         const uint8_t *y, double sgemm_gflops, const char *text, FILE *out) {
    const int n = model_cost_layer_count(m);
    double *fwd = ss_calloc((size_t)n, sizeof(double)), *bwd = ss_calloc((size_t)n, sizeof(double));
    double marked_s;
    const double step_s = clock_layers(dev, m, batch, opt, x, y, LAYER_STEPS, fwd, bwd, &marked_s);
    fprintf(out,
            "\nlayers of %s, batch %d: median of %d steps (%s; scaled by %.3f, the step without "
            "the clock over the step with it)\n%-18s %9s %9s %11s %11s %9s\n",
            text, batch, LAYER_STEPS,
            dev->ops->mark_create ? "events in the device's queue" : "the wall clock",
            marked_s > 0.0 ? step_s / marked_s : 1.0, "layer", "fwd ms", "bwd ms", "fwd GFLOP/s",
            "bwd GFLOP/s", "vs sgemm");
    double sum_s = 0.0, conv_s = 0.0, conv_flops = 0.0;
    for (int i = 0; i < n; i++) {
        model_layer_cost c;
        model_cost_layer_at(m, i, &c);
        double f = fwd[i], b = bwd[i];
        double ff = c.fwd_flops * batch, bf = c.bwd_flops * batch;
        sum_s += f + b;
        if (c.conv) conv_s += f + b, conv_flops += ff + bf;
        if (f + b <= 0.0) continue; /* a view, or computed (and timed) with its conv */
        fprintf(out, "%-18s %9.3f %9.3f %11.1f %11.1f %8.1f%%\n", c.name, 1e3 * f, 1e3 * b,
                f > 0 ? ff / f * 1e-9 : 0.0, b > 0 ? bf / b * 1e-9 : 0.0,
                f + b > 0 ? 100.0 * (ff + bf) / (f + b) * 1e-9 / sgemm_gflops : 0.0);
    }
    fprintf(out, "%-18s %19.3f ms (the step with the optimizer: %.3f ms)\n", "layers together",
            1e3 * sum_s, 1e3 * step_s);
    if (conv_s > 0)
        fprintf(out,
                "convolutions: %.3f ms, %.1f GFLOP/s = %.1f%% of sgemm (forward and backward)\n",
                1e3 * conv_s, conv_flops / conv_s * 1e-9,
                100.0 * conv_flops / conv_s * 1e-9 / sgemm_gflops);
    free(fwd);
    free(bwd);
}

/* The model of a --model text on 1x28x28 inputs with 10 classes (a gpt: BENCH_LM_VOCAB words) */
static int bench_spec(const char *text, model_spec *spec) {
    const int lm = !strncmp(text, "gpt", 3);
    return model_spec_parse(spec, text, 1, 28, 28, lm ? BENCH_LM_VOCAB : 10);
}

static int bench_model(device *dev, const char *text, int batch, double min_s, double sgemm_gflops,
                       FILE *layers_out, bench_result *res) {
    model_spec spec;
    int status = bench_spec(text, &spec);
    if (status != SS_OK) return status;
    const int lm = spec.arch == MODEL_ARCH_GPT;
    model *m;
    status = model_create(dev, &spec, 1, batch, &m);
    if (status != SS_OK) return status;
    const size_t d = lm && spec.in_w > 28 * 28 ? (size_t)spec.in_w : 28 * 28;
    float *x = ss_malloc((size_t)batch * d * sizeof(float));
    uint8_t *y = ss_malloc((size_t)batch);
    rng r;
    rng_seed(&r, 3, RNG_STREAM_DATA);
    for (size_t i = 0; i < (size_t)batch * d; i++)
        x[i] = lm ? (float)rng_below(&r, BENCH_LM_VOCAB) : (float)rng_uniform(&r);
    for (int i = 0; i < batch; i++)
        y[i] = (uint8_t)rng_below(&r, 10);
    sgd_state *opt = sgd_create(dev, model_param_count(m));
    for (int i = 0; i < 2; i++) {
        model_forward_backward(m, x, y, batch);
        sgd_step(opt, model_params(m), model_grads(m), bench_lr, bench_mu, bench_wd);
    }
    device_sync(dev);
    /* best of 5 windows, as for SGEMM: on a shared machine the best window is the one least
     * disturbed by other work */
    double best_rate = 0.0, best_cpu_rate = 0.0; /* steps per second */
    for (int window = 0; window < 5; window++) {
        long steps = 0;
        double t0 = now_s(), c0 = cpu_s(), dt;
        do {
            model_forward_backward(m, x, y, batch);
            sgd_step(opt, model_params(m), model_grads(m), bench_lr, bench_mu, bench_wd);
            device_sync(dev);
            steps++;
            dt = now_s() - t0;
        } while (dt < min_s / 5 || steps < 2);
        double dc = cpu_s() - c0;
        if ((double)steps / dt > best_rate) best_rate = (double)steps / dt;
        if (dc > 0 && (double)steps / dc > best_cpu_rate) best_cpu_rate = (double)steps / dc;
    }
    double step_flops =
        batch * (model_forward_flops_per_sample(m) + model_backward_flops_per_sample(m)) +
        sgd_step_flops(model_param_count(m), bench_mu, bench_wd);
    if (layers_out) bench_layers(dev, m, batch, opt, x, y, sgemm_gflops, text, layers_out);
    res->samples_per_s = best_rate * batch;
    res->samples_per_cpu_s = best_cpu_rate * batch;
    res->gflops = best_rate * step_flops * 1e-9;
    res->cpu_gflops = best_cpu_rate * step_flops * 1e-9;
    res->step_mflops = step_flops * 1e-6;
    sgd_destroy(opt);
    model_destroy(m);
    free(x);
    free(y);
    return SS_OK;
}

/* The SGEMM line and one row per model at the device's current thread count. On the CPU the
 * rates over process CPU time follow ("cpu" columns), compared with the SGEMM's CPU-time rate. */
static const char *const bench_all[] = {"logreg", "mlp", "cnn"};

static int bench_table(device *dev, int batch, const char *only, int layers, double seconds,
                       bench_fits_fn fits, const char *label, FILE *out) {
    /* each model checked before anything is measured */
    for (int a = 0; fits && a < 3; a++) {
        model_spec spec;
        int status = bench_spec(only ? only : bench_all[a], &spec);
        if (status == SS_OK) status = fits(dev, &spec, batch);
        if (status != SS_OK) return status;
        if (only) break;
    }
    const int sgemm_n = 2048, cpu = dev->kind == DEVICE_KIND_CPU;
    rate_pair sgemm = bench_sgemm_gflops(dev, sgemm_n);
    fprintf(out, "%s\nsgemm %dx%dx%d: %.1f GFLOP/s (best of 5)", label, sgemm_n, sgemm_n, sgemm_n,
            sgemm.wall);
    if (cpu) fprintf(out, ", %.1f GFLOP/s of CPU time", sgemm.cpu);
    const char *isa = NULL;
    const double peak = cpu ? fma_peak_gflops(&isa) : 0.0;
    if (peak > 0.0)
        fprintf(out, "\none core's fp32 fused multiply-add peak (%s, registers only): %.1f GFLOP/s",
                isa, peak);
    fprintf(out, "\n%-8s %6s %14s %12s %10s %10s", "model", "batch", "MFLOP/step", "samples/s",
            "GFLOP/s", "vs sgemm");
    if (cpu) fprintf(out, " %14s %10s", "samples/cpu-s", "cpu vs sg");
    fputc('\n', out);
    /* the layer tables come after the whole table */
    char *layer_text = NULL;
    size_t layer_len = 0;
    FILE *layer_out = layers ? open_memstream(&layer_text, &layer_len) : NULL;
    if (layers && !layer_out) return ss_error_set(SS_EIO, "bench: out of memory");
    for (int a = 0; a < 3; a++) {
        const char *name = only ? only : bench_all[a];
        bench_result res;
        int status = bench_model(dev, name, batch, seconds, sgemm.wall, layer_out, &res);
        if (status != SS_OK) {
            if (layer_out) fclose(layer_out);
            free(layer_text);
            return status;
        }
        fprintf(out, "%-8s %6d %14.2f %12.0f %10.2f %9.1f%%", name, batch, res.step_mflops,
                res.samples_per_s, res.gflops, 100.0 * res.gflops / sgemm.wall);
        if (cpu)
            fprintf(out, " %14.0f %9.1f%%", res.samples_per_cpu_s,
                    100.0 * res.cpu_gflops / sgemm.cpu);
        fputc('\n', out);
        if (only) break;
    }
    if (layer_out) {
        fclose(layer_out);
        fwrite(layer_text, 1, layer_len, out);
        free(layer_text);
    }
    return SS_OK;
}

int bench_measure_layers(device *dev, const model_spec *spec, int batch, int steps,
                         const float *data_x, const uint8_t *data_y, double *fwd_s, double *bwd_s,
                         double *step_s, double *marked_s) {
    if (batch < 1 || steps < 1)
        return ss_error_set(SS_EUSAGE, "bench: batch %d and steps %d must be positive", batch,
                            steps);
    model *m;
    int status = model_create(dev, spec, 1, batch, &m);
    if (status != SS_OK) return status;
    const size_t d = (size_t)spec->in_c * spec->in_h * spec->in_w;
    float *x = ss_malloc((size_t)batch * d * sizeof(float));
    uint8_t *y = ss_malloc((size_t)batch);
    if (data_x) {
        memcpy(x, data_x, (size_t)batch * d * sizeof(float));
        memcpy(y, data_y, (size_t)batch);
    } else {
        /* a gpt sample is T + 1 token ids (as floats) of its vocabulary; its labels unread */
        const int lm = spec->arch == MODEL_ARCH_GPT;
        rng r;
        rng_seed(&r, 3, RNG_STREAM_DATA);
        for (size_t i = 0; i < (size_t)batch * d; i++)
            x[i] = lm ? (float)rng_below(&r, (uint64_t)spec->classes) : (float)rng_uniform(&r);
        for (int i = 0; i < batch; i++)
            y[i] = lm ? 0 : (uint8_t)rng_below(&r, (uint64_t)spec->classes);
    }
    sgd_state *opt = sgd_create(dev, model_param_count(m));
    for (int i = 0; i < 2; i++) { /* warm-up: first touches, the GPU's lazy set-up */
        model_forward_backward(m, x, y, batch);
        sgd_step(opt, model_params(m), model_grads(m), bench_lr, bench_mu, bench_wd);
    }
    *step_s = clock_layers(dev, m, batch, opt, x, y, steps, fwd_s, bwd_s, marked_s);
    sgd_destroy(opt);
    model_destroy(m);
    free(x);
    free(y);
    return SS_OK;
}

/* OpenBLAS runs its AVX2 (Haswell) kernels when OPENBLAS_CORETYPE says so or when it does not
 * know the CPU; on a CPU with AVX-512 its SkylakeX/Cooperlake kernels may then be faster (not on
 * the Zen 4 of docs/PERFORMANCE.md, "OpenBLAS's kernels", where both run SGEMM at the same rate).
 * Says so when it applies. */
static void bench_coretype_hint(FILE *out) {
#if defined(__x86_64__) && defined(__GNUC__)
    const char *core = openblas_get_corename();
    if (!core || strcasecmp(core, "haswell") != 0) return;
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512dq") || !__builtin_cpu_supports("avx512vl"))
        return;
    const char *env = getenv("OPENBLAS_CORETYPE");
    fprintf(out,
            "note: this CPU has AVX-512 but OpenBLAS runs its Haswell (AVX2) kernels%s; "
            "OPENBLAS_CORETYPE=SkylakeX%s may be faster\n",
            env ? " (OPENBLAS_CORETYPE is set)" : "", env ? " or unsetting it" : "");
#else
    (void)out;
#endif
}

int bench_kernels(const char *device_request, int batch, const char *model_name, int layers,
                  double seconds, bench_fits_fn fits, FILE *out) {
    if (batch < 1) return ss_error_set(SS_EUSAGE, "bench: batch must be positive (got %d)", batch);
    if (!(seconds > 0.0))
        return ss_error_set(SS_EUSAGE, "bench kernels --seconds: %g, expected a positive number",
                            seconds);
    model_spec probe;
    if (model_name && model_spec_parse(&probe, model_name, 1, 28, 28, 10) != SS_OK)
        return ss_error_set(SS_EUSAGE,
                            "bench kernels --model %s: %s (without --model: logreg, "
                            "mlp and cnn)",
                            model_name, ss_error_message());
    device *dev;
    char notice[256];
    int status = device_open(device_request, &dev, notice, sizeof notice);
    if (status != SS_OK) return status;
    if (notice[0]) fprintf(out, "%s\n", notice);
    fprintf(out, "device: %s\n", device_name(dev));
    if (dev->kind == DEVICE_KIND_CPU) {
        bench_coretype_hint(out);
        /* train and bench kernels set it unless the user did (cli/cli.c) */
        const char *spin = getenv("OPENBLAS_THREAD_TIMEOUT");
        fprintf(out, "OpenBLAS's idle threads spin 2^%s cycles (OPENBLAS_THREAD_TIMEOUT%s)\n",
                spin ? spin : "28", spin ? "" : " unset: OpenBLAS's default");
    }
    const int threads = dev->kind == DEVICE_KIND_CPU ? openblas_get_num_threads() : 0;
    char label[64];
    if (threads)
        snprintf(label, sizeof label, "-- %d BLAS thread%s", threads, threads > 1 ? "s" : "");
    else
        snprintf(label, sizeof label, "-- %s", device_name(dev));
    status = bench_table(dev, batch, model_name, layers, seconds, fits, label, out);
    /* the CPU on one thread as well: the figures a comparison with another framework's
     * single-thread run needs (bench/pytorch_compare.py) */
    if (status == SS_OK && threads > 1) {
        openblas_set_num_threads(1);
        status =
            bench_table(dev, batch, model_name, layers, seconds, fits, "-- 1 BLAS thread", out);
        openblas_set_num_threads(threads);
    }
    device_close(dev);
    return status;
}

uint32_t bench_param_checksum(device *dev, model *m) {
    size_t n = model_param_count(m);
    float *w = ss_malloc((n ? n : 1) * sizeof(float));
    if (n) device_download(dev, w, model_params(m), n);
    uint32_t h = 2166136261u; /* FNV-1a over the bytes */
    const unsigned char *p = (const unsigned char *)w;
    for (size_t i = 0; i < n * sizeof(float); i++)
        h = (h ^ p[i]) * 16777619u;
    free(w);
    return h;
}
