/* syncsim profile import TRACE.json [--params FILE] [--batch B] [--name NAME] --out FILE.profile:
 * a model profile with measured times from a torch.profiler trace (traces/profile_import.h). */
#include "cli/commands.h"
#include "common/status.h"
#include "traces/profile_import.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROFILE_USAGE                                                                              \
    "usage: syncsim profile import TRACE.json [--params FILE] [--batch B] [--name NAME] --out "    \
    "FILE.profile"

static void print_help(FILE *out) {
    fprintf(out, PROFILE_USAGE
            "\n\n"
            "Reads the Chrome-trace JSON that torch.profiler exports (bench/record_profile.py\n"
            "records one for any torch.nn.Module) and writes a model profile (format version 4,\n"
            "traces/FORMAT.md) with every layer's measured forward and backward seconds, the\n"
            "host's gap (step time not covered by layers) and parameters. `syncsim replay\n"
            "--profile FILE.profile` replays it with the measured times (--compute measured).\n\n"
            "  --params FILE   the layers' parameters, batch and model name (JSON written by\n"
            "                  bench/record_profile.py); without it, from the operators' shapes\n"
            "  --batch B       samples a step (default: the params file's)\n"
            "  --name NAME     the profile's name (default: the params file's model)\n"
            "  --out FILE      the profile to write (written whole or not at all)\n");
}

static int usage(const char *fmt, const char *arg) {
    fprintf(stderr, "syncsim: profile import: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n" PROFILE_USAGE "\n");
    return 2;
}

int cmd_profile_main(int argc, char **argv) {
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        print_help(stdout);
        return 0;
    }
    if (argc < 1) return usage("%s", "profile needs the target import");
    if (strcmp(argv[0], "import"))
        return usage("profile needs the target import (not '%s')", argv[0]);
    profile_import_opts o = {0};
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            print_help(stdout);
            return 0;
        }
        if (!strcmp(a, "--params") || !strcmp(a, "--out") || !strcmp(a, "--batch") ||
            !strcmp(a, "--name")) {
            if (i + 1 >= argc) return usage("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--params"))
                o.params_path = v;
            else if (!strcmp(a, "--out"))
                out = v;
            else if (!strcmp(a, "--name"))
                o.name = v;
            else {
                char *end;
                long b = strtol(v, &end, 10);
                if (*end || end == v || b < 1 || b > 1000000)
                    return usage("--batch: an integer from 1 to 1000000, not '%s'", v);
                o.batch = (int)b;
            }
        } else if (a[0] == '-' && a[1])
            return usage("unknown option '%s' (valid: --params, --batch, --name, --out)", a);
        else if (o.trace_path)
            return usage("one TRACE.json only (got a second: '%s')", a);
        else
            o.trace_path = a;
    }
    if (!o.trace_path) return usage("%s", "missing TRACE.json");
    if (!out) return usage("%s", "missing --out FILE.profile");
    model_profile p;
    char notes[1024];
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
