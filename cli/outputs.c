#include "cli/outputs.h"
#include "cli/options.h"
#include "common/status.h"

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

void outputs_request(unsigned command, const run_config *cfg, int table, run_request *rq) {
    memset(rq, 0, sizeof *rq);
    rq->cfg = cfg;
    rq->config_ini = outputs_config_ini(command, cfg);
    rq->lr = options_learning_rate(cfg);
    rq->was_set = options_was_set;
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
    rq->config_ini = rq->config_table = NULL;
}
