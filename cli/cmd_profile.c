/* syncsim profile import TRACE.json [--params FILE] [--batch B] [--name NAME] --out FILE.profile:
 * a model profile with measured times from a torch.profiler trace (traces/profile_import.h) or a
 * Chakra execution trace (traces/chakra_import.h).
 * syncsim profile model --model M [--dataset D] [--data-dir DIR] [--batch B] [--name NAME]
 * [--measure cpu|cuda|auto [--steps N] [--threads N]] --out FILE.profile: the profile of an
 * emulated model (emu/profile_model.h), measured on this machine with --measure. */
#include "cli/commands.h"
#include "cli/options.h"
#include "common/run_config.h"
#include "common/status.h"
#include "emu/profile_model.h"
#include "emu/recipe.h"
#include "traces/profile_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_USAGE                                                                              \
    "usage: syncsim profile import TRACE.json [--params FILE] [--batch B] [--name NAME] [--steps " \
    "N] --out FILE.profile\n"                                                                      \
    "       syncsim profile model --model M [--dataset D] [--data-dir DIR] [--batch B] [--name "   \
    "NAME] [--measure cpu|cuda|auto [--steps N] [--threads N]] --out FILE.profile"

static void print_help(FILE *out) {
    fprintf(out, PROFILE_USAGE
            "\n\n"
            "Reads the Chrome-trace JSON that torch.profiler exports (bench/record_profile.py\n"
            "records one for any torch.nn.Module) and writes a model profile (format version 4,\n"
            "traces/FORMAT.md) with every layer's measured forward and backward seconds, the\n"
            "host's gap (step time not covered by layers) and parameters. `syncsim replay\n"
            "--profile FILE.profile` replays it with the measured times (--compute measured).\n"
            "It also reads a Chakra execution trace (MLCommons Chakra, ASTRA-sim's workload):\n"
            "the binary .et, gzip-compressed or not, or its JSON form (\"workload_graph\"),\n"
            "told apart by content. A data-parallel step becomes one layer per all-reduce\n"
            "bucket: its gradients' bytes and the compute before it as its backward seconds, the\n"
            "forward before the first backward node, the rest the gap (--batch is required,\n"
            "--params is not taken; traces/FORMAT.md \"Chakra execution traces\").\n\n"
            "  --params FILE   the layers' parameters, batch and model name (JSON written by\n"
            "                  bench/record_profile.py); without it, from the operators' shapes\n"
            "  --batch B       samples a step (default: the params file's)\n"
            "  --name NAME     the profile's name (default: the params file's model; a Chakra\n"
            "                  trace's file name without its extensions)\n"
            "  --steps N       a Chakra trace: the training steps it holds (default 1; the\n"
            "                  profile's times are their mean)\n"
            "  --out FILE      the profile to write (written whole or not at all)\n\n"
            "profile model writes the profile of an emulated model (--model as train takes it:\n"
            "mlp, cnn, resnet:20, resnet:D,proj, vgg:11, gpt:wlm, gpt:L,D,H,T, ...): its layers\n"
            "as the compute model sees them in train (FLOPs, bytes, parameters, kernels, kinds\n"
            "and product shapes per sample; format version 4 without measured times).\n"
            "`syncsim replay --profile FILE.profile --workers 1024 --gpu a100` then times that\n"
            "model's steps with --compute model at any scale: on one worker, the step train\n"
            "models for it on the same GPU, precision and framework. With --measure the\n"
            "profile also carries each layer's seconds measured here, and replays them.\n\n"
            "  --model M       the model (required)\n"
            "  --dataset D     its input: fashion-mnist (default), mnist, synthetic (1x28x28,\n"
            "                  10 classes), cifar10 (3x32x32, 10), cifar100 (3x32x32, 100);\n"
            "                  for gpt a text set (web-bible, the default; wikitext-2,\n"
            "                  wikitext-103, ptb with --data-dir), read for its vocabulary\n"
            "  --data-dir DIR  where a text set is (as for train)\n"
            "  --batch B       samples a step, replay's default batch (default: the model's\n"
            "                  recipe, 128 for resnet and vgg, 20 for gpt; else train's 64)\n"
            "  --name NAME     the profile's name (default: the model text)\n"
            "  --measure DEV   also measure each layer's forward and backward seconds on this\n"
            "                  machine (cpu, cuda or auto: the GPU when there is one), training\n"
            "                  on the data set's first batch (random data of its shape where\n"
            "                  the set cannot be read), and write them as measured times:\n"
            "                  replay --profile then replays them (--compute measured) instead\n"
            "                  of modelling\n"
            "  --steps N       --measure: timed steps, after 2 warm-up steps (default 10)\n"
            "  --threads N     --measure on the CPU: OpenBLAS threads (default 1, as each\n"
            "                  emulated worker computes)\n"
            "  --out FILE      the profile to write (written whole or not at all)\n");
}

static int usage_of(const char *target, const char *fmt, const char *arg) {
    fprintf(stderr, "syncsim: profile %s: ", target);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n" PROFILE_USAGE "\n");
    return 2;
}

static int usage(const char *fmt, const char *arg) {
    return usage_of("import", fmt, arg);
}

/* An integer from 1 to max into *out; the usage message (returning 2) otherwise. */
static int parse_count(const char *target, const char *option, const char *v, long max, int *out) {
    char *end;
    long k = strtol(v, &end, 10);
    if (*end || end == v || k < 1 || k > max) {
        fprintf(stderr, "syncsim: profile %s: %s: an integer from 1 to %ld, not '%s'\n", target,
                option, max, v);
        fprintf(stderr, PROFILE_USAGE "\n");
        return 2;
    }
    *out = (int)k;
    return 0;
}

static int parse_batch(const char *target, const char *v, int *out) {
    return parse_count(target, "--batch", v, 1000000, out);
}

/* syncsim profile model ...: argv after the word model. */
static int profile_model_main(int argc, char **argv) {
    profile_model_opts o = {0};
    const char *out = NULL;
    int steps_given = 0, threads_given = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(stdout);
            return 0;
        }
        if (strcmp(a, "--model") && strcmp(a, "--dataset") && strcmp(a, "--data-dir") &&
            strcmp(a, "--batch") && strcmp(a, "--name") && strcmp(a, "--out") &&
            strcmp(a, "--measure") && strcmp(a, "--steps") && strcmp(a, "--threads"))
            return usage_of("model",
                            a[0] == '-' ? "unknown option '%s' (valid: --model, --dataset, "
                                          "--data-dir, --batch, --name, --measure, --steps, "
                                          "--threads, --out)"
                                        : "unexpected argument '%s' (the model is --model M)",
                            a);
        if (i + 1 >= argc) return usage_of("model", "%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--model"))
            o.model = v;
        else if (!strcmp(a, "--dataset"))
            o.dataset = v;
        else if (!strcmp(a, "--data-dir"))
            o.data_dir = v;
        else if (!strcmp(a, "--name"))
            o.name = v;
        else if (!strcmp(a, "--out"))
            out = v;
        else if (!strcmp(a, "--measure")) {
            if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto"))
                return usage_of("model", "--measure: cpu, cuda or auto, not '%s'", v);
            o.measure = v;
        } else if (!strcmp(a, "--steps")) {
            if (parse_count("model", "--steps", v, 1000000, &o.measure_steps)) return 2;
            steps_given = 1;
        } else if (!strcmp(a, "--threads")) {
            if (parse_count("model", "--threads", v, 1024, &o.measure_threads)) return 2;
            threads_given = 1;
        } else if (parse_batch("model", v, &o.batch))
            return 2;
    }
    if (!o.model) return usage_of("model", "%s", "missing --model M");
    if (!o.measure && (steps_given || threads_given))
        return usage_of("model", "%s needs --measure cpu|cuda|auto (it sets how to measure)",
                        steps_given ? "--steps" : "--threads");
    if (!out) return usage_of("model", "%s", "missing --out FILE.profile");
    if (!o.batch) { /* the model's recipe, else train's default */
        const recipe *r = recipe_of(o.model);
        run_config defaults;
        options_defaults(&defaults);
        o.batch = r ? r->batch : defaults.batch;
    }
    model_profile p;
    char notes[2048];
    int rc = profile_model_make(&o, &p, notes, sizeof notes);
    if (rc == SS_OK) {
        rc = profile_import_write(&p, notes, out);
        if (rc == SS_OK)
            printf("%s: %s, %d layers, %.0f parameters, %.6g GFLOP a sample (forward + "
                   "backward), batch %d\n",
                   out, p.name, p.layers, p.params,
                   (p.forward_flops_per_sample + p.backward_flops_per_sample) / 1e9, p.batch);
        if (rc == SS_OK && p.measured)
            printf("measured on %s: a step %.6f s (layers %.6f s, gap %.6f s), mean of %d "
                   "steps\n",
                   p.measured_device, p.measured_step_s, p.measured_step_s - p.measured_gap_s,
                   p.measured_gap_s, p.measured_steps);
        profile_free(&p);
    }
    if (rc != SS_OK) {
        fprintf(stderr, "syncsim: profile model: %s\n", ss_error_message());
        return ss_status_exit_code(rc);
    }
    return 0;
}

int cmd_profile_main(int argc, char **argv) {
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        print_help(stdout);
        return 0;
    }
    if (argc < 1) return usage_of("import|model", "%s", "profile needs a target: import or model");
    if (!strcmp(argv[0], "model")) return profile_model_main(argc - 1, argv + 1);
    if (strcmp(argv[0], "import"))
        return usage_of("import|model", "profile needs a target: import or model (not '%s')",
                        argv[0]);
    profile_import_opts o = {0};
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(stdout);
            return 0;
        }
        if (!strcmp(a, "--params") || !strcmp(a, "--out") || !strcmp(a, "--batch") ||
            !strcmp(a, "--name") || !strcmp(a, "--steps")) {
            if (i + 1 >= argc) return usage("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--params"))
                o.params_path = v;
            else if (!strcmp(a, "--out"))
                out = v;
            else if (!strcmp(a, "--name"))
                o.name = v;
            else if (!strcmp(a, "--steps")) {
                if (parse_count("import", "--steps", v, 1000000, &o.steps)) return 2;
            } else {
                if (parse_batch("import", v, &o.batch)) return 2;
            }
        } else if (a[0] == '-' && a[1])
            return usage("unknown option '%s' (valid: --params, --batch, --name, --steps, --out)",
                         a);
        else if (o.trace_path)
            return usage("one TRACE.json only (got a second: '%s')", a);
        else
            o.trace_path = a;
    }
    if (!o.trace_path) return usage("%s", "missing TRACE.json");
    if (!out) return usage("%s", "missing --out FILE.profile");
    model_profile p;
    char notes[2048];
    int rc = profile_import(&o, &p, notes, sizeof notes);
    if (rc == SS_OK) {
        rc = profile_import_write(&p, notes, out);
        if (rc == SS_OK)
            printf("%s: %s, %d layers, %.0f parameters, measured step %.6f s (layers %.6f s, host "
                   "gap %.6f s) at batch %d on %s\n",
                   out, p.name, p.layers, p.params, p.measured_step_s,
                   p.measured_step_s - p.measured_gap_s, p.measured_gap_s, p.measured_batch,
                   p.measured_device);
        profile_free(&p);
    }
    if (rc != SS_OK) {
        fprintf(stderr, "syncsim: %s\n", ss_error_message());
        return ss_status_exit_code(rc);
    }
    return 0;
}
