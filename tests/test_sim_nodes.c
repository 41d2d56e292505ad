/* CUnit suite of the node-aware collectives (sim/net/coll/collective.h, sim/net/topology.h):
 * hierarchical all-reduce, multi-channel rings and the double binary tree against their closed
 * forms under CM02, their coarse forms against the message-level ones, auto's choices, the refusal
 * of hier on a flat platform, and the topology read from host properties. The node platforms are
 * written here by hand as the platform contract describes them (hosts node<k>-gpu<g> with the
 * properties node, local_rank, nic; links with a fabric property), so that these tests do not
 * depend on the generator. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "common/status.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"
#include "sim/net/topology.h"
#include "tests/ss_test.h"

/* ---------------------------------------------------------------- platforms */

typedef struct node_spec {
    int nodes, gpus, nics;
    double intra_gbps, intra_lat_us; /* per GPU link (NVLink-like), split duplex */
    double nic_gbps, nic_lat_us;     /* per NIC link, split duplex */
} node_spec;

/* Intra-node route: the GPU's link up, the peer's link down; inter-node: the GPU's NIC up, the
 * peer's NIC down (rail-optimized, one non-blocking switch). */
static void write_routes(FILE *f, const node_spec *s) {
    const int n = s->nodes * s->gpus;
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            if (a == b) continue;
            int ka = a / s->gpus, ga = a % s->gpus, kb = b / s->gpus, gb = b % s->gpus;
            fprintf(f, "  <route src=\"node%d-gpu%d\" dst=\"node%d-gpu%d\" symmetrical=\"NO\">", ka,
                    ga, kb, gb);
            if (ka == kb)
                fprintf(f,
                        "<link_ctn id=\"node%d-gpu%d-nvl\" direction=\"UP\"/>"
                        "<link_ctn id=\"node%d-gpu%d-nvl\" direction=\"DOWN\"/>",
                        ka, ga, kb, gb);
            else
                fprintf(f,
                        "<link_ctn id=\"node%d-nic%d\" direction=\"UP\"/>"
                        "<link_ctn id=\"node%d-nic%d\" direction=\"DOWN\"/>",
                        ka, ga * s->nics / s->gpus, kb, gb * s->nics / s->gpus);
            fprintf(f, "</route>\n");
        }
    }
}

/* Writes the platform into the build directory; returns its path. */
static const char *node_platform(const node_spec *s) {
    static char path[256];
    snprintf(path, sizeof path, "%s/tests/nodes_%dx%d_r%d_%g_%g.xml", SS_BINARY_DIR, s->nodes,
             s->gpus, s->nics, s->intra_gbps, s->nic_gbps);
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
               "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
               "<zone id=\"nodes\" routing=\"Full\">\n");
    for (int k = 0; k < s->nodes; k++) {
        for (int g = 0; g < s->gpus; g++)
            fprintf(f,
                    "  <host id=\"node%d-gpu%d\" speed=\"15.7Tf\"><prop id=\"node\" value=\"%d\"/>"
                    "<prop id=\"local_rank\" value=\"%d\"/><prop id=\"nic\" value=\"%d\"/>"
                    "</host>\n",
                    k, g, k, g, g * s->nics / s->gpus);
        for (int g = 0; g < s->gpus; g++)
            fprintf(f,
                    "  <link id=\"node%d-gpu%d-nvl\" bandwidth=\"%gGbps\" latency=\"%gus\" "
                    "sharing_policy=\"SPLITDUPLEX\"><prop id=\"fabric\" value=\"nvlink\"/>"
                    "</link>\n",
                    k, g, s->intra_gbps, s->intra_lat_us);
        for (int r = 0; r < s->nics; r++)
            fprintf(f,
                    "  <link id=\"node%d-nic%d\" bandwidth=\"%gGbps\" latency=\"%gus\" "
                    "sharing_policy=\"SPLITDUPLEX\"><prop id=\"fabric\" value=\"infiniband\"/>"
                    "</link>\n",
                    k, r, s->nic_gbps, s->nic_lat_us);
    }
    write_routes(f, s);
    fprintf(f, "</zone>\n</platform>\n");
    fclose(f);
    return path;
}

/* A generated flat star of n hosts, 25 Gbps and 5 us per link. */
static const char *star_platform(int n) {
    static char path[256];
    snprintf(path, sizeof path, "%s/tests/nodes_star_%d.xml", SS_BINARY_DIR, n);
    platform_gen_spec sp = platform_gen_default();
    sp.n_hosts = n;
    sp.latency_s = 5e-6;
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    SS_ASSERT(platform_generate(&sp, f) == SS_OK);
    fclose(f);
    return path;
}

/* ---------------------------------------------------------------- scenarios */

typedef enum job_kind {
    JOB_ALLREDUCE,     /* every member all-reduces once */
    JOB_GATHER,        /* Bruck all-gather */
    JOB_GATHER_COARSE, /* its closed form */
    JOB_PICK,          /* auto's choice for each size, no simulation */
    JOB_CHECK,         /* sim_coll_check */
    JOB_TOPOLOGY       /* sim_topology_read of the workers */
} job_kind;

#define MAX_PICKS 32
typedef struct job {
    const char *platform;
    int n;
    sim_network_model model;
    job_kind kind;
    sim_coll_opts co;
    double bytes;
    double pick_bytes[MAX_PICKS];
    int n_picks;
} job;

typedef struct job_out {
    double max_end_s;
    double alpha_intra_s, alpha_inter_s; /* route latencies gpu0->gpu1 and node0->node1 */
    double bytes_sent0;
    int status;
    char message[256];
    int picks[MAX_PICKS];
    int protocols[MAX_PICKS]; /* the protocol of each pick */
    int n_nodes, per_node, n_nics, flat, node_of_last, local_of_last, rail_1_0;
} job_out;

typedef struct member_arg {
    const job *j;
    sim_group *world;
    int rank;
    job_out *out;
} member_arg;

static void member_main(void *p) {
    member_arg *a = p;
    sim_coll_result r = {0};
    int st;
    if (a->j->kind == JOB_ALLREDUCE)
        st = sim_allreduce(a->world, a->rank, a->j->bytes, &a->j->co, &r);
    else if (a->j->kind == JOB_GATHER)
        st = sim_allgather(a->world, a->rank, a->j->bytes, &r);
    else
        st = sim_allgather_coarse(a->world, a->rank, a->j->bytes, &r);
    SS_ASSERT(st == SS_OK);
    a->out->max_end_s = fmax(a->out->max_end_s, r.end_s);
    if (a->rank == 0) a->out->bytes_sent0 = r.bytes_sent;
}

static void job_inspect(const job *j, sim_cluster *c, job_out *out) {
    sim_group *world = sim_cluster_world(c);
    if (j->kind == JOB_PICK) {
        for (int i = 0; i < j->n_picks; i++) {
            sim_allreduce_algo a = sim_allreduce_auto_pick(world, j->pick_bytes[i], &j->co);
            out->picks[i] = (int)a;
            out->protocols[i] =
                (int)sim_allreduce_protocol(world, j->co.algo, a, j->pick_bytes[i], &j->co);
        }
    } else if (j->kind == JOB_CHECK) {
        out->status = sim_coll_check(world, &j->co, "--collective");
        if (out->status) snprintf(out->message, sizeof out->message, "%s", ss_error_message());
    } else {
        sim_topology *t;
        out->status = sim_topology_read(sim_cluster_worker_hosts(c), j->n, &t);
        if (out->status) {
            snprintf(out->message, sizeof out->message, "%s", ss_error_message());
            return;
        }
        out->n_nodes = t->n_nodes;
        out->per_node = t->per_node;
        out->n_nics = t->n_nics;
        out->flat = sim_topology_is_flat(t);
        out->node_of_last = t->node[j->n - 1];
        out->local_of_last = t->local[j->n - 1];
        out->rail_1_0 = t->per_node > 1 ? t->rails[1 * t->n_nodes + 0] : -1;
        sim_topology_free(t);
    }
}

static int job_run(void *arg, isolate_blob *result) {
    const job *j = arg;
    sim_cluster_opts o = {.platform_path = j->platform, .n_workers = j->n, .model = j->model};
    sim_cluster *c;
    int st = sim_cluster_open(&o, &c);
    if (st) return st;
    job_out out;
    memset(&out, 0, sizeof out);
    out.alpha_intra_s =
        sg_host_get_route_latency(sim_cluster_worker_host(c, 0), sim_cluster_worker_host(c, 1));
    out.alpha_inter_s = sg_host_get_route_latency(sim_cluster_worker_host(c, 0),
                                                  sim_cluster_worker_host(c, j->n - 1));
    member_arg *args = calloc((size_t)j->n, sizeof *args);
    if (j->kind == JOB_ALLREDUCE || j->kind == JOB_GATHER || j->kind == JOB_GATHER_COARSE) {
        for (int w = 0; w < j->n; w++) {
            args[w] = (member_arg){j, sim_cluster_world(c), w, &out};
            sim_actor_spawn("member", w, sim_cluster_worker_host(c, w), member_main, &args[w]);
        }
        st = sim_cluster_simulate(c, NULL);
    } else {
        job_inspect(j, c, &out);
    }
    isolate_blob_append(result, &out, sizeof out);
    free(args);
    sim_cluster_close(c);
    return st;
}

static job_out run_job(const job *j) {
    isolate_blob b = {0};
    job_out out;
    memset(&out, 0, sizeof out);
    int st = isolate_call(job_run, (void *)j, &b);
    if (st != SS_OK) fprintf(stderr, "\n  job failed: %s\n", ss_error_message());
    CU_ASSERT_EQUAL_FATAL(st, SS_OK);
    CU_ASSERT_EQUAL_FATAL(b.bytes, sizeof out);
    memcpy(&out, b.data, sizeof out);
    isolate_blob_free(&b);
    return out;
}

static job allreduce_job(const char *platform, int n, sim_network_model model,
                         sim_allreduce_algo algo, int channels, double bytes) {
    job j;
    memset(&j, 0, sizeof j);
    j.platform = platform;
    j.n = n;
    j.model = model;
    j.kind = JOB_ALLREDUCE;
    j.co = (sim_coll_opts){algo, 0, channels, SIM_PROTOCOL_AUTO};
    j.bytes = bytes;
    return j;
}

/* ---------------------------------------------------------------- topology */

static void test_topology(void) {
    node_spec s = {3, 4, 2, 2400, 1, 25, 5};
    job j = {.platform = node_platform(&s), .n = 12, .kind = JOB_TOPOLOGY};
    job_out o = run_job(&j);
    CU_ASSERT_EQUAL(o.status, SS_OK);
    CU_ASSERT_EQUAL(o.n_nodes, 3);
    CU_ASSERT_EQUAL(o.per_node, 4);
    CU_ASSERT_EQUAL(o.n_nics, 2);
    CU_ASSERT_EQUAL(o.flat, 0);
    CU_ASSERT_EQUAL(o.node_of_last, 2);
    CU_ASSERT_EQUAL(o.local_of_last, 3);
    CU_ASSERT_EQUAL(o.rail_1_0, 1); /* rail 1 of node 0: node0-gpu1, worker 1 */
    /* a group using part of the nodes: 6 workers = one full node and half of the next */
    j.n = 6;
    o = run_job(&j);
    CU_ASSERT_EQUAL(o.n_nodes, 2);
    CU_ASSERT_EQUAL(o.per_node, 0);
    /* flat platforms: every host its own node */
    job f = {.platform = star_platform(8), .n = 8, .kind = JOB_TOPOLOGY};
    o = run_job(&f);
    CU_ASSERT_EQUAL(o.n_nodes, 8);
    CU_ASSERT_EQUAL(o.per_node, 1);
    CU_ASSERT_EQUAL(o.flat, 1);
}

/* A host with a node property that is not a number is named with the property. */
static void test_topology_bad_property(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/tests/nodes_bad.xml", SS_BINARY_DIR);
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM "
               "\"https://simgrid.org/simgrid.dtd\">\n<platform version=\"4.1\">\n"
               "<zone id=\"z\" routing=\"Full\">\n"
               "<host id=\"a\" speed=\"1Gf\"><prop id=\"node\" value=\"zero\"/>"
               "<prop id=\"local_rank\" value=\"0\"/><prop id=\"nic\" value=\"0\"/></host>\n"
               "<host id=\"b\" speed=\"1Gf\"><prop id=\"node\" value=\"0\"/></host>\n"
               "<link id=\"l\" bandwidth=\"1Gbps\" latency=\"1us\"/>\n"
               "<route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n"
               "</zone>\n</platform>\n");
    fclose(f);
    /* the platform check refuses it before any collective runs, naming file, line, host and
     * property */
    job j = {.platform = path, .n = 2, .kind = JOB_TOPOLOGY};
    isolate_blob b = {0};
    int st = isolate_call(job_run, (void *)&j, &b);
    CU_ASSERT_NOT_EQUAL(st, SS_OK);
    const char *msg = ss_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "nodes_bad.xml:5"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "host id=\"a\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "\"node\""));
    isolate_blob_free(&b);
}

/* ---------------------------------------------------------------- closed forms (CM02) */

/* hier under protocol p: NCCL's per-call Ring base latency of p + 2(G-1)(a_intra + h_intra +
 * M/G/(f B_intra)) + 2(K-1)(a_inter + h_net + M/(G K)/min(f B_nic, B_nic R/G)) when G/R GPUs
 * share a NIC, f B_nic otherwise; h the protocol's step latency (NVLink inside, network between the
 * nodes), f its fraction of the bandwidth (collective.h: Simple 8.4 us, 3.4 us, 9.6 us, 1; LL 3.6
 * us, 0.47 us, 2.7 us, 1/4). */
static double hier_closed_form(const node_spec *s, double m, double a_intra, double a_inter,
                               sim_nccl_protocol p) {
    const int g = s->gpus, k = s->nodes;
    const double b_intra = s->intra_gbps * 1e9 / 8, b_nic = s->nic_gbps * 1e9 / 8;
    const double share = s->nics < g ? (double)s->nics / g : 1.0;
    const int ll = p == SIM_PROTOCOL_LL;
    const double base = ll ? 3.6e-6 : SIM_NCCL_RING_BASE_LATENCY_S;
    const double h_intra = ll ? 0.47e-6 : SIM_NCCL_SIMPLE_NVLINK_STEP_S;
    const double h_net = ll ? 2.7e-6 : SIM_NCCL_SIMPLE_NET_STEP_S;
    const double f = ll ? 0.25 : 1.0;
    /* LL caps each flow at f of its route's bandwidth; the G/R flows on a NIC share it */
    return base + 2.0 * (g - 1) * (a_intra + h_intra + m / g / (f * b_intra)) +
           2.0 * (k - 1) * (a_inter + h_net + m / g / k / fmin(f * b_nic, b_nic * share));
}

static void test_hier_closed_form(void) {
    static const node_spec specs[] = {
        {2, 4, 4, 2400, 1, 25, 5}, {4, 4, 4, 2400, 1, 25, 5}, {2, 8, 2, 400, 2, 100, 2}};
    static const double sizes[] = {1e5, 1e7, 1e9};
    static const sim_nccl_protocol protos[] = {SIM_PROTOCOL_SIMPLE, SIM_PROTOCOL_LL};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            for (int q = 0; q < 2; q++) {
                const node_spec *s = &specs[i];
                const int n = s->nodes * s->gpus;
                job j = allreduce_job(node_platform(s), n, SIM_NETWORK_CM02, SIM_ALLREDUCE_HIER, 1,
                                      sizes[k]);
                j.co.protocol = protos[q];
                job_out o = run_job(&j);
                double want =
                    hier_closed_form(s, sizes[k], o.alpha_intra_s, o.alpha_inter_s, protos[q]);
                SS_CHECK_CLOSE(o.max_end_s, want, 0, 0.01);
                /* every member sends 2(G-1) M/G inside and 2(K-1) M/(G K) on its rail, whatever
                 * the protocol (its flags are not counted) */
                double sent = 2.0 * (s->gpus - 1) * sizes[k] / s->gpus +
                              2.0 * (s->nodes - 1) * sizes[k] / s->gpus / s->nodes;
                SS_CHECK_CLOSE(o.bytes_sent0, sent, 2.0 * n, 0);
            }
        }
    }
}

/* A generated PCIe server of 4 GPUs in two switches of 2 (B per GPU link and per uplink, L per
 * GPU link, 0 on the uplinks). The ring 0 -> 1 -> 2 -> 3 -> 0 with peer to peer crosses each
 * uplink once per direction (1 -> 2, 3 -> 0), so every step takes 2L + m/B; without it every hop
 * goes through host memory and each uplink carries two per direction: 2L + 2m/B. */
static void test_pcie_switch_closed_form(void) {
    const double b = 10e9, l = 1e-6, bytes = 1e8, m = bytes / 4;
    for (int p2p = 1; p2p >= 0; p2p--) {
        static char path[256];
        snprintf(path, sizeof path, "%s/tests/nodes_pcie_switch_p2p%d.xml", SS_BINARY_DIR, p2p);
        platform_gen_spec sp = platform_gen_default();
        sp.n_hosts = 4;
        sp.n_nodes = 1;
        sp.intra_fabric = SIM_FABRIC_PCIE;
        sp.intra_bandwidth_Bps = b;
        sp.intra_latency_s = l;
        sp.pcie_switch = 2;
        sp.p2p = p2p;
        FILE *f = fopen(path, "w");
        SS_ASSERT(f != NULL);
        SS_ASSERT(platform_generate(&sp, f) == SS_OK);
        fclose(f);
        job j = allreduce_job(path, 4, SIM_NETWORK_CM02, SIM_ALLREDUCE_RING, 1, bytes);
        job_out o = run_job(&j);
        SS_CHECK_CLOSE(o.max_end_s, 2.0 * 3 * (2 * l + (p2p ? 1 : 2) * m / b), 0, 1e-6);
    }
}

/* Multi-channel ring on nodes of G GPUs with one NIC each: a step lasts the longer of the
 * intra-node hop (up to C flows on a GPU's link) and the inter-node hop (one flow per NIC), with
 * m = M / (C N) per message; C channels make the inter-node term C times smaller. */
static void test_channels_closed_form(void) {
    const node_spec s = {2, 4, 4, 2400, 1, 25, 5};
    const int n = 8;
    const double m_total = 1e8;
    double bw_term[5] = {0};
    for (int c = 1; c <= 4; c *= 2) {
        job j =
            allreduce_job(node_platform(&s), n, SIM_NETWORK_CM02, SIM_ALLREDUCE_RING, c, m_total);
        job_out o = run_job(&j);
        const double m = m_total / c / n;
        const int intra_flows = c < s.gpus ? c : c - 1;
        const double step_s = fmax(o.alpha_intra_s + intra_flows * m / (s.intra_gbps * 1e9 / 8),
                                   o.alpha_inter_s + m / (s.nic_gbps * 1e9 / 8));
        SS_CHECK_CLOSE(o.max_end_s, 2.0 * (n - 1) * step_s, 0, 0.01);
        bw_term[c] = o.max_end_s - 2.0 * (n - 1) * o.alpha_inter_s;
    }
    SS_CHECK_CLOSE(bw_term[1] / bw_term[4], 4.0, 0, 0.01);
    SS_CHECK_CLOSE(bw_term[1] / bw_term[2], 2.0, 0, 0.01);
}

/* Double binary tree, tiny message: the protocol's base latency + 2 floor(log2 N) (alpha + h)
 * (both trees have that depth; each hop costs one route latency and the protocol's step latency
 * on the network, since the star's links name no fabric): LL 4.4 us and 5.0 us, Simple 0 and
 * 50 us less a 256 KB chunk's transfer at 12 GB/s twice (collective.h). */
static void test_dbtree_latency(void) {
    static const int ns[] = {2, 3, 4, 5, 8, 13, 16, 33};
    const double simple_h = 50e-6 - 2 * 262144 / 12e9;
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        const int n = ns[i];
        const double d = floor(log2((double)n));
        job j = allreduce_job(star_platform(n), n, SIM_NETWORK_CM02, SIM_ALLREDUCE_DBTREE, 1, 8);
        j.co.protocol = SIM_PROTOCOL_SIMPLE;
        job_out o = run_job(&j);
        SS_CHECK_CLOSE(o.max_end_s, 2.0 * d * (o.alpha_intra_s + simple_h), 0, 0.01);
        SS_CHECK_CLOSE(o.bytes_sent0, n > 1 ? 8 : 0, 8, 0); /* half up and down each tree */
        j.co.protocol = SIM_PROTOCOL_LL;
        o = run_job(&j);
        SS_CHECK_CLOSE(o.max_end_s, 4.4e-6 + 2.0 * d * (o.alpha_intra_s + 5.0e-6), 0, 0.01);
        /* auto: the cheaper of the two (Simple up to depth 1, LL from depth 2) */
        const double ll_s = o.max_end_s, simple_s = 2.0 * d * (o.alpha_intra_s + simple_h);
        j.co.protocol = SIM_PROTOCOL_AUTO;
        SS_CHECK_CLOSE(run_job(&j).max_end_s, fmin(ll_s, simple_s), 0, 0.01);
    }
}

/* On multi-GPU nodes the tree is NCCL's: a double binary tree over the nodes, a chain inside
 * each (collective_nccl.c). A tiny message: base + 2 (G-1) (a_intra + h_intra) + 2 floor(log2 K)
 * (a_inter + h_net), the same for both trees (heads local 0 and local G-1), with the protocol's
 * tree latencies (NVLink inside, network between: LL 0.52 and 5.0 us, base 4.4 us; Simple 28 and
 * 50 us less a 256 KB chunk's transfer at 12 GB/s, once and twice, base 0). */
static void test_dbtree_nodes_latency(void) {
    static const node_spec specs[] = {
        {4, 4, 4, 2400, 1, 25, 5}, {8, 2, 1, 400, 2, 100, 2}, {3, 8, 8, 2400, 1, 200, 2}};
    const double chunk = 262144 / 12e9;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        const node_spec *s = &specs[i];
        const int n = s->nodes * s->gpus;
        const double d = floor(log2((double)s->nodes));
        job j = allreduce_job(node_platform(s), n, SIM_NETWORK_CM02, SIM_ALLREDUCE_DBTREE, 1, 8);
        j.co.protocol = SIM_PROTOCOL_SIMPLE;
        job_out o = run_job(&j);
        SS_CHECK_CLOSE(o.max_end_s,
                       2.0 * (s->gpus - 1) * (o.alpha_intra_s + 28e-6 - chunk) +
                           2.0 * d * (o.alpha_inter_s + 50e-6 - 2 * chunk),
                       0, 0.01);
        j.co.protocol = SIM_PROTOCOL_LL;
        o = run_job(&j);
        SS_CHECK_CLOSE(o.max_end_s,
                       4.4e-6 + 2.0 * (s->gpus - 1) * (o.alpha_intra_s + 0.52e-6) +
                           2.0 * d * (o.alpha_inter_s + 5.0e-6),
                       0, 0.01);
    }
}

/* At scale auto's ring is ring-coarse, which charges the protocol too: under LL, base 3.6 us +
 * 2(N-1) (alpha + 2.7 us) + 2(N-1)/N M / (B / 4) on a flat star (CM02), as the message-level
 * ring would. */
static void test_ring_coarse_protocol(void) {
    const int n = SIM_COARSE_MIN_MEMBERS;
    const double m = 64e6, b = platform_gen_default().bandwidth_Bps;
    job j = allreduce_job(star_platform(n), n, SIM_NETWORK_CM02, SIM_ALLREDUCE_AUTO, 1, m);
    j.co.protocol = SIM_PROTOCOL_LL;
    job_out o = run_job(&j);
    SS_CHECK_CLOSE(o.max_end_s,
                   3.6e-6 + 2.0 * (n - 1) * (o.alpha_intra_s + 2.7e-6) +
                       2.0 * (n - 1) / n * m / (b / 4),
                   0, 0.01);
}

/* Segments pipeline each tree: a large vector goes faster cut in segments, and both forms move
 * the same bytes. */
static void test_dbtree_segmented(void) {
    job whole =
        allreduce_job(star_platform(16), 16, SIM_NETWORK_LV08, SIM_ALLREDUCE_DBTREE, 1, 1e8);
    job seg = whole;
    seg.co.segment_bytes = 1e6;
    job_out ow = run_job(&whole), os = run_job(&seg);
    CU_ASSERT(os.max_end_s < 0.7 * ow.max_end_s);
    SS_CHECK_CLOSE(os.bytes_sent0, ow.bytes_sent0, 64, 0);
}

/* Channels: C trees (NCCL's tree channels), pair p of them with its chains starting at local
 * index p G / (C / 2), so that the trees leave each node through C different GPUs. On 2 nodes of
 * 4 GPUs and 4 slow NICs a large vector's time is its NICs' (the NVLink-like links are 96 times
 * as fast). The two trees of a pair cross between the nodes in opposite directions, so 2 trees
 * use 2 NICs one way each, 4 trees 4 NICs one way each (half the time), 8 trees all 4 NICs both
 * ways (a quarter), and 16 trees no more than 8; with one NIC per node 2 trees already use both
 * of its directions. */
static void test_dbtree_channels(void) {
    const node_spec four = {2, 4, 4, 2400, 1, 25, 2}, one = {2, 4, 1, 2400, 1, 25, 2};
    const double m = 4e8;
    job j = allreduce_job(node_platform(&four), 8, SIM_NETWORK_CM02, SIM_ALLREDUCE_DBTREE, 1, m);
    static const int trees[] = {2, 4, 8, 16};
    static const double ratio[] = {1, 0.5, 0.25, 0.25};
    double t[4];
    for (int i = 0; i < 4; i++) {
        j.co.channels = trees[i];
        t[i] = run_job(&j).max_end_s;
        SS_CHECK_CLOSE(t[i] / t[0], ratio[i], 0, 0.03);
    }
    job s = allreduce_job(node_platform(&one), 8, SIM_NETWORK_CM02, SIM_ALLREDUCE_DBTREE, 1, m);
    const double shared = run_job(&s).max_end_s;
    SS_CHECK_CLOSE(shared / t[0], 1.0, 0, 0.03);
    s.co.channels = 4;
    SS_CHECK_CLOSE(run_job(&s).max_end_s / shared, 1.0, 0, 0.03);
}

/* auto's tree is the double binary tree unless --channels names more trees, with the protocol
 * auto picks (LL for a small message): its time is dbtree's under that protocol. */
static void test_auto_tree_channels(void) {
    const node_spec four = {8, 4, 4, 2400, 1, 25, 2};
    const double m = 1024;
    for (int ch = 1; ch <= 8; ch *= 8) {
        job a =
            allreduce_job(node_platform(&four), 32, SIM_NETWORK_CM02, SIM_ALLREDUCE_AUTO, ch, m);
        job pick = a;
        pick.kind = JOB_PICK;
        pick.n_picks = 1;
        pick.pick_bytes[0] = m;
        const job_out op = run_job(&pick);
        CU_ASSERT_EQUAL_FATAL(op.picks[0], SIM_ALLREDUCE_DBTREE);
        job d = allreduce_job(node_platform(&four), 32, SIM_NETWORK_CM02, SIM_ALLREDUCE_DBTREE,
                              ch == 1 ? 2 : ch, m);
        d.co.protocol = (sim_nccl_protocol)op.protocols[0];
        SS_CHECK_CLOSE(run_job(&a).max_end_s, run_job(&d).max_end_s, 0, 1e-9);
    }
}

/* ---------------------------------------------------------------- coarse vs message-level */

static void test_hier_coarse(void) {
    static const node_spec specs[] = {{4, 4, 4, 2400, 1, 25, 5}, {2, 8, 2, 400, 2, 100, 2}};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        for (int model = 0; model < 2; model++) {
            for (double m = 1e3; m <= 1e9; m *= 1000) {
                for (int q = SIM_PROTOCOL_LL; q <= SIM_PROTOCOL_SIMPLE; q++) {
                    const int n = specs[i].nodes * specs[i].gpus;
                    const char *p = node_platform(&specs[i]);
                    sim_network_model nm = model ? SIM_NETWORK_CM02 : SIM_NETWORK_LV08;
                    job msg = allreduce_job(p, n, nm, SIM_ALLREDUCE_HIER, 1, m);
                    job crs = allreduce_job(p, n, nm, SIM_ALLREDUCE_HIER_COARSE, 1, m);
                    msg.co.protocol = crs.co.protocol = (sim_nccl_protocol)q;
                    double t_msg = run_job(&msg).max_end_s, t_crs = run_job(&crs).max_end_s;
                    if (fabs(t_crs / t_msg - 1) > 0.01)
                        fprintf(stderr, "\n  %s, %g B, protocol %s: hier %.6g s, coarse %.6g s", p,
                                m, sim_nccl_protocol_name((sim_nccl_protocol)q), t_msg, t_crs);
                    SS_CHECK_CLOSE(t_crs, t_msg, 0, 0.01);
                }
            }
        }
    }
}

static void test_gather_coarse(void) {
    static const int ns[] = {16, 64, 100};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        for (int model = 0; model < 2; model++) {
            for (double b = 1; b <= 8; b *= 8) {
                job j;
                memset(&j, 0, sizeof j);
                j.platform = star_platform(ns[i]);
                j.n = ns[i];
                j.model = model ? SIM_NETWORK_CM02 : SIM_NETWORK_LV08;
                j.kind = JOB_GATHER;
                j.bytes = b;
                job_out msg = run_job(&j);
                j.kind = JOB_GATHER_COARSE;
                job_out crs = run_job(&j);
                SS_CHECK_CLOSE(crs.max_end_s, msg.max_end_s, 0, 0.01);
                SS_CHECK_CLOSE(crs.bytes_sent0, msg.bytes_sent0, 0, 0);
            }
        }
    }
}

/* ---------------------------------------------------------------- auto and refusals */

static job pick_job(const char *platform, int n) {
    job j;
    memset(&j, 0, sizeof j);
    j.platform = platform;
    j.n = n;
    j.kind = JOB_PICK;
    j.co = (sim_coll_opts){SIM_ALLREDUCE_AUTO, 0, 1, SIM_PROTOCOL_AUTO};
    j.n_picks = 0;
    for (double b = 1024; b <= 1.1e9 && j.n_picks < MAX_PICKS; b *= 2)
        j.pick_bytes[j.n_picks++] = b;
    return j;
}

/* The first size (of 1 KiB x 2^i) from which auto leaves dbtree. */
static double tree_limit(const job *j, const job_out *o) {
    for (int i = 0; i < j->n_picks; i++)
        if (o->picks[i] != SIM_ALLREDUCE_DBTREE) return j->pick_bytes[i];
    return INFINITY;
}

static void test_auto_choices(void) {
    /* flat: dbtree for small messages, the ring above; the limit grows with the members */
    job small = pick_job(star_platform(8), 8), big = pick_job(star_platform(64), 64);
    job_out os = run_job(&small), ob = run_job(&big);
    CU_ASSERT_EQUAL(os.picks[0], SIM_ALLREDUCE_DBTREE);
    CU_ASSERT_EQUAL(os.picks[small.n_picks - 1], SIM_ALLREDUCE_RING);
    CU_ASSERT_EQUAL(ob.picks[big.n_picks - 1], SIM_ALLREDUCE_RING);
    CU_ASSERT(tree_limit(&big, &ob) > tree_limit(&small, &os));
    for (int i = 0; i < small.n_picks; i++) /* hier never on a flat platform */
        CU_ASSERT_NOT_EQUAL(os.picks[i], SIM_ALLREDUCE_HIER);
    /* nodes with a NIC per GPU: the ring on one channel per NIC for large messages (its
     * inter-node bandwidth term 2(N-1)/N M/(R B) beats hier's intra plus rail phases); nodes
     * whose GPUs share 2 NICs: hier */
    node_spec s = {4, 8, 8, 2400, 1, 200, 2};
    job nodes = pick_job(node_platform(&s), 32);
    job_out on = run_job(&nodes);
    CU_ASSERT_EQUAL(on.picks[nodes.n_picks - 1], SIM_ALLREDUCE_RING);
    node_spec shared = {4, 8, 2, 2400, 1, 100, 2};
    job nodes2 = pick_job(node_platform(&shared), 32);
    job_out on2 = run_job(&nodes2);
    CU_ASSERT_EQUAL(on2.picks[nodes2.n_picks - 1], SIM_ALLREDUCE_HIER);
    /* on nodes, latency-bound messages go by NCCL's own algorithms: auto takes hier under
     * Simple only (under LL its 2(G-1) + 2(K-1) steps would undercut NCCL's ring and tree), and
     * takes it there for some sizes */
    int hier_simple = 0;
    for (int i = 0; i < nodes2.n_picks; i++) {
        if (on.protocols[i] == SIM_PROTOCOL_LL)
            CU_ASSERT_NOT_EQUAL(on.picks[i], SIM_ALLREDUCE_HIER);
        if (on2.protocols[i] == SIM_PROTOCOL_LL)
            CU_ASSERT_NOT_EQUAL(on2.picks[i], SIM_ALLREDUCE_HIER);
        hier_simple +=
            on2.picks[i] == SIM_ALLREDUCE_HIER && on2.protocols[i] == SIM_PROTOCOL_SIMPLE;
    }
    CU_ASSERT(on.picks[0] == SIM_ALLREDUCE_DBTREE || on.picks[0] == SIM_ALLREDUCE_RING);
    CU_ASSERT(on2.picks[0] == SIM_ALLREDUCE_DBTREE || on2.picks[0] == SIM_ALLREDUCE_RING);
    CU_ASSERT(hier_simple > 0);
    /* Simple for large messages everywhere; LL for small ones on nodes, whose rings take many
     * steps (on the flat stars the tree's few hops leave LL's base latency of 4.4 us ahead of
     * what it saves per hop: 6.3 - 5.0 us) */
    const job *jobs[] = {&small, &big, &nodes, &nodes2};
    const job_out *outs[] = {&os, &ob, &on, &on2};
    for (int q = 0; q < 4; q++) {
        if (q >= 2) CU_ASSERT_EQUAL(outs[q]->protocols[0], SIM_PROTOCOL_LL);
        CU_ASSERT_EQUAL(outs[q]->protocols[jobs[q]->n_picks - 1], SIM_PROTOCOL_SIMPLE);
    }
    /* nodes whose two pairs of GPUs each share a PCIe switch uplink (the shipped TCP reference):
     * hier's intra-node rings cross each uplink twice per direction, so they get half of it,
     * and from 128 MiB the ring, which stays on the 10 GbE NIC, costs less; estimates from each
     * route's own bandwidth would keep hier to 1 GiB */
    job pcie =
        pick_job(SS_SOURCE_DIR "/traces/reference/nccl/tcp-8x4-rtx2080ti-10gbe/platform.xml", 32);
    pcie.model = SIM_NETWORK_SMPI;
    job_out op = run_job(&pcie);
    for (int i = 0; i < pcie.n_picks; i++)
        if (pcie.pick_bytes[i] >= 1e6)
            CU_ASSERT_EQUAL(op.picks[i], pcie.pick_bytes[i] >= 128 * 1048576.0
                                             ? SIM_ALLREDUCE_RING
                                             : SIM_ALLREDUCE_HIER);
    /* at scale, the closed forms */
    job scale = pick_job(star_platform(SIM_COARSE_MIN_MEMBERS), SIM_COARSE_MIN_MEMBERS);
    job_out oc = run_job(&scale);
    CU_ASSERT_EQUAL(oc.picks[scale.n_picks - 1], SIM_ALLREDUCE_RING_COARSE);
}

static void test_hier_refused_on_flat(void) {
    job j;
    memset(&j, 0, sizeof j);
    j.platform = star_platform(8);
    j.n = 8;
    j.kind = JOB_CHECK;
    j.co = (sim_coll_opts){SIM_ALLREDUCE_HIER, 0, 1, SIM_PROTOCOL_AUTO};
    job_out o = run_job(&j);
    CU_ASSERT_EQUAL(o.status, SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.message, "--collective hier"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.message, "node of its own"));
    j.co.algo = SIM_ALLREDUCE_RING;
    CU_ASSERT_EQUAL(run_job(&j).status, SS_OK);
    node_spec s = {2, 4, 4, 2400, 1, 25, 5};
    j.platform = node_platform(&s);
    j.co.algo = SIM_ALLREDUCE_HIER;
    CU_ASSERT_EQUAL(run_job(&j).status, SS_OK);
}

static void test_names(void) {
    sim_allreduce_algo a;
    CU_ASSERT_EQUAL(sim_allreduce_algo_parse("--collective", "hier", &a), SS_OK);
    CU_ASSERT_EQUAL(a, SIM_ALLREDUCE_HIER);
    CU_ASSERT_EQUAL(sim_allreduce_algo_parse("--collective", "auto", &a), SS_OK);
    CU_ASSERT_EQUAL(a, SIM_ALLREDUCE_AUTO);
    CU_ASSERT_STRING_EQUAL(sim_allreduce_algo_name(SIM_ALLREDUCE_DBTREE), "dbtree");
    CU_ASSERT_STRING_EQUAL(sim_allreduce_algo_name(SIM_ALLREDUCE_HIER_COARSE), "hier-coarse");
}

static CU_TestInfo node_tests[] = {
    {"sim_topology_read: nodes, rails, partial groups, flat hosts", test_topology},
    {"a bad node property is refused naming file, line, host and property",
     test_topology_bad_property},
    {"hier vs intra RS + rail AR + intra AG closed form (CM02)", test_hier_closed_form},
    {"ring on PCIe switches, with and without peer to peer (CM02)", test_pcie_switch_closed_form},
    {"multi-channel ring: C NICs carry C rings (CM02)", test_channels_closed_form},
    {"dbtree latency term 2 floor(log2 N) alpha (CM02)", test_dbtree_latency},
    {"dbtree on nodes: node-level tree and chains, latency closed form (CM02)",
     test_dbtree_nodes_latency},
    {"dbtree pipelined by segments", test_dbtree_segmented},
    {"dbtree channels: C trees through C GPUs and NICs", test_dbtree_channels},
    {"auto's tree: two trees unless --channels names more", test_auto_tree_channels},
    {"auto at scale: ring-coarse under LL vs closed form (CM02)", test_ring_coarse_protocol},
    {"hier-coarse vs hier within 1% (CM02, LV08; LL, LL128, Simple)", test_hier_coarse},
    {"coarse all-gather vs Bruck within 1% (CM02, LV08)", test_gather_coarse},
    {"auto: dbtree / ring / hier by size and topology, coarse at scale", test_auto_choices},
    {"hier refused on a flat platform", test_hier_refused_on_flat},
    {"algorithm names", test_names},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"sim nodes", NULL, NULL, NULL, NULL, node_tests}, CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
