/* Seeded mean-1 lognormal jitter factors (sim/jitter.h). */
#include "sim/jitter.h"

#include "common/rng.h"

#include <math.h>

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
