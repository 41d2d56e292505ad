#include "cli/cli.h"

#include <stdio.h>

int cli_main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    puts("syncsim " SYNCSIM_VERSION);
    return 0;
}
