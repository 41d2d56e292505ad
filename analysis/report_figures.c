/* report's figures: accuracy against time, the time breakdown, Delta, the timeline, scaling and
 * the gradients' KDE, each a data file and a gnuplot script (see report.h). */
#include "analysis/report_internal.h"
#include "analysis/plots.h"
#include "common/status.h"
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

int figure_accuracy(const run_record *runs, const report_options *o, const report_group *g,
                    int ng) {
    FILE *fp = open_data(o, "accuracy.csv");
    if (!fp) return ss_error_set(SS_EIO, "%s/accuracy.csv: cannot write", o->out_dir);
    int blocks = 0;
    for (int i = 0; i < ng; i++) {
        double *t, *a;
        size_t m;
        char metrics[1200];
        struct stat st; /* replays record no accuracy: no metrics.csv, no curve */
        snprintf(metrics, sizeof metrics, "%s/metrics.csv", runs[g[i].first].dir);
        if (stat(metrics, &st) != 0) continue;
        int rc = run_curve_read(runs[g[i].first].dir, &t, &a, &m);
        if (rc != SS_OK) {
            fclose(fp);
            return rc;
        }
        if (m == 0) continue;
        char title[560];
        sanitize_title(g[i].label, title, sizeof title);
        fprintf(fp, "%ssim_time_s,%s\n", blocks ? "\n\n" : "", title);
        for (size_t k = 0; k < m; k++)
            fprintf(fp, "%.9g,%.6f\n", t[k], a[k]);
        free(t);
        free(a);
        blocks++;
    }
    fclose(fp);
    if (!blocks) return SS_OK;
    return plots_render(o->out_dir, "accuracy", "accuracy.csv", "accuracy", NULL, NULL,
                        o->terminal);
}

int figure_breakdown(const report_options *o, const report_group *g, int ng) {
    FILE *fp = open_data(o, "breakdown.csv");
    if (!fp) return ss_error_set(SS_EIO, "%s/breakdown.csv: cannot write", o->out_dir);
    fprintf(fp, "group,compute_s,comm_s,wait_s\n");
    int rows = 0;
    for (int i = 0; i < ng; i++) {
        if (!isfinite(g[i].compute_s.mean)) continue;
        char title[560];
        sanitize_title(g[i].label, title, sizeof title);
        fprintf(fp, "%s,%.9g,%.9g,%.9g\n", title, g[i].compute_s.mean,
                isfinite(g[i].comm_s.mean) ? g[i].comm_s.mean : 0,
                isfinite(g[i].wait_s.mean) ? g[i].wait_s.mean : 0);
        rows++;
    }
    fclose(fp);
    if (!rows) return SS_OK;
    return plots_render(o->out_dir, "breakdown", "breakdown.csv", "breakdown", NULL, NULL,
                        o->terminal);
}

/* BSP scaling: throughput with N workers over that of one worker doing the same steps without
 * communication, N x compute_s / sim_time_s, averaged per (platform, N). */
int figure_scaling(const run_record *runs, int n, const report_options *o) {
    const char *baseline = policy_registry_baseline()->name;
    char platforms[32][RUN_RECORD_TEXT];
    int n_plat = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(runs[i].policy, baseline) || strcmp(runs[i].status, "ok")) continue;
        int k = 0;
        while (k < n_plat && strcmp(platforms[k], runs[i].platform))
            k++;
        if (k == n_plat && n_plat < 32)
            snprintf(platforms[n_plat++], RUN_RECORD_TEXT, "%s", runs[i].platform);
    }
    if (!n_plat) return SS_OK;
    FILE *fp = open_data(o, "scaling.csv");
    if (!fp) return ss_error_set(SS_EIO, "%s/scaling.csv: cannot write", o->out_dir);
    for (int k = 0; k < n_plat; k++) {
        char title[RUN_RECORD_TEXT];
        const char *base = strrchr(platforms[k], '/');
        sanitize_title(base ? base + 1 : platforms[k], title, sizeof title);
        /* one worker is the reference: 1 by definition */
        fprintf(fp, "%sworkers,%s\n1,1\n", k ? "\n\n" : "", title);
        /* one row per worker count, in increasing order: the mean over seeds */
        for (int workers = 2; workers <= 65536; workers++) {
            double sum = 0;
            int m = 0, larger = 0;
            for (int j = 0; j < n; j++) {
                const run_record *s = &runs[j];
                if (strcmp(s->policy, baseline) || strcmp(s->status, "ok") ||
                    strcmp(s->platform, platforms[k]) || !(s->sim_time_s > 0))
                    continue;
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
    return plots_render(o->out_dir, "scaling", "scaling.csv", "scaling", NULL, NULL, NULL);
}

static const char *base_name(const char *dir) {
    const char *b = strrchr(dir, '/');
    return b ? b + 1 : dir;
}

/* Delta(g) of worker 0 against step, for the first run of each selsync group. */
int figure_delta(const run_record *runs, const report_options *o, const report_group *g, int ng) {
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
        char data[64], base[64];
        snprintf(data, sizeof data, "delta-%d.csv", made + 1);
        snprintf(base, sizeof base, "delta-%d", made + 1);
        FILE *fp = open_data(o, data);
        if (!fp) {
            trace_table_free(&t);
            return ss_error_set(SS_EIO, "%s/%s: cannot write", o->out_dir, data);
        }
        fprintf(fp, "step,delta,sync\n");
        for (size_t k = 0; k < t.n_rows; k++) {
            const double *row = t.cells + k * (size_t)t.n_cols;
            if (row[cw] != 0) continue;
            fprintf(fp, "%.0f,%.9g,%.0f\n", row[cs], isfinite(row[cd]) ? row[cd] : 0, row[cx]);
        }
        fclose(fp);
        trace_table_free(&t);
        const char *delta = run_record_get(r, "delta");
        char title[1800];
        snprintf(title, sizeof title, "Delta(g) against step: %s\n%s", g[i].label,
                 base_name(r->dir));
        int rc = plots_render(o->out_dir, "delta", data, base, delta ? delta : delta_option->def,
                              title, made == 0 ? o->terminal : NULL);
        if (rc != SS_OK) return rc;
        made++;
    }
    return SS_OK;
}

/* Each worker's steps along simulated time, synchronized or local, for the first run of each
 * group. */
int figure_timeline(const run_record *runs, const report_options *o, const report_group *g,
                    int ng) {
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
        char data[64], base[64];
        snprintf(data, sizeof data, "timeline-%d.csv", made + 1);
        snprintf(base, sizeof base, "timeline-%d", made + 1);
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
        char title[1800];
        snprintf(title, sizeof title, "sync/local timeline: %s\n%s", g[i].label, base_name(r->dir));
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
        char data[64], base[64];
        snprintf(data, sizeof data, "kde-%d.csv", made + 1);
        snprintf(base, sizeof base, "kde-%d", made + 1);
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
        char title[1800];
        snprintf(title, sizeof title, "gradient values, all workers: %s\n%s", runs[i].policy,
                 base_name(runs[i].dir));
        int rc = plots_render(o->out_dir, "kde", data, base, title, NULL, NULL);
        if (rc != SS_OK) return rc;
        made++;
    }
    return SS_OK;
}
