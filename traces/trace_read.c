/* The trace reader (trace.h): a whole trace into memory, its cells indexed by (step, worker). */
#include "traces/trace_internal.h"
#include "traces/input_file.h"
#include "common/status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Allocates the cells once the header is complete (at the first record or the end line). */
static int start_records(trace_parser *r) {
    int hc = trace_parse_check_header(r);
    if (hc != SS_OK) return hc;
    r->pc.slowdown = NULL;
    int rc = trace_alloc(&r->pc, r->pc.workers, r->pc.steps, &r->t);
    if (rc != SS_OK) {
        /* the message is both an argument and the destination: copy it first */
        char why[512];
        snprintf(why, sizeof why, "%s", ss_error_message());
        return ss_error_set(SS_EINPUT, "%s:%ld: %s", r->name, r->line, why);
    }
    if (r->slowdown_text && strcmp(r->slowdown_text, "none")) {
        double *f = ss_malloc(sizeof(double) * (size_t)r->pc.workers);
        r->t->slowdown = f;
        char *p = r->slowdown_text;
        for (int w = 0; w < r->pc.workers; w++) {
            char *end;
            errno = 0;
            f[w] = strtod(p, &end);
            if (end == p || errno || !isfinite(f[w]) || f[w] <= 0 ||
                (*end != ',' && *end != '\0') || (*end == '\0' && w < r->pc.workers - 1))
                return trace_parse_error(r, "policy slowdown must list one factor > 0 per worker",
                                         NULL);
            p = *end ? end + 1 : end;
        }
        if (*p)
            return trace_parse_error(r, "policy slowdown lists more factors than workers", NULL);
    }
    return SS_OK;
}

static int record_line(trace_parser *r, char *text) {
    if (!r->t) {
        int rc = start_records(r);
        if (rc != SS_OK) return rc;
    }
    step_record rec = {0};
    int rc = trace_parse_record(r, text, &rec);
    if (rc != SS_OK) return rc;
    trace_cell *c =
        &r->t->cells[(size_t)(rec.step - 1) * (size_t)r->t->workers + (size_t)rec.worker];
    if (c->recorded) {
        char what[64];
        snprintf(what, sizeof what, "step %ld worker %d", rec.step, rec.worker);
        return trace_parse_error(r, "duplicate record of ", what);
    }
    c->compute_s = rec.compute_s;
    c->comm_s = rec.comm_s;
    c->flops = rec.flops;
    c->grad_norm = rec.grad_norm;
    c->loss = rec.loss;
    c->samples = rec.samples;
    c->decision = (int8_t)rec.decision;
    c->recorded = 1;
    r->t->records++;
    return SS_OK;
}

int trace_read(FILE *fp, const char *name, trace **out) {
    *out = NULL;
    trace_parser r;
    memset(&r, 0, sizeof r);
    r.name = name;
    r.sim_time_s = -1;
    policy_config_default(&r.pc);
    char *buf = NULL;
    size_t cap = 0;
    int rc = SS_OK, nl = 1, got;
    while ((got = trace_parse_line(fp, &buf, &cap, &nl)) != 0) {
        r.line++;
        if (got == -1) {
            rc = trace_parse_error(&r, "line too long (corrupt file?)", NULL);
            break;
        }
        if (got == -2) {
            rc = trace_parse_error(&r, "NUL byte in a line (binary or corrupt file)", NULL);
            break;
        }
        if (r.line == 1) {
            int version = 0;
            rc = trace_parse_first_line(&r, buf, &version);
            if (rc == SS_OK && version == 1)
                rc = ss_error_set(SS_EINPUT,
                                  "%s:1: trace format version 1, this syncsim reads version %d; "
                                  "version 1 lacks the policy header that replay needs: "
                                  "re-record the run with this syncsim (syncsim train --config "
                                  "OUT/config.ini)",
                                  name, TRACE_VERSION);
            if (rc != SS_OK) break;
            continue;
        }
        if (r.end_seen) {
            rc = trace_parse_error(&r, "text after the end line", NULL);
            break;
        }
        char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0') continue;
        if (*p == '#') {
            p++;
            while (*p == ' ')
                p++;
            rc = trace_parse_header_line(&r, p);
        } else {
            rc = record_line(&r, p);
        }
        if (rc != SS_OK) break;
    }
    free(buf);
    if (rc == SS_OK && r.line == 0) rc = ss_error_set(SS_EINPUT, "%s: empty file", name);
    if (rc == SS_OK && ferror(fp))
        rc = ss_error_set(SS_EIO, "%s: read error after line %ld", name, r.line);
    if (rc == SS_OK && !r.end_seen)
        rc = ss_error_set(SS_EINPUT,
                          "%s:%ld: truncated: the file ends without its '# end records = K' "
                          "line%s",
                          name, r.line, nl ? "" : " (the last line is cut)");
    if (rc == SS_OK && !r.t) rc = start_records(&r);
    if (rc == SS_OK && r.end_records != r.t->records)
        rc = ss_error_set(SS_EINPUT, "%s:%ld: the end line counts %ld records, the file holds %ld",
                          name, r.line, r.end_records, r.t->records);
    free(r.slowdown_text);
    if (rc == SS_OK && r.n_layers > 0) {
        double params = 0;
        for (int i = 0; i < r.n_layers; i++)
            params += r.layers[i].param_bytes;
        if (fabs(params - r.meta.param_bytes) > 1e-9 * r.meta.param_bytes)
            rc = ss_error_set(SS_EINPUT,
                              "%s: the layer lines hold %.17g parameter bytes, meta param_bytes "
                              "says %.17g",
                              name, params, r.meta.param_bytes);
    }
    if (rc != SS_OK) {
        trace_free(r.t);
        free(r.config);
        free(r.layers);
        return rc;
    }
    trace *t = r.t;
    t->meta = r.meta;
    t->layers = r.layers;
    t->n_layers = r.n_layers;
    t->config = r.config;
    t->n_config = r.n_config;
    t->sim_time_s = r.sim_time_s;
    trace_finish(t);
    *out = t;
    return SS_OK;
}

int trace_load(const char *path, trace **out) {
    FILE *fp;
    int rc = traces_input_open(path, "trace", TRACE_VALID_FILE, 0, &fp);
    if (rc != SS_OK) return rc;
    rc = trace_read(fp, path, out);
    fclose(fp);
    return rc;
}
