/* The option table: every command-line option of every subcommand is one row (name, type,
 * target field in run_config, default, range, which subcommands and policies accept it, help).
 * The same table parses argv and INI files, validates, produces --help, and writes the resolved
 * configuration (config.ini) that re-runs the job with `--config FILE`.
 *
 *     run_config cfg; if (options_parse(CMD_TRAIN, argc, argv, &cfg) != SS_OK) ... exit 2
 */
#ifndef SS_CLI_OPTIONS_H
#define SS_CLI_OPTIONS_H

#include "common/run_config.h"

#include <stdio.h>

/* Subcommands, as bits so a row can belong to several. */
enum cli_command {
    CMD_TRAIN = 1 << 0,
    CMD_COMPARE = 1 << 1,
    CMD_PLATFORM = 1 << 2,
    CMD_REPLAY = 1 << 4,
    CMD_SWEEP = 1 << 5,
    CMD_REPORT = 1 << 6,
    CMD_VALIDATE = 1 << 7,
    /* bench's targets: each parses, and lists in --help, only the options it takes */
    CMD_BENCH_KERNELS = 1 << 8,
    CMD_BENCH_NETWORK = 1 << 9,
    CMD_BENCH_COUPLING = 1 << 10,
    CMD_BENCH_REPLAY = 1 << 11,
    CMD_BENCH_EMULATION = 1 << 12,
    CMD_BENCH = CMD_BENCH_KERNELS | CMD_BENCH_NETWORK | CMD_BENCH_COUPLING | CMD_BENCH_REPLAY |
                CMD_BENCH_EMULATION,
};

/* Policies, as bits, for the rows that apply to some policies only: POL_SINGLE (train without
 * --policy: one worker, no simulation), and 1 << (kind + 1) for each policy_kind of the registry
 * (sim/policy/policy_registry.h), as options_policy_bit() gives them. */
enum cli_policy {
    POL_SINGLE = 1 << 0,
};

/* Parses argv (after the subcommand word) into cfg, starting from the defaults (and from the file
 * named by --config, if any, before the other options). Bad input: SS_EUSAGE with a message naming
 * the option and what would be valid. `--help` sets cfg->help. */
int options_parse(unsigned command, int argc, char **argv, run_config *cfg);
/* Fills cfg with every default of the table. */
void options_defaults(run_config *cfg);
/* Checks cross-option rules (ranges that depend on each other, options that do not apply to the
 * chosen policy). Called by options_parse; exposed for sweeps. */
int options_validate(unsigned command, const run_config *cfg);
/* The subcommand's name in messages when it is not the table's (`syncsim real` takes train's
 * options). */
void options_name_command(const char *name);
/* 1 when the argument `arg` ("--jobs") is an option of `command` whose value is the next
 * argument (not a flag, no "=VALUE"): subcommands with positional words (sweep FILE, report
 * DIR...) tell their words from option values with it. */
int options_takes_value(unsigned command, const char *arg);
/* A row of the option table as tools and tests see it (tests/test_bad_input.c derives every
 * option's bad values from it). kind: "int", "long", "double", "u64", "string", "choice", "flag"
 * or "auto"; min and max bound int, long and double; choices: "a|b|c" of a choice; commands: the
 * CMD_* bits that accept it. */
typedef struct options_row_info {
    const char *name, *kind, *metavar, *choices;
    double min, max;
    unsigned commands;
} options_row_info;
int options_row_count(void);
void options_row_at(int i, options_row_info *out);

/* Prints the help of a subcommand from the table. */
void options_print_help(unsigned command, const char *usage, FILE *out);
/* Writes the resolved configuration as INI (re-runnable with --config), or a table for humans. */
void options_write_ini(unsigned command, const run_config *cfg, FILE *out);
void options_print_table(unsigned command, const run_config *cfg, FILE *out);
/* The learning rate of a run: --lr, or the default of its model and mode when --lr is 0. The
 * defaults reach the published-quality accuracies on Fashion-MNIST (docs/TRAINING.md). */
double options_learning_rate(const run_config *cfg);
/* Whether the option `name` was given explicitly (on the command line or in --config). */
int options_was_set(const run_config *cfg, const char *name);
/* For sweep files: 1 if `name` is an option of `command` (its policy bits in *policies, 0 = any
 * policy), else 0; the closest option name of `command` (NULL if none is close); whether `value`
 * is valid for option `name` (SS_EUSAGE with a message naming the key and the valid values). */
int options_lookup(unsigned command, const char *name, unsigned *policies);
const char *options_closest(unsigned command, const char *name);
int options_check_value(unsigned command, const char *name, const char *value);
/* The policy bit of a policy name ("" runs the registry's baseline with several workers, else
 * one worker: POL_SINGLE). */
unsigned options_policy_bit(const char *policy, int workers);

#endif
