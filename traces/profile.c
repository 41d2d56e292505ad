/* Model profiles (profile.h). */
#include "traces/profile.h"
#include "traces/input_file.h"
#include "common/number.h"
#include "common/status.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A profile's lines, and the whole file: the largest shipped profile is a few kilobytes, and
 * PROFILE_MAX_LAYERS lines of this length would not reach the size bound */
#define PROFILE_MAX_LINE  4095
#define PROFILE_MAX_BYTES ((long long)64 << 20)
/* what --profile takes, for the message refusing another kind of file */
#define PROFILE_VALID_FILE                                                                         \
    "a profile is a NAME.profile file (traces/FORMAT.md \"Model profiles\") or the NAME of one "   \
    "in traces/profiles"

#ifndef SS_PROFILE_DIR
#define SS_PROFILE_DIR "traces/profiles"
#endif

/* A count of the profile: a decimal number >= 0. */
static int number(const char *s, double *out) {
    return number_parse_double(s, out) || *out < 0 ? -1 : 0;
}

static int bad(const char *name, long line, const char *what, const char *detail) {
    return ss_error_set(SS_EINPUT, "%s:%ld: %s%s", name, line, what, detail ? detail : "");
}

/* What the reader carries from line to line. */
typedef struct profile_reader {
    const char *name;    /* the file, for messages */
    long line;           /* 1-based number of the line being read */
    int magic;           /* the version line was read */
    int total_seen;      /* the total line was read: nothing may follow */
    double explicit_bwd; /* sum of the backward FLOPs given per layer */
    long unmeasured;     /* version 4: layer lines with '-' times */
    double implicit_fwd; /* sum of the forward FLOPs of layers without a backward count */
    int version;
} profile_reader;

/* The first line: "syncsim-profile VERSION". */
static int read_magic(profile_reader *r, char **f, int n) {
    if (strcmp(f[0], PROFILE_MAGIC))
        return bad(r->name, r->line,
                   "not a syncsim profile (expected '" PROFILE_MAGIC " 1' before any other line)",
                   NULL);
    double v;
    if (n != 2 || number(f[1], &v)) return bad(r->name, r->line, "malformed version line", NULL);
    if (v != 1 && v != 2 && v != 3 && v != PROFILE_VERSION)
        return ss_error_set(
            SS_EINPUT, "%s:%ld: profile format version %s, this syncsim reads version %d; %s",
            r->name, r->line, f[1], PROFILE_VERSION,
            v > PROFILE_VERSION ? "upgrade syncsim"
                                : "regenerate it with traces/profiles/generate_profiles.py");
    r->magic = 1;
    r->version = (int)v;
    return SS_OK;
}

/* "layer NAME PARAMS FORWARD_FLOPS [BACKWARD_FLOPS]": adds the layer to the totals. */
/* Version 2: "layer NAME PARAMS FWD BWD|- FWD_BYTES BWD_BYTES KERNELS"; version 3 adds
 * "KIND GEMM_N GEMM_K". */
static const char *const layer_kinds[] = {"conv", "linear", "norm", "pool",   "eltwise",
                                          "attn", "embed",  "loss", "maxpool"};

static int layer_kind_of(const char *word, sim_layer_kind *out) {
    for (size_t i = 0; i < sizeof layer_kinds / sizeof layer_kinds[0]; i++)
        if (!strcmp(word, layer_kinds[i])) {
            *out = i == 0   ? SIM_LAYER_CONV
                   : i == 1 ? SIM_LAYER_MATMUL
                   : i == 2 ? SIM_LAYER_NORM
                   : i == 8 ? SIM_LAYER_MAXPOOL
                            : SIM_LAYER_OTHER;
            return 0;
        }
    return -1;
}

static int read_layer_v2(profile_reader *r, char **f, int n, model_profile *out) {
    double params, fwd, bwd = -1, fb, bb, k, gn = 0, gk = 0, fs = 0, bs = 0;
    sim_layer_kind kind = SIM_LAYER_OTHER;
    const int want = r->version >= 4 ? 13 : r->version >= 3 ? 11 : 8;
    if (n != want)
        return bad(r->name, r->line,
                   r->version >= 4
                       ? "a version 4 layer line is 'layer NAME PARAMS FORWARD_FLOPS "
                         "BACKWARD_FLOPS|- FORWARD_BYTES BACKWARD_BYTES KERNELS KIND GEMM_N GEMM_K "
                         "FORWARD_S|- BACKWARD_S|-'"
                   : r->version >= 3
                       ? "a version 3 layer line is 'layer NAME PARAMS FORWARD_FLOPS "
                         "BACKWARD_FLOPS|- FORWARD_BYTES BACKWARD_BYTES KERNELS KIND GEMM_N GEMM_K'"
                       : "a version 2 layer line is 'layer NAME PARAMS FORWARD_FLOPS "
                         "BACKWARD_FLOPS|- FORWARD_BYTES BACKWARD_BYTES KERNELS'",
                   NULL);
    if (number(f[2], &params) || number(f[3], &fwd) || (strcmp(f[4], "-") && number(f[4], &bwd)) ||
        number(f[5], &fb) || number(f[6], &bb) || number(f[7], &k) || k > 1e6 ||
        (n >= 11 && (number(f[9], &gn) || number(f[10], &gk))))
        return bad(r->name, r->line, "layer counts must be numbers >= 0 in layer ", f[1]);
    if (n == 13) {
        const int dash = !strcmp(f[11], "-") + !strcmp(f[12], "-");
        if (dash == 1 || (!dash && (number(f[11], &fs) || number(f[12], &bs))))
            return bad(r->name, r->line,
                       "measured seconds are two numbers >= 0, or '- -', in layer ", f[1]);
        if (dash) r->unmeasured++;
    }
    if (n >= 11 && layer_kind_of(f[8], &kind))
        return bad(r->name, r->line,
                   "unknown layer kind (valid: conv, linear, norm, pool, eltwise, attn, embed, "
                   "loss) in layer ",
                   f[1]);
    if (++out->layers > PROFILE_MAX_LAYERS) return bad(r->name, r->line, "too many layers", NULL);
    out->layer_costs = realloc(out->layer_costs, sizeof(sim_layer_cost) * (size_t)out->layers);
    out->layer_names = realloc(out->layer_names, sizeof out->layer_names[0] * (size_t)out->layers);
    SS_ASSERT(out->layer_costs && out->layer_names);
    snprintf(out->layer_names[out->layers - 1], sizeof out->layer_names[0], "%s", f[1]);
    out->layer_costs[out->layers - 1] = (sim_layer_cost){.fwd_flops = fwd,
                                                         .bwd_flops = bwd,
                                                         .fwd_bytes = fb,
                                                         .bwd_bytes = bb,
                                                         .param_bytes = 4 * params,
                                                         .kernels = (int)k,
                                                         .kind = kind,
                                                         .gemm_n = gn,
                                                         .gemm_k = gk,
                                                         .fwd_s = fs,
                                                         .bwd_s = bs};
    out->params += params;
    out->forward_flops_per_sample += fwd;
    if (bwd >= 0)
        r->explicit_bwd += bwd;
    else
        r->implicit_fwd += fwd;
    return SS_OK;
}

static int read_layer(profile_reader *r, char **f, int n, model_profile *out) {
    double params, fwd, bwd = -1;
    if (r->version >= 2) return read_layer_v2(r, f, n, out);
    if (n < 4 || n > 5)
        return bad(r->name, r->line,
                   "a layer line is 'layer NAME PARAMS FORWARD_FLOPS [BACKWARD_FLOPS]'", NULL);
    if (number(f[2], &params) || number(f[3], &fwd) || (n == 5 && number(f[4], &bwd)))
        return bad(r->name, r->line, "layer counts must be numbers >= 0 in layer ", f[1]);
    if (++out->layers > PROFILE_MAX_LAYERS) return bad(r->name, r->line, "too many layers", NULL);
    out->params += params;
    out->forward_flops_per_sample += fwd;
    if (bwd >= 0)
        r->explicit_bwd += bwd;
    else
        r->implicit_fwd += fwd;
    return SS_OK;
}

/* "total PARAMS FORWARD_FLOPS": must equal the sums of the layers (a check against corruption). */
static int read_total(profile_reader *r, char **f, int n, const model_profile *out) {
    double total_params, total_fwd;
    if (n != 3 || number(f[1], &total_params) || number(f[2], &total_fwd))
        return bad(r->name, r->line, "the total line is 'total PARAMS FORWARD_FLOPS'", NULL);
    if (total_params != out->params || total_fwd != out->forward_flops_per_sample) {
        char why[160];
        snprintf(why, sizeof why, " (layers sum to %.0f parameters, %.0f FLOPs)", out->params,
                 out->forward_flops_per_sample);
        return bad(r->name, r->line, "the total does not match the layers (corrupt file?)", why);
    }
    r->total_seen = 1;
    return SS_OK;
}

/* "name WORD" and the numeric "KEY NUMBER" lines; description and input are free text. */
static int read_key(profile_reader *r, char **f, int n, model_profile *out) {
    if (!strcmp(f[0], "description") || !strcmp(f[0], "input")) return SS_OK;
    if (!strcmp(f[0], "measured_device")) {
        if (r->version < 4 || n != 2 || (strcmp(f[1], "cpu") && strcmp(f[1], "cuda")))
            return bad(r->name, r->line, "measured_device is cpu or cuda (version 4)", NULL);
        snprintf(out->measured_device, sizeof out->measured_device, "%s", f[1]);
        return SS_OK;
    }
    if (!strcmp(f[0], "name")) {
        if (n != 2 || strlen(f[1]) >= sizeof out->name)
            return bad(r->name, r->line, "the name is one word of at most 63 characters", NULL);
        snprintf(out->name, sizeof out->name, "%s", f[1]);
        return SS_OK;
    }
    double v;
    if (n != 2 || number(f[1], &v))
        return bad(r->name, r->line, "expected 'KEY NUMBER' for ", f[0]);
    if (!strcmp(f[0], "backward_factor"))
        out->backward_factor = v;
    else if (!strcmp(f[0], "sample_bytes"))
        out->sample_bytes = v;
    else if (!strcmp(f[0], "published_params"))
        out->published_params = v;
    else if (r->version >= 4 && !strcmp(f[0], "measured_step_s")) {
        out->measured_step_s = v;
        out->measured = 1;
    } else if (r->version >= 4 && !strcmp(f[0], "measured_gap_s"))
        out->measured_gap_s = v;
    else if (r->version >= 4 &&
             (!strcmp(f[0], "measured_batch") || !strcmp(f[0], "measured_steps"))) {
        if (v < 1 || v > 1e9 || v != floor(v))
            return bad(r->name, r->line, "expected a positive integer for ", f[0]);
        *(f[0][9] == 'b' ? &out->measured_batch : &out->measured_steps) = (int)v;
    } else if (!strcmp(f[0], "batch")) {
        /* 0 would read as "not given" and replay at the default batch instead */
        if (v < 1 || v > 1e6 || v != floor(v))
            return ss_error_set(SS_EINPUT,
                                "%s:%ld: batch must be an integer from 1 to 1000000, not "
                                "'%.32s' (the paper's batch per worker)",
                                r->name, r->line, f[1]);
        out->batch = (int)v;
    } else if (strcmp(f[0], "classes"))
        return bad(r->name, r->line, "unknown key ", f[0]);
    return SS_OK;
}

/* One line without its end of line; blank and '#' lines are skipped. */
static int read_line(profile_reader *r, char *p, model_profile *out) {
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0' || *p == '#') return SS_OK;
    if (r->magic && !strncmp(p, "description ", 12))
        snprintf(out->description, sizeof out->description, "%s", p + 12);
    if (r->magic && !strncmp(p, "input ", 6)) snprintf(out->input, sizeof out->input, "%s", p + 6);
    char *f[14] = {NULL}; /* one more than the longest line (a version 4 layer) takes */
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(p, " \t", &save); tok && n < 14; tok = strtok_r(NULL, " \t", &save))
        f[n++] = tok;
    if (!r->magic) return read_magic(r, f, n);
    if (r->total_seen) return bad(r->name, r->line, "text after the total line", NULL);
    if (!strcmp(f[0], "layer")) return read_layer(r, f, n, out);
    if (!strcmp(f[0], "total")) return read_total(r, f, n, out);
    return read_key(r, f, n, out);
}

/* What a complete profile must have once every line is read. */
static int check_complete(const profile_reader *r, model_profile *out) {
    if (!r->magic)
        return ss_error_set(SS_EINPUT, "%s: empty profile (no '" PROFILE_MAGIC " 1')", r->name);
    if (!r->total_seen)
        return ss_error_set(SS_EINPUT,
                            "%s:%ld: truncated: the profile ends without its 'total' line", r->name,
                            r->line);
    if (!out->name[0])
        return ss_error_set(SS_EINPUT, "%s: the profile has no 'name' line", r->name);
    /* 0 FLOPs is a pure-communication profile (timing a collective alone): only the
     * parameters, which size the exchange, must be there */
    if (!(out->params > 0))
        return ss_error_set(SS_EINPUT, "%s: the profile has no parameters (the exchange's size)",
                            r->name);
    if (out->measured) {
        /* the measured step is the layers' seconds and the gap: a check against corruption */
        if (r->unmeasured || !out->measured_batch || !out->measured_device[0])
            return ss_error_set(SS_EINPUT,
                                "%s: a measured profile (measured_step_s) needs measured_batch, "
                                "measured_device and the seconds of every layer",
                                r->name);
        double sum = out->measured_gap_s;
        for (int i = 0; i < out->layers; i++)
            sum += out->layer_costs[i].fwd_s + out->layer_costs[i].bwd_s;
        if (!(out->measured_step_s > 0) ||
            fabs(sum - out->measured_step_s) > 1e-6 * out->measured_step_s)
            return ss_error_set(SS_EINPUT,
                                "%s: measured_step_s %.9g is not the layers' seconds and the gap "
                                "(%.9g; corrupt file?)",
                                r->name, out->measured_step_s, sum);
    } else if (out->layer_costs && r->version >= 4 && r->unmeasured < out->layers)
        return ss_error_set(SS_EINPUT,
                            "%s: layers have measured seconds but the profile has no "
                            "measured_step_s",
                            r->name);
    out->backward_flops_per_sample = r->explicit_bwd + out->backward_factor * r->implicit_fwd;
    out->version = r->version;
    for (int i = 0; out->layer_costs && i < out->layers; i++)
        if (out->layer_costs[i].bwd_flops < 0)
            out->layer_costs[i].bwd_flops = out->backward_factor * out->layer_costs[i].fwd_flops;
    return SS_OK;
}

void profile_free(model_profile *p) {
    if (!p) return;
    free(p->layer_costs);
    p->layer_costs = NULL;
    free(p->layer_names);
    p->layer_names = NULL;
}

int profile_step_layers(const model_profile *p, int batch, sim_layer_cost *out) {
    if (!p->layer_costs)
        return ss_error_set(SS_EUSAGE,
                            "profile %s (format version %d) has no per-layer data: the compute "
                            "model and overlap cannot apply to it (regenerate it with "
                            "traces/profiles/generate_profiles.py)",
                            p->name, p->version);
    for (int i = 0; i < p->layers; i++) {
        const sim_layer_cost *l = &p->layer_costs[i];
        out[i] = (sim_layer_cost){.fwd_flops = l->fwd_flops * batch,
                                  .bwd_flops = l->bwd_flops * batch,
                                  .fwd_bytes = l->fwd_bytes * batch,
                                  .bwd_bytes = l->bwd_bytes * batch,
                                  .param_bytes = l->param_bytes,
                                  .kernels = l->kernels,
                                  .kind = l->kind,
                                  .gemm_n = l->gemm_n,
                                  .gemm_k = l->gemm_k};
    }
    return SS_OK;
}

int profile_read(FILE *fp, const char *name, model_profile *out) {
    memset(out, 0, sizeof *out);
    out->backward_factor = 2.0;
    profile_reader r = {.name = name};
    char *buf = NULL;
    size_t cap = 0;
    int rc = SS_OK;
    int got, nl;
    while (rc == SS_OK && (got = traces_input_line(fp, &buf, &cap, PROFILE_MAX_LINE, &nl)) != 0) {
        r.line++;
        if (got < 0) {
            rc = bad(name, r.line, "line too long or binary (corrupt file?)", NULL);
            break;
        }
        rc = read_line(&r, buf, out);
    }
    free(buf);
    if (rc == SS_OK) rc = check_complete(&r, out);
    if (rc != SS_OK) profile_free(out);
    return rc;
}

int profile_load(const char *path, model_profile *out) {
    FILE *fp;
    int orc = traces_input_open(path, "profile", PROFILE_VALID_FILE, PROFILE_MAX_BYTES, &fp);
    if (orc != SS_OK) return orc;
    int rc = profile_read(fp, path, out);
    fclose(fp);
    return rc;
}

const char *profile_dir(void) {
    const char *env = getenv("SYNCSIM_PROFILE_DIR");
    return env && env[0] ? env : SS_PROFILE_DIR;
}

/* The NAME of every NAME.profile of profile_dir(), sorted; *n of them (caller frees). */
static char **profile_dir_names(int *n) {
    *n = 0;
    DIR *d = opendir(profile_dir());
    if (!d) return NULL;
    char **names = NULL;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 8 || strcmp(e->d_name + l - 8, ".profile") || e->d_name[0] == '.') continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            names = realloc(names, sizeof *names * (size_t)cap);
            SS_ASSERT(names);
        }
        names[*n] = strndup(e->d_name, l - 8);
        SS_ASSERT(names[*n]);
        (*n)++;
    }
    closedir(d);
    for (int i = 1; i < *n; i++) /* insertion sort: a handful of names */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *x = names[j];
            names[j] = names[j - 1];
            names[j - 1] = x;
        }
    return names;
}

const char *profile_names(char *buf, size_t n) {
    int count;
    char **names = profile_dir_names(&count);
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        if (len < n) len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
    free(names);
    if (!count) snprintf(buf, n, "none");
    return buf;
}

int profile_print_list(FILE *out, const char *indent) {
    int count, shown = 0;
    char **names = profile_dir_names(&count);
    for (int i = 0; i < count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.profile", profile_dir(), names[i]);
        model_profile p;
        if (profile_load(path, &p) == SS_OK) {
            char batch[48] = "no batch (64)";
            if (p.batch > 0) snprintf(batch, sizeof batch, "batch %d", p.batch);
            fprintf(out, "%s%-19s %s%s%s: %s\n", indent, names[i], p.input, p.input[0] ? ", " : "",
                    batch, p.description);
            profile_free(&p);
            shown++;
        } else {
            fprintf(out, "%s%-19s (unreadable: %s)\n", indent, names[i], ss_error_message());
        }
        free(names[i]);
    }
    free(names);
    if (!count) fprintf(out, "%s(no profiles in %s)\n", indent, profile_dir());
    return shown;
}

int profile_find(const char *name_or_path, model_profile *out) {
    size_t l = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (l > 8 && !strcmp(name_or_path + l - 8, ".profile")))
        return profile_load(name_or_path, out);
    char path[1024], names[1024];
    snprintf(path, sizeof path, "%s/%s.profile", profile_dir(), name_or_path);
    if (access(path, F_OK) != 0)
        return ss_error_set(
            SS_EUSAGE,
            "--profile: no profile '%s' in %s (provided: %s; or give a path to a .profile "
            "file)",
            name_or_path, profile_dir(), profile_names(names, sizeof names));
    return profile_load(path, out);
}

double profile_step_flops(const model_profile *p, int batch) {
    return (double)batch * (p->forward_flops_per_sample + p->backward_flops_per_sample);
}

static const char *layer_kind_word(const sim_layer_cost *l) {
    return l->kind == SIM_LAYER_CONV      ? "conv"
           : l->kind == SIM_LAYER_MATMUL  ? "linear"
           : l->kind == SIM_LAYER_NORM    ? "norm"
           : l->kind == SIM_LAYER_MAXPOOL ? "maxpool"
                                          : "eltwise";
}

void profile_write(FILE *fp, const model_profile *p, const char *comments) {
    for (const char *c = comments; c && *c;) {
        size_t len = strcspn(c, "\n");
        fprintf(fp, "# %.*s\n", (int)len, c);
        c += len + (c[len] == '\n');
    }
    fprintf(fp, PROFILE_MAGIC " %d\nname %s\n", PROFILE_VERSION, p->name);
    if (p->description[0]) fprintf(fp, "description %s\n", p->description);
    if (p->input[0]) fprintf(fp, "input %s\n", p->input);
    if (p->batch > 0) fprintf(fp, "batch %d\n", p->batch);
    if (p->sample_bytes > 0) fprintf(fp, "sample_bytes %.17g\n", p->sample_bytes);
    fprintf(fp, "backward_factor %.17g\n", p->backward_factor);
    if (p->measured)
        fprintf(fp,
                "measured_device %s\nmeasured_batch %d\nmeasured_steps %d\n"
                "measured_step_s %.17g\nmeasured_gap_s %.17g\n",
                p->measured_device, p->measured_batch, p->measured_steps, p->measured_step_s,
                p->measured_gap_s);
    fprintf(fp, "# layer NAME PARAMS FORWARD_FLOPS BACKWARD_FLOPS|- FORWARD_BYTES BACKWARD_BYTES "
                "KERNELS KIND GEMM_N GEMM_K FORWARD_S|- BACKWARD_S|- (FLOPs and bytes per sample; "
                "seconds per step of measured_batch)\n");
    double params = 0, fwd = 0;
    for (int i = 0; i < p->layers; i++) {
        const sim_layer_cost *l = &p->layer_costs[i];
        /* every number at 17 digits: the total below is the sum the reader computes */
        fprintf(fp, "layer %s %.17g %.17g %.17g %.17g %.17g %d %s %.17g %.17g", p->layer_names[i],
                l->param_bytes / 4, l->fwd_flops, l->bwd_flops, l->fwd_bytes, l->bwd_bytes,
                l->kernels, layer_kind_word(l), l->gemm_n, l->gemm_k);
        if (p->measured)
            fprintf(fp, " %.17g %.17g\n", l->fwd_s, l->bwd_s);
        else
            fprintf(fp, " - -\n");
        params += l->param_bytes / 4;
        fwd += l->fwd_flops;
    }
    fprintf(fp, "total %.17g %.17g\n", params, fwd);
}

int profile_synthesize(const model_profile *p, const policy_config *pc, const int8_t *decisions,
                       trace **out) {
    policy_config tpc = *pc;
    const int measured = pc->compute.mode == SIM_COMPUTE_MEASURED;
    if (measured && !p->measured)
        return ss_error_set(SS_EUSAGE,
                            "--compute measured: profile %s has no measured times (only a "
                            "profile made by 'syncsim profile import' has; use --compute model "
                            "or flops)",
                            p->name);
    if (!measured && p->measured && !(p->forward_flops_per_sample > 0))
        return ss_error_set(SS_EUSAGE,
                            "profile %s has measured times but no FLOPs (its profiler trace gave "
                            "none): it replays with --compute measured only",
                            p->name);
    if (pc->compute.mode == SIM_COMPUTE_MODEL && !p->layer_costs)
        return ss_error_set(SS_EUSAGE,
                            "--compute model: profile %s (format version %d) has no per-layer "
                            "data (use --compute flops, or regenerate it with "
                            "traces/profiles/generate_profiles.py)",
                            p->name, p->version);
    if (measured)
        tpc.compute = (sim_compute_cfg){.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
    else if (pc->compute.mode != SIM_COMPUTE_MODEL)
        tpc.compute = (sim_compute_cfg){.mode = SIM_COMPUTE_FLOPS, .scale = 1.0};
    int rc = trace_alloc(&tpc, 1, pc->steps, out);
    if (rc != SS_OK) return rc;
    trace *t = *out;
    const double flops = profile_step_flops(p, pc->batch);
    /* measured seconds at another batch: proportional to the batch */
    const double f = measured ? pc->compute.scale * pc->batch / p->measured_batch : 0;
    for (long s = 1; s <= pc->steps; s++) {
        trace_cell *c = &t->cells[s - 1];
        c->flops = flops;
        c->compute_s = f * p->measured_step_s;
        c->samples = pc->batch;
        c->decision = decisions ? decisions[s - 1] : 1;
        c->recorded = 1;
    }
    if (p->layer_costs) {                 /* per-layer data for the compute model and overlap */
        const int gap = measured ? 1 : 0; /* the host's gap first, as a layer without parameters */
        t->n_layers = p->layers + gap;
        t->layers = ss_malloc(sizeof(sim_layer_cost) * (size_t)t->n_layers);
        profile_step_layers(p, pc->batch, t->layers + gap);
        if (measured) {
            t->layers[0] = (sim_layer_cost){.fwd_s = f * p->measured_gap_s};
            for (int i = 0; i < p->layers; i++) {
                t->layers[i + 1].fwd_s = f * p->layer_costs[i].fwd_s;
                t->layers[i + 1].bwd_s = f * p->layer_costs[i].bwd_s;
            }
        }
    }
    snprintf(t->meta.source, sizeof t->meta.source, "profile");
    snprintf(t->meta.model, sizeof t->meta.model, "%s", p->name);
    t->meta.param_count = p->params;
    t->meta.param_bytes = 4.0 * p->params;
    t->meta.sample_bytes = p->sample_bytes;
    trace_finish(t);
    return SS_OK;
}
