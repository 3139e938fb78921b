/* JSON output helpers shared by the subcommands' --json modes. */
#include "json.h"

/* The length of the valid UTF-8 sequence at s (1-4), or 0 when the byte at s does not start one
 * (overlong forms, surrogates and code points past U+10FFFF are not valid). */
static int utf8_len(const unsigned char *s) {
    unsigned c = s[0];
    int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
    if (n == 0 || c > 0xf4 || c == 0xc0 || c == 0xc1) return 0;
    unsigned cp = c & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

/* A JSON string. File names are bytes: a byte that is not part of valid UTF-8 is written as the code point
 * of the same value (\u0080-\u00ff), so the output is always valid JSON (review 13, finding 2). */
void dk_json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; p && *p;) {
        unsigned char ch = *p;
        if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch), p++;
        else if (ch < 0x20) fprintf(out, "\\u%04x", ch), p++;
        else if (ch < 0x80) fputc(ch, out), p++;
        else {
            int n = utf8_len(p);
            if (n) fwrite(p, 1, (size_t)n, out), p += n;
            else fprintf(out, "\\u%04x", ch), p++;
        }
    }
    fputc('"', out);
}
