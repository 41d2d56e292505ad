/* syncsim validate network: predicted vs measured all-reduce times (sim/validate_network.c). */
#include "cli/commands.h"
#include "sim/validate_network.h"

#include <stdio.h>

int cmd_validate(const run_config *cfg) {
    validate_opts o = {.root = cfg->validate_refs,
                       .max_large = cfg->validate_max_large,
                       .max_small = cfg->validate_max_small};
    return validate_network(&o, stdout);
}
