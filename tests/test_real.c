/* syncsim real: the policies on real MPI processes (loopback TCP) against their emulation. The
 * two differ only by the order of floating-point sums (MPI's all-reduce against the emulation's
 * mean), so the same seed and configuration must give the same decisions, the same injected
 * samples, the same bytes and accuracies within 0.3 percentage points; SSP's staleness follows
 * real timing, so only its bytes and its completion are compared. Bad input: outside mpirun, a
 * rank count that does not match, DLCP. */
#include "ss_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYNCSIM SS_BINARY_DIR "/syncsim"
/* Loopback only: a testbed bridge that comes and goes beside the run (this suite's validate real,
 * or another one on the machine) must not be taken for one of the ranks' interfaces.
 * OpenMPI keeps much of its state until exit, some of it in modules it has unloaded by then,
 * which no LeakSanitizer suppression can name: the ranks of the sanitizer build check memory
 * errors but not leaks (the emulated runs beside them check both). */
#define MPIRUN                                                                                     \
    "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 mpirun --allow-run-as-root --oversubscribe --mca "  \
    "btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo "
#define COMMON_REST " --progress no --device cpu "
#define COMMON      " --epochs 0.05" COMMON_REST

static char tmp_dir[256];

static int have_mpirun(void) {
    return ss_test_shell("command -v mpirun >/dev/null 2>&1", NULL) == 0;
}

/* A number after `key` in summary.json (key given with its quotes and colon). */
static double summary_number(const char *dir, const char *key) {
    char path[512];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = strstr(text, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* Runs `policy_args` for real on `ranks` ranks and emulated; both must succeed. */
static void run_pair_epochs(const char *name, int ranks, const char *policy_args,
                            const char *epochs, char *real_dir, char *emu_dir, size_t n) {
    snprintf(real_dir, n, "%s/%s-real", tmp_dir, name);
    snprintf(emu_dir, n, "%s/%s-emu", tmp_dir, name);
    char cmd[2048];
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             MPIRUN "-np %d " SYNCSIM " real %s --epochs %s" COMMON_REST "--out %s 2>&1", ranks,
             policy_args, epochs, real_dir);
    int rc = ss_test_shell(cmd, &out);
    if (rc != 0) fprintf(stderr, "\n%s\n%s\n", cmd, out);
    CU_ASSERT_EQUAL(rc, 0);
    free(out);
    snprintf(cmd, sizeof cmd, SYNCSIM " train %s --epochs %s" COMMON_REST "--out %s 2>&1",
             policy_args, epochs, emu_dir);
    rc = ss_test_shell(cmd, &out);
    if (rc != 0) fprintf(stderr, "\n%s\n%s\n", cmd, out);
    CU_ASSERT_EQUAL(rc, 0);
    free(out);
}

static void run_pair(const char *name, int ranks, const char *policy_args, char *real_dir,
                     char *emu_dir, size_t n) {
    run_pair_epochs(name, ranks, policy_args, "0.05", real_dir, emu_dir, n);
}

static void check_same_run(const char *name, int ranks, const char *policy_args) {
    if (!have_mpirun()) SS_SKIP("mpirun not found");
    char real[512], emu[512];
    run_pair(name, ranks, policy_args, real, emu, sizeof real);
    double acc_r = summary_number(real, "\"test_accuracy\":");
    double acc_e = summary_number(emu, "\"test_accuracy\":");
    CU_ASSERT_TRUE(acc_r > 0.3);
    CU_ASSERT_TRUE(fabs(acc_r - acc_e) <= 0.003);
    CU_ASSERT_EQUAL(summary_number(real, "\"sync_steps\":"),
                    summary_number(emu, "\"sync_steps\":"));
    SS_CHECK_CLOSE(summary_number(real, "\"bytes_sent\":"), summary_number(emu, "\"bytes_sent\":"),
                   1e-9, 1);
    CU_ASSERT_TRUE(summary_number(real, "\"sim_time_s\":") > 0);
    /* the trace says where it came from, and holds every worker's steps */
    char cmd[2600];
    char *out = NULL;
    snprintf(cmd, sizeof cmd,
             "grep -c '^# meta source = real' %s/steps.trace; grep -vc '^#' %s/steps.trace; "
             "grep -vc '^#' %s/steps.trace; grep -c '\"mode\":.*\"real\"' %s/summary.json",
             real, real, emu, real);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
    int src = 0, rec_r = -1, rec_e = -2, mode = 0;
    CU_ASSERT_EQUAL(sscanf(out, "%d %d %d %d", &src, &rec_r, &rec_e, &mode), 4);
    CU_ASSERT_EQUAL(src, 1);
    CU_ASSERT_EQUAL(rec_r, rec_e);
    CU_ASSERT_EQUAL(mode, 1);
    free(out);
}

static void test_bsp_equals_emulation(void) {
    check_same_run("bsp", 4, "--policy bsp --workers 4");
}

/* Injection: every rank draws every worker's batches in step, so a receiver takes the samples
 * the sender computes; decisions, sample counts and accuracy match the emulation. */
static void test_selsync_injection_equals_emulation(void) {
    check_same_run(
        "selsync", 4,
        "--policy selsync --workers 4 --partition noniid:3 --inject-alpha 0.5 --inject-beta 0.25");
}

/* --overlap on: each bucket's MPI_Iallreduce starts from the backward pass's hook, on its slice
 * of the gradient; the slices' sums make the same model as the emulation's whole-vector mean
 * (the mlp in two buckets; the cnn, with its fused conv -> ReLU -> max-pool block, in three). */
static void test_overlap_equals_emulation(void) {
    check_same_run("overlap-mlp", 4, "--policy bsp --workers 4 --overlap on --bucket-mb 0.25");
    /* the cnn's hooks are test_kernels' too; its runs take minutes under the sanitizers */
#ifndef __SANITIZE_ADDRESS__
    check_same_run("overlap-cnn", 4,
                   "--model cnn --policy bsp --workers 4 --overlap on --bucket-mb 0.05");
#endif
}

/* Sampled clients, their own group, and the broadcast of the sum to the others. */
static void test_fedavg_clients_equals_emulation(void) {
    check_same_run("fedavg", 4,
                   "--policy fedavg --workers 4 --local-steps 4 --client-fraction 0.5");
}

/* DS-Sync's pairs make their groups alone, concurrently. */
static void test_dssync_equals_emulation(void) {
    check_same_run("dssync", 4, "--policy dssync --workers 4");
}

/* BSP through two synchronous server ranks: each server sums the round's pushes and every pull
 * gets the sum. */
static void test_bsp_ps_equals_emulation(void) {
    check_same_run("bspps", 6, "--policy bsp --workers 4 --collective ps --ps-servers 2");
}

/* One worker and two server ranks: no race, so the sharded servers' updates and the pulls give
 * exactly the emulation's model. */
static void test_ssp_one_worker_equals_emulation(void) {
    check_same_run("ssp1", 3, "--policy ssp --workers 1 --ps-servers 2");
}

/* SSP on 4 workers and a server rank: it completes, the server's model learns, the bytes are
 * those of the emulation (every step pushes and pulls the whole model). The updates' order is the
 * machine's, so the accuracy varies: after 0.05 epochs 0.35 to 0.62 over 12 runs on 2 cores kept
 * busy by 3 other processes, 0.38 to 0.62 on one core or beside 2 busy processes, and under 0.2
 * once in a sanitizer build's suite; after 0.1 epochs (the same 3 s a run: MPI's start) 0.51 to
 * 0.64 on one core. 0.2 is twice chance. */
static void test_ssp_with_server(void) {
    if (!have_mpirun()) SS_SKIP("mpirun not found");
    char real[512], emu[512];
    run_pair_epochs("ssp", 5, "--policy ssp --workers 4 --staleness 2", "0.1", real, emu,
                    sizeof real);
    const double acc = summary_number(real, "\"test_accuracy\":");
    if (!(acc > 0.2))
        fprintf(stderr, "\n  ssp with a server rank: test accuracy %g, test loss %g, clock gap %g",
                acc, summary_number(real, "\"test_loss\":"),
                summary_number(real, "\"staleness_max_clock_gap\":"));
    CU_ASSERT_TRUE(acc > 0.2);
    SS_CHECK_CLOSE(summary_number(real, "\"bytes_sent\":"), summary_number(emu, "\"bytes_sent\":"),
                   1e-9, 1);
    CU_ASSERT_TRUE(summary_number(real, "\"staleness_max_clock_gap\":") <= 2);
}

/* --device cuda: the replicas' vectors are managed memory that MPI (without CUDA support) sends
 * and receives in place. With a GPU, BSP and SSP with a server rank run on it and BSP equals its
 * emulation on the CPU; without one, the run stops with the device's reason (exit 1) and
 * writes nothing. */
static void test_device_cuda(void) {
    if (!have_mpirun()) SS_SKIP("mpirun not found");
    const char *opts = " --epochs 0.05 --progress no --device cuda ";
    char cmd[2048], dir[512];
    char *out = NULL;
    snprintf(dir, sizeof dir, "%s/cuda-bsp", tmp_dir);
    snprintf(cmd, sizeof cmd,
             MPIRUN "-np 4 " SYNCSIM " real --policy bsp --workers 4%s--out %s 2>&1", opts, dir);
    int rc = ss_test_shell(cmd, &out);
    if (rc != 0 && !(rc == 1 && strstr(out, "no usable GPU")))
        fprintf(stderr, "\n%s\n%s\n", cmd, out);
    if (rc == 1 && strstr(out, "no usable GPU")) {
        free(out);
        snprintf(cmd, sizeof cmd, "test ! -e %s/summary.json", dir);
        CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
        SS_SKIP("no usable GPU: checked only that real --device cuda stops cleanly");
    }
    CU_ASSERT_EQUAL(rc, 0);
    free(out);
    char emu[512];
    snprintf(emu, sizeof emu, "%s/cuda-bsp-emu", tmp_dir);
    snprintf(cmd, sizeof cmd, SYNCSIM " train --policy bsp --workers 4" COMMON "--out %s 2>&1",
             emu);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    double acc_r = summary_number(dir, "\"test_accuracy\":");
    CU_ASSERT_TRUE(acc_r > 0.3);
    CU_ASSERT_TRUE(fabs(acc_r - summary_number(emu, "\"test_accuracy\":")) <= 0.003);
    SS_CHECK_CLOSE(summary_number(dir, "\"bytes_sent\":"), summary_number(emu, "\"bytes_sent\":"),
                   1e-9, 1);
    snprintf(cmd, sizeof cmd, "grep -c '\"device\":.*\"cuda' %s/summary.json", dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    snprintf(dir, sizeof dir, "%s/cuda-ssp", tmp_dir);
    snprintf(cmd, sizeof cmd,
             MPIRUN "-np 5 " SYNCSIM " real --policy ssp --workers 4 --staleness 2%s--out %s 2>&1",
             opts, dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
    CU_ASSERT_TRUE(summary_number(dir, "\"test_accuracy\":") > 0.3);
}

static void expect_usage(const char *cmd, const char *needle) {
    char *out = NULL;
    int rc = ss_test_shell(cmd, &out);
    if (rc != 2 || !strstr(out, needle)) fprintf(stderr, "\n%s\n%s\n", cmd, out);
    CU_ASSERT_EQUAL(rc, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, needle));
    free(out);
}

static void test_bad_input(void) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, SYNCSIM " real --policy bsp --workers 4" COMMON "--out %s/bad 2>&1",
             tmp_dir);
    expect_usage(cmd, "mpirun");
    if (!have_mpirun()) SS_SKIP("mpirun not found");
    snprintf(cmd, sizeof cmd,
             MPIRUN "-np 3 " SYNCSIM " real --policy bsp --workers 4" COMMON "--out %s/bad 2>&1",
             tmp_dir);
    expect_usage(cmd, "needs 4");
    snprintf(cmd, sizeof cmd,
             MPIRUN "-np 4 " SYNCSIM " real --policy bsp --workers 4 --loss-tolerance 0.1" COMMON
                    "--out %s/bad 2>&1",
             tmp_dir);
    expect_usage(cmd, "DLCP");
    snprintf(cmd, sizeof cmd, "test ! -e %s/bad/summary.json", tmp_dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
}

/* Whether this process may build the testbed: root, ip and tc, a namespace it can create. */
static int can_build_testbed(void) {
    return ss_test_shell("[ \"$(id -u)\" = 0 ] && command -v tc >/dev/null && "
                         "ip netns add sstbprobe$$ 2>/dev/null && ip netns del sstbprobe$$",
                         NULL) == 0;
}

/* validate real --policy P on 2 workers at 100 Mbit/s for a few dozen steps, on a testbed
 * instance of its own, into tmp_dir/vr-P: it runs (exit 0, or 1 past its bounds), prints
 * `needle`, and the shell check `csv_check` (of $f, its validate_real.csv) holds. */
static void validate_small(const char *policy, const char *extra, const char *needle,
                           const char *csv_check) {
    char cmd[1024], *out = NULL;
    snprintf(
        cmd, sizeof cmd,
        "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 SYNCSIM_TESTBED_NAME=ssvalidatetest " SYNCSIM
        " validate real --policy %s --workers 2 --bandwidth 100Mbps --epochs 0.02 %s --out "
        "%s/vr-%s 2>&1",
        policy, extra, tmp_dir, policy);
    int rc = ss_test_shell(cmd, &out);
    if ((rc != 0 && rc != 1) || !out || !strstr(out, needle))
        fprintf(stderr, "\n%s\n%s\n", cmd, out ? out : "");
    CU_ASSERT_TRUE(rc == 0 || rc == 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, needle));
    free(out);
    snprintf(
        cmd, sizeof cmd,
        "f=%s/vr-%s/validate_real.csv; %s && test ! -e /run/syncsim-testbed/ssvalidatetest/state",
        tmp_dir, policy, csv_check);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, NULL), 0);
}

/* validate real, small: BSP writes one row per network model, finds the real accuracy equal to
 * the emulation's (both on the CPU, also where there is a GPU), and leaves no testbed behind; SSP
 * (a server rank beside the workers) is also predicted with message jitter and prints its clock
 * gaps. Time bounds are not asserted: a loaded CI machine's CPUs may set the real times. */
static void test_validate_real_small(void) {
    if (!have_mpirun()) SS_SKIP("mpirun not found");
    if (!can_build_testbed()) SS_SKIP("validate real needs root, tc and network namespaces");
    validate_small("bsp", "", "accuracy: real",
                   "test $(grep -c '^bsp,LV08,2,' $f) = 1 && test $(grep -c '^bsp,SMPI,2,' $f) = 1 "
                   "&& test $(grep -c '^bsp,ns-3,2,' $f) = 1 && "
                   "awk -F, 'NR > 1 { d = $15 < 0 ? -$15 : $15; if (d > 0.3) exit 1 }' $f && "
                   "grep -q '\"device\":.*\"cpu' $(dirname $f)/bsp/emulation/summary.json");
    validate_small("ssp", "", "clock gaps 0, 1, 2, ...: real [",
                   "test $(grep -c '^ssp,LV08+J0.2,2,' $f) = 1");
    /* overlap: the real run's buckets and the replay of its trace's layers; ns-3 left out */
    validate_small("bsp", "--overlap on --bucket-mb 0.1", "overlap on (buckets of 0.1 MiB)",
                   "test $(grep -c '^bsp,LV08,2,' $f) = 1 && test $(grep -c ',ns-3,' $f) = 0 "
                   "&& awk -F, 'NR > 1 { d = $15 < 0 ? -$15 : $15; if (d > 0.3) exit 1 }' $f");
}

/* validate real's verdict follows its figures, both ways. With OpenMPI's default eager limit
 * (64 KiB, set through OMPI_MCA_btl_tcp_eager_limit, which validate real then keeps) the 2-rank
 * ring sends its 538 KB messages by rendezvous, one direction after the other: about twice the
 * time the link needs (measured -46 % at 100 Mbit/s), so validate real reports the case OUTSIDE
 * the bounds and exits 1. With the eager limit validate real sets (the mlp's 1,077,288 bytes and
 * headers, in 4 KiB) the same case came within 2 % of LV08 at a load average of 9 on 2 cores,
 * its ranks at real-time priority: exit 0 where the scheduler grants that priority (at a
 * niceness only, other work on a loaded machine may delay the ranks past the bound). */
static void test_validate_real_bounds(void) {
    if (!have_mpirun()) SS_SKIP("mpirun not found");
    if (!can_build_testbed()) SS_SKIP("validate real needs root, tc and network namespaces");
    const char *const runs[2][2] = {{"off", "OMPI_MCA_btl_tcp_eager_limit=65536 "}, {"on", ""}};
    const int realtime = ss_test_shell("chrt --rr 1 true >/dev/null 2>&1", NULL) == 0;
    /* The rendezvous's cost is a real network's timing: once, on 2 cores loaded by another test
     * beside it, the run with the 64 KiB limit came within 3 % of LV08. Up to three tries of
     * that case, the last one asserted; a limit that never slows the ring fails all three. */
    int tries = 0;
    for (int i = 0; i < 2; i++) {
        char cmd[1024], *out = NULL;
        snprintf(cmd, sizeof cmd,
                 "ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 SYNCSIM_TESTBED_NAME=ssvalidatetest "
                 "%s" SYNCSIM
                 " validate real --policy bsp --workers 2 --bandwidth 100Mbps --epochs 0.03 --out "
                 "%s/vr-eager-%s 2>&1",
                 runs[i][1], tmp_dir, runs[i][0]);
        const int rc = ss_test_shell(cmd, &out);
        const char *eager = out ? strstr(out, "--mca btl_tcp_eager_limit 1081344 ") : NULL;
        if (i == 0 && ++tries < 3 && (rc != 1 || !out || !strstr(out, "OUTSIDE the bounds"))) {
            fprintf(stderr, "\ntry %d of the 64 KiB limit came within the bounds; again\n", tries);
            snprintf(cmd, sizeof cmd, "rm -rf %s/vr-eager-off", tmp_dir);
            ss_test_shell(cmd, NULL);
            free(out);
            i--;
            continue;
        }
        if (i == 0) {
            if (rc != 1 || !out || !strstr(out, "OUTSIDE the bounds"))
                fprintf(stderr, "\n%s\n%s\n", cmd, out ? out : "");
            CU_ASSERT_EQUAL(rc, 1);
            CU_ASSERT_PTR_NOT_NULL(out ? strstr(out, "OUTSIDE the bounds") : NULL);
            CU_ASSERT_PTR_NULL(eager); /* the caller's limit kept */
            /* past the bound in the direction of the rendezvous (the real run slower): LV08's
             * time or comm error below -10 % (-42.7 and -42.4 % on a quiet machine; on a loaded
             * one the measured compute's share changes how much of it the time shows) */
            snprintf(cmd, sizeof cmd,
                     "awk -F, '$1 == \"bsp\" && $2 == \"LV08\" && ($8 < -0.1 || $11 < -0.1) "
                     "{ n++ } END { exit n != 1 }' %s/vr-eager-off/validate_real.csv",
                     tmp_dir);
            const int past = ss_test_shell(cmd, NULL) == 0;
            if (!past) {
                snprintf(cmd, sizeof cmd, "cat %s/vr-eager-off/validate_real.csv >&2", tmp_dir);
                ss_test_shell(cmd, NULL);
            }
            CU_ASSERT_TRUE(past);
        } else {
            if (!eager || (realtime && rc != 0)) fprintf(stderr, "\n%s\n%s\n", cmd, out ? out : "");
            CU_ASSERT_PTR_NOT_NULL(eager);
            CU_ASSERT_TRUE(rc == 0 || (!realtime && rc == 1));
            if (realtime) {
                CU_ASSERT_PTR_NOT_NULL(out ? strstr(out, "within the bounds") : NULL);
                CU_ASSERT_PTR_NOT_NULL(out ? strstr(out, "real-time priority (SCHED_RR 1)") : NULL);
            }
        }
        free(out);
    }
}

static int suite_init(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/ss_test_real_XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    return ss_test_shell(cmd, NULL) == 0 ? 0 : 1;
}

/* An interruption: SIGTERM to the ranks (what mpirun sends them on Ctrl-C) a few seconds into
 * a long run. Synchronous workers vote and stop at the same step, asynchronous ones on their own
 * (the server lets a stopped worker's clock go); rank 0 still writes every output, with status
 * "interrupted" and the last evaluation at the step they stopped at, and the run exits 130. */
static void check_interrupted(const char *policy, int ranks) {
    if (!have_mpirun()) SS_SKIP("mpirun not found");
    char dir[512], cmd[4096];
    snprintf(dir, sizeof dir, "%s/interrupted-%s", tmp_dir, policy);
    /* the signal once rank 0's progress shows its worker past step 2, however long the start
     * took on a loaded machine (polled for up to 5 minutes) */
    snprintf(cmd, sizeof cmd,
             "(for i in $(seq 3000); do grep -Eq 'step ([3-9]|[1-9][0-9]+)/' %s.log 2>/dev/null "
             "&& break; sleep 0.1; done; pkill -TERM -f '^" SYNCSIM " real .*--out %s$') & " MPIRUN
             "-np %d " SYNCSIM
             " real --policy %s --workers 4 --epochs 100 --progress yes --device cpu --out %s "
             ">%s.log 2>&1; rc=$?; wait; exit $rc",
             dir, dir, ranks, policy, dir, dir);
    int rc = ss_test_shell(cmd, NULL);
    if (rc != 130) {
        char log[600];
        snprintf(log, sizeof log, "cat %s.log >&2", dir);
        ss_test_shell(log, NULL);
    }
    CU_ASSERT_EQUAL(rc, 130);
    char status[64] = "";
    snprintf(cmd, sizeof cmd, "grep -o '\"status\":[^,]*' %s/summary.json", dir);
    char *out = NULL;
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
    if (out) snprintf(status, sizeof status, "%s", out);
    free(out);
    CU_ASSERT_PTR_NOT_NULL(strstr(status, "interrupted"));
    const double steps = summary_number(dir, "\"steps\":");
    CU_ASSERT_TRUE(steps > 1 && steps < 100 * 60000 / 256); /* stopped, before the end */
    /* metrics.csv ends with the evaluation of that step */
    snprintf(cmd, sizeof cmd, "tail -1 %s/metrics.csv | cut -d, -f1", dir);
    CU_ASSERT_EQUAL(ss_test_shell(cmd, &out), 0);
    CU_ASSERT_EQUAL(out ? atof(out) : -1, steps);
    free(out);
    CU_ASSERT_TRUE(summary_number(dir, "\"lssr\":") >= 0);
}

static void test_interrupted_bsp(void) {
    check_interrupted("bsp", 4);
}

static void test_interrupted_ssp(void) {
    check_interrupted("ssp", 5);
}

static CU_TestInfo real_tests[] = {
    {"syncsim real: outside mpirun, wrong rank count, DLCP: exit 2", test_bad_input},
    {"syncsim real: bsp equals its emulation", test_bsp_equals_emulation},
    {"syncsim real: bsp interrupted by SIGTERM writes its outputs, exit 130", test_interrupted_bsp},
    {"syncsim real: ssp interrupted by SIGTERM writes its outputs, exit 130", test_interrupted_ssp},
    {"syncsim real: selsync with data injection equals its emulation",
     test_selsync_injection_equals_emulation},
    {"syncsim real: fedavg with sampled clients equals its emulation",
     test_fedavg_clients_equals_emulation},
    {"syncsim real: dssync equals its emulation", test_dssync_equals_emulation},
    {"syncsim real: bsp with --overlap on equals its emulation", test_overlap_equals_emulation},
    {"syncsim real: bsp through two server ranks equals its emulation",
     test_bsp_ps_equals_emulation},
    {"syncsim real: ssp, one worker and two server ranks, equals its emulation",
     test_ssp_one_worker_equals_emulation},
    {"syncsim real: ssp with a server rank", test_ssp_with_server},
    {"syncsim real: --device cuda on a GPU, or a clean stop without one", test_device_cuda},
    {"syncsim validate real: a small case on the testbed", test_validate_real_small},
    {"syncsim validate real: exit 1 past the bounds (OpenMPI's rendezvous), 0 within them",
     test_validate_real_bounds},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"syncsim real over loopback MPI", suite_init, suite_clean, NULL, NULL, real_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
