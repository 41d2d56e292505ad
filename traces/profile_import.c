/* A model profile from a torch.profiler Chrome trace (profile_import.h). */
#include "traces/profile_import.h"
#include "traces/chakra_import.h"
#include "traces/input_file.h"
#include "common/status.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VALID_TRACE                                                                                \
    "a Chrome trace written by torch.profiler's export_chrome_trace (bench/record_profile.py "     \
    "records one)"
#define LAYER_PREFIX "syncsim.layer:"
#define BWD_PREFIX   "autograd::engine::evaluate_function: "
#define STEP_PREFIX  "ProfilerStep#"

typedef enum ev_kind { EV_STEP, EV_LAYER, EV_BWD, EV_OP, EV_KERNEL } ev_kind;

/* One complete ("ph": "X") event of the trace. */
typedef struct ev {
    ev_kind kind;
    double ts, end; /* microseconds */
    char tid[64];   /* pid/tid: events nest on one thread only */
    long idx;       /* its index in traceEvents, for messages */
    long long seq;  /* "Sequence number" (-1: none) */
    long long ext;  /* "External id" (-1: none) */
    const char *name;
    const cJSON *args;
    int layer;    /* EV_LAYER: its layer; EV_BWD: the layer it is the backward of (-1) */
    int top;      /* EV_OP, EV_BWD: not nested in another operator on its thread */
    int step;     /* the step it falls in (-1: none) */
    double flops; /* "flops" of an operator (with_flops) */
} ev;

typedef struct layer_acc {
    char name[64];
    double first;          /* when its first own operator started (its place in the order) */
    double fwd_us, bwd_us; /* summed over the steps */
    double kernels;        /* forward operators or kernels, summed over the steps */
    double flops;          /* forward FLOPs, summed over the steps */
    double params;         /* from the params file or the operators' shapes */
    double gemm_n, gemm_k;
    sim_layer_kind kind;
    int shaped; /* params from the shapes taken already */
} layer_acc;

typedef struct importer {
    const char *path;
    ev *evs;
    long n;
    layer_acc *layers;
    int n_layers;
    int gpu;
} importer;

/* The whole file, NUL-terminated; SS_EINPUT naming it when it cannot be read. */
static int read_file(const char *path, const char *what, const char *valid, char **out) {
    FILE *fp;
    int rc = traces_input_open(path, what, valid, PROFILE_IMPORT_MAX_BYTES, &fp);
    if (rc != SS_OK) return rc;
    size_t cap = 1 << 16, len = 0;
    char *buf = ss_malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, fp)) > 0) {
        len += got;
        if (len + 1 == cap) {
            buf = realloc(buf, cap *= 2);
            SS_ASSERT(buf);
        }
    }
    int err = ferror(fp);
    fclose(fp);
    if (err) {
        free(buf);
        return ss_error_set(SS_EINPUT, "cannot read %s %s", what, path);
    }
    buf[len] = '\0';
    *out = buf;
    return SS_OK;
}

/* Parses JSON text; SS_EINPUT "PATH:LINE: not valid JSON" at the place cJSON stopped. */
static int parse_json(const char *path, const char *text, const char *valid, cJSON **out) {
    *out = cJSON_Parse(text);
    if (*out) return SS_OK;
    const char *at = cJSON_GetErrorPtr();
    long line = 1;
    for (const char *p = text; at && p < at && *p; p++)
        line += *p == '\n';
    return ss_error_set(SS_EINPUT, "%s:%ld: not valid JSON (%s)", path, line, valid);
}

static int starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* An integer argument ("Sequence number", "External id"); -1 when absent or out of range. */
static long long arg_id(const cJSON *args, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0)
        return -1;
    return (long long)v->valuedouble;
}

static void id_text(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsNumber(v))
        snprintf(buf, n, "%.17g", v->valuedouble);
    else if (cJSON_IsString(v))
        snprintf(buf, n, "%s", v->valuestring);
    else
        snprintf(buf, n, "?");
}

/* The trace's complete events, classified. */
static int collect(importer *im, const cJSON *root) {
    const cJSON *events =
        cJSON_IsObject(root) ? cJSON_GetObjectItemCaseSensitive(root, "traceEvents") : NULL;
    if (!cJSON_IsArray(events))
        return ss_error_set(SS_EINPUT,
                            "%s: no \"traceEvents\" array: not %s (nor Chakra's JSON form, "
                            "which has a \"workload_graph\" array)",
                            im->path, VALID_TRACE);
    long total = cJSON_GetArraySize(events), i = -1;
    im->evs = ss_malloc(sizeof(ev) * (size_t)(total > 0 ? total : 1));
    const cJSON *e;
    cJSON_ArrayForEach(e, events) {
        i++;
        if (!cJSON_IsObject(e))
            return ss_error_set(SS_EINPUT, "%s: traceEvents[%ld] is not an object: not %s",
                                im->path, i, VALID_TRACE);
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
        if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X")) continue;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
        const cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
        const cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
        if (!cJSON_IsString(name) || !cJSON_IsNumber(ts) || !cJSON_IsNumber(dur) ||
            !(dur->valuedouble >= 0) || !isfinite(ts->valuedouble) || !isfinite(dur->valuedouble))
            return ss_error_set(SS_EINPUT,
                                "%s: traceEvents[%ld]: a complete event (\"ph\": \"X\") needs a "
                                "string \"name\", a number \"ts\" and a number \"dur\" >= 0",
                                im->path, i);
        const char *c = cJSON_IsString(cat) ? cat->valuestring : "";
        const char *nm = name->valuestring;
        ev v = {.ts = ts->valuedouble,
                .end = ts->valuedouble + dur->valuedouble,
                .idx = i,
                .name = nm,
                .args = cJSON_GetObjectItemCaseSensitive(e, "args"),
                .layer = -1,
                .step = -1};
        if (!strcmp(c, "kernel"))
            v.kind = EV_KERNEL;
        else if (starts(c, "gpu_") || starts(c, "cuda_"))
            continue; /* the device copies of the ranges; runtime calls */
        else if (starts(nm, STEP_PREFIX))
            v.kind = EV_STEP;
        else if (starts(nm, LAYER_PREFIX))
            v.kind = EV_LAYER;
        else if (starts(nm, BWD_PREFIX))
            v.kind = EV_BWD;
        else if (!strcmp(c, "cpu_op"))
            v.kind = EV_OP;
        else
            continue;
        v.seq = arg_id(v.args, "Sequence number");
        v.ext = arg_id(v.args, "External id");
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(v.args, "flops");
        v.flops = cJSON_IsNumber(fl) && fl->valuedouble > 0 ? fl->valuedouble : 0;
        char p[30], t[30];
        id_text(cJSON_GetObjectItemCaseSensitive(e, "pid"), p, sizeof p);
        id_text(cJSON_GetObjectItemCaseSensitive(e, "tid"), t, sizeof t);
        snprintf(v.tid, sizeof v.tid, "%s/%s", p, t);
        if (v.kind == EV_LAYER && (strlen(nm) == strlen(LAYER_PREFIX) ||
                                   strlen(nm) - strlen(LAYER_PREFIX) >= sizeof im->layers->name ||
                                   strpbrk(nm + strlen(LAYER_PREFIX), " \t\n")))
            return ss_error_set(SS_EINPUT,
                                "%s: traceEvents[%ld]: layer range '%.80s': the layer's name is "
                                "one word of 1 to 63 characters",
                                im->path, i, nm);
        if (v.kind == EV_KERNEL) im->gpu = 1;
        im->evs[im->n++] = v;
    }
    return SS_OK;
}

static int by_thread_time(const void *a, const void *b) {
    const ev *x = a, *y = b;
    int c = strcmp(x->tid, y->tid);
    if (c) return c;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->end != y->end) return x->end > y->end ? -1 : 1; /* the enclosing one first */
    return x->kind < y->kind ? -1 : x->kind > y->kind;     /* a step before a layer range */
}

static int by_time(const void *a, const void *b) {
    const ev *x = *(const ev *const *)a, *y = *(const ev *const *)b;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int layer_index(importer *im, const char *name) {
    for (int l = 0; l < im->n_layers; l++)
        if (!strcmp(im->layers[l].name, name)) return l;
    im->layers = realloc(im->layers, sizeof(layer_acc) * (size_t)(im->n_layers + 1));
    SS_ASSERT(im->layers);
    im->layers[im->n_layers] = (layer_acc){.first = INFINITY};
    snprintf(im->layers[im->n_layers].name, sizeof im->layers->name, "%s", name);
    return im->n_layers++;
}

/* A product of the "Input Dims" entry k of an operator (0: none). */
static double dims_product(const cJSON *args, int k) {
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    const cJSON *d = cJSON_GetArrayItem(dims, k);
    if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) == 0) return 0;
    double p = 1;
    const cJSON *x;
    cJSON_ArrayForEach(x, d) p *= cJSON_IsNumber(x) && x->valuedouble > 0 ? x->valuedouble : 0;
    return p;
}

/* Without a params file: a layer's parameters and kind from its first operator's name and input
 * shapes (weight and bias of a linear, convolution or normalization, an embedding's table). */
static void shape_params(layer_acc *l, const ev *op) {
    const char *n = op->name;
    if (l->shaped) return;
    l->shaped = 1;
    if (!strcmp(n, "aten::linear") || !strcmp(n, "aten::addmm")) {
        l->kind = SIM_LAYER_MATMUL;
        l->params = !strcmp(n, "aten::linear")
                        ? dims_product(op->args, 1) + dims_product(op->args, 2)
                        : dims_product(op->args, 2) + dims_product(op->args, 0);
    } else if (starts(n, "aten::conv") || !strcmp(n, "aten::_convolution")) {
        l->kind = SIM_LAYER_CONV;
        l->params = dims_product(op->args, 1) + dims_product(op->args, 2);
    } else if (!strcmp(n, "aten::batch_norm")) {
        l->kind = SIM_LAYER_NORM;
        l->params = dims_product(op->args, 1) + dims_product(op->args, 2);
    } else if (!strcmp(n, "aten::layer_norm") || !strcmp(n, "aten::group_norm")) {
        l->kind = SIM_LAYER_NORM;
        l->params = dims_product(op->args, 2) + dims_product(op->args, 3);
    } else if (!strcmp(n, "aten::embedding")) {
        l->params = dims_product(op->args, 0);
    }
}

/* Whether outer (a range on the same thread) holds inner. */
static int holds(const ev *outer, const ev *inner) {
    return !strcmp(outer->tid, inner->tid) && outer->ts <= inner->ts && inner->end <= outer->end;
}

typedef struct seq_layer {
    long long seq;
    int layer;
} seq_layer;

static int by_seq(const void *a, const void *b) {
    const seq_layer *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorted by thread and time: marks the top-level operators and backward functions, and gives
 * each operator its innermost layer range (by the stack of open ranges of its thread). */
static void nest(importer *im, const int with_shapes) {
    qsort(im->evs, (size_t)im->n, sizeof(ev), by_thread_time);
    const ev **layer_stack = ss_malloc(sizeof(ev *) * (size_t)(im->n + 1));
    const ev **op_stack = ss_malloc(sizeof(ev *) * (size_t)(im->n + 1));
    int nl = 0, no = 0;
    for (long i = 0; i < im->n; i++) {
        ev *v = &im->evs[i];
        if (i > 0 && strcmp(v->tid, im->evs[i - 1].tid)) nl = no = 0;
        while (nl > 0 && !holds(layer_stack[nl - 1], v))
            nl--;
        while (no > 0 && !holds(op_stack[no - 1], v))
            no--;
        if (v->kind == EV_LAYER) {
            v->layer = layer_index(im, v->name + strlen(LAYER_PREFIX));
            layer_stack[nl++] = v;
        } else if (v->kind == EV_OP || v->kind == EV_BWD) {
            v->top = no == 0;
            /* an operator in a layer's range; backward functions are mapped by sequence */
            if (v->kind == EV_OP && nl > 0) v->layer = layer_stack[nl - 1]->layer;
            if (v->top && v->layer >= 0) {
                layer_acc *l = &im->layers[v->layer];
                if (v->ts < l->first) l->first = v->ts;
                if (with_shapes) shape_params(l, v);
            }
            op_stack[no++] = v;
        }
    }
    free(layer_stack);
    free(op_stack);
}

/* Each event's step, by its time on the steps' thread (a kernel later, by its operator). */
static int assign_steps(importer *im, const ev ***steps_out, int *n_steps) {
    int ns = 0;
    for (long i = 0; i < im->n; i++)
        ns += im->evs[i].kind == EV_STEP;
    if (ns == 0)
        return ss_error_set(SS_EINPUT,
                            "%s: the trace has no steps (no '" STEP_PREFIX
                            "N' range: record with a torch.profiler schedule and call prof.step() "
                            "after every step, as bench/record_profile.py does)",
                            im->path);
    const ev **steps = ss_malloc(sizeof(ev *) * (size_t)ns);
    ns = 0;
    for (long i = 0; i < im->n; i++)
        if (im->evs[i].kind == EV_STEP) steps[ns++] = &im->evs[i];
    qsort(steps, (size_t)ns, sizeof(ev *), by_time);
    for (long i = 0; i < im->n; i++) {
        ev *v = &im->evs[i];
        if (v->kind == EV_STEP || v->kind == EV_KERNEL) continue;
        for (int s = 0; s < ns; s++)
            if (steps[s]->ts <= v->ts && v->end <= steps[s]->end) {
                v->step = s;
                break;
            }
    }
    *steps_out = steps;
    *n_steps = ns;
    return SS_OK;
}

/* The backward functions' layers: by the sequence number of a forward operator of the layer;
 * a gradient accumulation (no sequence number) takes the layer of the backward function before
 * it on its thread. */
static void map_backward(importer *im) {
    seq_layer *map = ss_malloc(sizeof(seq_layer) * (size_t)(im->n + 1));
    long m = 0;
    for (long i = 0; i < im->n; i++)
        if (im->evs[i].kind == EV_OP && im->evs[i].seq >= 0 && im->evs[i].layer >= 0)
            map[m++] = (seq_layer){im->evs[i].seq, im->evs[i].layer};
    qsort(map, (size_t)m, sizeof(seq_layer), by_seq);
    int last = -1;
    const char *last_tid = "";
    for (long i = 0; i < im->n; i++) { /* by thread and time */
        ev *v = &im->evs[i];
        if (v->kind != EV_BWD || !v->top) continue;
        if (strcmp(v->tid, last_tid)) last = -1;
        last_tid = v->tid;
        const seq_layer key = {v->seq, 0}, *hit = NULL;
        if (v->seq >= 0) hit = bsearch(&key, map, (size_t)m, sizeof(seq_layer), by_seq);
        if (hit)
            v->layer = last = hit->layer;
        else if (strstr(v->name, "AccumulateGrad"))
            v->layer = last;
        else
            last = -1; /* the loss's or the graph root's: the host's */
    }
    free(map);
}

/* The CPU-side event that launched a GPU kernel: by "External id", the innermost such. */
typedef struct ext_ref {
    long long ext;
    const ev *op;
} ext_ref;

static int by_ext(const void *a, const void *b) {
    const ext_ref *x = a, *y = b;
    return x->ext < y->ext ? -1 : x->ext > y->ext;
}

/* Sums every layer's time over the steps: its top-level operators (CPU) or kernels (GPU). */
static void accumulate(importer *im) {
    ext_ref *refs = NULL;
    long nr = 0;
    const ev **bwd_of = NULL; /* for an operator nested in a backward function: that function */
    if (im->gpu) {
        refs = ss_malloc(sizeof(ext_ref) * (size_t)(im->n + 1));
        bwd_of = ss_malloc(sizeof(ev *) * (size_t)(im->n + 1));
        const ev *open_bwd = NULL;
        for (long i = 0; i < im->n; i++) {
            const ev *v = &im->evs[i];
            bwd_of[i] = NULL;
            if (v->kind == EV_BWD && v->top) open_bwd = v;
            if ((v->kind == EV_OP || v->kind == EV_BWD) && open_bwd && holds(open_bwd, v))
                bwd_of[i] = open_bwd;
            /* the later (inner) operator of an id overrides: sorted by time, keep the last */
            if ((v->kind == EV_OP || v->kind == EV_BWD) && v->ext >= 0)
                refs[nr++] = (ext_ref){v->ext, v};
        }
        qsort(refs, (size_t)nr, sizeof(ext_ref), by_ext);
    }
    for (long i = 0; i < im->n; i++) {
        const ev *v = &im->evs[i];
        if (!im->gpu) {
            if (v->step < 0 || !v->top) continue;
            if (v->kind == EV_OP && v->layer >= 0) {
                im->layers[v->layer].fwd_us += v->end - v->ts;
                im->layers[v->layer].kernels += 1;
            } else if (v->kind == EV_BWD && v->layer >= 0)
                im->layers[v->layer].bwd_us += v->end - v->ts;
        }
        if (v->kind == EV_OP && v->layer >= 0 && v->step >= 0)
            im->layers[v->layer].flops += v->flops;
        if (!im->gpu || v->kind != EV_KERNEL) continue;
        const ext_ref key = {v->ext, NULL};
        const ext_ref *r =
            v->ext >= 0 ? bsearch(&key, refs, (size_t)nr, sizeof(ext_ref), by_ext) : NULL;
        if (!r || r->op->step < 0) continue;
        const ev *op = r->op;
        const ev *b = op->kind == EV_BWD ? op : bwd_of[op - im->evs];
        if (b && b->layer >= 0)
            im->layers[b->layer].bwd_us += v->end - v->ts;
        else if (!b && op->layer >= 0) {
            im->layers[op->layer].fwd_us += v->end - v->ts;
            im->layers[op->layer].kernels += 1;
        }
    }
    free(refs);
    free(bwd_of);
}

static int by_first(const void *a, const void *b) {
    const layer_acc *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

static sim_layer_kind kind_of_type(const char *t) {
    if (strstr(t, "Conv")) return SIM_LAYER_CONV;
    if (strstr(t, "Linear")) return SIM_LAYER_MATMUL;
    if (strstr(t, "Norm")) return SIM_LAYER_NORM;
    if (strstr(t, "MaxPool")) return SIM_LAYER_MAXPOOL;
    return SIM_LAYER_OTHER;
}

/* The params file: {"batch": B, "model": NAME, "sample_bytes": S, "layers": [{"name", "type",
 * "params", "gemm_n", "gemm_k"}, ...]} (bench/record_profile.py writes it). */
static int read_params(importer *im, const char *path, model_profile *p, int *batch) {
    char *text = NULL;
    int rc =
        read_file(path, "params file", "a params JSON written by bench/record_profile.py", &text);
    if (rc != SS_OK) return rc;
    cJSON *root;
    rc = parse_json(path, text, "a params JSON written by bench/record_profile.py", &root);
    free(text);
    if (rc != SS_OK) return rc;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(root, "layers");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "batch");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const cJSON *sb = cJSON_GetObjectItemCaseSensitive(root, "sample_bytes");
    if (!cJSON_IsArray(layers)) {
        cJSON_Delete(root);
        return ss_error_set(SS_EINPUT,
                            "%s: no \"layers\" array (a params file lists each layer's name, "
                            "type and parameters; bench/record_profile.py writes one)",
                            path);
    }
    if (cJSON_IsNumber(b) && b->valuedouble >= 1 && b->valuedouble <= 1e6 &&
        b->valuedouble == floor(b->valuedouble))
        *batch = (int)b->valuedouble;
    if (cJSON_IsString(model) && model->valuestring[0] && !strpbrk(model->valuestring, " \t\n"))
        snprintf(p->name, sizeof p->name, "%.63s", model->valuestring);
    if (cJSON_IsNumber(sb) && sb->valuedouble > 0) p->sample_bytes = sb->valuedouble;
    long k = -1;
    const cJSON *l;
    cJSON_ArrayForEach(l, layers) {
        k++;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(l, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(l, "params");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(l, "type");
        if (!cJSON_IsString(name) || !cJSON_IsNumber(params) || !(params->valuedouble >= 0) ||
            !name->valuestring[0] || strlen(name->valuestring) >= sizeof im->layers->name ||
            strpbrk(name->valuestring, " \t\n")) {
            cJSON_Delete(root);
            return ss_error_set(SS_EINPUT,
                                "%s: layers[%ld] needs a \"name\" (one word, at most 63 "
                                "characters) and a number \"params\" >= 0",
                                path, k);
        }
        const int idx = layer_index(im, name->valuestring);
        layer_acc *a = &im->layers[idx];
        a->params = params->valuedouble;
        a->shaped = 1;
        if (cJSON_IsString(type)) a->kind = kind_of_type(type->valuestring);
        const cJSON *gn = cJSON_GetObjectItemCaseSensitive(l, "gemm_n");
        const cJSON *gk = cJSON_GetObjectItemCaseSensitive(l, "gemm_k");
        if (cJSON_IsNumber(gn) && gn->valuedouble > 0) a->gemm_n = gn->valuedouble;
        if (cJSON_IsNumber(gk) && gk->valuedouble > 0) a->gemm_k = gk->valuedouble;
    }
    cJSON_Delete(root);
    return SS_OK;
}

static int import_into(importer *im, const profile_import_opts *o, const cJSON *root,
                       model_profile *p, char *notes, size_t notes_n) {
    int batch = 0, rc = SS_OK;
    if (o->params_path && (rc = read_params(im, o->params_path, p, &batch)) != SS_OK) return rc;
    const int from_params = im->n_layers; /* layers the params file named */
    if (o->batch > 0) batch = o->batch;
    if (batch < 1)
        return ss_error_set(SS_EUSAGE, "profile import: the batch of a step is not known (give "
                                       "--batch B or a --params file with \"batch\")");
    if ((rc = collect(im, root)) != SS_OK) return rc;
    const int before = im->n_layers;
    nest(im, !o->params_path);
    if (im->n_layers == before && before == 0)
        return ss_error_set(SS_EINPUT,
                            "%s: no '" LAYER_PREFIX
                            "NAME' range: the layers are not marked (record the model with "
                            "bench/record_profile.py, which puts a range around every module)",
                            im->path);
    const ev **steps = NULL;
    int ns = 0;
    if ((rc = assign_steps(im, &steps, &ns)) != SS_OK) return rc;
    /* a step without any layer range is not a training step */
    for (int s = 0; s < ns; s++) {
        int any = 0;
        for (long i = 0; i < im->n && !any; i++)
            any = im->evs[i].kind == EV_LAYER && im->evs[i].step == s;
        if (!any) {
            rc = ss_error_set(SS_EINPUT,
                              "%s: traceEvents[%ld]: step range '%s' holds no layer range (a "
                              "step must run the model)",
                              im->path, steps[s]->idx, steps[s]->name);
            free(steps);
            return rc;
        }
    }
    map_backward(im);
    accumulate(im);
    double step_us = 0;
    for (int s = 0; s < ns; s++)
        step_us += steps[s]->end - steps[s]->ts;
    free(steps);
    /* layers in the order their operators ran; those of the params file that never ran (their
     * parameters still go into every exchange) after them */
    (void)from_params;
    qsort(im->layers, (size_t)im->n_layers, sizeof(layer_acc), by_first);
    /* the layers that count: time or parameters of their own (containers drop out) */
    p->layer_costs = ss_malloc(sizeof(sim_layer_cost) * (size_t)(im->n_layers + 1));
    p->layer_names = ss_malloc(sizeof p->layer_names[0] * (size_t)(im->n_layers + 1));
    double covered = 0;
    for (int l = 0; l < im->n_layers; l++) {
        const layer_acc *a = &im->layers[l];
        if (!(a->fwd_us > 0 || a->bwd_us > 0 || a->params > 0)) continue;
        const int k = p->layers++;
        snprintf(p->layer_names[k], sizeof p->layer_names[0], "%s", a->name);
        p->layer_costs[k] = (sim_layer_cost){.fwd_flops = a->flops / ns / batch,
                                             .bwd_flops = 2 * a->flops / ns / batch,
                                             .param_bytes = 4 * a->params,
                                             .kernels = (int)lround(a->kernels / ns),
                                             .kind = a->kind,
                                             .gemm_n = a->gemm_n,
                                             .gemm_k = a->gemm_k,
                                             .fwd_s = a->fwd_us / ns * 1e-6,
                                             .bwd_s = a->bwd_us / ns * 1e-6};
        p->params += a->params;
        p->forward_flops_per_sample += p->layer_costs[k].fwd_flops;
        covered += p->layer_costs[k].fwd_s + p->layer_costs[k].bwd_s;
    }
    if (!(p->params > 0))
        return ss_error_set(SS_EINPUT,
                            "%s: no layer's parameters are known (give --params FILE, which "
                            "bench/record_profile.py writes, or record with record_shapes=True)",
                            o->params_path ? o->params_path : im->path);
    p->measured = 1;
    p->measured_batch = p->batch = batch;
    p->measured_steps = ns;
    snprintf(p->measured_device, sizeof p->measured_device, "%s", im->gpu ? "cuda" : "cpu");
    const double mean_step = step_us / ns * 1e-6;
    /* kernels of several streams can overlap: the layers then cover more than the step */
    p->measured_gap_s = mean_step > covered ? mean_step - covered : 0;
    p->measured_step_s = covered + p->measured_gap_s;
    p->backward_factor = 2;
    p->version = PROFILE_VERSION;
    if (!p->name[0]) snprintf(p->name, sizeof p->name, "%s", o->name ? o->name : "imported");
    if (o->name) snprintf(p->name, sizeof p->name, "%.63s", o->name);
    const char *base = strrchr(im->path, '/');
    snprintf(p->description, sizeof p->description,
             "%s measured by torch.profiler on %s, batch %d, %d steps (%s)", p->name,
             p->measured_device, batch, ns, base ? base + 1 : im->path);
    snprintf(notes, notes_n,
             "syncsim model profile: %s, imported by 'syncsim profile import' from %s%s%s\n"
             "measured %s: mean step %.6f s over %d steps at batch %d; layers %.6f s, host gap "
             "%.6f s\nformat: traces/FORMAT.md",
             p->name, im->path, o->params_path ? " and " : "", o->params_path ? o->params_path : "",
             p->measured_device, mean_step, ns, batch, covered, p->measured_gap_s);
    return SS_OK;
}

int profile_import(const profile_import_opts *o, model_profile *out, char *notes, size_t n) {
    memset(out, 0, sizeof *out);
    if (o->name &&
        (!o->name[0] || strlen(o->name) >= sizeof out->name || strpbrk(o->name, " \t\n")))
        return ss_error_set(SS_EUSAGE, "--name: one word of 1 to 63 characters, not '%.80s'",
                            o->name);
    /* the file decides: a binary (or gzip'ed) Chakra trace, Chakra's JSON form, or a Chrome
     * trace (gzip'ed or not) */
    unsigned char *data;
    size_t len;
    int gz, rc = chakra_read_file(o->trace_path, VALID_TRACE, &data, &len, &gz);
    if (rc != SS_OK) return rc;
    if (chakra_is_binary(data, len)) {
        rc = chakra_import_binary(o, data, len, gz, out, notes, n);
        free(data);
        if (rc != SS_OK) profile_free(out);
        return rc;
    }
    cJSON *root;
    rc = parse_json(o->trace_path, (const char *)data, VALID_TRACE, &root);
    free(data);
    if (rc != SS_OK) return rc;
    importer im = {.path = o->trace_path};
    if (chakra_is_json(root))
        rc = chakra_import_json(o, root, gz, out, notes, n);
    else if (o->steps > 0)
        rc = ss_error_set(SS_EUSAGE,
                          "profile import: --steps is for Chakra execution traces; the steps of "
                          "%s, a torch.profiler trace, are its ProfilerStep ranges",
                          o->trace_path);
    else
        rc = import_into(&im, o, root, out, notes, n);
    cJSON_Delete(root);
    free(im.evs);
    free(im.layers);
    if (rc != SS_OK) profile_free(out);
    return rc;
}

int profile_import_write(const model_profile *p, const char *notes, const char *path) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return ss_error_set(SS_EUSAGE, "--out: path too long");
    FILE *fp = fopen(tmp, "w");
    if (!fp) return ss_error_set(SS_EIO, "cannot write %s: %s", tmp, strerror(errno));
    profile_write(fp, p, notes);
    int bad = ferror(fp);
    bad |= fclose(fp) != 0;
    if (bad || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ss_error_set(SS_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return SS_OK;
}
