/* The SMPI network model (--network-model SMPI): SimGrid's size-dependent TCP factors against
 * closed forms, the closed-form collectives against their message-level forms under it, and the
 * routes it leaves alone; and TCP-stream, SMPI below 64 KiB and a persistent stream above. Every
 * simulation runs in its own process (bench_network_allreduce). */
#include "net_star.h"

#include <unistd.h>

#include "common/status.h"
#include "cli/bench_network.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"
#include "sim/platform/platform_gen.h"

#define BW_BPS      1e9   /* 1 Gbps per link */
#define LAT_S       20e-6 /* per link: a host-to-host route of the star has two */
#define ROUTE_LAT_S (2 * LAT_S)

/* SimGrid 3.32's defaults of smpi/lat-factor and smpi/bw-factor, written out here so that a
 * wrong table in sim/net/fabric.cpp fails: from `threshold` bytes up. */
static const struct {
    double threshold, lat, bw;
} smpi_table[] = {{65472, 11.6436, 0.940694}, {15424, 3.48845, 0.697866}, {9376, 2.59299, 0.58729},
                  {5776, 2.18796, 1.08739},   {3484, 1.88101, 0.77493},   {1426, 1.61075, 0.608902},
                  {732, 1.9503, 0.341987},    {257, 1.95341, 0.338112},   {0, 2.01467, 0.812084}};

static int row_of(double bytes) {
    int i = 0;
    while (bytes < smpi_table[i].threshold)
        i++;
    return i;
}

static void test_parse(void) {
    sim_network_model m = SIM_NETWORK_LV08;
    CU_ASSERT_EQUAL(sim_network_model_parse("--network-model", "smpi", &m), SS_OK);
    CU_ASSERT_EQUAL(m, SIM_NETWORK_SMPI);
    CU_ASSERT_STRING_EQUAL(sim_network_model_name(SIM_NETWORK_SMPI), "SMPI");
    CU_ASSERT_EQUAL(sim_network_model_parse("--network-model", "tcp-stream", &m), SS_OK);
    CU_ASSERT_EQUAL(m, SIM_NETWORK_STREAM);
    CU_ASSERT_STRING_EQUAL(sim_network_model_name(SIM_NETWORK_STREAM), "TCP-stream");
    CU_ASSERT_EQUAL(sim_network_model_parse("--network-model", "MPI", &m), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "SMPI"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "TCP-stream"));
}

/* One flow of B bytes (a worker pushing to a server) on either side of every threshold:
 * route latency x lat(B) + B / (bw x bw(B)). */
static void test_single_flow(void) {
    char p[64];
    CU_ASSERT_EQUAL_FATAL(net_star_write("test_smpi", 1, 1, 1, BW_BPS, LAT_S, p, sizeof p), SS_OK);
    static const double sizes[] = {100,   256,   257,   1000,  2000,  4000,  6000, 9000,
                                   12000, 15423, 15424, 40000, 65471, 65472, 1e6};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const int r = row_of(sizes[i]);
        const double closed =
            ROUTE_LAT_S * smpi_table[r].lat + sizes[i] * 8 / (BW_BPS * smpi_table[r].bw);
        const double t = net_star_run_s(p, 1, sizes[i], SIM_NETWORK_SMPI, BENCH_INCAST);
        if (fabs(t - closed) > 1e-9 * closed)
            fprintf(stderr, "\n  %g B: %.9g s, closed form %.9g s", sizes[i], t, closed);
        SS_CHECK_CLOSE(t, closed, 1e-12, 1e-9);
    }
    /* a small message pays about twice the route latency, not LV08's 13.01 times */
    const double lv08 = net_star_run_s(p, 1, 100, SIM_NETWORK_LV08, BENCH_INCAST);
    SS_CHECK_CLOSE(lv08, ROUTE_LAT_S * 13.01 + 100 * 8 / (BW_BPS * 0.97), 1e-12, 1e-9);
    CU_ASSERT(net_star_run_s(p, 1, 100, SIM_NETWORK_SMPI, BENCH_INCAST) < lv08 / 5);
    remove(p);
}

/* The closed forms stand for the message-level algorithms under SMPI too: ring-coarse for the
 * ring on a flat star, hier-coarse for hier on nodes with a TCP NIC, within 1 % from messages of
 * a few bytes per hop (latency-bound, factors of the small rows) to hundreds of kilobytes. */
static void test_coarse_matches(void) {
    char p[64];
    CU_ASSERT_EQUAL_FATAL(net_star_write("test_smpi", 8, 0, 1, BW_BPS, LAT_S, p, sizeof p), SS_OK);
    static const double sizes[] = {64, 4096, 40000, 131072, 1048576, 16777216};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double ring = net_star_run_s(p, 8, sizes[i], SIM_NETWORK_SMPI, SIM_ALLREDUCE_RING);
        double coarse = net_star_run_s(p, 8, sizes[i], SIM_NETWORK_SMPI, SIM_ALLREDUCE_RING_COARSE);
        if (fabs(coarse / ring - 1) > 0.01)
            fprintf(stderr, "\n  ring %g B: %.6g s, coarse %.6g s", sizes[i], ring, coarse);
        SS_CHECK_CLOSE(coarse, ring, 0, 0.01);
    }
    remove(p);
    const char *nodes = SS_SOURCE_DIR "/traces/reference/nccl/tcp-8x4-rtx2080ti-10gbe/platform.xml";
    /* with each protocol: under LL (rates capped at a quarter) the closed form drifts up to
     * 3.3 % from 384 KiB to 1 MiB on this platform, whose four GPUs share one NIC: the capped
     * messages fill it exactly and the cross-traffic of LV08 slows them, while the merged flow,
     * of another SMPI factor, stays just below (docs/NETWORK.md, "Collectives"): bound 4 % there */
    static const double hier_sizes[] = {4, 16384, 65536, 262144, 393216, 1048576, 4194304};
    for (size_t i = 0; i < sizeof hier_sizes / sizeof hier_sizes[0]; i++) {
        for (int q = SIM_PROTOCOL_LL; q <= SIM_PROTOCOL_SIMPLE; q += 2) {
            double hier, coarse, wall;
            CU_ASSERT_EQUAL(bench_network_allreduce_protocol(
                                nodes, 32, hier_sizes[i], SIM_NETWORK_SMPI, SIM_ALLREDUCE_HIER,
                                (sim_nccl_protocol)q, &hier, &wall, NULL),
                            SS_OK);
            CU_ASSERT_EQUAL(
                bench_network_allreduce_protocol(nodes, 32, hier_sizes[i], SIM_NETWORK_SMPI,
                                                 SIM_ALLREDUCE_HIER_COARSE, (sim_nccl_protocol)q,
                                                 &coarse, &wall, NULL),
                SS_OK);
            const double bound = q == SIM_PROTOCOL_LL ? 0.04 : 0.01;
            if (fabs(coarse / hier - 1) > bound)
                fprintf(stderr, "\n  hier %g B (%s): %.6g s, coarse %.6g s", hier_sizes[i],
                        sim_nccl_protocol_name((sim_nccl_protocol)q), hier, coarse);
            SS_CHECK_CLOSE(coarse, hier, 0, bound);
        }
    }
}

/* TCP-stream: one flow below 65472 bytes takes SMPI's time to the bit; from there the route
 * latency once and the payload share of a 1500-byte frame, 1448/1538, of the bandwidth. */
static void test_stream_single_flow(void) {
    char p[64];
    CU_ASSERT_EQUAL_FATAL(net_star_write("test_stream", 1, 1, 1, BW_BPS, LAT_S, p, sizeof p),
                          SS_OK);
    static const double below[] = {100, 9000, 15424, 65471};
    for (size_t i = 0; i < sizeof below / sizeof below[0]; i++)
        CU_ASSERT(net_star_run_s(p, 1, below[i], SIM_NETWORK_STREAM, BENCH_INCAST) ==
                  net_star_run_s(p, 1, below[i], SIM_NETWORK_SMPI, BENCH_INCAST));
    static const double above[] = {65472, 1e6, 1e8};
    for (size_t i = 0; i < sizeof above / sizeof above[0]; i++) {
        const double closed = ROUTE_LAT_S + above[i] * 8 / (BW_BPS * 1448.0 / 1538.0);
        SS_CHECK_CLOSE(net_star_run_s(p, 1, above[i], SIM_NETWORK_STREAM, BENCH_INCAST), closed,
                       1e-12, 1e-9);
    }
    remove(p);
}

/* Under TCP-stream the closed forms still stand for the message-level algorithms: ring-coarse
 * for the ring on a star, hier-coarse for hier (Simple) on the TCP reference's nodes, within 1 %
 * on both sides of the 64 KiB switch. */
static void test_stream_coarse_matches(void) {
    char p[64];
    CU_ASSERT_EQUAL_FATAL(net_star_write("test_stream", 8, 0, 1, BW_BPS, LAT_S, p, sizeof p),
                          SS_OK);
    static const double sizes[] = {4096, 262144, 1048576, 16777216};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double ring = net_star_run_s(p, 8, sizes[i], SIM_NETWORK_STREAM, SIM_ALLREDUCE_RING);
        double coarse =
            net_star_run_s(p, 8, sizes[i], SIM_NETWORK_STREAM, SIM_ALLREDUCE_RING_COARSE);
        if (fabs(coarse / ring - 1) > 0.01)
            fprintf(stderr, "\n  ring %g B: %.6g s, coarse %.6g s", sizes[i], ring, coarse);
        SS_CHECK_CLOSE(coarse, ring, 0, 0.01);
    }
    remove(p);
    const char *nodes = SS_SOURCE_DIR "/traces/reference/nccl/tcp-8x4-rtx2080ti-10gbe/platform.xml";
    static const double hier_sizes[] = {65536, 2097152, 16777216};
    for (size_t i = 0; i < sizeof hier_sizes / sizeof hier_sizes[0]; i++) {
        double hier, coarse, wall;
        CU_ASSERT_EQUAL(bench_network_allreduce_protocol(nodes, 32, hier_sizes[i],
                                                         SIM_NETWORK_STREAM, SIM_ALLREDUCE_HIER,
                                                         SIM_PROTOCOL_SIMPLE, &hier, &wall, NULL),
                        SS_OK);
        CU_ASSERT_EQUAL(bench_network_allreduce_protocol(
                            nodes, 32, hier_sizes[i], SIM_NETWORK_STREAM, SIM_ALLREDUCE_HIER_COARSE,
                            SIM_PROTOCOL_SIMPLE, &coarse, &wall, NULL),
                        SS_OK);
        if (fabs(coarse / hier - 1) > 0.01)
            fprintf(stderr, "\n  hier %g B: %.6g s, coarse %.6g s", hier_sizes[i], hier, coarse);
        SS_CHECK_CLOSE(coarse, hier, 0, 0.01);
    }
}

/* Routes without TCP (InfiniBand, NVLink, PCIe) take the same factors as under LV08: the same
 * times to the bit; and on a TCP route large messages differ from LV08 only by the two
 * models' large-message factors. */
static void test_non_tcp_untouched(void) {
    const char *ib = SS_SOURCE_DIR "/traces/reference/nccl/ib-8x4-rtx2080ti-edr/platform.xml";
    const char *nv = SS_SOURCE_DIR "/traces/reference/nccl/nvlink-2x-rtx2080ti/platform.xml";
    CU_ASSERT(net_star_run_s(ib, 32, 1e6, SIM_NETWORK_SMPI, SIM_ALLREDUCE_RING) ==
              net_star_run_s(ib, 32, 1e6, SIM_NETWORK_LV08, SIM_ALLREDUCE_RING));
    CU_ASSERT(net_star_run_s(nv, 2, 4096, SIM_NETWORK_SMPI, SIM_ALLREDUCE_RING) ==
              net_star_run_s(nv, 2, 4096, SIM_NETWORK_LV08, SIM_ALLREDUCE_RING));
}

static CU_TestInfo smpi_tests[] = {
    {"sim_network_model_parse SMPI, TCP-stream", test_parse},
    {"SMPI single flow vs latency x lat(B) + B / (bw x bw(B)) at every threshold",
     test_single_flow},
    {"SMPI: ring-coarse = ring, hier-coarse = hier within 1 % (LL: 4 %)", test_coarse_matches},
    {"SMPI = LV08 on InfiniBand and NVLink routes", test_non_tcp_untouched},
    {"TCP-stream single flow: SMPI below 64 KiB, latency + B / (bw x 1448/1538) above",
     test_stream_single_flow},
    {"TCP-stream: ring-coarse = ring, hier-coarse = hier within 1 %", test_stream_coarse_matches},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"network models SMPI and TCP-stream", NULL, NULL, NULL, NULL, smpi_tests},
        CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
