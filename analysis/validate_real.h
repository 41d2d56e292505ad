/* syncsim validate real: syncsim's predictions against runs on a real network.
 *
 * For each policy it brings up the local testbed (scripts/testbed.sh: network namespaces on a
 * bridge, every link shaped with tc to `rate` and `delay`), runs the configuration for real
 * (mpirun ... syncsim real, one rank per worker and per parameter server), then predicts the
 * same run: the real run's trace replayed with its measured compute times (--compute trace) on
 * a star platform that describes the testbed (OUT/testbed-<model>.xml: each host's link at the
 * rate, split-duplex, with the delay), under the flow models (LV08, SMPI) and the packet-level
 * model (ns-3), and for SSP/ASP also under LV08 with message jitter (VALIDATE_REAL_PS_JITTER). It
 * prints measured vs predicted total time and mean communication time per synchronized step with
 * their relative errors, the wall time each prediction cost, for SSP/ASP the clock-gap histograms
 * of the real run and of each prediction, and the final accuracy of the real run against the
 * emulation of the same configuration (`syncsim train`).
 * The testbed is always brought down, also after a failure or an interruption.
 *
 * OUT/validate_real.csv: one row per (policy, network model; "LV08+J0.2" for the jittered one).
 * OUT/<policy>/{real,emulation,LV08,SMPI,ns-3,LV08-jitter}/: the runs; OUT/<policy>/commands.log:
 * what each command printed. */
#ifndef SS_ANALYSIS_VALIDATE_REAL_H
#define SS_ANALYSIS_VALIDATE_REAL_H

#include "common/run_config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct validate_real_opts {
    const char *exe;        /* the syncsim binary the runs use */
    const char *testbed;    /* scripts/testbed.sh */
    const char *out_dir;    /* OUT */
    const char *policies;   /* comma-separated, e.g. "bsp,selsync,ssp" */
    const char *collective; /* the synchronous policies' all-reduce: "ring", "hd" or "rd" */
    int workers;            /* N (SSP adds one parameter-server rank) */
    double rate_Bps;        /* testbed link rate, bytes/s (bits in tc's and the CSV's) */
    double delay_s;         /* testbed delay added on each link direction */
    const char *model;
    const char *dataset;
    const char *data_dir; /* "" : the default */
    double epochs;
    int batch;
    uint64_t seed;
    int ns3;           /* also predict with ns-3 */
    double ps_jitter;  /* > 0: SSP/ASP also predicted by LV08 with this --comm-jitter */
    double max_error;  /* bound on the better model's relative errors (time and comm) */
    double max_acc_pp; /* bound on |accuracy real - emulation|, percentage points */
    int overlap;       /* 1: --overlap on for the policies that take it (real run, emulation and
                          predictions), in buckets of bucket_mb MiB */
    double bucket_mb;
} validate_real_opts;

/* The message jitter (--comm-jitter CV) of the extra LV08 prediction of SSP/ASP runs. The flow
 * model shares a server's link evenly, so the workers' pushes end together and the pulls follow
 * in lockstep; real TCP's uneven shares stagger them and overlap pushes with pulls. A CV of 0.2
 * on every server message breaks that symmetry as the real runs do: over the seven SSP runs
 * measured on the testbed (mlp and cnn, 100 Mbit/s and 1 Gbit/s), LV08's median time error is
 * +5 % (-8 % to +17 %) with it and +40 % (-12 % to +59 %) without, and its clock gaps reach the
 * bound as the real runs' do; 0.1 gives +11 %, 0.3 +10 % (docs/REAL.md, "validate real"). */
#define VALIDATE_REAL_PS_JITTER 0.2

/* How the real runs' ranks are scheduled (as root), ahead of the host's other work, whose CPU use
 * would otherwise delay their exchanges (a rank waiting for a core holds up each all-reduce it is
 * in). Real-time round robin (chrt --rr VALIDATE_REAL_RT_PRIORITY) where the scheduler grants it
 * and the case does not overlap: a rank waiting in MPI calls sched_yield (mpi_yield_when_idle),
 * which under the kernel's fair scheduler hands the core to any other runnable task for a whole
 * slice, whatever the niceness. Measured on the 2-core VM at a load average of 5.5 to 10 from
 * other work: an all-reduce of 4 bytes after 1 ms of compute on 2 ranks took a median 2.0 to
 * 3.0 ms at niceness -10 and at -20, 14 us at real-time priority; SelSync's local steps (the
 * decision's flag) took 2.1 ms of communication at -10, 30 us real-time. Real-time ranks that
 * spin in MPI use the kernel's real-time budget (95 % of each second by default) and then stop
 * for the rest of that second (about 50 ms once a second). Otherwise niceness VALIDATE_REAL_NICE:
 * at a load average of 10 to 13, 2 workers, mlp, 1 Gbit/s, communication per synchronized step
 * was 0.034 s at niceness 0 and 0.024 s at -10, against 0.0098 s predicted. */
#define VALIDATE_REAL_RT_PRIORITY_TEXT "1"
#define VALIDATE_REAL_NICE             -10
#define VALIDATE_REAL_NICE_TEXT        "-10"

/* OpenMPI's TCP transport sends a message past its eager limit (64 KiB by default) by rendezvous:
 * the receiver acknowledges the first fragment before the rest follows. When two ranks send to
 * each other at once over their one TCP connection (a ring of 2 workers, whose left and right
 * neighbour are the same rank; the pairwise exchanges of hd and rd), each acknowledgement queues
 * behind the acknowledging rank's own data, and one direction waits for the other: OpenMPI's ring
 * all-reduce of the mlp's 1,077,288 bytes on 2 ranks of the testbed at 1 Gbit/s took a median
 * 15.9 ms where 8.6 ms move the bytes, 9.0 ms with the eager limit raised (docs/REAL.md). The
 * real runs of the synchronous policies therefore send every message of up to the model's
 * parameter bytes eagerly: validate_real_eager_limit(P bytes) is P plus OpenMPI's headers, in
 * 4 KiB, at least VALIDATE_REAL_EAGER_MIN; 0 past VALIDATE_REAL_EAGER_MAX (OpenMPI's default is
 * then kept: each rank keeps 8 eager buffers of that size, and more while messages wait). */
#define VALIDATE_REAL_EAGER_MIN (64u << 10)
#define VALIDATE_REAL_EAGER_MAX (16u << 20)
size_t validate_real_eager_limit(double param_bytes);

typedef struct validate_real_result {
    int cases;
    int within; /* 1: every case within the bounds */
} validate_real_result;

/* SS_EUSAGE when the testbed cannot be brought up (not root, no tc, no namespaces), with the
 * script's message; SS_EIO when a run fails (its log named). */
int validate_real(const validate_real_opts *o, FILE *out, validate_real_result *res);
/* The cores this process may run on (its CPU affinity), at least 1. */
int validate_real_host_cores(void);

/* The case a host with `cores` cores runs faithfully, from the requested policies and workers:
 * every rank (a worker, and an SSP/ASP server) needs a core of its own, or the real run's
 * communication waits for the CPU (the kernel's network processing shares it too), which no
 * prediction models: 4 ranks on a 2-core VM measured up to 1.7 x slower at 1 Gbit/s
 * (docs/REAL.md). When the workers exceed the cores, the synchronous policies run on
 * max(2, cores) workers and SSP/ASP on cores - 1 beside their server, or are left out when that
 * is under 2. policies_out receives the policies kept (comma-separated), *workers_out the workers;
 * why (when not NULL) says what changed and why ("" when the request fits). 1 if changed. */
int validate_real_fit_host(int cores, const char *policies, int workers, char *policies_out,
                           size_t policies_size, int *workers_out, char *why, size_t why_size);

/* The same from the options of `syncsim validate real`: --policy (default bsp,selsync,ssp),
 * --workers, --bandwidth and --latency (the testbed's links), --model, --dataset, --epochs,
 * --batch, --seed, --collective (ring, hd or rd), --overlap and --bucket-mb (auto is off, as in
 * real mode); the bounds are 10 % and 0.3 pp; the binary is
 * this process's, the testbed script the source tree's scripts/testbed.sh unless SYNCSIM_TESTBED
 * names another. */
int validate_real_run(const run_config *cfg, FILE *out, validate_real_result *res);
/* validate_real_run; fit_host VALIDATE_REAL_FIT_CASE (neither --workers nor --policy given): on
 * a host with fewer cores than ranks, the case is fitted to its cores (validate_real_fit_host) and
 * the output says so; with VALIDATE_REAL_FIT_RATE too (no --bandwidth), the fitted case runs at
 * VALIDATE_REAL_FIT_BANDWIDTH: at 1 Gbit/s the 2 workers' exchanges of the mlp (538 KB a message,
 * 1 ms of compute between steps) start with a full token bucket on each testbed link (1 ms of
 * traffic at the rate, scripts/testbed.sh), and measured 8.2-8.4 ms of communication per
 * synchronized step against 9.4-9.5 ms predicted (+13 to +16 % for SelSync, whose local steps let
 * the bucket fill); at 100 Mbit/s 1 ms refills 12.5 KB of the 68 KiB bucket. 0: the case as given,
 * with a warning when its ranks share cores. */
#define VALIDATE_REAL_FIT_CASE           1
#define VALIDATE_REAL_FIT_RATE           2
#define VALIDATE_REAL_FIT_BANDWIDTH      "100Mbps"
#define VALIDATE_REAL_FIT_BANDWIDTH_TEXT "100 Mbit/s"
int validate_real_run_on_host(const run_config *cfg, int fit_host, FILE *out,
                              validate_real_result *res);

#endif
