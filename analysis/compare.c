/* compare's results (compare.h). */
#include "analysis/compare.h"
#include "analysis/plots.h"
#include "analysis/runs.h"
#include "analysis/tta.h"
#include "common/afile.h"
#include "common/csv.h"
#include "common/status.h"
#include "common/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void compare_row_read(compare_row *r) {
    run_record rec;
    if (run_record_read(r->dir, &rec) != SS_OK || !strcmp(rec.status, "failed")) return;
    snprintf(r->status, sizeof r->status, "%s", rec.status);
    r->accuracy = rec.test_accuracy;
    r->sim_time_s = rec.sim_time_s;
    r->lssr = rec.lssr;
    r->bytes_sent = rec.bytes_sent;
    r->dropped = rec.dropped_fraction;
    r->ok = 1;
    /* the keys run records do not carry, from the summary itself (null: NaN) */
    run_summary s;
    char path[sizeof r->dir + 16];
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    if (summary_read(path, &s) != SS_OK) run_summary_init(&s);
    r->worker_accuracy = s.worker_test_accuracy_mean;
    r->perplexity = s.test_perplexity;
    const double q[4] = {s.delta_p50, s.delta_p90, s.delta_p99, s.delta_max};
    memcpy(r->delta_q, q, sizeof q);
}

/* The fields of a row that tta_measure reads, as a run record. */
static void row_record(const compare_row *r, run_record *rec) {
    memset(rec, 0, sizeof *rec);
    snprintf(rec->dir, sizeof rec->dir, "%s", r->dir);
    snprintf(rec->status, sizeof rec->status, "%s", r->ok ? r->status : "failed");
    snprintf(rec->policy, sizeof rec->policy, "%s", r->policy);
    rec->test_accuracy = r->ok ? r->accuracy : NAN;
    rec->test_perplexity = r->ok ? r->perplexity : NAN;
}

void compare_rows_tta(compare_row *rows, int n, double margin) {
    run_record *rec = ss_malloc(sizeof *rec), *ref_rec = ss_malloc(sizeof *ref_rec);
    for (int i = 0; i < n; i++) {
        compare_row *r = &rows[i];
        const compare_row *ref = NULL; /* the reference run of its network and partition */
        for (int j = 0; j < n && !ref; j++)
            if (rows[j].panel == r->panel && rows[j].reference && rows[j].ok) ref = &rows[j];
        row_record(r, rec);
        if (ref) row_record(ref, ref_rec);
        const tta_result t = tta_measure(rec, ref ? (ref == r ? rec : ref_rec) : NULL, margin);
        r->tta = t.status;
        r->tta_s = t.tta_s;
        r->speedup = t.speedup;
    }
    free(rec);
    free(ref_rec);
}

/* SelSync's Delta after the warm-up, for choosing delta: its scale depends on the model. */
static void print_delta(FILE *fp, const compare_row *rows, int n) {
    int header = 0;
    for (int i = 0; i < n; i++) {
        const compare_row *r = &rows[i];
        if (!r->ok || !isfinite(r->delta_q[0])) continue;
        if (!header++)
            fprintf(fp, "\n%-12s %-12s %-12s %9s %9s %9s %9s  (Delta after the warm-up)\n",
                    "policy", "network", "partition", "p50", "p90", "p99", "max");
        fprintf(fp, "%-12s %-12s %-12s %9.4g %9.4g %9.4g %9.4g\n", r->policy, r->label,
                r->partition, r->delta_q[0], r->delta_q[1], r->delta_q[2], r->delta_q[3]);
    }
}

/* Language models: their metric beside the table's accuracy (the next-token accuracy). */
static void print_perplexity(FILE *fp, const compare_row *rows, int n) {
    int header = 0;
    for (int i = 0; i < n; i++) {
        const compare_row *r = &rows[i];
        if (!r->ok || !isfinite(r->perplexity)) continue;
        if (!header++)
            fprintf(fp,
                    "\n%-12s %-12s %-12s %11s  (language model: exp(test loss), lower is "
                    "better; accuracy above is the next-token accuracy)\n",
                    "policy", "network", "partition", "perplexity");
        fprintf(fp, "%-12s %-12s %-12s %11.3f\n", r->policy, r->label, r->partition, r->perplexity);
    }
}

void compare_rows_print(FILE *fp, const compare_row *rows, int n) {
    fprintf(fp, "\n%-12s %-12s %-12s %9s %9s %11s %11s %8s %6s %8s %8s\n", "policy", "network",
            "partition", "accuracy", "workers", "sim time", "TTA(BSP)", "speedup", "LSSR",
            "GB sent", "dropped");
    for (int i = 0; i < n; i++) {
        const compare_row *r = &rows[i];
        if (!r->ok && !r->started) {
            fprintf(fp, "%-12s %-12s %-12s  not run (interrupted before it started)\n", r->policy,
                    r->label, r->partition);
            continue;
        }
        if (!r->ok) {
            fprintf(fp, "%-12s %-12s %-12s  failed (exit %d): see %s/log.txt\n", r->policy,
                    r->label, r->partition, r->exit_code, r->dir);
            continue;
        }
        char note[32] = "";
        if (strcmp(r->status, "ok")) snprintf(note, sizeof note, " (%s)", r->status);
        char tta[32], speed[32] = "-";
        const tta_result t = {r->tta, NAN, r->tta_s, NAN, r->speedup, isfinite(r->perplexity)};
        tta_cell(&t, 2, tta, sizeof tta);
        if (isfinite(r->speedup)) snprintf(speed, sizeof speed, "%.2fx", r->speedup);
        fprintf(fp, "%-12s %-12s %-12s %9.4f %9.4f %9.2f s %11s %8s %6.3f %8.3f %7.2f%%%s\n",
                r->policy, r->label, r->partition, r->accuracy, r->worker_accuracy, r->sim_time_s,
                tta, speed, r->lssr, r->bytes_sent / 1e9, 100.0 * r->dropped, note);
    }
    print_perplexity(fp, rows, n);
    print_delta(fp, rows, n);
}

/* One row: policy, platform, workers, then the numbers (empty cells when undefined). */
static void write_csv_row(FILE *fp, const compare_row *r, int workers) {
    csv_write_field(fp, r->policy);
    fputc(',', fp);
    csv_write_field(fp, r->label);
    fputc(',', fp);
    csv_write_field(fp, r->partition);
    fprintf(fp, ",%d,", workers);
    if (!r->ok) {
        fprintf(fp, ",,,,,,,,,,,,%s\n", r->started ? "failed" : "not_run");
        return;
    }
    fprintf(fp, "%.6f,%.9f,", r->accuracy, r->sim_time_s);
    if (isfinite(r->tta_s)) fprintf(fp, "%.9f", r->tta_s);
    fputc(',', fp);
    if (isfinite(r->speedup)) fprintf(fp, "%.6f", r->speedup);
    fprintf(fp, ",%.6f,%.0f,%.6f,", r->lssr, r->bytes_sent, r->dropped);
    const double cells[5] = {r->worker_accuracy, r->delta_q[0], r->delta_q[1], r->delta_q[2],
                             r->delta_q[3]};
    for (int k = 0; k < 5; k++) { /* empty when not recorded */
        if (isfinite(cells[k])) fprintf(fp, "%.6g", cells[k]);
        fputc(',', fp);
    }
    csv_write_field(fp, r->status);
    fputc('\n', fp);
}

int compare_rows_write_csv(const char *path, const compare_row *rows, int n, int workers) {
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    fprintf(f.fp,
            "policy,platform,partition,workers,test_accuracy,sim_time_s,tta_s,speedup_vs_bsp,lssr,"
            "bytes_sent,dropped_fraction,worker_accuracy_mean,delta_p50,delta_p90,"
            "delta_p99,delta_max,status\n");
    for (int i = 0; i < n; i++)
        write_csv_row(f.fp, &rows[i], workers);
    return afile_commit(&f);
}

int compare_rows_plot(const char *out_dir, const compare_row *rows, int n, int n_panels,
                      int workers, FILE *terminal) {
    int several_partitions = 0; /* then a panel's title names its partition too */
    for (int i = 1; i < n; i++)
        several_partitions |= strcmp(rows[i].partition, rows[0].partition) != 0;
    (void)workers; /* in the setting, read from the runs */
    plots_curve *curves = ss_calloc((size_t)(n ? n : 1), sizeof *curves);
    char(*titles)[128] = ss_calloc((size_t)(n_panels ? n_panels : 1), sizeof *titles);
    const char **title_of = ss_calloc((size_t)(n_panels ? n_panels : 1), sizeof *title_of);
    run_record *recs = ss_calloc((size_t)(n ? n : 1), sizeof *recs);
    int m = 0, n_recs = 0;
    for (int k = 0; k < n_panels; k++) {
        title_of[k] = titles[k];
        for (int i = 0; i < n; i++) {
            if (rows[i].panel != k) continue;
            if (!titles[k][0])
                snprintf(titles[k], sizeof titles[k], "%s%s%s", rows[i].label,
                         several_partitions ? ", " : "",
                         several_partitions ? rows[i].partition : "");
            if (!rows[i].ok) continue;
            curves[m++] = (plots_curve){rows[i].dir, rows[i].policy, k};
            if (run_record_read(rows[i].dir, &recs[n_recs]) == SS_OK) n_recs++;
        }
    }
    /* the title names the setting the panels share: model, data, partition, workers, GPU... */
    char setting[1024] = "", title[1200];
    if (n_recs) run_setting_text(recs, n_recs, n_panels == 1, setting, sizeof setting);
    /* a language model's figure shows its perplexity (compare runs one model) */
    int language = n_recs > 0;
    for (int i = 0; i < n_recs; i++)
        language &= run_record_is_language(&recs[i]);
    snprintf(title, sizeof title, "%s against simulated time%s%s",
             language ? "test perplexity" : "test accuracy", setting[0] ? ": " : "", setting);
    free(recs);
    char replot[1200];
    snprintf(replot, sizeof replot, "%s/replot.sh", out_dir);
    remove(replot); /* plots_accuracy_panels appends this figure's commands */
    if (terminal) fflush(terminal);
    int rc = plots_metric_panels(out_dir, "compare", curves, m, title_of, n_panels, title,
                                 language ? "test_perplexity" : "test_accuracy", terminal);
    free(curves);
    free(titles);
    free(title_of);
    return rc;
}
