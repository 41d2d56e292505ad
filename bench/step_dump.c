/* One training step of an emulated model, written out for bench/torch_check.py to repeat in
 * PyTorch: the initial parameters, the batch, the loss, every gradient and the running statistics
 * after the step, each as raw float32 (uint8 for the labels) with a text index of the views.
 *
 *     build/bench/step_dump --model resnet:20 --batch 8 --seed 1 --out DIR
 *     build/bench/step_dump --model gpt:wlm --batch 8 --seed 1 [--vocab V] --out DIR
 *
 * An image model's batch is seeded uniform noise in [0, 1) of Fashion-MNIST's shape (1x28x28,
 * NHWC) with labels i mod 10. A language model's (gpt:...) is B samples of T + 1 seeded token ids
 * (as floats) over a vocabulary of V (default 10,973, web-bible's), id = floor(V u^3) for u
 * uniform in [0, 1), skewed toward small ids as word frequencies are, so that tokens repeat and
 * the embedding's gradient sums them; it also writes the dropout masks the step drew (0 or
 * 1 / (1 - p) per element, dropout.f32 indexed by dropout_views.txt), so that PyTorch applies the
 * same ones; an image model's, its ReLUs' outputs (relu.f32, relu_views.txt), so that PyTorch
 * takes syncsim's branch at inputs within rounding of zero. The step runs on the CPU (OpenBLAS)
 * in training mode. Exit 2 on bad usage. */
#include "common/rng.h"
#include "common/status.h"
#include "kernels/device.h"
#include "kernels/gpt.h"
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

typedef const model_view *(*view_at_fn)(const void *m, int i);

static int write_views(const char *dir, const char *name, const void *m, int n, view_at_fn at) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    for (int i = 0; i < n; i++) {
        const model_view *v = at(m, i);
        fprintf(f, "%s %zu %zu\n", v->name, v->offset, v->count);
    }
    return fclose(f) != 0;
}

static const model_view *model_view_of(const void *m, int i) {
    return model_view_at(m, i);
}

static const model_view *model_buffer_view_of(const void *m, int i) {
    return model_buffer_view_at(m, i);
}

static const model_view *gpt_view_of(const void *g, int i) {
    return gpt_view_at(g, i);
}

static float *download(device *dev, const float *src, size_t n) {
    float *h = ss_malloc((n ? n : 1) * sizeof(float));
    if (n) device_download(dev, h, src, n);
    return h;
}

static int write_step(const char *out, const char *name, int batch, unsigned long long seed,
                      int vocab, double loss) {
    char path[4096];
    snprintf(path, sizeof path, "%s/step.txt", out);
    FILE *f = fopen(path, "w");
    return !f ||
           fprintf(f, "model %s\nbatch %d\nseed %llu\nloss %.9g\n", name, batch, seed, loss) < 0 ||
           (vocab && fprintf(f, "vocab %d\n", vocab) < 0) || fclose(f) != 0;
}

/* The dropout masks of the step just taken, site by site (gpt_pass.c's numbering), into
 * dropout.f32 with their views in dropout_views.txt; none when the model has no dropout. */
static int write_masks(const char *out, gpt *g, const model_spec *s, int batch) {
    const size_t n = (size_t)batch * s->gpt_seq, d = (size_t)s->gpt_dim;
    const size_t att = n * s->gpt_heads * s->gpt_seq, nf = n * s->gpt_ffn;
    const int sites = 1 + 4 * s->gpt_layers, on = s->gpt_dropout > 0.0f;
    model_view *views = ss_calloc((size_t)sites, sizeof *views);
    int *site_of = ss_calloc((size_t)sites, sizeof *site_of), nv = 0;
    size_t total = 0;
    for (int site = 0; on && site < sites; site++) {
        const int l = (site - 1) / 4, k = (site - 1) % 4;
        static const char *const what[] = {"attn.probs", "attn.out", "mlp.hidden", "mlp.out"};
        if (site > 0 && k == 2 && !s->gpt_wlm) continue; /* the MLP's hidden dropout: wlm only */
        model_view *v = &views[nv];
        site_of[nv++] = site;
        if (site == 0)
            snprintf(v->name, sizeof v->name, "emb");
        else
            snprintf(v->name, sizeof v->name, "h%d.%s", l, what[k]);
        v->offset = total;
        v->count = site == 0 ? n * d : k == 0 ? att : k == 2 ? nf : n * d;
        total += v->count;
    }
    float *masks = ss_malloc((total ? total : 1) * sizeof(float));
    for (int i = 0; i < nv; i++)
        gpt_dropout_mask(g, site_of[i], views[i].count, masks + views[i].offset);
    char path[4096];
    snprintf(path, sizeof path, "%s/dropout_views.txt", out);
    FILE *f = fopen(path, "w");
    int rc = !f;
    for (int i = 0; f && i < nv; i++)
        rc |= fprintf(f, "%s %zu %zu\n", views[i].name, views[i].offset, views[i].count) < 0;
    rc |= f && fclose(f) != 0;
    rc |= write_raw(out, "dropout.f32", masks, total * sizeof(float));
    free(masks);
    free(views);
    free(site_of);
    return rc;
}

/* The outputs of the model's ReLUs in the step just taken, in forward order (when it holds
 * them all; else the files are empty), into relu.f32 (NHWC, as the layers keep them) with
 * relu_views.txt: name, offset, count, h, w, c. torch_check.py takes each ReLU's decisions from
 * them (where the output is positive), so that an input within float rounding of zero takes
 * syncsim's branch in PyTorch too. */
static int write_relus(const char *out, device *dev, const model *m, int batch) {
    const int n = model_relu_count(m);
    char path[4096];
    snprintf(path, sizeof path, "%s/relu_views.txt", out);
    FILE *f = fopen(path, "w"), *raw = NULL;
    snprintf(path, sizeof path, "%s/relu.f32", out);
    if (f) raw = fopen(path, "wb");
    int rc = !f || !raw, held = 1;
    for (int k = 0; k < n; k++) {
        int h, w, c;
        held &= model_relu_output(m, k, &h, &w, &c) != NULL;
    }
    size_t total = 0;
    for (int k = 0; !rc && held && k < n; k++) { /* all or none: the views follow the ReLUs */
        int h, w, c;
        const float *y = model_relu_output(m, k, &h, &w, &c);
        const size_t count = (size_t)batch * h * w * c;
        float *host = download(dev, y, count);
        rc |= fprintf(f, "relu%d %zu %zu %d %d %d\n", k, total, count, h, w, c) < 0;
        rc |= fwrite(host, sizeof(float), count, raw) != count;
        total += count;
        free(host);
    }
    rc |= f && fclose(f) != 0;
    rc |= raw && fclose(raw) != 0;
    if (rc) fprintf(stderr, "step_dump: cannot write the ReLU outputs in %s\n", out);
    return rc;
}

/* A language model's step: tokens in x.f32, no labels, no buffers. */
static int dump_gpt(device *dev, const model_spec *spec, const char *name, const char *out,
                    int batch, unsigned long long seed) {
    gpt *g;
    if (gpt_create(dev, spec, seed, batch, &g) != SS_OK) {
        fprintf(stderr, "step_dump: %s\n", ss_error_message());
        return 2;
    }
    const int v = spec->classes, w = spec->gpt_seq + 1;
    const size_t np = gpt_param_count(g), nx = (size_t)batch * w;
    float *x = ss_malloc(nx * sizeof(float));
    rng r;
    rng_seed(&r, seed, RNG_STREAM_DATA);
    for (size_t i = 0; i < nx; i++) {
        const double u = rng_uniform(&r);
        const int id = (int)(v * u * u * u);
        x[i] = (float)(id < v ? id : v - 1);
    }
    float *params = download(dev, gpt_params(g), np);
    const double loss = gpt_forward_backward(g, x, batch, NULL, NULL);
    float *grads = download(dev, gpt_grads(g), np);
    int rc = write_raw(out, "params.f32", params, np * sizeof(float)) |
             write_raw(out, "grads.f32", grads, np * sizeof(float)) |
             write_raw(out, "buffers.f32", grads, 0) |
             write_raw(out, "x.f32", x, nx * sizeof(float)) |
             write_views(out, "views.txt", g, gpt_view_count(g), gpt_view_of) |
             write_views(out, "buffer_views.txt", g, 0, gpt_view_of) |
             write_masks(out, g, spec, batch) | write_step(out, name, batch, seed, v, loss);
    printf("step_dump: %s, batch %d of %d tokens, vocabulary %d, %zu parameters, loss %.9g -> "
           "%s\n",
           name, batch, spec->gpt_seq, v, np, loss, out);
    free(params), free(grads), free(x);
    gpt_destroy(g);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *name = NULL, *out = NULL;
    int batch = 8, vocab = 10973;
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
        else if (!strcmp(argv[i], "--vocab"))
            vocab = atoi(argv[i + 1]);
        else
            name = NULL, i = argc;
    }
    if (!name || !out || batch < 1 || batch > 4096 || vocab < 2 || vocab > 1 << 24 ||
        (argc - 1) % 2) {
        fprintf(stderr, "usage: step_dump --model M --out DIR [--batch B (1..4096)] [--seed S] "
                        "[--vocab V (2..16777216; gpt models)]\n");
        return 2;
    }
    device *dev;
    char notice[256];
    model_spec spec;
    model *m = NULL;
    if (device_open("cpu", &dev, notice, sizeof notice) != SS_OK ||
        model_spec_parse(&spec, name, 1, 28, 28, 10) != SS_OK) {
        fprintf(stderr, "step_dump: %s\n", ss_error_message());
        return 2;
    }
    if (spec.arch == MODEL_ARCH_GPT) spec.classes = vocab;
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "step_dump: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    if (spec.arch == MODEL_ARCH_GPT) {
        int rc = dump_gpt(dev, &spec, name, out, batch, seed);
        device_close(dev);
        return rc;
    }
    if (model_create(dev, &spec, seed, batch, &m) != SS_OK) {
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
    int rc =
        write_raw(out, "params.f32", params, np * sizeof(float)) |
        write_raw(out, "grads.f32", grads, np * sizeof(float)) |
        write_raw(out, "buffers.f32", bufs, nb * sizeof(float)) |
        write_raw(out, "x.f32", x, d * (size_t)batch * sizeof(float)) |
        write_raw(out, "y.u8", y, (size_t)batch) |
        write_views(out, "views.txt", m, model_view_count(m), model_view_of) |
        write_views(out, "buffer_views.txt", m, model_buffer_view_count(m), model_buffer_view_of) |
        write_relus(out, dev, m, batch) | write_step(out, name, batch, seed, 0, loss);
    printf("step_dump: %s, batch %d, %zu parameters, %zu buffer values, loss %.9g -> %s\n", name,
           batch, np, nb, loss, out);
    free(params), free(grads), free(bufs), free(x), free(y);
    model_destroy(m);
    device_close(dev);
    return rc ? 1 : 0;
}
