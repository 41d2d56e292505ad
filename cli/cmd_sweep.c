/* syncsim sweep FILE.ini: the points of a grid (cli/sweep.h), each an emulation (or a replay) in
 * its own process, --jobs at once; --resume skips the complete ones; --shard I/K and mpirun
 * spread them over processes and machines; the results are gathered into OUT/sweep.csv. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "analysis/ranks.h"
#include "analysis/runs.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/outputs.h"
#include "cli/sweep.h"
#include "common/afile.h"
#include "common/csv.h"
#include "common/status.h"
#include "sim/isolate.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the sweep file ---- */

typedef struct load_context {
    sweep_plan *p;
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
    const char *cmd = p->command == CMD_REPLAY ? "replay" : "train";
    if (!strcmp(key, "out"))
        return problem(c,
                       "[%s] out: each point's output directory is OUT/points/NAME; set the "
                       "sweep's directory with [sweep] out or --out",
                       section);
    if (!options_lookup(p->command, key, NULL)) {
        const char *near = options_closest(p->command, key);
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
                p->command = CMD_TRAIN;
            else if (!strcmp(value, "replay"))
                p->command = CMD_REPLAY;
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
        int a = p->n_axes;
        snprintf(p->axis_key[a], sizeof p->axis_key[a], "%s", name);
        /* Values that hold commas (mlp:128,64) are separated by ';'. */
        const char *sep = strchr(value, ';') ? ";" : ",";
        char *text = strdup(value);
        char *save = NULL;
        int nv = 0;
        for (char *tok = strtok_r(text, sep, &save); tok; tok = strtok_r(NULL, sep, &save)) {
            trim(tok);
            if (!tok[0]) continue;
            if (nv == SWEEP_MAX_VALUES) {
                free(text);
                return problem(c, "[grid] %s: at most %d values", name, SWEEP_MAX_VALUES);
            }
            if (options_check_value(p->command, name, tok) != SS_OK) {
                free(text);
                return problem(c, "[grid] %s", ss_error_message());
            }
            p->values[a][nv++] = strdup(tok);
        }
        free(text);
        p->n_values[a] = nv;
        p->n_axes++;
        if (!nv) return problem(c, "[grid] %s: no value", name);
        return 1;
    }
    if (!strcmp(section, "fixed")) {
        c->seen_grid = 1;
        if (!check_option_key(c, section, name)) return 0;
        if (options_check_value(p->command, name, value) != SS_OK)
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
static int key_applies_to(unsigned command, const char *key, unsigned pol) {
    unsigned bits = 0;
    if (!options_lookup(command, key, &bits)) return 1;
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

static int expand(sweep_plan *p) {
    long total = 1;
    for (int a = 0; a < p->n_axes; a++) {
        total *= p->n_values[a];
        if (total > SWEEP_MAX_POINTS)
            return ss_error_set(SS_EUSAGE, "%s: the grid has more than %d points", p->path,
                                SWEEP_MAX_POINTS);
    }
    p->points = ss_calloc((size_t)total, sizeof(sweep_point));
    int idx[SWEEP_MAX_AXES] = {0};
    run_config *cfg = ss_malloc(sizeof *cfg);
    for (long c = 0; c < total; c++) {
        /* idx: the odometer of combination c, last axis fastest */
        long rest = c;
        for (int a = p->n_axes - 1; a >= 0; a--) {
            idx[a] = (int)(rest % p->n_values[a]);
            rest /= p->n_values[a];
        }
        const char *policy = combo_value(p, idx, "policy");
        const char *workers = combo_value(p, idx, "workers");
        const unsigned pol = options_policy_bit(policy ? policy : "", workers ? atoi(workers) : 1);
        sweep_point *pt = &p->points[p->n_points];
        memset(pt, 0, sizeof *pt);
        size_t len = 0;
        for (int a = 0; a < p->n_axes; a++) {
            pt->value_of[a] = -1;
            if (!key_applies_to(p->command, p->axis_key[a], pol)) continue;
            pt->value_of[a] = idx[a];
            char v[256];
            name_value(p->values[a][idx[a]], v, sizeof v);
            len +=
                (size_t)snprintf(pt->name + len, len < sizeof pt->name ? sizeof pt->name - len : 0,
                                 "%s%s=%s", len ? "," : "", p->axis_key[a], v);
        }
        if (len >= sizeof pt->name) {
            free(cfg);
            return ss_error_set(SS_EUSAGE, "%s: a point's directory name is too long", p->path);
        }
        if (!len) snprintf(pt->name, sizeof pt->name, "point");
        for (int f = 0; f < p->n_fixed; f++)
            if (key_applies_to(p->command, p->fixed_key[f], pol))
                push_arg(pt, p->fixed_key[f], p->fixed_value[f]);
        for (int a = 0; a < p->n_axes; a++)
            if (pt->value_of[a] >= 0) push_arg(pt, p->axis_key[a], p->values[a][idx[a]]);
        /* A combination whose applicable options equal an earlier point's is that point. */
        int dup = -1;
        for (int i = 0; i < p->n_points && dup < 0; i++)
            if (!strcmp(p->points[i].name, pt->name)) dup = i;
        if (dup >= 0) {
            const sweep_point *q = &p->points[dup];
            int same = q->argc == pt->argc + 2; /* q also has --out and --progress */
            for (int k = 0; same && k < pt->argc; k++)
                same = !strcmp(q->argv[k], pt->argv[k]);
            point_free(pt);
            if (!same) {
                free(cfg);
                return ss_error_set(SS_EUSAGE,
                                    "%s: two different points get the directory name '%s' "
                                    "(platform files with the same base name?)",
                                    p->path, q->name);
            }
            p->merged++;
            continue;
        }
        char out_arg[1024]; /* options_parse refuses it if longer than --out allows */
        snprintf(out_arg, sizeof out_arg, "%s/points/%s", p->out_dir, pt->name);
        push_arg(pt, "out", out_arg);
        push_arg(pt, "progress", "no");
        pt->valid = options_parse(p->command, pt->argc, pt->argv, cfg) == SS_OK;
        if (!pt->valid) snprintf(pt->error, sizeof pt->error, "%s", ss_error_message());
        p->n_points++;
    }
    free(cfg);
    return SS_OK;
}

int sweep_plan_load(const char *path, const char *out_dir, sweep_plan **out) {
    *out = NULL;
    FILE *fp = fopen(path, "r");
    if (!fp) return ss_error_set(SS_EUSAGE, "sweep: cannot open %s: %s", path, strerror(errno));
    sweep_plan *p = ss_calloc(1, sizeof *p);
    snprintf(p->path, sizeof p->path, "%s", path);
    p->command = CMD_TRAIN;
    if (out_dir) snprintf(p->out_dir, sizeof p->out_dir, "%s", out_dir);
    load_context c = {p, SS_OK, "", 0};
    int line = ini_parse_file(fp, load_handler, &c);
    fclose(fp);
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
    if (rc == SS_OK) rc = expand(p);
    if (rc != SS_OK) {
        sweep_plan_free(p);
        return rc;
    }
    *out = p;
    return SS_OK;
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

static const char *const gathered_numbers[] = {
    "test_accuracy", "sim_time_s", "tta_s",  "lssr",   "steps",  "sync_steps",
    "bytes_sent",    "compute_s",  "comm_s", "wait_s", "epochs", NULL};

int sweep_gather(const sweep_plan *p, int *n_bad, int *n_pending) {
    char path[1200];
    snprintf(path, sizeof path, "%s/sweep.csv", p->out_dir);
    afile f;
    int rc = afile_open(&f, path);
    if (rc != SS_OK) return rc;
    *n_bad = *n_pending = 0;
    fprintf(f.fp, "index,point");
    for (int a = 0; a < p->n_axes; a++) {
        fputc(',', f.fp);
        csv_write_field(f.fp, p->axis_key[a]);
    }
    fprintf(f.fp, ",status");
    for (int k = 0; gathered_numbers[k]; k++)
        fprintf(f.fp, ",%s", gathered_numbers[k]);
    fprintf(f.fp, ",message\n");
    for (int i = 0; i < p->n_points; i++) {
        const sweep_point *pt = &p->points[i];
        fprintf(f.fp, "%d,", i);
        csv_write_field(f.fp, pt->name);
        for (int a = 0; a < p->n_axes; a++) {
            fputc(',', f.fp);
            if (pt->value_of[a] >= 0) csv_write_field(f.fp, p->values[a][pt->value_of[a]]);
        }
        char dir[1200];
        sweep_point_dir(p, i, dir, sizeof dir);
        cJSON *j = pt->valid ? run_summary_read(dir) : NULL;
        const char *status;
        char message[600] = "";
        if (!pt->valid) {
            status = "invalid";
            snprintf(message, sizeof message, "%s", pt->error);
        } else if (j) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
            status = cJSON_IsString(st) ? st->valuestring : "failed";
        } else {
            struct stat sb;
            status = stat(dir, &sb) == 0 ? "failed" : "pending";
            if (!strcmp(status, "failed"))
                snprintf(message, sizeof message, "no summary.json: see %s/log.txt", pt->name);
        }
        fprintf(f.fp, ",%s", status);
        if (!strcmp(status, "pending")) ++*n_pending;
        if (!strcmp(status, "invalid") || !strcmp(status, "failed") ||
            !strcmp(status, "interrupted"))
            ++*n_bad;
        for (int k = 0; gathered_numbers[k]; k++) {
            const cJSON *v = j ? cJSON_GetObjectItemCaseSensitive(j, gathered_numbers[k]) : NULL;
            if (cJSON_IsNumber(v))
                fprintf(f.fp, ",%.9g", v->valuedouble);
            else
                fputc(',', f.fp);
        }
        fputc(',', f.fp);
        csv_write_field(f.fp, message);
        fputc('\n', f.fp);
        cJSON_Delete(j);
    }
    return afile_commit(&f);
}

/* ---- running ---- */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Removes what an earlier, unfinished attempt left in dir (temporary files included). */
static int clear_dir(const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) != 0) return SS_OK;
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return ss_error_set(SS_EIO, "sweep: cannot clear %s: %s", dir, strerror(errno));
    return SS_OK;
}

typedef struct sweep_counts {
    int ran, skipped, invalid, failed;
} sweep_counts;

/* This process's share of the points, run through the job pool: job k is point first + k
 * stride. */
typedef struct sweep_jobs {
    const sweep_plan *p;
    const run_config *cfg;
    int first, stride, mine, done;
    const char *who;
    sweep_counts *cnt;
    double t0_s;
} sweep_jobs;

static int job_point(const sweep_jobs *s, int k) {
    return s->first + k * s->stride;
}

/* Before a point starts: invalid ones and (--resume) complete ones are passed over; what an
 * earlier attempt left in its directory is removed. */
static int job_prepare(void *ctx, int k) {
    sweep_jobs *s = ctx;
    const int i = job_point(s, k);
    const sweep_point *pt = &s->p->points[i];
    char dir[1200];
    sweep_point_dir(s->p, i, dir, sizeof dir);
    if (!pt->valid) {
        s->cnt->invalid++;
        printf("%s[%d/%d] %s: invalid, not run: %s\n", s->who, ++s->done, s->mine, pt->name,
               pt->error);
        return SIM_POOL_SKIP;
    }
    if (s->cfg->resume && run_record_complete(dir)) {
        s->cnt->skipped++;
        printf("%s[%d/%d] %s: complete, skipped (--resume)\n", s->who, ++s->done, s->mine,
               pt->name);
        return SIM_POOL_SKIP;
    }
    return clear_dir(dir);
}

static void job_log_path(void *ctx, int k, char *buf, size_t n) {
    const sweep_jobs *s = ctx;
    char dir[1200];
    sweep_point_dir(s->p, job_point(s, k), dir, sizeof dir);
    snprintf(buf, n, "%s/log.txt", dir);
}

/* The child of one point: `syncsim COMMAND` with the point's options. */
static int job_run(void *ctx, int k) {
    const sweep_jobs *s = ctx;
    const sweep_point *pt = &s->p->points[job_point(s, k)];
    /* One BLAS thread per point: results do not depend on --jobs, and points share the cores. */
    openblas_set_num_threads(1);
    run_config cfg;
    int rc = options_parse(s->p->command, pt->argc, pt->argv, &cfg);
    if (rc == SS_OK) rc = s->p->command == CMD_REPLAY ? cmd_replay(&cfg) : cmd_train(&cfg);
    if (rc != SS_OK && rc != SS_EDIVERGED) fprintf(stderr, "syncsim: %s\n", ss_error_message());
    fflush(NULL);
    return ss_status_exit_code(rc);
}

static void job_done(void *ctx, int k, const sim_job_end *end) {
    sweep_jobs *s = ctx;
    const int i = job_point(s, k);
    char dir[1200];
    sweep_point_dir(s->p, i, dir, sizeof dir);
    const int complete = run_record_complete(dir), code = end->exit_code;
    s->cnt->ran++;
    if (!complete) s->cnt->failed++;
    printf("%s[%d/%d] %s: %s (%.0f s)\n", s->who, ++s->done, s->mine, s->p->points[i].name,
           complete ? (code == 3 ? "diverged" : "ok")
                    : (code == 130 ? "interrupted" : "FAILED, see log.txt"),
           outputs_wall_s() - s->t0_s);
    fflush(stdout);
}

/* Runs the points i with i mod stride = first, jobs at once; *interrupted: a signal stopped
 * them. */
static int run_points(const sweep_plan *p, const run_config *cfg, int first, int stride,
                      const char *who, sweep_counts *cnt, int *interrupted) {
    sweep_jobs s = {p, cfg, first, stride, 0, 0, who, cnt, outputs_wall_s()};
    for (int i = first; i < p->n_points; i += stride)
        s.mine++;
    const sim_pool pool = {s.mine, cfg->jobs, &s, job_prepare, job_log_path, job_run, job_done};
    sim_pool_report rep;
    const int rc = sim_pool_run(&pool, NULL, &rep);
    fflush(stdout);
    *interrupted = rep.interrupted;
    return rc;
}

/* "I/K" -> first, count. */
static int parse_shard(const char *text, int *index, int *count) {
    char *end;
    long i = strtol(text, &end, 10);
    if (end == text || *end != '/') goto bad;
    const char *k_text = end + 1;
    long k = strtol(k_text, &end, 10);
    if (end == k_text || *end || k < 1 || k > 100000 || i < 0 || i >= k) goto bad;
    *index = (int)i;
    *count = (int)k;
    return SS_OK;
bad:
    return ss_error_set(SS_EUSAGE,
                        "--shard: '%s' is not I/K with 0 <= I < K (e.g. --shard "
                        "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)",
                        text);
}

static void print_help(void) {
    options_print_help(CMD_SWEEP, "syncsim sweep FILE.ini [options]", stdout);
    printf("\nThe sweep file (INI): [sweep] name, out, command (train|replay); [grid] "
           "option = v1,v2,... (an axis;\nseparate with ';' values that hold commas); "
           "[fixed] option = value. Every option is one of\n`syncsim train` (or "
           "replay). Options limited to some policies apply only to the points of\nthose "
           "policies. Example: analysis/examples/selsync-delta.ini. Under mpirun, rank r "
           "runs the\npoints i = r mod size; rank 0 writes OUT/sweep.csv.\n");
}

static void print_banner(const sweep_plan *p, int jobs, int size, int shard, int shards) {
    int invalid = 0;
    for (int i = 0; i < p->n_points; i++)
        invalid += !p->points[i].valid;
    printf("syncsim sweep %s: %d points (%d invalid", p->name, p->n_points, invalid);
    if (p->merged) printf("; %d grid combinations merged: their policy ignores an axis", p->merged);
    printf("), %d at once", jobs);
    if (size > 1) printf(" on each of %d MPI ranks", size);
    if (shards > 1) printf(", shard %d of %d", shard, shards);
    printf("; outputs in %s/points/\n", p->out_dir);
}

static int sweep_run(int argc, char **argv, int rank, int size) {
    const char *file = NULL;
    char **opts = ss_calloc((size_t)argc + 1, sizeof(char *));
    int n_opts = 0;
    for (int a = 0; a < argc; a++) {
        if (strncmp(argv[a], "--", 2) != 0 && !file)
            file = argv[a];
        else
            opts[n_opts++] = argv[a];
    }
    run_config cfg;
    int rc = options_parse(CMD_SWEEP, n_opts, opts, &cfg);
    free(opts);
    if (rc != SS_OK) return rc;
    if (cfg.help) {
        if (rank == 0) print_help();
        return SS_OK;
    }
    if (!file)
        return ss_error_set(SS_EUSAGE, "sweep needs a sweep file: syncsim sweep FILE.ini "
                                       "[--jobs J] [--resume] [--shard I/K] [--out DIR]");
    int shard = 0, shards = 1;
    if (cfg.shard[0] && (rc = parse_shard(cfg.shard, &shard, &shards)) != SS_OK) return rc;
    if (shards > 1 && size > 1)
        return ss_error_set(SS_EUSAGE, "--shard and mpirun both split the points: use one");
    sweep_plan *p;
    if ((rc = sweep_plan_load(file, options_was_set(&cfg, "out") ? cfg.out_dir : NULL, &p)) !=
        SS_OK)
        return rc;
    int first = size > 1 ? rank : shard, stride = size > 1 ? size : shards;
    char who[48] = "";
    if (size > 1) snprintf(who, sizeof who, "rank %d: ", rank);
    if (shards > 1) snprintf(who, sizeof who, "shard %d/%d: ", shard, shards);
    if (rank == 0) print_banner(p, cfg.jobs, size, shard, shards);
    fflush(stdout);
    char points_dir[RUN_CONFIG_TEXT + 16];
    snprintf(points_dir, sizeof points_dir, "%s/points", p->out_dir);
    if ((rc = ss_mkdir_p(points_dir)) != SS_OK) {
        sweep_plan_free(p);
        return rc;
    }
    outputs_install_interrupt_handler();
    sweep_counts cnt = {0};
    const double t0 = outputs_wall_s();
    int stopped = 0;
    rc = run_points(p, &cfg, first, stride, who, &cnt, &stopped);
    /* Every rank reaches the barrier, even after a failure, so that rank 0 can gather. */
    const int interrupted = ranks_sum(stopped || outputs_interrupted() ? 1 : 0);
    const int failed_ranks = ranks_sum(rc != SS_OK);
    ranks_barrier();
    int bad = 0, pending = 0;
    if (rank == 0) {
        int grc = sweep_gather(p, &bad, &pending);
        if (rc == SS_OK) rc = grc;
        printf("sweep %s: %d run, %d skipped as complete, %d invalid, %d failed or interrupted "
               "here; %s/sweep.csv (wall %.0f s)\n",
               p->name, cnt.ran, cnt.skipped, cnt.invalid, cnt.failed, p->out_dir,
               outputs_wall_s() - t0);
        if (pending)
            printf("%d point(s) not run yet (other shards, or interrupted): when they are done, "
                   "`syncsim sweep %s --resume` gathers everything\n",
                   pending, file);
    }
    char out_dir[RUN_CONFIG_TEXT];
    snprintf(out_dir, sizeof out_dir, "%s", p->out_dir);
    sweep_plan_free(p);
    if (rc != SS_OK) return rc;
    if (failed_ranks) return ss_error_set(SS_EIO, "sweep: %d rank(s) failed", failed_ranks);
    if (interrupted) return SS_EINTERRUPT;
    if (rank == 0 && bad)
        return ss_error_set(SS_EIO,
                            "sweep: %d point(s) invalid, failed or interrupted (see the status "
                            "and message columns of %s/sweep.csv)",
                            bad, out_dir);
    return SS_OK;
}

int cmd_sweep_main(int argc, char **argv) {
    int rank = 0, size = 1;
    int rc = ranks_init(&rank, &size);
    if (rc == SS_OK) rc = sweep_run(argc, argv, rank, size);
    if (rc != SS_OK && rc != SS_EINTERRUPT)
        fprintf(stderr, "syncsim: %s%s\n", size > 1 ? "" : "", ss_error_message());
    fflush(NULL);
    ranks_finalize();
    return ss_status_exit_code(rc);
}
