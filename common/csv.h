/* CSV as syncsim writes and reads it (RFC 4180): fields separated by ',', rows by '\n'; a field
 * holding ',', '"', '\n' or '\r' is written between double quotes with its quotes doubled, and
 * the reader undoes exactly that, so every field round-trips. Numbers are written with printf
 * formats and never need quotes.
 *
 *     csv_write_field(fp, label); fputc(',', fp); ...; fputc('\n', fp);
 *     csv_write_numbers(fp, "%.0f %.6f", (const double[]){step, accuracy}, 2);
 *
 *     csv_reader r; if (csv_open(&r, "out/metrics.csv") != SS_OK) return ...;
 *     int got, rc; while ((rc = csv_next(&r, &got)) == SS_OK && got) ... r.field[i] ...;
 *     csv_close(&r);   // rc: SS_EINPUT with "FILE:LINE: ..." for a malformed row
 */
#ifndef SS_COMMON_CSV_H
#define SS_COMMON_CSV_H

#include <stdio.h>

/* Writes text as one field, quoted only when it must be. */
void csv_write_field(FILE *fp, const char *text);
/* Writes one row of n numbers, value i with the i-th of the space-separated printf conversions
 * of `formats` (each for one double: "%.6f", "%.0f" for integers), and the newline. A value that
 * is not a finite number (a diverged run's loss, exp of a loss above 709) is an empty cell, which
 * the readers take as no value; printf's "nan" and "inf" are not decimal numbers to them. */
void csv_write_numbers(FILE *fp, const char *formats, const double *values, int n);

#define CSV_MAX_FIELDS 256

typedef struct csv_reader {
    FILE *fp;
    char name[1024]; /* in messages */
    int own_fp;      /* csv_close closes fp */
    long line;       /* line where the last row read starts (1-based) */
    long next_line;  /* line where the next row starts */
    char *buf;       /* unquoted fields of the row, NUL-separated */
    size_t cap;
    int n_fields;
    char *field[CSV_MAX_FIELDS]; /* into buf */
    /* Options, off after csv_open: set them before the first csv_next. */
    int skip_comments; /* skip blank lines (spaces only) and lines starting with '#' after spaces */
    long max_line;     /* > 0: a line longer than this (without its "\r\n") or with a NUL byte is
                        * an error "NAME:LINE: line too long or binary" */
    long line_chars;   /* characters of the current line so far (for max_line) */
    int last_char;
    long bad_line; /* the first line over max_line or with a NUL byte, 0 if none */
} csv_reader;

/* Opens path; SS_EINPUT naming it if it cannot be opened or is not a regular file (a directory,
 * a device: common/infile.h). max_line starts at INFILE_MAX_LINE. */
int csv_open(csv_reader *r, const char *path);
/* Reads from an open stream (not closed by csv_close); `name` appears in messages. */
void csv_open_stream(csv_reader *r, FILE *fp, const char *name);
/* Reads the next row into r->field[0..n_fields-1]: *got = 1, or 0 at the end of the file.
 * SS_EINPUT "NAME:LINE: ..." for an unterminated quote, text after a closing quote or too many
 * fields. A blank line is a row of one empty field (unless skip_comments). */
int csv_next(csv_reader *r, int *got);
/* Index of the field equal to name in the last row read (the header, read first), or -1. */
int csv_find(const csv_reader *r, const char *name);
void csv_close(csv_reader *r);

#endif
