/* syncsim train: one worker without simulation (emu/train_single.c), or N emulated workers
 * under a policy (emu/run.c); syncsim real: one MPI rank of a real run (emu/run.c). */
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "emu/run.h"

/* The runner of `kind` (0 single, 1 emulated, 2 real) on the resolved options. */
static int run_kind(const run_config *cfg, int kind, run_summary *sum, isolate_blob *curve) {
    run_request rq;
    outputs_request(CMD_TRAIN, cfg, kind == 0, &rq);
    int rc = kind == 0   ? run_train_single(&rq, sum)
             : kind == 1 ? run_train_emulated(&rq, sum, curve)
                         : run_train_real(&rq, sum);
    outputs_request_free(&rq);
    return rc;
}

int run_emulation(const run_config *cfg, run_summary *sum, isolate_blob *curve) {
    return run_kind(cfg, 1, sum, curve);
}

int cmd_train(const run_config *cfg) {
    /* One worker and no policy: real training without simulation. Anything else is emulated. */
    run_summary sum;
    return run_kind(cfg, !cfg->policy[0] && cfg->workers == 1 ? 0 : 1, &sum, NULL);
}

int cmd_real(const run_config *cfg) {
    run_summary sum;
    return run_kind(cfg, 2, &sum, NULL);
}
