/* common/csv: fields with commas, quotes and newlines round-trip through the writer and the
 * reader; numbers are written with their printf formats; malformed rows are reported with the
 * file and line. Works on memory streams only. */
#include "common/csv.h"
#include "common/status.h"
#include "ss_test.h"

#include <math.h>
#include <string.h>

/* Reads every row of text; returns the status of the first failure (SS_OK at the end). */
static int read_all(const char *text, int *rows, char first[][64], int max) {
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    csv_reader r;
    csv_open_stream(&r, fp, "t.csv");
    int got, rc;
    *rows = 0;
    while ((rc = csv_next(&r, &got)) == SS_OK && got) {
        if (*rows < max) snprintf(first[*rows], 64, "%s", r.field[0]);
        ++*rows;
    }
    csv_close(&r);
    fclose(fp);
    return rc;
}

static void test_csv_round_trip(void) {
    /* csv_write_field then csv_next: every field comes back as written */
    const char *fields[] = {"plain", "a,b", "say \"hi\"", "two\nlines", "", "cr\r\nlf", "\"", ","};
    const int n = (int)(sizeof fields / sizeof fields[0]);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    for (int row = 0; row < 2; row++) {
        for (int i = 0; i < n; i++) {
            if (i) fputc(',', out);
            csv_write_field(out, fields[i]);
        }
        fputc('\n', out);
    }
    fclose(out);
    CU_ASSERT(strstr(text, "plain,\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\",,") == text);
    FILE *fp = fmemopen(text, size, "r");
    csv_reader r;
    csv_open_stream(&r, fp, "mem.csv");
    int got;
    for (int row = 0; row < 2; row++) {
        CU_ASSERT_EQUAL_FATAL(csv_next(&r, &got), SS_OK);
        CU_ASSERT_EQUAL_FATAL(got, 1);
        CU_ASSERT_EQUAL_FATAL(r.n_fields, n);
        for (int i = 0; i < n; i++)
            CU_ASSERT_STRING_EQUAL(r.field[i], fields[i]);
        CU_ASSERT_EQUAL(csv_find(&r, "a,b"), 1);
    }
    CU_ASSERT_EQUAL(r.line, 4); /* the first row spans lines 1-3 (two quoted newlines) */
    CU_ASSERT_EQUAL(csv_next(&r, &got), SS_OK);
    CU_ASSERT_EQUAL(got, 0);
    csv_close(&r);
    fclose(fp);
    free(text);
}

static void test_csv_numbers(void) {
    /* csv_write_numbers: the bytes of the matching fprintf */
    char buf[256];
    FILE *fp = fmemopen(buf, sizeof buf, "w");
    csv_write_numbers(fp, "%.0f %.6f %.9f", (const double[]){42, 0.1234567, 1.5}, 3);
    fclose(fp);
    CU_ASSERT_STRING_EQUAL(buf, "42,0.123457,1.500000000\n");
    /* values that are not finite numbers: empty cells */
    fp = fmemopen(buf, sizeof buf, "w");
    csv_write_numbers(fp, "%.0f %.6f %.6g %.6f %.6g",
                      (const double[]){1, NAN, INFINITY, -INFINITY, 2.5}, 5);
    fclose(fp);
    CU_ASSERT_STRING_EQUAL(buf, "1,,,,2.5\n");
    /* CRLF line ends and a last line without newline */
    int rows;
    char first[4][64];
    CU_ASSERT_EQUAL(read_all("a,b\r\n1,2\r\n3,4", &rows, first, 4), SS_OK);
    CU_ASSERT_EQUAL(rows, 3);
    CU_ASSERT_STRING_EQUAL(first[2], "3");
}

static void test_csv_malformed(void) {
    /* csv_next: malformed rows named by file and line */
    int rows;
    char first[4][64];
    CU_ASSERT_EQUAL(read_all("x,y\n1,2\n\"open,3\n4,5\n", &rows, first, 4), SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "t.csv:3: unterminated quoted field") != NULL);
    CU_ASSERT_EQUAL(read_all("x,y\n1,2\n3,\"q\"z\n", &rows, first, 4), SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "t.csv:3: text after the closing quote") != NULL);
    CU_ASSERT_EQUAL(rows, 2);
    CU_ASSERT_EQUAL(read_all("x,y\n\"a\nb\",1\n2,ab\"c\n", &rows, first, 4), SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "t.csv:4: a quote inside unquoted field 2") != NULL);
    CU_ASSERT_STRING_EQUAL(first[1], "a\nb");
}

static CU_TestInfo csv_tests[] = {
    {"csv: comma, quote, newline round-trip", test_csv_round_trip},
    {"csv: numbers, CRLF, last line without newline", test_csv_numbers},
    {"csv: malformed rows with file and line", test_csv_malformed},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"csv", NULL, NULL, NULL, NULL, csv_tests}, CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
