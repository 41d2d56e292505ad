/* The policy registry: one row per synchronization policy (its name, what it needs, its options,
 * their defaults and checks, its label and its resolution hooks), and the descriptors of the
 * policy options. The option table (cli/options.c), the builder (sim/policy/policy_build.c), the
 * trace codec (sim/policy/policy_codec.c), compare and the report read names, defaults and
 * applicability here.
 *
 *     const policy_info *p = policy_registry_find("selsync");           // NULL if unknown
 *     for (int i = 0; i < policy_registry_count(); i++) policy_registry_at(i)->name ...
 *     for (int k = 0; k < policy_option_count(); k++) {
 *         const policy_option *o = policy_option_at(k);          // o->name "delta", o->def "0.05"
 *         if (policy_option_applies(o, p)) ...
 *     }
 *
 * Adding a policy: its kind in sim/policy/policy.h (before POLICY_KIND_COUNT), its options (an
 * array of policy_option) and one row of `policies` in policy_registry.c. */
#ifndef SS_SIM_POLICY_REGISTRY_H
#define SS_SIM_POLICY_REGISTRY_H

#include "common/run_config.h"
#include "sim/policy/policy.h"

#include <stddef.h>

/* One name of an enumerated option or field, and the enum value it stands for. */
typedef struct policy_enum_name {
    const char *name;
    int value;
} policy_enum_name;

/* The enumerations' names, each list ending with {NULL, 0}; the first name is the default. */
extern const policy_enum_name policy_variant_names[];     /* selsync_variant: paper | code */
extern const policy_enum_name policy_aggregation_names[]; /* aggregate_what: pa | ga */
extern const policy_enum_name policy_order_names[];       /* selsync_order */
extern const policy_enum_name policy_grouping_names[];    /* dssync_grouping */
extern const policy_enum_name policy_priority_names[];    /* dlcp_priority */
extern const policy_enum_name policy_drop_names[];        /* drop_keep_local: zero | local */
extern const policy_enum_name policy_overlap_names[];     /* policy_overlap: auto | on | off */

/* The name of `value` in `names` (NULL if absent); the value of `name` (-1 if absent). */
const char *policy_enum_format(const policy_enum_name *names, int value);
int policy_enum_parse(const policy_enum_name *names, const char *name, int *value);

typedef enum policy_option_type {
    POLICY_OPTION_INT,      /* int within [min, max]: run_policy_value.i */
    POLICY_OPTION_LONG,     /* long within [min, max]: .l */
    POLICY_OPTION_DOUBLE,   /* finite real within [min, max]: .d */
    POLICY_OPTION_ENUM,     /* one name of `names`: .text; the field holds its value (int) */
    POLICY_OPTION_DURATION, /* a time with its unit, kept as written in .text ("0s", "5ms"); the
                              field holds seconds (double) */
    POLICY_OPTION_THRESHOLD /* a number in [min, max], or auto:R with 0 < R < 1, kept as written
                               in .text; the field (double) holds the number, or -R for auto */
} policy_option_type;

/* A policy option: a command-line option, INI key and config.ini line of the runs whose policy it
 * applies to, and the policy_config field it sets. */
typedef struct policy_option {
    const char *name;              /* --name, the INI key */
    policy_option_type type;       /* how the value is parsed and stored */
    size_t offset;                 /* the policy_config field it sets */
    const char *def;               /* default, as text */
    double min, max;               /* INT/LONG/DOUBLE: inclusive range */
    const policy_enum_name *names; /* ENUM: the valid names */
    const char *metavar;           /* shown in --help */
    const char *help;              /* one line */
    int replay;            /* POLICY_OPTION_REPLAY: replay takes it too (a trace synthesized from a
                              profile); POLICY_OPTION_VALIDATE: so does validate (validate real's runs) */
    const char *trace_key; /* its "policy" key in a trace header (sim/policy/policy_codec.h);
                              NULL: not recorded, or recorded in another form */
} policy_option;

/* policy_option.replay's bits: the commands besides train and real that take the option */
#define POLICY_OPTION_REPLAY   1
#define POLICY_OPTION_VALIDATE 2

/* Shared option families, as bits of policy_info.families. */
enum policy_family {
    POLICY_FAMILY_DLCP = 1 << 0,    /* bounded loss on the synchronous exchanges */
    POLICY_FAMILY_OVERLAP = 1 << 1, /* bucketed all-reduce overlapping the backward pass */
};

/* Given explicitly (command line or --config): answered by the option parser for the checks. */
typedef int (*policy_given_fn)(const run_config *cfg, const char *option);

typedef struct policy_info {
    const char *name; /* --policy NAME, the trace's "policy" value */
    policy_kind kind;
    const char *summary;           /* one line for help texts */
    int needs_ps;                  /* always runs with parameter servers */
    int baseline;                  /* the reference of comparisons (TTA, speedup): one row */
    int compare_default;           /* in compare's default --policies */
    const char *default_partition; /* data partition unless --partition */
    unsigned families;             /* POLICY_FAMILY_* that apply */
    /* reads a value of every step back to the host (SelSync's gradient norm, the gradient a
     * parameter server receives): a synchronization the framework's host timeline charges */
    int host_sync;
    const policy_option *const *options; /* its own options, NULL-terminated (NULL: none) */
    /* The protocol of one worker (sim/policy/policy_workers.h), run as its actor by policy_run. */
    void (*worker)(void *arg);
    /* Cross-option rules of this policy (SS_EUSAGE with a message); NULL: none. */
    int (*check)(const run_config *cfg, policy_given_fn given);
    /* The policy with its main parameter, for tables: "ssp (s=3)". NULL: the name. */
    void (*label)(const policy_config *pc, char *buf, size_t n);
    /* Workers computing in one step (epochs to steps); NULL: all. */
    double (*computing_workers)(const policy_config *pc);
    /* Policy-specific resolution once the training set (|D| samples) is known; NULL: none. */
    void (*resolve)(policy_config *pc, size_t train_samples);
    /* A worker's own mini-batch and the room for the samples it may receive; NULL: b and b. */
    int (*local_batch)(const policy_config *pc);
    int (*max_batch)(const policy_config *pc);
} policy_info;

/* The rows, in policy_kind order. */
int policy_registry_count(void);
const policy_info *policy_registry_at(int i);
const policy_info *policy_registry_find(const char *name);    /* NULL if unknown */
const policy_info *policy_registry_of_kind(policy_kind kind); /* NULL if out of range */
const policy_info *policy_registry_baseline(void);
/* "bsp, ssp, ..." (sep ", "), or with another separator ("|"): the names for messages. */
const char *policy_registry_names(const char *sep, char *buf, size_t n);
/* The policies of compare's default --policies, comma-separated. */
const char *policy_registry_compare_default(char *buf, size_t n);
/* A policy as compare's --policies lists it: 1 for a plain policy, 2 for "<policy>-dlcp" (a
 * policy of the DLCP family with its exchanges under bounded loss), 0 if unknown; `base` gets the
 * policy proper. check_listed: SS_EUSAGE listing the valid names if `name` is not one. */
int policy_registry_parse_listed(const char *name, char *base, size_t n);
int policy_registry_check_listed(const char *name);
/* The label of a configuration ("selsync (δ=0.05)"). */
void policy_label(const policy_config *pc, char *buf, size_t n);

/* The options of every policy, each once: the policies' own in row order, then the families'. */
int policy_option_count(void);
const policy_option *policy_option_at(int k);
const policy_option *policy_option_find(const char *name); /* NULL if unknown */
int policy_option_index(const policy_option *o);
int policy_option_applies(const policy_option *o, const policy_info *p);
/* The slot of option `name` in cfg (asserts the option exists). */
run_policy_value *policy_option_slot(run_config *cfg, const char *name);
const run_policy_value *policy_option_value(const run_config *cfg, const char *name);

#endif
