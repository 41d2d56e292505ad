/* Seeded jitter: mean-1 lognormal factors drawn from a stream of their own per event, so that a
 * draw depends on the seed and the event only, never on the order in which the simulation
 * schedules the actors (the same seed gives the same run bit for bit).
 *
 *     double f = sim_jitter_lognormal(seed, sim_jitter_compute_stream(w, step), cv);
 *     double g = sim_jitter_lognormal(seed, sim_jitter_ps_stream(SIM_JITTER_TO_SERVER, k, w, r),
 *                                     cv);
 *
 * The factor is exp(sigma z - sigma^2 / 2), z standard normal, sigma^2 = ln(1 + cv^2): mean 1 and
 * coefficient of variation cv, always positive. Uses: --compute-jitter (a step's compute time,
 * sim/policy/policy_step.c) and --comm-jitter (the time a parameter-server message holds the
 * network, sim/net/ps.c). The published figures behind their defaults are in docs/JITTER.md.
 */
#ifndef SS_SIM_JITTER_H
#define SS_SIM_JITTER_H

#include <stdint.h>

/* Direction of a parameter-server message. */
enum sim_jitter_dir {
    SIM_JITTER_TO_SERVER = 0, /* a push shard, worker -> server */
    SIM_JITTER_TO_WORKER = 1  /* a pull reply, server -> worker */
};

/* The factor of the event `stream` under `seed`: 1 when cv <= 0. */
double sim_jitter_lognormal(uint64_t seed, uint64_t stream, double cv);
/* The stream of worker w's compute in `step` (step's low 32 bits). */
uint64_t sim_jitter_compute_stream(int w, long step);
/* The stream of one parameter-server message: direction, server, worker, round (the low 28
 * bits of the round, 16 of the worker, 11 of the server: distinct for every run syncsim
 * accepts up to 2^28 rounds). */
uint64_t sim_jitter_ps_stream(int dir, int server, int worker, int64_t round);

/* --compute-jitter auto: the coefficient of variation measured for the step of emulated model
 * `model` (--model: mlp[:W,..], cnn, logreg) in a real framework on a dedicated GPU, and the
 * figure of GPU-bound steps otherwise (sources in common/jitter.c). */
double sim_jitter_compute_default(const char *model);
/* "auto" (that default for `model`) or a CV from 0 to 1 into *cv; SS_EUSAGE naming `option`
 * and the valid forms otherwise. */
int sim_jitter_compute_parse(const char *option, const char *text, const char *model, double *cv);

#endif
