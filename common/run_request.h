/* What a runner (emu/run.h, traces/replay_command.h) needs besides the resolved options: what only
 * the option table (cli/options.h) knows. The command line fills it in; tests may too.
 *
 *     run_request rq = {.cfg = &cfg, .config_ini = text, .lr = 0.05, .was_set = options_was_set};
 */
#ifndef SS_COMMON_RUN_REQUEST_H
#define SS_COMMON_RUN_REQUEST_H

#include "common/run_config.h"

typedef struct run_request {
    const run_config *cfg;
    /* OUT/config.ini as text, re-runnable with --config; steps.trace's header repeats it.
     * NULL: no config.ini is written. */
    const char *config_ini;
    /* The options as a table for humans, printed by the single-worker run (may be NULL). */
    const char *config_table;
    double lr; /* the learning rate: --lr, or the default of the model and mode */
    /* Whether an option was given explicitly: a replay takes the trace's recorded setting for an
     * option that was not. NULL: none was. */
    int (*was_set)(const run_config *cfg, const char *option);
} run_request;

#endif
