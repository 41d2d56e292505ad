/* report's figures: accuracy against time, the time breakdown, Delta, the timeline, scaling and
 * the gradients' KDE, each a data file and a gnuplot script (see report.h). */
#include "analysis/report_internal.h"
#include "analysis/plots.h"
#include "common/status.h"
#include "common/summary.h"
#include "sim/policy/policy_registry.h"

#include <dirent.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Opens OUT/name for a figure's data. */
static FILE *open_data(const report_options *o, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", o->out_dir, name);
    return fopen(path, "w");
}

static void sanitize_title(const char *in, char *out, size_t n) {
    snprintf(out, n, "%s", in);
    for (char *p = out; *p; p++)
        if (*p == ',' || *p == '"' || *p == '\'') *p = ' ';
}

void figure_slug(const char *label, char *buf, size_t n) {
    size_t k = 0;
    for (const char *p = label; *p && k + 1 < n && k < 120; p++) {
        const char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '-' || c == '_')
            buf[k++] = c;
        else if (c == '=')
            buf[k++] = '-';
        else if (k && buf[k - 1] != '_')
            buf[k++] = '_';
    }
    while (k && buf[k - 1] == '_')
        k--;
    buf[k] = '\0';
    if (!k) snprintf(buf, n, "run");
}

/* A figure's title: WHAT, then the setting the runs share (run_setting_text). */
static void figure_title(const char *what, const run_record *runs, int n, int with_network,
                         char *buf, size_t size) {
    char setting[1024] = "";
    if (n > 0) run_setting_text(runs, n, with_network, setting, sizeof setting);
    snprintf(buf, size, "%s%s%s", what, setting[0] ? "\n" : "", setting);
}

/* The file name of group i's figure NAME ("delta-selsync"), unique among the groups. */
static void group_figure_base(const char *name, const report_group *g, int i, char *buf, size_t n) {
    char slug[160];
    figure_slug(g[i].label, slug, sizeof slug);
    snprintf(buf, n, "%s-%s", name, slug);
}

/* A curve against simulated time per group (first seed): test accuracy of the image models'
 * groups (accuracy.png), or test perplexity of the language models' (perplexity.png). */
static int figure_curves(const run_record *runs, int n, const report_options *o,
                         const report_group *g, int ng, int language) {
    const char *name = language ? "perplexity" : "accuracy";
    char data[64];
    snprintf(data, sizeof data, "%s.csv", name);
    /* accuracy.csv is written even when empty (as it always was); perplexity.csv only when a
     * language model's curve is there */
    FILE *fp = language ? NULL : open_data(o, data);
    if (!language && !fp) return ss_error_set(SS_EIO, "%s/%s: cannot write", o->out_dir, data);
    int blocks = 0;
    const char **policies = ss_calloc((size_t)(ng ? ng : 1), sizeof *policies);
    for (int i = 0; i < ng; i++) {
        const run_record *first = &runs[g[i].first];
        if (run_record_is_language(first) != language) continue;
        double *t, *a;
        size_t m;
        char metrics[1200];
        struct stat st; /* replays record no accuracy: no metrics.csv, no curve */
        snprintf(metrics, sizeof metrics, "%s/metrics.csv", first->dir);
        if (stat(metrics, &st) != 0) continue;
        int rc = language ? run_curve_read_column(first->dir, "test_perplexity", &t, &a, &m)
                          : run_curve_read(first->dir, &t, &a, &m);
        if (rc == SS_OK && !fp && !(fp = open_data(o, data))) {
            free(t);
            free(a);
            rc = ss_error_set(SS_EIO, "%s/%s: cannot write", o->out_dir, data);
        }
        if (rc != SS_OK) {
            if (fp) fclose(fp);
            free(policies);
            return rc;
        }
        if (m == 0) continue;
        char title[560];
        sanitize_title(g[i].label, title, sizeof title);
        fprintf(fp, "%ssim_time_s,%s\n", blocks ? "\n\n" : "", title);
        for (size_t k = 0; k < m; k++) /* a cell with no value (a diverged run's) is no point */
            if (isfinite(t[k]) && isfinite(a[k])) fprintf(fp, "%.9g,%.6f\n", t[k], a[k]);
        free(t);
        free(a);
        policies[blocks++] = g[i].policy;
    }
    if (fp) fclose(fp);
    char styles[4096], title[1400];
    plots_styles(policies, blocks, styles, sizeof styles);
    free(policies);
    if (!blocks) return SS_OK;
    figure_title(language ? "test perplexity against simulated time (first seed of each group; "
                            "lower is better)"
                          : "test accuracy against simulated time (first seed of each group)",
                 runs, n, 1, title, sizeof title);
    /* the perplexity figure names its axis (ARG6); the accuracy figure's command is as it was */
    const char *args[3] = {styles, title, "perplexity"};
    return plots_render_args(o->out_dir, "accuracy", data, name, args, language ? 3 : 2,
                             o->terminal);
}

int figure_accuracy(const run_record *runs, int n, const report_options *o, const report_group *g,
                    int ng) {
    return figure_curves(runs, n, o, g, ng, 0);
}

int figure_perplexity(const run_record *runs, int n, const report_options *o, const report_group *g,
                      int ng) {
    return figure_curves(runs, n, o, g, ng, 1);
}

int figure_breakdown(const run_record *runs, int n, const report_options *o, const report_group *g,
                     int ng) {
    FILE *fp = open_data(o, "breakdown.csv");
    if (!fp) return ss_error_set(SS_EIO, "%s/breakdown.csv: cannot write", o->out_dir);
    /* per step of a worker, in ms: runs that take different numbers of steps compare */
    fprintf(fp, "group,compute_ms,comm_ms,wait_ms\n");
    int rows = 0;
    for (int i = 0; i < ng; i++) {
        if (!isfinite(g[i].compute_step_s.mean)) continue;
        char title[560];
        sanitize_title(g[i].label, title, sizeof title);
        fprintf(fp, "%s,%.9g,%.9g,%.9g\n", title, 1e3 * g[i].compute_step_s.mean,
                isfinite(g[i].comm_step_s.mean) ? 1e3 * g[i].comm_step_s.mean : 0,
                isfinite(g[i].wait_step_s.mean) ? 1e3 * g[i].wait_step_s.mean : 0);
        rows++;
    }
    fclose(fp);
    if (!rows) return SS_OK;
    char title[1400];
    figure_title("time per step of a worker: compute, communication, wait", runs, n, 1, title,
                 sizeof title);
    return plots_render(o->out_dir, "breakdown", "breakdown.csv", "breakdown", title, NULL,
                        o->terminal);
}

/* The line of the scaling figure a run belongs to: its network, and its GPU when given
 * ("10Gbps v100"): one worker of the same GPU is the reference. */
static void scaling_line(const run_record *r, char *buf, size_t n) {
    const char *base = strrchr(r->platform, '/');
    const char *gpu = run_record_get(r, "gpu");
    snprintf(buf, n, "%s%s%s", base ? base + 1 : r->platform, gpu && gpu[0] ? " " : "",
             gpu ? gpu : "");
}

/* BSP scaling: throughput with N workers over that of one worker doing the same steps without
 * communication, N x compute_s / sim_time_s, averaged per (platform, GPU, N). */
int figure_scaling(const run_record *runs, int n, const report_options *o) {
    const char *baseline = policy_registry_baseline()->name;
    char(*lines)[RUN_RECORD_TEXT + 48] = ss_calloc(32, sizeof *lines);
    char key[RUN_RECORD_TEXT + 48];
    int n_lines = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(runs[i].policy, baseline) || strcmp(runs[i].status, "ok")) continue;
        scaling_line(&runs[i], key, sizeof key);
        int k = 0;
        while (k < n_lines && strcmp(lines[k], key))
            k++;
        if (k == n_lines && n_lines < 32) snprintf(lines[n_lines++], sizeof lines[0], "%s", key);
    }
    if (!n_lines) {
        free(lines);
        return SS_OK;
    }
    FILE *fp = open_data(o, "scaling.csv");
    if (!fp) {
        free(lines);
        return ss_error_set(SS_EIO, "%s/scaling.csv: cannot write", o->out_dir);
    }
    for (int k = 0; k < n_lines; k++) {
        char title[RUN_RECORD_TEXT + 48];
        sanitize_title(lines[k], title, sizeof title);
        /* one worker is the reference: 1 by definition */
        fprintf(fp, "%sworkers,%s\n1,1\n", k ? "\n\n" : "", title);
        /* one row per worker count, in increasing order: the mean over seeds */
        for (int workers = 2; workers <= 65536; workers++) {
            double sum = 0;
            int m = 0, larger = 0;
            for (int j = 0; j < n; j++) {
                const run_record *s = &runs[j];
                if (strcmp(s->policy, baseline) || strcmp(s->status, "ok") || !(s->sim_time_s > 0))
                    continue;
                scaling_line(s, key, sizeof key);
                if (strcmp(key, lines[k])) continue;
                larger |= s->workers > workers;
                if (s->workers != workers) continue;
                sum += s->workers * s->compute_s / s->sim_time_s;
                m++;
            }
            if (m) fprintf(fp, "%d,%.6g\n", workers, sum / m);
            if (!larger) break;
        }
    }
    fclose(fp);
    free(lines);
    char title[1400];
    figure_title("BSP throughput relative to one worker", runs, n, 0, title, sizeof title);
    return plots_render(o->out_dir, "scaling", "scaling.csv", "scaling", title, NULL, NULL);
}

static const char *base_name(const char *dir) {
    const char *b = strrchr(dir, '/');
    return b ? b + 1 : dir;
}

/* SelSync's Delta(g) against step, for the first run of each selsync group: per step the
 * largest Delta over the workers, the quantity the decision compares with delta (a step
 * synchronizes when any worker's Delta >= delta), and the steps that synchronized. */
int figure_delta(const run_record *runs, int n, const report_options *o, const report_group *g,
                 int ng) {
    (void)n;
    const policy_option *delta_option = policy_option_find("delta");
    int made = 0;
    for (int i = 0; i < ng && made < o->max_run_figures; i++) {
        const policy_info *p = policy_registry_find(g[i].policy);
        if (!p || !policy_option_applies(delta_option, p)) continue;
        const run_record *r = &runs[g[i].first];
        char path[1200];
        snprintf(path, sizeof path, "%s/steps.trace", r->dir);
        trace_table t;
        if (trace_table_read(path, 0, &t) != SS_OK) continue;
        const int cs = trace_table_column(&t, "step"), cw = trace_table_column(&t, "worker"),
                  cd = trace_table_column(&t, "delta"), cx = trace_table_column(&t, "decision");
        if (cs < 0 || cw < 0 || cd < 0 || cx < 0) {
            trace_table_free(&t);
            continue;
        }
        char data[272], base[256];
        group_figure_base("delta", g, i, base, sizeof base);
        snprintf(data, sizeof data, "%s.csv", base);
        FILE *fp = open_data(o, data);
        if (!fp) {
            trace_table_free(&t);
            return ss_error_set(SS_EIO, "%s/%s: cannot write", o->out_dir, data);
        }
        fprintf(fp, "step,delta_max,sync\n");
        /* per step (records of one step need not be adjacent): the largest Delta, and whether
         * the step synchronized */
        double max_step = 0;
        for (size_t k = 0; k < t.n_rows; k++)
            if (t.cells[k * (size_t)t.n_cols + cs] > max_step)
                max_step = t.cells[k * (size_t)t.n_cols + cs];
        const size_t n_steps = (size_t)max_step + 1;
        double *dmax = ss_malloc(sizeof(double) * n_steps);
        signed char *sync = ss_calloc(n_steps, 1); /* -1: no record, 0 local, 1 synchronized */
        for (size_t k = 0; k < n_steps; k++)
            dmax[k] = -INFINITY, sync[k] = -1;
        for (size_t k = 0; k < t.n_rows; k++) {
            const double *row = t.cells + k * (size_t)t.n_cols;
            if (!(row[cs] >= 0)) continue;
            const size_t s = (size_t)row[cs];
            if (isfinite(row[cd]) && row[cd] > dmax[s]) dmax[s] = row[cd];
            if (sync[s] < 0) sync[s] = 0;
            if (row[cx] > 0) sync[s] = 1;
        }
        /* empty while Delta is undefined: the warm-up, the first ewma-window steps, which the
         * trace records with Delta 0 (they synchronize whatever delta is) */
        const char *window_text = run_record_get(r, "ewma-window");
        const double window = window_text ? strtod(window_text, NULL) : 0;
        for (size_t k = 0; k < n_steps; k++) {
            if (sync[k] < 0) continue;
            if (isfinite(dmax[k]) && !((double)k <= window && dmax[k] == 0))
                fprintf(fp, "%zu,%.9g,%d\n", k, dmax[k], sync[k]);
            else
                fprintf(fp, "%zu,,%d\n", k, sync[k]);
        }
        free(dmax);
        free(sync);
        fclose(fp);
        trace_table_free(&t);
        const char *delta = run_record_get(r, "delta");
        /* --delta auto:R: the line is the delta the run chose (summary.json's delta_chosen; with
         * --delta-every, the last one chosen) */
        char chosen[64];
        if (delta && !strncmp(delta, "auto", 4)) {
            run_summary s;
            char path[1200];
            snprintf(path, sizeof path, "%s/summary.json", r->dir);
            if (summary_read(path, &s) != SS_OK) run_summary_init(&s);
            snprintf(chosen, sizeof chosen, "%.9g",
                     isfinite(s.delta_chosen) ? s.delta_chosen : 0.0);
            delta = chosen;
        }
        char what[700], title[1800];
        snprintf(what, sizeof what, "SelSync: largest Delta(g) over the workers against step: %s",
                 g[i].label);
        figure_title(what, r, 1, 1, title, sizeof title);
        int rc = plots_render(o->out_dir, "delta", data, base, delta ? delta : delta_option->def,
                              title, made == 0 ? o->terminal : NULL);
        if (rc != SS_OK) return rc;
        made++;
    }
    return SS_OK;
}

/* Each worker's steps along simulated time, synchronized or local, for the first run of each
 * group. */
int figure_timeline(const run_record *runs, int n, const report_options *o, const report_group *g,
                    int ng) {
    (void)n;
    int made = 0;
    for (int i = 0; i < ng && made < o->max_run_figures; i++) {
        const run_record *r = &runs[g[i].first];
        char path[1200];
        snprintf(path, sizeof path, "%s/steps.trace", r->dir);
        trace_table t;
        if (trace_table_read(path, 20000, &t) != SS_OK) continue;
        const int cw = trace_table_column(&t, "worker"), c0 = trace_table_column(&t, "start_s"),
                  cc = trace_table_column(&t, "compute_s"), cm = trace_table_column(&t, "comm_s"),
                  ct = trace_table_column(&t, "wait_s"), cx = trace_table_column(&t, "decision");
        if (cw < 0 || c0 < 0 || cc < 0 || cm < 0 || ct < 0 || cx < 0) {
            trace_table_free(&t);
            continue;
        }
        char data[272], base[256];
        group_figure_base("timeline", g, i, base, sizeof base);
        snprintf(data, sizeof data, "%s.csv", base);
        FILE *fp = open_data(o, data);
        if (!fp) {
            trace_table_free(&t);
            return ss_error_set(SS_EIO, "%s/%s: cannot write", o->out_dir, data);
        }
        fprintf(fp, "worker,start_s,end_s,sync\n");
        for (size_t k = 0; k < t.n_rows; k++) {
            const double *row = t.cells + k * (size_t)t.n_cols;
            fprintf(fp, "%.0f,%.9g,%.9g,%.0f\n", row[cw], row[c0],
                    row[c0] + row[cc] + row[cm] + row[ct], row[cx]);
        }
        fclose(fp);
        trace_table_free(&t);
        char what[700], title[1800];
        snprintf(what, sizeof what, "sync/local timeline: %s", g[i].label);
        figure_title(what, r, 1, 1, title, sizeof title);
        int rc = plots_render(o->out_dir, "timeline", data, base, title, NULL, NULL);
        if (rc != SS_OK) return rc;
        made++;
    }
    return SS_OK;
}

static int compare_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* Reads every value of the gradient samples of `step` (all workers) under DIR/gradients. */
static size_t read_samples(const char *dir, long step, double **values) {
    size_t n = 0, cap = 0;
    *values = NULL;
    char gdir[1200];
    snprintf(gdir, sizeof gdir, "%s/gradients", dir);
    DIR *d = opendir(gdir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long s;
        int w;
        if (sscanf(e->d_name, "step-%ld-worker-%d.txt", &s, &w) != 2 || s != step) continue;
        char path[1500];
        snprintf(path, sizeof path, "%s/%s", gdir, e->d_name);
        FILE *fp = fopen(path, "r");
        if (!fp) continue;
        char line[128];
        while (fgets(line, sizeof line, fp)) {
            if (line[0] == '#') continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 4096;
                *values = realloc(*values, sizeof(double) * cap);
                SS_ASSERT(*values);
            }
            (*values)[n++] = strtod(line, NULL);
        }
        fclose(fp);
    }
    closedir(d);
    return n;
}

/* Kernel density estimates of the gradient samples, one line per dumped step. */
int figure_kde(const run_record *runs, int n, const report_options *o) {
    int made = 0;
    for (int i = 0; i < n && made < o->max_run_figures; i++) {
        char gdir[1200];
        snprintf(gdir, sizeof gdir, "%s/gradients", runs[i].dir);
        DIR *d = opendir(gdir);
        if (!d) continue;
        long steps[64];
        int n_steps = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            long s;
            int w;
            if (sscanf(e->d_name, "step-%ld-worker-%d.txt", &s, &w) != 2) continue;
            int k = 0;
            while (k < n_steps && steps[k] != s)
                k++;
            if (k == n_steps && n_steps < 64) steps[n_steps++] = s;
        }
        closedir(d);
        if (!n_steps) continue;
        qsort(steps, (size_t)n_steps, sizeof(long), compare_long);
        char data[272], base[256], slug[160];
        figure_slug(base_name(runs[i].dir), slug, sizeof slug);
        snprintf(base, sizeof base, "kde-%s", slug);
        snprintf(data, sizeof data, "%s.csv", base);
        FILE *fp = open_data(o, data);
        if (!fp) return ss_error_set(SS_EIO, "%s/%s: cannot write", o->out_dir, data);
        int blocks = 0;
        for (int k = 0; k < n_steps; k++) {
            double *x;
            size_t m = read_samples(runs[i].dir, steps[k], &x);
            double h = stats_silverman_bandwidth(x, m);
            if (m < 2 || !(h > 0)) {
                free(x);
                continue;
            }
            /* The grid spans the central 99 % of the sample plus three bandwidths: gradients
             * have long tails that would flatten the plot. */
            gsl_sort(x, 1, m);
            const double lo = gsl_stats_quantile_from_sorted_data(x, 1, m, 0.005);
            const double hi = gsl_stats_quantile_from_sorted_data(x, 1, m, 0.995);
            enum { GRID = 256 };
            double grid[GRID], dens[GRID];
            for (int j = 0; j < GRID; j++)
                grid[j] = lo - 3 * h + (hi - lo + 6 * h) * j / (GRID - 1);
            stats_kde(x, m, h, grid, dens, GRID);
            fprintf(fp, "%svalue,step %ld (%zu values; h = %.3g)\n", blocks ? "\n\n" : "", steps[k],
                    m, h);
            for (int j = 0; j < GRID; j++)
                fprintf(fp, "%.9g,%.9g\n", grid[j], dens[j]);
            free(x);
            blocks++;
        }
        fclose(fp);
        if (!blocks) continue;
        char what[700], title[1800];
        snprintf(what, sizeof what, "gradient values, all workers: %s (%s)", runs[i].policy,
                 base_name(runs[i].dir));
        figure_title(what, &runs[i], 1, 1, title, sizeof title);
        int rc = plots_render(o->out_dir, "kde", data, base, title, NULL, NULL);
        if (rc != SS_OK) return rc;
        made++;
    }
    return SS_OK;
}
