/* A model profile from a Chakra execution trace (chakra_import.h, traces/FORMAT.md "Chakra
 * execution traces"): the nodes' order and the mapping of a data-parallel step to layers; the
 * file is decoded by chakra_read.c. */
#include "traces/chakra_import.h"
#include "traces/chakra_internal.h"
#include "common/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const comm_names[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};

#define DP_ONLY                                                                                    \
    "syncsim imports data-parallel traces whose gradients are all-reduced (ALL_REDUCE; "           \
    "BROADCAST and BARRIER are skipped), not tensor-, pipeline- or expert-parallel ones"

/* ---- the order and the mapping ---- */

/* "node ID 'NAME' (message M at byte B)" or "(workload_graph[I])" */
static const char *node_text(const ck_graph *g, const ck_node *nd, char *buf, size_t n) {
    if (g->json)
        snprintf(buf, n, "node %llu '%.*s' (workload_graph[%ld])", (unsigned long long)nd->id,
                 (int)(nd->name_len > 100 ? 100 : nd->name_len), nd->name, nd->where);
    else
        snprintf(buf, n, "node %llu '%.*s' (message %ld at byte %zu)", (unsigned long long)nd->id,
                 (int)(nd->name_len > 100 ? 100 : nd->name_len), nd->name, nd->where, nd->off);
    return buf;
}

typedef struct id_ref {
    uint64_t id;
    long node;
} id_ref;

static int by_id(const void *a, const void *b) {
    const id_ref *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The rank (position by id) of the node with this id; -1: none. */
static long rank_of(const id_ref *by, long n, uint64_t id) {
    const id_ref key = {id, 0};
    const id_ref *r = bsearch(&key, by, (size_t)n, sizeof(id_ref), by_id);
    return r ? (long)(r - by) : -1;
}

static void heap_push(long *h, long *n, long v) {
    long i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static long heap_pop(long *h, long *n) {
    const long top = h[0], v = h[--*n];
    long i = 0;
    for (;;) {
        long c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* order[0 .. n): node indices in a topological order of data_deps, the smallest id first among
 * the ready ones (Kahn). SS_EINPUT for a duplicate id or a cycle. */
static int topo_order(const ck_graph *g, long *order) {
    const long n = g->n;
    id_ref *by = ss_malloc(sizeof(id_ref) * (size_t)(n + 1));
    for (long i = 0; i < n; i++)
        by[i] = (id_ref){g->nodes[i].id, i};
    qsort(by, (size_t)n, sizeof(id_ref), by_id);
    char t1[256], t2[256];
    int rc = SS_OK;
    for (long i = 1; i < n && rc == SS_OK; i++)
        if (by[i].id == by[i - 1].id) {
            const ck_node *a = &g->nodes[by[i - 1].node], *b = &g->nodes[by[i].node];
            if (a->where > b->where) {
                const ck_node *t = a;
                a = b;
                b = t;
            }
            rc = ss_error_set(SS_EINPUT, "%s: %s and %s have the same id", g->path,
                              node_text(g, a, t1, sizeof t1), node_text(g, b, t2, sizeof t2));
        }
    /* in-degrees over present deps, and each node's dependents (by rank, CSR) */
    long *indeg = ss_calloc((size_t)n + 1, sizeof(long));
    long *start = ss_calloc((size_t)n + 2, sizeof(long));
    long *dep_rank = ss_malloc(sizeof(long) * (size_t)(g->n_deps + 1));
    for (long r = 0; r < n && rc == SS_OK; r++) {
        const ck_node *nd = &g->nodes[by[r].node];
        for (long k = 0; k < nd->n_deps; k++) {
            const long d = rank_of(by, n, g->deps[nd->dep0 + k]);
            dep_rank[nd->dep0 + k] = d;
            if (d < 0) continue;
            indeg[r]++;
            start[d + 1]++;
        }
    }
    long *kids = NULL, *fill = NULL, *heap = NULL;
    if (rc == SS_OK) {
        for (long r = 0; r < n; r++)
            start[r + 1] += start[r];
        kids = ss_malloc(sizeof(long) * (size_t)(start[n] + 1));
        fill = ss_malloc(sizeof(long) * (size_t)(n + 1));
        memcpy(fill, start, sizeof(long) * (size_t)n);
        for (long r = 0; r < n; r++) {
            const ck_node *nd = &g->nodes[by[r].node];
            for (long k = 0; k < nd->n_deps; k++)
                if (dep_rank[nd->dep0 + k] >= 0) kids[fill[dep_rank[nd->dep0 + k]]++] = r;
        }
        heap = ss_malloc(sizeof(long) * (size_t)(n + 1));
        long nh = 0, done = 0;
        for (long r = 0; r < n; r++)
            if (indeg[r] == 0) heap_push(heap, &nh, r);
        while (nh > 0) {
            const long r = heap_pop(heap, &nh);
            order[done++] = by[r].node;
            indeg[r] = -1;
            for (long k = start[r]; k < start[r + 1]; k++)
                if (--indeg[kids[k]] == 0) heap_push(heap, &nh, kids[k]);
        }
        if (done < n) {
            /* a node left waits on another one left: n steps back along such deps end on a
             * cycle */
            long r = 0;
            while (indeg[r] <= 0)
                r++;
            for (long step = 0; step < n; step++) {
                const ck_node *nd = &g->nodes[by[r].node];
                for (long k = 0; k < nd->n_deps; k++) {
                    const long d = dep_rank[nd->dep0 + k];
                    if (d >= 0 && indeg[d] > 0) {
                        r = d;
                        break;
                    }
                }
            }
            rc = ss_error_set(SS_EINPUT,
                              "%s: the nodes' data_deps form a cycle through %s (%ld of %ld "
                              "nodes are on or after a cycle)",
                              g->path, node_text(g, &g->nodes[by[r].node], t1, sizeof t1), n - done,
                              n);
        }
    }
    free(by);
    free(indeg);
    free(start);
    free(dep_rank);
    free(kids);
    free(fill);
    free(heap);
    return rc;
}

/* Whether the name marks the backward pass: "backward" in any case, autograd's functions, or
 * "BWD" (the COMP_NODE_<layer>_BWD_WG and _BWD_IG nodes of Chakra's converter of ASTRA-sim's
 * text workloads). */
static int is_backward(const ck_node *nd) {
    static const char word[] = "backward", fn[] = "autograd::engine::evaluate_function";
    for (size_t i = 0; i < nd->name_len; i++) {
        size_t k = 0;
        while (k < sizeof word - 1 && i + k < nd->name_len && (nd->name[i + k] | 0x20) == word[k])
            k++;
        if (k == sizeof word - 1) return 1;
        if (nd->name_len - i >= sizeof fn - 1 && !memcmp(nd->name + i, fn, sizeof fn - 1)) return 1;
        if (nd->name_len - i >= 3 && !memcmp(nd->name + i, "BWD", 3)) return 1;
    }
    return 0;
}

/* What the walks over the ordered nodes find. */
typedef struct walk {
    const ck_node **ar; /* (nb) the device all-reduces with bytes, in order */
    long nb;
    long counted, comp, host_coll, zero_ar, skipped[10];
    int gpu; /* a GPU trace: the device ops are the compute counted */
    /* the times, summed over the trace's steps */
    double fwd_us, tail_us;
    double *seg_us;    /* (nb / steps) each bucket's backward segment */
    long fwd_nodes;    /* compute nodes in the forwards */
    long first_marker; /* the node that starts the first backward (-1: none named so) */
} walk;

static int counted_compute(const walk *w, const ck_node *nd) {
    return nd->type == NODE_COMP && (!w->gpu || !nd->cpu);
}

/* The collectives, in order: the all-reduces of the step in w->ar; what is skipped counted; what
 * is not data-parallel refused, naming the node. */
static int walk_collectives(const ck_graph *g, const long *order, walk *w) {
    char t1[256], t2[256];
    for (long k = 0; k < g->n; k++) {
        const ck_node *nd = &g->nodes[order[k]];
        w->counted += counted_compute(w, nd);
        if (nd->type == NODE_SEND || nd->type == NODE_RECV)
            return ss_error_set(SS_EINPUT, "%s: %s is a point-to-point %s node: " DP_ONLY, g->path,
                                node_text(g, nd, t1, sizeof t1),
                                nd->type == NODE_SEND ? "COMM_SEND" : "COMM_RECV");
        if (nd->type != NODE_COLL) continue;
        if (nd->cpu) {
            w->host_coll++;
            continue;
        }
        if (!nd->has_comm_type || nd->comm_type < 0 || nd->comm_type > 9)
            return ss_error_set(SS_EINPUT,
                                "%s: %s: a collective without a known comm_type (0 to 9)", g->path,
                                node_text(g, nd, t1, sizeof t1));
        if (nd->comm_type == COMM_BROADCAST || nd->comm_type == COMM_BARRIER) {
            w->skipped[nd->comm_type]++;
            continue;
        }
        if (nd->comm_type != COMM_ALL_REDUCE)
            return ss_error_set(SS_EINPUT, "%s: %s is a collective of type %s: " DP_ONLY, g->path,
                                node_text(g, nd, t1, sizeof t1), comm_names[nd->comm_type]);
        if (!nd->has_comm_size || nd->comm_size < 0)
            return ss_error_set(SS_EINPUT,
                                "%s: %s: an ALL_REDUCE without a comm_size >= 0 (its bytes, the "
                                "bucket's gradients)",
                                g->path, node_text(g, nd, t1, sizeof t1));
        if (nd->comm_size == 0) { /* a layer without gradients ("NONE 0" of a text workload) */
            w->zero_ar++;
            continue;
        }
        if (w->nb > 0) {
            const ck_node *f = w->ar[0];
            const size_t la = f->pg ? f->pg_len : 0, lb = nd->pg ? nd->pg_len : 0;
            if (la != lb || (la && memcmp(f->pg, nd->pg, la)))
                return ss_error_set(SS_EINPUT,
                                    "%s: all-reduces in two process groups, '%.*s' (%s) and "
                                    "'%.*s' (%s): " DP_ONLY,
                                    g->path, (int)(la > 60 ? 60 : la), f->pg ? f->pg : "",
                                    node_text(g, f, t1, sizeof t1), (int)(lb > 60 ? 60 : lb),
                                    nd->pg ? nd->pg : "", node_text(g, nd, t2, sizeof t2));
        }
        w->ar[w->nb++] = nd;
    }
    if (w->counted == 0)
        return ss_error_set(SS_EINPUT, "%s: no compute node (COMP_NODE) to time: nothing to replay",
                            g->path);
    if (w->nb == 0)
        return ss_error_set(SS_EINPUT,
                            "%s: no ALL_REDUCE with bytes on the device (skipped: %ld host-side "
                            "collectives, %ld BROADCAST, %ld BARRIER, %ld of 0 bytes): nothing to "
                            "exchange; " DP_ONLY,
                            g->path, w->host_coll, w->skipped[COMM_BROADCAST],
                            w->skipped[COMM_BARRIER], w->zero_ar);
    return SS_OK;
}

/* The trace's `steps` steps of `per` all-reduces each: the same bucket sizes in every step. */
static int check_steps(const ck_graph *g, const walk *w, int steps) {
    char t1[256];
    if (w->nb % steps)
        return ss_error_set(SS_EINPUT,
                            "%s: %ld all-reduces with bytes do not split into --steps %d equal "
                            "steps (give the number of training steps the trace holds)",
                            g->path, w->nb, steps);
    const long per = w->nb / steps;
    for (long j = per; j < w->nb; j++)
        if (w->ar[j]->comm_size != w->ar[j % per]->comm_size)
            return ss_error_set(SS_EINPUT,
                                "%s: with --steps %d, step %ld's all-reduce %ld (%s) has %lld "
                                "bytes where step 1's has %lld: not the same step repeated",
                                g->path, steps, j / per + 1, j % per + 1,
                                node_text(g, w->ar[j], t1, sizeof t1), w->ar[j]->comm_size,
                                w->ar[j % per]->comm_size);
    return SS_OK;
}

/* The compute, in order: in each step, what comes before its first node named as backward is
 * its forward (with no such node anywhere, every forward is 0), then what comes up to each
 * all-reduce is that bucket's backward segment; after the last all-reduce of the last step, the
 * tail (the optimizer; the earlier steps' optimizers fall before the next forward). */
static void walk_times(const ck_graph *g, const long *order, int steps, walk *w) {
    const long per = w->nb / steps;
    int named = 0;
    for (long k = 0; k < g->n && !named; k++)
        named = is_backward(&g->nodes[order[k]]);
    w->first_marker = -1;
    long j = 0; /* the next all-reduce */
    int in_bwd = !named;
    for (long k = 0; k < g->n; k++) {
        const ck_node *nd = &g->nodes[order[k]];
        if (!in_bwd && j < w->nb && is_backward(nd)) {
            in_bwd = 1;
            if (w->first_marker < 0) w->first_marker = order[k];
        }
        if (counted_compute(w, nd)) {
            if (j == w->nb)
                w->tail_us += nd->dur_us;
            else if (!in_bwd) {
                w->fwd_us += nd->dur_us;
                w->fwd_nodes++;
            } else
                w->seg_us[j % per] += nd->dur_us;
        }
        if (j < w->nb && nd == w->ar[j] && ++j % per == 0) in_bwd = !named; /* a step ends */
    }
}

#define APPEND(buf, n, at, ...)                                                                    \
    do {                                                                                           \
        if ((at) < (n)) {                                                                          \
            const int w_ = snprintf((buf) + (at), (n) - (at), __VA_ARGS__);                        \
            (at) += w_ > 0 ? (size_t)w_ : 0;                                                       \
        }                                                                                          \
    } while (0)

static void write_notes(const ck_graph *g, const model_profile *p, const walk *w, int steps,
                        char *notes, size_t notes_n) {
    char t1[256];
    const long per = w->nb / steps;
    size_t at = 0;
    APPEND(notes, notes_n, at,
           "syncsim model profile: %s, imported by 'syncsim profile import' from %s\n"
           "Chakra execution trace, %s%s%s: %ld nodes, %ld compute nodes, %ld counted (%s)\n",
           p->name, g->path, g->format, g->version[0] ? ", schema " : "", g->version, g->n, w->comp,
           w->counted,
           w->gpu ? "the device ops: a GPU trace, measured_device cuda"
                  : "no device compute: a CPU trace, measured_device cpu");
    APPEND(notes, notes_n, at,
           "collectives: %ld ALL_REDUCE buckets a step, %d step%s; skipped %ld BROADCAST, %ld "
           "BARRIER, %ld host-side calls and %ld all-reduces of 0 bytes\n",
           per, steps, steps > 1 ? "s (times: the mean step)" : "", w->skipped[COMM_BROADCAST],
           w->skipped[COMM_BARRIER], w->host_coll, w->zero_ar);
    if (w->first_marker >= 0)
        APPEND(notes, notes_n, at, "forward %.6f s: the compute before %s%s\n",
               w->fwd_us * 1e-6 / steps, node_text(g, &g->nodes[w->first_marker], t1, 120),
               steps > 1 ? " (and its like in each step)" : "");
    else
        APPEND(notes, notes_n, at,
               "no node is named as backward: forward 0, all compute up to an "
               "all-reduce is its bucket's backward\n");
    APPEND(notes, notes_n, at, "buckets in trace order (bytes):");
    for (long b = 0; b < per && b < 32; b++)
        APPEND(notes, notes_n, at, " %lld", w->ar[b]->comm_size);
    double bwd_us = 0;
    for (long b = 0; b < per; b++)
        bwd_us += w->seg_us[b];
    APPEND(notes, notes_n, at,
           "%s\nstep %.6f s: forward %.6f, backward %.6f, gap after the "
           "last all-reduce %.6f\nformat: traces/FORMAT.md",
           per > 32 ? " ..." : "", p->measured_step_s, w->fwd_us * 1e-6 / steps,
           bwd_us * 1e-6 / steps, w->tail_us * 1e-6 / steps);
}

static int build_profile(ck_graph *g, const profile_import_opts *o, model_profile *p, char *notes,
                         size_t notes_n) {
    const int steps = o->steps > 0 ? o->steps : 1;
    long *order = ss_malloc(sizeof(long) * (size_t)(g->n + 1));
    walk w = {.ar = ss_malloc(sizeof(const ck_node *) * (size_t)(g->n + 1))};
    for (long i = 0; i < g->n; i++) {
        w.comp += g->nodes[i].type == NODE_COMP;
        w.gpu |= g->nodes[i].type == NODE_COMP && !g->nodes[i].cpu;
    }
    int rc = topo_order(g, order);
    if (rc == SS_OK) rc = walk_collectives(g, order, &w);
    if (rc == SS_OK) rc = check_steps(g, &w, steps);
    if (rc != SS_OK) {
        free(order);
        free(w.ar);
        return rc;
    }
    const long per = w.nb / steps;
    w.seg_us = ss_calloc((size_t)per, sizeof(double));
    walk_times(g, order, steps, &w);
    /* layer j holds bucket per - 1 - j: DDP's last bucket holds the first layers */
    p->layer_costs = ss_calloc((size_t)per, sizeof(sim_layer_cost));
    p->layer_names = ss_calloc((size_t)per, sizeof p->layer_names[0]);
    p->layers = (int)per;
    for (long j = 0; j < per; j++) {
        const ck_node *b = w.ar[per - 1 - j];
        const double params = (double)((b->comm_size + 3) / 4);
        snprintf(p->layer_names[j], sizeof p->layer_names[0], "allreduce.%llu",
                 (unsigned long long)b->id);
        p->layer_costs[j] = (sim_layer_cost){.param_bytes = 4 * params,
                                             .kernels = j == 0 ? (int)(w.fwd_nodes / steps) : 0,
                                             .kind = SIM_LAYER_OTHER,
                                             .fwd_s = j == 0 ? w.fwd_us * 1e-6 / steps : 0,
                                             .bwd_s = w.seg_us[per - 1 - j] * 1e-6 / steps};
        p->params += params;
    }
    p->measured = 1;
    p->measured_batch = p->batch = o->batch;
    p->measured_steps = steps;
    snprintf(p->measured_device, sizeof p->measured_device, "%s", w.gpu ? "cuda" : "cpu");
    p->measured_gap_s = w.tail_us * 1e-6 / steps;
    p->measured_step_s = 0;
    for (int j = 0; j < p->layers; j++)
        p->measured_step_s += p->layer_costs[j].fwd_s + p->layer_costs[j].bwd_s;
    p->measured_step_s += p->measured_gap_s;
    p->backward_factor = 2;
    p->version = PROFILE_VERSION;
    const char *base = strrchr(g->path, '/');
    base = base ? base + 1 : g->path;
    if (o->name)
        snprintf(p->name, sizeof p->name, "%s", o->name);
    else {
        size_t k = 0;
        for (; base[k] && base[k] != '.' && k + 1 < sizeof p->name; k++)
            p->name[k] = (unsigned char)base[k] <= ' ' ? '_' : base[k];
        p->name[k] = '\0';
        if (!k) snprintf(p->name, sizeof p->name, "imported");
    }
    char desc[512];
    snprintf(desc, sizeof desc,
             "%s: %s compute, batch %d, %ld all-reduce buckets, from the Chakra execution trace %s",
             p->name, p->measured_device, p->batch, per, base);
    snprintf(p->description, sizeof p->description, "%.*s", (int)sizeof p->description - 1, desc);
    write_notes(g, p, &w, steps, notes, notes_n);
    free(order);
    free(w.ar);
    free(w.seg_us);
    return SS_OK;
}

static int check_opts(const profile_import_opts *o) {
    if (o->params_path)
        return ss_error_set(SS_EUSAGE,
                            "profile import: --params is for torch.profiler traces; %s is a "
                            "Chakra execution trace, whose all-reduces give the parameters",
                            o->trace_path);
    if (o->batch < 1)
        return ss_error_set(SS_EUSAGE,
                            "profile import: %s is a Chakra execution trace, which does not "
                            "record the batch: give --batch B",
                            o->trace_path);
    return SS_OK;
}

static int finish(ck_graph *g, int rc, const profile_import_opts *o, model_profile *out,
                  char *notes, size_t n) {
    if (rc == SS_OK) rc = build_profile(g, o, out, notes, n);
    free(g->nodes);
    free(g->deps);
    return rc;
}

int chakra_import_binary(const profile_import_opts *o, const unsigned char *data, size_t len,
                         int gz, model_profile *out, char *notes, size_t n) {
    int rc = check_opts(o);
    if (rc != SS_OK) return rc;
    ck_graph g = {.path = o->trace_path, .format = gz ? "gzip-compressed binary" : "binary"};
    return finish(&g, chakra_decode_binary(&g, data, len), o, out, notes, n);
}

int chakra_import_json(const profile_import_opts *o, const struct cJSON *root, int gz,
                       model_profile *out, char *notes, size_t n) {
    int rc = check_opts(o);
    if (rc != SS_OK) return rc;
    ck_graph g = {.path = o->trace_path, .format = gz ? "gzip-compressed JSON" : "JSON", .json = 1};
    return finish(&g, chakra_decode_json(&g, root), o, out, notes, n);
}
