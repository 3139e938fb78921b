/* JSON output helpers shared by the subcommands' --json modes. */
#include "json.h"

void dk_json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(out, "\\%c", ch);
        else if (ch < 0x20) fprintf(out, "\\u%04x", ch);
        else fputc(ch, out);
    }
    fputc('"', out);
}
