/* The resolved configuration of one run: a plain record filled by the option table
 * (cli/options.c), which is the single place that knows names, defaults and ranges. */
#ifndef SS_COMMON_RUN_CONFIG_H
#define SS_COMMON_RUN_CONFIG_H

#include <stdint.h>

#define RUN_CONFIG_TEXT           256
#define RUN_CONFIG_MAX_OPTIONS    128
#define RUN_CONFIG_POLICY_OPTIONS 32

/* The value of one policy option; its type (sim/policy/policy_registry.h) says which member holds
 * it. */
typedef union run_policy_value {
    int i;         /* integers within int */
    long l;        /* counts of steps */
    double d;      /* reals */
    char text[32]; /* a name of an enumeration, or a quantity with its unit as written ("0s") */
} run_policy_value;

typedef struct run_config {
    int help;    /* --help was given */
    int version; /* --version was given */
    uint64_t seed;
    char config_file[RUN_CONFIG_TEXT]; /* --config: INI file read before the other options */
    char out_dir[RUN_CONFIG_TEXT];

    /* numerical core */
    char device[16];                /* auto | cpu | cuda */
    char model[RUN_CONFIG_TEXT];    /* logreg | mlp[:W,W..] | cnn */
    char dataset[RUN_CONFIG_TEXT];  /* fashion-mnist | mnist | cifar10 | synthetic | PATH */
    char data_dir[RUN_CONFIG_TEXT]; /* overrides the data set's directory ("" = default) */
    double epochs;                  /* passes over the training set, all workers together */
    int batch;                      /* b: per-worker mini-batch */
    double lr;                      /* eta */
    double momentum;                /* mu */
    double weight_decay;            /* wd */
    char lr_schedule[64];           /* constant | step[:E[:G]] | multistep:E1,.. | cosine[:MIN] */
    double lr_warmup;               /* epochs of linear learning-rate warm-up (0: none) */
    int nesterov;                   /* Nesterov momentum */
    int bench_layers;               /* bench kernels: each layer's time as well */
    double bench_seconds;           /* bench kernels: timed seconds per model (5 windows) */
    char augment[8];                /* auto | yes | no: random crop (padding 4) and flip */
    double clip_norm;               /* gradient L2-norm clipping (0: none) */
    char bn_stats[16];              /* average | local: running statistics at a synchronization */
    long eval_every;                /* K: evaluate every K steps (0 = once per epoch) */
    int progress;                   /* 1 always, 0 never, -1 when stderr is a terminal */

    /* emulation: workers, policy, cluster */
    char policy[32];                /* "" (single worker) or a name of the policy registry */
    int workers;                    /* N */
    char platform[RUN_CONFIG_TEXT]; /* SimGrid platform file ("" = generated from below) */
    char bandwidth[32];             /* generated platform: per-link bandwidth */
    char latency[32];               /* generated platform: per-link latency */
    char topology[16];              /* generated platform: star | fat-tree */
    char gpu[16];                   /* generated platform: v100 | a100 | h100 */
    char network_model[16];         /* LV08 | CM02 | ns-3 | SMPI | TCP-stream */
    char collective[16];            /* an algorithm of sim/net/coll/collective.h | ps */
    double segment_bytes;           /* collective segmentation (0 = none) */
    int channels;                   /* rings at once of the ring all-reduce */
    char protocol[8];               /* NCCL-style algorithms: auto | LL | LL128 | Simple */
    int ps_servers;                 /* parameter servers (ssp/asp, or --collective ps) */
    char compute[32];               /* model | flops | measured[:SCALE] */
    char threads[16];               /* compute engine: auto | 1..1024 (common/engine.h) */
    char precision[16];             /* model mode: pytorch | fp32 | tf32 | fp16 | bf16 */
    char framework[16];             /* model mode: eager | graphs | ideal */
    char compute_jitter[32];        /* auto | CV of a step's compute time (0: none) */
    char partition[32];             /* defdp | seldp | seldp-perm | noniid:K ("" = policy's) */
    double target_accuracy;         /* for tta_s (0 = none) */
    double target_perplexity;       /* for tta_s, language models (0 = none) */
    int trace;                      /* write steps.trace */
    int engine_trace;               /* write engine-trace.json (the compute engine's timeline) */

    /* the options of the policies, one slot per option of the registry
     * (sim/policy/policy_registry.h: policy_option_slot() finds an option's slot by name) */
    run_policy_value policy_options[RUN_CONFIG_POLICY_OPTIONS];

    /* stragglers and cross traffic */
    double straggler_prob;              /* stragglers: p */
    double straggler_factor;            /* stragglers: f */
    char slow_workers[RUN_CONFIG_TEXT]; /* ranks always slower */
    double slow_factor;
    double background_load; /* cross traffic */

    /* compare */
    char policies[RUN_CONFIG_TEXT];   /* comma-separated policies */
    char networks[RUN_CONFIG_TEXT];   /* comma-separated bandwidths, or platform files */
    char partitions[RUN_CONFIG_TEXT]; /* compare: comma-separated partitions, "iid" the default */
    int jobs;                         /* runs at once */

    /* sweep, report */
    int resume;                           /* sweep: skip points whose summary.json is complete */
    char shard[32];                       /* sweep: "I/K" runs points i with i mod K = I */
    char dump_gradients[RUN_CONFIG_TEXT]; /* train: steps whose gradient samples are written */
    double target_margin;                 /* report: TTA target = BSP's final accuracy - this */

    /* platform */
    int hosts;             /* worker hosts */
    int ps_hosts;          /* parameter-server hosts */
    double gpu_efficiency; /* host speed = peak FP32 x this */

    /* generated node platforms (sim/platform/platform_gen.h) */
    int nodes;                /* servers (0: a flat cluster) */
    int gpus_per_node;        /* G (0: workers or hosts / nodes) */
    int nics_per_node;        /* R: GPU g sends through NIC g * R / G */
    char intra[16];           /* nvlink3 | nvlink4 | pcie3 | pcie4 */
    char intra_bandwidth[32]; /* overrides the preset's ("" = preset) */
    char intra_latency[32];   /* overrides the preset's ("" = preset) */
    char fabric[16];          /* NIC links: ethernet | infiniband | roce */
    int pcie_switch;          /* GPUs per PCIe switch sharing its uplink (0: none) */
    char p2p[8];              /* on | off: GPUs of a node exchange through host memory */

    /* bench */
    char
        bench_hosts[RUN_CONFIG_TEXT]; /* --hosts-list: host counts (bench network --smpi, replay) */
    char bench_sizes[RUN_CONFIG_TEXT];   /* --sizes: message sizes of `bench network` (bytes) */
    int bench_smpi;                      /* --smpi: bench network compares with SMPI instead */
    char bench_csv[RUN_CONFIG_TEXT];     /* --csv: bench emulation also writes its table here */
    char validate_refs[RUN_CONFIG_TEXT]; /* validate network: directory of references */
    double validate_max_large;           /* bound on the median error, sizes >= 1 MiB */
    double validate_max_small;           /* bound on the median error, sizes < 1 MiB */
    char validate_throughputs[RUN_CONFIG_TEXT]; /* validate compute: CSV ("" = the shipped one) */
    double validate_max_error;                  /* validate compute: bound on the median error */
    char validate_scaling[RUN_CONFIG_TEXT];     /* validate scaling: CSV ("" = the shipped one) */
    double validate_scaling_max_error;          /* validate scaling: bound on the median error */
    double bench_bytes;                         /* all-reduce size for `bench network` */
    int max_smpi_hosts;                         /* largest N run under SMPI in `bench network` */

    /* replay, trace (traces/FORMAT.md) */
    char replay_trace[RUN_CONFIG_TEXT];     /* --trace FILE: a recorded steps.trace */
    char replay_profile[RUN_CONFIG_TEXT];   /* --profile NAME|FILE: synthesize from a profile */
    char replay_import[RUN_CONFIG_TEXT];    /* --import CSV: a real cluster's per-step log */
    int replay_workers;                     /* M (0: as recorded) */
    long replay_steps;                      /* global steps (0: all recorded / 100) */
    char replay_scale_out[16];              /* round-robin | sample */
    double replay_sync_fraction;            /* selsync from a profile: fraction of sync steps */
    char replay_decisions[RUN_CONFIG_TEXT]; /* selsync from a profile: decisions of this trace */
    double replay_param_bytes;              /* --import: bytes of one exchange (0: profile's) */
    int replay_record;                      /* write OUT/steps.trace of the replay */

    unsigned char set[RUN_CONFIG_MAX_OPTIONS]; /* set[i]: row i of the table was given explicitly */
} run_config;

#endif
