/* Real mode's side of a run (syncsim real): each MPI rank ran its worker's protocol (or a
 * parameter server) and kept its own part; these calls bring the parts to rank 0, which writes
 * the run's outputs as an emulation writes them.
 *
 *     real_records recs = {0};
 *     policy_run(&pc, ex, src, real_records_add, &recs, &res);   // this rank
 *     real_combine_results(ex, &pc, &res);            // rank 0: the run's totals
 *     real_evaluate(ex, em, &pc, stopped);            // rank 0: metrics.csv through on_eval
 *     real_gather_records(ex, &recs);                 // rank 0: every step, by completion
 */
#ifndef SS_EMU_REAL_H
#define SS_EMU_REAL_H

#include "emu/emulation.h"
#include "sim/exchange/exchange.h"
#include "sim/policy/policy.h"

#include <stddef.h>

/* The step records one rank kept. */
typedef struct real_records {
    step_record *v;
    size_t n, cap;
} real_records;

/* A policy_record_fn: keeps the record. */
void real_records_add(void *ctx, const step_record *r);
void real_records_free(real_records *recs);

/* Collective over all ranks. On rank 0, *res becomes the run's: the clock when the last rank
 * finished, the workers' mean compute / comm / wait, every rank's bytes, the synchronized
 * steps, the staleness histograms of workers and servers. */
int real_combine_results(exchange *ex, const policy_config *pc, policy_result *res);
/* Collective over all ranks. Rank 0 evaluates, in step order, the consensus of the workers'
 * snapshots at each evaluation step (the parameter server's parameters at the last step of an
 * asynchronous run), reporting through the emulation's on_eval. `stopped`: an interruption
 * ended the run early (asynchronous workers may then hold different snapshot counts: the
 * evaluations all of them passed are kept, the last of each worker's own last snapshot). */
int real_evaluate(exchange *ex, emulation *em, const policy_config *pc, int stopped);
/* Collective over all ranks. On rank 0, *recs becomes every rank's records, ordered by the
 * moment each step ended (then by worker). */
int real_gather_records(exchange *ex, real_records *recs);

#endif
