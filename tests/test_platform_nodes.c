/* CUnit suite of node platforms (multi-GPU servers): the generator's routes follow the contract of
 * sim/net/cluster.h (intra-node routes cross only intra-node links, inter-node routes leave through
 * the GPU's own NIC), single messages take their closed-form times under CM02, LV08 applies TCP
 * factors to ethernet routes only (sim/net/fabric.h), and inconsistent node structures are rejected
 * with a message naming the file and the host. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <simgrid/mailbox.h>
#include <xbt/dynar.h>

#include "common/status.h"
#include "sim/net/cluster.h"
#include "sim/net/fabric.h"
#include "common/isolate.h"
#include "sim/platform/platform_gen.h"
#include "tests/ss_test.h"

/* 2 nodes x 4 GPUs, 2 NICs per node, star: intra 800 Gbps (100 GB/s) and 1 us per link, NICs
 * 80 Gbps (10 GB/s) and 5 us. */
static platform_gen_spec node_spec(sim_fabric nic, sim_fabric intra) {
    platform_gen_spec s = platform_gen_default();
    s.n_hosts = 8;
    s.n_nodes = 2;
    s.nics_per_node = 2;
    s.bandwidth_Bps = 80e9 / 8;
    s.latency_s = 5e-6;
    s.intra_bandwidth_Bps = 800e9 / 8;
    s.intra_latency_s = 1e-6;
    s.intra_fabric = intra;
    s.nic_fabric = nic;
    return s;
}

static void write_spec(const platform_gen_spec *s, const char *path) {
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    SS_ASSERT(platform_generate(s, f) == SS_OK);
    fclose(f);
}

/* ---------------------------------------------------------------- routes */

typedef struct route_req {
    const char *path;
    int n_workers;
    int model; /* sim_network_model */
    int src, dst;
} route_req;

typedef struct route_out {
    char links[512]; /* link names of src -> dst, space-separated */
    double latency_s;
    double lat_factor, bw_factor; /* sim_fabric_*_factor(src, dst) */
    double transfer_s;            /* one message of MSG_BYTES src -> dst, alone */
} route_out;

#define MSG_BYTES 1e8

static void sender(void *data) {
    sg_mailbox_put(sg_mailbox_by_name("m"), data, (long)MSG_BYTES);
}
static void receiver(void *data) {
    (void)data;
    sg_mailbox_get(sg_mailbox_by_name("m"));
}

static int route_run(void *arg, isolate_blob *result) {
    const route_req *r = arg;
    sim_cluster_opts o = {
        .platform_path = r->path, .n_workers = r->n_workers, .model = (sim_network_model)r->model};
    sim_cluster *c;
    int st = sim_cluster_open(&o, &c);
    if (st) return st;
    route_out out = {0};
    sg_host_t a = sim_cluster_worker_host(c, r->src), b = sim_cluster_worker_host(c, r->dst);
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(a, b, links);
    unsigned i;
    sg_link_t l;
    xbt_dynar_foreach(links, i, l) {
        size_t n = strlen(out.links);
        snprintf(out.links + n, sizeof out.links - n, "%s%s", n ? " " : "", sg_link_get_name(l));
    }
    xbt_dynar_free(&links);
    out.latency_s = sg_host_get_route_latency(a, b);
    out.lat_factor = sim_fabric_latency_factor(a, b, 1e6);
    out.bw_factor = sim_fabric_bandwidth_factor(a, b, 1e6);
    static char payload = 1;
    sim_actor_spawn("tx", 0, a, sender, &payload);
    sim_actor_spawn("rx", 0, b, receiver, NULL);
    sim_cluster_simulate(c, &out.transfer_s);
    isolate_blob_append(result, &out, sizeof out);
    sim_cluster_close(c);
    return SS_OK;
}

static route_out route(const char *path, int n_workers, int model, int src, int dst) {
    route_req r = {path, n_workers, model, src, dst};
    isolate_blob b = {0};
    route_out out = {0};
    int st = isolate_call(route_run, &r, &b);
    if (st != SS_OK) fprintf(stderr, "%s\n", ss_error_message());
    SS_ASSERT(st == SS_OK && b.bytes == sizeof out);
    memcpy(&out, b.data, sizeof out);
    isolate_blob_free(&b);
    return out;
}

#define REL_EQ(a, b) CU_ASSERT(fabs((a) - (b)) <= 1e-9 * fabs(b))

static void test_routes_nvlink(void) {
    const char *p = SS_BINARY_DIR "/tests/nodes_nvlink.xml";
    platform_gen_spec s = node_spec(SIM_FABRIC_INFINIBAND, SIM_FABRIC_NVLINK);
    write_spec(&s, p);
    /* worker 3 = node0-gpu3 (NIC 3*2/4 = 1), worker 5 = node1-gpu1 (NIC 0) */
    route_out intra = route(p, 8, SIM_NETWORK_CM02, 0, 3);
    CU_ASSERT_STRING_EQUAL(intra.links, "node0-gpu0-nvlink_UP node0-gpu3-nvlink_DOWN");
    REL_EQ(intra.latency_s, 2e-6);
    REL_EQ(intra.transfer_s, 2e-6 + MSG_BYTES / 100e9);
    route_out inter = route(p, 8, SIM_NETWORK_CM02, 3, 5);
    CU_ASSERT_STRING_EQUAL(inter.links, "node0-nic1_UP switch node1-nic0_DOWN");
    REL_EQ(inter.latency_s, 10e-6);
    REL_EQ(inter.transfer_s, 10e-6 + MSG_BYTES / 10e9);
    CU_ASSERT_EQUAL(inter.lat_factor, 1.0);
    route_out back = route(p, 8, SIM_NETWORK_CM02, 5, 3);
    CU_ASSERT_STRING_EQUAL(back.links, "node1-nic0_UP switch node0-nic1_DOWN");
}

static void test_routes_pcie(void) {
    const char *p = SS_BINARY_DIR "/tests/nodes_pcie.xml";
    platform_gen_spec s = node_spec(SIM_FABRIC_ETHERNET, SIM_FABRIC_PCIE);
    write_spec(&s, p);
    route_out intra = route(p, 8, SIM_NETWORK_CM02, 1, 2);
    CU_ASSERT_STRING_EQUAL(intra.links, "node0-gpu1-pcie_UP node0-gpu2-pcie_DOWN");
    /* on a PCIe server the GPU reaches its NIC through its own slot */
    route_out inter = route(p, 8, SIM_NETWORK_CM02, 2, 7);
    CU_ASSERT_STRING_EQUAL(inter.links, "node0-gpu2-pcie_UP node0-nic1_UP switch node1-nic1_DOWN "
                                        "node1-gpu3-pcie_DOWN");
    REL_EQ(inter.latency_s, 12e-6);
    REL_EQ(inter.transfer_s, 12e-6 + MSG_BYTES / 10e9);
}

/* PCIe switches of 2 GPUs: peer to peer stays below a switch, crosses both uplinks between
 * switches; without it every GPU-to-GPU route crosses them; routes to a NIC cross the GPU's. */
static void test_routes_pcie_switch(void) {
    const char *p = SS_BINARY_DIR "/tests/nodes_pcie_sw.xml";
    platform_gen_spec s = node_spec(SIM_FABRIC_INFINIBAND, SIM_FABRIC_PCIE);
    s.pcie_switch = 2;
    write_spec(&s, p);
    CU_ASSERT_STRING_EQUAL(route(p, 8, SIM_NETWORK_CM02, 0, 1).links,
                           "node0-gpu0-pcie_UP node0-gpu1-pcie_DOWN");
    route_out across = route(p, 8, SIM_NETWORK_CM02, 1, 2);
    CU_ASSERT_STRING_EQUAL(across.links, "node0-gpu1-pcie_UP node0-sw0-pcie_UP "
                                         "node0-sw1-pcie_DOWN node0-gpu2-pcie_DOWN");
    REL_EQ(across.latency_s, 2e-6); /* the uplinks add no latency */
    CU_ASSERT_STRING_EQUAL(route(p, 8, SIM_NETWORK_CM02, 3, 4).links,
                           "node0-gpu3-pcie_UP node0-sw1-pcie_UP node0-nic1_UP switch "
                           "node1-nic0_DOWN node1-sw0-pcie_DOWN node1-gpu0-pcie_DOWN");
    s.p2p = 0;
    write_spec(&s, p);
    CU_ASSERT_STRING_EQUAL(route(p, 8, SIM_NETWORK_CM02, 1, 0).links,
                           "node0-gpu1-pcie_UP node0-sw0-pcie_UP node0-sw0-pcie_DOWN "
                           "node0-gpu0-pcie_DOWN");
}

static void test_routes_fat_tree(void) {
    const char *p = SS_BINARY_DIR "/tests/nodes_fat.xml";
    platform_gen_spec s = node_spec(SIM_FABRIC_INFINIBAND, SIM_FABRIC_NVLINK);
    s.n_hosts = 16;
    s.n_nodes = 4; /* leaves of 2 nodes, 2 spines */
    s.topology = PLATFORM_TOPOLOGY_FAT_TREE;
    write_spec(&s, p);
    route_out same_leaf = route(p, 16, SIM_NETWORK_CM02, 0, 4);
    CU_ASSERT_STRING_EQUAL(same_leaf.links, "node0-nic0_UP leaf0 node1-nic0_DOWN");
    route_out across = route(p, 16, SIM_NETWORK_CM02, 0, 15); /* node0 -> node3: spine 1 */
    CU_ASSERT_STRING_EQUAL(across.links,
                           "node0-nic0_UP leaf0-spine1_UP leaf1-spine1_DOWN node3-nic1_DOWN");
    REL_EQ(across.latency_s, 20e-6);
    REL_EQ(across.transfer_s, 20e-6 + MSG_BYTES / 10e9);
}

/* LV08: an ethernet route takes the TCP factors (latency x 13.01, bandwidth x 0.97), an
 * InfiniBand route of the same links none, and an NVLink route inside a node none either. */
static void test_fabric_factors_lv08(void) {
    const char *pe = SS_BINARY_DIR "/tests/nodes_eth.xml";
    const char *pi = SS_BINARY_DIR "/tests/nodes_ib.xml";
    platform_gen_spec se = node_spec(SIM_FABRIC_ETHERNET, SIM_FABRIC_NVLINK);
    platform_gen_spec si = node_spec(SIM_FABRIC_INFINIBAND, SIM_FABRIC_NVLINK);
    write_spec(&se, pe);
    write_spec(&si, pi);
    route_out eth = route(pe, 8, SIM_NETWORK_LV08, 0, 4);
    route_out ib = route(pi, 8, SIM_NETWORK_LV08, 0, 4);
    route_out nvl = route(pe, 8, SIM_NETWORK_LV08, 0, 1);
    CU_ASSERT_EQUAL(eth.lat_factor, 13.01);
    CU_ASSERT_EQUAL(eth.bw_factor, 0.97);
    CU_ASSERT_EQUAL(ib.lat_factor, 1.0);
    CU_ASSERT_EQUAL(ib.bw_factor, 1.0);
    CU_ASSERT_EQUAL(nvl.lat_factor, 1.0);
    REL_EQ(eth.transfer_s, 13.01 * 10e-6 + MSG_BYTES / (0.97 * 10e9));
    REL_EQ(ib.transfer_s, 10e-6 + MSG_BYTES / 10e9);
    REL_EQ(nvl.transfer_s, 2e-6 + MSG_BYTES / 100e9);
    /* CM02 stays plain on the ethernet platform */
    route_out cm = route(pe, 8, SIM_NETWORK_CM02, 0, 4);
    CU_ASSERT_EQUAL(cm.lat_factor, 1.0);
    REL_EQ(cm.transfer_s, 10e-6 + MSG_BYTES / 10e9);
}

/* A flat platform without fabric properties under LV08: the factors SimGrid's LV08 applies. */
static void test_flat_lv08_unchanged(void) {
    const char *p = SS_BINARY_DIR "/tests/flat_lv08.xml";
    platform_gen_spec s = platform_gen_default();
    s.n_hosts = 4;
    s.bandwidth_Bps = 80e9 / 8;
    s.latency_s = 5e-6;
    write_spec(&s, p);
    route_out r = route(p, 4, SIM_NETWORK_LV08, 0, 3);
    CU_ASSERT_EQUAL(r.lat_factor, 13.01);
    REL_EQ(r.transfer_s, 13.01 * 10e-6 + MSG_BYTES / (0.97 * 10e9));
}

/* ---------------------------------------------------------------- checks */

static void test_check_shape(void) {
    const char *p = SS_BINARY_DIR "/tests/nodes_shape.xml";
    platform_gen_spec s = node_spec(SIM_FABRIC_ROCE, SIM_FABRIC_NVLINK);
    write_spec(&s, p);
    sim_platform_info info;
    CU_ASSERT_EQUAL_FATAL(sim_platform_check(p, &info), SS_OK);
    CU_ASSERT_EQUAL(info.n_hosts, 8);
    CU_ASSERT_EQUAL(info.n_nodes, 2);
    CU_ASSERT_EQUAL(info.gpus_per_node, 4);
    CU_ASSERT_EQUAL(info.nics_per_node, 2);
    CU_ASSERT_STRING_EQUAL(info.host_names[5], "node1-gpu1");
    sim_platform_info_free(&info);
    /* flat platforms have no nodes */
    const char *f = SS_SOURCE_DIR "/platforms/cluster_25gbps_16.xml";
    CU_ASSERT_EQUAL_FATAL(sim_platform_check(f, &info), SS_OK);
    CU_ASSERT_EQUAL(info.n_nodes, 0);
    sim_platform_info_free(&info);
}

/* The generated 2 x 4 platform with the first `from` after `anchor` replaced by `to`. */
static void write_mutated(const char *path, const char *anchor, const char *from, const char *to) {
    platform_gen_spec s = node_spec(SIM_FABRIC_INFINIBAND, SIM_FABRIC_NVLINK);
    char *text = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&text, &n);
    SS_ASSERT(m && platform_generate(&s, m) == SS_OK);
    fclose(m);
    char *at = strstr(text, anchor);
    SS_ASSERT(at != NULL);
    char *hit = strstr(at, from);
    SS_ASSERT(hit != NULL);
    FILE *f = fopen(path, "w");
    SS_ASSERT(f != NULL);
    fwrite(text, 1, (size_t)(hit - text), f);
    fputs(to, f);
    fputs(hit + strlen(from), f);
    fclose(f);
    free(text);
}

static void expect_bad(const char *path, const char *needle1, const char *needle2) {
    sim_platform_info info;
    CU_ASSERT_EQUAL(sim_platform_check(path, &info), SS_EUSAGE);
    const char *msg = ss_error_message();
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, path));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, needle1));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, needle2));
    if (!strstr(msg, needle1) || !strstr(msg, needle2)) fprintf(stderr, "message: %s\n", msg);
}

static void test_bad_nodes(void) {
    const char *p = SS_BINARY_DIR "/tests/nodes_bad.xml";
    write_mutated(p, "<host id=\"node0-gpu3\"", "<prop id=\"nic\" value=\"1\"/>", "");
    expect_bad(p, "<host id=\"node0-gpu3\">", "has the property node but no nic");
    write_mutated(p, "<host id=\"node1-gpu3\"", "<prop id=\"nic\" value=\"1\"/>",
                  "<prop id=\"nic\" value=\"5\"/>");
    expect_bad(p, "<host id=\"node1-gpu3\">", "rail 5 does not exist");
    write_mutated(p, "<host id=\"node1-gpu3\"", "<prop id=\"node\" value=\"1\"/>",
                  "<prop id=\"node\" value=\"2\"/>");
    expect_bad(p, "node 1 has 3 GPUs", "same GPU and NIC counts");
    write_mutated(p, "<host id=\"node1-gpu2\"", "<prop id=\"local_rank\" value=\"2\"/>",
                  "<prop id=\"local_rank\" value=\"1\"/>");
    expect_bad(p, "local_rank=1", "each once");
    write_mutated(p, "<link id=\"node0-nic0\"", "value=\"infiniband\"", "value=\"myrinet\"");
    expect_bad(p, "<link id=\"node0-nic0\">", "unknown fabric (valid: ethernet, infiniband");
}

static void test_bad_generator(void) {
    platform_gen_spec s = node_spec(SIM_FABRIC_INFINIBAND, SIM_FABRIC_NVLINK);
    s.n_hosts = 16;
    s.n_nodes = 3;
    FILE *null = fopen("/dev/null", "w");
    CU_ASSERT_EQUAL(platform_generate(&s, null), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "do not divide into 3 nodes"));
    s.n_nodes = 2;
    s.nics_per_node = 9; /* 8 GPUs per node */
    CU_ASSERT_EQUAL(platform_generate(&s, null), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--nics-per-node: 9"));
    s.nics_per_node = 2;
    s.pcie_switch = 2; /* NVLink nodes have no PCIe switches to describe */
    CU_ASSERT_EQUAL(platform_generate(&s, null), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--intra pcie3 or pcie4"));
    s.intra_fabric = SIM_FABRIC_PCIE;
    s.pcie_switch = 9;
    CU_ASSERT_EQUAL(platform_generate(&s, null), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--pcie-switch: 9"));
    s.pcie_switch = 0;
    s.p2p = 0;
    CU_ASSERT_EQUAL(platform_generate(&s, null), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--p2p off: needs --pcie-switch"));
    fclose(null);
    run_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.bandwidth, sizeof cfg.bandwidth, "200Gbps");
    snprintf(cfg.latency, sizeof cfg.latency, "1us");
    snprintf(cfg.topology, sizeof cfg.topology, "star");
    snprintf(cfg.gpu, sizeof cfg.gpu, "a100");
    cfg.gpu_efficiency = 1;
    cfg.nodes = 2;
    cfg.nics_per_node = 8;
    snprintf(cfg.intra, sizeof cfg.intra, "nvlink5");
    snprintf(cfg.fabric, sizeof cfg.fabric, "infiniband");
    CU_ASSERT_EQUAL(platform_spec_from_config(&cfg, 16, 0, &s), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--intra: unknown intra-node fabric"));
    snprintf(cfg.intra, sizeof cfg.intra, "nvlink3");
    CU_ASSERT_EQUAL_FATAL(platform_spec_from_config(&cfg, 16, 0, &s), SS_OK);
    CU_ASSERT_EQUAL(s.intra_bandwidth_Bps, 2400e9 / 8);
    CU_ASSERT_EQUAL(s.nic_fabric, SIM_FABRIC_INFINIBAND);
}

static CU_TestInfo node_tests[] = {
    {"routes on an NVLink node platform, CM02 closed forms", test_routes_nvlink},
    {"routes on a PCIe node platform cross the GPU's slot", test_routes_pcie},
    {"PCIe switch uplinks, with and without peer to peer", test_routes_pcie_switch},
    {"fat tree above nodes", test_routes_fat_tree},
    {"LV08 factors per fabric", test_fabric_factors_lv08},
    {"flat LV08 platform keeps SimGrid's factors", test_flat_lv08_unchanged},
    {"checker reads the node shape", test_check_shape},
    {"inconsistent node structures", test_bad_nodes},
    {"generator rejects bad node options", test_bad_generator},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"platform_nodes", NULL, NULL, NULL, NULL, node_tests},
                             CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
