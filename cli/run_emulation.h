/* One emulated training run from a resolved configuration: builds the platform (or reads the
 * given one), the cluster, the emulation and the policy, runs the simulation, and writes
 * OUT/{config.ini, platform.xml, metrics.csv, steps.trace, summary.json}. */
#ifndef SS_CLI_RUN_EMULATION_H
#define SS_CLI_RUN_EMULATION_H

#include "common/run_config.h"
#include "emu/dataset.h"
#include "kernels/model.h"
#include "sim/isolate.h"
#include "sim/platform_gen.h"

typedef struct run_summary {
    char status[16]; /* ok | diverged | interrupted */
    char policy[16];
    int workers;
    double test_accuracy; /* final, consensus model */
    double test_loss;
    double sim_time_s; /* simulated time of the whole run */
    double tta_s;      /* first simulated time at the target accuracy; < 0: never / no target */
    double lssr;
    long steps;
    long sync_steps;
    double bytes_sent;
    double compute_s, comm_s, wait_s; /* per worker, mean */
    double epochs;
    double wall_s;
} run_summary;

/* One point of the accuracy curve, as compare needs it. */
typedef struct run_curve_point {
    double sim_time_s;
    double test_accuracy;
} run_curve_point;

/* What every training command opens first: the device (--device; a fallback to the CPU is
 * announced on stderr), the data set (--dataset, --data-dir) and the model's spec for its shape
 * (--model). On failure nothing stays open: *dev is NULL and the data sets are empty. */
int run_open_data(const run_config *cfg, device **dev, dataset *train, dataset *test,
                  model_spec *spec);

/* Link latency of a generated platform when --latency is not given: the tier of the bandwidth
 * (platforms/README.md): <= 5 Gbps 25 us, <= 10 Gbps 15 us, <= 25 Gbps 10 us, <= 40 Gbps 5 us,
 * faster 1 us. */
double run_tier_latency_s(double bandwidth_bps);

/* The generated platform the options describe (--bandwidth, --latency, --topology, --gpu,
 * --gpu-efficiency), for n_hosts workers and n_ps servers; SS_EUSAGE naming a bad option. */
int run_platform_spec(const run_config *cfg, int n_hosts, int n_ps, platform_gen_spec *spec);

/* Runs in the current process (which must not have started SimGrid yet). If curve is not NULL,
 * the evaluations are appended to it as run_curve_point records. */
int run_emulation(const run_config *cfg, run_summary *sum, sim_blob *curve);

#endif
