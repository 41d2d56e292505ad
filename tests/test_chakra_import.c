/* syncsim profile import of Chakra execution traces (traces/chakra_import.h): the binary form
 * (plain and gzip), the JSON form, the order of the nodes, the mapping of a data-parallel step to
 * one layer per all-reduce bucket, replay of the written profile, the shipped ResNet-50 sample,
 * and the messages for bad input. The small traces are written here by a tiny protobuf encoder,
 * with microseconds chosen so that every sum is known. */
#include "ss_test.h"
#include "profile_import_run.h"

#include "cli/commands.h"
#include "common/status.h"
#include "traces/profile.h"
#include "traces/profile_import.h"

#include <stdint.h>
#include <unistd.h>
#include <zlib.h>

#define SAMPLE SS_SOURCE_DIR "/traces/samples/chakra-resnet50-ddp.0.et.gz"

/* ---- a tiny protobuf encoder ---- */

typedef struct pbuf {
    unsigned char d[16384];
    size_t n;
} pbuf;

static void put_varint(pbuf *b, uint64_t v) {
    do {
        b->d[b->n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void put_key(pbuf *b, unsigned field, int wt) {
    put_varint(b, (uint64_t)field << 3 | (unsigned)wt);
}

static void put_uint(pbuf *b, unsigned field, uint64_t v) {
    put_key(b, field, 0);
    put_varint(b, v);
}

static void put_bytes(pbuf *b, unsigned field, const void *p, size_t n) {
    put_key(b, field, 2);
    put_varint(b, n);
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void put_str(pbuf *b, unsigned field, const char *s) {
    put_bytes(b, field, s, strlen(s));
}

/* An AttributeProto: name and one value (value_field: 9 int64_val, 13 uint64_val, 27 bool_val,
 * 29 string_val). */
static void put_attr(pbuf *b, const char *name, unsigned value_field, uint64_t v, const char *s) {
    pbuf a = {.n = 0};
    put_str(&a, 1, name);
    if (value_field == 29)
        put_str(&a, 29, s);
    else
        put_uint(&a, value_field, v);
    put_bytes(b, 10, a.d, a.n);
}

enum { COMP = 4, SEND = 5, COLL = 7 };

typedef struct tnode {
    uint64_t id;
    const char *name;
    int type;
    uint64_t dur;
    int cpu;             /* is_cpu_op: -1 absent, 0, 1 */
    int comm_type;       /* -1: none */
    long long comm_size; /* -1: none */
    const char *pg;
    uint64_t deps[3];
    int n_deps;
    int packed;    /* data_deps packed (else one field each) */
    unsigned ints; /* the comm attributes' field: 9 int64_val or 13 uint64_val */
} tnode;

static void put_node(pbuf *b, const tnode *t) {
    put_uint(b, 1, t->id);
    put_str(b, 2, t->name);
    put_uint(b, 3, (uint64_t)t->type);
    if (t->n_deps) { /* ctrl_deps: the first dep, packed (read, not used for the order) */
        pbuf c = {.n = 0};
        put_varint(&c, t->deps[0]);
        put_bytes(b, 4, c.d, c.n);
    }
    if (t->packed) {
        pbuf c = {.n = 0};
        for (int k = 0; k < t->n_deps; k++)
            put_varint(&c, t->deps[k]);
        put_bytes(b, 5, c.d, c.n);
    } else
        for (int k = 0; k < t->n_deps; k++)
            put_uint(b, 5, t->deps[k]);
    put_uint(b, 6, 1000 + t->id); /* start_time_micros: skipped */
    put_uint(b, 7, t->dur);
    put_str(b, 8, "inputs are skipped"); /* an IOInfo's bytes: skipped whole */
    if (t->cpu >= 0) put_attr(b, "is_cpu_op", 27, (uint64_t)t->cpu, NULL);
    const unsigned f = t->ints ? t->ints : 9;
    if (t->comm_type >= 0) put_attr(b, "comm_type", f, (uint64_t)t->comm_type, NULL);
    if (t->comm_size >= 0) put_attr(b, "comm_size", f, (uint64_t)t->comm_size, NULL);
    if (t->pg) put_attr(b, "pg_name", 29, 0, t->pg);
    put_attr(b, "rf_id", 13, 7, NULL); /* an attribute the import does not read */
}

/* A whole trace: GlobalMetadata, then the nodes, each after its length. */
static void put_trace(pbuf *out, const tnode *nodes, int n) {
    pbuf m = {.n = 0};
    put_str(&m, 1, "0.0.4");
    put_attr(&m, "schema", 29, 0, "1.0.2-chakra.0.0.4");
    out->n = 0;
    put_varint(out, m.n);
    memcpy(out->d + out->n, m.d, m.n);
    out->n += m.n;
    for (int i = 0; i < n; i++) {
        pbuf b = {.n = 0};
        put_node(&b, &nodes[i]);
        put_varint(out, b.n);
        memcpy(out->d + out->n, b.d, b.n);
        out->n += b.n;
    }
}

/* ---- the step ---- */

/* A data-parallel step on the device: the host's linear (700 us, not counted on a GPU trace)
 * launches the forward kernels (100 + 50); the first node named as backward (30) opens the
 * backward; bucket A (4000 bytes, node 15) follows 30 + 200; then 300, the kernel of id 30 that
 * the order puts before node 17 (its data dep), bucket B (10 bytes, node 17) after 300 + 40; the
 * optimizer (25) is the gap. A broadcast, a barrier and the host's allreduce_ call are skipped;
 * a host aten::mm (500) is not counted on a GPU trace; a dep on an absent node 999 is ignored. */
static const tnode step_nodes[] = {
    {5, "ncclKernel_Broadcast_RING", COLL, 900, 0, 5, 4000, "0", {0}, 0, 0, 0},
    {6, "c10d::allreduce_", COLL, 80, 1, -1, -1, NULL, {0}, 0, 0, 0},
    {10, "aten::linear", COMP, 700, 1, -1, -1, NULL, {5}, 1, 1, 0},
    {11, "gemm_fwd", COMP, 100, -1, -1, -1, NULL, {10}, 1, 1, 0},
    {12, "relu_fwd", COMP, 50, 0, -1, -1, NULL, {11}, 1, 0, 0},
    {13, "nll_loss_Backward_kernel", COMP, 30, 0, -1, -1, NULL, {12}, 1, 0, 0},
    {14, "gemm_bwd", COMP, 200, 0, -1, -1, NULL, {13, 999}, 2, 1, 0},
    {15, "ncclKernel_AllReduce_A", COLL, 4000, 0, 0, 4000, "0", {14}, 1, 0, 9},
    {16, "gemm_bwd2", COMP, 300, 0, -1, -1, NULL, {14}, 1, 0, 0},
    {20, "aten::mm", COMP, 500, 1, -1, -1, NULL, {14}, 1, 0, 0},
    {30, "late_id_kernel", COMP, 40, 0, -1, -1, NULL, {16}, 1, 0, 0},
    {17, "ncclKernel_AllReduce_B", COLL, 3000, 0, 0, 10, "0", {30}, 1, 1, 13},
    {18, "sgd_step", COMP, 25, 0, -1, -1, NULL, {17}, 1, 0, 0},
    {19, "ncclKernel_Barrier", COLL, 10, 0, 9, 0, NULL, {0}, 0, 0, 0},
};
#define STEP_N ((int)(sizeof step_nodes / sizeof step_nodes[0]))

static char dir[64];

static void make_dir(void) {
    if (dir[0]) return;
    strcpy(dir, "/tmp/ss-chakra-XXXXXX");
    CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
}

/* A file of the temporary directory: out (160 characters) receives its path. */
static char *path_of(char *out, const char *name) {
    make_dir();
    snprintf(out, 160, "%s/%s", dir, name);
    return out;
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    CU_ASSERT_FATAL(fp != NULL);
    CU_ASSERT_FATAL(fwrite(data, 1, n, fp) == n);
    fclose(fp);
}

static void write_gz(const char *path, const void *data, size_t n) {
    gzFile z = gzopen(path, "wb");
    CU_ASSERT_FATAL(z != NULL);
    CU_ASSERT_FATAL(gzwrite(z, data, (unsigned)n) == (int)n);
    CU_ASSERT_FATAL(gzclose(z) == Z_OK);
}

/* The JSON form of nodes: every compute node a host op when all_cpu. */
static void write_json(const char *path, const tnode *nodes, int n, int all_cpu) {
    FILE *fp = fopen(path, "w");
    CU_ASSERT_FATAL(fp != NULL);
    fprintf(fp, "{\"workload_graph\": [\n");
    for (int i = 0; i < n; i++) {
        const tnode *t = &nodes[i];
        fprintf(fp, "  {\"Id\": %llu, \"Name\": \"%s\", \"NodeType\": %d, \"runtime\": %llu",
                (unsigned long long)t->id, t->name, t->type, (unsigned long long)t->dur);
        const int cpu = all_cpu && t->type == COMP ? 1 : t->cpu;
        if (cpu >= 0) fprintf(fp, ", \"is_cpu_op\": %s", cpu ? "true" : "false");
        fprintf(fp, ", \"data_deps\": [");
        for (int k = 0; k < t->n_deps; k++)
            fprintf(fp, "%s%llu", k ? ", " : "", (unsigned long long)t->deps[k]);
        fprintf(fp, "], \"ctrlDeps\": []");
        if (t->comm_type >= 0) fprintf(fp, ", \"comm_type\": %d", t->comm_type);
        if (t->comm_size >= 0) fprintf(fp, ", \"comm_size\": %lld", t->comm_size);
        if (t->pg) fprintf(fp, ", \"pg_name\": \"%s\"", t->pg);
        fprintf(fp, "}%s\n", i + 1 < n ? "," : "");
    }
    fprintf(fp, "]}\n");
    fclose(fp);
}

static int import(const char *path, int batch, model_profile *p, char *notes, size_t n) {
    profile_import_opts o = {.trace_path = path, .batch = batch};
    int rc = profile_import(&o, p, notes, n);
    if (rc != SS_OK) fprintf(stderr, "\n  %s\n", ss_error_message());
    return rc;
}

/* The two layers of the step: layer 0 holds the last bucket (B: the first layers' gradients)
 * with the whole forward, layer 1 bucket A. */
static void check_step(const model_profile *p, double fwd_us, double bwd_a_us, double bwd_b_us,
                       const char *device) {
    CU_ASSERT_EQUAL_FATAL(p->layers, 2);
    CU_ASSERT_STRING_EQUAL(p->layer_names[0], "allreduce.17");
    CU_ASSERT_STRING_EQUAL(p->layer_names[1], "allreduce.15");
    CU_ASSERT_EQUAL(p->layer_costs[0].param_bytes, 4 * 3); /* 10 bytes: 2.5 parameters, up */
    CU_ASSERT_EQUAL(p->layer_costs[1].param_bytes, 4 * 1000);
    CU_ASSERT_EQUAL(p->params, 1003);
    SS_CHECK_CLOSE(p->layer_costs[0].fwd_s, fwd_us * 1e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p->layer_costs[1].fwd_s, 0, 0, 0);
    SS_CHECK_CLOSE(p->layer_costs[0].bwd_s, bwd_b_us * 1e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p->layer_costs[1].bwd_s, bwd_a_us * 1e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p->measured_gap_s, 25e-6, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p->measured_step_s, (fwd_us + bwd_a_us + bwd_b_us + 25) * 1e-6, 1e-15, 1e-12);
    CU_ASSERT_STRING_EQUAL(p->measured_device, device);
    CU_ASSERT(p->measured);
    CU_ASSERT_EQUAL(p->measured_steps, 1);
    CU_ASSERT_EQUAL(p->measured_batch, 8);
    CU_ASSERT_EQUAL(p->batch, 8);
    CU_ASSERT_EQUAL(p->forward_flops_per_sample, 0);
    CU_ASSERT_EQUAL(p->layer_costs[0].kind, SIM_LAYER_OTHER);
}

/* The binary form, plain: device ops only (a GPU trace), in the order of data_deps. */
static void test_binary(void) {
    static pbuf b;
    put_trace(&b, step_nodes, STEP_N);
    char path[160];
    path_of(path, "dp-gpu.0.et");
    write_file(path, b.d, b.n);
    model_profile p;
    char notes[2048];
    CU_ASSERT_EQUAL_FATAL(import(path, 8, &p, notes, sizeof notes), SS_OK);
    check_step(&p, 150, 230, 340, "cuda");
    CU_ASSERT_STRING_EQUAL(p.name, "dp-gpu");
    CU_ASSERT(strstr(notes, "binary, schema 0.0.4: 14 nodes") != NULL);
    CU_ASSERT(strstr(notes, "skipped 1 BROADCAST, 1 BARRIER, 1 host-side calls and 0") != NULL);
    CU_ASSERT(strstr(notes, "a GPU trace") != NULL);
    CU_ASSERT(strstr(notes, "node 13 'nll_loss_Backward_kernel'") != NULL);
    CU_ASSERT(strstr(notes, "(bytes): 4000 10") != NULL);
    profile_free(&p);
}

/* The same bytes gzip-compressed: the same profile. */
static void test_gzip(void) {
    static pbuf b;
    put_trace(&b, step_nodes, STEP_N);
    char path[160];
    path_of(path, "dp-gz.et.gz");
    write_gz(path, b.d, b.n);
    model_profile p;
    char notes[2048];
    CU_ASSERT_EQUAL_FATAL(import(path, 8, &p, notes, sizeof notes), SS_OK);
    check_step(&p, 150, 230, 340, "cuda");
    CU_ASSERT_STRING_EQUAL(p.name, "dp-gz");
    CU_ASSERT(strstr(notes, "gzip-compressed binary") != NULL);
    profile_free(&p);
}

/* The JSON form: as the binary on a GPU trace; with every compute node a host op, a CPU trace
 * that counts them all: the host's linear (700) in the forward, its aten::mm (500) in bucket B's
 * backward (it follows node 15 in the order). */
static void test_json(void) {
    char path[160];
    path_of(path, "dp.json");
    write_json(path, step_nodes, STEP_N, 0);
    model_profile p;
    char notes[2048];
    CU_ASSERT_EQUAL_FATAL(import(path, 8, &p, notes, sizeof notes), SS_OK);
    check_step(&p, 150, 230, 340, "cuda");
    CU_ASSERT(strstr(notes, "Chakra execution trace, JSON: 14 nodes") != NULL);
    profile_free(&p);
    write_json(path, step_nodes, STEP_N, 1);
    CU_ASSERT_EQUAL_FATAL(import(path, 8, &p, notes, sizeof notes), SS_OK);
    check_step(&p, 850, 230, 840, "cpu");
    CU_ASSERT(strstr(notes, "a CPU trace") != NULL);
    profile_free(&p);
}

/* Without a node named as backward, the forward is 0 and everything before bucket A is its
 * backward. */
static void test_no_backward_name(void) {
    tnode nodes[STEP_N];
    memcpy(nodes, step_nodes, sizeof nodes);
    nodes[5].name = "loss_kernel";
    char path[160];
    path_of(path, "nobwd.json");
    write_json(path, nodes, STEP_N, 0);
    model_profile p;
    char notes[2048];
    CU_ASSERT_EQUAL_FATAL(import(path, 8, &p, notes, sizeof notes), SS_OK);
    check_step(&p, 0, 380, 340, "cuda");
    CU_ASSERT(strstr(notes, "no node is named as backward") != NULL);
    profile_free(&p);
}

/* `syncsim replay --profile` of the written profile on one worker: steps x the step (forward,
 * the buckets' backward and the gap), with the overlap on and off. */
static void replay_check(const char *prof, double step, int steps) {
    const char *overlap[] = {"on", "off"};
    for (int k = 0; k < 2; k++) {
        char cmd[1024], *out = NULL;
        snprintf(cmd, sizeof cmd,
                 "%s/syncsim replay --profile %s --workers 1 --steps %d --overlap %s --out %s "
                 "2>&1",
                 SS_BINARY_DIR, prof, steps, overlap[k], dir);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
        const char *at = out ? strstr(out, "simulated time ") : NULL;
        CU_ASSERT_FATAL(at != NULL);
        SS_CHECK_CLOSE(atof(at + 15), steps * step, 0, 1e-6);
        free(out);
    }
}

static void test_replay(void) {
    static pbuf b;
    put_trace(&b, step_nodes, STEP_N);
    char path[160], prof[160];
    path_of(path, "dp-replay.et");
    path_of(prof, "dp-replay.profile");
    write_file(path, b.d, b.n);
    CU_ASSERT_EQUAL_FATAL(run_import(path, "--batch 8 --name dp", prof), 0);
    model_profile p;
    CU_ASSERT_EQUAL_FATAL(profile_load(prof, &p), SS_OK);
    CU_ASSERT_STRING_EQUAL(p.name, "dp");
    SS_CHECK_CLOSE(p.measured_step_s, 745e-6, 0, 1e-12);
    profile_free(&p);
    replay_check(prof, 745e-6, 5);
}

/* The shipped sample: PyTorch DDP ResNet-50, one rank, converted by Chakra. Its five buckets
 * hold torchvision ResNet-50's 25,557,032 parameters; the device compute is 292,828 us: 89,781
 * before aten::nll_loss_backward, the buckets' backward segments (trace order) 216, 11,025,
 * 17,841, 41,788 and 126,876 us, and 5,301 after the last all-reduce. */
static void test_sample(void) {
    model_profile p;
    char notes[2048];
    CU_ASSERT_EQUAL_FATAL(import(SAMPLE, 32, &p, notes, sizeof notes), SS_OK);
    CU_ASSERT_EQUAL_FATAL(p.layers, 5);
    CU_ASSERT_STRING_EQUAL(p.name, "chakra-resnet50-ddp");
    CU_ASSERT_STRING_EQUAL(p.measured_device, "cuda");
    CU_ASSERT_EQUAL(p.params, 25557032);
    /* layer j: bucket 4 - j */
    const char *names[] = {"allreduce.5700", "allreduce.4486", "allreduce.3686", "allreduce.3512",
                           "allreduce.3256"};
    const double bytes[] = {9724160, 26550272, 26255360, 31502336, 8196000};
    const double bwd[] = {126876, 41788, 17841, 11025, 216};
    double sum = 0;
    for (int j = 0; j < 5; j++) {
        CU_ASSERT_STRING_EQUAL(p.layer_names[j], names[j]);
        CU_ASSERT_EQUAL(p.layer_costs[j].param_bytes, bytes[j]);
        SS_CHECK_CLOSE(p.layer_costs[j].bwd_s, bwd[j] * 1e-6, 1e-15, 1e-12);
        SS_CHECK_CLOSE(p.layer_costs[j].fwd_s, j == 0 ? 0.089781 : 0, 1e-15, 1e-12);
        sum += p.layer_costs[j].bwd_s;
    }
    SS_CHECK_CLOSE(sum, 0.197746, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p.measured_gap_s, 0.005301, 1e-15, 1e-12);
    SS_CHECK_CLOSE(p.measured_step_s, 0.292828, 1e-15, 1e-12);
    CU_ASSERT(strstr(notes, "gzip-compressed binary") != NULL);
    CU_ASSERT(strstr(notes, "3664 nodes") != NULL);
    CU_ASSERT(strstr(notes, "skipped 2 BROADCAST") != NULL);
    CU_ASSERT(strstr(notes, "8196000 31502336 26255360 26550272 9724160") != NULL);
    profile_free(&p);
}

/* ---- bad input ---- */

/* The binary trace of these nodes into path. */
static void write_nodes(const char *path, const tnode *nodes, int n) {
    static pbuf b;
    put_trace(&b, nodes, n);
    write_file(path, b.d, b.n);
}

/* Imports path (exit code want_code) and checks the message names the file and holds want. */
static void expect_fail(const char *path, const char *extra, int want_code, const char *want) {
    char out[160];
    path_of(out, "never.profile");
    unlink(out);
    const int code = run_import(path, extra, out);
    CU_ASSERT_EQUAL(code, want_code);
    const char *msg = ss_error_message();
    if (code != want_code || !strstr(msg, want) || !strstr(msg, path))
        fprintf(stderr, "\n  %s: exit %d, '%s'; wanted %d, '%s'\n", path, code, msg, want_code,
                want);
    CU_ASSERT(strstr(msg, want) != NULL);
    CU_ASSERT(strstr(msg, path) != NULL);
    CU_ASSERT(access(out, F_OK) != 0);
}

/* A trace of two training steps as Chakra's converter writes ASTRA-sim's text workloads of
 * data parallelism (COMP_NODE_<layer>_FWD, _BWD_WG, _BWD_IG; one all-reduce a layer, of 0 bytes
 * for a layer without gradients; no is_cpu_op), the second step's times twice the first's: with
 * --steps 2 the mean step, layer by layer. */
#define TEXT_N 22
static void text_nodes(tnode *t) {
    /* per step: forwards of l0, l1, l2; then l2's weight gradient and its all-reduce, l2's input
     * gradient, l1's weight gradient and its 0-byte all-reduce, l1's input gradient, l0's weight
     * gradient and its all-reduce */
    static const struct {
        const char *name;
        int type;
        uint64_t dur;
        long long bytes;
    } step[11] = {{"COMP_NODE_l0_FWD", COMP, 10, -1},
                  {"COMP_NODE_l1_FWD", COMP, 20, -1},
                  {"COMP_NODE_l2_FWD", COMP, 30, -1},
                  {"COMP_NODE_l2_BWD_WG", COMP, 40, -1},
                  {"COMM_COLL_NODE_l2_ALLREDUCE", COLL, 7, 1200},
                  {"COMP_NODE_l2_BWD_IG", COMP, 5, -1},
                  {"COMP_NODE_l1_BWD_WG", COMP, 50, -1},
                  {"COMM_COLL_NODE_l1_NONE", COLL, 0, 0},
                  {"COMP_NODE_l1_BWD_IG", COMP, 6, -1},
                  {"COMP_NODE_l0_BWD_WG", COMP, 60, -1},
                  {"COMM_COLL_NODE_l0_ALLREDUCE", COLL, 7, 400}};
    for (int i = 0; i < TEXT_N; i++) {
        const int k = i % 11, second = i >= 11;
        t[i] = (tnode){.id = (uint64_t)i,
                       .name = step[k].name,
                       .type = step[k].type,
                       .dur = step[k].dur * (second ? 2 : 1),
                       .cpu = -1,
                       .comm_type = step[k].type == COLL ? 0 : -1,
                       .comm_size = step[k].bytes,
                       .deps = {(uint64_t)(i - 1)},
                       .n_deps = i > 0,
                       .packed = 1};
    }
}

static void test_steps(void) {
    static tnode nodes[TEXT_N];
    text_nodes(nodes);
    char path[160];
    path_of(path, "text-dp.0.et");
    write_nodes(path, nodes, TEXT_N);
    model_profile p;
    char notes[2048];
    profile_import_opts o = {.trace_path = path, .batch = 16, .steps = 2};
    CU_ASSERT_EQUAL_FATAL(profile_import(&o, &p, notes, sizeof notes), SS_OK);
    /* the mean step: forward (10 + 20 + 30) x 1.5; l2's bucket 40 x 1.5; l0's bucket
     * (5 + 50 + 6 + 60) x 1.5; no tail */
    CU_ASSERT_EQUAL_FATAL(p.layers, 2);
    CU_ASSERT_STRING_EQUAL(p.layer_names[0], "allreduce.10");
    CU_ASSERT_STRING_EQUAL(p.layer_names[1], "allreduce.4");
    CU_ASSERT_EQUAL(p.layer_costs[0].param_bytes, 400);
    CU_ASSERT_EQUAL(p.layer_costs[1].param_bytes, 1200);
    CU_ASSERT_DOUBLE_EQUAL(p.layer_costs[0].fwd_s, 90e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(p.layer_costs[0].bwd_s, 181.5e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(p.layer_costs[1].fwd_s, 0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(p.layer_costs[1].bwd_s, 60e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(p.measured_gap_s, 0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(p.measured_step_s, 331.5e-6, 1e-12);
    CU_ASSERT_EQUAL(p.measured_steps, 2);
    CU_ASSERT_EQUAL(p.params, 400);
    CU_ASSERT_STRING_EQUAL(p.measured_device, "cuda"); /* no is_cpu_op: device ops */
    CU_ASSERT(strstr(notes, "2 ALL_REDUCE buckets a step, 2 steps") != NULL);
    CU_ASSERT(strstr(notes, "and 2 all-reduces of 0 bytes") != NULL);
    CU_ASSERT(strstr(notes, "node 3 'COMP_NODE_l2_BWD_WG'") != NULL);
    profile_free(&p);
    /* read as one step, the same nodes give four buckets and a forward of the first step only */
    o.steps = 1;
    CU_ASSERT_EQUAL_FATAL(profile_import(&o, &p, notes, sizeof notes), SS_OK);
    CU_ASSERT_EQUAL(p.layers, 4);
    CU_ASSERT_DOUBLE_EQUAL(p.measured_step_s, 663e-6, 1e-12); /* every node's time, once */
    profile_free(&p);
    /* steps that do not split the all-reduces, or a count that does not repeat the sizes */
    expect_fail(path, "--batch 16 --steps 3", 1, "do not split into --steps 3 equal steps");
    nodes[15].comm_size = 1000; /* the second step's first all-reduce */
    write_nodes(path, nodes, TEXT_N);
    expect_fail(path, "--batch 16 --steps 2", 1, "step 2's all-reduce 1");
    /* --steps is for Chakra traces only; a bad count is a usage error */
    expect_fail(SS_SOURCE_DIR "/tests/data/profile_import/cpu_small.json", "--batch 4 --steps 2", 2,
                "--steps is for Chakra execution traces");
}

static void test_bad_binary(void) {
    static pbuf good, b;
    put_trace(&good, step_nodes, STEP_N);
    char path[160];
    path_of(path, "bad.et");
    /* the file cut inside its last message; cut inside a message's length varint */
    write_file(path, good.d, good.n - 5);
    expect_fail(path, "--batch 8", 1, "message 14 (a Node) at byte");
    expect_fail(path, "--batch 8", 1, "are left (a truncated file?)");
    b = good;
    b.d[b.n++] = 0x80;
    write_file(path, b.d, b.n);
    expect_fail(path, "--batch 8", 1, "a varint runs past the end of the file");
    /* a name whose length runs past its message: at the node's first byte after its length */
    b.n = 0;
    put_varint(&b, 2);
    put_str(&b, 1, "");
    const size_t node_at = b.n;
    put_varint(&b, 3);
    put_key(&b, 2, 2);
    put_varint(&b, 50);
    b.d[b.n++] = 'x';
    write_file(path, b.d, b.n);
    char want[96];
    snprintf(want, sizeof want, "message 1 (a Node) at byte %zu: field 2 of 50 bytes runs past",
             node_at + 1);
    expect_fail(path, "--batch 8", 1, want);
    /* a varint of 11 bytes */
    b.n = 0;
    put_varint(&b, 2);
    put_str(&b, 1, "");
    put_varint(&b, 12);
    put_key(&b, 1, 0);
    for (int i = 0; i < 11; i++)
        b.d[b.n++] = 0xff;
    write_file(path, b.d, b.n);
    expect_fail(path, "--batch 8", 1, "a varint longer than 10 bytes");
    /* a group (wire type 3) */
    b.n = 0;
    put_varint(&b, 2);
    put_str(&b, 1, "");
    put_varint(&b, 2);
    put_key(&b, 4, 3);
    b.d[b.n++] = 0;
    write_file(path, b.d, b.n);
    expect_fail(path, "--batch 8", 1, "field 4 has wire type 3 (a group)");
    /* a gzip file cut short */
    char gz[160];
    path_of(gz, "bad.et.gz");
    write_gz(gz, good.d, good.n);
    FILE *fp = fopen(gz, "rb");
    CU_ASSERT_FATAL(fp != NULL);
    unsigned char z[16384];
    const size_t zn = fread(z, 1, sizeof z, fp);
    fclose(fp);
    write_file(gz, z, zn - 12);
    expect_fail(gz, "--batch 8", 1, "cannot read trace");
}

static void test_bad_graph(void) {
    tnode n[STEP_N];
    char path[160];
    path_of(path, "bad-graph.et");
    /* an ALL_GATHER: named with its node */
    memcpy(n, step_nodes, sizeof n);
    n[7].comm_type = 2;
    write_nodes(path, n, STEP_N);
    expect_fail(path, "--batch 8", 1, "node 15 'ncclKernel_AllReduce_A' (message 8 at byte");
    expect_fail(path, "--batch 8", 1,
                "is a collective of type ALL_GATHER: syncsim imports data-parallel");
    /* a send */
    memcpy(n, step_nodes, sizeof n);
    n[4].type = SEND;
    write_nodes(path, n, STEP_N);
    expect_fail(path, "--batch 8", 1, "node 12 'relu_fwd' (message 5 at byte");
    /* two process groups */
    memcpy(n, step_nodes, sizeof n);
    n[11].pg = "tp";
    write_nodes(path, n, STEP_N);
    expect_fail(path, "--batch 8", 1, "all-reduces in two process groups, '0'");
    expect_fail(path, "--batch 8", 1, "'tp' (node 17");
    /* no all-reduce */
    memcpy(n, step_nodes, sizeof n);
    n[7].comm_type = n[11].comm_type = 5;
    write_nodes(path, n, STEP_N);
    expect_fail(path, "--batch 8", 1, "no ALL_REDUCE with bytes on the device");
    expect_fail(path, "--batch 8", 1, "3 BROADCAST");
    /* a cycle: 11 waits on 13, which waits on 12, which waits on 11 */
    memcpy(n, step_nodes, sizeof n);
    n[3].deps[0] = 13;
    write_nodes(path, n, STEP_N);
    expect_fail(path, "--batch 8", 1, "data_deps form a cycle through node 12 'relu_fwd'");
    /* a duplicate id */
    memcpy(n, step_nodes, sizeof n);
    n[10].id = 16;
    write_nodes(path, n, STEP_N);
    expect_fail(path, "--batch 8", 1, "node 16 'gemm_bwd2' (message 9 at byte");
    expect_fail(path, "--batch 8", 1, "'late_id_kernel' (message 11 at byte");
    expect_fail(path, "--batch 8", 1, "have the same id");
    /* the JSON form: a node without an id */
    char json[160];
    path_of(json, "bad.json");
    const char *text = "{\"workload_graph\": [{\"Id\": 1, \"NodeType\": 4}, {\"Name\": \"x\"}]}";
    write_file(json, text, strlen(text));
    expect_fail(json, "--batch 8", 1, "workload_graph[1]: needs an integer \"Id\"");
    /* usage: no batch, a params file */
    memcpy(n, step_nodes, sizeof n);
    write_nodes(path, n, STEP_N);
    expect_fail(path, "", 2, "give --batch B");
    expect_fail(path, "--batch 8 --params x.json", 2, "--params is for torch.profiler traces");
}

/* The suite's end: the temporary directory removed. */
static int cleanup(void) {
    if (!dir[0]) return 0;
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    const int rc = system(rm);
    dir[0] = '\0';
    return rc != 0;
}

static CU_TestInfo tests[] = {
    {"binary trace: layers per all-reduce bucket", test_binary},
    {"gzip-compressed binary trace", test_gzip},
    {"JSON form: GPU and CPU traces", test_json},
    {"no backward node: forward 0", test_no_backward_name},
    {"replay of the imported profile on one worker", test_replay},
    {"shipped sample: DDP ResNet-50", test_sample},
    {"bad binary input: offsets and messages", test_bad_binary},
    {"refused graphs and usage errors", test_bad_graph},
    {"--steps: a text workload of two steps, zero-byte all-reduces", test_steps},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"chakra_import", NULL, cleanup, NULL, NULL, tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
