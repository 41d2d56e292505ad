/* The ring all-reduce: message-level, closed form (ring-coarse), and several rings at once
 * (channels). */
#include "sim/net/coll/collective.h"

#include <math.h>
#include <stdlib.h>

#include <simgrid/actor.h>

#include "common/status.h"
#include "sim/net/coll/collective_internal.h"

/* Chunk j of N of the vector (the ring's unit). */
/* All chunks have the same size M/N (rounded to whole bytes when sent): chunks that differ by
 * one byte finish a fraction of a nanosecond apart, those offsets spread over the steps, and
 * SimGrid then handles up to N distinct event dates per step instead of one (a 1024-host ring
 * ran several times slower). The total differs from M by less than N bytes. */
static double chunk_bytes(double bytes, int j, int n) {
    (void)j;
    return bytes / n;
}

void coll_ring(call *k, double bytes) {
    int n = k->c->size, i = k->member, next = (i + 1) % n, prev = (i + n - 1) % n;
    /* Reduce-scatter: step s sends chunk i-s, receives chunk i-s-1 (reduced into it). */
    for (int s = 0; s < n - 1; s++)
        coll_exchange(k, next, chunk_bytes(bytes, ((i - s) % n + n) % n, n), prev,
                      chunk_bytes(bytes, ((i - s - 1) % n + n) % n, n));
    /* All-gather: step s forwards chunk i+1-s, receives chunk i-s. */
    for (int s = 0; s < n - 1; s++)
        coll_exchange(k, next, chunk_bytes(bytes, ((i + 1 - s) % n + n) % n, n), prev,
                      chunk_bytes(bytes, ((i - s) % n + n) % n, n));
}

/* The hops between ring neighbours (read once per group): a message-level ring step lasts as
 * long as its slowest hop, since everyone waits for its predecessor. */
double coll_ring_alpha_max_s(sim_group *c, double bytes) {
    if (!c->ring_hops.ready) {
        hop_set_clear(&c->ring_hops);
        for (int i = 0; i < c->size; i++)
            hop_set_add(&c->ring_hops, c->hosts[i], c->hosts[(i + 1) % c->size]);
        c->ring_hops.ready = 1;
    }
    return hop_set_latency_s(&c->ring_hops, bytes);
}

void coll_ring_coarse(call *k, double bytes) {
    int n = k->c->size, i = k->member, next = (i + 1) % n, prev = (i + n - 1) % n;
    const double part = bytes * (n - 1) / n, chunk = bytes / n;
    /* Per phase, the message-level ring pays N-1 step latencies of its slowest hop; the
     * exchange (send to next and receive from prev together) paid the larger of its two routes'
     * latencies once, the rest is charged as a wait, so that every member ends the phase
     * together as in the message-level ring. */
    const double alpha_max = coll_ring_alpha_max_s(k->c, chunk);
    /* and a protocol's step latencies (auto's ring-coarse) */
    const double proto_s = (n - 1) * coll_proto_set_step_s(k, &k->c->ring_hops);
    for (int phase = 0; phase < 2; phase++) {
        double sent_lat = coll_exchange_merged(k, next, prev, part, chunk, 1);
        /* what prev's flow paid: the same computation on its side */
        double recv_lat = coll_merged_latency_s(k, prev, i, part, chunk, 1);
        double extra_s = (n - 1) * alpha_max - fmax(sent_lat, recv_lat) + proto_s;
        if (extra_s > 0) sg_actor_sleep_for(extra_s);
    }
}

/* Channel orders: on regular nodes, channel ch visits the nodes in order and inside each starts
 * at local index ch G / C; otherwise the member order. */
static void channel_orders(sim_group *c, int channels) {
    if (c->channel_count == channels) return;
    const int n = c->size;
    free(c->channel_next);
    free(c->channel_prev);
    c->channel_next = ss_malloc(sizeof(int) * (size_t)(channels * n));
    c->channel_prev = ss_malloc(sizeof(int) * (size_t)(channels * n));
    const sim_topology *t = coll_topology_of(c);
    const int g = t && t->per_node > 1 ? t->per_node : 1;
    int *order = ss_malloc(sizeof(int) * (size_t)n);
    for (int ch = 0; ch < channels; ch++) {
        const int start = (int)((long)ch * g / channels) % g;
        for (int i = 0; i < n; i++)
            order[i] = g > 1 ? t->members[i / g * g + (start + i % g) % g] : i;
        for (int i = 0; i < n; i++) {
            c->channel_next[ch * n + order[i]] = order[(i + 1) % n];
            c->channel_prev[ch * n + order[i]] = order[(i + n - 1) % n];
        }
    }
    free(order);
    c->channel_count = channels;
}

static void coll_ring_channels(call *k, double bytes, int channels) {
    sim_group *c = k->c;
    const int n = c->size, i = k->member;
    channel_orders(c, channels);
    const double chunk = bytes / channels / n;
    k->seg_bytes = 0; /* the channels are the split */
    for (int s = 0; s < 2 * (n - 1); s++) {
        coll_proto_pause(k, c->channel_next[i]);
        step st;
        st.n = 0;
        for (int ch = 0; ch < channels; ch++) {
            k->channel = ch;
            coll_post_send(k, &st, c->channel_next[ch * n + i], chunk);
            coll_post_recv(k, &st, c->channel_prev[ch * n + i], chunk);
        }
        coll_step_wait(&st);
    }
    k->channel = 0;
}

void coll_run_ring(call *k, double bytes, int channels) {
    if (channels > 1)
        coll_ring_channels(k, bytes, channels);
    else
        coll_ring(k, bytes);
}

void coll_run_ring_coarse(call *k, double bytes, int channels) {
    (void)channels;
    coll_ring_coarse(k, bytes);
}
