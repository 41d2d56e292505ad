/* The subcommands' entry points. Each returns a status; cli_main turns it into the exit code.
 * The work is done by runners outside cli/ (emu/run.h, traces/replay_command.h, ...); these only
 * hand them the resolved options. */
#ifndef SS_CLI_COMMANDS_H
#define SS_CLI_COMMANDS_H

#include "common/run_config.h"
#include "common/summary.h"
#include "common/isolate.h"

int cmd_train(const run_config *cfg);   /* syncsim train: single, or emulated with a policy */
int cmd_real(const run_config *cfg);    /* syncsim real: one MPI rank of a real run */
int cmd_compare(const run_config *cfg); /* syncsim compare */
int cmd_bench_coupling(const run_config *cfg);   /* syncsim bench coupling */
int cmd_replay(const run_config *cfg);           /* syncsim replay */
int cmd_trace(const run_config *cfg);            /* syncsim trace: check a trace, import a log */
int cmd_bench_replay(const run_config *cfg);     /* syncsim bench replay */
int cmd_bench_emulation(const run_config *cfg);  /* syncsim bench emulation */
int cmd_validate(const run_config *cfg);         /* syncsim validate network */
int cmd_validate_compute(const run_config *cfg); /* syncsim validate compute */
int cmd_validate_scaling(const run_config *cfg); /* syncsim validate scaling */
int cmd_validate_real(const run_config *cfg);    /* syncsim validate real: the local testbed */
/* syncsim sweep FILE.ini [options] and syncsim report DIR... [options]: argv after the
 * subcommand word, positional words included; they return an exit code. */
int cmd_sweep_main(int argc, char **argv);
/* The option table's checks that sweep files are read with (analysis/sweep.h sweep_plan_load). */
struct sweep_options;
const struct sweep_options *cmd_sweep_options(void);
int cmd_report_main(int argc, char **argv);
/* syncsim profile import TRACE.json ... | model --model M ...: argv after the subcommand word;
 * an exit code. */
int cmd_profile_main(int argc, char **argv);

/* One emulated training run of the resolved options (emu/run.h run_train_emulated), in the
 * current process, which must not have started SimGrid yet: what compare and sweep run in their
 * children. If curve is not NULL, the evaluations are appended to it (run_curve_point). */
int run_emulation(const run_config *cfg, run_summary *sum, isolate_blob *curve);

#endif
