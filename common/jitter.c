/* Seeded mean-1 lognormal jitter factors (common/jitter.h). */
#include "common/jitter.h"

#include "common/number.h"
#include "common/rng.h"
#include "common/status.h"

#include <math.h>
#include <string.h>

/* Stream spaces, in the top byte: apart from the rng_stream numbers (common/rng.h), which stay
 * below 2^24, and from each other. */
#define JITTER_STREAM_COMPUTE ((uint64_t)6 << 56)
#define JITTER_STREAM_PS      ((uint64_t)7 << 56)

double sim_jitter_lognormal(uint64_t seed, uint64_t stream, double cv) {
    if (!(cv > 0)) return 1.0;
    rng r;
    rng_seed(&r, seed, stream);
    const double s2 = log1p(cv * cv);
    return exp(sqrt(s2) * rng_normal(&r) - 0.5 * s2);
}

uint64_t sim_jitter_compute_stream(int w, long step) {
    return JITTER_STREAM_COMPUTE | ((uint64_t)w << 32) | (uint64_t)(uint32_t)step;
}

uint64_t sim_jitter_ps_stream(int dir, int server, int worker, int64_t round) {
    return JITTER_STREAM_PS | ((uint64_t)(dir & 1) << 55) | ((uint64_t)(server & 0x7ff) << 44) |
           ((uint64_t)(worker & 0xffff) << 28) | ((uint64_t)round & 0xfffffff);
}

/* Step-time spread measured on one dedicated H100 80GB HBM3 (PyTorch, each of 300 steps timed
 * alone: bench/torch_layers.py --tables jitter, traces/reference/compute/h100-jitter.csv):
 * syncsim's mlp at batch 64, 0.30812 (steps of 2.1 ms, bound by the host: eager PyTorch launches
 * every kernel from Python); its cnn at batch 64, 0.27236 (2.6 ms). logreg was not measured: a
 * smaller step bound by the host likewise, it takes the mlp's. GPU-bound steps vary far less:
 * ResNet-50 at batch 128 0.0011 (fp32) and 0.0019 (tf32) there, and 0.0018 and 0.0022 in the
 * published tf_cnn_benchmarks logs (docs/JITTER.md): 0.002. */
#define JITTER_MLP       0.30812
#define JITTER_CNN       0.27236
#define JITTER_GPU_BOUND 0.002

double sim_jitter_compute_default(const char *model) {
    if (!model) return JITTER_GPU_BOUND;
    if (!strncmp(model, "cnn", 3)) return JITTER_CNN;
    if (!strncmp(model, "mlp", 3) || !strncmp(model, "logreg", 6)) return JITTER_MLP;
    return JITTER_GPU_BOUND;
}

int sim_jitter_compute_parse(const char *option, const char *text, const char *model, double *cv) {
    if (!strcmp(text, "auto")) {
        *cv = sim_jitter_compute_default(model);
        return SS_OK;
    }
    if (number_parse_double(text, cv) || !(*cv >= 0 && *cv <= 1))
        return ss_error_set(SS_EUSAGE,
                            "%s '%s': expected auto (the CV measured for the model's step: mlp "
                            "and logreg %g, cnn %g) or a coefficient of variation from 0 to 1",
                            option, text, JITTER_MLP, JITTER_CNN);
    return SS_OK;
}
