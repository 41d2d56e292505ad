/* CSV writer and reader that agree on quoting (csv.h). */
#include "common/csv.h"
#include "common/infile.h"
#include "common/status.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void csv_write_field(FILE *fp, const char *text) {
    if (!strpbrk(text, ",\"\n\r")) {
        fputs(text, fp);
        return;
    }
    fputc('"', fp);
    for (const char *p = text; *p; p++) {
        if (*p == '"') fputc('"', fp);
        fputc(*p, fp);
    }
    fputc('"', fp);
}

void csv_write_numbers(FILE *fp, const char *formats, const double *values, int n) {
    const char *f = formats;
    for (int i = 0; i < n; i++) {
        while (*f == ' ')
            f++;
        size_t len = strcspn(f, " ");
        char conv[32];
        SS_ASSERT(len > 0 && len < sizeof conv);
        memcpy(conv, f, len);
        conv[len] = '\0';
        f += len;
        if (i) fputc(',', fp);
        if (isfinite(values[i])) fprintf(fp, conv, values[i]); /* else an empty cell */
    }
    fputc('\n', fp);
}

void csv_open_stream(csv_reader *r, FILE *fp, const char *name) {
    memset(r, 0, sizeof *r);
    r->fp = fp;
    snprintf(r->name, sizeof r->name, "%s", name);
    r->next_line = 1;
}

int csv_open(csv_reader *r, const char *path) {
    /* a directory or a device (/dev/zero) would read nothing, or forever */
    int rc = infile_check(path, "CSV file", (size_t)-1, SS_EINPUT);
    if (rc != SS_OK) {
        memset(r, 0, sizeof *r);
        return rc;
    }
    FILE *fp = fopen(path, "r");
    if (!fp) {
        memset(r, 0, sizeof *r);
        return ss_error_set(SS_EINPUT, "%s: cannot open: %s", path, strerror(errno));
    }
    csv_open_stream(r, fp, path);
    r->own_fp = 1;
    r->max_line = (long)INFILE_MAX_LINE; /* a caller may set another bound */
    return SS_OK;
}

void csv_close(csv_reader *r) {
    if (r->own_fp && r->fp) fclose(r->fp);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

static void put(csv_reader *r, size_t *len, char c) {
    if (*len + 1 >= r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->buf = realloc(r->buf, r->cap);
        SS_ASSERT(r->buf);
    }
    r->buf[(*len)++] = c;
}

/* getc that, with max_line set, notes the first line that is too long or holds a NUL byte. */
static int get(csv_reader *r) {
    int c = getc(r->fp);
    if (r->max_line <= 0) return c;
    if (c == '\n' || c == EOF) {
        long chars = r->line_chars - (r->last_char == '\r'); /* a CRLF line ends like an LF one */
        if (chars > r->max_line && !r->bad_line) r->bad_line = r->next_line;
        r->line_chars = 0;
        r->last_char = 0;
        return c;
    }
    if (c == '\0' && !r->bad_line) r->bad_line = r->next_line;
    r->line_chars++;
    r->last_char = c;
    return c;
}

static void unget(csv_reader *r, int c) {
    ungetc(c, r->fp);
    if (r->max_line > 0 && c != '\n') r->line_chars--; /* get counts it again */
}

static int bad_line(const csv_reader *r) {
    return ss_error_set(SS_EINPUT, "%s:%ld: line too long or binary", r->name, r->bad_line);
}

/* With skip_comments: skips blank and comment lines from *c on, leaving *c at the first character
 * of the next row or EOF. The spaces before it start the row's first field (put), *lead counts
 * them with a '\r' dropped among them: a field with such a lead is unquoted. */
static int skip_comment_lines(csv_reader *r, int *c, size_t *len, int *lead) {
    for (;;) {
        int spaces = 0, cr = 0;
        while (*c == ' ') {
            spaces++;
            *c = get(r);
        }
        if (*c == '#') {
            while (*c != '\n' && *c != EOF)
                *c = get(r);
        } else if (*c == '\r') {
            cr = 1;
            *c = get(r);
        }
        if (r->bad_line) return bad_line(r);
        if (*c != '\n' && *c != EOF) {
            for (int i = 0; i < spaces; i++)
                put(r, len, ' ');
            *lead = spaces + cr;
            return SS_OK;
        }
        if (*c == EOF) return SS_OK;
        r->next_line++;
        *c = get(r);
    }
}

/* Reads one quoted field after its opening quote, up to the closing one. */
static int read_quoted(csv_reader *r, size_t *len) {
    const long opened = r->next_line;
    for (;;) {
        int c = get(r);
        if (c == EOF)
            return ss_error_set(SS_EINPUT, "%s:%ld: unterminated quoted field (opened here)",
                                r->name, opened);
        if (c == '"') {
            int d = get(r);
            if (d != '"') {
                if (d != EOF) unget(r, d);
                return SS_OK;
            }
        }
        if (c == '\n') r->next_line++;
        put(r, len, (char)c);
    }
}

int csv_next(csv_reader *r, int *got) {
    size_t len = 0, start[CSV_MAX_FIELDS];
    int n = 0, lead = 0, c = get(r);
    *got = 0;
    if (r->skip_comments) {
        int rc = skip_comment_lines(r, &c, &len, &lead);
        if (rc != SS_OK) return rc;
    }
    if (c == EOF) return ferror(r->fp) ? ss_error_set(SS_EIO, "%s: read error", r->name) : SS_OK;
    r->line = r->next_line;
    for (;;) { /* one field per turn; c is its first character */
        if (n == CSV_MAX_FIELDS)
            return ss_error_set(SS_EINPUT, "%s:%ld: more than %d fields", r->name, r->line,
                                CSV_MAX_FIELDS);
        start[n] = n ? len : 0; /* the first field starts with its lead */
        n++;
        if (c == '"' && !(n == 1 && lead)) {
            int rc = read_quoted(r, &len);
            if (rc != SS_OK) return rc;
            c = get(r);
            if (c == '\r') c = get(r);
            if (c != ',' && c != '\n' && c != EOF)
                return ss_error_set(SS_EINPUT, "%s:%ld: text after the closing quote of field %d",
                                    r->name, r->next_line, n);
        } else {
            while (c != ',' && c != '\n' && c != EOF) {
                if (c == '"')
                    return ss_error_set(SS_EINPUT,
                                        "%s:%ld: a quote inside unquoted field %d (a field with "
                                        "quotes is quoted as a whole)",
                                        r->name, r->line, n);
                if (c != '\r') put(r, &len, (char)c);
                c = get(r);
            }
        }
        put(r, &len, '\0');
        if (c != ',') break;
        c = get(r);
    }
    if (c == '\n') r->next_line++;
    if (r->bad_line) return bad_line(r);
    r->n_fields = n;
    for (int i = 0; i < n; i++)
        r->field[i] = r->buf + start[i];
    *got = 1;
    return SS_OK;
}

int csv_find(const csv_reader *r, const char *name) {
    for (int i = 0; i < r->n_fields; i++)
        if (!strcmp(r->field[i], name)) return i;
    return -1;
}
