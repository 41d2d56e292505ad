/* Strict parsing of the numbers users write in options and INI files: decimal only. strtod and
 * strtol also take hexadecimal ("0x10"), "inf", "nan", leading blanks and, for strtod, hex floats;
 * none of these is a sensible value for any option, so they are refused rather than read as 16 or
 * infinity.
 *
 *     double x; if (number_parse_double("0.05", &x) != 0) ... refuse
 */
#ifndef SS_COMMON_NUMBER_H
#define SS_COMMON_NUMBER_H

/* 1 if `text` is [+-]digits[.digits][(e|E)[+-]digits] (or [+-].digits...), else 0. With
 * integer_only, no fraction and no exponent. */
int number_is_decimal(const char *text, int integer_only);
/* Parses a decimal real (finite) or integer: 0 on success, -1 when `text` is not one (syntax,
 * overflow). */
int number_parse_double(const char *text, double *out);
int number_parse_llong(const char *text, long long *out);
/* A decimal integer in [lo, hi]: 0 on success, -1 otherwise (syntax, overflow, range). */
int number_parse_long(const char *text, long lo, long hi, long *out);

/* A decimal real at the start of `text`, followed by anything (a unit: "25Gbps", "1.5e3us"):
 * 0 with the value and *rest at what follows, -1 when text does not start with one. Hexadecimal
 * never reads as a number here: "0x10Gbps" is 0 followed by "x10Gbps", which no unit table has. */
int number_parse_prefix(const char *text, double *out, const char **rest);
/* A comma-separated list of decimal numbers (integers with integer_only), no empty item and no
 * blank: 0 with `count` values, -1 on a malformed list, -2 when it has more than `max` items. */
int number_parse_list(const char *text, int integer_only, double *values, int max, int *count);

#endif
