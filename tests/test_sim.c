/* CUnit suite of the SimGrid side: collectives against their closed forms (CM02), coarse vs
 * message-level, PS incast, concurrent groups, golden simulated times, async requests.
 * Every scenario runs in its own process (isolate_call): SimGrid's engine exists once per
 * process. Platforms are generated into the build directory by platform_generate(). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "common/status.h"
#include "sim/net/cluster.h"
#include "cli/bench_network.h"
#include "sim/net/coll/collective.h"
#include "sim/compute/compute.h"
#include "sim/net/compute_charge.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"
#include "sim/net/ps.h"
#include "tests/ss_test.h"

/* ---------------------------------------------------------------- scenarios */

typedef enum scen_kind {
    SCEN_ALLREDUCE, /* every worker all-reduces once */
    SCEN_ALLGATHER, /* every worker all-gathers bytes per member */
    SCEN_BROADCAST, /* binomial broadcast from 0 */
    SCEN_PS_INCAST, /* every worker pushes to server 0 */
    SCEN_PS_BSP,    /* push-pull, SIM_PS_SYNC, 2 rounds */
    SCEN_GROUPS,    /* disjoint groups of `group` workers all-reduce concurrently */
    SCEN_ASYNC,     /* all-reduce through sim_allreduce_async + callback */
    SCEN_COMPUTE,   /* one step of flops, then an all-reduce */
    SCEN_PS_SSP,    /* SIM_PS_ASYNC: push_async, compute, pull, wait; 3 rounds */
    SCEN_REPEAT     /* every worker all-reduces SCEN_REPEAT_CALLS times, back to back */
} scen_kind;
#define SCEN_REPEAT_CALLS 4

typedef struct scen {
    const char *platform;
    int n_workers, n_ps;
    sim_network_model model;
    scen_kind kind;
    sim_coll_opts co;
    double bytes;
    int group;    /* SCEN_GROUPS: group size */
    double flops; /* SCEN_COMPUTE */
} scen;

/* What comes back from the child. */
typedef struct scen_out {
    double end_s;        /* simulated time when the last actor ended */
    double max_member_s; /* latest member completion time (r.end_s) */
    double min_member_s;
    double alpha_s;     /* route latency worker 0 -> worker 1 */
    double bw_Bps;      /* route bandwidth worker 0 -> worker 1, bytes/s */
    double alpha_max_s; /* largest route latency between ring neighbours w -> w+1 */
    double bytes_sent0; /* bytes sent by member 0 */
    double callback_s;  /* SCEN_ASYNC: time the callback saw */
    double pushes;      /* PS: on_push calls */
    double actors_max;  /* SCEN_REPEAT, SCEN_PS_SSP: most actors alive after a worker's call */
} scen_out;

typedef struct worker_arg {
    const scen *s;
    sim_cluster *c;
    sim_ps *ps;
    int rank;
    scen_out *out;
} worker_arg;

static void note_end(scen_out *o, const sim_coll_result *r) {
    if (r->end_s > o->max_member_s) o->max_member_s = r->end_s;
    if (r->end_s < o->min_member_s) o->min_member_s = r->end_s;
}

static void on_done(void *ctx, int member, const sim_coll_result *r) {
    scen_out *o = ctx;
    (void)member;
    o->callback_s = fmax(o->callback_s, simgrid_get_clock());
    (void)r;
}

static void on_push(void *ctx, int server, int worker, int64_t round, const void *payload,
                    double now_s) {
    (void)server, (void)worker, (void)round, (void)payload, (void)now_s;
    ((scen_out *)ctx)->pushes += 1;
}

static void worker_main(void *data) {
    worker_arg *a = data;
    const scen *s = a->s;
    sim_coll_result r = {0};
    sim_group *world = sim_cluster_world(a->c);
    int st = SS_OK;
    switch (s->kind) {
    case SCEN_ALLREDUCE:
        st = sim_allreduce(world, a->rank, s->bytes, &s->co, &r);
        break;
    case SCEN_ALLGATHER:
        st = sim_allgather(world, a->rank, s->bytes, &r);
        break;
    case SCEN_BROADCAST:
        st = sim_broadcast(world, a->rank, 0, s->bytes, &r);
        break;
    case SCEN_PS_INCAST:
        st = sim_ps_push(a->ps, a->rank, s->bytes, 0, NULL, &r);
        break;
    case SCEN_PS_BSP:
        for (int round = 0; round < 2 && !st; round++)
            st = sim_ps_push_pull(a->ps, a->rank, s->bytes, round, NULL, &r);
        break;
    case SCEN_GROUPS: {
        int g0 = a->rank / s->group * s->group, ranks[64];
        for (int i = 0; i < s->group; i++)
            ranks[i] = g0 + i;
        sim_group *g = sim_cluster_group(a->c, ranks, s->group);
        st = sim_allreduce(g, a->rank - g0, s->bytes, &s->co, &r);
        break;
    }
    case SCEN_ASYNC: {
        sim_request *rq = sim_allreduce_async(world, a->rank, s->bytes, &s->co, on_done, a->out);
        st = sim_request_wait(rq, &r);
        break;
    }
    case SCEN_PS_SSP:
        for (int round = 0; round < 3 && !st; round++) {
            sim_request *rq =
                sim_ps_push_async(a->ps, a->rank, s->bytes, round, NULL, on_done, a->out);
            sim_compute_cfg cc = {.mode = SIM_COMPUTE_TRACE, .scale = 1};
            sim_step_cost cost = {.trace_s = 1e-3 * (a->rank + 1)};
            st = sim_compute_step(&cc, &cost, NULL);
            if (!st) st = sim_ps_pull(a->ps, a->rank, s->bytes, round, &r);
            sim_coll_result pr;
            if (!st) st = sim_request_wait(rq, &pr);
            a->out->actors_max = fmax(a->out->actors_max, (double)sg_actor_count());
        }
        break;
    case SCEN_REPEAT:
        for (int call = 0; call < SCEN_REPEAT_CALLS && !st; call++) {
            st = sim_allreduce(world, a->rank, s->bytes, &s->co, &r);
            a->out->actors_max = fmax(a->out->actors_max, (double)sg_actor_count());
        }
        break;
    case SCEN_COMPUTE: {
        sim_compute_cfg cc = {.mode = SIM_COMPUTE_FLOPS, .scale = 1};
        sim_step_cost cost = {.flops = s->flops};
        st = sim_compute_step(&cc, &cost, NULL);
        if (!st) st = sim_allreduce(world, a->rank, s->bytes, &s->co, &r);
        break;
    }
    }
    SS_ASSERT(st == SS_OK);
    note_end(a->out, &r);
    if (a->rank == 0) a->out->bytes_sent0 = r.bytes_sent;
}

static int scen_run(void *arg, isolate_blob *result) {
    const scen *s = arg;
    sim_cluster_opts o = {.platform_path = s->platform,
                          .n_workers = s->n_workers,
                          .n_ps = s->n_ps,
                          .model = s->model};
    sim_cluster *c;
    int st = sim_cluster_open(&o, &c);
    if (st) return st;
    scen_out out = {.min_member_s = INFINITY};
    sim_ps *ps = NULL;
    if (s->kind == SCEN_PS_INCAST || s->kind == SCEN_PS_BSP || s->kind == SCEN_PS_SSP) {
        sim_ps_opts po = {.n_workers = s->n_workers,
                          .worker_hosts = sim_cluster_worker_hosts(c),
                          .n_servers = s->n_ps,
                          .server_hosts = sim_cluster_ps_hosts(c),
                          .mode = s->kind == SCEN_PS_SSP ? SIM_PS_ASYNC : SIM_PS_SYNC,
                          .hooks = {.ctx = &out, .on_push = on_push}};
        if ((st = sim_ps_start(&po, &ps))) return st;
    }
    worker_arg *args = calloc((size_t)s->n_workers, sizeof *args);
    for (int w = 0; w < s->n_workers; w++) {
        args[w] = (worker_arg){s, c, ps, w, &out};
        sim_actor_spawn("worker", w, sim_cluster_worker_host(c, w), worker_main, &args[w]);
    }
    sg_host_t h0 = sim_cluster_worker_host(c, 0);
    sg_host_t h1 = s->n_workers > 1 ? sim_cluster_worker_host(c, 1) : h0;
    out.alpha_s = sg_host_get_route_latency(h0, h1);
    out.bw_Bps = sg_host_get_route_bandwidth(h0, h1);
    for (int w = 0; w < s->n_workers; w++)
        out.alpha_max_s =
            fmax(out.alpha_max_s,
                 sg_host_get_route_latency(sim_cluster_worker_host(c, w),
                                           sim_cluster_worker_host(c, (w + 1) % s->n_workers)));
    st = sim_cluster_simulate(c, &out.end_s);
    isolate_blob_append(result, &out, sizeof out);
    sim_ps_free(ps);
    free(args);
    sim_cluster_close(c);
    return st;
}

static scen_out run_scen(const scen *s) {
    isolate_blob b = {0};
    scen_out out;
    memset(&out, 0, sizeof out);
    int st = isolate_call(scen_run, (void *)s, &b);
    if (st != SS_OK) fprintf(stderr, "\n  scenario failed: %s\n", ss_error_message());
    CU_ASSERT_EQUAL_FATAL(st, SS_OK);
    CU_ASSERT_EQUAL_FATAL(b.bytes, sizeof out);
    memcpy(&out, b.data, sizeof out);
    isolate_blob_free(&b);
    return out;
}

/* A star platform of n hosts (+ps) at 25 Gbps, 5 us per link, in the build directory. */
static const char *star_platform(int n, int n_ps, platform_topology topo) {
    static char paths[64][256];
    static int used;
    char path[256];
    snprintf(path, sizeof path, "%s/tests/sim_%s_%d_ps%d.xml", SS_BINARY_DIR,
             topo == PLATFORM_TOPOLOGY_STAR ? "star" : "fattree", n, n_ps);
    for (int i = 0; i < used; i++)
        if (strcmp(paths[i], path) == 0) return paths[i];
    platform_gen_spec sp = platform_gen_default();
    sp.n_hosts = n;
    sp.n_ps = n_ps;
    sp.topology = topo;
    sp.latency_s = 5e-6;
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    SS_ASSERT(platform_generate(&sp, f) == SS_OK);
    fclose(f);
    SS_ASSERT(used < 64);
    snprintf(paths[used], sizeof paths[used], "%s", path);
    return paths[used++];
}

/* ---------------------------------------------------------------- closed forms */

static const int sizes_n[] = {2, 4, 8, 16, 64};
static const double sizes_m[] = {1e3, 1e6, 1e8};

/* CM02 is deterministic: the closed forms below hold to rounding (REL), once they count the
 * whole bytes SimGrid moves (a part of M/N bytes goes on the wire as round(M/N), at least 1). */
#define REL 1e-9
static double wire(double bytes) {
    double b = round(bytes);
    return b < 1 ? 1 : b;
}

/* Ring: T = 2(N-1) (alpha + M/N / B) (alpha: the slowest neighbour route; each step waits for
 * the predecessor). */
static double ring_closed_form(int n, double m, double alpha_max_s, double b) {
    return 2.0 * (n - 1) * (alpha_max_s + wire(m / n) / b);
}

/* Ring-coarse: per phase one flow of (N-1)/N M bytes, then a wait up to N-1 slowest latencies. */
static double ring_coarse_closed_form(int n, double m, double alpha_max_s, double b) {
    return 2.0 * ((n - 1) * alpha_max_s + wire(m * (n - 1) / n) / b);
}

/* An all-reduce of m bytes by `algo` over n workers on a generated star, under CM02. */
static scen_out star_allreduce(int n, sim_allreduce_algo algo, double m) {
    scen s = {star_platform(n, 0, PLATFORM_TOPOLOGY_STAR),
              n,
              0,
              SIM_NETWORK_CM02,
              SCEN_ALLREDUCE,
              {algo, 0, 1, SIM_PROTOCOL_AUTO},
              m,
              0,
              0};
    return run_scen(&s);
}

/* Ring on a star: every neighbour route has the latency of worker 0 -> 1. */
static void test_ring_closed_form(void) {
    for (size_t i = 0; i < sizeof sizes_n / sizeof *sizes_n; i++) {
        for (size_t j = 0; j < sizeof sizes_m / sizeof *sizes_m; j++) {
            int n = sizes_n[i];
            double m = sizes_m[j];
            scen_out o = star_allreduce(n, SIM_ALLREDUCE_RING, m);
            double want = ring_closed_form(n, m, o.alpha_s, o.bw_Bps);
            SS_CHECK_CLOSE(o.max_member_s, want, 0, REL);
            SS_CHECK_CLOSE(o.bytes_sent0, 2.0 * (n - 1) / n * m, 2.0 * n, 0);
        }
    }
}

/* A ring under a named NCCL protocol is NCCL's ring: Simple (whole messages, no rate cap) adds
 * NCCL 2.7.5's base latency of a ring call (8.4 us) and its per-step latency on the network
 * (9.6 us) to each of the 2(N-1) steps, message-level and closed form alike; without a protocol
 * the ring stays plain. */
static void test_ring_under_simple(void) {
    for (size_t i = 0; i < sizeof sizes_n / sizeof *sizes_n; i++) {
        const int n = sizes_n[i];
        const double m = 1e6;
        for (int coarse = 0; coarse < 2; coarse++) {
            const sim_allreduce_algo algo = coarse ? SIM_ALLREDUCE_RING_COARSE : SIM_ALLREDUCE_RING;
            scen s = {star_platform(n, 0, PLATFORM_TOPOLOGY_STAR),
                      n,
                      0,
                      SIM_NETWORK_CM02,
                      SCEN_ALLREDUCE,
                      {algo, 0, 1, SIM_PROTOCOL_SIMPLE},
                      m,
                      0,
                      0};
            scen_out o = run_scen(&s);
            const double plain = coarse ? ring_coarse_closed_form(n, m, o.alpha_s, o.bw_Bps)
                                        : ring_closed_form(n, m, o.alpha_s, o.bw_Bps);
            SS_CHECK_CLOSE(o.max_member_s, plain + 8.4e-6 + 2.0 * (n - 1) * 9.6e-6, 0, REL);
        }
    }
}

/* Halving-doubling: 2 log2(p) alpha + 2 (M/2 + M/4 + ... + M/p)/B (= 2(p-1)/p M/B before
 * rounding to whole bytes), plus 2 (alpha + M/B) when N is not a power of two (the fold and the
 * unfold). */
static double hd_closed_form(int n, double m, double a, double b) {
    int p = 1, k = 0;
    double t = 0;
    while (p * 2 <= n) {
        p *= 2, k++;
        t += 2 * (a + wire(m / p) / b);
    }
    if (p != n) t += 2 * (a + wire(m) / b);
    return t;
}

static void test_hd_closed_form(void) {
    static const int ns[] = {2, 4, 6, 8, 12, 16, 64};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        for (size_t j = 0; j < sizeof sizes_m / sizeof *sizes_m; j++) {
            int n = ns[i];
            double m = sizes_m[j];
            scen_out o = star_allreduce(n, SIM_ALLREDUCE_HALVING_DOUBLING, m);
            SS_CHECK_CLOSE(o.max_member_s, hd_closed_form(n, m, o.alpha_s, o.bw_Bps), 0, REL);
        }
    }
}

/* Recursive doubling: log2(p) (alpha + M/B), the whole vector each step, plus 2 (alpha + M/B)
 * when N is not a power of two (the fold and the unfold); every member sends M per step. */
static void test_rd_closed_form(void) {
    static const int ns[] = {2, 4, 6, 8, 12, 16, 64};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        for (size_t j = 0; j < sizeof sizes_m / sizeof *sizes_m; j++) {
            const int n = ns[i];
            const double m = sizes_m[j];
            scen_out o = star_allreduce(n, SIM_ALLREDUCE_RECURSIVE_DOUBLING, m);
            int p = 1, steps = 0;
            while (p * 2 <= n)
                p *= 2, steps++;
            const double step_s = o.alpha_s + wire(m) / o.bw_Bps;
            SS_CHECK_CLOSE(o.max_member_s, (steps + (p != n ? 2 : 0)) * step_s, 0, REL);
        }
    }
    sim_allreduce_algo a;
    CU_ASSERT_EQUAL(sim_allreduce_algo_parse("--collective", "rd", &a), SS_OK);
    CU_ASSERT_EQUAL(a, SIM_ALLREDUCE_RECURSIVE_DOUBLING);
}

/* Tree (heap order, children received one after the other, then sent one after the other):
 * reduce_done(i) = fold over children c of max(t, reduce_done(c)) + tau, tau = alpha + M/B;
 * bcast(child k of i) = bcast(i) + (k + 1) tau after the root's reduce. */
static double tree_reduce_done(int i, int n, double tau) {
    double t = 0;
    for (int c = 2 * i + 1; c <= 2 * i + 2 && c < n; c++)
        t = fmax(t, tree_reduce_done(c, n, tau)) + tau;
    return t;
}

static double tree_bcast_max(int i, int n, double t_i, double tau) {
    double worst = t_i, t = t_i;
    for (int c = 2 * i + 1; c <= 2 * i + 2 && c < n; c++) {
        t += tau;
        worst = fmax(worst, tree_bcast_max(c, n, t, tau));
    }
    return worst;
}

static void test_tree_closed_form(void) {
    for (size_t i = 0; i < sizeof sizes_n / sizeof *sizes_n; i++) {
        for (size_t j = 0; j < sizeof sizes_m / sizeof *sizes_m; j++) {
            int n = sizes_n[i];
            double m = sizes_m[j];
            scen_out o = star_allreduce(n, SIM_ALLREDUCE_TREE, m);
            double tau = o.alpha_s + m / o.bw_Bps;
            double want = tree_bcast_max(0, n, tree_reduce_done(0, n, tau), tau);
            SS_CHECK_CLOSE(o.max_member_s, want, 0, REL);
        }
    }
}

/* Pipelining the tree in segments beats whole messages on a deep tree with a big vector. */
static void test_tree_segmented(void) {
    scen s = {star_platform(16, 0, PLATFORM_TOPOLOGY_STAR),
              16,
              0,
              SIM_NETWORK_CM02,
              SCEN_ALLREDUCE,
              {SIM_ALLREDUCE_TREE, 0, 1, SIM_PROTOCOL_AUTO},
              1e8,
              0,
              0};
    scen_out whole = run_scen(&s);
    s.co.segment_bytes = 4e6;
    scen_out seg = run_scen(&s);
    CU_ASSERT(seg.max_member_s < 0.5 * whole.max_member_s);
}

/* All-gather (Bruck) of 8 bytes per member: ceil(log2 N) latency-bound steps. */
static void test_allgather_flags(void) {
    static const int ns[] = {2, 5, 16, 64};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        int n = ns[i], steps = 0;
        for (int d = 1; d < n; d *= 2)
            steps++;
        scen s = {star_platform(n, 0, PLATFORM_TOPOLOGY_STAR),
                  n,
                  0,
                  SIM_NETWORK_CM02,
                  SCEN_ALLGATHER,
                  {0, 0, 1, SIM_PROTOCOL_AUTO},
                  8,
                  0,
                  0};
        scen_out o = run_scen(&s);
        double bytes = 8.0 * (n - 1); /* sum of the blocks over the steps */
        SS_CHECK_CLOSE(o.max_member_s, steps * o.alpha_s + bytes / o.bw_Bps, 0, REL);
    }
}

static void test_broadcast(void) {
    scen s = {star_platform(8, 0, PLATFORM_TOPOLOGY_STAR),
              8,
              0,
              SIM_NETWORK_CM02,
              SCEN_BROADCAST,
              {0, 0, 1, SIM_PROTOCOL_AUTO},
              1e6,
              0,
              0};
    scen_out o = run_scen(&s);
    /* binomial from 0 on 8: the root sends 3 times in a row; member 1 is last: 3 tau... the
     * deepest path is 0->4 (t1), 0->2 (t2), 0->1 (t3) and 4->6->7 ends at t3 too */
    SS_CHECK_CLOSE(o.max_member_s, 3 * (o.alpha_s + 1e6 / o.bw_Bps), 0, REL);
}

/* ---------------------------------------------------------------- coarse, PS, groups */

static void test_coarse_vs_message(void) {
    static const sim_network_model models[] = {SIM_NETWORK_CM02, SIM_NETWORK_LV08};
    static const int ns[] = {4, 16, 64};
    static const double ms[] = {1e6, 1e8};
    for (int mi = 0; mi < 2; mi++) {
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
            for (size_t j = 0; j < 2; j++) {
                scen s = {star_platform(ns[i], 0, PLATFORM_TOPOLOGY_STAR),
                          ns[i],
                          0,
                          models[mi],
                          SCEN_ALLREDUCE,
                          {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO},
                          ms[j],
                          0,
                          0};
                scen_out msg = run_scen(&s);
                s.co.algo = SIM_ALLREDUCE_RING_COARSE;
                scen_out coarse = run_scen(&s);
                SS_CHECK_CLOSE(coarse.max_member_s, msg.max_member_s, 0, REL);
            }
        }
    }
}

/* On the 64-host fat tree some ring neighbours sit on other leaves (4 hops instead of 2): the
 * coarse form still follows the message-level ring. */
static void test_coarse_fat_tree(void) {
    static const double ms[] = {1e3, 1e6, 1e8};
    for (int j = 0; j < 3; j++) {
        scen s = {star_platform(64, 0, PLATFORM_TOPOLOGY_FAT_TREE),
                  64,
                  0,
                  SIM_NETWORK_CM02,
                  SCEN_ALLREDUCE,
                  {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO},
                  ms[j],
                  0,
                  0};
        scen_out msg = run_scen(&s);
        s.co.algo = SIM_ALLREDUCE_RING_COARSE;
        scen_out coarse = run_scen(&s);
        double a = msg.alpha_max_s;
        CU_ASSERT(a > msg.alpha_s); /* some neighbours are further apart than 0 and 1 */
        SS_CHECK_CLOSE(msg.max_member_s, ring_closed_form(64, ms[j], a, msg.bw_Bps), 0, REL);
        SS_CHECK_CLOSE(coarse.max_member_s, ring_coarse_closed_form(64, ms[j], a, msg.bw_Bps), 0,
                       REL);
    }
}

/* N workers pushing M bytes to one PS share its incoming link: alpha + N M / B. */
static void test_ps_incast(void) {
    static const int ns[] = {2, 8, 32};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        int n = ns[i];
        scen s = {star_platform(n, 1, PLATFORM_TOPOLOGY_STAR),
                  n,
                  1,
                  SIM_NETWORK_CM02,
                  SCEN_PS_INCAST,
                  {0, 0, 1, SIM_PROTOCOL_AUTO},
                  1e7,
                  0,
                  0};
        scen_out o = run_scen(&s);
        /* one latency, then N flows share the server's link */
        SS_CHECK_CLOSE(o.max_member_s, o.alpha_s + n * 1e7 / o.bw_Bps, 0, REL);
        CU_ASSERT_EQUAL(o.pushes, n);
    }
}

/* Two rounds of BSP push-pull through 2 servers: every pull waits for all pushes. */
static void test_ps_bsp_sharded(void) {
    scen s = {star_platform(8, 2, PLATFORM_TOPOLOGY_STAR),
              8,
              2,
              SIM_NETWORK_CM02,
              SCEN_PS_BSP,
              {0, 0, 1, SIM_PROTOCOL_AUTO},
              1e7,
              0,
              0};
    scen_out o = run_scen(&s);
    /* per round: push 8 x 5 MB into each server (incast 8 x 5e6 / B), pull the same out; three
     * latencies: the push, the pull request, the pull's answer */
    double round_s = 3 * o.alpha_s + 2 * 8 * 5e6 / o.bw_Bps;
    SS_CHECK_CLOSE(o.max_member_s, 2 * round_s, 0, REL);
    CU_ASSERT_EQUAL(o.pushes, 2 * 8 * 2);
    CU_ASSERT(fabs(o.max_member_s - o.min_member_s) < 1e-3 * o.max_member_s);
}

/* SSP-style: asynchronous pushes, pulls answered at once; every push reaches the hook, and the
 * fastest worker finishes well before the slowest (nobody waits for the others). */
static void test_ps_async(void) {
    scen s = {star_platform(8, 1, PLATFORM_TOPOLOGY_STAR),
              8,
              1,
              SIM_NETWORK_CM02,
              SCEN_PS_SSP,
              {0, 0, 1, SIM_PROTOCOL_AUTO},
              1e6,
              0,
              0};
    scen_out o = run_scen(&s);
    CU_ASSERT_EQUAL(o.pushes, 3 * 8);
    CU_ASSERT(o.min_member_s < 0.5 * o.max_member_s);
    CU_ASSERT(o.callback_s > 0);
    /* the workers, the server and one push helper per worker, kept from round to round */
    CU_ASSERT(o.actors_max <= 8 + 1 + 8);
}

/* Calls back to back reuse their helper actors (the double binary tree's second tree runs in
 * one on each member): as many actors after four calls as after one, and each call as long as
 * the first, since the calls see the same idle network. */
static void test_repeat_helpers(void) {
    for (int n = 2; n <= 8; n *= 2) {
        scen s = {star_platform(n, 0, PLATFORM_TOPOLOGY_STAR),
                  n,
                  0,
                  SIM_NETWORK_CM02,
                  SCEN_ALLREDUCE,
                  {SIM_ALLREDUCE_DBTREE, 0, 1, SIM_PROTOCOL_SIMPLE},
                  1e6,
                  0,
                  0};
        scen_out one = run_scen(&s);
        s.kind = SCEN_REPEAT;
        scen_out four = run_scen(&s);
        SS_CHECK_CLOSE(four.max_member_s, SCEN_REPEAT_CALLS * one.max_member_s, 0, REL);
        CU_ASSERT(four.actors_max <= 2 * n); /* the workers and their helpers */
    }
}

static void test_compute_parse(void) {
    sim_compute_cfg c;
    CU_ASSERT_EQUAL(sim_compute_parse("--compute", "flops", &c), SS_OK);
    CU_ASSERT_EQUAL(c.mode, SIM_COMPUTE_FLOPS);
    CU_ASSERT_EQUAL(sim_compute_parse("--compute", "measured:2.5", &c), SS_OK);
    CU_ASSERT_EQUAL(c.mode, SIM_COMPUTE_MEASURED);
    SS_CHECK_CLOSE(c.scale, 2.5, 0, 0);
    char buf[64];
    sim_compute_format(&c, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "measured:2.5");
    CU_ASSERT_EQUAL(sim_compute_parse("--compute", "measured:0", &c), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--compute"));
    CU_ASSERT_EQUAL(sim_compute_parse("--compute", "gpu", &c), SS_EUSAGE);
    sim_compute_cfg f = {.mode = SIM_COMPUTE_FLOPS, .scale = 1};
    sim_step_cost cost = {.flops = 15.7e12, .slowdown = 2};
    const sim_compute_host v100 = {.speed_flops = 15.7e12};
    SS_CHECK_CLOSE(sim_compute_duration_s(&f, &cost, &v100), 2.0, 0, 1e-15);
    sim_allreduce_algo a;
    CU_ASSERT_EQUAL(sim_allreduce_algo_parse("--allreduce", "halving-doubling", &a), SS_OK);
    CU_ASSERT_EQUAL(a, SIM_ALLREDUCE_HALVING_DOUBLING);
    CU_ASSERT_EQUAL(sim_allreduce_algo_parse("--allreduce", "mesh", &a), SS_EUSAGE);
    sim_network_model m;
    CU_ASSERT_EQUAL(sim_network_model_parse("--network-model", "cm02", &m), SS_OK);
    CU_ASSERT_EQUAL(m, SIM_NETWORK_CM02);
    CU_ASSERT_EQUAL(sim_network_model_parse("--network-model", "ns3", &m), SS_EUSAGE);
}

/* Disjoint groups on a non-blocking star do not slow each other. */
static void test_groups_nonblocking(void) {
    scen s = {star_platform(16, 0, PLATFORM_TOPOLOGY_STAR),
              16,
              0,
              SIM_NETWORK_CM02,
              SCEN_GROUPS,
              {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO},
              1e7,
              4,
              0};
    scen_out four = run_scen(&s);
    s.n_workers = 4; /* one group alone */
    scen_out one = run_scen(&s);
    SS_CHECK_CLOSE(four.max_member_s, one.max_member_s, 0, 1e-9);
}

/* The same groups on a platform whose switches share one 25 Gbps SHARED backbone slow down. */
static void test_groups_bottleneck(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/tests/sim_shared_backbone.xml", SS_BINARY_DIR);
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    fprintf(f, "<?xml version='1.0'?>\n"
               "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n"
               "  <cluster id=\"c\" prefix=\"gpu-\" suffix=\"\" radical=\"0-15\" speed=\"15.7Tf\"\n"
               "           bw=\"25Gbps\" lat=\"5us\" sharing_policy=\"SPLITDUPLEX\"\n"
               "           bb_bw=\"25Gbps\" bb_lat=\"0us\" bb_sharing_policy=\"SHARED\"/>\n"
               "</platform>\n");
    fclose(f);
    scen s = {
        path, 16, 0, SIM_NETWORK_CM02, SCEN_GROUPS, {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO},
        1e7,  4,  0};
    scen_out four = run_scen(&s);
    s.n_workers = 4;
    scen_out one = run_scen(&s);
    CU_ASSERT(four.max_member_s > 3.5 * one.max_member_s);
}

static void test_async_callback(void) {
    scen s = {star_platform(8, 0, PLATFORM_TOPOLOGY_STAR),
              8,
              0,
              SIM_NETWORK_CM02,
              SCEN_ASYNC,
              {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO},
              1e6,
              0,
              0};
    scen_out a = run_scen(&s);
    s.kind = SCEN_ALLREDUCE;
    scen_out b = run_scen(&s);
    SS_CHECK_CLOSE(a.max_member_s, b.max_member_s, 0, 1e-12);
    SS_CHECK_CLOSE(a.callback_s, b.max_member_s, 0, 1e-12);
}

/* bench network on small sizes: one row per N; when SMPI ran, its simulated time is within 5%
 * of the message-level ring's. */
static void test_bench_network_small(void) {
    bench_network_opts o = bench_network_default();
    o.bytes = 4e6;
    o.n_sizes = 2;
    o.hosts[0] = 4;
    o.hosts[1] = 8;
    o.max_smpi_hosts = 8;
    o.work_dir = SS_BINARY_DIR "/tests";
    char path[512];
    snprintf(path, sizeof path, "%s/tests/bench_network.txt", SS_BINARY_DIR);
    FILE *f = fopen(path, "w+");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int st = bench_network(&o, f);
    if (st) fprintf(stderr, "\n  %s\n", ss_error_message());
    CU_ASSERT_EQUAL(st, SS_OK);
    rewind(f);
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        int n;
        double ring_s, ring_w, coarse_s, coarse_w, smpi_s;
        if (line[0] == '#') continue;
        if (sscanf(line, "%d %lf %lf %lf %lf %lf", &n, &ring_s, &ring_w, &coarse_s, &coarse_w,
                   &smpi_s) >= 5) {
            rows++;
            SS_CHECK_CLOSE(coarse_s, ring_s, 0, 0.01);
            if (sscanf(line, "%d %lf %lf %lf %lf %lf", &n, &ring_s, &ring_w, &coarse_s, &coarse_w,
                       &smpi_s) == 6)
                SS_CHECK_CLOSE(ring_s, smpi_s, 0, 0.05);
        }
    }
    fclose(f);
    CU_ASSERT_EQUAL(rows, 2);
}

/* ---------------------------------------------------------------- golden */

/* Exact simulated times (the simulation is deterministic): any change to the algorithms, the
 * generator or the model settings shows here first. Values printed with %.17g. */
static void test_golden(void) {
    struct {
        scen s;
        double want_s;
    } g[] = {
        {{NULL,
          16,
          0,
          SIM_NETWORK_CM02,
          SCEN_ALLREDUCE,
          {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO},
          1e8,
          0,
          0},
         0},
        {{NULL,
          16,
          0,
          SIM_NETWORK_LV08,
          SCEN_ALLREDUCE,
          {SIM_ALLREDUCE_RING, 0, 1, SIM_PROTOCOL_AUTO},
          1e8,
          0,
          0},
         0},
        {{NULL,
          16,
          0,
          SIM_NETWORK_LV08,
          SCEN_ALLREDUCE,
          {SIM_ALLREDUCE_HALVING_DOUBLING, 0, 1, SIM_PROTOCOL_AUTO},
          1e6,
          0,
          0},
         0},
        {{NULL,
          16,
          0,
          SIM_NETWORK_LV08,
          SCEN_COMPUTE,
          {SIM_ALLREDUCE_TREE, 0, 1, SIM_PROTOCOL_AUTO},
          1e6,
          0,
          3.14e12},
         0},
    };
    static const double golden[] = {0.060300000000000048, 0.068851453608247432,
                                    0.001690284536082474, 0.20597995979381434};
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        g[i].s.platform = star_platform(16, 0, PLATFORM_TOPOLOGY_STAR);
        scen_out o = run_scen(&g[i].s);
        if (o.max_member_s != golden[i])
            fprintf(stderr, "\n  golden %zu: got %.17g, expected %.17g\n", i, o.max_member_s,
                    golden[i]);
        CU_ASSERT_EQUAL(o.max_member_s, golden[i]);
    }
}

static CU_TestInfo closed_form_tests[] = {
    {"sim_allreduce ring vs alpha-beta closed form (CM02)", test_ring_closed_form},
    {"sim_allreduce ring and ring-coarse under Simple: NCCL's latencies added",
     test_ring_under_simple},
    {"sim_allreduce halving-doubling vs closed form (CM02)", test_hd_closed_form},
    {"sim_allreduce recursive doubling vs closed form (CM02)", test_rd_closed_form},
    {"sim_allreduce tree vs closed form (CM02)", test_tree_closed_form},
    {"sim_allreduce tree pipelined by segments", test_tree_segmented},
    {"sim_allgather Bruck, 8-byte flags", test_allgather_flags},
    {"sim_broadcast binomial", test_broadcast},
    CU_TEST_INFO_NULL};

static CU_TestInfo network_tests[] = {
    {"sim_allreduce ring-coarse = ring (CM02, LV08)", test_coarse_vs_message},
    {"sim_allreduce ring-coarse vs ring on a fat tree", test_coarse_fat_tree},
    {"sim_ps_push incast alpha + N.M/B", test_ps_incast},
    {"sim_ps_push_pull BSP over 2 shards", test_ps_bsp_sharded},
    {"sim_ps_push_async + pull, SIM_PS_ASYNC (SSP)", test_ps_async},
    {"sim_allreduce dbtree back to back: helpers kept, same times", test_repeat_helpers},
    {"sim_compute_parse, duration, algorithm and model names", test_compute_parse},
    {"sim_cluster_group disjoint groups, non-blocking fabric", test_groups_nonblocking},
    {"sim_cluster_group disjoint groups, shared backbone", test_groups_bottleneck},
    {"sim_allreduce_async with callback", test_async_callback},
    {"bench_network small sizes (SMPI when available)", test_bench_network_small},
    {"golden simulated times", test_golden},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"sim closed forms", NULL, NULL, NULL, NULL, closed_form_tests},
                             {"sim network", NULL, NULL, NULL, NULL, network_tests},
                             CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
