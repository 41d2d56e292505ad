/* The option table written out: config.ini, --help and the resolved configuration's table (see
 * options.h). */
#include "cli/options_internal.h"
#include "common/status.h"
#include "emu/recipe.h"
#include "traces/profile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A platform file and the options of a generated platform exclude each other: the resolved
 * configuration keeps the ones in use. */
static int describes_other_platform(const opt_def *o, const run_config *cfg) {
    if (!strcmp(o->name, "platform")) return cfg->platform[0] == '\0';
    if (!strcmp(o->name, "bandwidth") || !strcmp(o->name, "latency") ||
        !strcmp(o->name, "topology") || !strcmp(o->name, "gpu") ||
        !strcmp(o->name, "gpu-efficiency") || !strcmp(o->name, "nodes"))
        return cfg->platform[0] != '\0';
    return 0;
}

void options_write_ini(unsigned command, const run_config *cfg, FILE *out) {
    /* A run writes its own policy's options (it re-runs as it is); a replay those it was given */
    const unsigned pol = command == CMD_TRAIN ? policy_bit(cfg) : 0, given = command == CMD_REPLAY;
    const char *c = command_name(command);
    fprintf(out, "# syncsim %s configuration, %s; re-run with\n", c,
            given ? "the options given (the rest as recorded, or defaults)" : "fully resolved");
    fprintf(out, "#   syncsim %s --config THIS_FILE\n[%s]\n", c, c);
    char buf[RUN_CONFIG_TEXT + 32];
    for (int i = 0; i < opt_count(); i++) {
        const opt_def *o = &opt_rows()[i];
        if (!(o->commands & command) || is_meta(o) || describes_other_platform(o, cfg)) continue;
        const int skip = (pol && o->policies && !(o->policies & pol)) || (given && !cfg->set[i]);
        if (skip && strcmp(o->name, "seed")) continue; /* seed: no policy, always written */
        format_value(o, cfg, buf, sizeof buf);
        fprintf(out, "%s = %s\n", o->name, buf);
    }
}

void options_print_table(unsigned command, const run_config *cfg, FILE *out) {
    char buf[RUN_CONFIG_TEXT + 32];
    fprintf(out, "+----------------------+--------------------------------------------+\n");
    for (int i = 0; i < opt_count(); i++) {
        const opt_def *o = &opt_rows()[i];
        if (!(o->commands & command) || is_meta(o)) continue;
        format_value(o, cfg, buf, sizeof buf);
        fprintf(out, "| %-20s | %-42s |\n", o->name, buf);
    }
    fprintf(out, "+----------------------+--------------------------------------------+\n");
}

/* What --help says before the options, for subcommands that resolve options in more ways than
 * a default. */
static const char *help_preamble(unsigned command) {
    if (command == CMD_REPLAY)
        return "A trace's recorded settings (policy, platform, network model, collective, batch)\n"
               "apply wherever an option is not given; the defaults below are those of --profile\n"
               "and --import, and of a trace that records no such setting.\n";
    return NULL;
}

void options_print_help(unsigned command, const char *usage, FILE *out) {
    fprintf(out, "usage: %s\n\n", usage);
    const char *pre = help_preamble(command);
    if (pre) fprintf(out, "%s\n", pre);
    if (command & (CMD_TRAIN | CMD_COMPARE | CMD_SWEEP)) {
        recipe_print_help(out);
        fputc('\n', out);
    }
    fprintf(out, "options:\n");
    for (int i = 0; i < opt_count(); i++) {
        const opt_def *o = &opt_rows()[i];
        if (!(o->commands & command)) continue;
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->metavar[0] ? " " : "", o->metavar);
        char range[128] = "";
        if (o->type == OPT_TYPE_INT || o->type == OPT_TYPE_LONG || o->type == OPT_TYPE_DOUBLE)
            snprintf(range, sizeof range, " [%g..%g]", o->min, o->max);
        else if (o->type == OPT_TYPE_CHOICE)
            snprintf(range, sizeof range, " (%s)", o->choices + (o->choices[0] == '|'));
        const char *help = o->help, *def = default_for(command, i);
        command_help_of(command, i, &help, &def);
        fprintf(out, "  %-26s %s%s", left, help, range);
        if (def && def[0] && o->type != OPT_TYPE_FLAG) fprintf(out, " (default %s)", def);
        fputc('\n', out);
        /* the shipped profiles, from their files: name, input, batch, what they are */
        if (!strcmp(o->name, "profile")) profile_print_list(out, "      ");
    }
}
