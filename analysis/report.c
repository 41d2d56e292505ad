#include "analysis/report.h"
#include "analysis/report_internal.h"
#include "analysis/plots.h"
#include "analysis/tta.h"
#include "common/afile.h"
#include "common/csv.h"
#include "common/status.h"
#include "sim/policy/policy_registry.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_ignored(const char *key) {
    return run_key_is_launch(key);
}

static int applies(const report_options *o, const char *key, const char *policy) {
    return !o->key_applies || o->key_applies(key, policy);
}

/* The configuration a run shares with its repetitions over seeds: "key=value\n" for every key
 * that is not ignored and applies to `policy`; "policy" itself only when with_policy. */
static void signature(const run_record *r, const report_options *o, const char *policy,
                      int with_policy, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    if (with_policy) len += (size_t)snprintf(buf, n, "policy=%s\n", r->policy);
    for (int k = 0; k < r->n_keys && len < n; k++) {
        const char *key = r->key[k];
        if (is_ignored(key) || !strcmp(key, "policy") || !applies(o, key, policy)) continue;
        len += (size_t)snprintf(buf + len, n - len, "%s=%s\n", key, r->value[k]);
    }
}

/* 1 if `key` takes more than one value among the runs it applies to. */
static int key_varies(const run_record *runs, int n, const report_options *o, const char *key) {
    const char *seen = NULL;
    for (int i = 0; i < n; i++) {
        if (!applies(o, key, runs[i].policy)) continue;
        const char *v = run_record_get(&runs[i], key);
        if (!v) continue;
        if (!seen)
            seen = v;
        else if (strcmp(seen, v) != 0)
            return 1;
    }
    return 0;
}

static void group_label(const run_record *r, const run_record *runs, int n, const report_options *o,
                        char *buf, size_t size) {
    size_t len = (size_t)snprintf(buf, size, "%s", r->policy);
    for (int k = 0; k < r->n_keys && len < size; k++) {
        const char *key = r->key[k];
        if (is_ignored(key) || !strcmp(key, "policy") || !applies(o, key, r->policy) ||
            !key_varies(runs, n, o, key))
            continue;
        /* numbers as they were typed: config.ini holds them with 17 digits */
        char *end;
        const double x = strtod(r->value[k], &end);
        if (end != r->value[k] && !*end && isfinite(x))
            len += (size_t)snprintf(buf + len, size - len, " %s=%.6g", key, x);
        else
            len += (size_t)snprintf(buf + len, size - len, " %s=%s", key, r->value[k]);
    }
}

/* Each group's counts and statistics over its runs that finished (ok). */
static void group_statistics(const run_record *runs, int n, const int *gid, const tta_result *tta,
                             report_group *g, int ng) {
    enum { V = 13 };
    double *v[V];
    for (int k = 0; k < V; k++)
        v[k] = ss_malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int gi = 0; gi < ng; gi++) {
        report_group *G = &g[gi];
        size_t m = 0;
        for (int i = 0; i < n; i++) {
            if (gid[i] != gi) continue;
            G->runs++;
            const run_record *r = &runs[i];
            if (!strcmp(r->status, "diverged")) {
                G->diverged++;
                continue;
            }
            if (strcmp(r->status, "ok")) {
                G->failed++;
                continue;
            }
            G->ok++;
            G->tta_reached += tta[i].status == TTA_REACHED;
            G->tta_measured += tta[i].status == TTA_REACHED || tta[i].status == TTA_NEVER;
            G->no_accuracy += tta[i].status == TTA_NO_ACCURACY;
            G->no_reference += tta[i].status == TTA_NO_REFERENCE;
            v[0][m] = r->test_accuracy;
            v[1][m] = tta[i].tta_s;
            v[2][m] = tta[i].speedup;
            v[3][m] = r->lssr;
            v[4][m] = r->bytes_sent;
            v[5][m] = r->sim_time_s;
            v[6][m] = r->compute_s;
            v[7][m] = r->comm_s;
            v[8][m] = r->wait_s;
            /* per step: runs of a group may differ in steps (ssp, fedavg rounds) */
            const double steps = r->steps > 0 ? r->steps : NAN;
            v[9][m] = r->compute_s / steps;
            v[10][m] = r->comm_s / steps;
            v[11][m] = r->wait_s / steps;
            v[12][m] = r->test_perplexity;
            m++;
        }
        G->accuracy = stats_summarize(v[0], m);
        G->tta_s = stats_summarize(v[1], m);
        G->speedup = stats_summarize(v[2], m);
        G->lssr = stats_summarize(v[3], m);
        G->bytes_sent = stats_summarize(v[4], m);
        G->sim_time_s = stats_summarize(v[5], m);
        G->compute_s = stats_summarize(v[6], m);
        G->comm_s = stats_summarize(v[7], m);
        G->wait_s = stats_summarize(v[8], m);
        G->compute_step_s = stats_summarize(v[9], m);
        G->comm_step_s = stats_summarize(v[10], m);
        G->wait_step_s = stats_summarize(v[11], m);
        G->perplexity = stats_summarize(v[12], m);
    }
    for (int k = 0; k < V; k++)
        free(v[k]);
}

int report_analyze(const run_record *runs, int n, const report_options *o, report_group **groups,
                   int *n_groups, int *run_group, tta_result *run_tta) {
    enum { SIG = 16384 };
    char *sig = ss_malloc(SIG), *other = ss_malloc(SIG);
    int *gid = ss_malloc(sizeof(int) * (size_t)(n ? n : 1));
    tta_result *tta = ss_malloc(sizeof *tta * (size_t)(n ? n : 1));
    report_group *g = ss_calloc((size_t)(n ? n : 1), sizeof *g);
    int ng = 0;

    /* Groups: runs with one signature (policy included), in order of first appearance. */
    for (int i = 0; i < n; i++) {
        signature(&runs[i], o, runs[i].policy, 1, sig, SIG);
        gid[i] = -1;
        for (int j = 0; j < i && gid[i] < 0; j++) {
            signature(&runs[j], o, runs[j].policy, 1, other, SIG);
            if (!strcmp(sig, other)) gid[i] = gid[j];
        }
        if (gid[i] < 0) {
            gid[i] = ng;
            report_group *G = &g[ng++];
            group_label(&runs[i], runs, n, o, G->label, sizeof G->label);
            snprintf(G->policy, sizeof G->policy, "%s", runs[i].policy);
            G->first = i;
        } else if (runs[i].seed < runs[g[gid[i]].first].seed) {
            g[gid[i]].first = i;
        }
    }

    /* TTA and speedup against the BSP run of the same configuration and seed (tta.h). */
    for (int i = 0; i < n; i++) {
        const int ref = strcmp(runs[i].status, "ok") || !tta_has_accuracy(&runs[i])
                            ? -1
                            : tta_reference_find(runs, n, i, o->key_applies, NULL, 0);
        tta[i] = tta_measure(&runs[i], ref >= 0 ? &runs[ref] : NULL, o->target_margin);
    }

    group_statistics(runs, n, gid, tta, g, ng);
    for (int i = 0; i < n; i++) {
        if (run_group) run_group[i] = gid[i];
        if (run_tta) run_tta[i] = tta[i];
    }
    free(sig);
    free(other);
    free(gid);
    free(tta);
    *groups = g;
    *n_groups = ng;
    return SS_OK;
}

/* ---- tables ---- */

static void csv_number(FILE *fp, double x) {
    if (isfinite(x))
        fprintf(fp, ",%.9g", x);
    else
        fputc(',', fp);
}

static void md_cell(FILE *fp, stats_summary s, double scale, const char *fmt) {
    char a[48] = "-", b[48] = "";
    if (isfinite(s.mean)) snprintf(a, sizeof a, fmt, s.mean * scale);
    if (isfinite(s.ci95)) {
        char c[40];
        snprintf(c, sizeof c, fmt, s.ci95 * scale);
        snprintf(b, sizeof b, " ± %s", c);
    }
    fprintf(fp, " %s%s |", a, b);
}

static int write_tables(const run_record *runs, int n, const report_options *o,
                        const report_group *g, int ng, const int *gid, const tta_result *tta,
                        const char *warnings) {
    char path[1200];
    afile f;
    int rc;
    /* language models add their perplexity columns; a report without one keeps its form */
    int language = 0;
    for (int i = 0; i < n; i++)
        language |= run_record_is_language(&runs[i]);
    snprintf(path, sizeof path, "%s/report.csv", o->out_dir);
    if ((rc = afile_open(&f, path)) != SS_OK) return rc;
    fprintf(f.fp,
            "group,policy,runs,ok,diverged,failed,accuracy_mean,accuracy_ci95,tta_s_mean,"
            "tta_s_ci95,tta_reached,speedup_mean,speedup_ci95,lssr_mean,lssr_ci95,"
            "bytes_sent_mean,bytes_sent_ci95,sim_time_s_mean,sim_time_s_ci95,"
            "compute_s_mean,comm_s_mean,wait_s_mean,tta_measured,no_accuracy,no_reference%s\n",
            language ? ",perplexity_mean,perplexity_ci95" : "");
    for (int i = 0; i < ng; i++) {
        const report_group *G = &g[i];
        csv_write_field(f.fp, G->label);
        fprintf(f.fp, ",%s,%d,%d,%d,%d", G->policy, G->runs, G->ok, G->diverged, G->failed);
        csv_number(f.fp, G->accuracy.mean);
        csv_number(f.fp, G->accuracy.ci95);
        csv_number(f.fp, G->tta_s.mean);
        csv_number(f.fp, G->tta_s.ci95);
        fprintf(f.fp, ",%d", G->tta_reached);
        csv_number(f.fp, G->speedup.mean);
        csv_number(f.fp, G->speedup.ci95);
        csv_number(f.fp, G->lssr.mean);
        csv_number(f.fp, G->lssr.ci95);
        csv_number(f.fp, G->bytes_sent.mean);
        csv_number(f.fp, G->bytes_sent.ci95);
        csv_number(f.fp, G->sim_time_s.mean);
        csv_number(f.fp, G->sim_time_s.ci95);
        csv_number(f.fp, G->compute_s.mean);
        csv_number(f.fp, G->comm_s.mean);
        csv_number(f.fp, G->wait_s.mean);
        fprintf(f.fp, ",%d,%d,%d", G->tta_measured, G->no_accuracy, G->no_reference);
        if (language) {
            csv_number(f.fp, G->perplexity.mean);
            csv_number(f.fp, G->perplexity.ci95);
        }
        fputc('\n', f.fp);
    }
    if ((rc = afile_commit(&f)) != SS_OK) return rc;

    snprintf(path, sizeof path, "%s/runs.csv", o->out_dir);
    if ((rc = afile_open(&f, path)) != SS_OK) return rc;
    fprintf(f.fp,
            "dir,group,policy,seed,status,test_accuracy,tta_s,speedup_vs_bsp,lssr,"
            "bytes_sent,sim_time_s,tta%s\n",
            language ? ",test_perplexity" : "");
    for (int i = 0; i < n; i++) {
        const run_record *r = &runs[i];
        csv_write_field(f.fp, r->dir);
        fputc(',', f.fp);
        csv_write_field(f.fp, g[gid[i]].label);
        fprintf(f.fp, ",%s", r->policy);
        csv_number(f.fp, r->seed);
        fprintf(f.fp, ",%s", r->status);
        csv_number(f.fp, r->test_accuracy);
        csv_number(f.fp, tta[i].tta_s);
        csv_number(f.fp, tta[i].speedup);
        csv_number(f.fp, r->lssr);
        csv_number(f.fp, r->bytes_sent);
        csv_number(f.fp, r->sim_time_s);
        fprintf(f.fp, ",%s", tta_status_word(tta[i].status));
        if (language) csv_number(f.fp, r->test_perplexity);
        fputc('\n', f.fp);
    }
    if ((rc = afile_commit(&f)) != SS_OK) return rc;

    snprintf(path, sizeof path, "%s/report.md", o->out_dir);
    if ((rc = afile_open(&f, path)) != SS_OK) return rc;
    fprintf(f.fp,
            "# syncsim report\n\n%d runs in %d groups. Mean ± half-width of the 95 %% "
            "confidence interval over seeds (Student's t, n − 1 degrees of freedom; none "
            "for n = 1), over the runs that finished (ok). TTA: first simulated time at "
            "the final accuracy of the BSP run with the same configuration and seed, less "
            "%.2g points; speedup = TTA(BSP) / TTA. Diverged runs are counted, not "
            "averaged.\n\n",
            n, ng, o->target_margin * 100);
    if (language)
        fprintf(f.fp,
                "Language models: accuracy is the next-token accuracy; perplexity is exp(test "
                "loss), lower is better, and their TTA is the first simulated time at which the "
                "perplexity is at most the BSP run's final perplexity plus %.2g %%.\n\n",
                o->target_margin * 100);
    fprintf(f.fp,
            "| group | runs | ok | diverged | failed | accuracy |%s TTA (s) | reached | "
            "speedup vs BSP | LSSR | GB sent |\n",
            language ? " perplexity |" : "");
    fprintf(f.fp, "|---|---:|---:|---:|---:|---:|%s---:|---:|---:|---:|---:|\n",
            language ? "---:|" : "");
    for (int i = 0; i < ng; i++) {
        const report_group *G = &g[i];
        fprintf(f.fp, "| %s | %d | %d | %d | %d |", G->label, G->runs, G->ok, G->diverged,
                G->failed);
        if (G->ok && G->no_accuracy == G->ok)
            fprintf(f.fp, " n/a |"); /* replays record no accuracy */
        else
            md_cell(f.fp, G->accuracy, 1, "%.4f");
        if (language) md_cell(f.fp, G->perplexity, 1, "%.2f"); /* "-" for an image model */
        /* n/a: no accuracy recorded (replays); "no BSP": no reference to measure against */
        const char *none = !G->tta_measured && G->no_accuracy    ? "n/a"
                           : !G->tta_measured && G->no_reference ? "no BSP"
                                                                 : NULL;
        if (none) {
            fprintf(f.fp, " %s | %s | %s |", none, none, none);
        } else {
            md_cell(f.fp, G->tta_s, 1, "%.4g");
            fprintf(f.fp, " %d/%d |", G->tta_reached, G->tta_measured);
            md_cell(f.fp, G->speedup, 1, "%.3g");
        }
        md_cell(f.fp, G->lssr, 1, "%.3f");
        md_cell(f.fp, G->bytes_sent, 1e-9, "%.4g");
        fputc('\n', f.fp);
    }
    fprintf(f.fp, "\nreached: runs that reached their BSP run's target, of those measured (ok, "
                  "with an accuracy and a BSP run of the same configuration and seed); n/a: no "
                  "test accuracy recorded (replays have none); no BSP: no such BSP run.\n");
    if (warnings && warnings[0]) fprintf(f.fp, "\n## Warnings\n\n%s", warnings);
    return afile_commit(&f);
}

/* The warnings of a report, one Markdown list item a line (malloc'ed, "" when none): every run
 * that finished with an accuracy but has no BSP run to measure its TTA against, and why. */
static char *tta_warnings(const run_record *runs, int n, const report_options *o,
                          const tta_result *tta) {
    size_t cap = 256, len = 0;
    char *text = ss_malloc(cap);
    text[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (tta[i].status != TTA_NO_REFERENCE) continue;
        char why[1200], line[2600];
        tta_reference_find(runs, n, i, o->key_applies, why, sizeof why);
        const int m = snprintf(line, sizeof line,
                               "- %s: no BSP run of the same configuration and seed to measure TTA "
                               "and speedup against (%s)\n",
                               runs[i].dir, why);
        while (len + (size_t)m + 1 > cap) {
            text = realloc(text, cap *= 2);
            SS_ASSERT(text);
        }
        memcpy(text + len, line, (size_t)m + 1);
        len += (size_t)m;
    }
    return text;
}

/* 1 for a file an earlier report wrote: its tables, its figures (named after their group or
 * run, or numbered by earlier versions) and their data, scripts and terminal versions. */
static int is_report_file(const char *name) {
    static const char *const tables[] = {"report.md", "report.csv", "runs.csv", "replot.sh", NULL};
    static const char *const figures[] = {"accuracy", "perplexity", "breakdown", "scaling",
                                          "delta-",   "timeline-",  "kde-",      NULL};
    for (int i = 0; tables[i]; i++)
        if (!strcmp(name, tables[i])) return 1;
    const char *dot = strrchr(name, '.');
    if (!dot || (strcmp(dot, ".csv") && strcmp(dot, ".gp") && strcmp(dot, ".png") &&
                 strcmp(dot, ".svg") && strcmp(dot, ".txt")))
        return 0;
    for (int i = 0; figures[i]; i++) {
        size_t len = strlen(figures[i]);
        if (strncmp(name, figures[i], len)) continue;
        const char *p = name + len;
        if (figures[i][len - 1] != '-') return p == dot; /* "accuracy.png" */
        return p < dot;                                  /* "timeline-selsync.svg", "delta-3.png" */
    }
    return 0;
}

/* Removes an earlier report's files from OUT: a report with fewer groups must not leave
 * timeline-3.* or delta-2.* of the earlier one looking current. Other files stay. */
static int clear_report_files(const char *out_dir) {
    DIR *d = opendir(out_dir);
    if (!d) return SS_OK;
    struct dirent *e;
    char path[1400];
    int rc = SS_OK;
    while (rc == SS_OK && (e = readdir(d))) {
        if (!is_report_file(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", out_dir, e->d_name);
        if (unlink(path) != 0 && errno != ENOENT)
            rc = ss_error_set(SS_EIO, "cannot remove the earlier report's %s: %s", path,
                              strerror(errno));
    }
    closedir(d);
    return rc;
}

int report_write(const run_record *runs, int n, const report_options *o) {
    int rc = ss_mkdir_p(o->out_dir);
    if (rc == SS_OK) rc = clear_report_files(o->out_dir);
    if (rc != SS_OK) return rc;
    char path[1200];
    snprintf(path, sizeof path, "%s/replot.sh", o->out_dir);
    remove(path); /* plots_render appends this report's commands */
    report_group *g = NULL;
    int ng = 0;
    int *gid = ss_malloc(sizeof(int) * (size_t)(n ? n : 1));
    tta_result *tta = ss_malloc(sizeof *tta * (size_t)(n ? n : 1));
    rc = report_analyze(runs, n, o, &g, &ng, gid, tta);
    char *warnings = rc == SS_OK ? tta_warnings(runs, n, o, tta) : NULL;
    if (warnings && warnings[0]) {
        /* on stderr as well: a blank TTA must not pass for "never reached" */
        for (const char *line = warnings; *line;) {
            const char *end = strchr(line, '\n');
            fprintf(stderr, "syncsim report: warning: %.*s\n", (int)(end - line - 2), line + 2);
            line = end + 1;
        }
    }
    if (rc == SS_OK) rc = write_tables(runs, n, o, g, ng, gid, tta, warnings);
    if (rc == SS_OK) rc = figure_accuracy(runs, n, o, g, ng);
    if (rc == SS_OK) rc = figure_perplexity(runs, n, o, g, ng);
    if (rc == SS_OK) rc = figure_breakdown(runs, n, o, g, ng);
    if (rc == SS_OK) rc = figure_delta(runs, n, o, g, ng);
    if (rc == SS_OK) rc = figure_timeline(runs, n, o, g, ng);
    if (rc == SS_OK) rc = figure_scaling(runs, n, o);
    if (rc == SS_OK) rc = figure_kde(runs, n, o);
    free(g);
    free(gid);
    free(tta);
    free(warnings);
    return rc;
}

/* report.md, echoed after the report is written. */
static void echo_file(const char *path, FILE *out) {
    FILE *fp = fopen(path, "r");
    if (!fp) return;
    char line[2048];
    fputc('\n', out);
    while (fgets(line, sizeof line, fp))
        fputs(line, out);
    fclose(fp);
}

int report_dirs(char *const *dirs_in, int n_in, const report_options *o_in) {
    char **dirs = NULL;
    int n = 0, rc = SS_OK;
    for (int i = 0; i < n_in && rc == SS_OK; i++)
        rc = run_dirs_find(dirs_in[i], &dirs, &n);
    run_record *runs = rc == SS_OK ? ss_calloc((size_t)n, sizeof *runs) : NULL;
    for (int i = 0; i < n && rc == SS_OK; i++)
        if ((rc = run_record_read(dirs[i], &runs[i])) == SS_OK)
            rc = run_record_check_files(dirs[i]);
    if (rc == SS_OK) {
        char out[1200], path[1300];
        if (o_in->out_dir)
            snprintf(out, sizeof out, "%s", o_in->out_dir);
        else
            snprintf(out, sizeof out, "%s/report", dirs_in[0]);
        report_options o = *o_in;
        o.out_dir = out;
        FILE *term = o.terminal ? o.terminal : stdout;
        fprintf(term, "syncsim report: %d runs from %d director%s\n", n, n_in,
                n_in == 1 ? "y" : "ies");
        fflush(term);
        rc = report_write(runs, n, &o);
        if (rc == SS_OK) {
            snprintf(path, sizeof path, "%s/report.md", out);
            echo_file(path, term);
            fprintf(term,
                    "\noutputs: %s/{report.md,report.csv,runs.csv,*.png,*.svg,*.csv,*.gp,"
                    "replot.sh}\n",
                    out);
        }
    }
    free(runs);
    run_dirs_free(dirs, n);
    return rc;
}
