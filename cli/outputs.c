#include "cli/outputs.h"
#include "cli/options.h"
#include "common/status.h"

#include <stdlib.h>

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
