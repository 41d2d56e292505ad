/* Parsing and checking a subcommand's options (see options.h): the command line and config files
 * through the table of options_table.c, then the checks between options. */
#include "cli/options.h"
#include "cli/options_internal.h"
#include "common/ini_text.h"
#include "common/number.h"
#include "common/status.h"
#include "sim/net/coll/collective.h"
#include "sim/compute/gpu_table.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy_build.h"
#include "sim/policy/policy_registry.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A policy option kept as text (a threshold, a duration) is still checked when it is given; so
 * are the bandwidths and latencies of a generated platform, named by their metavar. */
static int check_policy_text(const opt_def *o, const char *text, const char *where) {
    const policy_option *po = row_policy_option(o);
    run_policy_value v;
    if (!po && o->metavar && !strcmp(o->metavar, "BW") && text[0]) {
        double bps;
        return platform_parse_bandwidth(where, text, &bps);
    }
    if (!po && o->metavar && !strcmp(o->metavar, "T") && text[0] && strcmp(text, "tier")) {
        double s;
        return platform_parse_latency(where, text, &s);
    }
    if (po && po->type == POLICY_OPTION_DURATION) {
        if (policy_option_parse(po, text, &v) == SS_OK) return SS_OK;
        return ss_error_set(SS_EUSAGE,
                            "%s: invalid value '%s' (expected a duration >= 0: a decimal number "
                            "and a unit, e.g. 500ms, 2s, 0s)",
                            where, text);
    }
    if (!po || po->type != POLICY_OPTION_THRESHOLD || policy_option_parse(po, text, &v) == SS_OK)
        return SS_OK;
    return ss_error_set(SS_EUSAGE,
                        "%s: invalid value '%s' (expected a decimal number in [%g, %g], or "
                        "auto:R with 0 < R < 1, a target local-step ratio)",
                        where, text, po->min, po->max);
}

/* Parses `text` into the row's field; `where` names the source ("option --lr", "f.ini:3"). */
static int set_value(const opt_def *o, const char *text, run_config *cfg, const char *where) {
    char range[128];
    describe_range(o, range, sizeof range);
    void *dst = field_of(cfg, o);
    char *end = NULL;
    errno = 0;
    switch (o->type) {
    case OPT_TYPE_U64: {
        if (!isdigit((unsigned char)text[0])) goto bad;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || *end) goto bad;
        *(uint64_t *)dst = v;
        return SS_OK;
    }
    case OPT_TYPE_INT:
    case OPT_TYPE_LONG: {
        long long v;
        if (number_parse_llong(text, &v) != 0 || v < o->min || v > o->max) goto bad;
        if (o->type == OPT_TYPE_INT)
            *(int *)dst = (int)v;
        else
            *(long *)dst = (long)v;
        return SS_OK;
    }
    case OPT_TYPE_DOUBLE: {
        double v;
        if (number_parse_double(text, &v) != 0 || v < o->min || v > o->max) goto bad;
        *(double *)dst = v;
        return SS_OK;
    }
    case OPT_TYPE_STRING:
        if (check_policy_text(o, text, where) != SS_OK) return SS_EUSAGE;
        if (strlen(text) >= o->size)
            return ss_error_set(SS_EUSAGE, "%s: value too long (at most %zu characters)", where,
                                o->size - 1);
        snprintf((char *)dst, o->size, "%s", text);
        return SS_OK;
    case OPT_TYPE_CHOICE: {
        size_t len = strlen(text);
        for (const char *p = o->choices; *p;) {
            const char *bar = strchr(p, '|');
            size_t wl = bar ? (size_t)(bar - p) : strlen(p);
            if (wl == len && strncmp(p, text, len) == 0) {
                snprintf((char *)dst, o->size, "%s", text);
                return SS_OK;
            }
            p += wl + (bar != NULL);
        }
        goto bad;
    }
    case OPT_TYPE_FLAG:
        if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes"))
            *(int *)dst = 1;
        else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no"))
            *(int *)dst = 0;
        else
            goto bad;
        return SS_OK;
    case OPT_TYPE_AUTO:
        if (!strcmp(text, "auto"))
            *(int *)dst = -1;
        else if (!strcmp(text, "yes") || !strcmp(text, "true"))
            *(int *)dst = 1;
        else if (!strcmp(text, "no") || !strcmp(text, "false"))
            *(int *)dst = 0;
        else
            goto bad;
        return SS_OK;
    }
bad:
    return ss_error_set(SS_EUSAGE, "%s: invalid value '%s' (expected %s)", where, text, range);
}

static run_config table_defaults; /* every options_parse() starts from them */
static pthread_once_t defaults_once = PTHREAD_ONCE_INIT;

/* The defaults, parsed once: a sweep parses up to 4096 points. */
static void defaults_build(void) {
    for (int i = 0; i < opt_count(); i++)
        if (opt_rows()[i].def)
            SS_ASSERT(set_value(&opt_rows()[i], opt_rows()[i].def, &table_defaults, "default") ==
                      SS_OK);
}

void options_defaults(run_config *cfg) {
    pthread_once(&defaults_once, defaults_build);
    memcpy(cfg, &table_defaults, sizeof *cfg);
}

typedef struct ini_context {
    unsigned command;
    run_config *cfg;
    unsigned char seen[RUN_CONFIG_MAX_OPTIONS]; /* keys already given in the file */
} ini_context;

/* Where each option of the configuration being parsed was given: its file and line, for the
 * checks of options_validate() that come after the file was read (0: not from a file). */
static __thread const char *config_path;
static __thread long config_line[RUN_CONFIG_MAX_OPTIONS];

/* "option --NAME", or "FILE:LINE: key 'NAME'" for an option a configuration file gave. */
static const char *option_where(int i, char *buf, size_t n) {
    if (config_path && config_line[i] > 0)
        snprintf(buf, n, "%s:%ld: key '%s'", config_path, config_line[i], opt_rows()[i].name);
    else
        snprintf(buf, n, "option --%s", opt_rows()[i].name);
    return buf;
}

/* The sections a configuration may have: the subcommands that write one (config.ini starts with
 * [train], [compare] or [replay]), or none. */
static const char *const config_sections[] = {"train", "compare", "replay", "real", NULL};

static int config_section(const char *section, char *problem, size_t n) {
    const char *near = NULL;
    for (int i = 0; config_sections[i]; i++) {
        if (!strcmp(section, config_sections[i])) return 0;
        if (edit_distance(section, config_sections[i]) <= 2) near = config_sections[i];
    }
    snprintf(problem, n, "unknown section [%s] (valid: [train], [compare], [replay], [real])%s%s%s",
             section, near ? "; did you mean [" : "", near ? near : "", near ? "]?" : "");
    return -1;
}

static int config_key_handler(void *user, const char *section, const char *name, const char *value,
                              long line, char *problem, size_t n) {
    ini_context *c = user;
    if (!name) return config_section(section, problem, n);
    if (!strcmp(name, "config") || !strcmp(name, "help")) {
        snprintf(problem, n,
                 "key '%s' belongs on the command line (--%s), not in a configuration file", name,
                 name);
        return -1;
    }
    int i = find_option_for(c->command, name);
    if (i < 0 || !(opt_rows()[i].commands & c->command)) {
        const char *near = closest_option(c->command, name);
        if (near && (!strcmp(near, "config") || !strcmp(near, "help"))) near = NULL;
        snprintf(problem, n, "unknown key '%s' for 'syncsim %s'%s%s%s", name,
                 command_label(c->command), near ? "; did you mean '" : "", near ? near : "",
                 near ? "'?" : "");
        return -1;
    }
    if (c->seen[i]) {
        snprintf(problem, n, "key '%s' is given twice (a configuration gives each key once)", name);
        return -1;
    }
    c->seen[i] = 1;
    char where[96];
    snprintf(where, sizeof where, "key '%s'", name);
    if (set_value(&opt_rows()[i], value, c->cfg, where) != SS_OK) {
        snprintf(problem, n, "%s", ss_error_message());
        return -1;
    }
    c->cfg->set[i] = 1;
    config_line[i] = line;
    return 0;
}

static int read_config_file(unsigned command, const char *path, run_config *cfg) {
    ini_context c = {command, cfg, {0}};
    int rc = ini_text_parse(path, "--config", SS_EUSAGE, config_key_handler, &c);
    if (rc != SS_OK) return rc;
    config_path = path;
    return SS_OK;
}

static void apply_command_defaults(unsigned command, run_config *cfg) {
    const char *name, *def;
    unsigned which;
    for (int k = 0; command_default_at(k, &name, &which, &def); k++) {
        if (!(which & command)) continue;
        int i = find_option_for(command, name);
        int rc = set_value(&opt_rows()[i], def, cfg, "default");
        SS_ASSERT(rc == SS_OK);
    }
}

/* Checks that hold for every subcommand: an output directory must have a name. */
static int validate_common(unsigned command, const run_config *cfg) {
    int i = find_option_for(command, "out");
    if ((opt_rows()[i].commands & command) && !cfg->out_dir[0])
        return ss_error_set(SS_EUSAGE, "option --out: the output directory must not be empty");
    if (command == CMD_COMPARE && cfg->workers < 2)
        return ss_error_set(SS_EUSAGE,
                            "option --workers %d: compare needs at least 2 workers "
                            "(default 8)",
                            cfg->workers);
    return SS_OK;
}

/* A check over several options (a policy's own, a contradiction) names them as options; where
 * the first one it names came from the configuration file, its file and line are added. */
static int with_config_line(unsigned command, int rc) {
    if (rc == SS_OK || !config_path || strstr(ss_error_message(), config_path)) return rc;
    char message[1024];
    snprintf(message, sizeof message, "%s", ss_error_message());
    for (const char *p = strstr(message, "--"); p; p = strstr(p + 2, "--")) {
        char name[64];
        size_t n = 0;
        for (const char *q = p + 2; (isalnum((unsigned char)*q) || *q == '-') && n < 63; q++)
            name[n++] = *q;
        name[n] = '\0';
        int i = n ? find_option_for(command, name) : -1;
        if (i >= 0 && config_line[i] > 0)
            return ss_error_set(rc, "%s (%s:%ld: key '%s')", message, config_path, config_line[i],
                                name);
    }
    return rc;
}

int options_parse(unsigned command, int argc, char **argv, run_config *cfg) {
    config_path = NULL;
    memset(config_line, 0, sizeof config_line);
    options_defaults(cfg);
    apply_command_defaults(command, cfg);
    /* --config first, so that the command line overrides the file. */
    for (int a = 0; a < argc; a++) {
        const char *v = NULL;
        if (!strcmp(argv[a], "--config") && a + 1 < argc)
            v = argv[a + 1];
        else if (!strncmp(argv[a], "--config=", 9))
            v = argv[a] + 9;
        if (v && (command & (CMD_RUN | CMD_REPLAY | CMD_PLATFORM | CMD_BENCH_NETWORK))) {
            int rc = read_config_file(command, v, cfg);
            if (rc != SS_OK) return rc;
        }
    }
    for (int a = 0; a < argc; a++) {
        const char *arg = argv[a];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            return ss_error_set(SS_EUSAGE,
                                "unexpected argument '%s' for 'syncsim %s' (options start with "
                                "--; see syncsim %s --help)",
                                arg, command_label(command), command_label(command));
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t nl = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, arg + 2, nl);
        name[nl] = '\0';
        int i = find_option_for(command, name);
        if (i < 0 || !(opt_rows()[i].commands & command)) {
            const char *near = closest_option(command, name);
            if (i >= 0)
                return ss_error_set(SS_EUSAGE, "option --%s does not apply to 'syncsim %s'", name,
                                    command_label(command));
            return ss_error_set(SS_EUSAGE, "unknown option --%s for 'syncsim %s'%s%s%s", name,
                                command_label(command), near ? "; did you mean --" : "",
                                near ? near : "", near ? "?" : "");
        }
        const opt_def *o = &opt_rows()[i];
        const char *value;
        if (o->type == OPT_TYPE_FLAG && !eq) {
            value = "true";
        } else if (eq) {
            value = eq + 1;
        } else {
            if (a + 1 >= argc) {
                char range[128];
                describe_range(o, range, sizeof range);
                return ss_error_set(SS_EUSAGE, "option --%s needs a value (%s)", name, range);
            }
            value = argv[++a];
        }
        char where[96];
        snprintf(where, sizeof where, "option --%s", name);
        int rc = set_value(o, value, cfg, where);
        if (rc != SS_OK) return rc;
        cfg->set[i] = 1;
        config_line[i] = 0; /* the command line's value, not the file's */
        if (!strcmp(name, "help") && cfg->help) return SS_OK;
    }
    return with_config_line(command, options_validate(command, cfg));
}

/* ---- options that only apply with another one ---- */

static const run_policy_value *policy_value(const run_config *cfg, const char *name) {
    return policy_option_slot((run_config *)cfg, name);
}

static int with_nodes(unsigned command, const run_config *cfg) {
    (void)command;
    return cfg->nodes > 0;
}

static int with_loss_tolerance(unsigned command, const run_config *cfg) {
    return policy_value(cfg, "loss-tolerance")->d > 0 ||
           (command == CMD_COMPARE && strstr(cfg->policies, "dlcp") != NULL);
}

static int with_servers(unsigned command, const run_config *cfg) {
    if (command != CMD_TRAIN || !strcmp(cfg->collective, "ps")) return 1;
    const policy_info *p = cfg->policy[0] ? policy_registry_find(cfg->policy) : NULL;
    return !p || p->needs_ps;
}

static int with_slow_workers(unsigned command, const run_config *cfg) {
    (void)command;
    return cfg->slow_workers[0] != '\0';
}

static int with_overlap(unsigned command, const run_config *cfg) {
    const char *overlap = policy_value(cfg, "overlap")->text;
    return strcmp(overlap, "off") != 0 && (command != CMD_TRAIN || strcmp(overlap, "auto") != 0);
}

/* An option given with a value of its own that nothing would read: refused, as an option of
 * another policy is, rather than ignored. A value equal to the default is harmless (config.ini
 * writes every option). */
static const struct {
    const char *name;
    int (*applies)(unsigned command, const run_config *cfg);
    const char *when;
} requirements[] = {
    {"gpus-per-node", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"nics-per-node", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"intra", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"intra-bandwidth", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"intra-latency", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"fabric", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"pcie-switch", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"p2p", with_nodes, "with --nodes N and --pcie-switch K"},
    {"deadline", with_loss_tolerance, "with --loss-tolerance EPS > 0 (DLCP)"},
    {"ps-servers", with_servers, "with parameter servers: --policy ssp or asp, or --collective ps"},
    {"slow-factor", with_slow_workers, "with --slow-workers LIST"},
    {"bucket-mb", with_overlap,
     "with overlap: --overlap on (auto is off in emulation; replays of profiles overlap)"},
};

/* 1 when row i holds its default value in cfg. */
static int holds_default(unsigned command, int i, const run_config *cfg) {
    char a[RUN_CONFIG_TEXT + 32], b[RUN_CONFIG_TEXT + 32];
    run_config *def = ss_malloc(sizeof *def);
    memcpy(def, &table_defaults, sizeof *def);
    apply_command_defaults(command, def);
    format_value(&opt_rows()[i], cfg, a, sizeof a);
    format_value(&opt_rows()[i], def, b, sizeof b);
    free(def);
    return strcmp(a, b) == 0;
}

static int check_requirements(unsigned command, const run_config *cfg) {
    for (size_t k = 0; k < sizeof requirements / sizeof requirements[0]; k++) {
        int i = find_option_for(command, requirements[k].name);
        if (i < 0 || !(opt_rows()[i].commands & command) || !cfg->set[i] ||
            requirements[k].applies(command, cfg) || holds_default(command, i, cfg))
            continue;
        char where[400];
        option_where(i, where, sizeof where);
        return ss_error_set(SS_EUSAGE, "%s applies only %s; here nothing would read it", where,
                            requirements[k].when);
    }
    return SS_OK;
}

int options_validate(unsigned command, const run_config *cfg) {
    int rc = validate_common(command, cfg);
    if (rc != SS_OK) return rc;
    if (command != CMD_TRAIN) return check_requirements(command, cfg); /* compare: each run's */
    const unsigned pol = policy_bit(cfg);
    const policy_info *p = pol == POL_SINGLE ? NULL
                           : cfg->policy[0]  ? policy_registry_find(cfg->policy)
                                             : policy_registry_baseline();
    for (int i = 0; i < opt_count(); i++) {
        const opt_def *o = &opt_rows()[i];
        if (!cfg->set[i] || !o->policies || (o->policies & pol)) continue;
        char where[400];
        option_where(i, where, sizeof where);
        if (pol == POL_SINGLE) {
            char names[256];
            return ss_error_set(SS_EUSAGE,
                                "%s needs a simulated run: add --policy (%s) or --workers N", where,
                                policy_registry_names(", ", names, sizeof names));
        }
        return ss_error_set(SS_EUSAGE, "%s does not apply to --policy %s", where, p->name);
    }
    if (options_was_set(cfg, "platform") &&
        (options_was_set(cfg, "bandwidth") || options_was_set(cfg, "topology") ||
         options_was_set(cfg, "gpu") || options_was_set(cfg, "latency") ||
         options_was_set(cfg, "gpu-efficiency") || options_was_set(cfg, "nodes")))
        return ss_error_set(SS_EUSAGE,
                            "--platform FILE contradicts --bandwidth, --latency, --topology, "
                            "--gpu, --gpu-efficiency and --nodes, which describe a generated "
                            "platform");
    if ((rc = check_requirements(command, cfg)) != SS_OK) return rc;
    return p && p->check ? p->check(cfg, options_was_set) : SS_OK;
}

double options_learning_rate(const run_config *cfg) {
    if (cfg->lr > 0) return cfg->lr;
    if (cfg->policy[0] || cfg->workers > 1) return strncmp(cfg->model, "cnn", 3) ? 0.05 : 0.02;
    return strncmp(cfg->model, "logreg", 6) == 0 ? 0.01 : 0.02;
}

int options_was_set(const run_config *cfg, const char *name) {
    int i = find_option(name);
    SS_ASSERT(i >= 0);
    return cfg->set[i];
}

int options_check_value(unsigned command, const char *name, const char *value) {
    int i = find_option_for(command, name);
    SS_ASSERT(i >= 0);
    run_config scratch;
    options_defaults(&scratch);
    char where[96];
    snprintf(where, sizeof where, "key '%s'", name);
    return set_value(&opt_rows()[i], value, &scratch, where);
}
