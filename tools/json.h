/* JSON output helpers shared by the subcommands' --json modes. */
#pragma once
#include <stdio.h>

/* Writes s as a JSON string (quoted; '"', '\\' and control characters escaped); NULL as "". */
void dk_json_str(FILE *out, const char *s);
