#include "analysis/sweep.h"
#include "analysis/runs.h"
#include "analysis/tta.h"
#include "common/afile.h"
#include "common/csv.h"
#include "common/infile.h"
#include "common/status.h"
#include "common/summary.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the sweep file ---- */

typedef struct load_context {
    sweep_plan *p;
    const sweep_options *opts;
    int status;
    char problem[768];
    int seen_grid; /* a [grid] or [fixed] key was read (command must come before) */
} load_context;

static const char *const sweep_keys[] = {"name", "out", "command", NULL};

static void trim(char *s) {
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    size_t k = 0;
    while (isspace((unsigned char)s[k]))
        k++;
    memmove(s, s + k, n - k + 1);
}

static int problem(load_context *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int problem(load_context *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->problem, sizeof c->problem, fmt, ap);
    va_end(ap);
    c->status = SS_EUSAGE;
    return 0;
}

static int known_key(const sweep_plan *p, const char *key) {
    for (int a = 0; a < p->n_axes; a++)
        if (!strcmp(p->axis_key[a], key)) return 1;
    for (int f = 0; f < p->n_fixed; f++)
        if (!strcmp(p->fixed_key[f], key)) return 1;
    return 0;
}

/* Checks a [grid] or [fixed] key against the option table. */
static int check_option_key(load_context *c, const char *section, const char *key) {
    sweep_plan *p = c->p;
    const sweep_options *o = c->opts;
    const char *cmd = p->command == o->replay ? "replay" : "train";
    if (!strcmp(key, "out"))
        return problem(c,
                       "[%s] out: each point's output directory is OUT/points/NAME; set the "
                       "sweep's directory with [sweep] out or --out",
                       section);
    if (!o->lookup(p->command, key, NULL)) {
        const char *near = o->closest(p->command, key);
        return problem(c, "[%s] unknown key '%s': not an option of 'syncsim %s'%s%s%s", section,
                       key, cmd, near ? "; did you mean '" : "", near ? near : "",
                       near ? "'?" : "");
    }
    if (known_key(p, key))
        return problem(c, "[%s] key '%s' is given twice (in [grid] or [fixed])", section, key);
    return 1;
}

static int load_handler(void *user, const char *section, const char *name, const char *value) {
    load_context *c = user;
    sweep_plan *p = c->p;
    if (c->status != SS_OK) return 0;
    if (!strcmp(section, "sweep")) {
        if (!strcmp(name, "name")) {
            snprintf(p->name, sizeof p->name, "%s", value);
        } else if (!strcmp(name, "out")) {
            if (!p->out_dir[0]) snprintf(p->out_dir, sizeof p->out_dir, "%s", value);
        } else if (!strcmp(name, "command")) {
            if (c->seen_grid)
                return problem(c, "[sweep] command must come before [grid] and [fixed]");
            if (!strcmp(value, "train"))
                p->command = c->opts->train;
            else if (!strcmp(value, "replay"))
                p->command = c->opts->replay;
            else
                return problem(c, "[sweep] command: '%s' is not train or replay", value);
        } else {
            const char *near = NULL;
            for (int i = 0; sweep_keys[i]; i++)
                if (name[0] == sweep_keys[i][0]) near = sweep_keys[i];
            return problem(c, "[sweep] unknown key '%s' (valid: name, out, command)%s%s%s", name,
                           near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
        }
        return 1;
    }
    if (!strcmp(section, "grid")) {
        c->seen_grid = 1;
        if (!check_option_key(c, section, name)) return 0;
        if (p->n_axes == SWEEP_MAX_AXES)
            return problem(c, "[grid] at most %d axes", SWEEP_MAX_AXES);
        int a = p->n_axes++;
        snprintf(p->axis_key[a], sizeof p->axis_key[a], "%s", name);
        /* Values that hold commas (mlp:128,64) are separated by ';'. Each is counted as soon as
         * it is kept, so that sweep_plan_free releases them when a later one is refused. */
        const char *sep = strchr(value, ';') ? ";" : ",";
        char *text = strdup(value);
        char *save = NULL;
        int nv = 0;
        p->n_values[a] = 0;
        for (char *tok = strtok_r(text, sep, &save); tok; tok = strtok_r(NULL, sep, &save)) {
            trim(tok);
            if (!tok[0]) continue;
            if (nv == SWEEP_MAX_VALUES) {
                free(text);
                return problem(c, "[grid] %s: at most %d values", name, SWEEP_MAX_VALUES);
            }
            if (c->opts->check_value(p->command, name, tok) != SS_OK) {
                free(text);
                return problem(c, "[grid] %s", ss_error_message());
            }
            p->values[a][nv++] = strdup(tok);
            p->n_values[a] = nv;
        }
        free(text);
        if (!nv) return problem(c, "[grid] %s: no value", name);
        return 1;
    }
    if (!strcmp(section, "fixed")) {
        c->seen_grid = 1;
        if (!check_option_key(c, section, name)) return 0;
        if (c->opts->check_value(p->command, name, value) != SS_OK)
            return problem(c, "[fixed] %s", ss_error_message());
        int f = p->n_fixed++;
        snprintf(p->fixed_key[f], sizeof p->fixed_key[f], "%s", name);
        snprintf(p->fixed_value[f], sizeof p->fixed_value[f], "%s", value);
        return 1;
    }
    return problem(c, "key '%s' in %s%s%s: sections are [sweep], [grid] and [fixed]", name,
                   section[0] ? "section [" : "no section", section, section[0] ? "]" : "");
}

/* Whether option `key` applies to a point with this policy bit. */
static int key_applies_to(const sweep_options *o, unsigned command, const char *key, unsigned pol) {
    unsigned bits = 0;
    if (!o->lookup(command, key, &bits)) return 1;
    return bits == 0 || (bits & pol) != 0;
}

/* A value as it appears in a directory name: a platform file by its base name, and only
 * characters that need no quoting in a shell. */
static void name_value(const char *value, char *buf, size_t n) {
    const char *v = value;
    const char *slash = strrchr(v, '/');
    if (slash && slash[1]) v = slash + 1;
    snprintf(buf, n, "%s", v);
    char *xml = strstr(buf, ".xml");
    if (xml && !xml[4]) *xml = '\0';
    for (char *q = buf; *q; q++)
        if (!isalnum((unsigned char)*q) && !strchr("._:+-", *q)) *q = '_';
}

static void push_arg(sweep_point *pt, const char *key, const char *value) {
    pt->argv = realloc(pt->argv, sizeof(char *) * (size_t)(pt->argc + 1));
    SS_ASSERT(pt->argv);
    size_t len = strlen(key) + strlen(value) + 4;
    char *arg = ss_malloc(len);
    snprintf(arg, len, "--%s=%s", key, value);
    pt->argv[pt->argc++] = arg;
}

static void point_free(sweep_point *pt) {
    for (int i = 0; i < pt->argc; i++)
        free(pt->argv[i]);
    free(pt->argv);
    pt->argv = NULL;
    pt->argc = 0;
}

void sweep_point_dir(const sweep_plan *p, int i, char *buf, size_t n) {
    snprintf(buf, n, "%s/points/%s", p->out_dir, p->points[i].name);
}

/* The value of `key` for the combination idx (grid first, then fixed), or NULL. */
static const char *combo_value(const sweep_plan *p, const int *idx, const char *key) {
    for (int a = 0; a < p->n_axes; a++)
        if (!strcmp(p->axis_key[a], key)) return p->values[a][idx[a]];
    for (int f = 0; f < p->n_fixed; f++)
        if (!strcmp(p->fixed_key[f], key)) return p->fixed_value[f];
    return NULL;
}

/* Names point pt of combination idx after the axes that apply to its policy (bit pol). */
static int name_point(const sweep_plan *p, const sweep_options *o, const int *idx, unsigned pol,
                      sweep_point *pt) {
    size_t len = 0;
    for (int a = 0; a < p->n_axes; a++) {
        pt->value_of[a] = -1;
        if (!key_applies_to(o, p->command, p->axis_key[a], pol)) continue;
        pt->value_of[a] = idx[a];
        char v[256];
        name_value(p->values[a][idx[a]], v, sizeof v);
        len += (size_t)snprintf(pt->name + len, len < sizeof pt->name ? sizeof pt->name - len : 0,
                                "%s%s=%s", len ? "," : "", p->axis_key[a], v);
    }
    if (len >= sizeof pt->name)
        return ss_error_set(SS_EUSAGE, "%s: a point's directory name is too long", p->path);
    if (!len) snprintf(pt->name, sizeof pt->name, "point");
    return SS_OK;
}

/* The kept points by name: an open-addressing table of point index + 1 (0: empty slot), sized
 * at least twice the grid, so that a grid of 4096 points is merged in linear time. */
typedef struct name_index {
    int *slot;
    size_t mask;
} name_index;

static void name_index_init(name_index *x, long points) {
    size_t n = 64;
    while (n < 2 * (size_t)points)
        n *= 2;
    x->slot = ss_calloc(n, sizeof *x->slot);
    x->mask = n - 1;
}

/* The slot of `name`: the one holding the point of that name, or the empty one where it goes. */
static int *name_index_find(const name_index *x, const sweep_plan *p, const char *name) {
    size_t h = 14695981039346656037u; /* FNV-1a, 64 bits */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * 1099511628211u;
    for (size_t i = h & x->mask;; i = (i + 1) & x->mask)
        if (!x->slot[i] || !strcmp(p->points[x->slot[i] - 1].name, name)) return &x->slot[i];
}

/* A combination whose applicable options equal an earlier point's is that point: then *merged
 * is 1 and pt is freed and counted as merged; a new one is indexed (*merged 0). Two points whose
 * names coincide but whose options differ are an error (SS_EUSAGE). */
static int merge_point(sweep_plan *p, const name_index *x, sweep_point *pt, int *merged) {
    int *slot = name_index_find(x, p, pt->name);
    *merged = 0;
    if (!*slot) {
        *slot = p->n_points + 1; /* pt is p->points[p->n_points] */
        return SS_OK;
    }
    const sweep_point *q = &p->points[*slot - 1];
    int same = q->argc == pt->argc + 2; /* q also has --out and --progress */
    for (int k = 0; same && k < pt->argc; k++)
        same = !strcmp(q->argv[k], pt->argv[k]);
    point_free(pt);
    if (!same)
        return ss_error_set(SS_EUSAGE,
                            "%s: two different points get the directory name '%s' "
                            "(platform files with the same base name?)",
                            p->path, q->name);
    p->merged++;
    *merged = 1;
    return SS_OK;
}

/* Point `c` of the grid (combination idx): named, given its options, merged with an earlier
 * point with the same options or kept and checked. */
static int expand_one(sweep_plan *p, const sweep_options *o, const name_index *x, const int *idx) {
    const char *policy = combo_value(p, idx, "policy");
    const char *workers = combo_value(p, idx, "workers");
    const unsigned pol = o->policy_bit(policy ? policy : "", workers ? atoi(workers) : 1);
    sweep_point *pt = &p->points[p->n_points];
    memset(pt, 0, sizeof *pt);
    int rc = name_point(p, o, idx, pol, pt);
    if (rc != SS_OK) return rc;
    for (int f = 0; f < p->n_fixed; f++)
        if (key_applies_to(o, p->command, p->fixed_key[f], pol))
            push_arg(pt, p->fixed_key[f], p->fixed_value[f]);
    for (int a = 0; a < p->n_axes; a++)
        if (pt->value_of[a] >= 0) push_arg(pt, p->axis_key[a], p->values[a][idx[a]]);
    int merged;
    if ((rc = merge_point(p, x, pt, &merged)) != SS_OK || merged) return rc;
    char out_arg[1024]; /* the option table refuses it if longer than --out allows */
    snprintf(out_arg, sizeof out_arg, "%s/points/%s", p->out_dir, pt->name);
    push_arg(pt, "out", out_arg);
    push_arg(pt, "progress", "no");
    pt->valid = o->check_point(p->command, pt->argc, pt->argv) == SS_OK;
    if (!pt->valid) snprintf(pt->error, sizeof pt->error, "%s", ss_error_message());
    p->n_points++;
    return SS_OK;
}

static int expand(sweep_plan *p, const sweep_options *o) {
    long total = 1;
    for (int a = 0; a < p->n_axes; a++) {
        total *= p->n_values[a];
        if (total > SWEEP_MAX_POINTS)
            return ss_error_set(SS_EUSAGE, "%s: the grid has more than %d points", p->path,
                                SWEEP_MAX_POINTS);
    }
    p->points = ss_calloc((size_t)total, sizeof(sweep_point));
    name_index x;
    name_index_init(&x, total);
    int idx[SWEEP_MAX_AXES] = {0}, rc = SS_OK;
    for (long c = 0; c < total && rc == SS_OK; c++) {
        /* idx: the odometer of combination c, last axis fastest */
        long rest = c;
        for (int a = p->n_axes - 1; a >= 0; a--) {
            idx[a] = (int)(rest % p->n_values[a]);
            rest /= p->n_values[a];
        }
        rc = expand_one(p, o, &x, idx);
    }
    free(x.slot);
    return rc;
}

/* Reads the sweep file, one line at a time through `reader` (fgets on a file, mem_gets on
 * bytes in memory), checks it and expands its points. `path` names it in messages. */
static int plan_read(const char *path, ini_reader reader, void *stream, const char *out_dir,
                     const sweep_options *opts, sweep_plan **out) {
    sweep_plan *p = ss_calloc(1, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    p->command = opts->train;
    p->opts = opts;
    if (out_dir) snprintf(p->out_dir, sizeof p->out_dir, "%s", out_dir);
    load_context c = {p, opts, SS_OK, "", 0};
    int line = ini_parse_stream(reader, stream, load_handler, &c);
    int rc = SS_OK;
    if (c.status != SS_OK)
        rc = ss_error_set(c.status, "%s:%d: %s", path, line, c.problem);
    else if (line != 0)
        rc = ss_error_set(SS_EUSAGE, "%s:%d: malformed line (expected 'key = value' or [section])",
                          path, line);
    else if (!p->out_dir[0])
        rc = ss_error_set(SS_EUSAGE, "%s: no output directory: set [sweep] out or --out", path);
    if (rc == SS_OK && !p->name[0]) {
        const char *base = strrchr(path, '/');
        snprintf(p->name, sizeof p->name, "%s", base ? base + 1 : path);
    }
    if (rc == SS_OK) rc = expand(p, opts);
    if (rc != SS_OK) {
        sweep_plan_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
}

int sweep_plan_load(const char *path, const char *out_dir, const sweep_options *opts,
                    sweep_plan **out) {
    *out = NULL;
    int rc = infile_check(path, "sweep file", INFILE_MAX_TEXT, SS_EUSAGE);
    if (rc != SS_OK) return rc;
    FILE *fp = fopen(path, "r");
    if (!fp) return ss_error_set(SS_EUSAGE, "sweep: cannot open %s: %s", path, strerror(errno));
    rc = plan_read(path, (ini_reader)fgets, fp, out_dir, opts, out);
    fclose(fp);
    return rc;
}

/* The bytes of a sweep file held in memory, read as fgets reads a file. */
typedef struct mem_stream {
    const char *at;
    size_t left;
} mem_stream;

/* fgets on a mem_stream: up to num - 1 bytes through the first newline (NUL bytes included, as
 * fgets copies them), NUL-terminated; NULL at the end. */
static char *mem_gets(char *str, int num, void *stream) {
    mem_stream *m = stream;
    if (num <= 0) return NULL;
    if (num == 1) { /* as glibc's fgets: room for the terminator only */
        str[0] = '\0';
        return str;
    }
    if (m->left == 0) return NULL;
    size_t k = 0;
    while (k + 1 < (size_t)num && k < m->left) {
        const char ch = m->at[k];
        str[k++] = ch;
        if (ch == '\n') break;
    }
    str[k] = '\0';
    m->at += k;
    m->left -= k;
    return str;
}

int sweep_plan_load_mem(const char *path, const char *text, size_t size, const char *out_dir,
                        const sweep_options *opts, sweep_plan **out) {
    *out = NULL;
    mem_stream m = {text, text ? size : 0};
    return plan_read(path, mem_gets, &m, out_dir, opts, out);
}

void sweep_plan_free(sweep_plan *p) {
    if (!p) return;
    for (int i = 0; i < p->n_points; i++)
        point_free(&p->points[i]);
    free(p->points);
    for (int a = 0; a < p->n_axes; a++)
        for (int v = 0; v < p->n_values[a]; v++)
            free(p->values[a][v]);
    free(p);
}

/* ---- gathering ---- */

/* The metrics of sweep.csv, in its column order; NaN where a summary has none. */
#define GATHERED 13
static const char *const gathered_names[GATHERED] = {
    "test_accuracy", "sim_time_s", "tta_s",       "speedup_vs_bsp", "lssr",
    "steps",         "sync_steps", "bytes_sent",  "compute_s",      "comm_s",
    "wait_s",        "epochs",     "target_tta_s"};

static double count_or_nan(double x) {
    return x >= 0 ? x : NAN; /* a summary's null count or time reads back negative */
}

static void gathered_values(const run_summary *s, const tta_result *t, double v[GATHERED]) {
    const double values[GATHERED] = {s->test_accuracy,
                                     s->sim_time_s,
                                     t->tta_s,
                                     t->speedup,
                                     s->lssr,
                                     count_or_nan((double)s->steps),
                                     count_or_nan((double)s->sync_steps),
                                     s->bytes_sent,
                                     s->compute_s,
                                     s->comm_s,
                                     s->wait_s,
                                     s->epochs,
                                     count_or_nan(s->tta_s)};
    memcpy(v, values, sizeof values);
}

/* The status of point i (a word of sweep.csv), its summary (all null unless the point wrote
 * one) and a message for the invalid and failed ones. */
static const char *point_status(const sweep_plan *p, int i, run_summary *s, char *message,
                                size_t n) {
    const sweep_point *pt = &p->points[i];
    char dir[1200], path[1300];
    sweep_point_dir(p, i, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    message[0] = '\0';
    run_summary_init(s);
    if (!pt->valid) {
        snprintf(message, n, "%s", pt->error);
        return "invalid";
    }
    if (summary_read(path, s) == SS_OK) return s->status[0] ? s->status : "failed";
    run_summary_init(s);
    struct stat sb;
    if (stat(dir, &sb) != 0) return "pending";
    snprintf(message, n, "no summary.json: see %s/log.txt", pt->name);
    return "failed";
}

static void gather_header(const sweep_plan *p, FILE *fp) {
    fprintf(fp, "index,point");
    for (int a = 0; a < p->n_axes; a++) {
        fputc(',', fp);
        csv_write_field(fp, p->axis_key[a]);
    }
    fprintf(fp, ",status");
    for (int k = 0; k < GATHERED; k++)
        fprintf(fp, ",%s", gathered_names[k]);
    fprintf(fp, ",tta,message\n");
}

/* The plan's options, for gather_key_applies (tta_reference_find takes no context). */
static const sweep_options *gather_opts;
static unsigned gather_command;

/* A config key applies to a policy unless the option table limits it to other policies. */
static int gather_key_applies(const char *key, const char *policy) {
    unsigned bits = 0;
    if (!gather_opts || !gather_opts->lookup || !gather_opts->policy_bit ||
        !gather_opts->lookup(gather_command, key, &bits) || bits == 0)
        return 1;
    return (bits & gather_opts->policy_bit(policy, 2)) != 0;
}

/* Each point's TTA and speedup against its BSP point (tta.h), as `report` measures them. */
static tta_result *gather_tta(const sweep_plan *p) {
    const int n = p->n_points;
    run_record *runs = ss_calloc((size_t)(n ? n : 1), sizeof *runs);
    tta_result *t = ss_malloc(sizeof *t * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        char dir[1200];
        sweep_point_dir(p, i, dir, sizeof dir);
        if (!p->points[i].valid || run_record_read(dir, &runs[i]) != SS_OK) {
            memset(&runs[i], 0, sizeof runs[i]); /* neither a reference nor measured */
            snprintf(runs[i].status, sizeof runs[i].status, "failed");
            runs[i].test_accuracy = runs[i].test_perplexity = runs[i].seed = NAN;
        }
    }
    gather_opts = p->opts;
    gather_command = p->command;
    for (int i = 0; i < n; i++) {
        const int ref = strcmp(runs[i].status, "ok") || !tta_has_accuracy(&runs[i])
                            ? -1
                            : tta_reference_find(runs, n, i, gather_key_applies, NULL, 0);
        t[i] = tta_measure(&runs[i], ref >= 0 ? &runs[ref] : NULL, TTA_DEFAULT_MARGIN);
    }
    gather_opts = NULL;
    free(runs);
    return t;
}

int sweep_gather(const sweep_plan *p, int *n_bad, int *n_pending) {
    char path[1200];
    snprintf(path, sizeof path, "%s/sweep.csv", p->out_dir);
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    *n_bad = *n_pending = 0;
    gather_header(p, f.fp);
    tta_result *tta = gather_tta(p);
    for (int i = 0; i < p->n_points; i++) {
        const sweep_point *pt = &p->points[i];
        fprintf(f.fp, "%d,", i);
        csv_write_field(f.fp, pt->name);
        for (int a = 0; a < p->n_axes; a++) {
            fputc(',', f.fp);
            if (pt->value_of[a] >= 0) csv_write_field(f.fp, p->values[a][pt->value_of[a]]);
        }
        run_summary s;
        char message[600];
        const char *status = point_status(p, i, &s, message, sizeof message);
        fprintf(f.fp, ",%s", status);
        if (!strcmp(status, "pending")) ++*n_pending;
        if (!strcmp(status, "invalid") || !strcmp(status, "failed") ||
            !strcmp(status, "interrupted"))
            ++*n_bad;
        double v[GATHERED];
        gathered_values(&s, &tta[i], v);
        for (int k = 0; k < GATHERED; k++)
            if (!isnan(v[k]))
                fprintf(f.fp, ",%.9g", v[k]);
            else
                fputc(',', f.fp);
        fprintf(f.fp, ",%s,", tta_status_word(tta[i].status));
        csv_write_field(f.fp, message);
        fputc('\n', f.fp);
    }
    free(tta);
    return afile_commit(&f);
}
