/* The bucket pipeline of an overlapped step in closed form (collective.h,
 * sim_allreduce_buckets): the time ring-coarse takes on flat groups, as arithmetic over the
 * routes; the calibration of the other closed forms (their first call of a size, run); and the
 * schedule of the buckets once every member has said when its buckets are ready. */
#include "sim/net/coll/collective.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/semaphore.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/config.h>
#include <xbt/dynar.h>

#include "common/status.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective_internal.h"

/* The forms already worked out, by size: a step's buckets take a few sizes. */
#define PIPE_CACHE 32

/* How a bucket's all-reduce runs in the pipeline: not at all (messages: the caller runs them),
 * in closed form (ring-coarse on flat groups), or calibrated (ring-coarse on multi-GPU nodes,
 * hier-coarse, and auto's double binary tree at scale: the first call of a size, every member
 * starting together, gives its time for the next ones). */
enum { FORM_NONE = 0, FORM_CLOSED = 1, FORM_CALIBRATED = 2 };

typedef struct pipe_form {
    double bytes;
    int form;
    double seconds;  /* < 0: not calibrated yet */
    double sent;     /* FORM_CLOSED: what every member sends */
    double *sent_of; /* FORM_CALIBRATED: (size) what each member sent */
} pipe_form;

typedef struct pipe_slot {
    int n, cap, posted;
    double *ready_max; /* (cap) the latest member's ready time of each bucket */
    double *bytes;     /* (cap) */
    double *took_max;  /* (cap) calibration: the slowest member's time */
} pipe_slot;

typedef struct coll_pipe {
    sg_sem_t *wake;  /* (size) per member: released when the last member has arrived */
    int arrived;     /* members at the barrier */
    uint64_t *calls; /* (size) per member: pipelines it has posted */
    pipe_slot slot[2];
    double *ring_bw_Bps; /* (size) per member: what its ring hop's links leave it (raw) */
    double ack_load;     /* cross traffic: weight of an acknowledgement on a link */
    double gamma;        /* TCP window bound (0: none) */
    int n_forms;
    pipe_form forms[PIPE_CACHE];
} coll_pipe;

/* A link and the weight of one flow's use of it. */
typedef struct link_use {
    sg_link_t l;
    double w;
} link_use;

static int use_cmp(const void *a, const void *b) {
    const uintptr_t x = (uintptr_t)((const link_use *)a)->l,
                    y = (uintptr_t)((const link_use *)b)->l;
    return (x > y) - (x < y);
}

/* The summed weight on link l of the sorted, merged uses. */
static double link_load(const link_use *u, size_t n, sg_link_t l) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)u[mid].l < (uintptr_t)l)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && u[lo].l == l ? u[lo].w : 0;
}

/* Calls fn for every link of member i's ring hop (back = 0) and of its way back (back = 1,
 * under cross traffic only). */
static void ring_hop_links(sim_group *c, const coll_pipe *p, int i, xbt_dynar_t route,
                           void (*fn)(void *ctx, sg_link_t l, double w), void *ctx) {
    const int n = c->size;
    for (int back = 0; back < (p->ack_load > 0 ? 2 : 1); back++) {
        xbt_dynar_reset(route);
        sg_host_get_route(c->hosts[back ? (i + 1) % n : i], c->hosts[back ? i : (i + 1) % n],
                          route);
        for (unsigned j = 0; j < xbt_dynar_length(route); j++)
            fn(ctx, xbt_dynar_get_as(route, j, sg_link_t), back ? p->ack_load : 1.0);
    }
}

typedef struct use_list {
    link_use *u;
    size_t n, cap;
} use_list;

static void use_add(void *ctx, sg_link_t l, double w) {
    use_list *ul = ctx;
    if (ul->n == ul->cap) {
        ul->cap = ul->cap ? 2 * ul->cap : 64;
        ul->u = realloc(ul->u, sizeof *ul->u * ul->cap);
        SS_ASSERT(ul->u);
    }
    ul->u[ul->n++] = (link_use){l, w};
}

typedef struct share_ctx {
    const use_list *loads;
    double bw;
} share_ctx;

static void share_min(void *ctx, sg_link_t l, double w) {
    share_ctx *s = ctx;
    const double load = sg_link_is_shared(l) ? link_load(s->loads->u, s->loads->n, l) : w;
    s->bw = fmin(s->bw, sg_link_get_bandwidth(l) / load);
}

/* What every ring hop's links leave its flow when all of them run at once, all at one rate
 * (the members are alike): on each shared link the flows crossing it weigh 1 each and, under
 * cross traffic, the acknowledgements of those coming back `ack_load` (SimGrid's LV08), so
 * that a rate r loads it by r x the summed weight; a FATPIPE link bounds each flow alone. */
static void ring_shares(sim_group *c, coll_pipe *p) {
    const int n = c->size;
    p->ring_bw_Bps = ss_malloc(sizeof(double) * (size_t)n);
    xbt_dynar_t route = xbt_dynar_new(sizeof(sg_link_t), NULL);
    use_list all = {0};
    for (int i = 0; i < n; i++)
        ring_hop_links(c, p, i, route, use_add, &all);
    qsort(all.u, all.n, sizeof *all.u, use_cmp);
    size_t m = 0; /* merge the uses of one link */
    for (size_t j = 0; j < all.n; j++) {
        if (m > 0 && all.u[m - 1].l == all.u[j].l)
            all.u[m - 1].w += all.u[j].w;
        else
            all.u[m++] = all.u[j];
    }
    all.n = m;
    for (int i = 0; i < n; i++) {
        share_ctx s = {&all, INFINITY};
        ring_hop_links(c, p, i, route, share_min, &s);
        p->ring_bw_Bps[i] = s.bw;
    }
    free(all.u);
    xbt_dynar_free(&route);
}

static void pipe_free(sim_group *c);

static coll_pipe *pipe_of(sim_group *c) {
    if (c->pipe) return c->pipe;
    coll_pipe *p = ss_calloc(1, sizeof *p);
    p->calls = ss_calloc((size_t)c->size, sizeof(uint64_t));
    p->ack_load = sg_cfg_get_boolean("network/crosstraffic") ? 0.05 : 0;
    p->gamma = sg_cfg_get_double("network/TCP-gamma");
    c->pipe = p;
    c->pipe_free = pipe_free;
    return p;
}

static void pipe_free(sim_group *c) {
    coll_pipe *p = c->pipe;
    if (!p) return;
    for (int m = 0; p->wake && m < c->size; m++)
        sg_sem_destroy(p->wake[m]);
    free(p->wake);
    free(p->calls);
    for (int s = 0; s < 2; s++) {
        free(p->slot[s].ready_max);
        free(p->slot[s].bytes);
        free(p->slot[s].took_max);
    }
    for (int i = 0; i < p->n_forms; i++)
        free(p->forms[i].sent_of);
    free(p->ring_bw_Bps);
    free(p);
    c->pipe = NULL;
}

/* ring-coarse's time for an all-reduce of `bytes` that every member starts at the same moment
 * (coll_ring_coarse: per phase the merged flows, then the wait for the step latencies), the
 * slowest member's, and the bytes a member sends. */
static double ring_coarse_s(sim_group *c, coll_pipe *p, double bytes, int proto, double *sent) {
    const int n = c->size;
    call k;
    memset(&k, 0, sizeof k);
    k.c = c;
    k.hw_dst = -1;
    double base_s = 0;
    if (proto != SIM_PROTOCOL_AUTO) {
        int g = 1, nodes = n;
        if (coll_topology(c) == SS_OK && c->topo->per_node > 1) {
            g = c->topo->per_node;
            nodes = c->topo->n_nodes;
        }
        coll_proto_set(&k, proto, NCCL_FAMILY_RING, g, nodes);
        base_s = coll_proto_base_s(proto, NCCL_FAMILY_RING);
    }
    if (!p->ring_bw_Bps) ring_shares(c, p);
    const double part = bytes * (n - 1) / n, chunk = bytes / n;
    const double alpha_max = coll_ring_alpha_max_s(c, chunk);
    const double proto_s = (n - 1) * coll_proto_set_step_s(&k, &c->ring_hops);
    double phase_s = 0;
    for (int i = 0; i < n; i++) {
        const int next = (i + 1) % n, prev = (i + n - 1) % n;
        double lat_out, lat_in, wait_out, wait_in;
        k.member = i;
        const double out = coll_merged_flow_s(&k, i, next, part, chunk, 1, p->ring_bw_Bps[i],
                                              p->gamma, &lat_out, &wait_out);
        const double in = coll_merged_flow_s(&k, prev, i, part, chunk, 1, p->ring_bw_Bps[prev],
                                             p->gamma, &lat_in, &wait_in);
        const double extra_s = (n - 1) * alpha_max - fmax(lat_out, lat_in) + proto_s;
        phase_s = fmax(phase_s, fmax(out, in) + fmax(wait_out, wait_in) + fmax(0, extra_s));
    }
    *sent = 2.0 * (double)coll_wire_bytes(part);
    return base_s + 2 * phase_s;
}

/* The form of an all-reduce of `bytes` with options o in the pipeline (worked out once per
 * size). */
static pipe_form *form_of(sim_group *c, coll_pipe *p, double bytes, const sim_coll_opts *o) {
    static pipe_form none = {.form = FORM_NONE};
    for (int i = 0; i < p->n_forms; i++)
        if (p->forms[i].bytes == bytes) return &p->forms[i];
    if (p->n_forms == PIPE_CACHE) return &none; /* more sizes than steps take: messages */
    pipe_form *f = &p->forms[p->n_forms++];
    memset(f, 0, sizeof *f);
    f->bytes = bytes;
    f->form = FORM_NONE;
    if (c->size < 2) {
        f->form = FORM_CLOSED;
        return f;
    }
    /* packets are not flows; segments cut the merged flows */
    if (sim_engine_network_model() == SIM_NETWORK_NS3 || o->segment_bytes > 0) return f;
    sim_allreduce_algo algo = o->algo;
    sim_nccl_protocol proto = SIM_PROTOCOL_AUTO;
    if (algo == SIM_ALLREDUCE_AUTO)
        coll_auto_resolve(c, bytes, o, &algo, &proto);
    else
        proto = sim_allreduce_protocol(c, o->algo, algo, bytes, o);
    if (!coll_takes_protocol(o->algo, o->protocol)) proto = SIM_PROTOCOL_AUTO;
    /* ring-coarse as arithmetic on flat groups, where it was held against the ring's messages;
     * on multi-GPU nodes, whose hops differ, its flows end apart and the arithmetic of their
     * first shares does not hold (8 % short on 32 servers of 4 GPUs): calibrated there */
    const sim_topology *t = coll_topology_of(c);
    const int flat = !t || sim_topology_is_flat(t);
    if (algo == SIM_ALLREDUCE_RING_COARSE && flat) {
        f->seconds = ring_coarse_s(c, p, bytes, proto, &f->sent);
        f->form = FORM_CLOSED;
    } else if (algo == SIM_ALLREDUCE_RING_COARSE || algo == SIM_ALLREDUCE_HIER_COARSE ||
               (algo == SIM_ALLREDUCE_DBTREE && o->algo == SIM_ALLREDUCE_AUTO &&
                c->size >= sim_coll_coarse_min_members())) {
        f->form = FORM_CALIBRATED;
        f->seconds = -1;
        f->sent_of = ss_calloc((size_t)c->size, sizeof(double));
    }
    return f;
}

/* Every member of the group waits until all have arrived; the last one wakes them in member
 * order (SimGrid's barrier wakes them in the order they arrived, which a tree's messages
 * scramble, and the workers then run in that order, step after step, at the cost of the
 * cache). */
static void barrier(sim_group *c, coll_pipe *p, int member) {
    if (!p->wake) {
        p->wake = ss_malloc(sizeof *p->wake * (size_t)c->size);
        for (int m = 0; m < c->size; m++)
            p->wake[m] = sg_sem_init(0);
    }
    if (++p->arrived == c->size) {
        p->arrived = 0;
        for (int m = 0; m < c->size; m++)
            sg_sem_release(p->wake[m]);
    }
    sg_sem_acquire(p->wake[member]);
}

static void slot_fit(pipe_slot *sl, int n) {
    if (sl->cap >= n) return;
    sl->cap = n;
    sl->ready_max = realloc(sl->ready_max, sizeof(double) * (size_t)n);
    sl->bytes = realloc(sl->bytes, sizeof(double) * (size_t)n);
    sl->took_max = realloc(sl->took_max, sizeof(double) * (size_t)n);
    SS_ASSERT(sl->ready_max && sl->bytes && sl->took_max);
}

int sim_allreduce_buckets(sim_group *c, int member, int n, const double *ready_s,
                          const double *bytes, const sim_coll_opts *o, double *end_s,
                          double *bytes_sent) {
    static const sim_coll_opts defaults = {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO};
    if (!o) o = &defaults;
    int st = coll_check_call(c, member, n > 0 ? bytes[0] : 0, "bucket all-reduces");
    if (st) return st;
    coll_pipe *p = pipe_of(c);
    for (int b = 0; b < n; b++) {
        if (!(bytes[b] > 0) || !isfinite(bytes[b]))
            return ss_error_set(SS_EUSAGE, "bucket all-reduces: bucket of %g bytes", bytes[b]);
        if (form_of(c, p, bytes[b], o)->form == FORM_NONE) return SIM_NOT_CLOSED;
    }
    const int sz = c->size;
    /* a member's k-th pipeline writes slot k % 2; nobody posts k + 2 before everyone has left
     * the barrier of k + 1, so after the reads of k below */
    pipe_slot *sl = &p->slot[p->calls[member]++ & 1];
    if (sl->posted == sz) sl->posted = 0;
    if (sl->posted == 0) {
        slot_fit(sl, n);
        sl->n = n;
        for (int b = 0; b < n; b++) {
            sl->ready_max[b] = ready_s[b];
            sl->bytes[b] = bytes[b];
            sl->took_max[b] = 0;
        }
    } else {
        SS_ASSERT(sl->n == n); /* every member posts the same buckets */
        for (int b = 0; b < n; b++) {
            SS_ASSERT(sl->bytes[b] == bytes[b]);
            if (ready_s[b] > sl->ready_max[b]) sl->ready_max[b] = ready_s[b];
        }
    }
    sl->posted++;
    barrier(c, p, member);
    /* every member's bucket b starts once the last member has it ready and bucket b - 1 is
     * done (one lane, as the asynchronous form runs them) */
    double end = -INFINITY, sent = 0;
    for (int b = 0; b < n; b++) {
        pipe_form *f = form_of(c, p, sl->bytes[b], o);
        const double start = fmax(end, sl->ready_max[b]);
        if (f->form == FORM_CALIBRATED && f->seconds < 0) {
            /* the first call of this size: its messages, every member starting together, then
             * everyone waits for the slowest */
            const double now = simgrid_get_clock();
            if (start > now) sg_actor_sleep_for(start - now);
            sim_coll_result r;
            st = sim_allreduce(c, member, sl->bytes[b], o, &r);
            if (st) return st;
            f->sent_of[member] = r.bytes_sent;
            c->bytes_sent[member] -= r.bytes_sent; /* counted below, with the others */
            const double took = simgrid_get_clock() - start;
            if (took > sl->took_max[b]) sl->took_max[b] = took;
            barrier(c, p, member);
            f->seconds = sl->took_max[b];
        } else {
            c->next_seq[member]++; /* a call of the group, as the messages count them */
        }
        end = start + f->seconds;
        sent += f->form == FORM_CLOSED ? f->sent : f->sent_of[member];
    }
    *end_s = end;
    *bytes_sent = sent;
    c->bytes_sent[member] += sent;
    return SS_OK;
}
