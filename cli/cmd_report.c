/* syncsim report DIR...: the statistics over seeds of the runs found in DIRs (runs, sweeps,
 * compares), a table in Markdown and CSV, and gnuplot figures in PNG and SVG with terminal
 * versions of the main ones (analysis/report.h). */
#include "analysis/report.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "common/status.h"

#include <stdlib.h>
#include <string.h>

/* A config key applies to a policy unless the option table limits it to other policies. */
static int key_applies(const char *key, const char *policy) {
    unsigned bits = 0;
    if (!options_lookup(CMD_TRAIN, key, &bits) || bits == 0) return 1;
    const unsigned pol = strcmp(policy, "single") ? options_policy_bit(policy, 2) : POL_SINGLE;
    return (bits & pol) != 0;
}

static int report_run(int argc, char **argv) {
    char **opts = ss_calloc((size_t)argc + 1, sizeof(char *));
    char **dirs_in = ss_calloc((size_t)argc + 1, sizeof(char *));
    int n_opts = 0, n_in = 0;
    for (int a = 0; a < argc; a++) {
        if (strncmp(argv[a], "--", 2) != 0) {
            dirs_in[n_in++] = argv[a];
            continue;
        }
        opts[n_opts++] = argv[a];
        if (options_takes_value(CMD_REPORT, argv[a]) && a + 1 < argc) opts[n_opts++] = argv[++a];
    }
    run_config cfg;
    int rc = options_parse(CMD_REPORT, n_opts, opts, &cfg);
    free(opts);
    if (rc == SS_OK && cfg.help) {
        options_print_help(CMD_REPORT, "syncsim report DIR... [options]", stdout);
        printf("\nDIR: a run's output directory, or a sweep's or compare's (its points/ or "
               "runs/). Runs that differ\nonly by seed form a group. Outputs in --out (default "
               "FIRST_DIR/report): report.md, report.csv,\nruns.csv, figures (PNG, SVG), their "
               "CSVs and gnuplot scripts, and replot.sh to redraw them.\n");
        free(dirs_in);
        return SS_OK;
    }
    if (rc == SS_OK && n_in == 0)
        rc = ss_error_set(SS_EUSAGE, "report needs at least one directory: syncsim report DIR... "
                                     "[--out DIR] [--target-margin X]");
    if (rc == SS_OK) {
        report_options o = {.out_dir = options_was_set(&cfg, "out") ? cfg.out_dir : NULL,
                            .target_margin = cfg.target_margin,
                            .key_applies = key_applies,
                            .terminal = stdout,
                            .max_run_figures = 24};
        rc = report_dirs(dirs_in, n_in, &o);
    }
    free(dirs_in);
    return rc;
}

int cmd_report_main(int argc, char **argv) {
    int rc = report_run(argc, argv);
    if (rc != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    return ss_status_exit_code(rc);
}
