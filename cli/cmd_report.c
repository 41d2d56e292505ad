/* syncsim report DIR...: the statistics over seeds of the runs found in DIRs (runs, sweeps,
 * compares), a table in Markdown and CSV, and gnuplot figures in PNG and SVG with terminal
 * versions of the main ones (analysis/report.h). */
#include "analysis/report.h"
#include "analysis/runs.h"
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
        /* every report option but --help takes a value */
        if (!strchr(argv[a], '=') && strcmp(argv[a], "--help") && a + 1 < argc)
            opts[n_opts++] = argv[++a];
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
    char **dirs = NULL;
    int n = 0;
    for (int i = 0; i < n_in && rc == SS_OK; i++)
        rc = run_dirs_find(dirs_in[i], &dirs, &n);
    run_record *runs = rc == SS_OK ? ss_calloc((size_t)n, sizeof *runs) : NULL;
    for (int i = 0; i < n && rc == SS_OK; i++)
        rc = run_record_read(dirs[i], &runs[i]);
    if (rc == SS_OK) {
        char out[RUN_CONFIG_TEXT + 16];
        if (options_was_set(&cfg, "out"))
            snprintf(out, sizeof out, "%s", cfg.out_dir);
        else
            snprintf(out, sizeof out, "%s/report", dirs_in[0]);
        report_options o = {.out_dir = out,
                            .target_margin = cfg.target_margin,
                            .key_applies = key_applies,
                            .terminal = stdout,
                            .max_run_figures = 24};
        printf("syncsim report: %d runs from %d director%s\n", n, n_in, n_in == 1 ? "y" : "ies");
        fflush(stdout);
        rc = report_write(runs, n, &o);
        if (rc == SS_OK) {
            char path[1200];
            snprintf(path, sizeof path, "%s/report.md", out);
            FILE *fp = fopen(path, "r");
            if (fp) {
                char line[2048];
                putchar('\n');
                while (fgets(line, sizeof line, fp))
                    fputs(line, stdout);
                fclose(fp);
            }
            printf("\noutputs: %s/{report.md,report.csv,runs.csv,*.png,*.svg,*.csv,*.gp,"
                   "replot.sh}\n",
                   out);
        }
    }
    free(runs);
    run_dirs_free(dirs, n);
    free(dirs_in);
    return rc;
}

int cmd_report_main(int argc, char **argv) {
    int rc = report_run(argc, argv);
    if (rc != SS_OK) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    return ss_status_exit_code(rc);
}
