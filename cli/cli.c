#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "common/status.h"
#include "emu/memory.h"
#include "kernels/bench.h"
#include "common/run_request.h"
#include "cli/bench_network.h"
#include "cli/calibrate_network.h"
#include "sim/platform/platform_gen.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct subcommand {
    const char *name;    /* the word after `syncsim` */
    unsigned command;    /* CMD_* bit: which rows of the option table apply */
    const char *usage;   /* first line of --help */
    const char *summary; /* one line in `syncsim --help` */
    int (*run)(const run_config *cfg, const char *target);
    const char *targets; /* "a|b|c": the target word that must follow the name; NULL: none */
} subcommand;

/* The subcommands without a target word. */
#define RUN_PLAIN(name)                                                                            \
    static int run_##name(const run_config *cfg, const char *target) {                             \
        (void)target;                                                                              \
        return cmd_##name(cfg);                                                                    \
    }
RUN_PLAIN(train)
RUN_PLAIN(real)
RUN_PLAIN(compare)
RUN_PLAIN(replay)
RUN_PLAIN(trace)

static int run_platform(const run_config *cfg, const char *target) {
    (void)target;
    platform_gen_spec s;
    int rc = platform_spec_from_config(cfg, cfg->hosts, cfg->ps_hosts, &s);
    return rc != SS_OK ? rc : platform_generate(&s, stdout);
}

/* bench kernels' check before each model: one model and its momentum at the batch, as train
 * checks a single worker (emu/memory.h) */
static int bench_model_fits(device *dev, const model_spec *spec, int batch) {
    return memory_check_run(dev, spec, 0, 1, batch, 0, 0, NULL, 0);
}

static int run_bench(const run_config *cfg, const char *target) {
    if (!strcmp(target, "kernels"))
        return bench_kernels(cfg->device, cfg->batch,
                             options_was_set(cfg, "model") ? cfg->model : NULL, cfg->bench_layers,
                             cfg->bench_seconds, bench_model_fits, stdout);
    if (!strcmp(target, "coupling")) return cmd_bench_coupling(cfg);
    if (!strcmp(target, "replay")) return cmd_bench_replay(cfg);
    if (!strcmp(target, "emulation")) return cmd_bench_emulation(cfg);
    run_request rq = {.cfg = cfg, .was_set = options_was_set};
    return bench_network_run(&rq, stdout);
}

static int run_validate(const run_config *cfg, const char *target) {
    if (!strcmp(target, "compute")) return cmd_validate_compute(cfg);
    if (!strcmp(target, "scaling")) return cmd_validate_scaling(cfg);
    if (!strcmp(target, "real")) return cmd_validate_real(cfg);
    return cmd_validate(cfg);
}

static const subcommand subcommands[] = {
    {"train", CMD_TRAIN, "syncsim train [options]",
     "train for real: one worker, or N emulated workers under a policy on a simulated cluster",
     run_train, NULL},
    {"real", CMD_TRAIN, "mpirun -np N[+K] syncsim real [train options]",
     "the same training on real MPI processes over a real network, times measured", run_real, NULL},
    {"compare", CMD_COMPARE, "syncsim compare [options]",
     "the same training under several policies and networks: table, compare.csv, plot", run_compare,
     NULL},
    {"platform", CMD_PLATFORM, "syncsim platform [options] > FILE.xml",
     "print a SimGrid platform of GPU hosts (star or fat-tree, optional PS hosts)", run_platform,
     NULL},
    {"validate", CMD_VALIDATE, "syncsim validate network|compute|scaling|real [options]",
     "predictions against public measurements (nccl-tests logs, single-GPU throughputs, "
     "multi-GPU scaling) and against real runs on a local network testbed",
     run_validate, "network|compute|scaling|real"},
    /* calibrate takes positional logs: cli_main hands it its argv. */
    {"calibrate", CMD_BENCH_NETWORK, "syncsim calibrate network LOG... [options]",
     "fit the generated cluster to its nccl-tests all_reduce_perf logs: a --config file", NULL,
     NULL},
    {"bench", CMD_BENCH, "syncsim bench kernels|network|coupling|replay|emulation [options]",
     "benchmarks: training vs SGEMM; all-reduce vs SMPI; SimGrid coupling overhead; replay at "
     "scale; emulation on threads",
     run_bench, "kernels|network|coupling|replay|emulation"},
    {"replay", CMD_REPLAY,
     "syncsim replay --trace FILE | --profile NAME | --import CSV [--platform P] [--workers M] "
     "[options]",
     "replay a recorded trace, a model profile or a real log with the same policy actors",
     run_replay, NULL},
    {"trace", CMD_REPLAY, "syncsim trace --trace FILE | --import CSV [--out DIR]",
     "check and summarize a trace, or convert a real per-step log into one", run_trace, NULL},
    /* sweep and report take positional words: cli_main hands them their argv. */
    {"sweep", CMD_SWEEP, "syncsim sweep FILE.ini [options]",
     "a grid of runs from an INI file, in parallel, resumable, over MPI ranks or shards", NULL,
     NULL},
    {"profile", 0, "syncsim profile import TRACE.json | model --model M ... --out FILE.profile",
     "a model profile: measured per-layer times from a torch.profiler trace, or an emulated "
     "model's layers",
     NULL, NULL},
    {"report", CMD_REPORT, "syncsim report DIR... [options]",
     "statistics over seeds (mean, 95% CI), tables and gnuplot figures of runs and sweeps", NULL,
     NULL},
};
#define SUBCOMMAND_COUNT ((int)(sizeof subcommands / sizeof subcommands[0]))

/* bench's targets: each its own rows of the option table, its own usage and --help. */
static const struct {
    const char *name;
    unsigned command;
    const char *usage, *summary;
} bench_targets[] = {
    {"kernels", CMD_BENCH_KERNELS, "syncsim bench kernels [options]",
     "one worker's training step against SGEMM, on the CPU or the GPU"},
    {"network", CMD_BENCH_NETWORK, "syncsim bench network [options]",
     "an nccl-tests-like all-reduce table over --sizes; --smpi: the ring against SMPI"},
    {"coupling", CMD_BENCH_COUPLING, "syncsim bench coupling [options]",
     "the same training with and without SimGrid: what the coupling costs"},
    {"replay", CMD_BENCH_REPLAY, "syncsim bench replay [options]",
     "replay of a profile at scale (BSP, one all-reduce a step), and against SMPI"},
    {"emulation", CMD_BENCH_EMULATION, "syncsim bench emulation [options]",
     "samples/s of an emulated run on --threads threads beside one thread, and its serial "
     "share"},
};
#define BENCH_TARGETS ((int)(sizeof bench_targets / sizeof bench_targets[0]))

static void print_bench_help(FILE *out) {
    fprintf(
        out,
        "usage: syncsim bench kernels|network|coupling|replay|emulation [options]\n\ntargets:\n");
    for (int i = 0; i < BENCH_TARGETS; i++)
        fprintf(out, "  %-10s %s\n", bench_targets[i].name, bench_targets[i].summary);
    fprintf(out, "\nsyncsim bench TARGET --help lists the options each target takes.\n");
}

/* Whether `word` is one of the subcommand's targets. */
static int is_target(const subcommand *sc, const char *word) {
    size_t n = strlen(word);
    for (const char *t = sc->targets; *t; t += strcspn(t, "|"), t += *t == '|')
        if (strcspn(t, "|") == n && !strncmp(t, word, n)) return 1;
    return 0;
}

/* "a, b or c" from "a|b|c". */
static const char *target_list(const subcommand *sc, char *buf, size_t n) {
    size_t len = 0;
    for (const char *t = sc->targets; *t && len < n;) {
        size_t w = strcspn(t, "|");
        const char *sep = t == sc->targets ? "" : strchr(t, '|') ? ", " : " or ";
        len += (size_t)snprintf(buf + len, n - len, "%s%.*s", sep, (int)w, t);
        t += w + (t[w] == '|');
    }
    return buf;
}

static void print_main_help(FILE *out) {
    fprintf(out,
            "syncsim %s: distributed-training synchronization policies, emulated with real\n"
            "gradients inside a SimGrid network simulation.\n\n"
            "usage: syncsim COMMAND [options]      (syncsim COMMAND --help for its options)\n\n"
            "commands:\n",
            SYNCSIM_VERSION);
    for (int i = 0; i < SUBCOMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out,
            "\nexit codes: 0 ok, 1 runtime error, 2 usage error, 3 training diverged (outputs\n"
            "complete, status \"diverged\"), 130 interrupted (outputs complete)\n");
}

/* OpenBLAS's idle worker threads spin for 2^28 cycles (about 0.1 s) after each multi-threaded
 * call before they sleep, and on a machine whose cores the direct convolution's own threads also
 * use, that spin takes their cores: resnet:20 on 2 BLAS threads trained 528-558 samples/s, and
 * 684-731 with a spin of 2^18 cycles, which keeps the mlp's many small GEMMs as fast as before
 * (docs/PERFORMANCE.md). OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (log2 of the cycles) when it
 * loads, so unless the user set it, the commands that compute one model on more than one BLAS
 * thread (a train run without simulation, bench kernels on the CPU) set it and execute syncsim
 * again, once their options are read; where that fails (no /proc) they run on with OpenBLAS's
 * default. Emulated runs use one BLAS thread a replica and are left alone, as is everything
 * else: starting the process again costs about what starting it does. */
#define SYNCSIM_BLAS_THREAD_TIMEOUT "18"

static void blas_spin_short(const run_config *cfg, unsigned command, char **argv) {
    const int one_model = (command == CMD_TRAIN && !cfg->policy[0] && cfg->workers == 1) ||
                          command == CMD_BENCH_KERNELS;
    if (!one_model || !strcmp(cfg->device, "cuda") || openblas_get_num_threads() < 2 ||
        getenv("OPENBLAS_THREAD_TIMEOUT") ||
        setenv("OPENBLAS_THREAD_TIMEOUT", SYNCSIM_BLAS_THREAD_TIMEOUT, 1) != 0)
        return;
    fflush(NULL);
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_THREAD_TIMEOUT"); /* not executed again: OpenBLAS has its default */
}

static int fail(int status) {
    fprintf(stderr, "syncsim: %s\n", ss_error_message());
    return ss_status_exit_code(status);
}

int cli_main(int argc, char **argv) {
    if (argc < 2) {
        print_main_help(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_main_help(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("syncsim %s\n", SYNCSIM_VERSION);
        return 0;
    }
    const subcommand *sc = NULL;
    for (int i = 0; i < SUBCOMMAND_COUNT; i++)
        if (!strcmp(argv[1], subcommands[i].name)) sc = &subcommands[i];
    if (!sc) {
        char valid[160];
        size_t len = 0;
        for (int i = 0; i < SUBCOMMAND_COUNT; i++)
            len += (size_t)snprintf(valid + len, sizeof valid - len, "%s%s", i ? ", " : "",
                                    subcommands[i].name);
        fprintf(stderr, "syncsim: unknown command '%s' (valid: %s; see syncsim --help)\n", argv[1],
                valid);
        return 2;
    }
    if (!sc->run && !strcmp(sc->name, "calibrate")) return cmd_calibrate_main(argc - 2, argv + 2);
    if (sc->command == CMD_SWEEP) return cmd_sweep_main(argc - 2, argv + 2);
    if (sc->command == CMD_REPORT) return cmd_report_main(argc - 2, argv + 2);
    if (!strcmp(sc->name, "profile")) return cmd_profile_main(argc - 2, argv + 2);
    int first = 2;
    const char *target = "";
    if (sc->targets) {
        /* bench and validate take a target word before their options */
        if (argc >= 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            if (sc->command == CMD_BENCH)
                print_bench_help(stdout);
            else
                options_print_help(sc->command, sc->usage, stdout);
            return 0;
        }
        if (argc < 3 || !is_target(sc, argv[2])) {
            char valid[128];
            fprintf(stderr, "syncsim: %s needs a target: %s%s%s%s\n", sc->name,
                    target_list(sc, valid, sizeof valid), argc >= 3 ? " (not '" : "",
                    argc >= 3 ? argv[2] : "", argc >= 3 ? "')" : "");
            return 2;
        }
        target = argv[2];
        first = 3;
    }
    run_config cfg;
    unsigned command = sc->command;
    const char *usage = sc->usage;
    char label[64];
    snprintf(label, sizeof label, "%s", sc->name);
    for (int i = 0; sc->command == CMD_BENCH && i < BENCH_TARGETS; i++)
        if (!strcmp(target, bench_targets[i].name)) {
            command = bench_targets[i].command;
            usage = bench_targets[i].usage;
            snprintf(label, sizeof label, "bench %s", target);
        }
    options_name_command(label);
    int rc = options_parse(command, argc - first, argv + first, &cfg);
    if (rc != SS_OK) return fail(rc);
    if (cfg.help) {
        options_print_help(command, usage, stdout);
        return 0;
    }
    blas_spin_short(&cfg, command, argv);
    rc = sc->run(&cfg, target);
    if (rc != SS_OK && rc != SS_EDIVERGED && rc != SS_EINTERRUPT) return fail(rc);
    return ss_status_exit_code(rc);
}
