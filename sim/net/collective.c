/* Collectives as messages over SimGrid mailboxes (see collective.h). */
#include "sim/net/collective.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <simgrid/actor.h>
#include <simgrid/barrier.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>
#include <xbt/dynar.h>

#include "common/status.h"
#include "sim/net/collective_internal.h"
#include "sim/net/fabric.h"
#include "sim/net/internal.h"

char sim_token = 'x';

static int comm_next_id;

sim_comm *sim_comm_create(int size, const sg_host_t *hosts) {
    SS_ASSERT(size > 0 && hosts != NULL);
    sim_comm *c = ss_calloc(1, sizeof *c);
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

void sim_comm_destroy(sim_comm *c) {
    if (!c) return;
    free(c->hosts);
    free(c->next_seq);
    free(c->bytes_sent);
    free(c->boxes.keys);
    free(c->boxes.boxes);
    sim_topology_free(c->topo);
    free(c->channel_next);
    free(c->channel_prev);
    free(c->tree_next[0]);
    free(c->tree_next[1]);
    if (c->barrier) sg_barrier_destroy(c->barrier);
    for (int m = 0; c->lanes && m < c->size; m++)
        lane_close(c->lanes[m]);
    free(c->lanes);
    free(c);
}

int sim_comm_size(const sim_comm *c) {
    return c->size;
}

sg_host_t sim_comm_host(const sim_comm *c, int member) {
    SS_ASSERT(member >= 0 && member < c->size);
    return c->hosts[member];
}

double sim_comm_bytes_sent(const sim_comm *c, int member) {
    SS_ASSERT(member >= 0 && member < c->size);
    return c->bytes_sent[member];
}

/* ---------------------------------------------------------------- one call's context */

/* Instances reuse their mailboxes' names modulo this window: SimGrid never frees a mailbox, so
 * names per instance made memory and the time per step grow with the number of steps. Reuse is
 * safe because messages between two members on one name are matched first in, first out, and
 * every member posts its instances in order; it takes more than this many asynchronous
 * collectives in flight on one group at once to mix two instances. */
#define SIM_MAILBOX_WINDOW 16

/* Appends the decimal digits of v at p; returns the new end. */
static char *put_uint(char *p, unsigned long long v) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = digits[--n];
    return p;
}

/* "c<group>.<seq mod window>.<src>.<dst>" (channel 0) or "...<dst>.<channel>": built once per
 * name, then found in the group's cache. */
static sg_mailbox_t mailbox_by_name(const call *k, int src, int dst) {
    char name[112], *p = name;
    *p++ = 'c';
    p = put_uint(p, (unsigned)k->c->id);
    *p++ = '.';
    p = put_uint(p, k->seq % SIM_MAILBOX_WINDOW);
    *p++ = '.';
    p = put_uint(p, (unsigned)src);
    *p++ = '.';
    p = put_uint(p, (unsigned)dst);
    if (k->channel) {
        *p++ = '.';
        p = put_uint(p, (unsigned)k->channel);
    }
    *p = '\0';
    return sg_mailbox_by_name(name);
}

static uint64_t mailbox_key(const call *k, int src, int dst) {
    /* src and dst < 2^24 (groups are at most 65536 members), slot < 16, channel < 256 */
    return 1 + ((uint64_t)(unsigned)k->channel << 52 |
                (uint64_t)(k->seq % SIM_MAILBOX_WINDOW) << 48 | (uint64_t)(unsigned)src << 24 |
                (uint64_t)(unsigned)dst);
}

static size_t key_hash(uint64_t key, size_t cap) {
    key ^= key >> 29;
    key *= 0xbf58476d1ce4e5b9ULL;
    key ^= key >> 32;
    return (size_t)key & (cap - 1);
}

static void cache_grow(mailbox_cache *mc) {
    size_t old_cap = mc->cap;
    uint64_t *old_keys = mc->keys;
    sg_mailbox_t *old_boxes = mc->boxes;
    mc->cap = old_cap ? old_cap * 2 : 64;
    mc->keys = ss_calloc(mc->cap, sizeof(uint64_t));
    mc->boxes = ss_calloc(mc->cap, sizeof(sg_mailbox_t));
    for (size_t i = 0; i < old_cap; i++) {
        if (!old_keys[i]) continue;
        size_t j = key_hash(old_keys[i], mc->cap);
        while (mc->keys[j])
            j = (j + 1) & (mc->cap - 1);
        mc->keys[j] = old_keys[i];
        mc->boxes[j] = old_boxes[i];
    }
    free(old_keys);
    free(old_boxes);
}

static sg_mailbox_t cache_find(const mailbox_cache *mc, uint64_t key, size_t *slot) {
    size_t j = key_hash(key, mc->cap);
    while (mc->keys[j]) {
        if (mc->keys[j] == key) return mc->boxes[j];
        j = (j + 1) & (mc->cap - 1);
    }
    *slot = j;
    return NULL;
}

sg_mailbox_t coll_mailbox(call *k, int src, int dst) {
    mailbox_cache *mc = &k->c->boxes;
    const uint64_t key = mailbox_key(k, src, dst);
    size_t j = 0;
    if (mc->cap) {
        sg_mailbox_t mb = cache_find(mc, key, &j);
        if (mb) return mb;
    }
    /* SimGrid's lookup is a simcall: other actors run meanwhile and may fill the table, so the
     * slot is searched again after it */
    sg_mailbox_t mb = mailbox_by_name(k, src, dst);
    if (2 * (mc->used + 1) > mc->cap) cache_grow(mc);
    if (cache_find(mc, key, &j)) return mb;
    mc->keys[j] = key;
    mc->boxes[j] = mb;
    mc->used++;
    return mb;
}

/* SimGrid moves whole bytes: round, never below one. */
long coll_wire_bytes(double bytes) {
    long b = lround(bytes);
    return b < 1 ? 1 : b;
}

static int n_segments(const call *k, double bytes) {
    if (k->seg_bytes <= 0 || bytes <= k->seg_bytes) return 1;
    double n = ceil(bytes / k->seg_bytes);
    return n > STEP_MAX / 2 ? STEP_MAX / 2 : (int)n;
}

/* Part i of n of `bytes`, so that the parts add up to the whole exactly. */
double coll_part_bytes(double bytes, int i, int n) {
    return floor(bytes * (i + 1) / n) - floor(bytes * i / n) +
           (i == n - 1 ? bytes - floor(bytes) : 0);
}

/* Sends are waited for with the step's receives. (Detached sends were tried: SimGrid 3.32 keeps
 * detached comms in a list it searches linearly, which made 1024-host rings slower.) */
/* Sends `bytes` to dst, each message's rate capped at rate_Bps (0: no cap). */
static void post_send_rate(call *k, step *s, int dst, double bytes, double rate_Bps) {
    int n = n_segments(k, bytes);
    sg_mailbox_t mb = coll_mailbox(k, k->member, dst);
    for (int i = 0; i < n; i++) {
        SS_ASSERT(s->n < STEP_MAX);
        long b = coll_wire_bytes(n == 1 ? bytes : coll_part_bytes(bytes, i, n));
        s->slots[s->n] = NULL;
        s->comms[s->n++] = rate_Bps > 0 ? sim_put_async_rate(mb, &sim_token, b, rate_Bps)
                                        : sg_mailbox_put_async(mb, &sim_token, b);
        k->res.bytes_sent += (double)b;
    }
}

/* The rate cap of a protocol's message of `unit_bytes` to dst: its fraction of the route's
 * bandwidth as the model charges that size; 0 (none) without a protocol or under Simple. */
static double proto_rate_Bps(const call *k, int dst, double unit_bytes) {
    if (!(k->proto_frac > 0 && k->proto_frac < 1)) return 0;
    return k->proto_frac *
           coll_hop_bandwidth_Bps(k->c->hosts[k->member], k->c->hosts[dst], unit_bytes);
}

void coll_post_send(call *k, step *s, int dst, double bytes) {
    const int n = n_segments(k, bytes);
    post_send_rate(k, s, dst, bytes,
                   proto_rate_Bps(k, dst, n == 1 ? bytes : coll_part_bytes(bytes, 0, n)));
}

void coll_post_recv(call *k, step *s, int src, double bytes) {
    int n = n_segments(k, bytes);
    sg_mailbox_t mb = coll_mailbox(k, src, k->member);
    for (int i = 0; i < n; i++) {
        SS_ASSERT(s->n < STEP_MAX);
        s->comms[s->n] = sg_mailbox_get_async(mb, &s->slots[s->n]);
        s->n++;
        k->res.bytes_recv += (double)coll_wire_bytes(n == 1 ? bytes : coll_part_bytes(bytes, i, n));
    }
}

/* Waiting for each in turn ends when the last completes, as a wait for all does; the C API's
 * wait_all copies the array into a vector of references on every call, a visible share of the
 * wall time of large rings. */
void coll_step_wait(step *s) {
    for (int i = 0; i < s->n; i++)
        sg_comm_wait(s->comms[i]);
    s->n = 0;
}

/* A send the member waits for (tree and broadcast send to their children one after the other,
 * as their closed forms say). */
void coll_send_wait(call *k, int dst, double bytes) {
    step s;
    s.n = 0;
    coll_post_send(k, &s, dst, bytes);
    coll_step_wait(&s);
}

void coll_exchange(call *k, int dst, double send_bytes, int src, double recv_bytes) {
    coll_proto_pause(k, dst);
    step s;
    s.n = 0;
    if (dst >= 0) coll_post_send(k, &s, dst, send_bytes);
    if (src >= 0) coll_post_recv(k, &s, src, recv_bytes);
    coll_step_wait(&s);
}

/* ---------------------------------------------------------------- all-reduce algorithms */

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

/* ---------------------------------------------------------------- hop sets */

double coll_hop_latency_s(sg_host_t src, sg_host_t dst, double bytes) {
    return sim_fabric_latency_factor(src, dst, bytes) * sg_host_get_route_latency(src, dst);
}

double coll_hop_bandwidth_Bps(sg_host_t src, sg_host_t dst, double bytes) {
    return sim_fabric_bandwidth_factor(src, dst, bytes) * sg_host_get_route_bandwidth(src, dst);
}

void hop_set_clear(hop_set *h) {
    h->ready = 0;
    h->hw_max = SIM_HW_NVLINK;
    h->tcp_lat_s = h->other_lat_s = 0;
    h->tcp_bw_Bps = h->other_bw_Bps = INFINITY;
    h->tcp_shared_Bps = h->other_shared_Bps = INFINITY;
}

/* One hop whose route leaves it `shared_Bps` (raw) where it shares links. */
static void hop_add(hop_set *h, sg_host_t src, sg_host_t dst, double shared_Bps) {
    const int hw = (int)sim_fabric_route_hw(src, dst);
    if (hw > h->hw_max) h->hw_max = hw;
    if (sim_fabric_route_is_tcp(src, dst)) {
        h->tcp_lat_s = fmax(h->tcp_lat_s, sg_host_get_route_latency(src, dst));
        h->tcp_bw_Bps = fmin(h->tcp_bw_Bps, sg_host_get_route_bandwidth(src, dst));
        h->tcp_shared_Bps = fmin(h->tcp_shared_Bps, shared_Bps);
    } else {
        /* the factors of other fabrics do not depend on the size */
        const double factor = sim_fabric_bandwidth_factor(src, dst, 1);
        h->other_lat_s = fmax(h->other_lat_s, coll_hop_latency_s(src, dst, 1));
        h->other_bw_Bps = fmin(h->other_bw_Bps, factor * sg_host_get_route_bandwidth(src, dst));
        h->other_shared_Bps = fmin(h->other_shared_Bps, factor * shared_Bps);
    }
}

void hop_set_add(hop_set *h, sg_host_t src, sg_host_t dst) {
    hop_add(h, src, dst, sg_host_get_route_bandwidth(src, dst));
}

static int link_cmp(const void *a, const void *b) {
    const uintptr_t x = (uintptr_t) * (sg_link_t const *)a, y = (uintptr_t) * (sg_link_t const *)b;
    return (x > y) - (x < y);
}

/* How many of the n sorted links are l. */
static int link_count(const sg_link_t *sorted, int n, sg_link_t l) {
    int lo = 0, hi = n;
    while (lo < hi) { /* first index not below l */
        const int mid = lo + (hi - lo) / 2;
        if ((uintptr_t)sorted[mid] < (uintptr_t)l)
            lo = mid + 1;
        else
            hi = mid;
    }
    int k = 0;
    while (lo + k < n && sorted[lo + k] == l)
        k++;
    return k;
}

void hop_set_add_concurrent(hop_set *h, const sg_host_t *src, const sg_host_t *dst, int n) {
    xbt_dynar_t route = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_link_t *all = NULL;
    int n_all = 0, cap = 0;
    for (int i = 0; i < n; i++) { /* every link every hop crosses, with repeats */
        xbt_dynar_reset(route);
        sg_host_get_route(src[i], dst[i], route);
        for (unsigned j = 0; j < xbt_dynar_length(route); j++) {
            if (n_all == cap) all = realloc(all, sizeof *all * (size_t)(cap = cap ? 2 * cap : 64));
            SS_ASSERT(all);
            all[n_all++] = xbt_dynar_get_as(route, j, sg_link_t);
        }
    }
    if (n_all) qsort(all, (size_t)n_all, sizeof *all, link_cmp);
    for (int i = 0; i < n; i++) {
        xbt_dynar_reset(route);
        sg_host_get_route(src[i], dst[i], route);
        double share = INFINITY;
        for (unsigned j = 0; j < xbt_dynar_length(route); j++) {
            const sg_link_t l = xbt_dynar_get_as(route, j, sg_link_t);
            const int k = sg_link_is_shared(l) ? link_count(all, n_all, l) : 1;
            share = fmin(share, sg_link_get_bandwidth(l) / (k > 0 ? k : 1));
        }
        hop_add(h, src[i], dst[i],
                isinf(share) ? sg_host_get_route_bandwidth(src[i], dst[i]) : share);
    }
    free(all);
    xbt_dynar_free(&route);
}

double hop_set_latency_s(const hop_set *h, double bytes) {
    return fmax(h->tcp_lat_s * sim_fabric_tcp_latency_factor(bytes), h->other_lat_s);
}

double hop_set_bandwidth_Bps(const hop_set *h, double bytes) {
    return fmin(h->tcp_bw_Bps * sim_fabric_tcp_bandwidth_factor(bytes), h->other_bw_Bps);
}

double hop_set_shared_bandwidth_Bps(const hop_set *h, double bytes) {
    return fmin(h->tcp_shared_Bps * sim_fabric_tcp_bandwidth_factor(bytes), h->other_shared_Bps);
}

/* The hops between ring neighbours (read once per group): a message-level ring step lasts as
 * long as its slowest hop, since everyone waits for its predecessor. */
double coll_ring_alpha_max_s(sim_comm *c, double bytes) {
    if (!c->ring_hops.ready) {
        hop_set_clear(&c->ring_hops);
        for (int i = 0; i < c->size; i++)
            hop_set_add(&c->ring_hops, c->hosts[i], c->hosts[(i + 1) % c->size]);
        c->ring_hops.ready = 1;
    }
    return hop_set_latency_s(&c->ring_hops, bytes);
}

/* How a merged flow of `bytes` from member `from` to `to` goes (coll_exchange_merged). On a TCP
 * route under size-dependent factors the flow's own bandwidth factor is that of its size, not
 * that of the `unit_bytes` messages it stands for. Its rate is R(x) = min(cap, share B f(x)) for
 * a flow of x bytes (B the route's bandwidth, f the factor, share the part of it each flow of
 * the closed form gets, cap a protocol's rate cap, `frac` of the unit messages' bandwidth, or
 * none): it is sent with the size w whose time w / R(w) equals theirs, bytes / R(unit), where
 * one exists (the one nearest `bytes`); otherwise whole, followed by a wait for the time it is
 * short of. */
static double merged_rate(double x, double cap, double share, double raw) {
    return fmin(cap, share * raw * sim_fabric_tcp_bandwidth_factor(x));
}

static void merged_plan(sim_comm *c, int from, int to, double bytes, double unit_bytes,
                        double share, double frac, double *wire, double *wait_s) {
    *wire = bytes;
    *wait_s = 0;
    sg_host_t a = c->hosts[from], b = c->hosts[to];
    const int capped = frac > 0 && frac < 1;
    /* the same factor for both sizes (LV08, CM02, large messages under SMPI) and no cap: as is */
    if (!capped &&
        sim_fabric_tcp_bandwidth_factor(bytes) == sim_fabric_tcp_bandwidth_factor(unit_bytes))
        return;
    if (!sim_fabric_route_is_tcp(a, b)) return; /* factors that do not depend on the size */
    const double raw = sg_host_get_route_bandwidth(a, b);
    const double cap = capped ? frac * raw * sim_fabric_tcp_bandwidth_factor(unit_bytes) : INFINITY;
    const double want = merged_rate(unit_bytes, cap, share, raw);
    const double as_is = merged_rate(bytes, cap, share, raw);
    if (as_is == want) return;
    const double *th;
    const int steps = sim_fabric_tcp_size_steps(&th);
    double best = -1;
    for (int i = 0; i < steps; i++) {
        const double w = bytes * merged_rate(th[i], cap, share, raw) / want;
        const int inside = w >= th[i] && (i == 0 || w < th[i - 1]);
        if (inside && (best < 0 || fabs(w - bytes) < fabs(best - bytes))) best = w;
    }
    if (best >= 0) {
        *wire = best;
        return;
    }
    *wait_s = fmax(0, bytes / want - bytes / as_is);
}

double coll_exchange_merged(call *k, int dst, int src, double bytes, double unit_bytes,
                            double share) {
    sim_comm *c = k->c;
    double lat_s = 0, wait_s = 0, wire, w;
    step st;
    st.n = 0;
    if (dst >= 0) {
        merged_plan(c, k->member, dst, bytes, unit_bytes, share, k->proto_frac, &wire, &w);
        wait_s = w;
        lat_s = coll_hop_latency_s(c->hosts[k->member], c->hosts[dst], wire);
        post_send_rate(k, &st, dst, wire, proto_rate_Bps(k, dst, unit_bytes));
        k->res.bytes_sent += (double)coll_wire_bytes(bytes) - (double)coll_wire_bytes(wire);
    }
    if (src >= 0) {
        merged_plan(c, src, k->member, bytes, unit_bytes, share, k->proto_frac, &wire, &w);
        wait_s = fmax(wait_s, w);
        coll_post_recv(k, &st, src, bytes);
    }
    coll_step_wait(&st);
    if (wait_s > 0) sg_actor_sleep_for(wait_s);
    return lat_s;
}

/* The latency the merged flow from `from` to `to` pays (coll_exchange_merged). */
double coll_merged_latency_s(const call *k, int from, int to, double bytes, double unit_bytes,
                             double share) {
    double wire, wait_s;
    merged_plan(k->c, from, to, bytes, unit_bytes, share, k->proto_frac, &wire, &wait_s);
    return coll_hop_latency_s(k->c->hosts[from], k->c->hosts[to], wire);
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

/* The fold of a group of n members into the largest power of two p2 <= n (Rabenseifner's and
 * recursive doubling's): the first 2r members (r = n - p2) pair up, the even one sends its
 * vector to the odd one, which goes on as virtual rank i / 2; the others as i - r. The virtual
 * rank of this member, -1 when folded out; *p2_out, *r_out. */
static int fold_in(call *k, double bytes, int *p2_out, int *r_out) {
    const int n = k->c->size, i = k->member;
    int p2 = 1;
    while (p2 * 2 <= n)
        p2 *= 2;
    const int r = n - p2;
    *p2_out = p2;
    *r_out = r;
    if (i >= 2 * r) return i - r;
    if (i % 2 == 0) {
        coll_exchange(k, i + 1, bytes, -1, 0);
        return -1;
    }
    coll_exchange(k, -1, 0, i - 1, bytes);
    return i / 2;
}

/* The result back to the members folded out. */
static void fold_out(call *k, double bytes, int r) {
    const int i = k->member;
    if (i >= 2 * r) return;
    if (i % 2 == 1)
        coll_exchange(k, i - 1, bytes, -1, 0);
    else
        coll_exchange(k, -1, 0, i + 1, bytes);
}

/* Actual member index of virtual rank v after the fold. */
static int unfolded(int v, int r) {
    return v < r ? 2 * v + 1 : v + r;
}

/* Rabenseifner: fold to a power of two, recursive halving, recursive doubling, unfold. */
static void halving_doubling(call *k, double bytes) {
    int p2, r;
    const int vrank = fold_in(k, bytes, &p2, &r);
    if (vrank >= 0) {
        /* Reduce-scatter by recursive halving: keep half of the current block each step. */
        double block = bytes;
        for (int mask = p2 / 2; mask >= 1; mask /= 2) {
            block /= 2;
            const int partner = unfolded(vrank ^ mask, r);
            coll_exchange(k, partner, block, partner, block);
        }
        /* All-gather by recursive doubling: blocks double back to the whole vector. */
        for (int mask = 1; mask < p2; mask *= 2) {
            const int partner = unfolded(vrank ^ mask, r);
            coll_exchange(k, partner, block, partner, block);
            block *= 2;
        }
    }
    fold_out(k, bytes, r);
}

/* Recursive doubling: log2 p2 steps in which the partners at distance 2^s exchange and reduce
 * the whole vector (MPICH's and OpenMPI's all-reduce for short vectors); fold and unfold as
 * Rabenseifner's. */
static void recursive_doubling(call *k, double bytes) {
    int p2, r;
    const int vrank = fold_in(k, bytes, &p2, &r);
    if (vrank >= 0)
        for (int mask = 1; mask < p2; mask *= 2) {
            const int partner = unfolded(vrank ^ mask, r);
            coll_exchange(k, partner, bytes, partner, bytes);
        }
    fold_out(k, bytes, r);
}

/* Binary tree in heap order: reduce to 0, broadcast from 0; pipelined by segments. */
static void tree(call *k, double bytes) {
    int n = k->c->size, i = k->member;
    int parent = i == 0 ? -1 : (i - 1) / 2;
    int children[2], nc = 0;
    for (int c = 2 * i + 1; c <= 2 * i + 2; c++)
        if (c < n) children[nc++] = c;
    int nseg = k->seg_bytes > 0 ? (int)fmin(ceil(bytes / k->seg_bytes), 1e6) : 1;
    double saved_seg = k->seg_bytes;
    k->seg_bytes = 0; /* segments are explicit here */
    sg_comm_t up = NULL;
    for (int s = 0; s < nseg; s++) {
        double b = coll_part_bytes(bytes, s, nseg);
        for (int c = 0; c < nc; c++)
            coll_exchange(k, -1, 0, children[c], b);
        if (parent >= 0) {
            if (up) sg_comm_wait(up);
            up = sg_mailbox_put_async(coll_mailbox(k, i, parent), &sim_token, coll_wire_bytes(b));
            k->res.bytes_sent += (double)coll_wire_bytes(b);
        }
    }
    if (up) sg_comm_wait(up);
    for (int s = 0; s < nseg; s++) {
        double b = coll_part_bytes(bytes, s, nseg);
        if (parent >= 0) coll_exchange(k, -1, 0, parent, b);
        for (int c = 0; c < nc; c++)
            coll_send_wait(k, children[c], b);
    }
    k->seg_bytes = saved_seg;
}

/* ---------------------------------------------------------------- entry points */

static int check_call(const sim_comm *c, int member, double bytes, const char *what) {
    if (!c) return ss_error_set(SS_EUSAGE, "%s: no group", what);
    if (member < 0 || member >= c->size)
        return ss_error_set(SS_EUSAGE, "%s: member %d out of range (group of %d)", what, member,
                            c->size);
    if (!(bytes > 0) || !isfinite(bytes))
        return ss_error_set(SS_EUSAGE, "%s: size %g bytes, need > 0", what, bytes);
    return SS_OK;
}

static void call_begin(call *k, sim_comm *c, int member, uint64_t seq, double seg_bytes) {
    memset(k, 0, sizeof *k);
    k->c = c;
    k->member = member;
    k->seq = seq;
    k->seg_bytes = seg_bytes;
    k->hw_dst = -1;
    k->res.start_s = simgrid_get_clock();
}

static void call_end(call *k, sim_coll_result *r) {
    k->res.end_s = simgrid_get_clock();
    k->c->bytes_sent[k->member] += k->res.bytes_sent;
    if (r) *r = k->res;
}

/* Runs algorithm `algo` (resolved: not auto). */
static void allreduce_run(call *k, sim_allreduce_algo algo, double bytes, int channels) {
    switch (algo) {
    case SIM_ALLREDUCE_RING:
        if (channels > 1)
            coll_ring_channels(k, bytes, channels);
        else
            coll_ring(k, bytes);
        break;
    case SIM_ALLREDUCE_RING_COARSE:
        coll_ring_coarse(k, bytes);
        break;
    case SIM_ALLREDUCE_HALVING_DOUBLING:
        halving_doubling(k, bytes);
        break;
    case SIM_ALLREDUCE_RECURSIVE_DOUBLING:
        recursive_doubling(k, bytes);
        break;
    case SIM_ALLREDUCE_TREE:
        tree(k, bytes);
        break;
    case SIM_ALLREDUCE_HIER:
    case SIM_ALLREDUCE_HIER_COARSE:
        coll_hier(k, bytes, algo == SIM_ALLREDUCE_HIER_COARSE);
        break;
    case SIM_ALLREDUCE_DBTREE:
        coll_dbtree(k, bytes);
        break;
    default:
        SS_ASSERT(!"unresolved all-reduce algorithm");
    }
}

static int allreduce_seq(sim_comm *c, int member, uint64_t seq, double bytes,
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
    call_begin(&k, c, member, seq, o->segment_bytes);
    if (c->size > 1) {
        sim_allreduce_algo algo = o->algo;
        sim_nccl_protocol p = SIM_PROTOCOL_AUTO;
        int channels = o->channels;
        if (algo == SIM_ALLREDUCE_AUTO) {
            coll_auto_resolve(c, bytes, o, &algo, &p); /* one search for both */
            channels = sim_allreduce_auto_channels(c, o);
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
        allreduce_run(&k, algo, bytes, channels);
    }
    call_end(&k, r);
    return SS_OK;
}

int sim_allreduce(sim_comm *c, int member, double bytes, const sim_coll_opts *o,
                  sim_coll_result *r) {
    int st = check_call(c, member, bytes, "all-reduce");
    if (st) return st;
    return allreduce_seq(c, member, c->next_seq[member]++, bytes, o, r);
}

int sim_allgather(sim_comm *c, int member, double bytes_per_member, sim_coll_result *r) {
    return sim_allgather_opts(c, member, bytes_per_member, NULL, r);
}

/* Bruck's steps as messages, or their closed form. */
static int allgather_seq(sim_comm *c, int member, double bytes_per_member, int coarse,
                         sim_coll_result *r) {
    int st = check_call(c, member, bytes_per_member, "all-gather");
    if (st) return st;
    call k;
    call_begin(&k, c, member, c->next_seq[member]++, 0);
    int n = c->size;
    if (coarse && n > 1) {
        coll_allgather_coarse(&k, bytes_per_member);
    } else {
        for (int dist = 1; dist < n; dist *= 2) {
            int blocks = dist < n - dist ? dist : n - dist;
            coll_exchange(&k, (member - dist + n) % n, blocks * bytes_per_member,
                          (member + dist) % n, blocks * bytes_per_member);
        }
    }
    call_end(&k, r);
    return SS_OK;
}

int sim_allgather_opts(sim_comm *c, int member, double bytes_per_member, const sim_coll_opts *o,
                       sim_coll_result *r) {
    /* auto, and the closed forms of the all-reduce, take the closed form at scale */
    int coarse = o &&
                 (o->algo == SIM_ALLREDUCE_AUTO || o->algo == SIM_ALLREDUCE_RING_COARSE ||
                  o->algo == SIM_ALLREDUCE_HIER_COARSE) &&
                 c && c->size >= SIM_COARSE_MIN_MEMBERS;
    return allgather_seq(c, member, bytes_per_member, coarse, r);
}

int sim_allgather_coarse(sim_comm *c, int member, double bytes_per_member, sim_coll_result *r) {
    return allgather_seq(c, member, bytes_per_member, 1, r);
}

int sim_broadcast(sim_comm *c, int member, int root, double bytes, sim_coll_result *r) {
    int st = check_call(c, member, bytes, "broadcast");
    if (st) return st;
    if (root < 0 || root >= c->size)
        return ss_error_set(SS_EUSAGE, "broadcast: root %d out of range (group of %d)", root,
                            c->size);
    call k;
    call_begin(&k, c, member, c->next_seq[member]++, 0);
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
    call_end(&k, r);
    return SS_OK;
}

/* Point-to-point messages use instance "p" mailboxes: matched in order, no numbering. */
static sg_mailbox_t p2p_mailbox(const sim_comm *c, int src, int dst) {
    char name[96];
    snprintf(name, sizeof name, "c%d.p.%d.%d", c->id, src, dst);
    return sg_mailbox_by_name(name);
}

int sim_send(sim_comm *c, int member, int dst, double bytes, sim_coll_result *r) {
    int st = check_call(c, member, bytes, "send");
    if (st) return st;
    if (dst < 0 || dst >= c->size)
        return ss_error_set(SS_EUSAGE, "send: destination %d out of range (group of %d)", dst,
                            c->size);
    call k;
    call_begin(&k, c, member, 0, 0);
    sg_mailbox_put(p2p_mailbox(c, member, dst), &sim_token, coll_wire_bytes(bytes));
    k.res.bytes_sent = (double)coll_wire_bytes(bytes);
    call_end(&k, r);
    return SS_OK;
}

int sim_recv(sim_comm *c, int member, int src, double bytes, sim_coll_result *r) {
    int st = check_call(c, member, bytes, "recv");
    if (st) return st;
    if (src < 0 || src >= c->size)
        return ss_error_set(SS_EUSAGE, "recv: source %d out of range (group of %d)", src, c->size);
    call k;
    call_begin(&k, c, member, 0, 0);
    sg_mailbox_get(p2p_mailbox(c, src, member));
    k.res.bytes_recv = (double)coll_wire_bytes(bytes);
    call_end(&k, r);
    return SS_OK;
}

/* ---------------------------------------------------------------- asynchronous form */

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
    sim_comm *c;
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

sim_request *sim_allreduce_async(sim_comm *c, int member, double bytes, const sim_coll_opts *o,
                                 sim_done_fn done, void *ctx) {
    sim_request *rq = ss_calloc(1, sizeof *rq);
    rq->done_sem = sg_sem_init(0);
    rq->status = check_call(c, member, bytes, "all-reduce");
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
