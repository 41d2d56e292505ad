/* syncsim bench emulation: an emulated run's samples/s on --threads threads beside one thread
 * (emu/bench_emulation.c). */
#include "cli/commands.h"
#include "cli/options.h"
#include "emu/recipe.h"
#include "emu/run.h"

#include <stdio.h>
#include <string.h>

int cmd_bench_emulation(const run_config *cfg_in) {
    run_config cfg = *cfg_in;
    if (!options_was_set(&cfg, "workers")) cfg.workers = 8;
    if (!options_was_set(&cfg, "epochs")) cfg.epochs = 0.05;
    recipe_dataset(&cfg, options_was_set);
    if (!cfg.policy[0]) snprintf(cfg.policy, sizeof cfg.policy, "bsp");
    run_request rq = {.cfg = &cfg, .lr = options_learning_rate(&cfg), .was_set = options_was_set};
    return bench_emulation(&rq, cfg.bench_csv[0] ? cfg.bench_csv : NULL, stdout);
}
