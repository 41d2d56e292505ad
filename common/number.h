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

#endif
