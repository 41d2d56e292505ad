/* Shared by the profile-import tests (test_profile_import.c, test_chakra_import.c): runs
 * `syncsim profile import TRACE EXTRA --out OUT` in this process and gives its exit code.
 * EXTRA's words are split at spaces. */
#ifndef SS_TESTS_PROFILE_IMPORT_RUN_H
#define SS_TESTS_PROFILE_IMPORT_RUN_H

#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

static int run_import(const char *trace, const char *extra, const char *out) {
    char *argv[12];
    int argc = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "import %s %s --out %s", trace, extra, out);
    for (char *s = strtok(buf, " "); s && argc < 12; s = strtok(NULL, " "))
        argv[argc++] = s;
    fflush(stdout);
    return cmd_profile_main(argc, argv);
}

#endif
