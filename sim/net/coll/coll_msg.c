/* The message primitives every collective is written with: one call's context, mailboxes, sends
 * and receives of a step, and the merged flows of the closed forms. */
#include "sim/net/coll/collective.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "common/status.h"
#include "sim/net/coll/collective_internal.h"
#include "sim/net/fabric.h"
#include "sim/net/internal.h"

char sim_token = 'x';

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

/* Sends `bytes` to dst, each message's rate capped at rate_Bps (0: no cap). Sends are waited for
 * with the step's receives, not detached: SimGrid 3.32 keeps detached comms in a list it searches
 * linearly, which slows 1024-host rings. */
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

static void merged_plan(sim_group *c, int from, int to, double bytes, double unit_bytes,
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
    sim_group *c = k->c;
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

/* What the network model charges the merged flow from member `from` to `to` of
 * coll_exchange_merged: its latency, its transfer, and the wait for the time it is short of
 * (merged_plan). The rate is
 * SimGrid's: the route's bandwidth times the model's factor for the size sent, bounded by the
 * TCP window (gamma / (2 x the route's latency)), by the protocol's cap, and by `shared_Bps`,
 * what the links it shares with the other flows leave it (raw). `share` is
 * coll_exchange_merged's. */
double coll_merged_flow_s(const call *k, int from, int to, double bytes, double unit_bytes,
                          double share, double shared_Bps, double gamma, double *lat_s,
                          double *wait_s) {
    double wire;
    merged_plan(k->c, from, to, bytes, unit_bytes, share, k->proto_frac, &wire, wait_s);
    sg_host_t a = k->c->hosts[from], b = k->c->hosts[to];
    const double raw_bw = sg_host_get_route_bandwidth(a, b),
                 raw_lat = sg_host_get_route_latency(a, b);
    const long sent = coll_wire_bytes(wire);
    /* the model's factor scales what the links give, shared or not */
    double rate = coll_hop_bandwidth_Bps(a, b, (double)sent) * fmin(1, shared_Bps / raw_bw);
    if (gamma > 0 && raw_lat > 0) rate = fmin(rate, gamma / (2 * raw_lat));
    if (k->proto_frac > 0 && k->proto_frac < 1)
        rate = fmin(rate, k->proto_frac * coll_hop_bandwidth_Bps(a, b, unit_bytes));
    *lat_s = coll_hop_latency_s(a, b, (double)sent);
    return *lat_s + (double)sent / rate;
}

int coll_check_call(const sim_group *c, int member, double bytes, const char *what) {
    if (!c) return ss_error_set(SS_EUSAGE, "%s: no group", what);
    if (member < 0 || member >= c->size)
        return ss_error_set(SS_EUSAGE, "%s: member %d out of range (group of %d)", what, member,
                            c->size);
    if (!(bytes > 0) || !isfinite(bytes))
        return ss_error_set(SS_EUSAGE, "%s: size %g bytes, need > 0", what, bytes);
    return SS_OK;
}

void coll_call_begin(call *k, sim_group *c, int member, uint64_t seq, double seg_bytes) {
    memset(k, 0, sizeof *k);
    k->c = c;
    k->member = member;
    k->seq = seq;
    k->seg_bytes = seg_bytes;
    k->hw_dst = -1;
    k->res.start_s = simgrid_get_clock();
}

void coll_call_end(call *k, sim_coll_result *r) {
    k->res.end_s = simgrid_get_clock();
    k->c->bytes_sent[k->member] += k->res.bytes_sent;
    if (r) *r = k->res;
}
