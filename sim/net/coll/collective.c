/* Collectives as messages over SimGrid mailboxes (see collective.h): the groups, the entry
 * points, the table of all-reduce algorithms (one family per coll_<family>.c), and the
 * asynchronous form. */
#include "sim/net/coll/collective.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>

#include "common/status.h"
#include "sim/net/coll/collective_internal.h"
#include "sim/net/internal.h"

static int comm_next_id;

sim_group *sim_group_create(int size, const sg_host_t *hosts) {
    SS_ASSERT(size > 0 && hosts != NULL);
    sim_group *c = ss_calloc(1, sizeof *c);
    c->id = comm_next_id++;
    c->size = size;
    c->hosts = ss_malloc((size_t)size * sizeof(sg_host_t));
    memcpy(c->hosts, hosts, (size_t)size * sizeof(sg_host_t));
    c->next_seq = ss_calloc((size_t)size, sizeof(uint64_t));
    c->bytes_sent = ss_calloc((size_t)size, sizeof(double));
    c->gather_coarse_s = -1;
    return c;
}

static void lane_close(async_lane *l);

void sim_group_destroy(sim_group *c) {
    if (!c) return;
    free(c->hosts);
    free(c->next_seq);
    free(c->bytes_sent);
    free(c->boxes.keys);
    free(c->boxes.boxes);
    sim_topology_free(c->topo);
    free(c->channel_next);
    free(c->channel_prev);
    for (int t = 0; t <= SIM_MAX_CHANNELS; t++)
        free(c->tree_links[t]);
    if (c->barrier) sg_barrier_destroy(c->barrier);
    if (c->pipe_free) c->pipe_free(c);
    for (int m = 0; c->lanes && m < c->size; m++)
        lane_close(c->lanes[m]);
    free(c->lanes);
    for (int m = 0; c->helpers && m < c->size; m++)
        sim_helper_pool_free(c->helpers[m]);
    free(c->helpers);
    free(c);
}

int sim_group_size(const sim_group *c) {
    return c->size;
}

/* The all-reduce algorithms as they run, one row per sim_allreduce_algo (coll_opts.c names them
 * in the same order); auto resolves to another row before it runs. An algorithm is its family's
 * coll_<family>.c, its row here and its name there. */
static const coll_run_fn allreduce_algos[] = {
    [SIM_ALLREDUCE_RING] = coll_run_ring,
    [SIM_ALLREDUCE_RING_COARSE] = coll_run_ring_coarse,
    [SIM_ALLREDUCE_HALVING_DOUBLING] = coll_run_hd,
    [SIM_ALLREDUCE_TREE] = coll_run_tree,
    [SIM_ALLREDUCE_HIER] = coll_run_hier,
    [SIM_ALLREDUCE_HIER_COARSE] = coll_run_hier_coarse,
    [SIM_ALLREDUCE_DBTREE] = coll_run_dbtree,
    [SIM_ALLREDUCE_RECURSIVE_DOUBLING] = coll_run_rd,
    [SIM_ALLREDUCE_AUTO] = NULL,
};
_Static_assert(sizeof allreduce_algos / sizeof allreduce_algos[0] == SIM_ALLREDUCE_AUTO + 1,
               "one row per all-reduce algorithm");

static int allreduce_seq(sim_group *c, int member, uint64_t seq, double bytes,
                         const sim_coll_opts *o, sim_coll_result *r) {
    static const sim_coll_opts defaults = {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO};
    if (!o) o = &defaults;
    if (o->segment_bytes < 0 || !isfinite(o->segment_bytes))
        return ss_error_set(SS_EUSAGE, "all-reduce: segment size %g bytes, need >= 0",
                            o->segment_bytes);
    if ((unsigned)o->algo > (unsigned)SIM_ALLREDUCE_AUTO)
        return ss_error_set(SS_EUSAGE, "all-reduce: unknown algorithm %d", (int)o->algo);
    if (o->channels < 0 || o->channels > SIM_MAX_CHANNELS)
        return ss_error_set(SS_EUSAGE, "all-reduce: %d channels, need 1 to %d", o->channels,
                            SIM_MAX_CHANNELS);
    call k;
    coll_call_begin(&k, c, member, seq, o->segment_bytes);
    if (c->size > 1) {
        sim_allreduce_algo algo = o->algo;
        sim_nccl_protocol p = SIM_PROTOCOL_AUTO;
        int channels = o->channels;
        if (algo == SIM_ALLREDUCE_AUTO) {
            coll_auto_resolve(c, bytes, o, &algo, &p); /* one search for both */
            channels = sim_allreduce_auto_algo_channels(c, o, algo);
        } else {
            p = sim_allreduce_protocol(c, o->algo, algo, bytes, o);
        }
        if (coll_takes_protocol(o->algo, o->protocol)) {
            const int fam = coll_family(algo);
            int g = 1, nodes = c->size;
            if (coll_topology(c) == SS_OK && c->topo->per_node > 1) {
                g = c->topo->per_node;
                nodes = c->topo->n_nodes;
            }
            coll_proto_set(&k, p, fam, g, nodes);
            const double base_s = coll_proto_base_s(p, fam);
            if (base_s > 0) sg_actor_sleep_for(base_s);
        }
        SS_ASSERT(allreduce_algos[algo] != NULL); /* resolved: not auto */
        allreduce_algos[algo](&k, bytes, channels);
    }
    coll_call_end(&k, r);
    return SS_OK;
}

int sim_allreduce(sim_group *c, int member, double bytes, const sim_coll_opts *o,
                  sim_coll_result *r) {
    int st = coll_check_call(c, member, bytes, "all-reduce");
    if (st) return st;
    return allreduce_seq(c, member, c->next_seq[member]++, bytes, o, r);
}

int sim_broadcast(sim_group *c, int member, int root, double bytes, sim_coll_result *r) {
    int st = coll_check_call(c, member, bytes, "broadcast");
    if (st) return st;
    if (root < 0 || root >= c->size)
        return ss_error_set(SS_EUSAGE, "broadcast: root %d out of range (group of %d)", root,
                            c->size);
    call k;
    coll_call_begin(&k, c, member, c->next_seq[member]++, 0);
    int n = c->size, rel = (member - root + n) % n, mask = 1;
    while (mask < n) {
        if (rel & mask) {
            coll_exchange(&k, -1, 0, (rel - mask + root) % n, bytes);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (rel + mask < n) coll_send_wait(&k, (rel + mask + root) % n, bytes);
    coll_call_end(&k, r);
    return SS_OK;
}

/* Point-to-point messages use instance "p" mailboxes: matched in order, no numbering. */
static sg_mailbox_t p2p_mailbox(const sim_group *c, int src, int dst) {
    char name[96];
    snprintf(name, sizeof name, "c%d.p.%d.%d", c->id, src, dst);
    return sg_mailbox_by_name(name);
}

int sim_send(sim_group *c, int member, int dst, double bytes, sim_coll_result *r) {
    int st = coll_check_call(c, member, bytes, "send");
    if (st) return st;
    if (dst < 0 || dst >= c->size)
        return ss_error_set(SS_EUSAGE, "send: destination %d out of range (group of %d)", dst,
                            c->size);
    call k;
    coll_call_begin(&k, c, member, 0, 0);
    sg_mailbox_put(p2p_mailbox(c, member, dst), &sim_token, coll_wire_bytes(bytes));
    k.res.bytes_sent = (double)coll_wire_bytes(bytes);
    coll_call_end(&k, r);
    return SS_OK;
}

int sim_recv(sim_group *c, int member, int src, double bytes, sim_coll_result *r) {
    int st = coll_check_call(c, member, bytes, "recv");
    if (st) return st;
    if (src < 0 || src >= c->size)
        return ss_error_set(SS_EUSAGE, "recv: source %d out of range (group of %d)", src, c->size);
    call k;
    coll_call_begin(&k, c, member, 0, 0);
    sg_mailbox_get(p2p_mailbox(c, src, member));
    k.res.bytes_recv = (double)coll_wire_bytes(bytes);
    coll_call_end(&k, r);
    return SS_OK;
}

/* A member's lane: its asynchronous calls, run one after the other in the order they were
 * started, by one helper actor on the member's host, as NCCL runs the calls it is given on one
 * stream (PyTorch DDP starts its bucket all-reduces on one). The helper is a daemon: it waits for
 * work until the simulation ends. */
struct async_lane {
    sg_sem_t work;     /* one release per queued request, and one to stop */
    sim_request *head; /* queued, oldest first */
    sim_request **tail;
    int closed; /* the group was destroyed: the helper stops */
    int gone;   /* the helper has ended (stopped, or ended by the engine with the simulation) */
};

static void lane_free(async_lane *l) {
    sg_sem_destroy(l->work);
    free(l);
}

/* Whichever comes last of the group's destruction and the helper's end frees the lane. */
static void lane_close(async_lane *l) {
    if (!l) return;
    l->closed = 1;
    if (l->gone)
        lane_free(l);
    else
        sg_sem_release(l->work); /* inside the simulation: the helper wakes and stops */
}

static void lane_helper_exit(int failed, void *arg) {
    (void)failed;
    async_lane *l = arg;
    l->gone = 1;
    if (l->closed) lane_free(l);
}

struct sim_request {
    sg_sem_t done_sem; /* released once when the operation completes */
    int done;          /* 1 once completed */
    int status;
    char error[512]; /* the message of a failed status, kept from the helper actor */
    sim_coll_result res;
    /* what to run */
    sim_group *c;
    int member;
    uint64_t seq;
    double bytes;
    sim_coll_opts opts;
    sim_done_fn fn;
    void *ctx;
    sim_request *next; /* the next request of the member's lane */
};

/* Runs one request and completes it; the waiter may free it from the release on. */
static void run_request(sim_request *rq) {
    rq->status = allreduce_seq(rq->c, rq->member, rq->seq, rq->bytes, &rq->opts, &rq->res);
    if (rq->status) snprintf(rq->error, sizeof rq->error, "%s", ss_error_message());
    rq->done = 1;
    if (rq->fn) rq->fn(rq->ctx, rq->member, &rq->res);
    sg_sem_release(rq->done_sem);
}

/* The helper of a lane: its requests in order, until the group is destroyed or the simulation
 * ends (a daemon, ended by the engine with the last worker). */
static void lane_helper(int argc, char **argv) {
    (void)argc;
    (void)argv;
    async_lane *l = sg_actor_self_get_data();
    sg_actor_on_exit(lane_helper_exit, l);
    sg_actor_daemonize(sg_actor_self());
    for (;;) {
        sg_sem_acquire(l->work);
        if (l->closed) return;
        sim_request *rq = l->head;
        SS_ASSERT(rq != NULL);
        l->head = rq->next;
        if (!l->head) l->tail = &l->head;
        run_request(rq);
    }
}

sim_request *sim_allreduce_async(sim_group *c, int member, double bytes, const sim_coll_opts *o,
                                 sim_done_fn done, void *ctx) {
    sim_request *rq = ss_calloc(1, sizeof *rq);
    rq->done_sem = sg_sem_init(0);
    rq->status = coll_check_call(c, member, bytes, "all-reduce");
    if (rq->status) {
        snprintf(rq->error, sizeof rq->error, "%s", ss_error_message());
        rq->done = 1;
        sg_sem_release(rq->done_sem);
        return rq;
    }
    rq->c = c;
    rq->member = member;
    rq->seq = c->next_seq[member]++;
    rq->bytes = bytes;
    rq->opts = o ? *o : (sim_coll_opts){SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO};
    rq->fn = done;
    rq->ctx = ctx;
    if (!c->lanes) c->lanes = ss_calloc((size_t)c->size, sizeof *c->lanes);
    async_lane *l = c->lanes[member];
    if (!l) {
        l = ss_calloc(1, sizeof *l);
        l->work = sg_sem_init(0);
        l->tail = &l->head;
        c->lanes[member] = l;
        char name[64];
        snprintf(name, sizeof name, "allreduce-%d", member);
        sg_actor_t a = sg_actor_init(name, c->hosts[member]);
        sg_actor_set_data(a, l);
        sg_actor_start(a, lane_helper, 0, NULL);
    }
    *l->tail = rq;
    l->tail = &rq->next;
    sg_sem_release(l->work);
    return rq;
}

int sim_request_test(const sim_request *rq) {
    SS_ASSERT(rq != NULL);
    return rq->done;
}

int sim_request_wait(sim_request *rq, sim_coll_result *r) {
    SS_ASSERT(rq != NULL);
    sg_sem_acquire(rq->done_sem);
    int st = rq->status;
    /* from the request, not ss_error_message() itself: formatting the message into its own
     * buffer overlaps, and the helper actor may run on another thread (thread contexts) */
    if (st) ss_error_set(st, "%s", rq->error);
    if (r) *r = rq->res;
    sg_sem_destroy(rq->done_sem);
    free(rq);
    return st;
}

sim_request *sim_request_new_internal(void) {
    sim_request *rq = ss_calloc(1, sizeof *rq);
    rq->done_sem = sg_sem_init(0);
    return rq;
}

void sim_request_complete_internal(sim_request *rq, int status, const sim_coll_result *r,
                                   sim_done_fn fn, void *ctx, int member) {
    rq->status = status;
    if (status) snprintf(rq->error, sizeof rq->error, "%s", ss_error_message());
    if (r) rq->res = *r;
    rq->done = 1;
    if (fn) fn(ctx, member, &rq->res);
    sg_sem_release(rq->done_sem);
}
