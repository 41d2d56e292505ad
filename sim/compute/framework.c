/* The framework's host timeline beside the device's (framework.h).
 *
 * [HOST] The host costs of eager PyTorch 2.11.0 (CUDA 13.0) on one H100 80GB HBM3 with a 16-core
 * host, bench/torch_host.py, 2026-11-26 (traces/reference/compute/h100-host.csv, README.md next
 * to it). Operations repeated in a tight loop cost 1.6 to 2.7 times less than in a real step, so
 * the per-layer costs come from 24 random sequences of 24 near-empty layers of six kinds (a
 * (2, 4, 8, 8) activation; their proportions drawn per sequence), closed by flatten, a dense layer
 * and the cross-entropy loss: least squares of each sequence's forward and backward host time on
 * its counts of each kind (run 4, "mix_" rows; residuals 123 and 225 us on 0.5 to 2.2 ms). The
 * sequences all have 24 layers, so the regression leaves one common constant undetermined; it is
 * fixed by the costs measured directly: the forward's fixed cost and the loss (26.1 + 22.2 us,
 * run 3) and the backward through the loss alone, its fixed cost included (156.9 us, run 3).
 * Per layer (forward, backward), in us: dense 34.3, 83.7; convolution 36.4, 60.9; batch norm
 * 41.6, 81.0; ReLU 31.1, 13.4; max pool 42.0, 8.9; residual add 4.8, 19.0 (the model's other
 * layers take the mean of the last three: 25.9, 13.8). zero_grad(set_to_none=False): 75.0 us and
 * 5.18 us per parameter tensor; SGD with momentum and weight decay (foreach): 261.1 us and 3.01 us
 * per tensor (the same regression over the sequences' 6 to 36 tensors). A scalar read back
 * (.item()): 18.3 us (median of three runs). A kernel of a CUDA graph: 0.99 us of GPU time
 * (graph_kernel_us, three runs 0.98 to 0.99).
 * None of these was fitted on the whole steps they are checked against (tests/test_compute.c,
 * docs/COMPUTE.md). */
#include "sim/compute/framework.h"

#include "common/status.h"
#include "sim/compute/compute.h"

#include <string.h>

#define US 1e-6
/* by kind (sim_layer_kind): other, dense, norm, conv; max pooling is measured among the others */
static const double host_fwd_s[SIM_LAYER_KIND_COUNT] = {25.9 * US, 34.3 * US, 41.6 * US, 36.4 * US,
                                                        25.9 * US};
static const double host_bwd_s[SIM_LAYER_KIND_COUNT] = {13.8 * US, 83.7 * US, 81.0 * US, 60.9 * US,
                                                        13.8 * US};
#define HOST_FWD_PASS_S    (48.3 * US)  /* forward's fixed cost and the loss */
#define HOST_BWD_PASS_S    (156.9 * US) /* backward's fixed cost through the loss */
#define HOST_ZERO_GRAD_S   (75.0 * US)
#define HOST_ZERO_TENSOR_S (5.18 * US)
#define HOST_OPT_S         (261.1 * US)
#define HOST_OPT_TENSOR_S  (3.01 * US)
#define HOST_SYNC_S        (18.3 * US)
#define GRAPH_KERNEL_S     (0.99 * US)

int sim_framework_parse(const char *option, const char *text, sim_framework *out) {
    static const char *const names[] = {"ideal", "eager", "graphs"};
    for (int i = 0; text && i < 3; i++)
        if (strcmp(text, names[i]) == 0) {
            *out = (sim_framework)i;
            return SS_OK;
        }
    return ss_error_set(SS_EUSAGE, "%s: unknown framework '%s' (valid: eager, graphs, ideal)",
                        option, text ? text : "");
}

const char *sim_framework_name(sim_framework f) {
    return f == SIM_FRAMEWORK_EAGER ? "eager" : f == SIM_FRAMEWORK_GRAPHS ? "graphs" : "ideal";
}

/* Parameter tensors of a layer, as PyTorch holds them: weight and bias of a dense layer and of a
 * batch norm, a convolution's weight (the CIFAR ResNets' and VGG's have no bias). */
static int layer_tensors(const sim_layer_cost *l) {
    if (!(l->param_bytes > 0)) return 0;
    return l->kind == SIM_LAYER_MATMUL || l->kind == SIM_LAYER_NORM ? 2 : 1;
}

static int step_tensors(const sim_layer_cost *layers, int n) {
    int t = 0;
    for (int i = 0; i < n; i++)
        t += layer_tensors(&layers[i]);
    return t;
}

/* A part of the step that the host issues in host_s and the device runs in dev_s over kernels
 * kernels: it ends when the device has finished the part before it and run this one, and no
 * sooner than its last kernel after the host issued it. Returns the part's share. */
static double part(double *host, double *end, double host_s, double dev_s, int kernels) {
    *host += host_s;
    const double last = dev_s / (kernels > 0 ? kernels : 1);
    double e = *end + dev_s;
    if (*host + last > e) e = *host + last;
    const double share = e - *end;
    *end = e;
    return share;
}

double sim_framework_step(sim_framework fw, int host_sync, double launch_s,
                          const sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                          double *optimizer_s) {
    SS_ASSERT(layers != NULL && fwd_s != NULL && bwd_s != NULL && optimizer_s != NULL);
    double total = 0;
    if (fw == SIM_FRAMEWORK_GRAPHS) {
        /* one graph launch a step; each kernel at a graph's cost instead of a launch's */
        const double d = launch_s > GRAPH_KERNEL_S ? launch_s - GRAPH_KERNEL_S : 0;
        for (int i = 0; i < n; i++) {
            const double k = layers[i].kernels;
            fwd_s[i] = fwd_s[i] > k * d ? fwd_s[i] - k * d : 0;
            bwd_s[i] = bwd_s[i] > k * d ? bwd_s[i] - k * d : 0;
            total += fwd_s[i] + bwd_s[i];
        }
        if (*optimizer_s > d) *optimizer_s -= d;
        if (host_sync) *optimizer_s += HOST_SYNC_S;
        return total + *optimizer_s;
    }
    if (fw != SIM_FRAMEWORK_EAGER) {
        for (int i = 0; i < n; i++)
            total += fwd_s[i] + bwd_s[i];
        return total + *optimizer_s;
    }
    const int tensors = step_tensors(layers, n);
    double host = HOST_ZERO_GRAD_S + HOST_ZERO_TENSOR_S * tensors + HOST_FWD_PASS_S, end = 0;
    for (int i = 0; i < n; i++)
        fwd_s[i] = part(&host, &end, host_fwd_s[layers[i].kind], fwd_s[i], layers[i].kernels);
    host += HOST_BWD_PASS_S;
    for (int i = n - 1; i >= 0; i--)
        bwd_s[i] = part(&host, &end, host_bwd_s[layers[i].kind], bwd_s[i], layers[i].kernels);
    *optimizer_s =
        part(&host, &end, HOST_OPT_S + HOST_OPT_TENSOR_S * tensors, *optimizer_s, tensors);
    if (host_sync) *optimizer_s += HOST_SYNC_S;
    return end + (host_sync ? HOST_SYNC_S : 0);
}

double sim_framework_host_s(sim_framework fw, int host_sync, const sim_layer_cost *layers, int n) {
    if (fw != SIM_FRAMEWORK_EAGER) return 0;
    const int tensors = step_tensors(layers, n);
    double h = HOST_ZERO_GRAD_S + HOST_ZERO_TENSOR_S * tensors + HOST_FWD_PASS_S + HOST_BWD_PASS_S +
               HOST_OPT_S + HOST_OPT_TENSOR_S * tensors;
    for (int i = 0; i < n; i++)
        h += host_fwd_s[layers[i].kind] + host_bwd_s[layers[i].kind];
    return h + (host_sync ? HOST_SYNC_S : 0);
}
