/* The subcommands' entry points. Each returns a status; cli_main turns it into the exit code. */
#ifndef SS_CLI_COMMANDS_H
#define SS_CLI_COMMANDS_H

#include "cli/run_config.h"

int cmd_train_single(const run_config *cfg); /* syncsim train (one worker, no simulation) */
int cmd_train(const run_config *cfg);        /* syncsim train: single, or emulated with a policy */
int cmd_compare(const run_config *cfg);      /* syncsim compare */
int cmd_bench_coupling(const run_config *cfg); /* syncsim bench coupling */

#endif
