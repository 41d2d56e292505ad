/* Internal to cli/: the option table's rows (options_table.c), shared by the parser
 * (options.c) and the printers (options_print.c). */
#ifndef SS_CLI_OPTIONS_INTERNAL_H
#define SS_CLI_OPTIONS_INTERNAL_H

#include "cli/options.h"
#include "common/run_config.h"
#include "sim/policy/policy_registry.h"

#include <stddef.h>

typedef enum opt_type {
    OPT_TYPE_U64,    /* unsigned 64-bit integer (seeds) */
    OPT_TYPE_INT,    /* int within [min, max] */
    OPT_TYPE_LONG,   /* long within [min, max] */
    OPT_TYPE_DOUBLE, /* finite real within [min, max] */
    OPT_TYPE_STRING, /* free text (paths, specs parsed by their module) */
    OPT_TYPE_CHOICE, /* one word of `choices` ("a|b|c") */
    OPT_TYPE_FLAG,   /* no value on the command line; true/false in INI */
    OPT_TYPE_AUTO    /* auto | yes | no  ->  -1 | 1 | 0 */
} opt_type;

typedef struct opt_def {
    const char *name;    /* long option without the dashes; also the INI key */
    opt_type type;       /* how the value is parsed */
    size_t offset;       /* target field in run_config */
    size_t size;         /* STRING/CHOICE: capacity of the target buffer */
    const char *def;     /* default, as text (NULL: none, empty string/0) */
    double min, max;     /* INT/LONG/DOUBLE: inclusive range */
    unsigned commands;   /* CMD_* bits of the subcommands that accept it */
    const char *choices; /* CHOICE: "a|b|c" */
    const char *metavar; /* shown in --help */
    const char *help;    /* one line */
    unsigned policies; /* policy bits (POL_SINGLE, POL_OF) of the policies it applies to; 0 = any */
} opt_def;

#define CMD_RUN (CMD_TRAIN | CMD_COMPARE)

#define CMD_ALL                                                                                    \
    (CMD_TRAIN | CMD_COMPARE | CMD_PLATFORM | CMD_BENCH | CMD_REPLAY | CMD_SWEEP | CMD_REPORT |    \
     CMD_VALIDATE)

/* The policy bit of a policy_kind, and the masks over the registry's policies. */
#define POL_OF(kind) (1u << ((unsigned)(kind) + 1))

#define POL_SIMULATED (((1u << POLICY_KIND_COUNT) - 1) << 1)

/* The table, built on first use: opt_count() rows, in --help order. */
opt_def *opt_rows(void);
int opt_count(void);
/* A row's target field in cfg. */
void *field_of(run_config *cfg, const opt_def *o);
const void *const_field_of(const run_config *cfg, const opt_def *o);
/* Rows by name: the first of that name (-1: none); the one `command` accepts, else the first;
 * the closest name `command` accepts (NULL: none close), for "did you mean". */
int find_option(const char *name);
int find_option_for(unsigned command, const char *name);
const char *closest_option(unsigned command, const char *name);
/* The subcommand's name, and the name messages give it (options_name_command). */
const char *command_name(unsigned command);
const char *command_label(unsigned command);
/* What a valid value of row o is, in words ("an integer in [1, 100]"). */
void describe_range(const opt_def *o, char *buf, size_t n);
/* The policy option behind a row (NULL for the other rows). */
const policy_option *row_policy_option(const opt_def *o);
/* The edit distance of two names (for "did you mean"). */
int edit_distance(const char *a, const char *b);
/* The defaults that differ by subcommand, k = 0, 1, ...: option name, the subcommands (CMD_*
 * bits) and the default; 0 past the last. */
int command_default_at(int k, const char **name, unsigned *command, const char **def);
/* The default of row i for `command`: the subcommand's own, else the row's. */
const char *default_for(unsigned command, int i);
/* --help's text for row i where `command` resolves it otherwise: 1 and *help (and *def, when the
 * subcommand states its own default), else 0. */
int command_help_of(unsigned command, int i, const char **help, const char **def);
/* The bit in a row's `policies` of the run's policy (POL_OF; simulated or not). */
unsigned policy_bit(const run_config *cfg);
/* A row's value in cfg as text (as config.ini writes it). */
void format_value(const opt_def *o, const run_config *cfg, char *buf, size_t n);
/* Rows that describe the run rather than train it (--out, --config, ...). */
int is_meta(const opt_def *o);

#endif
