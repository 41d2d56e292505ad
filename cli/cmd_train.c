/* syncsim train: one worker without simulation (emu/train_single.c), or N emulated workers
 * under a policy (emu/run.c); syncsim real: one MPI rank of a real run (emu/run.c). */
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "emu/run.h"

int cmd_train_single(const run_config *cfg) {
    run_request rq;
    outputs_request(CMD_TRAIN, cfg, 1, &rq);
    run_summary sum;
    int rc = run_train_single(&rq, &sum);
    outputs_request_free(&rq);
    return rc;
}

int run_emulation(const run_config *cfg, run_summary *sum, sim_blob *curve) {
    run_request rq;
    outputs_request(CMD_TRAIN, cfg, 0, &rq);
    int rc = run_train_emulated(&rq, sum, curve);
    outputs_request_free(&rq);
    return rc;
}

int cmd_train(const run_config *cfg) {
    /* One worker and no policy: real training without simulation. Anything else is emulated. */
    if (!cfg->policy[0] && cfg->workers == 1) return cmd_train_single(cfg);
    run_summary sum;
    return run_emulation(cfg, &sum, NULL);
}

int cmd_real(const run_config *cfg) {
    run_request rq;
    outputs_request(CMD_TRAIN, cfg, 0, &rq);
    run_summary sum;
    int rc = run_train_real(&rq, &sum);
    outputs_request_free(&rq);
    return rc;
}
