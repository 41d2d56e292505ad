/* The subcommands' entry points. Each returns a status; cli_main turns it into the exit code. */
#ifndef SS_CLI_COMMANDS_H
#define SS_CLI_COMMANDS_H

#include "common/run_config.h"

int cmd_train_single(const run_config *cfg); /* syncsim train (one worker, no simulation) */
int cmd_train(const run_config *cfg);        /* syncsim train: single, or emulated with a policy */
int cmd_compare(const run_config *cfg);      /* syncsim compare */
int cmd_bench_coupling(const run_config *cfg); /* syncsim bench coupling */
int cmd_replay(const run_config *cfg);         /* syncsim replay (cli/cmd_replay.c) */
int cmd_trace(const run_config *cfg);          /* syncsim trace: check a trace, import a log */
int cmd_bench_replay(const run_config *cfg);   /* syncsim bench replay */
/* syncsim sweep FILE.ini [options] and syncsim report DIR... [options]: argv after the
 * subcommand word, positional words included; they return an exit code. */
int cmd_sweep_main(int argc, char **argv);
int cmd_report_main(int argc, char **argv);

#endif
