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
 * precision): read w, g, m and write w, m, 20 bytes a parameter, one fused kernel. */
#define OPTIMIZER_BYTES_PER_PARAM_BYTE 5.0

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
    double total = 0, params = 0;
    for (int i = 0; i < n; i++) {
        const sim_layer_cost *l = &layers[i];
        const sim_precision e = sim_compute_layer_precision(g, p, l->kind);
        const double rate = gpu_class_achieved_flops(g, e);
        /* a matrix product reaches a share of the rate that depends on its shape; the backward
         * products (data and weight gradients) have the same N and K, exchanged */
        const double r = sim_layer_is_product(l->kind)
                             ? rate * gpu_class_matmul_efficiency(g, e, l->gemm_n, l->gemm_k)
                             : rate;
        const double b_w = l->kind == SIM_LAYER_NORM ? norm_bw : bw;
        double f = pass_s(l->fwd_flops, l->fwd_bytes * act + l->param_bytes * act, l->kernels, r,
                          b_w, g->launch_s);
        double b = pass_s(l->bwd_flops, l->bwd_bytes * act + 2 * l->param_bytes * act, l->kernels,
                          r, b_w, g->launch_s);
        if (fwd_s) fwd_s[i] = f;
        if (bwd_s) bwd_s[i] = b;
        total += f + b;
        params += l->param_bytes;
    }
    double opt = params > 0 ? params * OPTIMIZER_BYTES_PER_PARAM_BYTE / bw + g->launch_s : 0;
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
        if (l->kernels < 0 || (unsigned)l->kind > SIM_LAYER_CONV) return 0;
    }
    return 1;
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
