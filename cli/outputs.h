/* The command line's side of the run outputs: config.ini, which only the option table writes.
 * Everything else (paths, JSON, progress bar, interrupt flag, wall clock) is common/outputs.h. */
#ifndef SS_CLI_OUTPUTS_H
#define SS_CLI_OUTPUTS_H

#include "common/outputs.h"
#include "common/run_request.h"

/* The resolved configuration as OUT/config.ini text for `command` (a CMD_* bit); re-runnable
 * with --config. The caller frees it. */
char *outputs_config_ini(unsigned command, const run_config *cfg);
/* Creates cfg->out_dir and writes OUT/config.ini for `command`. */
int outputs_begin(unsigned command, const run_config *cfg);

/* What a runner needs from the option table for `command`: config.ini text, the learning rate,
 * options_was_set (and, with `table`, the options as a table for humans). Released by
 * outputs_request_free(). */
void outputs_request(unsigned command, const run_config *cfg, int table, run_request *rq);
void outputs_request_free(run_request *rq);

#endif
