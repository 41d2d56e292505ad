/* The CSV import of real per-step logs (trace.h "real logs", FORMAT.md "Real logs"). */
#define _GNU_SOURCE /* fopencookie */
#include "traces/trace_internal.h"
#include "traces/input_file.h"
#include "common/csv.h"
#include "common/number.h"
#include "common/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum csv_col {
    CSV_STEP,
    CSV_WORKER,
    CSV_COMPUTE_S,
    CSV_SYNC_S,
    CSV_DECISION,
    CSV_FLOPS,
    CSV_SAMPLES,
    CSV_GRAD_NORM,
    CSV_LOSS,
    CSV_COLS
};
static const char *csv_names[CSV_COLS] = {"step",  "worker",  "compute_s", "sync_s", "decision",
                                          "flops", "samples", "grad_norm", "loss"};
#define CSV_REQUIRED    5  /* the first five */
#define CSV_MAX_COLUMNS 64 /* of a log */
/* what --import takes, for the message refusing another kind of file */
#define CSV_VALID_FILE                                                                             \
    "a log is a CSV file with a header line and one row per worker step (traces/FORMAT.md "        \
    "\"Real logs\")"

typedef struct csv_row {
    long step;
    int worker;
    double v[CSV_COLS];
} csv_row;

/* One import: the reader, the header's column of each known name, the rows read so far. */
typedef struct csv_import {
    csv_reader r;
    const char *name;
    int col[CSV_COLS]; /* -1: absent */
    int n_fields;      /* of the header; 0 until it is read */
    csv_row *rows;
    size_t n_rows, cap_rows;
    long max_step;
    int max_worker;
} csv_import;

/* Fields are compared and parsed without the spaces and tabs around them. */
static void trim_fields(csv_reader *r) {
    for (int i = 0; i < r->n_fields; i++) {
        char *f = r->field[i];
        while (*f == ' ' || *f == '\t')
            f++;
        size_t l = strlen(f);
        while (l > 0 && (f[l - 1] == ' ' || f[l - 1] == '\t'))
            f[--l] = '\0';
        r->field[i] = f;
    }
}

/* The header: maps each known column to its field; other columns are ignored. */
static int import_header(csv_import *im) {
    const csv_reader *r = &im->r;
    im->n_fields = r->n_fields;
    for (int i = 0; i < r->n_fields; i++)
        for (int c = 0; c < CSV_COLS; c++)
            if (!strcmp(r->field[i], csv_names[c])) {
                if (csv_find(r, csv_names[c]) < i)
                    return ss_error_set(SS_EINPUT, "%s:%ld: column '%s' appears twice", im->name,
                                        r->line, r->field[i]);
                im->col[c] = i;
            }
    for (int c = 0; c < CSV_REQUIRED; c++)
        if (im->col[c] < 0)
            return ss_error_set(SS_EINPUT,
                                "%s:%ld: the header lacks the column '%s' (required: step, "
                                "worker, compute_s, sync_s, decision)",
                                im->name, r->line, csv_names[c]);
    return SS_OK;
}

/* One value of a row other than step and worker, into *v. */
static int import_value(const csv_import *im, int c, const char *s, double *v) {
    if (c == CSV_DECISION) {
        if (!strcmp(s, "sync") || !strcmp(s, "1"))
            *v = 1;
        else if (!strcmp(s, "local") || !strcmp(s, "0"))
            *v = 0;
        else
            return ss_error_set(SS_EINPUT,
                                "%s:%ld: decision must be sync, local, 1 or 0, not '%.32s'",
                                im->name, im->r.line, s);
        return SS_OK;
    }
    if (number_parse_double(s, v) || *v < 0 ||
        (c == CSV_SAMPLES && (*v > (double)(1 << 30) || *v != floor(*v))))
        return ss_error_set(SS_EINPUT,
                            "%s:%ld: %s must be a finite number >= 0 (samples: an integer up to "
                            "2^30), not '%.32s'",
                            im->name, im->r.line, csv_names[c], s);
    return SS_OK;
}

/* One row of the log into a record appended to im->rows. */
static int import_row(csv_import *im) {
    const csv_reader *r = &im->r;
    char *const *f = r->field;
    if (r->n_fields != im->n_fields)
        return ss_error_set(SS_EINPUT, "%s:%ld: %d fields, the header has %d", im->name, r->line,
                            r->n_fields, im->n_fields);
    csv_row row;
    memset(&row, 0, sizeof row);
    row.v[CSV_SAMPLES] = -1; /* absent: the batch */
    long l;
    if (number_parse_long(f[im->col[CSV_STEP]], 1, 1000000000L, &row.step))
        return ss_error_set(SS_EINPUT, "%s:%ld: step must be an integer >= 1, not '%.32s'",
                            im->name, r->line, f[im->col[CSV_STEP]]);
    if (number_parse_long(f[im->col[CSV_WORKER]], 0, TRACE_MAX_WORKERS - 1, &l))
        return ss_error_set(SS_EINPUT, "%s:%ld: worker must be an integer in [0, %d), not '%.32s'",
                            im->name, r->line, TRACE_MAX_WORKERS, f[im->col[CSV_WORKER]]);
    row.worker = (int)l;
    for (int c = CSV_COMPUTE_S; c < CSV_COLS; c++) {
        int rc = im->col[c] < 0 ? SS_OK : import_value(im, c, f[im->col[c]], &row.v[c]);
        if (rc != SS_OK) return rc;
    }
    if (im->n_rows == (size_t)TRACE_MAX_CELLS)
        return ss_error_set(SS_EINPUT, "%s:%ld: more than %ld rows (worker steps in memory)",
                            im->name, r->line, (long)TRACE_MAX_CELLS);
    if (im->n_rows == im->cap_rows) {
        im->cap_rows = im->cap_rows ? 2 * im->cap_rows : 1024;
        im->rows = realloc(im->rows, im->cap_rows * sizeof *im->rows);
        SS_ASSERT(im->rows);
    }
    im->rows[im->n_rows++] = row;
    if (row.step > im->max_step) im->max_step = row.step;
    if (row.worker > im->max_worker) im->max_worker = row.worker;
    return SS_OK;
}

/* Reads the header and every row; blank lines and '#' lines are skipped. */
static int import_read(csv_import *im) {
    int got, rc;
    while ((rc = csv_next(&im->r, &got)) == SS_OK && got) {
        if (im->r.n_fields > CSV_MAX_COLUMNS)
            return ss_error_set(SS_EINPUT, "%s:%ld: more than %d columns", im->name, im->r.line,
                                CSV_MAX_COLUMNS);
        trim_fields(&im->r);
        rc = im->n_fields ? import_row(im) : import_header(im);
        if (rc != SS_OK) return rc;
    }
    if (rc != SS_OK) return rc;
    if (im->n_fields == 0 || im->n_rows == 0)
        return ss_error_set(SS_EINPUT,
                            "%s: no %s (expected a header line and one row per worker step)",
                            im->name, im->n_fields ? "rows" : "header");
    return SS_OK;
}

/* Every worker 0..max_worker logs every step 1..max_step: a missing row would cut the replay
 * short (replay stops after the last step every worker completed) without a word, so the first
 * missing one is named, with how many are missing. */
static int import_check_complete(const csv_import *im, const trace *t) {
    long missing = 0, first_step = 0;
    int first_worker = 0;
    for (long s = 1; s <= t->steps; s++)
        for (int w = 0; w < t->workers; w++)
            if (!trace_cell_at(t, s, w)->recorded && missing++ == 0) {
                first_step = s;
                first_worker = w;
            }
    if (missing == 0) return SS_OK;
    char cut[96] = "";
    if (first_step > 1)
        snprintf(cut, sizeof cut, "; to replay steps 1..%ld, remove the rows of later steps",
                 first_step - 1);
    return ss_error_set(SS_EINPUT,
                        "%s: no row for step %ld of worker %d (%ld of the %ld rows of steps 1..%ld "
                        "x workers 0..%d missing): a log has one row per worker and step%s",
                        im->name, first_step, first_worker, missing, t->steps * t->workers,
                        t->steps, t->workers - 1, cut);
}

/* The rows into a trace of max_worker + 1 workers and max_step steps, every row there. */
static int import_build(const csv_import *im, const policy_config *pc, double param_bytes,
                        trace **out) {
    policy_config ipc = *pc;
    ipc.workers = im->max_worker + 1;
    ipc.steps = im->max_step;
    ipc.compute = (sim_compute_cfg){.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
    trace *t;
    int rc = trace_alloc(&ipc, ipc.workers, ipc.steps, &t);
    if (rc != SS_OK) return rc;
    for (size_t i = 0; i < im->n_rows; i++) {
        const csv_row *row = &im->rows[i];
        trace_cell *c =
            &t->cells[(size_t)(row->step - 1) * (size_t)t->workers + (size_t)row->worker];
        if (c->recorded) {
            trace_free(t);
            return ss_error_set(SS_EINPUT, "%s: two rows for step %ld worker %d", im->name,
                                row->step, row->worker);
        }
        c->compute_s = row->v[CSV_COMPUTE_S];
        c->comm_s = row->v[CSV_SYNC_S];
        c->decision = (int8_t)row->v[CSV_DECISION];
        c->recorded = 1;
        c->flops = row->v[CSV_FLOPS];
        c->samples = row->v[CSV_SAMPLES] >= 0 ? (int)row->v[CSV_SAMPLES] : pc->batch;
        c->grad_norm = row->v[CSV_GRAD_NORM];
        c->loss = row->v[CSV_LOSS];
    }
    snprintf(t->meta.source, sizeof t->meta.source, "import");
    t->meta.param_bytes = param_bytes;
    t->meta.param_count = param_bytes / 4;
    if ((rc = import_check_complete(im, t)) != SS_OK) {
        trace_free(t);
        return rc;
    }
    trace_finish(t);
    *out = t;
    return SS_OK;
}

/* The log as the CSV reader sees it: ended at the first line longer than TRACE_MAX_LINE (and a
 * '\r'), because that reader notes a long line only at its end, which a file without line ends
 * reaches after the whole file has gone into one field's memory. */
typedef struct line_guard {
    FILE *fp;
    long chars; /* of the current line so far */
    int too_long;
} line_guard;

static ssize_t guard_read(void *cookie, char *buf, size_t size) {
    line_guard *g = cookie;
    if (g->too_long) return 0;
    size_t n = fread(buf, 1, size, g->fp);
    for (size_t i = 0; i < n; i++) {
        g->chars = buf[i] == '\n' ? 0 : g->chars + 1;
        if (g->chars > TRACE_MAX_LINE + 1) {
            g->too_long = 1;
            return (ssize_t)i;
        }
    }
    return (ssize_t)n;
}

int trace_import_csv_stream(FILE *fp, const char *name, const policy_config *pc, double param_bytes,
                            trace **out) {
    *out = NULL;
    line_guard guard = {.fp = fp};
    FILE *guarded = fopencookie(&guard, "r", (cookie_io_functions_t){.read = guard_read});
    SS_ASSERT(guarded);
    csv_import im;
    memset(&im, 0, sizeof im);
    csv_open_stream(&im.r, guarded, name);
    im.r.skip_comments = 1;
    im.r.max_line = TRACE_MAX_LINE;
    im.name = name;
    im.max_worker = -1;
    for (int c = 0; c < CSV_COLS; c++)
        im.col[c] = -1;
    int rc = import_read(&im);
    if (guard.too_long) /* whatever the reader made of the line cut short */
        rc = ss_error_set(SS_EINPUT, "%s:%ld: line too long or binary", name, im.r.next_line);
    if (rc == SS_OK && !(param_bytes > 0))
        rc = ss_error_set(SS_EUSAGE,
                          "%s: importing a log needs the size of an exchange: give "
                          "--param-bytes B or --profile NAME",
                          name);
    if (rc == SS_OK) rc = import_build(&im, pc, param_bytes, out);
    csv_close(&im.r);
    fclose(guarded);
    free(im.rows);
    return rc;
}

int trace_import_csv(const char *path, const policy_config *pc, double param_bytes, trace **out) {
    FILE *fp;
    int rc = traces_input_open(path, "log", CSV_VALID_FILE, 0, &fp);
    if (rc != SS_OK) return rc;
    rc = trace_import_csv_stream(fp, path, pc, param_bytes, out);
    fclose(fp);
    return rc;
}
