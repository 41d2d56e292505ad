#include "cli/outputs.h"
#include "cli/options.h"
#include "common/status.h"
#include "emu/recipe.h"
#include "sim/policy/policy_registry.h"

#include <stdlib.h>
#include <string.h>

char *outputs_config_ini(unsigned command, const run_config *cfg) {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    SS_ASSERT(mem);
    options_write_ini(command, cfg, mem);
    fclose(mem);
    return text;
}

int outputs_begin(unsigned command, const run_config *cfg) {
    char *text = outputs_config_ini(command, cfg);
    int rc = outputs_open_dir(cfg, text);
    free(text);
    return rc;
}

/* Given explicitly, and meant for the run's policy: compare passes one set of options to runs of
 * several policies, where --staleness is ssp's and says nothing about its asp run. */
static int given_for_policy(const run_config *cfg, const char *name) {
    if (!options_was_set(cfg, name)) return 0;
    const policy_option *o = policy_option_find(name);
    const policy_info *p =
        cfg->policy[0] ? policy_registry_find(cfg->policy) : policy_registry_baseline();
    return !o || !p || policy_option_applies(o, p);
}

void outputs_request(unsigned command, const run_config *cfg, int table, run_request *rq) {
    memset(rq, 0, sizeof *rq);
    /* the runners, config.ini and the table see the options as resolved: the model's training
     * recipe (emu/recipe.h) where an option was not given */
    run_config *resolved = ss_malloc(sizeof *resolved);
    *resolved = *cfg;
    if (command != CMD_REPLAY) recipe_apply(resolved, options_was_set);
    cfg = resolved;
    rq->cfg = cfg;
    rq->config_ini = outputs_config_ini(command, cfg);
    rq->lr = options_learning_rate(cfg);
    rq->was_set = command == CMD_REPLAY ? options_was_set : given_for_policy; /* the trace's */
    if (table) {
        char *text = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&text, &len);
        SS_ASSERT(mem);
        options_print_table(command, cfg, mem);
        fclose(mem);
        rq->config_table = text;
    }
}

void outputs_request_free(run_request *rq) {
    free((void *)rq->config_ini);
    free((void *)rq->config_table);
    free((void *)rq->cfg);
    rq->config_ini = rq->config_table = NULL;
    rq->cfg = NULL;
}
