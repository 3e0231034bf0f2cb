#pragma once
/*
 * utf8.h - UTF-8 decoding, encoding and validation with the Unicode rules
 * for ill-formed input: no overlongs, no surrogates, nothing above U+10FFFF,
 * and replacement by "maximal subpart" (each maximal ill-formed prefix of a
 * sequence becomes one U+FFFD).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UTF8_REPLACEMENT "\xef\xbf\xbd"

enum utf8_status {
	UTF8_OK,         /* a complete, well-formed sequence */
	UTF8_INCOMPLETE, /* a well-formed prefix cut off by the end of input */
	UTF8_INVALID,    /* ill-formed: *len is the maximal subpart to replace */
};

/*
 * utf8_next - classify the sequence at @s (@n > 0 bytes left). On UTF8_OK
 * *@cp is the code point and *@len its length; on UTF8_INCOMPLETE *@len is
 * the bytes present; on UTF8_INVALID *@len (≥ 1) bytes form one maximal subpart.
 */
enum utf8_status utf8_next(const uint8_t *s, size_t n, uint32_t *cp, size_t *len);

/* utf8_encode - write @cp (≤ U+10FFFF, not a surrogate) to @out (4 bytes); returns its length. */
size_t utf8_encode(uint32_t cp, char *out);

/* utf8_valid - whether @n bytes at @s are entirely well-formed UTF-8. */
bool utf8_valid(const void *s, size_t n);

/* utf8_char_len - length of the sequence a lead byte @c announces (1 for ill-formed leads). */
size_t utf8_char_len(uint8_t c);
