/* Compute time of a step (see compute.h). */
#include "sim/compute/compute.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/number.h"
#include "common/status.h"

int sim_compute_parse(const char *option, const char *text, sim_compute_cfg *out) {
    SS_ASSERT(out != NULL);
    const char *valid =
        "valid: model, model:PRECISION, flops, measured, measured:SCALE with SCALE > 0, trace";
    if (!text) return ss_error_set(SS_EUSAGE, "%s: missing value (%s)", option, valid);
    if (strcmp(text, "flops") == 0) {
        *out = (sim_compute_cfg){.mode = SIM_COMPUTE_FLOPS, .scale = 1.0};
        return SS_OK;
    }
    if (strcmp(text, "trace") == 0) {
        *out = (sim_compute_cfg){.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
        return SS_OK;
    }
    if (strncmp(text, "model", 5) == 0 && (text[5] == '\0' || text[5] == ':')) {
        *out = (sim_compute_cfg){.mode = SIM_COMPUTE_MODEL, .scale = 1.0};
        if (text[5] == ':') return sim_precision_parse(option, text + 6, &out->precision);
        return SS_OK;
    }
    if (strncmp(text, "measured", 8) == 0) {
        double scale = 1.0;
        if (text[8] == ':') {
            if (number_parse_double(text + 9, &scale) != 0 || !(scale > 0))
                return ss_error_set(SS_EUSAGE, "%s: bad scale in '%s' (%s)", option, text, valid);
        } else if (text[8] != '\0') {
            return ss_error_set(SS_EUSAGE, "%s: unknown compute mode '%s' (%s)", option, text,
                                valid);
        }
        *out = (sim_compute_cfg){.mode = SIM_COMPUTE_MEASURED, .scale = scale};
        return SS_OK;
    }
    return ss_error_set(SS_EUSAGE, "%s: unknown compute mode '%s' (%s)", option, text, valid);
}

void sim_compute_format(const sim_compute_cfg *cfg, char *buf, unsigned long buf_bytes) {
    switch (cfg->mode) {
    case SIM_COMPUTE_FLOPS:
        snprintf(buf, buf_bytes, "flops");
        break;
    case SIM_COMPUTE_TRACE:
        snprintf(buf, buf_bytes, "trace");
        break;
    case SIM_COMPUTE_MODEL:
        if (cfg->precision == SIM_PRECISION_FP32)
            snprintf(buf, buf_bytes, "model");
        else
            snprintf(buf, buf_bytes, "model:%s", sim_precision_name(cfg->precision));
        break;
    case SIM_COMPUTE_MEASURED:
        if (cfg->scale == 1.0)
            snprintf(buf, buf_bytes, "measured");
        else
            snprintf(buf, buf_bytes, "measured:%.17g", cfg->scale);
        break;
    default:
        snprintf(buf, buf_bytes, "?");
        break;
    }
}

static double slowdown_of(const sim_step_cost *cost) {
    return cost->slowdown > 0 ? cost->slowdown : 1.0;
}

double sim_compute_duration_s(const sim_compute_cfg *cfg, const sim_step_cost *cost,
                              const sim_compute_host *host) {
    SS_ASSERT(cfg != NULL && cost != NULL);
    double s;
    switch (cfg->mode) {
    case SIM_COMPUTE_FLOPS:
        s = cost->flops / host->speed_flops;
        break;
    case SIM_COMPUTE_MEASURED:
        s = cost->measured_s * cfg->scale;
        break;
    case SIM_COMPUTE_MODEL:
        if (cfg->framework == SIM_FRAMEWORK_IDEAL) {
            s = cfg->scale * sim_compute_layers_on(
                                 cfg->gpu ? cfg->gpu : sim_compute_host_class(host), cfg->precision,
                                 cost->layers, cost->n_layers, NULL, NULL, NULL);
        } else {
            s = 0;
            sim_compute_step_s(cfg, host, cost->layers, cost->n_layers, &s);
        }
        break;
    default:
        s = cost->trace_s;
        break;
    }
    return s * slowdown_of(cost);
}

int sim_compute_charge(const sim_compute_cfg *cfg, const sim_step_cost *cost,
                       const sim_compute_host *host, double *flops, double *seconds) {
    SS_ASSERT(cfg != NULL && cost != NULL && host != NULL);
    if (cfg->mode == SIM_COMPUTE_MODEL && (!cost->layers || cost->n_layers < 1))
        return ss_error_set(SS_EUSAGE, "--compute model: the step source gives no per-layer "
                                       "data (use --compute flops)");
    double v = cfg->mode == SIM_COMPUTE_FLOPS      ? cost->flops
               : cfg->mode == SIM_COMPUTE_MEASURED ? cost->measured_s
               : cfg->mode == SIM_COMPUTE_MODEL    ? 0
                                                   : cost->trace_s;
    if (!(v >= 0) || !isfinite(v) || !(cost->slowdown >= 0) || !isfinite(cost->slowdown))
        return ss_error_set(SS_EUSAGE,
                            "compute: step cost %g (slowdown %g) must be finite and >= 0", v,
                            cost->slowdown);
    *flops = cfg->mode == SIM_COMPUTE_FLOPS ? v * slowdown_of(cost) : 0;
    *seconds = cfg->mode == SIM_COMPUTE_FLOPS ? 0 : sim_compute_duration_s(cfg, cost, host);
    return SS_OK;
}

/* ---- the per-layer model ---- */

/* Updating the parameters with SGD and momentum in fp32 (master weights under mixed
 * precision): read w, g, m and write w, m, 20 bytes a parameter, one fused kernel (PyTorch's
 * fused SGD: 22.2 bytes a parameter at the copy bandwidth, [PARAMS] below). */
#define OPTIMIZER_BYTES_PER_PARAM_BYTE 5.0

/* [INPUT] The first layer's convolution reads the input image (3 channels, 1 for the emulated
 * grey-scale sets) in NCHW. Under TF32 cuDNN transposes it to NHWC and runs a tensor-core kernel
 * made for few channels (bench/torch_step_parts.py's alexnet table: nchwToNhwc and an
 * implicit_gemm_indexed_wo_smem kernel), and the layer takes about its FP32 time: ResNet-50's,
 * ResNet-101's and VGG-16's first convolutions took 0.87, 0.87 and 1.00 times their fp32 time
 * (forward and backward, batch 128, h100-layers.csv; ResNet-50 on the H200: 0.84). The model runs
 * a first-layer convolution at fp32 where the precision would give it tf32. */

/* [PARAMS] The per-parameter kernels of a training step beside the layers' own, in bytes moved
 * per byte of fp32 gradient (4 a parameter), counted from the kernels PyTorch runs and checked
 * with bench/torch_step_parts.py's params table (one H100 80GB HBM3, PyTorch 2.11.0, 10 tensors
 * of 10 M floats, GPU time per parameter against the copy bandwidth measured in the same run:
 * traces/reference/compute/h100-step-parts.csv):
 * - mixed precision (fp16, bf16; autocast): each product's fp32 weight cast to 16 bits in the
 *   forward pass (read 4, write 2 bytes: 1.5; measured 6.8 bytes) and its 16-bit gradient cast
 *   back in the backward (the same; measured 10.1), and the gradient scaler's unscale of every
 *   gradient before the update (read and write 4: 2; measured 9.2);
 * - eager (framework.h): zero_grad(set_to_none=False) fills every gradient with zeros (write 4:
 *   1; measured 4.4), the backward pass adds each new gradient into the kept one (read 8, write
 *   4: 3; measured 13.3: AccumulateGrad, torch._foreach_add_), and SGD with momentum and weight
 *   decay in its foreach form runs four passes (grad + wd x w: 12 bytes; m x momentum: 8;
 *   m + grad: 12; w - lr x m: 12; 44 bytes: 11; measured 49.2) where the fused update moves 20. */
#define AMP_CAST_BYTES_PER_PARAM_BYTE      1.5
#define AMP_UNSCALE_BYTES_PER_PARAM_BYTE   2.0
#define EAGER_ZERO_BYTES_PER_PARAM_BYTE    1.0
#define EAGER_ACCUM_BYTES_PER_PARAM_BYTE   3.0
#define EAGER_FOREACH_BYTES_PER_PARAM_BYTE 11.0

static double pass_s(double flops, double bytes, int kernels, double rate, double bw,
                     double launch_s) {
    double t = flops / rate, m = bytes / bw;
    return (t > m ? t : m) + launch_s * kernels;
}

sim_precision sim_compute_layer_precision(const gpu_class *g, sim_precision p, sim_layer_kind k) {
    if (p == SIM_PRECISION_PYTORCH)
        p = k == SIM_LAYER_CONV ? SIM_PRECISION_TF32 : SIM_PRECISION_FP32;
    return gpu_class_effective_precision(g, p);
}

double sim_compute_layers_on(const gpu_class *g, sim_precision p, const sim_layer_cost *layers,
                             int n, double *fwd_s, double *bwd_s, double *optimizer_s) {
    const double bw = gpu_class_achieved_bw_Bps(g), norm_bw = gpu_class_norm_bw_Bps(g);
    /* activations move at the precision's element size; weights are read in it too (pytorch:
     * fp32 storage throughout) */
    const double act = sim_precision_element_bytes(gpu_class_effective_precision(g, p)) / 4.0;
    /* mixed precision: autocast's casts of each product's weight and gradient ([PARAMS]) */
    const double cast = act < 1 ? AMP_CAST_BYTES_PER_PARAM_BYTE : 0;
    double total = 0, params = 0;
    for (int i = 0; i < n; i++) {
        const sim_layer_cost *l = &layers[i];
        /* [INPUT] the convolution of the network's input (its first layer: 1 to 3 channels)
         * gains nothing from TF32 */
        const sim_precision e0 = sim_compute_layer_precision(g, p, l->kind);
        const sim_precision e = i == 0 && l->kind == SIM_LAYER_CONV && e0 == SIM_PRECISION_TF32
                                    ? SIM_PRECISION_FP32
                                    : e0;
        const double rate = gpu_class_achieved_flops(g, e);
        /* a matrix product reaches a share of the rate that depends on its shape; the backward
         * products (data and weight gradients) have the same N and K, exchanged */
        const double r = sim_layer_is_product(l->kind)
                             ? rate * gpu_class_matmul_efficiency(g, e, l->gemm_n, l->gemm_k)
                             : rate;
        const double b_w = l->kind == SIM_LAYER_NORM ? norm_bw : bw;
        double f, b;
        const double pool_f = l->kind == SIM_LAYER_MAXPOOL ? gpu_class_maxpool_bw_Bps(g, e, 0) : 0;
        if (pool_f > 0) { /* [MAXPOOL] its measured rate over its fp32 bytes */
            f = pass_s(l->fwd_flops, l->fwd_bytes, l->kernels, r, pool_f, g->launch_s);
            b = pass_s(l->bwd_flops, l->bwd_bytes, l->kernels, r, gpu_class_maxpool_bw_Bps(g, e, 1),
                       g->launch_s);
        } else {
            f = pass_s(l->fwd_flops, l->fwd_bytes * act + l->param_bytes * act, l->kernels, r, b_w,
                       g->launch_s);
            b = pass_s(l->bwd_flops, l->bwd_bytes * act + 2 * l->param_bytes * act, l->kernels, r,
                       b_w, g->launch_s);
        }
        if (cast > 0 && sim_layer_is_product(l->kind) && l->param_bytes > 0) {
            f += l->param_bytes * cast / bw + g->launch_s;
            b += l->param_bytes * cast / bw + g->launch_s;
        }
        if (fwd_s) fwd_s[i] = f;
        if (bwd_s) bwd_s[i] = b;
        total += f + b;
        params += l->param_bytes;
    }
    double opt = params > 0 ? params * OPTIMIZER_BYTES_PER_PARAM_BYTE / bw + g->launch_s : 0;
    if (cast > 0 && params > 0) opt += params * AMP_UNSCALE_BYTES_PER_PARAM_BYTE / bw + g->launch_s;
    if (optimizer_s) *optimizer_s = opt;
    return total + opt;
}

static int layers_valid(const sim_layer_cost *layers, int n) {
    for (int i = 0; i < n; i++) {
        const sim_layer_cost *l = &layers[i];
        const double v[9] = {l->fwd_flops, l->bwd_flops, l->fwd_bytes, l->bwd_bytes, l->param_bytes,
                             l->gemm_n,    l->gemm_k,    l->fwd_s,     l->bwd_s};
        for (int k = 0; k < 9; k++)
            if (!(v[k] >= 0) || !isfinite(v[k])) return 0;
        if (l->kernels < 0 || (unsigned)l->kind >= SIM_LAYER_KIND_COUNT) return 0;
    }
    return 1;
}

/* Eager PyTorch's per-parameter kernels beside the fused update ([PARAMS]): the zero fill at the
 * step's start (before the first layer's forward), each layer's gradient added into its kept
 * one in its backward, the foreach update's passes instead of the fused one's. */
static void eager_param_kernels(const gpu_class *g, const sim_layer_cost *layers, int n,
                                double *fwd_s, double *bwd_s, double *optimizer_s) {
    const double bw = gpu_class_achieved_bw_Bps(g);
    double params = 0;
    for (int i = 0; i < n; i++) {
        if (!(layers[i].param_bytes > 0)) continue;
        params += layers[i].param_bytes;
        bwd_s[i] += layers[i].param_bytes * EAGER_ACCUM_BYTES_PER_PARAM_BYTE / bw + g->launch_s;
    }
    if (!(params > 0)) return;
    fwd_s[0] += params * EAGER_ZERO_BYTES_PER_PARAM_BYTE / bw + g->launch_s;
    *optimizer_s +=
        params * (EAGER_FOREACH_BYTES_PER_PARAM_BYTE - OPTIMIZER_BYTES_PER_PARAM_BYTE) / bw +
        3 * g->launch_s;
}

int sim_compute_step_s(const sim_compute_cfg *cfg, const sim_compute_host *host,
                       const sim_layer_cost *layers, int n, double *step_s) {
    double stack[2 * 256], *buf = n <= 256 ? stack : ss_malloc(2 * (size_t)n * sizeof(double));
    double opt = 0;
    int rc = sim_compute_layers(cfg, host, layers, n, buf, buf + n, &opt);
    double s = opt;
    for (int i = 0; rc == SS_OK && i < n; i++)
        s += buf[i] + buf[n + i];
    if (buf != stack) free(buf);
    if (rc == SS_OK) *step_s = s;
    return rc;
}

int sim_compute_layers(const sim_compute_cfg *cfg, const sim_compute_host *host,
                       const sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                       double *optimizer_s) {
    SS_ASSERT(cfg != NULL && host != NULL);
    if (!layers || n < 1 || !layers_valid(layers, n))
        return ss_error_set(SS_EUSAGE, "compute: %d layers, or a negative or non-finite count", n);
    if (cfg->mode != SIM_COMPUTE_MODEL) {
        /* the other modes time a step by its FLOPs on the host's speed: each layer by its own,
         * so the layers add up to that step; they count no update FLOPs */
        const double speed = host->speed_flops;
        int measured = 0; /* a measured profile's layers: their measured seconds */
        for (int i = 0; i < n && !measured; i++)
            measured = layers[i].fwd_s > 0 || layers[i].bwd_s > 0;
        for (int i = 0; i < n; i++) {
            if (fwd_s) fwd_s[i] = measured ? layers[i].fwd_s : layers[i].fwd_flops / speed;
            if (bwd_s) bwd_s[i] = measured ? layers[i].bwd_s : layers[i].bwd_flops / speed;
        }
        if (optimizer_s) *optimizer_s = 0;
        return SS_OK;
    }
    const gpu_class *g = cfg->gpu ? cfg->gpu : sim_compute_host_class(host);
    if (cfg->framework != SIM_FRAMEWORK_IDEAL && (!fwd_s || !bwd_s || !optimizer_s)) {
        /* the timelines need every part: through a buffer of the caller's missing ones */
        double *f = fwd_s ? fwd_s : ss_malloc((size_t)n * sizeof(double));
        double *b = bwd_s ? bwd_s : ss_malloc((size_t)n * sizeof(double));
        double o = 0;
        int rc = sim_compute_layers(cfg, host, layers, n, f, b, &o);
        if (optimizer_s) *optimizer_s = o;
        if (f != fwd_s) free(f);
        if (b != bwd_s) free(b);
        return rc;
    }
    sim_compute_layers_on(g, cfg->precision, layers, n, fwd_s, bwd_s, optimizer_s);
    if (cfg->framework == SIM_FRAMEWORK_EAGER)
        eager_param_kernels(g, layers, n, fwd_s, bwd_s, optimizer_s);
    for (int i = 0; cfg->scale != 1.0 && i < n; i++) {
        if (fwd_s) fwd_s[i] *= cfg->scale;
        if (bwd_s) bwd_s[i] *= cfg->scale;
    }
    if (optimizer_s && cfg->scale != 1.0) *optimizer_s *= cfg->scale;
    if (cfg->framework != SIM_FRAMEWORK_IDEAL)
        sim_framework_step(cfg->framework, cfg->host_sync, g->launch_s * cfg->scale, layers, n,
                           fwd_s, bwd_s, optimizer_s);
    return SS_OK;
}

const gpu_class *sim_compute_host_class(const sim_compute_host *host) {
    if (host->gpu) return host->gpu;
    /* no (known) class: the one whose FP32 peak is nearest the host's speed */
    const gpu_class *g = NULL;
    double best = INFINITY;
    for (int i = 0; i < gpu_table_count(); i++) {
        double d = fabs(gpu_table_at(i)->peak_flops[SIM_PRECISION_FP32] - host->speed_flops);
        if (d < best) {
            best = d;
            g = gpu_table_at(i);
        }
    }
    return g;
}
