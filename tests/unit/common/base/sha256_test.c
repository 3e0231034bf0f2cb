/*
 * sha256_test.c - SHA-256 against the FIPS 180-2 examples (appendix B: one
 * block, two blocks, a million 'a's), the empty message, lengths around the
 * padding boundaries (55/56, 63/64/65, 119/120 bytes: one extra block or
 * not), and every split of a message into two updates.
 */
#include <string.h>

#include "base/sha256.h"
#include "t.h"

static void
hex_of(const void *p, size_t n, char out[SHA256_HEX])
{
	uint8_t d[SHA256_BYTES];

	sha256_buf(p, n, d);
	sha256_hex(d, out);
}

static void
test_fips_vectors(void)
{
	char hex[SHA256_HEX];
	static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	hex_of("abc", 3, hex);
	T_STREQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of(two, strlen(two), hex);
	T_STREQ(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	hex_of("", 0, hex);
	T_STREQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void
test_million_a(void)
{
	struct sha256 s;
	uint8_t d[SHA256_BYTES], chunk[1000];
	char hex[SHA256_HEX];

	memset(chunk, 'a', sizeof(chunk));
	sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		sha256_update(&s, chunk, sizeof(chunk));
	sha256_final(&s, d);
	sha256_hex(d, hex);
	T_STREQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void
test_padding_boundaries(void)
{
	static const struct {
		size_t n;
		const char *hex;
	} v[] = {
	        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
	        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
	        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
	        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
	        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
	        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
	        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
	};
	uint8_t a[120];
	char hex[SHA256_HEX];

	memset(a, 'a', sizeof(a));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		hex_of(a, v[i].n, hex);
		T_STREQ(hex, v[i].hex);
	}
}

/* Every way of cutting a 200-byte message into two or three updates gives one digest. */
static void
test_splits(void)
{
	uint8_t msg[200], want[SHA256_BYTES], got[SHA256_BYTES];
	struct sha256 s;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	sha256_buf(msg, sizeof(msg), want);
	for (size_t cut = 0; cut <= sizeof(msg); cut++) {
		sha256_init(&s);
		sha256_update(&s, msg, cut);
		sha256_update(&s, NULL, 0);
		size_t mid = cut + (sizeof(msg) - cut) / 2;
		sha256_update(&s, msg + cut, mid - cut);
		sha256_update(&s, msg + mid, sizeof(msg) - mid);
		sha256_final(&s, got);
		T_TRUE(memcmp(got, want, sizeof(want)) == 0);
	}
}

int
main(void)
{
	T_RUN(test_fips_vectors);
	T_RUN(test_million_a);
	T_RUN(test_padding_boundaries);
	T_RUN(test_splits);
	return t_done();
}
