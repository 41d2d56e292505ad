#include "common/ini_text.h"
#include "common/infile.h"
#include "common/status.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Strips blanks at both ends, in place. */
static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int ini_text_parse(const char *path, const char *what, int status, ini_text_handler handler,
                   void *user) {
    char *text;
    size_t len;
    int rc = infile_read(path, what, INFILE_MAX_TEXT, status, &text, &len);
    if (rc != SS_OK) return rc;
    if ((rc = infile_check_text(path, what, text, len, INFILE_MAX_LINE, status)) != SS_OK) {
        free(text);
        return rc;
    }
    char *p = text, section[256] = "", problem[600] = "";
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3;
    long line = 0;
    while (rc == SS_OK && *p) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        char *next = nl ? nl + 1 : p + strlen(p);
        line++;
        char *s = trim(p); /* also drops the '\r' of a CRLF line end */
        p = next;
        if (!*s || *s == ';' || *s == '#') continue;
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (!close || *trim(close + 1)) {
                snprintf(problem, sizeof problem,
                         "malformed section line '%.60s' (expected [name])", s);
                rc = status;
                break;
            }
            *close = '\0';
            snprintf(section, sizeof section, "%s", trim(s + 1));
            if (handler(user, section, NULL, NULL, line, problem, sizeof problem) != 0) rc = status;
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(problem, sizeof problem, "malformed line '%.60s' (expected 'key = value')", s);
            rc = status;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = eq + 1;
        for (char *c = value; *c; c++) /* an inline comment: ';' after a blank */
            if (*c == ';' && c > value && isspace((unsigned char)c[-1])) {
                *c = '\0';
                break;
            }
        value = trim(value);
        if (!*key) {
            snprintf(problem, sizeof problem, "malformed line: no key before '='");
            rc = status;
            break;
        }
        if (handler(user, section, key, value, line, problem, sizeof problem) != 0) rc = status;
    }
    free(text);
    if (rc != SS_OK) return ss_error_set(status, "%s:%ld: %s", path, line, problem);
    return SS_OK;
}
