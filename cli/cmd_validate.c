/* syncsim validate compute: the runner is traces/validate_compute.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/status.h"
#include "traces/validate_compute.h"

static int usage(const char *why) {
    fprintf(stderr,
            "syncsim validate: %s (usage: syncsim validate compute [--reference CSV] "
            "[--bound B], B in (0, 10])\n",
            why);
    return 2;
}

int cmd_validate_main(int argc, char **argv) {
    if (argc < 1 || strcmp(argv[0], "compute"))
        return usage(argc < 1 ? "missing what to validate" : "unknown target (valid: compute)");
    const char *csv = NULL;
    double bound = VALIDATE_COMPUTE_BOUND;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reference") && i + 1 < argc) {
            csv = argv[++i];
        } else if (!strcmp(argv[i], "--bound") && i + 1 < argc) {
            char *end;
            bound = strtod(argv[++i], &end);
            if (*end || !(bound > 0) || bound > 10) return usage("--bound: not in (0, 10]");
        } else {
            return usage("unknown option or missing value");
        }
    }
    validate_compute_result r;
    int rc = validate_compute(csv, bound, stdout, &r);
    if (rc != SS_OK) {
        fprintf(stderr, "syncsim validate compute: %s\n", ss_error_message());
        return ss_status_exit_code(rc);
    }
    return r.within_bound ? 0 : 1;
}
