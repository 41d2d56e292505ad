/* CUnit suite of the overlap of the backward pass with bucketed all-reduces (--overlap,
 * --bucket-mb): BSP's simulated time on CM02 against the closed form of the bucket schedule, in
 * emulation (real gradients: the final parameters are bit-identical to overlap off) and in replay
 * of a profile (per-layer times), and the refusal of a trace without per-layer data. Each run is
 * a whole SimGrid simulation in its own process (isolate_call).
 *
 * The closed form of one step: the forward pass F = sum_i f_i, then the backward pass in reverse
 * layer order; bucket k closes after the layer that fills it (>= the cap) or holds the first
 * gradient, at s_k = F + sum of the backward times of the layers up to that one; its ring
 * all-reduce takes c(B_k) = 2(N-1) alpha + 2(N-1)/N B_k / bw alone, and the buckets' flows share
 * the same links, so they serialize: e_k = max(s_k, e_(k-1)) + c(B_k). The step ends at
 * max(e_last, F + B) plus the optimizer (0 under --compute flops). Without overlap a step is
 * F + B + c(sum B_k). */
#include "common/status.h"
#include "emu/emulation.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy.h"
#include "sim/simulate.h"
#include "ss_test.h"
#include "traces/profile.h"
#include "traces/replay.h"

#include <simgrid/host.h>
#include <string.h>
#include <unistd.h>

#define TO_WORKERS 4
#define TO_STEPS   6
#define TO_LAYERS  64

/* What a child run returns. */
typedef struct overlap_outcome {
    policy_result res;
    double host_speed_flops, route_latency_s;
    int n_layers;
    double fwd_flops[TO_LAYERS], bwd_flops[TO_LAYERS], param_bytes[TO_LAYERS];
    size_t params;
    float w[]; /* (N, P) final replicas (emulation) */
} overlap_outcome;

typedef struct overlap_case {
    policy_overlap overlap;
    double bucket_mb;
} overlap_case;

static void synthetic(dataset *train, dataset *test) {
    synthetic_spec s;
    synthetic_spec_default(&s);
    s.n_train = 1024;
    s.n_test = 256;
    s.classes = 4;
    s.c = 1;
    s.h = 4;
    s.w = 4;
    int rc = dataset_synthetic(&s, 3, train, test);
    SS_ASSERT(rc == SS_OK);
}

static int open_cluster(int workers, double efficiency, sim_cluster **cluster) {
    char platform[64];
    snprintf(platform, sizeof platform, "/tmp/ss_test_overlap_%d.xml", (int)getpid());
    platform_gen_spec ps = platform_gen_default();
    ps.n_hosts = workers;
    ps.bandwidth_Bps = 10e9 / 8;
    ps.latency_s = 5e-7; /* the buckets' latency terms count: they serialize, one lane */
    ps.efficiency = efficiency;
    int rc = platform_generate_file(&ps, platform);
    if (rc != SS_OK) return rc;
    sim_cluster_opts co = {
        .platform_path = platform, .n_workers = workers, .model = SIM_NETWORK_CM02};
    rc = sim_cluster_open(&co, cluster);
    unlink(platform);
    return rc;
}

static void outcome_network(overlap_outcome *o, sim_cluster *cluster) {
    o->host_speed_flops = sg_host_get_speed(sim_cluster_worker_host(cluster, 0));
    o->route_latency_s = sg_host_get_route_latency(sim_cluster_worker_host(cluster, 0),
                                                   sim_cluster_worker_host(cluster, 1));
}

/* Emulated BSP, mlp 16-256-256-4 with a batch of 16 on hosts slowed so that compute and
 * communication are of the same order. */
static int emulation_child(void *arg, isolate_blob *out) {
    const overlap_case *c = arg;
    policy_config pc;
    policy_config_default(&pc);
    pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    pc.kind = POLICY_BSP;
    pc.workers = TO_WORKERS;
    pc.steps = TO_STEPS;
    pc.batch = 16;
    pc.seed = 7;
    pc.eval_every = TO_STEPS;
    pc.overlap = c->overlap;
    pc.bucket_mb = c->bucket_mb;
    sim_cluster *cluster;
    int rc = open_cluster(pc.workers, 2e-3, &cluster);
    if (rc != SS_OK) return rc;
    dataset train, test;
    synthetic(&train, &test);
    device *dev;
    char notice[256];
    if ((rc = device_open("cpu", &dev, notice, sizeof notice)) != SS_OK) return rc;
    model_spec spec;
    if ((rc = model_spec_parse(&spec, "mlp:256,256", 1, 4, 4, 4)) != SS_OK) return rc;
    lr_schedule sched;
    lr_schedule_parse(&sched, "constant");
    sched.base_lr = 0.1;
    emulation_config ec = {.dev = dev,
                           .train = &train,
                           .test = &test,
                           .spec = &spec,
                           .seed = pc.seed,
                           .workers = pc.workers,
                           .batch = pc.batch,
                           .max_batch = pc.batch,
                           .partition = PARTITION_DEFDP,
                           .partition_param = 1,
                           .schedule = sched,
                           .momentum = 0.9,
                           .eval_every = pc.eval_every,
                           .last_step = pc.steps};
    emulation *em;
    if ((rc = emulation_create(&ec, &em)) != SS_OK) return rc;
    policy_result res;
    if ((rc = sim_policy_run(&pc, cluster, emulation_source(em), NULL, NULL, &res)) != SS_OK)
        return rc;
    model *m0 = emulation_replica(em, 0);
    size_t p = model_param_count(m0);
    size_t bytes = sizeof(overlap_outcome) + sizeof(float) * p * (size_t)pc.workers;
    overlap_outcome *o = ss_calloc(1, bytes);
    o->res = res;
    outcome_network(o, cluster);
    o->n_layers = model_cost_layer_count(m0);
    SS_ASSERT(o->n_layers <= TO_LAYERS);
    for (int i = 0; i < o->n_layers; i++) {
        model_layer_cost lc;
        model_cost_layer_at(m0, i, &lc);
        o->fwd_flops[i] = lc.fwd_flops * pc.batch;
        o->bwd_flops[i] = lc.bwd_flops * pc.batch;
        o->param_bytes[i] = lc.param_bytes;
    }
    o->params = p;
    for (int w = 0; w < pc.workers; w++)
        device_download(dev, o->w + (size_t)w * p, model_params(emulation_replica(em, w)), p);
    isolate_blob_append(out, o, bytes);
    free(o);
    return SS_OK;
}

static overlap_outcome *run(isolate_fn fn, const overlap_case *c) {
    isolate_blob blob = {0};
    if (isolate_call(fn, (void *)c, &blob) != SS_OK) {
        fprintf(stderr, "\n  run failed: %s\n", ss_error_message());
        CU_FAIL_FATAL("simulation failed");
    }
    return (overlap_outcome *)blob.data;
}

/* One step's closed form (see the top of the file); *buckets = buckets per step. */
static double step_closed_form(const overlap_outcome *o, int overlap, double cap_bytes,
                               int *buckets) {
    const double n = TO_WORKERS, bw = 10e9 / 8, alpha = o->route_latency_s;
    double t = 0, total = 0, end = 0, bucket = 0;
    for (int i = 0; i < o->n_layers; i++) {
        t += o->fwd_flops[i] / o->host_speed_flops;
        total += o->param_bytes[i];
    }
    int lowest = 0;
    while (lowest < o->n_layers - 1 && !(o->param_bytes[lowest] > 0))
        lowest++;
    *buckets = 0;
    for (int i = o->n_layers - 1; i >= 0; i--) {
        t += o->bwd_flops[i] / o->host_speed_flops;
        bucket += o->param_bytes[i];
        if (overlap && bucket > 0 && (bucket >= cap_bytes || i == lowest)) {
            end = (t > end ? t : end) + 2 * (n - 1) * alpha + 2 * (n - 1) / n * bucket / bw;
            bucket = 0;
            ++*buckets;
        }
    }
    if (!overlap) return t + 2 * (n - 1) * alpha + 2 * (n - 1) / n * total / bw;
    return end > t ? end : t;
}

static void check_against_closed_form(const char *what, const overlap_outcome *on,
                                      const overlap_outcome *off, double bucket_mb) {
    int buckets = 0, none = 0;
    double on_s = TO_STEPS * step_closed_form(on, 1, bucket_mb * 1024 * 1024, &buckets);
    double off_s = TO_STEPS * step_closed_form(off, 0, 0, &none);
    fprintf(stderr,
            "\n  %s, %d buckets of <= %g MiB: off %.9g s (closed form %.9g), on %.9g s (closed "
            "form %.9g); drop %.6g s, predicted %.6g s",
            what, buckets, bucket_mb, off->res.sim_time_s, off_s, on->res.sim_time_s, on_s,
            off->res.sim_time_s - on->res.sim_time_s, off_s - on_s);
    CU_ASSERT(buckets >= 2);
    /* a member's buckets run one after the other (its lane, as NCCL's stream), latency terms
     * included: the serialized form to the rounding */
    SS_CHECK_CLOSE(off->res.sim_time_s, off_s, 0, 1e-6);
    SS_CHECK_CLOSE(on->res.sim_time_s, on_s, 0, 1e-6);
    SS_CHECK_CLOSE(off->res.sim_time_s - on->res.sim_time_s, off_s - on_s, 1e-9, 1e-5);
    CU_ASSERT(on->res.sim_time_s < off->res.sim_time_s);
    SS_CHECK_CLOSE(on->res.bytes_sent, off->res.bytes_sent, 0, 1e-9);
}

/* Emulation: the overlap saves what the bucket schedule predicts; the parameters are the same
 * bit for bit (one mean of the same gradients, taken when the last bucket completes). */
static void test_emulation_closed_form_bit_identical(void) {
    const double mib = 0.001; /* mlp 16-256-256-4: one bucket per dense layer */
    overlap_case on = {POLICY_OVERLAP_ON, mib}, off = {POLICY_OVERLAP_OFF, mib},
                 aut = {POLICY_OVERLAP_AUTO, mib};
    overlap_outcome *a = run(emulation_child, &on), *b = run(emulation_child, &off),
                    *c = run(emulation_child, &aut);
    check_against_closed_form("emulated BSP, 4 workers", a, b, mib);
    CU_ASSERT(memcmp(a->w, b->w, sizeof(float) * a->params * TO_WORKERS) == 0);
    /* auto is off in emulation: the times of earlier versions are kept */
    CU_ASSERT(c->res.sim_time_s == b->res.sim_time_s);
    /* the compute time is the same work, charged layer by layer */
    SS_CHECK_CLOSE(a->res.compute_s, b->res.compute_s, 0, 1e-9);
    free(a);
    free(b);
    free(c);
}

/* Replay of the alexnet profile (8 layers with parameters, 57 M parameters at batch 128). */
static int profile_child(void *arg, isolate_blob *out) {
    const overlap_case *c = arg;
    model_profile p;
    int rc = profile_find("alexnet", &p);
    if (rc != SS_OK) return rc;
    policy_config pc;
    policy_config_default(&pc);
    pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    pc.workers = TO_WORKERS;
    pc.steps = TO_STEPS;
    pc.batch = 128;
    pc.eval_every = TO_STEPS;
    pc.overlap = c->overlap;
    pc.bucket_mb = c->bucket_mb;
    trace *t;
    rc = profile_synthesize(&p, &pc, NULL, &t);
    overlap_outcome *o = ss_calloc(1, sizeof *o);
    SS_ASSERT(p.layers <= TO_LAYERS);
    o->n_layers = p.layers;
    for (int i = 0; i < p.layers; i++) {
        o->fwd_flops[i] = pc.batch * p.layer_costs[i].fwd_flops;
        o->bwd_flops[i] = pc.batch * p.layer_costs[i].bwd_flops;
        o->param_bytes[i] = p.layer_costs[i].param_bytes;
    }
    profile_free(&p);
    if (rc != SS_OK) return rc;
    replay_opts ro = replay_opts_default();
    ro.model = SIM_NETWORK_CM02;
    ro.gen.bandwidth_Bps = 10e9 / 8;
    ro.gen.latency_s = 1e-6;
    replay_result rr;
    rc = replay_run(t, &ro, &rr);
    trace_free(t);
    if (rc == SS_OK) {
        o->res = rr.res;
        o->host_speed_flops = rr.host_speed_flops;
        o->route_latency_s = 2 * ro.gen.latency_s; /* two links between two hosts of a star */
        isolate_blob_append(out, o, sizeof *o);
    }
    free(o);
    return rc;
}

static void test_profile_replay_closed_form(void) {
    const double mib = 25; /* DDP's default */
    overlap_case on = {POLICY_OVERLAP_AUTO, mib}, off = {POLICY_OVERLAP_OFF, mib};
    overlap_outcome *a = run(profile_child, &on), *b = run(profile_child, &off);
    check_against_closed_form("alexnet profile replay, 4 workers", a, b, mib);
    free(a);
    free(b);
}

/* The buckets in closed form (sim_allreduce_buckets: ring-coarse as arithmetic, one wait per
 * step) against the message-level ring, whose every chunk is a SimGrid message: resnet101's
 * buckets on 8 workers of a 25 Gbps star, under LV08 (the default: factors and cross traffic),
 * CM02 and SMPI (size-dependent factors), overlap on and off. */
typedef struct closed_case {
    sim_allreduce_algo algo;
    sim_network_model model;
    policy_overlap overlap;
    int workers;
    double latency_s;   /* 0: 10 us */
    int coarse_members; /* > 0: the closed forms from this many members on */
    int nodes;          /* > 0: that many servers of workers / nodes GPUs */
} closed_case;

static int closed_child(void *arg, isolate_blob *out) {
    const closed_case *c = arg;
    model_profile p;
    int rc = profile_find("resnet101", &p);
    if (rc != SS_OK) return rc;
    policy_config pc;
    policy_config_default(&pc);
    pc.workers = c->workers;
    pc.steps = 3;
    pc.batch = 64;
    pc.eval_every = pc.steps;
    pc.overlap = c->overlap;
    pc.bucket_mb = 25;
    trace *t;
    rc = profile_synthesize(&p, &pc, NULL, &t);
    profile_free(&p);
    if (rc != SS_OK) return rc;
    replay_opts ro = replay_opts_default();
    ro.model = c->model;
    ro.gen.bandwidth_Bps = 25e9 / 8;
    ro.gen.latency_s = c->latency_s > 0 ? c->latency_s : 10e-6;
    if (c->coarse_members > 0) sim_coll_set_coarse_min_members(c->coarse_members);
    ro.gen.n_nodes = c->nodes;
    sim_coll_opts co = {.algo = c->algo, .channels = 1};
    ro.coll = &co;
    replay_result rr;
    rc = replay_run(t, &ro, &rr);
    trace_free(t);
    if (rc == SS_OK) isolate_blob_append(out, &rr.res, sizeof rr.res);
    return rc;
}

static policy_result closed_run(const closed_case *c) {
    isolate_blob blob = {0};
    policy_result r = {0};
    if (isolate_call(closed_child, (void *)c, &blob) != SS_OK) {
        fprintf(stderr, "\n  run failed: %s\n", ss_error_message());
        CU_FAIL_FATAL("simulation failed");
    }
    memcpy(&r, blob.data, sizeof r);
    free(blob.data);
    return r;
}

static void test_buckets_closed_form_vs_messages(void) {
    const sim_network_model models[] = {SIM_NETWORK_LV08, SIM_NETWORK_CM02, SIM_NETWORK_SMPI};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        for (int ov = 0; ov < 2; ov++) {
            const policy_overlap o = ov ? POLICY_OVERLAP_ON : POLICY_OVERLAP_OFF;
            closed_case msg = {SIM_ALLREDUCE_RING, models[m], o, 8, 0, 0, 0};
            closed_case closed = {SIM_ALLREDUCE_RING_COARSE, models[m], o, 8, 0, 0, 0};
            policy_result a = closed_run(&msg), b = closed_run(&closed);
            fprintf(stderr, "\n  %s, overlap %s: ring %.9g s, closed form %.9g s (%+.2e)",
                    sim_network_model_name(models[m]), ov ? "on" : "off", a.sim_time_s,
                    b.sim_time_s, b.sim_time_s / a.sim_time_s - 1);
            /* the brief's bound is 1 %; they agree far closer (rounding of byte counts) */
            SS_CHECK_CLOSE(b.sim_time_s, a.sim_time_s, 0, 1e-4);
            SS_CHECK_CLOSE(b.bytes_sent, a.bytes_sent, 0, 1e-4);
            SS_CHECK_CLOSE(b.comm_s, a.comm_s, 0, 1e-3);
        }
    }
}

/* auto at scale (its closed forms from 4 members on: ring-coarse in closed form, the double
 * binary tree calibrated, its first call of each size as messages, every member starting
 * together, then that time for the later calls) against auto's message-level algorithms: 8
 * workers of a star whose latency makes auto take the tree for some of resnet101's buckets. */
static void test_buckets_calibrated_dbtree(void) {
    for (int m = 0; m < 2; m++) {
        const sim_network_model model = m ? SIM_NETWORK_CM02 : SIM_NETWORK_LV08;
        closed_case msg = {SIM_ALLREDUCE_AUTO, model, POLICY_OVERLAP_ON, 8, 400e-6, 0, 0};
        closed_case cal = {SIM_ALLREDUCE_AUTO, model, POLICY_OVERLAP_ON, 8, 400e-6, 4, 0};
        policy_result a = closed_run(&msg), b = closed_run(&cal);
        fprintf(stderr, "\n  %s: auto, messages %.9g s, closed forms %.9g s (%+.2e)",
                sim_network_model_name(model), a.sim_time_s, b.sim_time_s,
                b.sim_time_s / a.sim_time_s - 1);
        SS_CHECK_CLOSE(b.sim_time_s, a.sim_time_s, 0, 1e-4);
        SS_CHECK_CLOSE(b.bytes_sent, a.bytes_sent, 0, 1e-4);
    }
}

/* ring-coarse and hier-coarse on multi-GPU servers in the pipeline, calibrated, against ring's
 * and hier's messages: 2 servers of 4 GPUs. */
static void test_buckets_calibrated_nodes(void) {
    const sim_allreduce_algo msg[2] = {SIM_ALLREDUCE_RING, SIM_ALLREDUCE_HIER};
    const sim_allreduce_algo cal[2] = {SIM_ALLREDUCE_RING_COARSE, SIM_ALLREDUCE_HIER_COARSE};
    for (int i = 0; i < 2; i++) {
        closed_case m = {msg[i], SIM_NETWORK_LV08, POLICY_OVERLAP_ON, 8, 0, 0, 2};
        closed_case c = {cal[i], SIM_NETWORK_LV08, POLICY_OVERLAP_ON, 8, 0, 0, 2};
        policy_result a = closed_run(&m), b = closed_run(&c);
        fprintf(stderr, "\n  %s %.9g s, %s calibrated %.9g s (%+.2e)",
                sim_allreduce_algo_name(msg[i]), a.sim_time_s, sim_allreduce_algo_name(cal[i]),
                b.sim_time_s, b.sim_time_s / a.sim_time_s - 1);
        SS_CHECK_CLOSE(b.sim_time_s, a.sim_time_s, 0, 1e-4);
        SS_CHECK_CLOSE(b.bytes_sent, a.bytes_sent, 0, 1e-4);
    }
}

/* A trace without per-layer data (a recorded or imported run) refuses --overlap on. */
static void test_trace_without_layers(void) {
    policy_config pc;
    policy_config_default(&pc);
    pc.coll.algo = SIM_ALLREDUCE_RING; /* written for the ring, the default before auto */
    pc.workers = 2;
    pc.steps = 2;
    pc.eval_every = 2;
    trace *t;
    CU_ASSERT_EQUAL_FATAL(trace_alloc(&pc, 2, 2, &t), SS_OK);
    snprintf(t->meta.source, sizeof t->meta.source, "import");
    replay_opts ro = replay_opts_default();
    policy_config out;
    t->steps_done = 2;
    t->pc.overlap = POLICY_OVERLAP_ON;
    CU_ASSERT_EQUAL(replay_policy_config(t, &ro, &out), SS_EUSAGE);
    CU_ASSERT(strstr(ss_error_message(), "overlap cannot apply") != NULL);
    t->pc.overlap = POLICY_OVERLAP_AUTO; /* auto: off, no error */
    CU_ASSERT_EQUAL(replay_policy_config(t, &ro, &out), SS_OK);
    CU_ASSERT_EQUAL(out.overlap, POLICY_OVERLAP_OFF);
    trace_free(t);
}

static CU_TestInfo overlap_tests[] = {
    {"overlap: emulated BSP matches the bucket closed form; parameters bit-identical",
     test_emulation_closed_form_bit_identical},
    {"overlap: profile replay (auto = on) matches the bucket closed form",
     test_profile_replay_closed_form},
    {"overlap: the buckets in closed form match the message-level ring (LV08, CM02, SMPI)",
     test_buckets_closed_form_vs_messages},
    {"overlap: auto's closed forms at scale (ring-coarse, calibrated dbtree) match its messages",
     test_buckets_calibrated_dbtree},
    {"overlap: ring-coarse and hier-coarse on servers, calibrated, match ring's and hier's "
     "messages",
     test_buckets_calibrated_nodes},
    {"overlap: a trace without per-layer data says overlap cannot apply",
     test_trace_without_layers},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"overlap", NULL, NULL, NULL, NULL, overlap_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
