/* Parameter server actors and worker-side push/pull (see ps.h). */
#include "sim/net/ps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>

#include "common/status.h"
#include "sim/net/internal.h"
#include "common/jitter.h"

typedef enum ps_msg_type { PS_MSG_PUSH = 1, PS_MSG_PULL = 2 } ps_msg_type;

/* What a worker sends a server (the simulated size is separate). Freed by the server. */
typedef struct ps_msg {
    ps_msg_type type;
    int worker;
    int64_t round;
    double reply_bytes; /* pull: size of this server's shard */
    const void *payload;
} ps_msg;

/* A pull waiting for its round to be ready. */
typedef struct ps_pending {
    int worker;
    int64_t round;
    double reply_bytes;
    struct ps_pending *next;
} ps_pending;

typedef struct ps_server {
    struct sim_ps *ps;
    int index;
    int64_t *last_round; /* (n_workers) last round pushed by each worker, -1 = none */
    int64_t min_round;   /* min of last_round: every worker pushed up to here */
    ps_pending *pending; /* FIFO of waiting pulls */
} ps_server;

struct sim_ps {
    int id;
    sim_ps_opts o;
    sg_host_t *worker_hosts;        /* (n_workers) */
    sg_host_t *server_hosts;        /* (n_servers) */
    ps_server *servers;             /* (n_servers) */
    double *bytes_sent;             /* (n_workers) */
    sg_sem_t *push_ack;             /* (n_workers) released by a server once its on_push hook ran */
    sim_helper_pool **push_helpers; /* (n_workers) the asynchronous pushes' helpers (NULL: none) */
};

static int ps_next_id;

static sg_mailbox_t ps_mailbox(const struct sim_ps *ps, int worker, int server, int to_server) {
    char name[96];
    if (to_server)
        snprintf(name, sizeof name, "ps%d.w%d.s%d", ps->id, worker, server);
    else
        snprintf(name, sizeof name, "ps%d.s%d.w%d", ps->id, server, worker);
    return sg_mailbox_by_name(name);
}

static long wire(double bytes) {
    long b = lround(bytes);
    return b < 0 ? 0 : b;
}

/* Shard k of K of `bytes`: equal parts, the remainder over the first shards. */
static double shard_bytes(double bytes, int k, int n) {
    double base = floor(bytes / n), rem = bytes - base * n;
    return base + (k < rem ? 1 : 0) + (k == n - 1 ? rem - floor(rem) : 0);
}

/* The simulated size of a message of `bytes` (wire_jitter, common/jitter.h). */
static long jittered(const sim_ps *ps, double bytes, int dir, int server, int worker,
                     int64_t round) {
    if (!(ps->o.wire_jitter > 0)) return wire(bytes);
    const uint64_t stream = sim_jitter_ps_stream(dir, server, worker, round);
    return wire(bytes * sim_jitter_lognormal(ps->o.seed, stream, ps->o.wire_jitter));
}

/* ---------------------------------------------------------------- server */

static int pull_ready(const ps_server *s, int worker, int64_t round) {
    const sim_ps_opts *o = &s->ps->o;
    if (o->hooks.pull_ready) return o->hooks.pull_ready(o->hooks.ctx, s->index, worker, round);
    if (o->mode == SIM_PS_ASYNC) return 1;
    return round <= s->min_round;
}

static void reply(ps_server *s, int worker, int64_t round, double bytes) {
    const sim_ps_opts *o = &s->ps->o;
    if (o->hooks.on_pull)
        o->hooks.on_pull(o->hooks.ctx, s->index, worker, round, simgrid_get_clock());
    /* Detached before it starts (SimGrid cannot detach a started comm): the server goes on
     * receiving while the reply flows. */
    sg_comm_t comm =
        sg_mailbox_put_init(ps_mailbox(s->ps, worker, s->index, 0), &sim_token,
                            jittered(s->ps, bytes, SIM_JITTER_TO_WORKER, s->index, worker, round));
    sg_comm_detach(comm, NULL);
}

static void serve_pending(ps_server *s) {
    ps_pending **pp = &s->pending;
    while (*pp) {
        ps_pending *p = *pp;
        if (pull_ready(s, p->worker, p->round)) {
            *pp = p->next;
            reply(s, p->worker, p->round, p->reply_bytes);
            free(p);
        } else {
            pp = &p->next;
        }
    }
}

static void handle_push(ps_server *s, const ps_msg *m) {
    const sim_ps_opts *o = &s->ps->o;
    int n = o->n_workers;
    int64_t old = s->last_round[m->worker];
    if (m->round > old) s->last_round[m->worker] = m->round;
    if (o->hooks.on_push)
        o->hooks.on_push(o->hooks.ctx, s->index, m->worker, m->round, m->payload,
                         simgrid_get_clock());
    sg_sem_release(s->ps->push_ack[m->worker]);
    if (old == s->min_round && m->round > old) {
        int64_t mn = s->last_round[0];
        for (int w = 1; w < n; w++)
            if (s->last_round[w] < mn) mn = s->last_round[w];
        s->min_round = mn;
    }
    if (s->pending) serve_pending(s);
}

static void handle_pull(ps_server *s, const ps_msg *m) {
    if (!s->pending && pull_ready(s, m->worker, m->round)) {
        reply(s, m->worker, m->round, m->reply_bytes);
        return;
    }
    ps_pending *p = ss_malloc(sizeof *p);
    p->worker = m->worker;
    p->round = m->round;
    p->reply_bytes = m->reply_bytes;
    p->next = NULL;
    ps_pending **tail = &s->pending;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    serve_pending(s);
}

/* One server: a receive always posted per worker, messages handled in completion order. */
static void server_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    ps_server *s = sg_actor_self_get_data();
    SS_ASSERT(s != NULL && s->ps != NULL);
    int n = s->ps->o.n_workers;
    sg_comm_t *comms = ss_malloc((size_t)n * sizeof *comms);
    void **slots = ss_calloc((size_t)n, sizeof *slots);
    for (int w = 0; w < n; w++)
        comms[w] = sg_mailbox_get_async(ps_mailbox(s->ps, w, s->index, 1), &slots[w]);
    for (;;) {
        ssize_t w = sg_comm_wait_any(comms, (size_t)n);
        SS_ASSERT(w >= 0 && w < n);
        ps_msg *m = slots[w];
        comms[w] = sg_mailbox_get_async(ps_mailbox(s->ps, (int)w, s->index, 1), &slots[w]);
        SS_ASSERT(m != NULL && m->worker == (int)w);
        if (m->type == PS_MSG_PUSH)
            handle_push(s, m);
        else
            handle_pull(s, m);
        free(m);
    }
}

int sim_ps_start(const sim_ps_opts *o, sim_ps **out) {
    SS_ASSERT(o != NULL && out != NULL);
    *out = NULL;
    if (o->n_workers <= 0 || !o->worker_hosts)
        return ss_error_set(SS_EUSAGE, "parameter server: %d workers, need at least 1",
                            o->n_workers);
    if (o->n_servers <= 0 || !o->server_hosts)
        return ss_error_set(SS_EUSAGE, "parameter server: %d servers, need at least 1",
                            o->n_servers);
    if (!(o->request_bytes >= 0) || !isfinite(o->request_bytes))
        return ss_error_set(SS_EUSAGE, "parameter server: request size %g bytes, need >= 0",
                            o->request_bytes);
    if (!(o->wire_jitter >= 0) || !isfinite(o->wire_jitter))
        return ss_error_set(SS_EUSAGE, "parameter server: message jitter %g, need a CV >= 0",
                            o->wire_jitter);
    if ((unsigned)o->mode > SIM_PS_ASYNC)
        return ss_error_set(SS_EUSAGE, "parameter server: unknown mode %d", (int)o->mode);
    sim_ps *ps = ss_calloc(1, sizeof *ps);
    ps->id = ps_next_id++;
    ps->o = *o;
    ps->worker_hosts = ss_malloc((size_t)o->n_workers * sizeof(sg_host_t));
    memcpy(ps->worker_hosts, o->worker_hosts, (size_t)o->n_workers * sizeof(sg_host_t));
    ps->server_hosts = ss_malloc((size_t)o->n_servers * sizeof(sg_host_t));
    memcpy(ps->server_hosts, o->server_hosts, (size_t)o->n_servers * sizeof(sg_host_t));
    ps->o.worker_hosts = ps->worker_hosts;
    ps->o.server_hosts = ps->server_hosts;
    ps->bytes_sent = ss_calloc((size_t)o->n_workers, sizeof(double));
    ps->servers = ss_calloc((size_t)o->n_servers, sizeof(ps_server));
    ps->push_ack = ss_malloc((size_t)o->n_workers * sizeof(sg_sem_t));
    for (int w = 0; w < o->n_workers; w++)
        ps->push_ack[w] = sg_sem_init(0);
    ps->push_helpers = ss_calloc((size_t)o->n_workers, sizeof *ps->push_helpers);
    for (int k = 0; k < o->n_servers; k++) {
        ps_server *s = &ps->servers[k];
        s->ps = ps;
        s->index = k;
        s->min_round = -1;
        s->last_round = ss_malloc((size_t)o->n_workers * sizeof(int64_t));
        for (int w = 0; w < o->n_workers; w++)
            s->last_round[w] = -1;
        char name[64];
        snprintf(name, sizeof name, "ps%d-server-%d", ps->id, k);
        sg_actor_t a = sg_actor_init(name, ps->server_hosts[k]);
        sg_actor_set_data(a, s);
        sg_actor_start(a, server_main, 0, NULL);
        sg_actor_daemonize(a);
    }
    *out = ps;
    return SS_OK;
}

void sim_ps_free(sim_ps *ps) {
    if (!ps) return;
    for (int k = 0; k < ps->o.n_servers; k++) {
        ps_server *s = &ps->servers[k];
        for (ps_pending *p = s->pending, *next; p; p = next) {
            next = p->next;
            free(p);
        }
        free(s->last_round);
    }
    for (int w = 0; w < ps->o.n_workers; w++) {
        sg_sem_destroy(ps->push_ack[w]);
        sim_helper_pool_free(ps->push_helpers[w]);
    }
    free(ps->push_ack);
    free(ps->push_helpers);
    free(ps->servers);
    free(ps->worker_hosts);
    free(ps->server_hosts);
    free(ps->bytes_sent);
    free(ps);
}

/* ---------------------------------------------------------------- worker side */

static int check_worker(const sim_ps *ps, int worker, double bytes, const char *what) {
    if (!ps) return ss_error_set(SS_EUSAGE, "%s: no parameter server", what);
    if (worker < 0 || worker >= ps->o.n_workers)
        return ss_error_set(SS_EUSAGE, "%s: worker %d out of range (%d workers)", what, worker,
                            ps->o.n_workers);
    if (!(bytes > 0) || !isfinite(bytes))
        return ss_error_set(SS_EUSAGE, "%s: size %g bytes, need > 0", what, bytes);
    return SS_OK;
}

/* Posts one message per server; comms receives K handles. Returns bytes sent. */
static double post_to_servers(sim_ps *ps, int worker, ps_msg_type type, double bytes, int64_t round,
                              const void *payload, sg_comm_t *comms) {
    int K = ps->o.n_servers;
    double sent = 0;
    for (int k = 0; k < K; k++) {
        ps_msg *m = ss_malloc(sizeof *m);
        m->type = type;
        m->worker = worker;
        m->round = round;
        m->payload = payload;
        m->reply_bytes = shard_bytes(bytes, k, K);
        double size = type == PS_MSG_PUSH ? m->reply_bytes : ps->o.request_bytes;
        long on_wire = type == PS_MSG_PUSH
                           ? jittered(ps, size, SIM_JITTER_TO_SERVER, k, worker, round)
                           : wire(size);
        comms[k] = sg_mailbox_put_async(ps_mailbox(ps, worker, k, 1), m, on_wire);
        sent += (double)wire(size);
    }
    ps->bytes_sent[worker] += sent;
    return sent;
}

int sim_ps_push(sim_ps *ps, int worker, double bytes, int64_t round, const void *payload,
                sim_coll_result *r) {
    int st = check_worker(ps, worker, bytes, "push");
    if (st) return st;
    sim_coll_result res = {.start_s = simgrid_get_clock()};
    sg_comm_t *comms = ss_malloc((size_t)ps->o.n_servers * sizeof *comms);
    res.bytes_sent = post_to_servers(ps, worker, PS_MSG_PUSH, bytes, round, payload, comms);
    sg_comm_wait_all(comms, (size_t)ps->o.n_servers);
    free(comms);
    /* Same simulated moment: wait until every server has run its on_push hook. */
    for (int k = 0; k < ps->o.n_servers; k++)
        sg_sem_acquire(ps->push_ack[worker]);
    res.end_s = simgrid_get_clock();
    if (r) *r = res;
    return SS_OK;
}

int sim_ps_pull(sim_ps *ps, int worker, double bytes, int64_t round, sim_coll_result *r) {
    int st = check_worker(ps, worker, bytes, "pull");
    if (st) return st;
    int K = ps->o.n_servers;
    sim_coll_result res = {.start_s = simgrid_get_clock()};
    sg_comm_t *comms = ss_malloc((size_t)2 * K * sizeof *comms);
    void **slots = ss_calloc((size_t)K, sizeof *slots);
    /* Post the receives first so that replies flow as soon as the servers send them. */
    for (int k = 0; k < K; k++) {
        comms[K + k] = sg_mailbox_get_async(ps_mailbox(ps, worker, k, 0), &slots[k]);
        res.bytes_recv += (double)wire(shard_bytes(bytes, k, K));
    }
    res.bytes_sent = post_to_servers(ps, worker, PS_MSG_PULL, bytes, round, NULL, comms);
    sg_comm_wait_all(comms, (size_t)2 * K);
    free(comms);
    free(slots);
    res.end_s = simgrid_get_clock();
    if (r) *r = res;
    return SS_OK;
}

int sim_ps_push_pull(sim_ps *ps, int worker, double bytes, int64_t round, const void *payload,
                     sim_coll_result *r) {
    sim_coll_result a, b;
    int st = sim_ps_push(ps, worker, bytes, round, payload, &a);
    if (!st) st = sim_ps_pull(ps, worker, bytes, round, &b);
    if (st) return st;
    if (r) {
        r->start_s = a.start_s;
        r->end_s = b.end_s;
        r->bytes_sent = a.bytes_sent + b.bytes_sent;
        r->bytes_recv = a.bytes_recv + b.bytes_recv;
    }
    return SS_OK;
}

/* Asynchronous push: the caller posts the messages (so they keep its order), a helper actor
 * waits for them and completes the request. */
typedef struct push_job {
    sim_ps *ps;
    sim_request *rq;
    sg_comm_t *comms;
    int n;
    sim_coll_result res;
    sim_done_fn fn;
    void *ctx;
    int worker;
} push_job;

static void push_helper(void *arg) {
    push_job *j = arg;
    SS_ASSERT(j != NULL && j->rq != NULL);
    sg_comm_wait_all(j->comms, (size_t)j->n);
    for (int k = 0; k < j->n; k++)
        sg_sem_acquire(j->ps->push_ack[j->worker]);
    j->res.end_s = simgrid_get_clock();
    sim_request_complete_internal(j->rq, SS_OK, &j->res, j->fn, j->ctx, j->worker);
    free(j->comms);
    free(j);
}

sim_request *sim_ps_push_async(sim_ps *ps, int worker, double bytes, int64_t round,
                               const void *payload, sim_done_fn done, void *ctx) {
    sim_request *rq = sim_request_new_internal();
    int st = check_worker(ps, worker, bytes, "push");
    if (st) {
        sim_request_complete_internal(rq, st, NULL, NULL, NULL, worker);
        return rq;
    }
    push_job *j = ss_calloc(1, sizeof *j);
    j->ps = ps;
    j->rq = rq;
    j->n = ps->o.n_servers;
    j->comms = ss_malloc((size_t)j->n * sizeof(sg_comm_t));
    j->fn = done;
    j->ctx = ctx;
    j->worker = worker;
    j->res.start_s = simgrid_get_clock();
    j->res.bytes_sent = post_to_servers(ps, worker, PS_MSG_PUSH, bytes, round, payload, j->comms);
    if (!ps->push_helpers[worker]) {
        char name[64];
        snprintf(name, sizeof name, "push-%d", worker);
        ps->push_helpers[worker] = sim_helper_pool_create(ps->worker_hosts[worker], name);
    }
    sim_helper_run(ps->push_helpers[worker], push_helper, j, NULL);
    return rq;
}
