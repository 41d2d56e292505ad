/* INI files of the user (--config), read whole through common/infile.h: a regular file of at
 * most INFILE_MAX_TEXT bytes, without NUL bytes, lines of at most INFILE_MAX_LINE bytes. Lines
 * are "[section]", "key = value", blank, or comments starting with ';' or '#'; a UTF-8
 * byte-order mark and CRLF line ends are accepted. Every problem names the file and line.
 *
 *     static int on_key(void *user, const char *section, const char *key, const char *value,
 *                       long line, char *problem, size_t n) {
 *         ... snprintf(problem, n, "..."); return -1; }
 *     rc = ini_text_parse(path, "--config", SS_EUSAGE, on_key, ctx);
 */
#ifndef SS_COMMON_INI_TEXT_H
#define SS_COMMON_INI_TEXT_H

#include <stddef.h>

/* Called for each key (section "" before any [section]) and once for each "[section]" line with
 * key NULL; line: its line number. Returns 0 to go on; else it wrote what is wrong into
 * problem[0..n) and the parse stops with "PATH:LINE: problem". */
typedef int (*ini_text_handler)(void *user, const char *section, const char *key, const char *value,
                                long line, char *problem, size_t n);

/* Reads and parses `path`; SS_OK, or `status` with a message naming `what`, the file and the
 * line (the handler's own status is `status` too). */
int ini_text_parse(const char *path, const char *what, int status, ini_text_handler handler,
                   void *user);

#endif
