#include "cli/options.h"
#include "common/ini_text.h"
#include "common/number.h"
#include "common/status.h"
#include "sim/collective.h"
#include "sim/gpu_table.h"
#include "sim/platform_gen.h"
#include "sim/policy_build.h"
#include "sim/policy_registry.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum opt_type {
    OPT_TYPE_U64,    /* unsigned 64-bit integer (seeds) */
    OPT_TYPE_INT,    /* int within [min, max] */
    OPT_TYPE_LONG,   /* long within [min, max] */
    OPT_TYPE_DOUBLE, /* finite real within [min, max] */
    OPT_TYPE_STRING, /* free text (paths, specs parsed by their module) */
    OPT_TYPE_CHOICE, /* one word of `choices` ("a|b|c") */
    OPT_TYPE_FLAG,   /* no value on the command line; true/false in INI */
    OPT_TYPE_AUTO    /* auto | yes | no  ->  -1 | 1 | 0 */
} opt_type;

typedef struct opt_def {
    const char *name;    /* long option without the dashes; also the INI key */
    opt_type type;       /* how the value is parsed */
    size_t offset;       /* target field in run_config */
    size_t size;         /* STRING/CHOICE: capacity of the target buffer */
    const char *def;     /* default, as text (NULL: none, empty string/0) */
    double min, max;     /* INT/LONG/DOUBLE: inclusive range */
    unsigned commands;   /* CMD_* bits of the subcommands that accept it */
    const char *choices; /* CHOICE: "a|b|c" */
    const char *metavar; /* shown in --help */
    const char *help;    /* one line */
    unsigned policies; /* policy bits (POL_SINGLE, POL_OF) of the policies it applies to; 0 = any */
} opt_def;

#define F(field) offsetof(run_config, field), sizeof(((run_config *)0)->field)
#define CMD_RUN  (CMD_TRAIN | CMD_COMPARE)
#define CMD_ALL                                                                                    \
    (CMD_TRAIN | CMD_COMPARE | CMD_PLATFORM | CMD_BENCH | CMD_REPLAY | CMD_SWEEP | CMD_REPORT |    \
     CMD_VALIDATE)

/* The policy bit of a policy_kind, and the masks over the registry's policies. */
#define POL_OF(kind)  (1u << ((unsigned)(kind) + 1))
#define POL_SIMULATED (((1u << POLICY_KIND_COUNT) - 1) << 1)

/* The one table: these rows, then the policy options of the registry (sim/policy_registry.h),
 * then tail_rows. Order is the order of --help and of config.ini. The last column limits a row
 * to some policies (0: any); setting such an option for another policy is an error. The rows
 * marked "registry" get their choices or default from the registry when the table is built. */
#define SIM POL_SIMULATED
static const opt_def head_rows[] = {
    {"help", OPT_TYPE_FLAG, F(help), NULL, 0, 0, CMD_ALL, NULL, "", "print this help and exit", 0},
    {"config", OPT_TYPE_STRING, F(config_file), "", 0, 0, CMD_RUN | CMD_REPLAY, NULL, "FILE",
     "read options from an INI file (e.g. a run's config.ini) before the command line", 0},
    {"seed", OPT_TYPE_U64, F(seed), "1", 0, 0, CMD_RUN | CMD_REPLAY | CMD_VALIDATE, NULL, "S",
     "seed of every random choice; the same seed gives the same run bit for bit", 0},
    {"out", OPT_TYPE_STRING, F(out_dir), "out", 0, 0,
     CMD_RUN | CMD_SWEEP | CMD_REPORT | CMD_REPLAY | CMD_BENCH | CMD_VALIDATE, NULL, "DIR",
     "output directory (created if needed; bench network: only when given)", 0},
    {"device", OPT_TYPE_CHOICE, F(device), "auto", 0, 0, CMD_RUN | CMD_BENCH, "auto|cpu|cuda", "D",
     "compute device; auto takes a usable GPU, else the CPU", 0},
    {"model", OPT_TYPE_STRING, F(model), "mlp", 0, 0, CMD_RUN | CMD_BENCH | CMD_VALIDATE, NULL, "M",
     "logreg | mlp | mlp:W1,W2,... (hidden widths) | cnn", 0},
    {"dataset", OPT_TYPE_STRING, F(dataset), "fashion-mnist", 0, 0,
     CMD_RUN | CMD_BENCH | CMD_VALIDATE, NULL, "NAME|PATH",
     "fashion-mnist | mnist | cifar10 | synthetic | a directory of IDX or CIFAR-10 files", 0},
    {"data-dir", OPT_TYPE_STRING, F(data_dir), "", 0, 0, CMD_RUN | CMD_BENCH | CMD_VALIDATE, NULL,
     "DIR", "directory of the named data set (default: its Debian package's directory)", 0},
    {"epochs", OPT_TYPE_DOUBLE, F(epochs), "5", 0.001, 10000, CMD_RUN | CMD_BENCH | CMD_VALIDATE,
     NULL, "E", "passes over the training set by all workers together (fractions allowed)", 0},
    {"batch", OPT_TYPE_INT, F(batch), "64", 1, 65536,
     CMD_RUN | CMD_BENCH | CMD_REPLAY | CMD_VALIDATE, NULL, "B", "mini-batch size per worker", 0},
    {"lr", OPT_TYPE_DOUBLE, F(lr), "0", 0, 100, CMD_RUN | CMD_BENCH, NULL, "X",
     "learning rate (0: one worker 0.01 logreg, else 0.02; several workers 0.05, cnn 0.02)", 0},
    {"momentum", OPT_TYPE_DOUBLE, F(momentum), "0.9", 0, 0.9999, CMD_RUN | CMD_BENCH, NULL, "X",
     "SGD momentum (0 = plain SGD)", 0},
    {"weight-decay", OPT_TYPE_DOUBLE, F(weight_decay), "0", 0, 1, CMD_RUN, NULL, "X",
     "L2 weight decay", 0},
    {"lr-schedule", OPT_TYPE_STRING, F(lr_schedule), "constant", 0, 0, CMD_RUN, NULL, "S",
     "constant | step[:EPOCHS[:GAMMA]] | cosine[:MIN_LR]", 0},
    {"eval-every", OPT_TYPE_LONG, F(eval_every), "0", 0, 1e12, CMD_RUN, NULL, "K",
     "evaluate the test set every K steps (0: once per epoch for one worker, ten times per "
     "epoch with several); always at the end",
     0},
    {"progress", OPT_TYPE_AUTO, F(progress), "auto", 0, 0, CMD_RUN | CMD_REPLAY, NULL,
     "auto|yes|no", "progress bar on stderr (auto: when stderr is a terminal)", 0},

    {"policy", OPT_TYPE_CHOICE, F(policy), "", 0, 0, CMD_TRAIN | CMD_REPLAY | CMD_VALIDATE,
     NULL /* registry */, "P",
     "synchronization policy; without it (and with one worker) train runs without simulation", 0},
    {"workers", OPT_TYPE_INT, F(workers), "1", 1, 4096, CMD_RUN | CMD_BENCH | CMD_VALIDATE, NULL,
     "N", "workers (each a SimGrid actor with a real replica)", 0},
    {"platform", OPT_TYPE_STRING, F(platform), "", 0, 0, CMD_TRAIN | CMD_REPLAY | CMD_BENCH, NULL,
     "FILE", "SimGrid platform file (default: a star cluster generated from the options below)",
     SIM},
    {"bandwidth", OPT_TYPE_STRING, F(bandwidth), "25Gbps", 0, 0,
     CMD_TRAIN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH | CMD_VALIDATE, NULL, "BW",
     "generated platform: link bandwidth (5Gbps, 100Gbps, 1.25GBps...)", SIM},
    {"latency", OPT_TYPE_STRING, F(latency), "tier", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH | CMD_VALIDATE, NULL, "T",
     "generated platform: link latency (5us, 1ms...; tier: by bandwidth, 25us at 5Gbps down to "
     "1us at 100Gbps)",
     SIM},
    {"topology", OPT_TYPE_CHOICE, F(topology), "star", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, "star|fat-tree", "T",
     "generated platform: topology", SIM},
    {"gpu", OPT_TYPE_CHOICE, F(gpu), "v100", 0, 0, CMD_RUN | CMD_PLATFORM | CMD_REPLAY, NULL, "G",
     "generated platform: GPU class (host speed = its FP32 FLOP/s)", SIM},
    {"network-model", OPT_TYPE_CHOICE, F(network_model), "LV08", 0, 0,
     CMD_RUN | CMD_REPLAY | CMD_BENCH | CMD_PLATFORM, "LV08|CM02|ns-3|SMPI|TCP-stream", "M",
     "SimGrid network model (CM02: plain flows; ns-3: packet-level TCP, stars only; SMPI: LV08 "
     "with size-dependent TCP factors; TCP-stream: SMPI's below 64 KiB, a warm stream's above)",
     SIM},
    {"collective", OPT_TYPE_CHOICE, F(collective), "ring", 0, 0,
     CMD_RUN | CMD_REPLAY | CMD_BENCH | CMD_VALIDATE, NULL /* sim/collective.h's, ps */, "C",
     "exchange of synchronous steps: all-reduce algorithm, or a parameter server", SIM},
    {"segment", OPT_TYPE_DOUBLE, F(segment_bytes), "0", 0, 1e12, CMD_RUN | CMD_REPLAY, NULL,
     "BYTES", "cut collective messages into segments of this size (0: whole)", SIM},
    {"channels", OPT_TYPE_INT, F(channels), "1", 1, 16, CMD_RUN | CMD_REPLAY, NULL, "C",
     "ring all-reduce: split the vector over C rings run at once (on nodes, through different "
     "GPUs and NICs, as NCCL's channels)",
     SIM},
    {"protocol", OPT_TYPE_CHOICE, F(protocol), "auto", 0, 0, CMD_RUN | CMD_REPLAY | CMD_BENCH,
     "auto|LL|LL128|Simple", "P", "NCCL protocol of auto, hier, hier-coarse, dbtree", SIM},
    {"ps-servers", OPT_TYPE_INT, F(ps_servers), "1", 1, 1024, CMD_RUN | CMD_REPLAY, NULL, "K",
     "parameter servers (shards) for ssp, asp or --collective ps", SIM},
    {"compute", OPT_TYPE_STRING, F(compute), "model", 0, 0, CMD_RUN | CMD_REPLAY, NULL, "MODE",
     "compute time: model (per-layer GPU model: FLOPs, memory traffic, launches) | flops "
     "(counted FLOPs on the host's speed) | measured[:SCALE] (train); replay --profile: model "
     "(where the profile has per-layer data) | flops",
     SIM},
    {"precision", OPT_TYPE_CHOICE, F(precision), "fp32", 0, 0, CMD_RUN | CMD_REPLAY,
     "fp32|tf32|fp16|bf16", "P",
     "--compute model: arithmetic precision (fp16/bf16: mixed precision on tensor cores)", SIM},
    {"compute-jitter", OPT_TYPE_STRING, F(compute_jitter), "auto", 0, 0, CMD_RUN, NULL, "CV",
     "CV of step compute times (auto: the model's measured CV, mlp 0.31, cnn 0.27; 0: none)", SIM},
    {"partition", OPT_TYPE_STRING, F(partition), "", 0, 0, CMD_RUN, NULL, "P",
     "defdp | seldp | seldp-perm | noniid:K (default: seldp for selsync, defdp otherwise)", SIM},
    {"target-accuracy", OPT_TYPE_DOUBLE, F(target_accuracy), "0", 0, 1, CMD_TRAIN, NULL, "A",
     "test accuracy whose first simulated time is reported as tta_s (0: none)", SIM},
    {"dump-gradients", OPT_TYPE_STRING, F(dump_gradients), "", 0, 0, CMD_TRAIN, NULL, "STEPS",
     "write a sample of each worker's gradient at these steps (comma-separated) to "
     "OUT/gradients/, for the report's density plots",
     SIM},
    {"trace", OPT_TYPE_FLAG, F(trace), "true", 0, 0, CMD_RUN, NULL, "",
     "write steps.trace (--trace=false to skip)", SIM},

};

static const opt_def tail_rows[] = {
    {"straggler-prob", OPT_TYPE_DOUBLE, F(straggler_prob), "0", 0, 1, CMD_RUN, NULL, "P",
     "stragglers: chance that a worker's step is slowed (seeded)", SIM},
    {"straggler-factor", OPT_TYPE_DOUBLE, F(straggler_factor), "2", 1, 1000, CMD_RUN, NULL, "F",
     "stragglers: slowdown of such a step", SIM},
    {"slow-workers", OPT_TYPE_STRING, F(slow_workers), "", 0, 0, CMD_RUN, NULL, "LIST",
     "stragglers: ranks of workers always slower (e.g. 0,5)", SIM},
    {"slow-factor", OPT_TYPE_DOUBLE, F(slow_factor), "2", 1, 1000, CMD_RUN, NULL, "F",
     "stragglers: how much slower --slow-workers compute", SIM},
    {"background", OPT_TYPE_DOUBLE, F(background_load), "0", 0, 1, CMD_RUN, NULL, "LOAD",
     "cross traffic: seeded random flows between hosts taking this fraction of link capacity", SIM},

    {"policies", OPT_TYPE_STRING, F(policies), NULL /* registry */, 0, 0, CMD_COMPARE, NULL, "LIST",
     "compare: policies to run", 0},
    {"networks", OPT_TYPE_STRING, F(networks), "5Gbps,100Gbps", 0, 0, CMD_COMPARE, NULL, "LIST",
     "compare: link bandwidths of generated clusters, or platform files", 0},
    {"jobs", OPT_TYPE_INT, F(jobs), "2", 1, 256, CMD_COMPARE | CMD_SWEEP, NULL, "J",
     "compare, sweep: runs at once (each in its own process)", 0},
    {"resume", OPT_TYPE_FLAG, F(resume), "false", 0, 0, CMD_SWEEP, NULL, "",
     "sweep: skip the points whose summary.json is complete; rerun the others", 0},
    {"shard", OPT_TYPE_STRING, F(shard), "", 0, 0, CMD_SWEEP, NULL, "I/K",
     "sweep: run only the points i with i mod K = I (0 <= I < K), for batch-scheduler arrays", 0},
    {"target-margin", OPT_TYPE_DOUBLE, F(target_margin), "0.005", 0, 1, CMD_REPORT, NULL, "X",
     "report: TTA target = BSP's final accuracy minus X (same platform, workers and seed)", 0},
    {"hosts", OPT_TYPE_INT, F(hosts), "16", 1, 65536, CMD_PLATFORM, NULL, "N",
     "platform: worker hosts", 0},
    {"ps", OPT_TYPE_INT, F(ps_hosts), "0", 0, 1024, CMD_PLATFORM, NULL, "K",
     "platform: parameter-server hosts (role=ps)", 0},
    {"gpu-efficiency", OPT_TYPE_DOUBLE, F(gpu_efficiency), "1", 1e-6, 1,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY, NULL, "F",
     "generated platform: host speed as a fraction of the GPU's peak FP32 FLOP/s", SIM},
    {"sizes", OPT_TYPE_STRING, F(bench_sizes), "8:1GiB:x2", 0, 0, CMD_BENCH, NULL, "LIST|B:E:xF",
     "bench network: message sizes in bytes, a list (1KiB,1GiB) or a range as nccl-tests' -b -e "
     "-f (8:1GiB:x2; B:E:+STEP adds); units K M G T = powers of 1024, KB MB GB TB = of 1000",
     0},
    {"hosts-list", OPT_TYPE_STRING, F(bench_hosts), "16,64,256,1024", 0, 0, CMD_BENCH, NULL, "LIST",
     "bench network --smpi, bench replay: host counts", 0},
    {"smpi", OPT_TYPE_FLAG, F(bench_smpi), "false", 0, 0, CMD_BENCH, NULL, "",
     "bench network: the ring against SMPI's MPI_Allreduce over --hosts-list at --bytes", 0},
    {"references", OPT_TYPE_STRING, F(validate_refs), "traces/reference/nccl", 0, 0, CMD_VALIDATE,
     NULL, "DIR", "validate network: directory of references (one subdirectory each)", 0},
    {"max-error-large", OPT_TYPE_DOUBLE, F(validate_max_large), "0.10", 0, 1000, CMD_VALIDATE, NULL,
     "X", "validate network: bound on the median relative error of sizes >= 1 MiB", 0},
    {"max-error-small", OPT_TYPE_DOUBLE, F(validate_max_small), "0.30", 0, 1000, CMD_VALIDATE, NULL,
     "X", "validate network: bound on the median relative error of sizes < 1 MiB", 0},
    {"throughputs", OPT_TYPE_STRING, F(validate_throughputs), "", 0, 0, CMD_VALIDATE, NULL, "CSV",
     "validate compute: throughputs, layer times (\"\": traces/reference/compute/throughputs.csv)",
     0},
    {"max-error", OPT_TYPE_DOUBLE, F(validate_max_error), "0.15", 0, 10, CMD_VALIDATE, NULL, "X",
     "validate compute: bound on the median relative error of the throughputs", 0},
    {"scaling-references", OPT_TYPE_STRING, F(validate_scaling), "", 0, 0, CMD_VALIDATE, NULL,
     "CSV", "validate scaling: published efficiencies (\"\": traces/reference/scaling/scaling.csv)",
     0},
    {"max-scaling-error", OPT_TYPE_DOUBLE, F(validate_scaling_max_error), "0.15", 0, 10,
     CMD_VALIDATE, NULL, "X",
     "validate scaling: bound on the median relative error of the efficiencies", 0},
    /* generated node platforms: multi-GPU servers (sim/platform_gen.h, platforms/README.md) */
    {"nodes", OPT_TYPE_INT, F(nodes), "0", 0, 8192, CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH,
     NULL, "N",
     "generated platform: servers of several GPUs each, filled in order (0: one GPU per host)",
     SIM},
    {"gpus-per-node", OPT_TYPE_INT, F(gpus_per_node), "0", 0, 1024,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, NULL, "G",
     "generated platform with --nodes: GPUs per server (0: workers, or --hosts, / --nodes)", SIM},
    {"nics-per-node", OPT_TYPE_INT, F(nics_per_node), "1", 1, 1024,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, NULL, "R",
     "generated platform with --nodes: NICs (rails) per server; GPU g uses NIC g*R/G", SIM},
    {"intra", OPT_TYPE_CHOICE, F(intra), "nvlink3", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, "nvlink3|nvlink4|pcie3|pcie4", "F",
     "generated platform with --nodes: GPU-to-GPU fabric inside a server (nvlink3 300GBps, "
     "nvlink4 450GBps, pcie3 15.75GBps, pcie4 31.5GBps per GPU and direction)",
     SIM},
    {"intra-bandwidth", OPT_TYPE_STRING, F(intra_bandwidth), "", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, NULL, "BW",
     "generated platform with --nodes: per-GPU intra-node bandwidth (default: --intra's)", SIM},
    {"intra-latency", OPT_TYPE_STRING, F(intra_latency), "", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, NULL, "T",
     "generated platform with --nodes: intra-node link latency (default: --intra's)", SIM},
    {"fabric", OPT_TYPE_CHOICE, F(fabric), "ethernet", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, "ethernet|infiniband|roce", "F",
     "generated platform with --nodes: what the NIC links are (LV08's TCP factors: ethernet only)",
     SIM},
    {"pcie-switch", OPT_TYPE_INT, F(pcie_switch), "0", 0, 1024,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH, NULL, "K",
     "generated PCIe nodes: GPUs per PCIe switch, sharing its uplink (0: none)", SIM},
    {"p2p", OPT_TYPE_CHOICE, F(p2p), "on", 0, 0, CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH,
     "on|off", "M", "with --pcie-switch: off: GPUs exchange via host memory (GeForce)", SIM},
    {"sizes", OPT_TYPE_STRING, F(bench_hosts), "16,64,256,1024", 0, 0, CMD_BENCH, NULL, "LIST",
     "bench network: host counts", 0},
    {"bytes", OPT_TYPE_DOUBLE, F(bench_bytes), "1e8", 1, 1e13, CMD_BENCH, NULL, "M",
     "bench network --smpi: all-reduce size in bytes", 0},
    {"max-smpi-hosts", OPT_TYPE_INT, F(max_smpi_hosts), "256", 0, 65536, CMD_BENCH, NULL, "N",
     "bench network --smpi, bench replay: run SMPI up to this many hosts (it is slow beyond)", 0},
    /* replay and trace (traces/FORMAT.md); "trace" and "workers" repeat names of train rows:
     * find_option_for() picks the row of the subcommand */
    {"trace", OPT_TYPE_STRING, F(replay_trace), "", 0, 0, CMD_REPLAY, NULL, "FILE",
     "replay: a recorded steps.trace (syncsim train writes OUT/steps.trace)", 0},
    {"profile", OPT_TYPE_STRING, F(replay_profile), "", 0, 0, CMD_REPLAY | CMD_BENCH, NULL,
     "NAME|FILE",
     "replay: synthesize the trace from a model profile (resnet101, vgg11, alexnet, transformer, "
     "or a .profile file)",
     0},
    {"import", OPT_TYPE_STRING, F(replay_import), "", 0, 0, CMD_REPLAY, NULL, "CSV",
     "replay: a per-step log of a real cluster (columns step,worker,compute_s,sync_s,decision)", 0},
    {"workers", OPT_TYPE_INT, F(replay_workers), "0", 0, 65536, CMD_REPLAY, NULL, "M",
     "replay: workers (0: as recorded; more than recorded scales out)", 0},
    {"steps", OPT_TYPE_LONG, F(replay_steps), "0", 0, 1e9, CMD_REPLAY | CMD_BENCH, NULL, "S",
     "replay: global steps (0: all recorded; 100 for --profile)", 0},
    {"scale-out", OPT_TYPE_CHOICE, F(replay_scale_out), "round-robin", 0, 0, CMD_REPLAY,
     "round-robin|sample", "HOW",
     "replay, more workers than recorded: worker j replays recorded worker j mod N, or a "
     "recorded worker drawn each step (seeded)",
     0},
    {"sync-fraction", OPT_TYPE_DOUBLE, F(replay_sync_fraction), "1", 0, 1, CMD_REPLAY, NULL, "F",
     "replay --profile --policy selsync: fraction of steps that synchronize (seeded draws)", 0},
    {"decisions", OPT_TYPE_STRING, F(replay_decisions), "", 0, 0, CMD_REPLAY, NULL, "FILE",
     "replay --profile --policy selsync: the per-step decisions of this recorded trace", 0},
    {"param-bytes", OPT_TYPE_DOUBLE, F(replay_param_bytes), "0", 0, 1e13, CMD_REPLAY, NULL, "B",
     "replay --import: bytes of one exchange (0: 4 x the parameters of --profile)", 0},
    {"record", OPT_TYPE_FLAG, F(replay_record), "false", 0, 0, CMD_REPLAY, NULL, "",
     "replay: write OUT/steps.trace of the replayed run", 0},
};
#undef SIM

/* Defaults that differ by subcommand: compare runs 8 workers unless --workers is given (one
 * worker has nothing to synchronize). Applied by options_parse and shown by --help. */
static const struct {
    const char *name;
    unsigned command;
    const char *def;
} command_defaults[] = {{"workers", CMD_COMPARE, "8"},
                        {"workers", CMD_VALIDATE, "4"},
                        {"bandwidth", CMD_VALIDATE, "1Gbps"},
                        {"latency", CMD_VALIDATE, "0s"},
                        {"epochs", CMD_VALIDATE, "0.2"}};
#define COMMAND_DEFAULTS ((int)(sizeof command_defaults / sizeof command_defaults[0]))

#define HEAD_ROWS ((int)(sizeof head_rows / sizeof head_rows[0]))
#define TAIL_ROWS ((int)(sizeof tail_rows / sizeof tail_rows[0]))

static opt_def options_table[RUN_CONFIG_MAX_OPTIONS];
static int options_count;
#define OPTIONS_COUNT options_count
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static run_config table_defaults; /* every options_parse() starts from them */
static int set_value(const opt_def *o, const char *text, run_config *cfg, const char *where);
static char policy_choices[256];                          /* "|bsp|ssp|..." */
static char compare_policies[RUN_CONFIG_TEXT];            /* compare's default --policies */
static char enum_choices[RUN_CONFIG_POLICY_OPTIONS][256]; /* "a|b|c" of an ENUM option */
static char collective_choices[128]; /* the all-reduce algorithms (sim/collective.h), and ps */

/* The row of policy option k: its slot in run_config, and the policies whose row lists it. */
static opt_def policy_option_row(int k) {
    static const opt_type types[] = {
        [POLICY_OPTION_INT] = OPT_TYPE_INT,         [POLICY_OPTION_LONG] = OPT_TYPE_LONG,
        [POLICY_OPTION_DOUBLE] = OPT_TYPE_DOUBLE,   [POLICY_OPTION_ENUM] = OPT_TYPE_CHOICE,
        [POLICY_OPTION_DURATION] = OPT_TYPE_STRING, [POLICY_OPTION_THRESHOLD] = OPT_TYPE_STRING};
    const policy_option *o = policy_option_at(k);
    opt_def row = {o->name,
                   types[o->type],
                   offsetof(run_config, policy_options) + (size_t)k * sizeof(run_policy_value),
                   sizeof(run_policy_value),
                   o->def,
                   o->min,
                   o->max,
                   CMD_RUN | (o->replay & 1 ? CMD_REPLAY : 0u) |
                       (o->replay & 2 ? CMD_VALIDATE : 0u),
                   NULL,
                   o->metavar,
                   o->help,
                   0};
    if (o->type == POLICY_OPTION_ENUM) {
        size_t len = 0;
        for (int i = 0; o->names[i].name; i++)
            len += (size_t)snprintf(enum_choices[k] + len, sizeof enum_choices[k] - len, "%s%s",
                                    i ? "|" : "", o->names[i].name);
        row.choices = enum_choices[k];
    }
    for (int i = 0; i < policy_registry_count(); i++)
        if (policy_option_applies(o, policy_registry_at(i)))
            row.policies |= POL_OF(policy_registry_at(i)->kind);
    return row;
}

static void table_build(void) {
    int n = 0;
    SS_ASSERT(HEAD_ROWS + policy_option_count() + TAIL_ROWS <= RUN_CONFIG_MAX_OPTIONS);
    SS_ASSERT(policy_option_count() <= RUN_CONFIG_POLICY_OPTIONS);
    policy_choices[0] = '|';
    policy_registry_names("|", policy_choices + 1, sizeof policy_choices - 1);
    policy_registry_compare_default(compare_policies, sizeof compare_policies);
    size_t len =
        strlen(sim_allreduce_algo_names("|", collective_choices, sizeof collective_choices));
    snprintf(collective_choices + len, sizeof collective_choices - len, "|ps");
    for (int i = 0; i < HEAD_ROWS; i++)
        options_table[n++] = head_rows[i];
    for (int k = 0; k < policy_option_count(); k++)
        options_table[n++] = policy_option_row(k);
    for (int i = 0; i < TAIL_ROWS; i++)
        options_table[n++] = tail_rows[i];
    for (int i = 0; i < n; i++) {
        if (!strcmp(options_table[i].name, "policy")) options_table[i].choices = policy_choices;
        if (!strcmp(options_table[i].name, "policies")) options_table[i].def = compare_policies;
        if (!strcmp(options_table[i].name, "collective"))
            options_table[i].choices = collective_choices;
        if (!strcmp(options_table[i].name, "gpu")) options_table[i].choices = gpu_table_choices();
    }
    options_count = n;
    for (int i = 0; i < n; i++) /* the defaults, parsed once: a sweep parses up to 4096 points */
        if (options_table[i].def)
            SS_ASSERT(set_value(&options_table[i], options_table[i].def, &table_defaults,
                                "default") == SS_OK);
}

static void table_init(void) {
    pthread_once(&table_once, table_build);
}

static void *field_of(run_config *cfg, const opt_def *o) {
    return (char *)cfg + o->offset;
}

static const void *const_field_of(const run_config *cfg, const opt_def *o) {
    return (const char *)cfg + o->offset;
}

/* Edit distance, for "did you mean". */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

static const char *closest_option(unsigned command, const char *name) {
    const char *best = NULL;
    int best_d = 4;
    for (int i = 0; i < OPTIONS_COUNT; i++) {
        if (!(options_table[i].commands & command)) continue;
        int dist = edit_distance(name, options_table[i].name);
        if (dist < best_d) best_d = dist, best = options_table[i].name;
    }
    return best;
}

static int find_option(const char *name) {
    for (int i = 0; i < OPTIONS_COUNT; i++)
        if (strcmp(options_table[i].name, name) == 0) return i;
    return -1;
}

/* The row of `name` that `command` accepts (a name may have one row per subcommand, as replay's
 * --trace FILE and train's --trace flag), else the first row of that name. */
static int find_option_for(unsigned command, const char *name) {
    for (int i = 0; i < OPTIONS_COUNT; i++)
        if ((options_table[i].commands & command) && strcmp(options_table[i].name, name) == 0)
            return i;
    return find_option(name);
}

/* The name messages give the subcommand: `syncsim real` parses train's options. */
static const char *command_label_override;

void options_name_command(const char *name) {
    command_label_override = name;
}

static const char *command_name(unsigned command);
static const char *command_label(unsigned command) {
    return command_label_override ? command_label_override : command_name(command);
}

static const char *command_name(unsigned command) {
    switch (command) {
    case CMD_TRAIN:
        return "train";
    case CMD_COMPARE:
        return "compare";
    case CMD_PLATFORM:
        return "platform";
    case CMD_BENCH:
        return "bench";
    case CMD_REPLAY:
        return "replay";
    case CMD_SWEEP:
        return "sweep";
    case CMD_REPORT:
        return "report";
    case CMD_VALIDATE:
        return "validate";
    default:
        return "?";
    }
}

static void describe_range(const opt_def *o, char *buf, size_t n) {
    switch (o->type) {
    case OPT_TYPE_INT:
    case OPT_TYPE_LONG:
        snprintf(buf, n, "an integer in [%.0f, %.0f]", o->min, o->max);
        break;
    case OPT_TYPE_DOUBLE:
        snprintf(buf, n, "a decimal number in [%g, %g]", o->min, o->max);
        break;
    case OPT_TYPE_U64:
        snprintf(buf, n, "an integer in [0, 18446744073709551615]");
        break;
    case OPT_TYPE_CHOICE:
        snprintf(buf, n, "one of %s", o->choices);
        break;
    case OPT_TYPE_AUTO:
        snprintf(buf, n, "one of auto|yes|no");
        break;
    case OPT_TYPE_FLAG:
        snprintf(buf, n, "true or false");
        break;
    default:
        snprintf(buf, n, "a text");
        break;
    }
}

/* The policy option behind a row of the table (NULL for the other rows). */
static const policy_option *row_policy_option(const opt_def *o) {
    const size_t first = offsetof(run_config, policy_options);
    if (o->offset < first || o->offset >= first + sizeof(((run_config *)0)->policy_options))
        return NULL;
    return policy_option_at((int)((o->offset - first) / sizeof(run_policy_value)));
}

/* A policy option kept as text (a threshold, a duration) is still checked when it is given; so
 * are the bandwidths and latencies of a generated platform, named by their metavar. */
static int check_policy_text(const opt_def *o, const char *text, const char *where) {
    const policy_option *po = row_policy_option(o);
    run_policy_value v;
    if (!po && o->metavar && !strcmp(o->metavar, "BW") && text[0]) {
        double bps;
        return platform_parse_bandwidth(where, text, &bps);
    }
    if (!po && o->metavar && !strcmp(o->metavar, "T") && text[0] && strcmp(text, "tier")) {
        double s;
        return platform_parse_latency(where, text, &s);
    }
    if (po && po->type == POLICY_OPTION_DURATION) {
        if (policy_option_parse(po, text, &v) == SS_OK) return SS_OK;
        return ss_error_set(SS_EUSAGE,
                            "%s: invalid value '%s' (expected a duration >= 0: a decimal number "
                            "and a unit, e.g. 500ms, 2s, 0s)",
                            where, text);
    }
    if (!po || po->type != POLICY_OPTION_THRESHOLD || policy_option_parse(po, text, &v) == SS_OK)
        return SS_OK;
    return ss_error_set(SS_EUSAGE,
                        "%s: invalid value '%s' (expected a decimal number in [%g, %g], or "
                        "auto:R with 0 < R < 1, a target local-step ratio)",
                        where, text, po->min, po->max);
}

/* Parses `text` into the row's field; `where` names the source ("option --lr", "f.ini:3"). */
static int set_value(const opt_def *o, const char *text, run_config *cfg, const char *where) {
    char range[128];
    describe_range(o, range, sizeof range);
    void *dst = field_of(cfg, o);
    char *end = NULL;
    errno = 0;
    switch (o->type) {
    case OPT_TYPE_U64: {
        if (!isdigit((unsigned char)text[0])) goto bad;
        unsigned long long v = strtoull(text, &end, 10);
        if (errno || *end) goto bad;
        *(uint64_t *)dst = v;
        return SS_OK;
    }
    case OPT_TYPE_INT:
    case OPT_TYPE_LONG: {
        long long v;
        if (number_parse_llong(text, &v) != 0 || v < o->min || v > o->max) goto bad;
        if (o->type == OPT_TYPE_INT)
            *(int *)dst = (int)v;
        else
            *(long *)dst = (long)v;
        return SS_OK;
    }
    case OPT_TYPE_DOUBLE: {
        double v;
        if (number_parse_double(text, &v) != 0 || v < o->min || v > o->max) goto bad;
        *(double *)dst = v;
        return SS_OK;
    }
    case OPT_TYPE_STRING:
        if (check_policy_text(o, text, where) != SS_OK) return SS_EUSAGE;
        if (strlen(text) >= o->size)
            return ss_error_set(SS_EUSAGE, "%s: value too long (at most %zu characters)", where,
                                o->size - 1);
        snprintf((char *)dst, o->size, "%s", text);
        return SS_OK;
    case OPT_TYPE_CHOICE: {
        size_t len = strlen(text);
        for (const char *p = o->choices; *p;) {
            const char *bar = strchr(p, '|');
            size_t wl = bar ? (size_t)(bar - p) : strlen(p);
            if (wl == len && strncmp(p, text, len) == 0) {
                snprintf((char *)dst, o->size, "%s", text);
                return SS_OK;
            }
            p += wl + (bar != NULL);
        }
        goto bad;
    }
    case OPT_TYPE_FLAG:
        if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes"))
            *(int *)dst = 1;
        else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no"))
            *(int *)dst = 0;
        else
            goto bad;
        return SS_OK;
    case OPT_TYPE_AUTO:
        if (!strcmp(text, "auto"))
            *(int *)dst = -1;
        else if (!strcmp(text, "yes") || !strcmp(text, "true"))
            *(int *)dst = 1;
        else if (!strcmp(text, "no") || !strcmp(text, "false"))
            *(int *)dst = 0;
        else
            goto bad;
        return SS_OK;
    }
bad:
    return ss_error_set(SS_EUSAGE, "%s: invalid value '%s' (expected %s)", where, text, range);
}

void options_defaults(run_config *cfg) {
    table_init();
    memcpy(cfg, &table_defaults, sizeof *cfg);
}

typedef struct ini_context {
    unsigned command;
    run_config *cfg;
    unsigned char seen[RUN_CONFIG_MAX_OPTIONS]; /* keys already given in the file */
} ini_context;

/* Where each option of the configuration being parsed was given: its file and line, for the
 * checks of options_validate() that come after the file was read (0: not from a file). */
static __thread const char *config_path;
static __thread long config_line[RUN_CONFIG_MAX_OPTIONS];

/* "option --NAME", or "FILE:LINE: key 'NAME'" for an option a configuration file gave. */
static const char *option_where(int i, char *buf, size_t n) {
    if (config_path && config_line[i] > 0)
        snprintf(buf, n, "%s:%ld: key '%s'", config_path, config_line[i], options_table[i].name);
    else
        snprintf(buf, n, "option --%s", options_table[i].name);
    return buf;
}

/* The sections a configuration may have: the subcommands that write one (config.ini starts with
 * [train], [compare] or [replay]), or none. */
static const char *const config_sections[] = {"train", "compare", "replay", "real", NULL};

static int config_section(const char *section, char *problem, size_t n) {
    const char *near = NULL;
    for (int i = 0; config_sections[i]; i++) {
        if (!strcmp(section, config_sections[i])) return 0;
        if (edit_distance(section, config_sections[i]) <= 2) near = config_sections[i];
    }
    snprintf(problem, n, "unknown section [%s] (valid: [train], [compare], [replay], [real])%s%s%s",
             section, near ? "; did you mean [" : "", near ? near : "", near ? "]?" : "");
    return -1;
}

static int config_key_handler(void *user, const char *section, const char *name, const char *value,
                              long line, char *problem, size_t n) {
    ini_context *c = user;
    if (!name) return config_section(section, problem, n);
    if (!strcmp(name, "config") || !strcmp(name, "help")) {
        snprintf(problem, n,
                 "key '%s' belongs on the command line (--%s), not in a configuration file", name,
                 name);
        return -1;
    }
    int i = find_option_for(c->command, name);
    if (i < 0 || !(options_table[i].commands & c->command)) {
        const char *near = closest_option(c->command, name);
        if (near && (!strcmp(near, "config") || !strcmp(near, "help"))) near = NULL;
        snprintf(problem, n, "unknown key '%s' for 'syncsim %s'%s%s%s", name,
                 command_label(c->command), near ? "; did you mean '" : "", near ? near : "",
                 near ? "'?" : "");
        return -1;
    }
    if (c->seen[i]) {
        snprintf(problem, n, "key '%s' is given twice (a configuration gives each key once)", name);
        return -1;
    }
    c->seen[i] = 1;
    char where[96];
    snprintf(where, sizeof where, "key '%s'", name);
    if (set_value(&options_table[i], value, c->cfg, where) != SS_OK) {
        snprintf(problem, n, "%s", ss_error_message());
        return -1;
    }
    c->cfg->set[i] = 1;
    config_line[i] = line;
    return 0;
}

static int read_config_file(unsigned command, const char *path, run_config *cfg) {
    ini_context c = {command, cfg, {0}};
    int rc = ini_text_parse(path, "--config", SS_EUSAGE, config_key_handler, &c);
    if (rc != SS_OK) return rc;
    config_path = path;
    return SS_OK;
}

/* The default of row i for `command`: the subcommand's own, else the row's. */
static const char *default_for(unsigned command, int i) {
    for (int k = 0; k < COMMAND_DEFAULTS; k++)
        if ((command_defaults[k].command & command) &&
            !strcmp(command_defaults[k].name, options_table[i].name))
            return command_defaults[k].def;
    return options_table[i].def;
}

static void apply_command_defaults(unsigned command, run_config *cfg) {
    for (int k = 0; k < COMMAND_DEFAULTS; k++) {
        if (!(command_defaults[k].command & command)) continue;
        int i = find_option_for(command, command_defaults[k].name);
        int rc = set_value(&options_table[i], command_defaults[k].def, cfg, "default");
        SS_ASSERT(rc == SS_OK);
    }
}

/* Checks that hold for every subcommand: an output directory must have a name. */
static int validate_common(unsigned command, const run_config *cfg) {
    int i = find_option_for(command, "out");
    if ((options_table[i].commands & command) && !cfg->out_dir[0])
        return ss_error_set(SS_EUSAGE, "option --out: the output directory must not be empty");
    if (command == CMD_COMPARE && cfg->workers < 2)
        return ss_error_set(SS_EUSAGE,
                            "option --workers %d: compare needs at least 2 workers "
                            "(default 8)",
                            cfg->workers);
    return SS_OK;
}

/* A check over several options (a policy's own, a contradiction) names them as options; where
 * the first one it names came from the configuration file, its file and line are added. */
static int with_config_line(unsigned command, int rc) {
    if (rc == SS_OK || !config_path || strstr(ss_error_message(), config_path)) return rc;
    char message[1024];
    snprintf(message, sizeof message, "%s", ss_error_message());
    for (const char *p = strstr(message, "--"); p; p = strstr(p + 2, "--")) {
        char name[64];
        size_t n = 0;
        for (const char *q = p + 2; (isalnum((unsigned char)*q) || *q == '-') && n < 63; q++)
            name[n++] = *q;
        name[n] = '\0';
        int i = n ? find_option_for(command, name) : -1;
        if (i >= 0 && config_line[i] > 0)
            return ss_error_set(rc, "%s (%s:%ld: key '%s')", message, config_path, config_line[i],
                                name);
    }
    return rc;
}

int options_parse(unsigned command, int argc, char **argv, run_config *cfg) {
    table_init();
    config_path = NULL;
    memset(config_line, 0, sizeof config_line);
    options_defaults(cfg);
    apply_command_defaults(command, cfg);
    /* --config first, so that the command line overrides the file. */
    for (int a = 0; a < argc; a++) {
        const char *v = NULL;
        if (!strcmp(argv[a], "--config") && a + 1 < argc)
            v = argv[a + 1];
        else if (!strncmp(argv[a], "--config=", 9))
            v = argv[a] + 9;
        if (v && (command & (CMD_RUN | CMD_REPLAY))) {
            int rc = read_config_file(command, v, cfg);
            if (rc != SS_OK) return rc;
        }
    }
    for (int a = 0; a < argc; a++) {
        const char *arg = argv[a];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            return ss_error_set(SS_EUSAGE,
                                "unexpected argument '%s' for 'syncsim %s' (options start with "
                                "--; see syncsim %s --help)",
                                arg, command_label(command), command_label(command));
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t nl = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (nl >= sizeof name) nl = sizeof name - 1;
        memcpy(name, arg + 2, nl);
        name[nl] = '\0';
        int i = find_option_for(command, name);
        if (i < 0 || !(options_table[i].commands & command)) {
            const char *near = closest_option(command, name);
            if (i >= 0)
                return ss_error_set(SS_EUSAGE, "option --%s does not apply to 'syncsim %s'", name,
                                    command_label(command));
            return ss_error_set(SS_EUSAGE, "unknown option --%s for 'syncsim %s'%s%s%s", name,
                                command_label(command), near ? "; did you mean --" : "",
                                near ? near : "", near ? "?" : "");
        }
        const opt_def *o = &options_table[i];
        const char *value;
        if (o->type == OPT_TYPE_FLAG && !eq) {
            value = "true";
        } else if (eq) {
            value = eq + 1;
        } else {
            if (a + 1 >= argc) {
                char range[128];
                describe_range(o, range, sizeof range);
                return ss_error_set(SS_EUSAGE, "option --%s needs a value (%s)", name, range);
            }
            value = argv[++a];
        }
        char where[96];
        snprintf(where, sizeof where, "option --%s", name);
        int rc = set_value(o, value, cfg, where);
        if (rc != SS_OK) return rc;
        cfg->set[i] = 1;
        config_line[i] = 0; /* the command line's value, not the file's */
        if (!strcmp(name, "help") && cfg->help) return SS_OK;
    }
    return with_config_line(command, options_validate(command, cfg));
}

/* ---- options that only apply with another one ---- */

static void format_value(const opt_def *o, const run_config *cfg, char *buf, size_t n);

static const run_policy_value *policy_value(const run_config *cfg, const char *name) {
    return policy_option_slot((run_config *)cfg, name);
}

static int with_nodes(unsigned command, const run_config *cfg) {
    (void)command;
    return cfg->nodes > 0;
}

static int with_loss_tolerance(unsigned command, const run_config *cfg) {
    return policy_value(cfg, "loss-tolerance")->d > 0 ||
           (command == CMD_COMPARE && strstr(cfg->policies, "dlcp") != NULL);
}

static int with_servers(unsigned command, const run_config *cfg) {
    if (command != CMD_TRAIN || !strcmp(cfg->collective, "ps")) return 1;
    const policy_info *p = cfg->policy[0] ? policy_registry_find(cfg->policy) : NULL;
    return !p || p->needs_ps;
}

static int with_slow_workers(unsigned command, const run_config *cfg) {
    (void)command;
    return cfg->slow_workers[0] != '\0';
}

static int with_overlap(unsigned command, const run_config *cfg) {
    const char *overlap = policy_value(cfg, "overlap")->text;
    return strcmp(overlap, "off") != 0 && (command != CMD_TRAIN || strcmp(overlap, "auto") != 0);
}

/* An option given with a value of its own that nothing would read: refused, as an option of
 * another policy is, rather than ignored. A value equal to the default is harmless (config.ini
 * writes every option). */
static const struct {
    const char *name;
    int (*applies)(unsigned command, const run_config *cfg);
    const char *when;
} requirements[] = {
    {"gpus-per-node", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"nics-per-node", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"intra", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"intra-bandwidth", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"intra-latency", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"fabric", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"pcie-switch", with_nodes, "with --nodes N (a generated platform of multi-GPU nodes)"},
    {"p2p", with_nodes, "with --nodes N and --pcie-switch K"},
    {"deadline", with_loss_tolerance, "with --loss-tolerance EPS > 0 (DLCP)"},
    {"ps-servers", with_servers, "with parameter servers: --policy ssp or asp, or --collective ps"},
    {"slow-factor", with_slow_workers, "with --slow-workers LIST"},
    {"bucket-mb", with_overlap,
     "with overlap: --overlap on (auto is off in emulation; replays of profiles overlap)"},
};

/* 1 when row i holds its default value in cfg. */
static int holds_default(unsigned command, int i, const run_config *cfg) {
    char a[RUN_CONFIG_TEXT + 32], b[RUN_CONFIG_TEXT + 32];
    run_config *def = ss_malloc(sizeof *def);
    memcpy(def, &table_defaults, sizeof *def);
    apply_command_defaults(command, def);
    format_value(&options_table[i], cfg, a, sizeof a);
    format_value(&options_table[i], def, b, sizeof b);
    free(def);
    return strcmp(a, b) == 0;
}

static int check_requirements(unsigned command, const run_config *cfg) {
    for (size_t k = 0; k < sizeof requirements / sizeof requirements[0]; k++) {
        int i = find_option_for(command, requirements[k].name);
        if (i < 0 || !(options_table[i].commands & command) || !cfg->set[i] ||
            requirements[k].applies(command, cfg) || holds_default(command, i, cfg))
            continue;
        char where[400];
        option_where(i, where, sizeof where);
        return ss_error_set(SS_EUSAGE, "%s applies only %s; here nothing would read it", where,
                            requirements[k].when);
    }
    return SS_OK;
}

/* The policy bit of the configured policy. */
static unsigned policy_bit(const run_config *cfg) {
    const policy_info *p = policy_registry_find(cfg->policy);
    if (p) return POL_OF(p->kind);
    return cfg->workers > 1 ? POL_OF(policy_registry_baseline()->kind) : POL_SINGLE;
}

int options_validate(unsigned command, const run_config *cfg) {
    table_init();
    int rc = validate_common(command, cfg);
    if (rc != SS_OK) return rc;
    if (command != CMD_TRAIN) return check_requirements(command, cfg); /* compare: each run's */
    const unsigned pol = policy_bit(cfg);
    const policy_info *p = pol == POL_SINGLE ? NULL
                           : cfg->policy[0]  ? policy_registry_find(cfg->policy)
                                             : policy_registry_baseline();
    for (int i = 0; i < OPTIONS_COUNT; i++) {
        const opt_def *o = &options_table[i];
        if (!cfg->set[i] || !o->policies || (o->policies & pol)) continue;
        char where[400];
        option_where(i, where, sizeof where);
        if (pol == POL_SINGLE) {
            char names[256];
            return ss_error_set(SS_EUSAGE,
                                "%s needs a simulated run: add --policy (%s) or --workers N", where,
                                policy_registry_names(", ", names, sizeof names));
        }
        return ss_error_set(SS_EUSAGE, "%s does not apply to --policy %s", where, p->name);
    }
    if (options_was_set(cfg, "platform") &&
        (options_was_set(cfg, "bandwidth") || options_was_set(cfg, "topology") ||
         options_was_set(cfg, "gpu") || options_was_set(cfg, "latency") ||
         options_was_set(cfg, "gpu-efficiency") || options_was_set(cfg, "nodes")))
        return ss_error_set(SS_EUSAGE,
                            "--platform FILE contradicts --bandwidth, --latency, --topology, "
                            "--gpu, --gpu-efficiency and --nodes, which describe a generated "
                            "platform");
    if ((rc = check_requirements(command, cfg)) != SS_OK) return rc;
    return p && p->check ? p->check(cfg, options_was_set) : SS_OK;
}

double options_learning_rate(const run_config *cfg) {
    if (cfg->lr > 0) return cfg->lr;
    if (cfg->policy[0] || cfg->workers > 1) return strncmp(cfg->model, "cnn", 3) ? 0.05 : 0.02;
    return strncmp(cfg->model, "logreg", 6) == 0 ? 0.01 : 0.02;
}

int options_was_set(const run_config *cfg, const char *name) {
    table_init();
    int i = find_option(name);
    SS_ASSERT(i >= 0);
    return cfg->set[i];
}

static void format_value(const opt_def *o, const run_config *cfg, char *buf, size_t n) {
    const void *src = const_field_of(cfg, o);
    switch (o->type) {
    case OPT_TYPE_U64:
        snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)src);
        break;
    case OPT_TYPE_INT:
        snprintf(buf, n, "%d", *(const int *)src);
        break;
    case OPT_TYPE_LONG:
        snprintf(buf, n, "%ld", *(const long *)src);
        break;
    case OPT_TYPE_DOUBLE:
        snprintf(buf, n, "%.17g", *(const double *)src);
        break;
    case OPT_TYPE_FLAG:
        snprintf(buf, n, "%s", *(const int *)src ? "true" : "false");
        break;
    case OPT_TYPE_AUTO: {
        int v = *(const int *)src;
        snprintf(buf, n, "%s", v < 0 ? "auto" : v ? "yes" : "no");
        break;
    }
    default: {
        /* a threshold given as a number is written as the other reals are */
        const policy_option *po = row_policy_option(o);
        double x;
        if (po && po->type == POLICY_OPTION_THRESHOLD &&
            number_parse_double((const char *)src, &x) == 0)
            snprintf(buf, n, "%.17g", x);
        else
            snprintf(buf, n, "%s", (const char *)src);
        break;
    }
    }
}

/* Options that describe the invocation rather than the run are not written to config.ini. */
static int is_meta(const opt_def *o) {
    return !strcmp(o->name, "help") || !strcmp(o->name, "config");
}

/* A platform file and the options of a generated platform exclude each other: the resolved
 * configuration keeps the ones in use. */
static int describes_other_platform(const opt_def *o, const run_config *cfg) {
    if (!strcmp(o->name, "platform")) return cfg->platform[0] == '\0';
    if (!strcmp(o->name, "bandwidth") || !strcmp(o->name, "latency") ||
        !strcmp(o->name, "topology") || !strcmp(o->name, "gpu") ||
        !strcmp(o->name, "gpu-efficiency") || !strcmp(o->name, "nodes"))
        return cfg->platform[0] != '\0';
    return 0;
}

void options_write_ini(unsigned command, const run_config *cfg, FILE *out) {
    table_init();
    /* A run writes its own policy's options (it re-runs as it is); a replay those it was given */
    const unsigned pol = command == CMD_TRAIN ? policy_bit(cfg) : 0, given = command == CMD_REPLAY;
    const char *c = command_name(command);
    fprintf(out, "# syncsim %s configuration, %s; re-run with\n", c,
            given ? "the options given (the rest as recorded, or defaults)" : "fully resolved");
    fprintf(out, "#   syncsim %s --config THIS_FILE\n[%s]\n", c, c);
    char buf[RUN_CONFIG_TEXT + 32];
    for (int i = 0; i < OPTIONS_COUNT; i++) {
        const opt_def *o = &options_table[i];
        if (!(o->commands & command) || is_meta(o) || describes_other_platform(o, cfg)) continue;
        const int skip = (pol && o->policies && !(o->policies & pol)) || (given && !cfg->set[i]);
        if (skip && strcmp(o->name, "seed")) continue; /* seed: no policy, always written */
        format_value(o, cfg, buf, sizeof buf);
        fprintf(out, "%s = %s\n", o->name, buf);
    }
}

void options_print_table(unsigned command, const run_config *cfg, FILE *out) {
    table_init();
    char buf[RUN_CONFIG_TEXT + 32];
    fprintf(out, "+----------------------+--------------------------------------------+\n");
    for (int i = 0; i < OPTIONS_COUNT; i++) {
        const opt_def *o = &options_table[i];
        if (!(o->commands & command) || is_meta(o)) continue;
        format_value(o, cfg, buf, sizeof buf);
        fprintf(out, "| %-20s | %-42s |\n", o->name, buf);
    }
    fprintf(out, "+----------------------+--------------------------------------------+\n");
}

void options_print_help(unsigned command, const char *usage, FILE *out) {
    table_init();
    fprintf(out, "usage: %s\n\noptions:\n", usage);
    for (int i = 0; i < OPTIONS_COUNT; i++) {
        const opt_def *o = &options_table[i];
        if (!(o->commands & command)) continue;
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->metavar[0] ? " " : "", o->metavar);
        char range[128] = "";
        if (o->type == OPT_TYPE_INT || o->type == OPT_TYPE_LONG || o->type == OPT_TYPE_DOUBLE)
            snprintf(range, sizeof range, " [%g..%g]", o->min, o->max);
        else if (o->type == OPT_TYPE_CHOICE)
            snprintf(range, sizeof range, " (%s)", o->choices + (o->choices[0] == '|'));
        fprintf(out, "  %-26s %s%s", left, o->help, range);
        const char *def = default_for(command, i);
        if (def && def[0] && o->type != OPT_TYPE_FLAG) fprintf(out, " (default %s)", def);
        fputc('\n', out);
    }
}

int options_lookup(unsigned command, const char *name, unsigned *policies) {
    table_init();
    int i = find_option_for(command, name);
    if (i < 0 || !(options_table[i].commands & command) || is_meta(&options_table[i])) return 0;
    if (policies) *policies = options_table[i].policies;
    return 1;
}

int options_row_count(void) {
    table_init();
    return OPTIONS_COUNT;
}

void options_row_at(int i, options_row_info *out) {
    static const char *const kinds[] = {
        [OPT_TYPE_U64] = "u64",       [OPT_TYPE_INT] = "int",       [OPT_TYPE_LONG] = "long",
        [OPT_TYPE_DOUBLE] = "double", [OPT_TYPE_STRING] = "string", [OPT_TYPE_CHOICE] = "choice",
        [OPT_TYPE_FLAG] = "flag",     [OPT_TYPE_AUTO] = "auto"};
    table_init();
    SS_ASSERT(i >= 0 && i < OPTIONS_COUNT);
    const opt_def *o = &options_table[i];
    *out = (options_row_info){o->name, kinds[o->type], o->metavar, o->choices,
                              o->min,  o->max,         o->commands};
}

int options_takes_value(unsigned command, const char *arg) {
    table_init();
    if (strncmp(arg, "--", 2) != 0 || strchr(arg, '=')) return 0;
    int i = find_option_for(command, arg + 2);
    return i >= 0 && (options_table[i].commands & command) &&
           options_table[i].type != OPT_TYPE_FLAG;
}

const char *options_closest(unsigned command, const char *name) {
    table_init();
    return closest_option(command, name);
}

int options_check_value(unsigned command, const char *name, const char *value) {
    table_init();
    int i = find_option_for(command, name);
    SS_ASSERT(i >= 0);
    run_config scratch;
    options_defaults(&scratch);
    char where[96];
    snprintf(where, sizeof where, "key '%s'", name);
    return set_value(&options_table[i], value, &scratch, where);
}

unsigned options_policy_bit(const char *policy, int workers) {
    table_init();
    run_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.policy, sizeof cfg.policy, "%s", policy);
    cfg.workers = workers;
    return policy_bit(&cfg);
}
