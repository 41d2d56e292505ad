/* syncsim bench coupling: what coupling the training to SimGrid costs (emu/bench_coupling.c). */
#include "cli/commands.h"
#include "cli/options.h"
#include "emu/recipe.h"
#include "emu/run.h"

#include <stdio.h>

int cmd_bench_coupling(const run_config *cfg_in) {
    run_config cfg = *cfg_in;
    if (!options_was_set(&cfg, "workers")) cfg.workers = 8;
    if (!options_was_set(&cfg, "epochs")) cfg.epochs = 1;
    recipe_dataset(&cfg, options_was_set);
    run_request rq = {.cfg = &cfg, .lr = options_learning_rate(&cfg), .was_set = options_was_set};
    return bench_coupling(&rq, stdout);
}
