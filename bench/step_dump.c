/* One training step of an emulated model, written out for bench/torch_check.py to repeat in
 * PyTorch: the initial parameters, the batch, the loss, every gradient and the running statistics
 * after the step, each as raw float32 (uint8 for the labels) with a text index of the views.
 *
 *     build/bench/step_dump --model resnet:20 --batch 8 --seed 1 --out DIR
 *
 * The batch is seeded uniform noise in [0, 1) of Fashion-MNIST's shape (1x28x28, NHWC) with
 * labels i mod 10; the step runs on the CPU (OpenBLAS) in training mode. Exit 2 on bad usage. */
#include "common/rng.h"
#include "common/status.h"
#include "kernels/device.h"
#include "kernels/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int write_raw(const char *dir, const char *name, const void *p, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) {
        fprintf(stderr, "step_dump: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

static int write_views(const char *dir, const char *name, const model *m, int buffers) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    const int n = buffers ? model_buffer_view_count(m) : model_view_count(m);
    for (int i = 0; i < n; i++) {
        const model_view *v = buffers ? model_buffer_view_at(m, i) : model_view_at(m, i);
        fprintf(f, "%s %zu %zu\n", v->name, v->offset, v->count);
    }
    return fclose(f) != 0;
}

static float *download(device *dev, const float *src, size_t n) {
    float *h = ss_malloc((n ? n : 1) * sizeof(float));
    if (n) device_download(dev, h, src, n);
    return h;
}

int main(int argc, char **argv) {
    const char *name = NULL, *out = NULL;
    int batch = 8;
    unsigned long long seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model"))
            name = argv[i + 1];
        else if (!strcmp(argv[i], "--out"))
            out = argv[i + 1];
        else if (!strcmp(argv[i], "--batch"))
            batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
        else
            name = NULL, i = argc;
    }
    if (!name || !out || batch < 1 || batch > 4096 || (argc - 1) % 2) {
        fprintf(stderr, "usage: step_dump --model M --out DIR [--batch B (1..4096)] [--seed S]\n");
        return 2;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "step_dump: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    device *dev;
    char notice[256];
    model_spec spec;
    model *m = NULL;
    if (device_open("cpu", &dev, notice, sizeof notice) != SS_OK ||
        model_spec_parse(&spec, name, 1, 28, 28, 10) != SS_OK ||
        model_create(dev, &spec, seed, batch, &m) != SS_OK) {
        fprintf(stderr, "step_dump: %s\n", ss_error_message());
        return 2;
    }
    const size_t d = 28 * 28, np = model_param_count(m), nb = model_buffer_count(m);
    float *x = ss_malloc(sizeof(float) * d * (size_t)batch);
    uint8_t *y = ss_malloc((size_t)batch);
    rng r;
    rng_seed(&r, seed, RNG_STREAM_DATA);
    for (size_t i = 0; i < d * (size_t)batch; i++)
        x[i] = (float)rng_uniform(&r);
    for (int b = 0; b < batch; b++)
        y[b] = (uint8_t)(b % 10);
    float *params = download(dev, model_params(m), np);
    const double loss = model_forward_backward(m, x, y, batch);
    float *grads = download(dev, model_grads(m), np);
    float *bufs = download(dev, model_buffers(m), nb);
    int rc = write_raw(out, "params.f32", params, np * sizeof(float)) |
             write_raw(out, "grads.f32", grads, np * sizeof(float)) |
             write_raw(out, "buffers.f32", bufs, nb * sizeof(float)) |
             write_raw(out, "x.f32", x, d * (size_t)batch * sizeof(float)) |
             write_raw(out, "y.u8", y, (size_t)batch) | write_views(out, "views.txt", m, 0) |
             write_views(out, "buffer_views.txt", m, 1);
    char path[4096];
    snprintf(path, sizeof path, "%s/step.txt", out);
    FILE *f = fopen(path, "w");
    rc |= !f ||
          fprintf(f, "model %s\nbatch %d\nseed %llu\nloss %.9g\n", name, batch, seed, loss) < 0 ||
          fclose(f) != 0;
    printf("step_dump: %s, batch %d, %zu parameters, %zu buffer values, loss %.9g -> %s\n", name,
           batch, np, nb, loss, out);
    free(params), free(grads), free(bufs), free(x), free(y);
    model_destroy(m);
    device_close(dev);
    return rc ? 1 : 0;
}
