/* Model specifications: the --model forms, their parsing and defaults (see model.h). */
#include "kernels/model.h"

#include "common/number.h"
#include "common/status.h"
#include "kernels/gpt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const arch_names[] = {"logreg", "mlp", "cnn", "resnet", "vgg", "gpt"};
enum { ARCH_COUNT = sizeof arch_names / sizeof arch_names[0] };

static const char model_forms[] =
    "valid: logreg, mlp, mlp:W1,W2,... (hidden widths), cnn, cnn:C1,C2,D1,... (the two convs' "
    "channels, then hidden dense widths), cnn:lenet (LeNet-5 of NIID-Bench: 6, 16, 120, 84, "
    "unpadded), resnet:D or resnet:D,proj (CIFAR ResNet, D = 6n+2: 20, 32, 44, 56, 110; proj: "
    "projection shortcuts), vgg:D (CIFAR VGG with batch norm, D = 11, 13, 16, 19), gpt:L,D,H,T or "
    "gpt:L,D,H,T,P (a "
    "language model: L pre-norm layers of width D, H heads, T tokens a sequence, dropout P, 0.1 "
    "unless given), gpt:wlm (also gpt: the SelSync paper's Transformer, PyTorch's "
    "word_language_model: 2 layers, 200 wide, 2 heads, T 35, dropout 0.2)";

const char *model_spec_forms(void) {
    return model_forms;
}

int model_spec_has_buffers(const model_spec *spec) {
    return spec->arch == MODEL_ARCH_RESNET || spec->arch == MODEL_ARCH_VGG;
}

const char *model_arch_name(model_arch arch) {
    return (unsigned)arch < ARCH_COUNT ? arch_names[arch] : "unknown";
}

static void set_gpt(model_spec *spec, int layers, int dim, int heads, int seq, float dropout,
                    int ffn, int wlm) {
    spec->gpt_layers = layers, spec->gpt_dim = dim, spec->gpt_heads = heads;
    spec->gpt_seq = seq, spec->gpt_dropout = dropout, spec->gpt_ffn = ffn, spec->gpt_wlm = wlm;
    spec->in_c = 1, spec->in_h = 1, spec->in_w = seq + 1;
}

void model_spec_default(model_spec *spec, model_arch arch, int in_c, int in_h, int in_w,
                        int classes) {
    memset(spec, 0, sizeof *spec);
    spec->arch = arch;
    spec->in_c = in_c, spec->in_h = in_h, spec->in_w = in_w;
    spec->classes = classes;
    spec->n_hidden = 2;
    spec->hidden[0] = spec->hidden[1] = 256;
    spec->conv_channels[0] = 32;
    spec->conv_channels[1] = 64;
    spec->n_cnn_dense = 1;
    spec->cnn_dense[0] = 128;
    spec->depth = arch == MODEL_ARCH_VGG ? 11 : 20;
    spec->vgg_width = 64;
    if (arch == MODEL_ARCH_GPT) set_gpt(spec, 2, 200, 2, 35, 0.2f, 200, 1);
}

/* Comma-separated positive integers of p into out (at most max); SS_EUSAGE naming text. */
static int parse_widths(const char *text, const char *p, int *out, int max, int *count) {
    *count = 0;
    for (;;) {
        char *end;
        errno = 0;
        long w = strtol(p, &end, 10);
        if (end == p || errno || w < 1 || w > 1 << 20 || (*end && *end != ','))
            return ss_error_set(SS_EUSAGE, "model '%s': bad width at '%s' (%s)", text, p,
                                model_forms);
        if (*count == max)
            return ss_error_set(SS_EUSAGE, "model '%s': at most %d widths (%s)", text, max,
                                model_forms);
        out[(*count)++] = (int)w;
        if (!*end) return SS_OK;
        p = end + 1;
    }
}

static int parse_cnn(model_spec *spec, const char *text, const char *opts) {
    if (!strcmp(opts, "lenet")) {
        spec->conv_channels[0] = 6, spec->conv_channels[1] = 16;
        spec->n_cnn_dense = 2;
        spec->cnn_dense[0] = 120, spec->cnn_dense[1] = 84;
        spec->cnn_valid = 1;
        return SS_OK;
    }
    int w[MODEL_MAX_HIDDEN + 2], n;
    int rc = parse_widths(text, opts, w, MODEL_MAX_HIDDEN + 2, &n);
    if (rc != SS_OK) return rc;
    if (n < 3)
        return ss_error_set(SS_EUSAGE,
                            "model '%s': cnn takes two conv channels and at least one dense width "
                            "(%s)",
                            text, model_forms);
    spec->conv_channels[0] = w[0], spec->conv_channels[1] = w[1];
    spec->n_cnn_dense = n - 2;
    memcpy(spec->cnn_dense, w + 2, (size_t)(n - 2) * sizeof(int));
    return SS_OK;
}

/* gpt:wlm (or gpt:selsync), gpt:L,D,H,T[,P] */
static int parse_gpt(model_spec *spec, const char *text, const char *opts) {
    if (!strcmp(opts, "wlm") || !strcmp(opts, "selsync")) return SS_OK; /* the default */
    long v[5] = {0, 0, 0, 0, 0};
    int n = 0;
    const char *p = opts;
    char *end = NULL;
    double drop = 0.1;
    for (; n < 5; n++) {
        errno = 0;
        if (n == 4) {
            drop = strtod(p, &end);
        } else {
            v[n] = strtol(p, &end, 10);
            if (v[n] < 1 || v[n] > 1 << 16) break;
        }
        if (end == p || errno || (*end && *end != ',')) break;
        if (!*end) {
            n++;
            break;
        }
        p = end + 1;
    }
    if ((n != 4 && n != 5) || *end || v[1] % v[2] || v[0] > 64 || v[3] > 4096 || drop < 0 ||
        drop >= 1)
        return ss_error_set(SS_EUSAGE,
                            "model '%s': gpt takes L,D,H,T or L,D,H,T,P: layers (1 to 64), width "
                            "D divisible by the heads H, sequence length T (1 to 4096), dropout P "
                            "in [0, 1); or gpt:wlm (%s)",
                            text, model_forms);
    set_gpt(spec, (int)v[0], (int)v[1], (int)v[2], (int)v[3], (float)drop, 4 * (int)v[1], 0);
    return SS_OK;
}

static int parse_resnet(model_spec *spec, const char *text, const char *opts) {
    char *end;
    errno = 0;
    long d = strtol(opts, &end, 10);
    if (end == opts || errno || d < 8 || d > 1000 || (d - 2) % 6 || (*end && strcmp(end, ",proj")))
        return ss_error_set(SS_EUSAGE, "model '%s': bad resnet depth or option at '%s' (%s)", text,
                            opts, model_forms);
    spec->depth = (int)d;
    spec->resnet_proj = *end != '\0';
    return SS_OK;
}

/* Convolutions in each of the five stages of VGG-D, or NULL for another depth. */
const int *model_vgg_stage_convs(int depth) {
    static const int a[5] = {1, 1, 2, 2, 2}, b[5] = {2, 2, 2, 2, 2}, d[5] = {2, 2, 3, 3, 3},
                     e[5] = {2, 2, 4, 4, 4};
    return depth == 11 ? a : depth == 13 ? b : depth == 16 ? d : depth == 19 ? e : NULL;
}

static int parse_vgg(model_spec *spec, const char *text, const char *opts) {
    char *end;
    errno = 0;
    long d = strtol(opts, &end, 10);
    if (end == opts || errno || *end || d > 19 || !model_vgg_stage_convs((int)d))
        return ss_error_set(SS_EUSAGE, "model '%s': bad vgg depth at '%s' (%s)", text, opts,
                            model_forms);
    spec->depth = (int)d;
    return SS_OK;
}

int model_spec_parse(model_spec *spec, const char *text, int in_c, int in_h, int in_w,
                     int classes) {
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    for (int a = 0; a < ARCH_COUNT; a++) {
        if (strlen(arch_names[a]) != name_len || strncmp(text, arch_names[a], name_len)) continue;
        model_spec_default(spec, (model_arch)a, in_c, in_h, in_w, classes);
        if (!colon) return SS_OK;
        const char *opts = colon + 1;
        if (a == MODEL_ARCH_MLP)
            return parse_widths(text, opts, spec->hidden, MODEL_MAX_HIDDEN, &spec->n_hidden);
        if (a == MODEL_ARCH_CNN) return parse_cnn(spec, text, opts);
        if (a == MODEL_ARCH_RESNET) return parse_resnet(spec, text, opts);
        if (a == MODEL_ARCH_VGG) return parse_vgg(spec, text, opts);
        if (a == MODEL_ARCH_GPT) return parse_gpt(spec, text, opts);
        return ss_error_set(SS_EUSAGE, "model '%s' takes no options (%s)", text, model_forms);
    }
    return ss_error_set(SS_EUSAGE, "unknown model '%s' (%s)", text, model_forms);
}

/* The spec's shapes: SS_OK, or SS_EUSAGE naming what is wrong. */
int model_spec_check(const model_spec *spec, int max_batch) {
    if (spec->arch == MODEL_ARCH_GPT)
        return max_batch < 1 ? ss_error_set(SS_EUSAGE, "model: max batch %d", max_batch)
                             : gpt_spec_check(spec);
    if (spec->in_c < 1 || spec->in_h < 1 || spec->in_w < 1 || spec->classes < 2 ||
        spec->classes > 256 || max_batch < 1)
        return ss_error_set(SS_EUSAGE,
                            "model: bad shape (input %dx%dx%d, %d classes, max batch %d)",
                            spec->in_c, spec->in_h, spec->in_w, spec->classes, max_batch);
    if (spec->arch == MODEL_ARCH_MLP) {
        if (spec->n_hidden < 0 || spec->n_hidden > MODEL_MAX_HIDDEN)
            return ss_error_set(SS_EUSAGE, "mlp: %d hidden layers (at most %d)", spec->n_hidden,
                                MODEL_MAX_HIDDEN);
        for (int i = 0; i < spec->n_hidden; i++)
            if (spec->hidden[i] < 1)
                return ss_error_set(SS_EUSAGE, "mlp: hidden width %d must be positive",
                                    spec->hidden[i]);
    }
    if (spec->arch == MODEL_ARCH_CNN) {
        if (spec->conv_channels[0] < 1 || spec->conv_channels[1] < 1 || spec->n_cnn_dense < 1 ||
            spec->n_cnn_dense > MODEL_MAX_HIDDEN)
            return ss_error_set(SS_EUSAGE,
                                "cnn: channels %d, %d must be positive, with 1 to %d dense layers",
                                spec->conv_channels[0], spec->conv_channels[1], MODEL_MAX_HIDDEN);
        for (int i = 0; i < spec->n_cnn_dense; i++)
            if (spec->cnn_dense[i] < 1)
                return ss_error_set(SS_EUSAGE, "cnn: dense width %d must be positive",
                                    spec->cnn_dense[i]);
    }
    if (spec->arch == MODEL_ARCH_RESNET &&
        (spec->depth < 8 || (spec->depth - 2) % 6 || spec->depth > 1000))
        return ss_error_set(SS_EUSAGE, "resnet: depth %d is not 6n + 2 (20, 32, 44, 56, 110)",
                            spec->depth);
    if (spec->arch == MODEL_ARCH_VGG &&
        (!model_vgg_stage_convs(spec->depth) || spec->vgg_width < 1 || spec->vgg_width > 4096))
        return ss_error_set(SS_EUSAGE, "vgg: depth %d (11, 13, 16 or 19), width %d", spec->depth,
                            spec->vgg_width);
    return SS_OK;
}
