/* Model profiles (profile.h). */
#include "traces/profile.h"
#include "common/status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef SS_PROFILE_DIR
#define SS_PROFILE_DIR "traces/profiles"
#endif

static int number(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v) || v < 0) return -1;
    *out = v;
    return 0;
}

static int bad(const char *name, long line, const char *what, const char *detail) {
    return ss_error_set(SS_EINPUT, "%s:%ld: %s%s", name, line, what, detail ? detail : "");
}

int profile_read(FILE *fp, const char *name, model_profile *out) {
    memset(out, 0, sizeof *out);
    out->backward_factor = 2.0;
    char *buf = NULL;
    size_t cap = 0;
    long line = 0;
    int rc = SS_OK, magic = 0, total_seen = 0;
    double explicit_bwd = 0, implicit_fwd = 0, total_params = 0, total_fwd = 0;
    ssize_t len;
    while ((len = getline(&buf, &cap, fp)) >= 0) {
        line++;
        if (len > 4096 || strlen(buf) != (size_t)len) {
            rc = bad(name, line, "line too long or binary (corrupt file?)", NULL);
            break;
        }
        buf[strcspn(buf, "\r\n")] = '\0';
        char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '#') continue;
        if (magic && !strncmp(p, "description ", 12))
            snprintf(out->description, sizeof out->description, "%s", p + 12);
        char *f[8] = {NULL};
        int n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(p, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            if (n == 8) break;
            f[n++] = tok;
        }
        if (!magic) {
            if (strcmp(f[0], PROFILE_MAGIC)) {
                rc = bad(name, line,
                         "not a syncsim profile (expected '" PROFILE_MAGIC " 1' "
                         "before any other line)",
                         NULL);
                break;
            }
            double v;
            if (n != 2 || number(f[1], &v)) {
                rc = bad(name, line, "malformed version line", NULL);
                break;
            }
            if (v != PROFILE_VERSION) {
                rc = ss_error_set(SS_EINPUT,
                                  "%s:%ld: profile format version %s, this syncsim reads "
                                  "version %d; %s",
                                  name, line, f[1], PROFILE_VERSION,
                                  v > PROFILE_VERSION ? "upgrade syncsim"
                                                      : "regenerate it with "
                                                        "traces/profiles/generate_profiles.py");
                break;
            }
            magic = 1;
            continue;
        }
        if (total_seen) {
            rc = bad(name, line, "text after the total line", NULL);
            break;
        }
        if (!strcmp(f[0], "layer")) {
            double params, fwd, bwd = -1;
            if (n < 4 || n > 5) {
                rc = bad(name, line,
                         "a layer line is 'layer NAME PARAMS FORWARD_FLOPS "
                         "[BACKWARD_FLOPS]'",
                         NULL);
                break;
            }
            if (number(f[2], &params) || number(f[3], &fwd) || (n == 5 && number(f[4], &bwd))) {
                rc = bad(name, line, "layer counts must be numbers >= 0 in layer ", f[1]);
                break;
            }
            if (++out->layers > PROFILE_MAX_LAYERS) {
                rc = bad(name, line, "too many layers", NULL);
                break;
            }
            out->params += params;
            out->forward_flops_per_sample += fwd;
            if (bwd >= 0)
                explicit_bwd += bwd;
            else
                implicit_fwd += fwd;
            continue;
        }
        if (!strcmp(f[0], "total")) {
            if (n != 3 || number(f[1], &total_params) || number(f[2], &total_fwd)) {
                rc = bad(name, line, "the total line is 'total PARAMS FORWARD_FLOPS'", NULL);
                break;
            }
            if (total_params != out->params || total_fwd != out->forward_flops_per_sample) {
                char why[160];
                snprintf(why, sizeof why, " (layers sum to %.0f parameters, %.0f FLOPs)",
                         out->params, out->forward_flops_per_sample);
                rc = bad(name, line, "the total does not match the layers (corrupt file?)", why);
                break;
            }
            total_seen = 1;
            continue;
        }
        if (!strcmp(f[0], "description") || !strcmp(f[0], "input")) continue; /* free text */
        if (!strcmp(f[0], "name")) {
            if (n != 2 || strlen(f[1]) >= sizeof out->name) {
                rc = bad(name, line, "the name is one word of at most 63 characters", NULL);
                break;
            }
            snprintf(out->name, sizeof out->name, "%s", f[1]);
            continue;
        }
        double v;
        if (n != 2 || number(f[1], &v)) {
            rc = bad(name, line, "expected 'KEY NUMBER' for ", f[0]);
            break;
        }
        if (!strcmp(f[0], "backward_factor"))
            out->backward_factor = v;
        else if (!strcmp(f[0], "sample_bytes"))
            out->sample_bytes = v;
        else if (!strcmp(f[0], "published_params"))
            out->published_params = v;
        else if (!strcmp(f[0], "batch"))
            out->batch = v <= 1e6 ? (int)v : 0;
        else if (strcmp(f[0], "classes")) {
            rc = bad(name, line, "unknown key ", f[0]);
            break;
        }
    }
    free(buf);
    if (rc != SS_OK) return rc;
    if (!magic)
        return ss_error_set(SS_EINPUT, "%s: empty profile (no '" PROFILE_MAGIC " 1')", name);
    if (!total_seen)
        return ss_error_set(
            SS_EINPUT, "%s:%ld: truncated: the profile ends without its 'total' line", name, line);
    if (!out->name[0]) return ss_error_set(SS_EINPUT, "%s: the profile has no 'name' line", name);
    if (!(out->params > 0) || !(out->forward_flops_per_sample > 0))
        return ss_error_set(SS_EINPUT, "%s: the profile has no parameters or no FLOPs", name);
    out->backward_flops_per_sample = explicit_bwd + out->backward_factor * implicit_fwd;
    return SS_OK;
}

int profile_load(const char *path, model_profile *out) {
    FILE *fp = fopen(path, "r");
    if (!fp) return ss_error_set(SS_EINPUT, "cannot open profile %s: %s", path, strerror(errno));
    int rc = profile_read(fp, path, out);
    fclose(fp);
    return rc;
}

const char *profile_dir(void) {
    const char *env = getenv("SYNCSIM_PROFILE_DIR");
    return env && env[0] ? env : SS_PROFILE_DIR;
}

int profile_find(const char *name_or_path, model_profile *out) {
    size_t l = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (l > 8 && !strcmp(name_or_path + l - 8, ".profile")))
        return profile_load(name_or_path, out);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.profile", profile_dir(), name_or_path);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return ss_error_set(SS_EUSAGE,
                            "--profile: no profile '%s' in %s (provided: resnet101, vgg11, "
                            "alexnet, transformer; or give a path to a .profile file)",
                            name_or_path, profile_dir());
    int rc = profile_read(fp, path, out);
    fclose(fp);
    return rc;
}

double profile_step_flops(const model_profile *p, int batch) {
    return (double)batch * (p->forward_flops_per_sample + p->backward_flops_per_sample);
}

int profile_synthesize(const model_profile *p, const policy_config *pc, const int8_t *decisions,
                       trace **out) {
    policy_config tpc = *pc;
    tpc.compute = (sim_compute_cfg){SIM_COMPUTE_FLOPS, 1.0};
    int rc = trace_alloc(&tpc, 1, pc->steps, out);
    if (rc != SS_OK) return rc;
    trace *t = *out;
    const double flops = profile_step_flops(p, pc->batch);
    for (long s = 1; s <= pc->steps; s++) {
        trace_cell *c = &t->cells[s - 1];
        c->flops = flops;
        c->samples = pc->batch;
        c->decision = decisions ? decisions[s - 1] : 1;
        c->recorded = 1;
    }
    snprintf(t->meta.source, sizeof t->meta.source, "profile");
    snprintf(t->meta.model, sizeof t->meta.model, "%s", p->name);
    t->meta.param_count = p->params;
    t->meta.param_bytes = 4.0 * p->params;
    t->meta.sample_bytes = p->sample_bytes;
    trace_finish(t);
    return SS_OK;
}
