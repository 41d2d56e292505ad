/* The synchronous exchanges of the protocols: parameters or gradients moved among a group (an
 * all-reduce, or push and pull through the parameter servers) and taken into the replicas, with
 * DLCP's bounded-loss form.
 *
 * DLCP (Wang et al. 2020) lets a gradient exchange finish without the last fraction eps of its
 * data, sends the data in priority order (front layers first, or large values first), and spreads
 * packets over paths. syncsim models it at chunk level on SimGrid's flow model, which is an
 * approximation of a packet-level mechanism: the exchanged vector is cut into chunks of
 * `chunk_bytes`; the first ceil((1 - eps) K) chunks in priority order move as one collective (the
 * part that must arrive); with a deadline, further chunks follow one by one while the deadline
 * has not passed; the rest is never sent. What is not sent is really missing from the
 * aggregation: those entries keep the worker's own value or count as zero. Per-packet load
 * balancing has no flow-level counterpart and is not modelled.
 *
 * The members agree on every decision because the first member to reach it records it for the
 * others (a shortcut of the simulation: in DLCP the receiver decides and tells the sender). */
#include "common/status.h"
#include "sim/policy/policy_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct dlcp_slot {
    long id;         /* exchange id (-1: free slot) */
    int key;         /* first member of the group (-1: all workers) */
    int pending;     /* workers that have not aggregated the result yet */
    int n_chunks;    /* K */
    int need;        /* chunks that must arrive: ceil((1 - eps) K) */
    int *order;      /* (K) chunk indices in priority order */
    signed char *go; /* (K) for chunks beyond `need`: -1 undecided, 0 stop, 1 send */
    int sent;        /* chunks sent, once final */
    int final;
    uint8_t *mask;  /* (P) 1 for the entries that arrived */
    double start_s; /* the first member's entry */
} dlcp_slot;

static int group_key(const int *members) {
    return members ? members[0] : -1;
}

/* Slots are allocated one by one: members hold a slot across the collectives they wait in,
 * while other members may add slots. */
static dlcp_slot *dlcp_find(policy_state *st, long id, int key) {
    for (int i = 0; i < st->n_dlcp; i++)
        if (st->dlcp[i]->id == id && st->dlcp[i]->key == key) return st->dlcp[i];
    return NULL;
}

static size_t chunk_floats(const policy_state *st) {
    size_t cf = (size_t)(st->pc->chunk_bytes / sizeof(float));
    return cf < 1 ? 1 : cf;
}

static double chunk_bytes_of(const policy_state *st, int c) {
    size_t cf = chunk_floats(st), p = st->src->param_count;
    size_t lo = (size_t)c * cf, hi = lo + cf < p ? lo + cf : p;
    return (double)(hi - lo) * sizeof(float);
}

/* The slot of an exchange, made by its first member: K chunks, their priority order. */
static dlcp_slot *dlcp_get(policy_state *st, long id, const int *members, int m, int callers,
                           aggregate_what what) {
    int key = group_key(members);
    dlcp_slot *s = dlcp_find(st, id, key);
    if (s) return s;
    for (int i = 0; i < st->n_dlcp && !s; i++)
        if (st->dlcp[i]->id < 0) s = st->dlcp[i];
    if (!s) {
        st->dlcp = realloc(st->dlcp, sizeof(dlcp_slot *) * (size_t)(st->n_dlcp + 1));
        SS_ASSERT(st->dlcp);
        s = ss_calloc(1, sizeof *s);
        st->dlcp[st->n_dlcp++] = s;
    }
    const size_t p = st->src->param_count, cf = chunk_floats(st);
    const int k = (int)((p + cf - 1) / cf);
    s->id = id;
    s->key = key;
    s->pending = callers;
    s->n_chunks = k;
    s->need = (int)ceil((1.0 - st->pc->loss_tolerance) * k - 1e-9);
    if (s->need < 1) s->need = 1;
    if (s->need > k) s->need = k;
    s->order = realloc(s->order, sizeof(int) * (size_t)k);
    s->go = realloc(s->go, (size_t)k);
    s->mask = realloc(s->mask, p);
    SS_ASSERT(s->order && s->go && s->mask);
    for (int c = 0; c < k; c++)
        s->order[c] = c;
    if (st->pc->priority == DLCP_PRIORITY_MAGNITUDE && st->src->ops->chunk_order)
        st->src->ops->chunk_order(st->src->self, what, members, m, cf, k, s->order);
    memset(s->go, -1, (size_t)k);
    s->sent = 0;
    s->final = 0;
    s->start_s = policy_now(st);
    return s;
}

static void dlcp_finish(policy_state *st, dlcp_slot *s, int sent) {
    if (s->final) {
        SS_ASSERT(s->sent == sent); /* every member follows the same decisions */
        return;
    }
    s->final = 1;
    s->sent = sent;
    const size_t p = st->src->param_count, cf = chunk_floats(st);
    memset(s->mask, 0, p);
    for (int i = 0; i < sent; i++) {
        size_t lo = (size_t)s->order[i] * cf, hi = lo + cf < p ? lo + cf : p;
        memset(s->mask + lo, 1, hi - lo);
    }
}

/* Moves `bytes` among the group: all-reduce, or push (and pull of the full parameters) via PS.
 * In the simulation the data stay with the step source (aggregate): no buffer is passed; in
 * real mode the worker's own vector is (the whole of it: DLCP's partial exchanges are not
 * available there), and holds the sum over the members when this returns. */
static double move(policy_state *st, int w, long step, aggregate_what what, exchange_group *g,
                   int me, double bytes, int pull_full) {
    const exchange *ex = st->ex;
    float *buf = policy_buffer(st, w, what);
    const size_t count = buf ? st->src->param_count : (size_t)(bytes / sizeof(float));
    exchange_result r;
    int rc;
    double sent;
    if (st->has_ps) {
        const double full = st->src->param_bytes + st->src->state_bytes;
        if (pull_full && bytes < full) {
            rc = ex->ops->ps_push(ex->self, w, NULL, count, bytes, step, &r);
            SS_ASSERT(rc == SS_OK);
            sent = r.bytes_sent;
            rc = ex->ops->ps_pull(ex->self, w, NULL, st->src->param_count, full, step, &r);
        } else {
            rc = ex->ops->ps_push_pull(ex->self, w, buf, count, bytes, step, &r);
            sent = 0;
        }
        SS_ASSERT(rc == SS_OK);
        if (buf) policy_buffer_done(st, w, what);
        /* the servers' replies are bytes on the network too: counted once, at the receiver */
        return sent + r.bytes_sent + r.bytes_recv;
    }
    if (!buf && st->pc->loss_tolerance <= 0 && ex->ops->allreduce_buckets) {
        /* the all-reduce in closed form where it has one (exchange.h): one bucket, ready now */
        const double now = policy_now(st);
        double end_s;
        rc = ex->ops->allreduce_buckets(ex->self, g, me, 1, &now, &bytes, &end_s, &sent);
        if (rc != EXCHANGE_NOT_CLOSED) {
            SS_ASSERT(rc == SS_OK);
            policy_pass_until(st, w, end_s);
            return sent;
        }
    }
    rc = ex->ops->allreduce(ex->self, g, me, buf, count, bytes, &r);
    SS_ASSERT(rc == SS_OK);
    if (buf) policy_buffer_done(st, w, what);
    return r.bytes_sent;
}

void policy_exchange(policy_state *st, int w, long id, long step, aggregate_what what,
                     exchange_group *g, int me, const int *members, int m, int callers,
                     step_acc *a) {
    const policy_config *pc = st->pc;
    SS_ASSERT(!st->has_ps || members == NULL); /* the servers serve all workers */
    const int key = group_key(members);
    double entry = policy_sync_enter(st, id, key);
    if (pc->loss_tolerance <= 0) {
        policy_sync_leave(
            st, id, key, entry,
            move(st, w, step, what, g, me, st->src->param_bytes + st->src->state_bytes, 0), a);
        return;
    }
    dlcp_slot *s = dlcp_get(st, id, members, m, callers, what);
    double must = st->src->state_bytes; /* the state is never dropped */
    for (int i = 0; i < s->need; i++)
        must += chunk_bytes_of(st, s->order[i]);
    double bytes = move(st, w, step, what, g, me, must, 1);
    int sent = s->need;
    if (pc->deadline_s > 0 && !st->has_ps) {
        while (sent < s->n_chunks) {
            if (s->go[sent] < 0) s->go[sent] = policy_now(st) < s->start_s + pc->deadline_s;
            if (!s->go[sent]) break;
            bytes += move(st, w, step, what, g, me, chunk_bytes_of(st, s->order[sent]), 0);
            sent++;
        }
    }
    dlcp_finish(st, s, sent);
    double sent_bytes = 0;
    for (int i = 0; i < sent; i++)
        sent_bytes += chunk_bytes_of(st, s->order[i]);
    double dropped = st->src->param_bytes - sent_bytes;
    double took = policy_now(st) - entry;
    st->res->dlcp_bytes_total += st->src->param_bytes;
    st->res->dlcp_bytes_dropped += dropped;
    if (sent_bytes > 0) st->res->dlcp_time_saved_s += took * dropped / sent_bytes / pc->workers;
    policy_sync_leave(st, id, key, entry, bytes, a);
}

void policy_aggregate(policy_state *st, int w, long id, aggregate_what what, const int *members,
                      int m, int callers) {
    dlcp_slot *s = st->pc->loss_tolerance > 0 ? dlcp_find(st, id, group_key(members)) : NULL;
    long seq = st->agg_seq[w]++;
    const uint8_t *mask = s && s->sent < s->n_chunks ? s->mask : NULL;
    st->src->ops->aggregate(st->src->self, w, seq, members, m, callers, what, mask,
                            st->pc->drop_keep_local);
    if (s && --s->pending == 0) s->id = -1;
}

void policy_sync_world(policy_state *st, int w, long id, long step, aggregate_what what,
                       step_acc *a) {
    const int n = st->pc->workers;
    policy_exchange(st, w, id, step, what, st->world, w, NULL, n, n, a);
    policy_aggregate(st, w, id, what, NULL, n, n);
}

void policy_dlcp_free(policy_state *st) {
    for (int i = 0; i < st->n_dlcp; i++) {
        free(st->dlcp[i]->order);
        free(st->dlcp[i]->go);
        free(st->dlcp[i]->mask);
        free(st->dlcp[i]);
    }
    free(st->dlcp);
    st->dlcp = NULL;
    st->n_dlcp = 0;
}
