#include "utf8.h"

size_t
utf8_char_len(uint8_t c)
{
	if (c < 0xc2)
		return 1; /* ASCII, stray continuation byte, or overlong lead */
	if (c < 0xe0)
		return 2;
	if (c < 0xf0)
		return 3;
	return c < 0xf5 ? 4 : 1;
}

/* The allowed range of the second byte after lead @c (Unicode Table 3-7). */
static void
second_range(uint8_t c, uint8_t *lo, uint8_t *hi)
{
	*lo = 0x80;
	*hi = 0xbf;
	if (c == 0xe0)
		*lo = 0xa0;
	else if (c == 0xed)
		*hi = 0x9f;
	else if (c == 0xf0)
		*lo = 0x90;
	else if (c == 0xf4)
		*hi = 0x8f;
}

enum utf8_status
utf8_next(const uint8_t *s, size_t n, uint32_t *cp, size_t *len)
{
	uint8_t c = s[0], lo, hi;
	size_t need, k;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		*len = 1;
		return UTF8_OK;
	}
	need = utf8_char_len(c);
	if (need == 1) {
		*len = 1;
		return UTF8_INVALID;
	}
	v = c & (need == 2 ? 0x1fu : need == 3 ? 0x0fu : 0x07u);
	second_range(c, &lo, &hi);
	for (k = 1; k < need; k++) {
		if (k == n) {
			*len = k;
			return UTF8_INCOMPLETE;
		}
		if (s[k] < (k == 1 ? lo : 0x80) || s[k] > (k == 1 ? hi : 0xbf)) {
			*len = k;
			return UTF8_INVALID;
		}
		v = (v << 6) | (s[k] & 0x3fu);
	}
	*cp = v;
	*len = need;
	return UTF8_OK;
}

size_t
utf8_encode(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

bool
utf8_valid(const void *s, size_t n)
{
	const uint8_t *p = s;
	uint32_t cp;
	size_t len;

	for (size_t i = 0; i < n; i += len)
		if (utf8_next(p + i, n - i, &cp, &len) != UTF8_OK)
			return false;
	return true;
}
